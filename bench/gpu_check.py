#!/usr/bin/env python3
"""The GPU validation of issue 23, in two halves (scripts/gpu-check.sh runs them).

`compile` (CPU, needs memopt-compile): scripts each model of the e2e zoo at
a GPU size, compiles it with `--device cuda` for several preferences and one
budget, and writes DIR/manifest.json next to the compiled modules and their
reports. Weights stay small (they travel to the GPU machine); activations
dominate the peak.

`run` (the GPU machine, or `--device cpu` for the dry run): loads the
runtime, and for every compiled module trains it and its eager model from
the same seed on the device, compares outputs, gradients and buffers bit
for bit, measures the step peak above the bytes live before the step
(`torch.cuda.max_memory_allocated` on CUDA, the runtime's counting
allocator on CPU) and the median step time, and compares the peaks with the
compiler's predictions. Where a plan offloads, the same module also runs
with an empty host pool (every offload falls back to keeping the tensor),
which is the plan's step time without transfers: the difference is what the
offload did not hide. It then measures the CUDA bit-pack against a
device-to-device copy. Writes OUT/gpu-check.md and OUT/gpu-check.json; exits
1 when a module failed, trained differently from eager, or the bit-pack
missed its target.

Launch stubs (docs/launch-stubs.md): the compile half also writes each
plan's stubs (`--emit-stubs`); the run half builds those with plan sites
(nvcc for CUDA, the C++ compiler for the CPU dry run), loads them, and runs
the module again with them: step time, compression launches per step with
and without them, and training bit for bit equal to the generic kernels.

    bench/gpu_check.py compile DIR [--dry-run]
    bench/gpu_check.py run DIR OUT [--device cuda|cpu]
"""
import argparse
import contextlib
import datetime
import json
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import time

import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

# GPU sizes: activations in the hundreds of MB, weights of a few MB each.
MODELS = {
    "spiking_vgg": dict(steps=4, batch=16, size=64),
    "transformer_encoder": dict(batch=16, seq=256, dim=192, ff=768),
    "vit": dict(batch=32, image=64, layers=4, hidden=128, mlp=512),
    "gpt_decoder": dict(batch=8, seq=256, layers=3),
    "unet": dict(batch=8, image=128),
}
# The dry run (CI, CPU): the same path at sizes a 2-core machine runs fast.
DRY_MODELS = {
    "spiking_vgg": dict(batch=2, size=32),
    "gpt_decoder": dict(batch=2, seq=32, layers=2),
}
VARIANTS = {
    "speed": ["--prefer", "speed"],
    "balanced": ["--prefer", "balanced"],
    "memory": ["--prefer", "memory"],
    "budget-40%": ["--budget", "40%", "--prefer", "balanced"],
    # The same budget offloading into CUDA managed memory (migrated pages
    # instead of pinned copies).
    "budget-40%-unified": ["--budget", "40%", "--prefer", "balanced",
                           "--offload-policy", "unified"],
}
COMMON = ["--device", "cuda", "--grad-buffers", "resident"]
# Steps measured after warm-up: a GPU step of 10-30 ms needs many for the
# median to separate an offload's copies from noise; the CPU dry run, few.
COMPARE_STEPS, WARMUP = 2, 2
MEASURE_STEPS = {"cuda": 30, "cpu": 3}
PACK_TARGET = 0.80  # bit-pack traffic / device-to-device copy traffic
# The convolution calls the compiled plans make, for the GPU's kernel probe
# (bench/cuda_kernel_probe.py), and the marks file it writes into OUT.
KERNEL_REQUESTS = "kernel-requests.jsonl"
KERNEL_MARKS = "cuda-kernel-marks.txt"


# ---------------------------------------------------------------------------
# CPU half
# ---------------------------------------------------------------------------

