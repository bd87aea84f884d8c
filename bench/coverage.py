#!/usr/bin/python3
"""Coverage: models no one here wrote, through memopt-compile and training.

For every classification model of the installed torchvision (10 classes,
`--batch` images of `--image` pixels, or of the first larger size eager's
own forward accepts; the 224-pixel ViTs are left out), or
with --families for the families of memopt.zoo_families (GPT-2-style
decoder, LSTM/GRU language models, U-Net, SpikingJelly neurons), or with
--dense for torchvision's segmentation models, small video classifiers and
optical-flow models (dense_models()), this
  * scripts it (a model TorchScript cannot script is a row saying so);
  * compiles it with `--prefer memory` and `--prefer balanced` (wall time
    from outside the process, and the report's predictions), or records
    memopt-compile's one-line error;
  * in a fresh process (measure.run_worker, one intra-op thread): measures
    eager's training step and each compiled module's (peak above the bytes
    live before the step; step time as the median over rounds of a plan's
    step over eager's, the three stepping in turn) and compares two SGD training
    steps (momentum 0.9) of each compiled module with eager's bit for bit
    (outputs, parameter gradients, buffers);
and prints a markdown table and a summary against issue 20's targets:
share that compiles, no `--prefer memory` peak above eager's, median
reduction, predictions within 10 %, compile time. Where `.grad` is
allocated in the step (PyTorch 2.x's default, `zero_grad(set_to_none=True)`),
every parameter's gradient is live when backward ends, whatever the plan:
the table's last column is the reduction that floor allows (eager's peak
over the bytes of the trainable parameters).

    /usr/bin/python3 bench/coverage.py [--models resnet18,alexnet]
        [--batch 2] [--image 64] [--json rows.json]
    /usr/bin/python3 bench/coverage.py --families [--models "lstm lm"]
    /usr/bin/python3 bench/coverage.py --dense [--models fcn_resnet50]
    /usr/bin/python3 bench/coverage.py --compile-only [--json co.json]
    /usr/bin/python3 bench/coverage.py --from-json rows.json

With --compile-only, each row stops after the two compiles and the table
is where the memory compile's seconds go (the report's phases).

MEMOPT_BUILD_DIR selects the build (default build/).
"""
import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torchvision  # noqa: E402

from memopt import measure, zoo  # noqa: E402

PREFERENCES = ("memory", "balanced")
PREDICTION_TOLERANCE = 0.10
# Eager and both plans are measured in turn below this much of weights in
# the scripted model (three copies live, each with its gradients).
INTERLEAVE_BELOW_BYTES = 1 << 30


def classifiers():
    """Every torchvision classification model but the 224-pixel ViTs."""
    names = torchvision.models.list_models(module=torchvision.models)
    return sorted(n for n in names if not n.startswith("vit_"))


# Dense-prediction and video models of torchvision that train at small
# sizes: every segmentation model (a dict result, "out" and "aux"), the
# 3-D convolution video classifiers and the optical-flow models. Left out: s3d (its last pooling is
# 2x7x7, so it needs 224-pixel clips) and the video transformers (mvit,
# swin3d), 16 frames of 224 pixels, too slow to train on this machine.
DENSE_VIDEO_LEFT_OUT = ("s3d", "mvit", "swin3d")


def dense_models():
    """torchvision's segmentation models, its small video classifiers and
    its optical-flow models."""
    models = torchvision.models
    names = models.list_models(module=models.segmentation)
    names += [n for n in models.list_models(module=models.video)
              if not n.startswith(DENSE_VIDEO_LEFT_OUT)]
    names += models.list_models(module=models.optical_flow)
    return sorted(names)


def first_line(text: str) -> str:
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else ""


def smallest_working_image(name: str, batch: int, image: int) -> int:
    """`image`, or the first larger size at which eager's own forward runs:
    some classifiers refuse small inputs in eager too (inception_v3's
    auxiliary head pools a 2x2 map with a 5x5 window at 64 pixels, maxvit_t
    partitions 7x7 windows); the table measures them at a size they accept
    rather than counting eager's refusal as memopt's."""
    for size in [image] + [s for s in (96, 128, 160, 224, 299) if s > image]:
        model, inputs = measure.build_zoo_model(
            zoo.TORCHVISION_PREFIX + name, {"batch": batch, "image": size}, 0)
        try:
            with torch.no_grad():
                model.train()(*measure.make_inputs(inputs, 0))
            return size
        except RuntimeError:
            continue
    return image


def family_variants():
    """The families of memopt.zoo_families, as (label, zoo entry, kwargs):
    a GPT-2-style decoder (masked_fill; scaled_dot_product_attention where
    this PyTorch has it), LSTM and GRU language models, a U-Net, two models
    with control flow on tensor data, and the SpikingJelly neuron forms,
    each neuron kind with both surrogates, both resets, detach_reset and
    decay_input on and off, T from 4 to 16."""
    variants = [
        ("gpt2 (masked_fill)", "gpt_decoder", dict(batch=2, seq=64, layers=4)),
        # Where activations, not the weights' gradients, dominate.
        ("gpt2 4x128 (masked_fill)", "gpt_decoder",
         dict(batch=4, seq=128, layers=4)),
        ("lstm lm", "rnn_lm", dict(cell="lstm", batch=4, seq=32)),
        ("gru lm", "rnn_lm", dict(cell="gru", batch=4, seq=32)),
        # Where activations, not the weights' gradients, dominate.
        ("lstm lm 16x128", "rnn_lm", dict(cell="lstm", batch=16, seq=128)),
        ("gru lm 16x128", "rnn_lm", dict(cell="gru", batch=16, seq=128)),
        ("unet", "unet", dict(batch=2, image=64)),
        # Control flow on tensor data, kept whole by the importer.
        ("gated mlp (if on data)", "gated_mlp", dict(batch=256, dim=512)),
        ("refiner (break on data)", "refiner", dict(batch=128, dim=256)),
    ]
    if hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        variants[2:2] = [
            ("gpt2 (sdpa)", "gpt_decoder",
             dict(batch=2, seq=64, layers=4, attention="sdpa")),
            ("gpt2 4x128 (sdpa)", "gpt_decoder",
             dict(batch=4, seq=128, layers=4, attention="sdpa"))]
    spiking = [  # neuron, surrogate, reset, detach_reset, decay_input, T
        ("if", "atan", "hard", True, True, 4),
        ("if", "sigmoid", "soft", False, True, 8),
        ("lif", "atan", "hard", True, False, 4),
        ("lif", "atan", "soft", False, True, 8),
        ("lif", "sigmoid", "hard", False, True, 16),
        ("lif", "sigmoid", "soft", True, False, 16),
        ("plif", "atan", "hard", True, True, 8),
        ("plif", "sigmoid", "soft", False, False, 4),
        ("plif", "sigmoid", "hard", True, False, 16),
    ]
    for neuron, surrogate, reset, detach, decay, steps in spiking:
        label = (f"{neuron} {surrogate} {reset}" +
                 (" detach" if detach else "") +
                 (" decay_input" if decay else "") + f" T={steps}")
        variants.append((label, "spiking_family", dict(
            neuron=neuron, surrogate=surrogate, reset=reset,
            detach_reset=detach, decay_input=decay, steps=steps, size=32)))
    return variants