def compile_all(directory: pathlib.Path, dry_run: bool, models=None,
                batch_scale: int = 1, kernel_marks=None) -> int:
    """`models`: names of MODELS to compile (default all); `batch_scale`
    multiplies their batch (a compute-bound step on a large GPU);
    `kernel_marks`: a marks file the GPU's probe wrote on an earlier run
    (docs/gpu.md), which prices the convolutions' workspaces. Every
    convolution call it lacks goes to kernel-requests.jsonl, which the GPU
    half measures."""
    directory.mkdir(parents=True, exist_ok=True)
    # The unplanned IR takes the marks too: repredict checks that each IR
    # predicts, without new marks, what its report said.
    marks_in = ["--kernel-marks", str(pathlib.Path(kernel_marks).resolve())] \
        if kernel_marks else []
    marks_args = ["--kernel-requests", str(directory / KERNEL_REQUESTS)] + \
        marks_in
    entries = []
    chosen = DRY_MODELS if dry_run else {
        name: dict(kwargs, batch=kwargs["batch"] * batch_scale)
        for name, kwargs in MODELS.items() if not models or name in models}
    for name, kwargs in chosen.items():
        source = directory / f"{name}.pt"
        specs = measure.save_zoo_model(name, kwargs, source)
        # The IR of each plan (and of the model unplanned), for predicting
        # them again once the GPU has measured its kernels (repredict).
        measure.compile_model(
            source, directory / f"{name}.baseline.pt", specs,
            ["--analyze-only", "--emit-mlir",
             str(directory / f"{name}.baseline.mlir")] + COMMON + marks_in)
        (directory / f"{name}.baseline.pt").unlink()
        for variant, args in VARIANTS.items():
            out = directory / f"{name}.{variant}.pt"
            entry = {"model": name, "kwargs": kwargs, "variant": variant,
                     "inputs": specs}
            stubs = directory / "stubs" / f"{name}.{variant}"
            try:
                report = measure.compile_model(
                    source, out, specs,
                    args + COMMON + marks_args +
                    ["--emit-stubs", str(stubs), "--emit-mlir",
                     str(directory / f"{name}.{variant}.mlir")])
                source_file = stubs / f"{name}.stubs.cpp"
                text = source_file.read_text()
                sites = len(re.findall(r"^// site\d+: ", text, re.M))
                offload_sites = len(re.findall(r"^// offload\d+: ", text,
                                               re.M))
                if sites or offload_sites:
                    entry["stubs"] = str(source_file.relative_to(directory))
                    entry["stub_sites"] = sites
                    entry["offload_sites"] = offload_sites
                marks = report.get("device_kernel_marks") or {}
                entry["kernel_marks"] = {k: marks.get(k) for k in
                                         ("context", "applied", "requested")}
                signature = report["signatures"][0]
                planned = signature.get("planned") or signature["baseline"]
                entry.update({
                    "compiled": out.name,
                    "compile_s": round(report["_compile"]["wall_s"], 3),
                    "predicted_baseline": signature["baseline"][
                        "predicted_peak_bytes"],
                    "predicted": planned["predicted_peak_bytes"],
                    "offloaded_bytes": sum(
                        o["bytes"] for o in signature.get("offloaded") or []),
                    "prefetch": signature.get("prefetch_schedule"),
                    "predicted_step_s": signature.get("step_seconds"),
                    "predicted_recompute_s": signature.get(
                        "recompute_seconds")})
                report.pop("_compile")
                print(f"compiled {out.name}: predicted "
                      f"{measure.format_bytes(entry['predicted'])}")
            except measure.CompileError as e:
                # An infeasible budget is an answer; the table shows it.
                entry["compile_error"] = e.stderr.strip().splitlines()[-1] \
                    if e.stderr.strip() else f"exit {e.returncode}"
                print(f"not compiled {out.name}: {entry['compile_error']}")
            entries.append(entry)
        source.unlink()
    (directory / "manifest.json").write_text(json.dumps(
        {"torch_compile_side": torch.__version__, "entries": entries},
        indent=1))
    return 0


# ---------------------------------------------------------------------------
# Device half
# ---------------------------------------------------------------------------

class CudaMeter:
    """measure.train_steps' `stats` interface over the CUDA caching
    allocator: [bytes allocated now, most allocated since the reset]."""

    def memory_stats(self):
        torch.cuda.synchronize()
        return [torch.cuda.memory_allocated(),
                torch.cuda.max_memory_allocated()]

    def reset_peak_memory_stats(self):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def step_measurement(model, inputs, meter, device) -> dict:
    """Peak above the bytes live before the step, and the median step time,
    over MEASURE_STEPS[device] forward+backward steps after WARMUP (.grad
    zeroed in place, as compiled with --grad-buffers resident)."""
    params = [p for p in model.parameters() if p.requires_grad]
    peaks, times = [], []
    for i in range(WARMUP + MEASURE_STEPS[device]):
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
        live = meter.memory_stats()[0]
        meter.reset_peak_memory_stats()
        synchronize(device)
        t0 = time.perf_counter()
        outs = measure.differentiable_outputs(model(*inputs))
        torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        synchronize(device)
        elapsed = time.perf_counter() - t0
        del outs
        if i >= WARMUP:
            peaks.append(meter.memory_stats()[1] - live)
            times.append(elapsed)
    return {"peak": max(peaks), "step_s": statistics.median(times)}


def deterministic_attention(device: str):
    """For the bit-for-bit comparison only: fused attention kernels (flash,
    memory-efficient, cuDNN) may sum in a different order from one run to
    the next, so eager would not even equal itself; the math kernel does.
    Peaks and times are measured with PyTorch's default kernels."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # PyTorch before 2.3: no fused attention to avoid
        return contextlib.nullcontext()
    if device != "cuda":
        return contextlib.nullcontext()
    return sdpa_kernel([SDPBackend.MATH])


def train(model, inputs, device):
    with deterministic_attention(device):
        return measure.train_steps(model, inputs, COMPARE_STEPS,
                                   set_to_none=False)


def run_model(name, kwargs, entries, directory, device, meter, ops) -> None:
    """Eager starts from the compiled modules' initial state (the same keys
    by construction): the GPU machine's torchvision may initialise a model
    differently from the compiling machine's for the same seed."""
    compiled = [e for e in entries if "compile_error" not in e]
    _, shapes = measure.build_zoo_model(name, kwargs, seed=0)
    inputs = [t.to(device) for t in measure.make_inputs(shapes)]
    initial = None
    if compiled:
        initial = measure._state(torch.jit.load(
            str(directory / compiled[0]["compiled"]), map_location=device))

    def eager_model():
        model, _ = measure.build_zoo_model(name, kwargs, seed=0)
        model.to(device)
        if initial is not None:
            model.load_state_dict(initial)
        return model

    reference = train(eager_model(), inputs, device)
    # Eager against itself: whether bit-for-bit is a fair question here.
    again = measure.compare_records(reference, train(eager_model(), inputs,
                                                     device))
    eager = step_measurement(eager_model(), inputs, meter, device)
    eager["repeatable"] = again["bitwise"]
    eager["self_worst_relative"] = again["worst_relative"]
    for entry in entries:
        entry["eager"] = eager
        if "compile_error" in entry:
            continue
        try:
            module = torch.jit.load(str(directory / entry["compiled"]),
                                    map_location=device)
            module.train()
            problems = measure.initial_state_problems(
                measure._state(module), initial)
            records = train(module, inputs, device)
            compare = measure.compare_records(reference, records)
            compare["problems"] = problems + compare["problems"]
            compare["bitwise"] = compare["bitwise"] and not problems
            entry["compare"] = compare
            del module, records
            module = torch.jit.load(str(directory / entry["compiled"]),
                                    map_location=device)
            module.train()
            ops.reset_offload_stats()
            entry["measured"] = step_measurement(module, inputs, meter, device)
            stats = ops.offload_stats()
            entry["offload_stats"] = {"tensors": stats[0], "bytes": stats[1],
                                      "fallbacks": stats[2],
                                      "steps": WARMUP + MEASURE_STEPS[device]}
            if entry.get("offloaded_bytes") and device == "cuda":
                # An empty pool keeps every tensor: the plan without copies.
                ops.set_offload_config(0, 2)
                entry["kept"] = step_measurement(module, inputs, meter, device)
                ops.set_offload_config(4 << 30, 2)
            del module
        except Exception as e:  # recorded; the other modules still run
            entry["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:400]
            continue
        if entry.get("stubs"):
            try:
                run_stubs(entry, directory, inputs, reference, device, meter,
                          ops)
            except Exception as e:
                entry["stubs_error"] = \
                    f"{type(e).__name__}: {e}".splitlines()[0][:400]


def launches_per_step(module, inputs, ops) -> dict:
    """[generic, stubs] compression launches and offload copy calls of one
    forward+backward."""
    ops.reset_launch_counts()
    outs = measure.differentiable_outputs(module(*inputs))
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
    return {"launches": list(ops.launch_counts()),
            "copies": list(ops.offload_copy_counts())}


def run_stubs(entry, directory, inputs, reference, device, meter, ops):
    """The module of `entry` with its launch stubs loaded and on: launches
    per step with and without them, step time with them, and two training
    steps bit for bit against eager (`reference`) as without them."""
    source = directory / entry["stubs"]
    library = measure.build_launch_stubs(source, source.with_suffix(".so"),
                                         device)
    torch.ops.load_library(str(library))
    module = torch.jit.load(str(directory / entry["compiled"]),
                            map_location=device)
    module.train()
    try:
        ops.set_launch_stubs(False)
        generic = launches_per_step(module, inputs, ops)
        ops.set_launch_stubs(True)
        stubbed = launches_per_step(module, inputs, ops)
        measured = step_measurement(module, inputs, meter, device)
        compare = measure.compare_records(reference, train(
            torch.jit.load(str(directory / entry["compiled"]),
                           map_location=device).train(), inputs, device))
    finally:
        # Other plans' measurements run on the generic kernels.
        ops.set_launch_stubs(False)
    entry["with_stubs"] = {"generic_launches": generic["launches"],
                           "stub_launches": stubbed["launches"],
                           "generic_copies": generic["copies"],
                           "stub_copies": stubbed["copies"],
                           "measured": measured,
                           "bitwise": compare["bitwise"]}


def cuda_event_seconds(fn, repeat: int = 20) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def pack_throughput(ops) -> dict:
    """Bit-pack and unpack of 2^28 float32 spikes against copying them,
    as memory traffic (bytes read + written per second)."""
    numel = 1 << 28
    spikes = (torch.rand(numel, device="cuda") < 0.2).float()
    target = torch.empty_like(spikes)
    packed = ops.compress(spikes, "bit")
    assert torch.equal(ops.decompress(packed, "bit", [numel],
                                      torch.float32), spikes)
    full, small = 4 * numel, packed.numel() * packed.element_size()
    copy_s = cuda_event_seconds(lambda: target.copy_(spikes))
    pack_s = cuda_event_seconds(lambda: ops.compress(spikes, "bit"))
    unpack_s = cuda_event_seconds(
        lambda: ops.decompress(packed, "bit", [numel], torch.float32))
    copy_bw = 2 * full / copy_s
    return {"numel": numel, "copy_GBps": copy_bw / 1e9,
            "pack_GBps": (full + small) / pack_s / 1e9,
            "unpack_GBps": (full + small) / unpack_s / 1e9,
            "pack_ratio": (full + small) / pack_s / copy_bw,
            "unpack_ratio": (full + small) / unpack_s / copy_bw}


def transfers() -> dict:
    """Pinned host <-> device copy bandwidth (256 MiB), and how much of a
    device-to-host copy on a side stream hides behind a matrix product on
    the default stream (what offload relies on): overlap = (compute alone +
    copy alone - both together) / the shorter of the two."""
    nbytes = 256 << 20
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    d2h = cuda_event_seconds(lambda: host.copy_(device, non_blocking=True), 10)
    h2d = cuda_event_seconds(lambda: device.copy_(host, non_blocking=True), 10)
    a = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def compute():
        for _ in range(8):
            a @ a

    def copy():
        with torch.cuda.stream(side):
            host.copy_(device, non_blocking=True)
        torch.cuda.current_stream().wait_stream(side)

    def both():
        with torch.cuda.stream(side):
            host.copy_(device, non_blocking=True)
        compute()
        torch.cuda.current_stream().wait_stream(side)

    alone_compute = cuda_event_seconds(compute, 10)
    alone_copy = cuda_event_seconds(copy, 10)
    together = cuda_event_seconds(both, 10)
    return {"d2h_GBps": nbytes / d2h / 1e9, "h2d_GBps": nbytes / h2d / 1e9,
            "compute_ms": 1e3 * alone_compute, "copy_ms": 1e3 * alone_copy,
            "together_ms": 1e3 * together,
            "overlap": (alone_compute + alone_copy - together) /
            min(alone_compute, alone_copy)}


def percent(a, b) -> str:
    return f"{100 * (a - b) / b:+.1f} %" if b else "—"


def mib(n) -> str:
    return f"{n / 2**20:,.1f}"


def bitwise_cell(compare: dict, eager: dict) -> str:
    if compare["bitwise"]:
        return "yes"
    text = "NO: " + ", ".join(compare["first_mismatches"][:2] +
                              compare["problems"][:1])
    if not eager["repeatable"]:
        text += (f" (eager differs from itself by "
                 f"{eager['self_worst_relative']:.1e}, compiled by "
                 f"{compare['worst_relative']:.1e}, relative)")
    return text


def kernel_marks_sentence(result: dict) -> str:
    """Whether the predictions priced the GPU's convolution workspaces."""
    compiled = [e for e in result["entries"] if "kernel_marks" in e]
    contexts = {e["kernel_marks"]["context"] for e in compiled} - {None}
    applied = sum(e["kernel_marks"]["applied"] or 0 for e in compiled)
    lacking = sum(e["kernel_marks"]["requested"] or 0 for e in compiled)
    text = ("Convolution workspaces: " + (
        f"priced from marks of `{', '.join(sorted(contexts))}` "
        f"({applied} convolution calls priced, {lacking} without marks)"
        if contexts else "not priced (compiled without a marks file)") + ".")
    probed = result.get("kernel_probe")
    if probed:
        text += (f" This run measured {probed['calls']} convolution calls "
                 f"into `{probed['file']}` for the next compile "
                 f"(`bench/gpu_check.py compile --kernel-marks`).")
    return text


def write_table(out: pathlib.Path, result: dict) -> None:
    lines = [f"GPU check of {result['date']} on {result['device_name']} "
             f"(PyTorch {result['torch']}, CUDA {result['cuda']}); modules "
             f"compiled by PyTorch {result['compile_torch']}'s memopt-compile "
             f"`{' '.join(COMMON)}`.", "",
             "| model | plan | eager peak MiB (pred. err) | compiled peak MiB "
             "| predicted MiB | error | reduction | eager step ms | compiled "
             "step ms | bitwise | offload |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for e in result["entries"]:
        eager = e.get("eager")
        head = f"| {e['model']} | {e['variant']} | "
        if eager and "predicted_baseline" not in e:
            head += f"{mib(eager['peak'])} | "
        elif eager:
            head += (f"{mib(eager['peak'])} "
                     f"({percent(e.get('predicted_baseline', 0), eager['peak'])}) | ")
        else:
            head += "— | "
        if "compile_error" in e:
            lines.append(head + f"not compiled: {e['compile_error']} "
                         "| | | | | | | |")
            continue
        if "error" in e or "measured" not in e:
            lines.append(head + f"FAILED: {e.get('error', 'not run')} "
                         "| | | | | | | |")
            continue
        m, cmp = e["measured"], e["compare"]
        offload = "—"
        if e.get("offloaded_bytes"):
            s = e["offload_stats"]
            steps = s.get("steps", 1)
            offload = (f"{mib(s['bytes'] / steps)} MiB in "
                       f"{s['tensors'] // steps} tensors per step, "
                       f"{s['fallbacks']} kept")
            if "kept" in e:
                offload += (f"; without the copies: peak "
                            f"{mib(e['kept']['peak'])} MiB, step "
                            f"{percent(m['step_s'], e['kept']['step_s'])} with "
                            f"them (predicted stall {1e3 * (e['prefetch'] or {}).get('stall_seconds', 0):.2f} ms)")
        lines.append(
            head + f"{mib(m['peak'])} | {mib(e['predicted'])} | "
            f"{percent(e['predicted'], m['peak'])} | "
            f"{eager['peak'] / max(m['peak'], 1):.2f}x | "
            f"{1e3 * eager['step_s']:.2f} | {1e3 * m['step_s']:.2f} | "
            f"{bitwise_cell(cmp, eager)} | "
            f"{offload} |")
    lines += ["", kernel_marks_sentence(result)]
    stubbed = [e for e in result["entries"] if "with_stubs" in e]
    if stubbed:
        lines += ["", "Launch stubs (`--emit-stubs`, built here and loaded "
                  "next to the runtime): compression kernel launches per "
                  "step and step time, generic kernels against the plan's "
                  "stubs; offload copy calls per step, the generic "
                  "offload group's (one per tensor each way) against the "
                  "offload sites' (one per region each way).", "",
                  "| model | plan | sites | launches/step generic | with "
                  "stubs | offload sites | copies/step generic | with stubs "
                  "| step ms generic | with stubs | bitwise with stubs |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for e in stubbed:
            w = e["with_stubs"]
            lines.append(
                f"| {e['model']} | {e['variant']} | {e['stub_sites']} | "
                f"{w['generic_launches'][0]} | {w['stub_launches'][1]} "
                f"(+{w['stub_launches'][0]} generic) | "
                f"{e.get('offload_sites', 0)} | "
                f"{w['generic_copies'][0]} | {w['stub_copies'][1]} "
                f"(+{w['stub_copies'][0]} generic) | "
                f"{1e3 * e['measured']['step_s']:.2f} | "
                f"{1e3 * w['measured']['step_s']:.2f} | "
                f"{'yes' if w['bitwise'] else 'NO'} |")
    for e in result["entries"]:
        if "stubs_error" in e:
            lines += ["", f"launch stubs of {e['model']} {e['variant']}: "
                      f"FAILED: {e['stubs_error']}"]
    pack = result.get("pack")
    if pack:
        lines += ["", f"Bit-pack of {pack['numel']:,} float32 spikes (memory "
                  "traffic, bytes read + written per second): copy "
                  f"{pack['copy_GBps']:,.0f} GB/s, pack "
                  f"{pack['pack_GBps']:,.0f} GB/s "
                  f"({100 * pack['pack_ratio']:.0f} % of copy), unpack "
                  f"{pack['unpack_GBps']:,.0f} GB/s "
                  f"({100 * pack['unpack_ratio']:.0f} % of copy)."]
    for key in ("pack_error", "transfers_error"):
        if key in result:
            lines += ["", f"{key.split('_')[0]}: FAILED: {result[key]}"]
    moved = result.get("transfers")
    if moved:
        lines += ["", "Pinned host memory: device to host "
                  f"{moved['d2h_GBps']:.1f} GB/s, host to device "
                  f"{moved['h2d_GBps']:.1f} GB/s (256 MiB). A 256 MiB device-"
                  f"to-host copy on a side stream ({moved['copy_ms']:.2f} ms "
                  f"alone) next to 8 matrix products ({moved['compute_ms']:.2f}"
                  f" ms alone) take {moved['together_ms']:.2f} ms together: "
                  f"{100 * moved['overlap']:.0f} % of the shorter one hidden."]
    (out / "gpu-check.md").write_text("\n".join(lines) + "\n")


def run_all(directory: pathlib.Path, out: pathlib.Path, device: str) -> int:
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((directory / "manifest.json").read_text())
    torch._C._set_graph_executor_optimize(False)
    ops = measure.load_runtime(enable_stats=(device == "cpu"))
    if device == "cuda":
        if not torch.cuda.is_available():
            print("gpu_check: CUDA is not available", file=sys.stderr)
            return 2
        # Eager and compiled must pick the same kernels to match bit for bit.
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True, warn_only=True)
        meter = CudaMeter()
    else:
        meter = ops
    entries = manifest["entries"]
    by_model = {}
    for e in entries:
        by_model.setdefault(e["model"], []).append(e)
    for name, group in by_model.items():
        print(f"running {name}", flush=True)
        try:
            run_model(name, group[0]["kwargs"], group, directory, device,
                      meter, ops)
        except Exception as e:
            for entry in group:
                entry.setdefault("error", f"eager: {type(e).__name__}: {e}"
                                 .splitlines()[0][:400])
    result = {"date": datetime.date.today().isoformat(),
              "device_name": torch.cuda.get_device_name()
              if device == "cuda" else f"CPU ({platform.machine()})",
              "torch": torch.__version__, "cuda": torch.version.cuda,
              "compile_torch": manifest["torch_compile_side"],
              "entries": entries}
    # A budget found infeasible is an answer; any other compile error fails.
    failed = [e for e in entries if "is infeasible" not in
              e.get("compile_error", "is infeasible") or
              "compile_error" not in e and
              ("error" in e or not e["compare"]["bitwise"] or
               "stubs_error" in e or
               ("with_stubs" in e and not e["with_stubs"]["bitwise"]))]
    if device == "cuda":
        try:
            result["pack"] = pack_throughput(ops)
        except Exception as e:
            result["pack_error"] = f"{type(e).__name__}: {e}".splitlines()[0]
        try:
            result["transfers"] = transfers()
        except Exception as e:
            result["transfers_error"] = \
                f"{type(e).__name__}: {e}".splitlines()[0]
    marks = out / KERNEL_MARKS
    if marks.exists():
        result["kernel_probe"] = {
            "file": marks.name,
            "calls": len(marks.read_text().splitlines())}
    (out / "gpu-check.json").write_text(json.dumps(result, indent=1))
    write_table(out, result)
    print((out / "gpu-check.md").read_text())
    pack_ok = device != "cuda" or (
        "pack" in result and result["pack"]["pack_ratio"] >= PACK_TARGET)
    print(f"{len(entries) - len(failed)} passed, {len(failed)} failed"
          + ("" if pack_ok else " (bit-pack below target)"))
    return 0 if not failed and pack_ok else 1


# ---------------------------------------------------------------------------
# Back on the CPU side: the same plans predicted with the GPU's marks
# ---------------------------------------------------------------------------

def predicted_peak(mlir: pathlib.Path, marks, device: str) -> int:
    """The peak memopt-opt predicts for the IR's forward with `marks` (a
    file, or None) on its convolutions (the report's model, the same
    stamped options)."""
    apply = [f"--memopt-apply-kernel-marks=file={marks} device={device}"] \
        if marks else []
    result = subprocess.run(
        [str(measure.tool_path("memopt-opt")), str(mlir), *apply,
         "--memopt-test-memory-model", "-o", "/dev/null"],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip().splitlines()[-1])
    text = result.stdout + result.stderr
    block = text.split("memory-model @forward", 1)
    match = re.search(r"^\s*peak (\d+)", block[-1], re.M)
    if len(block) < 2 or not match:
        raise RuntimeError(f"no peak for @forward in memopt-opt's output "
                           f"of {mlir.name}")
    return int(match.group(1))


def repredict(directory: pathlib.Path, out: pathlib.Path,
              device: str) -> int:
    """Predicts every plan a GPU run measured (OUT/gpu-check.json) again,
    from its IR, with the convolution marks that run measured
    (OUT/cuda-kernel-marks.txt); writes OUT/repredict.md. The plans are
    the ones measured, so the comparison is like for like; that each IR
    predicts, without the marks, what its report said is checked."""
    result = json.loads((out / "gpu-check.json").read_text())
    marks = out / KERNEL_MARKS
    rows = ["| model | plan | measured MiB | predicted MiB (error) | with "
            "the GPU's marks (error) |", "|---|---|---|---|---|"]
    failed, done = 0, set()
    for e in result["entries"]:
        runs = []
        if e["model"] not in done and e.get("eager"):
            done.add(e["model"])
            runs.append(("eager", f"{e['model']}.baseline.mlir",
                         e["eager"]["peak"], e.get("predicted_baseline")))
        if "measured" in e:
            runs.append((e["variant"], f"{e['model']}.{e['variant']}.mlir",
                         e["measured"]["peak"], e["predicted"]))
        for plan, name, measured, before in runs:
            try:
                # The IR must be the plan the report predicted.
                again = predicted_peak(directory / name, None, device)
                if before is not None and again != before:
                    raise RuntimeError(f"{name} predicts {again} B without "
                                       f"marks, the report {before} B")
                after = predicted_peak(directory / name, marks, device)
                cell = f"{mib(after)} ({percent(after, measured)})"
            except (RuntimeError, OSError) as err:
                failed += 1
                cell = f"FAILED: {err}"
            earlier = (f"{mib(before)} ({percent(before, measured)})"
                       if before is not None else "—")
            rows.append(f"| {e['model']} | {plan} | {mib(measured)} | "
                        f"{earlier} | {cell} |")
    text = (f"Plans measured on {result['device_name']} ({result['date']}), "
            f"predicted again with the convolution marks measured there "
            f"(`{marks.name}`).\n\n" + "\n".join(rows) + "\n")
    (out / "repredict.md").write_text(text)
    print(text)
    print(f"{len(rows) - 2 - failed} passed, {failed} failed")
    return 1 if failed else 0


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compile")
    c.add_argument("directory", type=pathlib.Path)
    c.add_argument("--dry-run", action="store_true")
    c.add_argument("--models", help="comma-separated names (default: all)")
    c.add_argument("--batch-scale", type=int, default=1)
    c.add_argument("--kernel-marks", help="a marks file the GPU half wrote "
                   "(OUT/" + KERNEL_MARKS + ")")
    r = sub.add_parser("run")
    r.add_argument("directory", type=pathlib.Path)
    r.add_argument("out", type=pathlib.Path)
    r.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p = sub.add_parser("repredict")
    p.add_argument("directory", type=pathlib.Path)
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("--marks-device", default="cuda",
                   help="the device the marks file names (cpu: dry run)")
    args = parser.parse_args(argv)
    if args.command == "repredict":
        return repredict(args.directory, args.out, args.marks_device)
    if args.command == "compile":
        return compile_all(args.directory, args.dry_run,
                           args.models.split(",") if args.models else None,
                           args.batch_scale, args.kernel_marks)
    return run_all(args.directory, args.out, args.device)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