def trainable_bytes(pt: pathlib.Path) -> int:
    """Bytes of the scripted model's trainable parameters, each counted once
    (a tied head shares its embedding's storage)."""
    seen, total = set(), 0
    for p in torch.jit.load(str(pt)).parameters():
        if p.requires_grad and p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def run_model(name: str, entry: str, kwargs: dict, workdir: pathlib.Path,
              worker_timeout: float = 1800, grad_buffers: str = "auto",
              compile_only: bool = False):
    """`grad_buffers`: "auto" (this PyTorch's zero_grad default), "resident"
    (.grad zeroed in place) or "allocated" (set to None), for the compile
    (--grad-buffers) and the measured steps alike. `compile_only`: the row
    ends after both compiles (no training)."""
    row = {"model": name}
    pt = workdir / (
        "".join(c if c.isalnum() else "_" for c in name) + ".pt")
    try:
        shapes = measure.save_zoo_model(entry, kwargs, pt)
    except Exception as e:  # TorchScript's refusal, not memopt's
        row["script_error"] = first_line(str(e))
        return row
    row["trainable_bytes"] = trainable_bytes(pt)
    compiled = {}
    for prefer in PREFERENCES:
        out = pt.with_suffix(f".{prefer}.pt")
        try:
            report = measure.compile_model(
                pt, out, shapes,
                ["--prefer", prefer, "--grad-buffers", grad_buffers])
        except measure.CompileError as e:
            row["compile_error"] = first_line(e.stderr)
            return row
        sig = report["signatures"][0]
        # "allocated": .grad is None when the step starts (memopt-compile
        # plans for this PyTorch's zero_grad default, as the worker steps).
        row["grads_in_step"] = (
            report["options"].get("grad_buffers") == "allocated")
        row[prefer] = {
            "compile_s": report["_compile"]["wall_s"],
            "timings": report["timings"],
            "predicted_baseline": sig["baseline"]["predicted_peak_bytes"],
            "predicted": (sig["planned"] or sig["baseline"])[
                "predicted_peak_bytes"],
            "regions": len(sig["regions"]),
            "unknown_ops": sig["unknown_ops"],
        }
        compiled[prefer] = str(out)
    if compile_only:
        row["source_bytes"] = pt.stat().st_size
        return row
    # Two warm-up steps: TorchScript's profiling executor optimizes a
    # graph (the module's and each region's) on its second run, so the
    # first two steps of a compiled module are not its steady state. Eager
    # and both plans step in turn (measure_interleaved), so that a slow
    # spell of the machine slows all three alike; a model whose three
    # copies would not fit beside each other is measured one at a time.
    interleave = pt.stat().st_size < INTERLEAVE_BELOW_BYTES
    spec = {"zoo": entry, "kwargs": kwargs, "threads": 1,
            "steps": 10 if interleave else 4, "warmup": 2, "eager": True,
            "compiled": compiled, "compare": True, "compare_steps": 2,
            "interleave": interleave,
            "grad_buffers": grad_buffers}
    try:
        result = measure.run_worker(spec, timeout=worker_timeout)
    except Exception as e:
        row["run_error"] = first_line(str(e))
        return row
    row["eager"] = {"peak": result["eager"]["peak_bytes"],
                    "step_s": result["eager"]["step_time_min_s"]}
    for prefer in PREFERENCES:
        got = result["compiled"].get(prefer, {})
        if "error" in got:
            row[prefer]["run_error"] = first_line(got["error"])
            continue
        row[prefer]["peak"] = got["measure"]["peak_bytes"]
        row[prefer]["step_s"] = got["measure"]["step_time_min_s"]
        if prefer in result.get("step_ratios", {}):
            row[prefer]["step_ratio"] = result["step_ratios"][prefer]
        row[prefer]["bitwise"] = got["compare"]["bitwise"]
        row[prefer]["mismatches"] = got["compare"]["first_mismatches"][:3]
        row[prefer]["problems"] = got["compare"]["problems"][:3]
    return row


def error(predicted, measured):
    return (predicted - measured) / measured if measured else float("inf")


def step_ratio(plan, eager) -> float:
    """The plan's step time over eager's: the median of per-round ratios
    where they were measured in turn, else the fastest steps' ratio."""
    return plan.get("step_ratio", plan["step_s"] / eager["step_s"])


def gradient_bound(row):
    """Eager's peak over the trainable parameters' bytes where .grad is
    allocated in the step (no plan's reduction can pass it), else None."""
    if not row.get("grads_in_step") or not row.get("trainable_bytes"):
        return None
    return row["eager"]["peak"] / row["trainable_bytes"]


def mib(n):
    return f"{n / 2**20:.2f}"


def markdown(rows) -> str:
    head = ("| model | eager peak (MiB) | predicted | memory peak (MiB) | "
            "predicted | reduction | step vs eager | bitwise | balanced "
            "peak (MiB) | reduction | step vs eager | bitwise | compile (s) | "
            "bound (grads) |")
    lines = [head, "|---|" + "---:|" * 12 + "---:|"]
    for r in rows:
        if "script_error" in r or "compile_error" in r or "run_error" in r:
            why = (r.get("script_error") and "TorchScript: " +
                   r["script_error"]) or r.get("compile_error") or r.get(
                       "run_error")
            lines.append(f"| {r['model']} | {why.replace('|', '/')} |" +
                         " |" * 12)
            continue
        e, m, b = r["eager"], r["memory"], r["balanced"]
        cells = [r["model"], mib(e["peak"]),
                 f"{100 * error(m['predicted_baseline'], e['peak']):+.1f} %"]
        for p in (m, b):
            if "run_error" in p:
                cells += [p["run_error"].replace("|", "/"), "", "", ""] + (
                    [""] if p is m else [])
                continue
            cells.append(mib(p["peak"]))
            if p is m:
                cells.append(f"{100 * error(p['predicted'], p['peak']):+.1f} %")
            cells += [f"{e['peak'] / p['peak']:.2f}x",
                      f"{step_ratio(p, e):.2f}x",
                      "yes" if p["bitwise"] else "**no**"]
        cells.append(f"{m['compile_s']:.2f}")
        bound = gradient_bound(r)
        cells.append(f"{bound:.2f}x" if bound else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def slow_compiles(rows, digits: int):
    """The rows whose `--prefer memory` compile took over 1 s from outside,
    each with its wall time."""
    return [f"{r['model']} ({r['memory']['compile_s']:.{digits}f} s)"
            for r in rows if r["memory"]["compile_s"] > 1.0]


def compile_markdown(rows) -> str:
    """The compile-only table: where each `--prefer memory` compile's
    seconds go (the report's phases; wall is from outside the process).
    A row compiles when both preferences do."""
    phases = ("import_s", "probe_s", "plan_s", "check_s", "export_s",
              "total_s")
    lines = ["| model | file (MB) | import (s) | probe (s) | plan (s) | "
             "check (s) | export (s) | total (s) | wall (s) |",
             "|---|" + "---:|" * 8]
    compiled = [r for r in rows
                if "script_error" not in r and "compile_error" not in r]
    for r in rows:
        if r not in compiled:
            why = r.get("script_error") or r["compile_error"]
            lines.append(f"| {r['model']} | {why.replace('|', '/')} |" +
                         " |" * 7)
            continue
        m = r["memory"]
        cells = [r["model"], f"{r.get('source_bytes', 0) / 1e6:.0f}"]
        cells += [f"{m['timings'].get(k, 0):.2f}" for k in phases]
        cells.append(f"{m['compile_s']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    walls = sorted(r["memory"]["compile_s"] for r in compiled)
    lines += ["", f"- {len(rows)} models; {len(compiled)} compile"]
    if walls:
        lines.append(f"- `--prefer memory` wall: median "
                     f"{statistics.median(walls):.2f} s, max {walls[-1]:.2f} s")
    lines.append("- over 1 s (wall, from outside): "
                 f"{', '.join(slow_compiles(compiled, 2)) or 'none'}")
    return "\n".join(lines)


def summary(rows) -> str:
    total = len(rows)
    scripted = [r for r in rows if "script_error" not in r]
    compiled = [r for r in scripted if "compile_error" not in r]
    ran = [r for r in compiled if "run_error" not in r
           and "peak" in r["memory"] and "peak" in r["balanced"]]
    out = [f"- {total} models; {len(scripted)} script; {len(compiled)} "
           f"compile ({100 * len(compiled) / max(len(scripted), 1):.0f} % "
           f"of those that script); {len(ran)} trained both plans"]
    if ran:
        ratios = [r["eager"]["peak"] / r["memory"]["peak"] for r in ran]
        worse = [r["model"] for r in ran
                 if r["memory"]["peak"] > r["eager"]["peak"]]
        not_bitwise = [f"{r['model']} ({p})" for r in ran for p in PREFERENCES
                       if not r[p]["bitwise"]]
        off = [r["model"] for r in ran
               if abs(error(r["memory"]["predicted_baseline"],
                            r["eager"]["peak"])) > PREDICTION_TOLERANCE
               or abs(error(r["memory"]["predicted"], r["memory"]["peak"]))
               > PREDICTION_TOLERANCE]
        bounded = [f"{r['model']} ({gradient_bound(r):.2f}x)" for r in ran
                   if gradient_bound(r) and gradient_bound(r) < 2.0]
        slow = slow_compiles(ran, 1)
        # Rows of runs before the bound was recorded say nothing.
        if any(r.get("grads_in_step") for r in ran):
            # What a plan can act on: the peak above the gradients' bytes.
            above = [(r["eager"]["peak"] - r["trainable_bytes"]) /
                     (r["memory"]["peak"] - r["trainable_bytes"])
                     for r in ran if r.get("grads_in_step") and
                     r["memory"]["peak"] > r["trainable_bytes"]]
            gradient_line = (f"- .grad allocated in the step, and the "
                             f"weights' gradients alone put 2x out of reach: "
                             f"{', '.join(bounded) or 'none'}" +
                             (f"; above the gradients' bytes, median "
                              f"reduction {statistics.median(above):.2f}x "
                              f"(min {min(above):.2f}x, max "
                              f"{max(above):.2f}x)" if above else ""))
        elif all(r.get("grads_in_step") is False for r in ran):
            gradient_line = "- .grad zeroed in place (resident): no gradient bound"
        else:
            gradient_line = "- gradient bound not recorded"
        out += [
            f"- `--prefer memory`: median reduction {statistics.median(ratios):.2f}x "
            f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x); peak above "
            f"eager's: {', '.join(worse) or 'none'}",
            f"- not bitwise: {', '.join(not_bitwise) or 'none'}",
            f"- a prediction (baseline or memory plan) off by more than 10 %: "
            f"{', '.join(off) or 'none'}",
            gradient_line,
            f"- memopt-compile over 1 s (wall, from outside): "
            f"{', '.join(slow) or 'none'}"]
    failed = [f"{r['model']}: {r.get('compile_error') or r.get('run_error')}"
              for r in scripted if "compile_error" in r or "run_error" in r]
    if failed:
        out.append("- failures:")
        out += [f"  - {f}" for f in failed]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", help="comma-separated torchvision names "
                        "(default: every classifier)")
    parser.add_argument("--families", action="store_true",
                        help="the model families of memopt.zoo_families "
                        "instead of torchvision (--models picks labels)")
    parser.add_argument("--dense", action="store_true",
                        help="torchvision's segmentation, video and optical-"
                        "flow models instead of its classifiers (--models "
                        "picks names)")
    parser.add_argument("--frames", type=int, default=8,
                        help="clip length of the video models (--dense)")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--image", type=int, default=64)
    parser.add_argument("--json", help="also write the rows here (after "
                        "each model, so an interrupted run keeps them)")
    parser.add_argument("--from-json", help="only print the table and "
                        "summary of rows an earlier run wrote")
    parser.add_argument("--compile-only", action="store_true",
                        help="compile both preferences and tabulate the "
                        "memory compile's phases; no training")
    parser.add_argument("--grad-buffers", default="auto",
                        choices=("auto", "resident", "allocated"),
                        help="compile and measure with .grad zeroed in place "
                        "(resident: zero_grad(set_to_none=False)) or set to "
                        "None (allocated in the step); auto: this PyTorch's "
                        "zero_grad default")
    parser.add_argument("--worker-timeout", type=float, default=1800,
                        help="seconds one model's training measurement may "
                        "take (regnet_y_128gf needs more than the default "
                        "on a 2-core machine)")
    args = parser.parse_args()
    if args.from_json:
        rows = json.loads(pathlib.Path(args.from_json).read_text())
        if all("eager" not in r for r in rows):
            print(compile_markdown(rows))
            return 0
        print(markdown(rows))
        print()
        print(summary(rows))
        return 0
    if args.families:
        runs = family_variants()
        if args.models:
            wanted = args.models.split(",")
            runs = [r for r in runs if r[0] in wanted]
    elif args.dense:
        names = args.models.split(",") if args.models else dense_models()
        video = torchvision.models.list_models(module=torchvision.models.video)
        runs = [(n, zoo.TORCHVISION_PREFIX + n,
                 dict(batch=args.batch, image=args.image,
                      **({"frames": args.frames} if n in video else {})))
                for n in names]
    else:
        names = args.models.split(",") if args.models else classifiers()
        runs = []
        for n in names:
            image = smallest_working_image(n, args.batch, args.image)
            label = n if image == args.image else f"{n} ({image} px)"
            runs.append((label, zoo.TORCHVISION_PREFIX + n,
                         {"batch": args.batch, "image": image}))
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name, entry, kwargs in runs:
            t0 = time.perf_counter()
            rows.append(run_model(name, entry, kwargs, pathlib.Path(tmp),
                                  args.worker_timeout, args.grad_buffers,
                                  args.compile_only))
            print(f"{name}: {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr, flush=True)
            if args.json:
                pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    shapes = ("the sizes of bench/coverage.py's family_variants()"
              if args.families else
              f"images {args.batch}x3x{args.image}x{args.image}, clips "
              f"{args.batch}x3x{args.frames}x{args.image}x{args.image}"
              if args.dense else
              f"x:{args.batch}x3x{args.image}x{args.image}")
    print(f"torchvision {torchvision.__version__}, PyTorch {torch.__version__}, "
          f"{shapes}, .grad {args.grad_buffers}, "
          f"{time.perf_counter() - started:.0f} s\n")
    if args.compile_only:
        print(compile_markdown(rows))
        return 0
    print(markdown(rows))
    print()
    print(summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
