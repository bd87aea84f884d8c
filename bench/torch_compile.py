#!/usr/bin/python3
"""memopt against torch.compile's activation memory budget, on CPU.

For each model: eager; torch.compile (inductor, min-cut partitioner) with
`torch._functorch.config.activation_memory_budget` at 1.0, 0.5, 0.1 and 0;
and memopt-compile --prefer memory and --prefer balanced. Every variant is
measured in a fresh process (one intra-op thread) by the same meter: the
memopt runtime's counting CPU allocator, the high-water mark of one
steady-state forward + backward above the bytes live before it
(python/memopt/measure.py). torch.compile variants are warmed up (compiled)
before measuring; their compile time is reported apart from the step time.
`.grad` follows this PyTorch's zero_grad() default for every variant (and
memopt plans for the same, --grad-buffers auto).

Needs PyTorch >= 2.4 (activation_memory_budget) and a C++ compiler for
inductor's CPU code. On this project's machines it runs in the Debian 13
root of scripts/test-torch2.sh:

    scripts/test-torch2.sh --run python3 bench/torch_compile.py [--models a,b] [--quick]

Prints a markdown table on stdout (progress on stderr).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from memopt import measure  # noqa: E402

MODELS = {
    "resnet18": dict(batch=8, image=112),
    "vit": dict(batch=16, image=64, patch=8, layers=4, heads=4, hidden=128,
                mlp=256),
    "transformer_encoder": dict(batch=8, seq=128, dim=128, heads=4, ff=512,
                                layers=4),
    "spiking_vgg": dict(steps=4, batch=8, size=48, blocks=8),
}
QUICK = {
    "resnet18": dict(batch=2, image=32),
    "vit": dict(batch=2, image=32, patch=8, layers=2, hidden=32, mlp=64),
    "transformer_encoder": dict(batch=2, seq=16, dim=32, ff=64, layers=2),
    "spiking_vgg": dict(steps=2, batch=2, size=16, blocks=2),
}
BUDGETS = [1.0, 0.5, 0.1, 0.0]
PREFER = ["memory", "balanced"]


def log(text):
    print(text, file=sys.stderr, flush=True)


def variant_worker(spec):
    """In a fresh process: measure one variant."""
    import torch
    torch.set_num_threads(1)
    stats = measure.load_runtime()
    name, kwargs = spec["zoo"], spec["kwargs"]
    model, shapes = measure.build_zoo_model(name, kwargs, 0)
    inputs = measure.make_inputs(shapes)
    compile_s = 0.0
    if spec["kind"] == "torch.compile":
        import torch._functorch.config as functorch_config
        functorch_config.activation_memory_budget = spec["budget"]
        model = torch.compile(model)
        t0 = time.perf_counter()
        out = model(*inputs)  # compiles forward and backward
        (out if isinstance(out, torch.Tensor) else out[0]).sum().backward()
        compile_s = time.perf_counter() - t0
        del out
    elif spec["kind"] == "memopt":
        torch._C._set_graph_executor_optimize(False)
        model = torch.jit.load(spec["path"])
        model.train()
    m = measure.measure_training_step(model, inputs, steps=3, warmup=1,
                                      stats=stats)
    return {"peak_bytes": m.peak_bytes, "step_time_s": m.step_time_s,
            "compile_s": compile_s}


def run_variant(spec):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(REPO / "python"), env.get("PYTHONPATH", "")] if p)
    out = subprocess.run(
        [sys.executable, "-W", "ignore", __file__, "--worker", json.dumps(spec)],
        capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1][:200]
                if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--quick", action="store_true", help="tiny sizes")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.worker:
        print(json.dumps(variant_worker(json.loads(opts.worker))))
        return 0
    import torch
    sizes = QUICK if opts.quick else MODELS
    work = pathlib.Path(tempfile.mkdtemp(prefix="memopt-vs-compile-"))
    print(f"PyTorch {torch.__version__}, CPU, one thread; peak above the bytes "
          f"live before a steady-state step (counting allocator); "
          f"`.grad` {'set to None' if measure.zero_grad_sets_none() else 'zeroed'}"
          f" between steps.\n")
    print("| model | variant | peak | vs eager | step time | vs eager | "
          "compile |")
    print("|---|---|---|---|---|---|---|")
    for name in opts.models.split(","):
        kwargs = sizes[name]
        log(f"== {name} {kwargs}")
        base = {"zoo": name, "kwargs": kwargs}
        rows = [("eager", run_variant(dict(base, kind="eager")))]
        for budget in BUDGETS:
            label = f"torch.compile, budget {budget:g}"
            log(f"   {label}")
            rows.append((label, run_variant(
                dict(base, kind="torch.compile", budget=budget))))
        source = work / f"{name}.pt"
        specs = measure.save_zoo_model(name, kwargs, source)
        for prefer in PREFER:
            out = work / f"{name}.{prefer}.pt"
            label = f"memopt --prefer {prefer}"
            log(f"   {label}")
            t0 = time.perf_counter()
            try:
                measure.compile_model(source, out, specs, ["--prefer", prefer])
            except measure.CompileError as error:
                rows.append((label, {"error": str(error)[:200]}))
                continue
            took = time.perf_counter() - t0
            result = run_variant(dict(base, kind="memopt", path=str(out)))
            result["compile_s"] = took
            rows.append((label, result))
        eager = rows[0][1]
        for label, r in rows:
            if "error" in r:
                print(f"| {name} | {label} | error: {r['error']} | | | | |")
                continue
            peak_ratio = eager["peak_bytes"] / max(r["peak_bytes"], 1)
            time_ratio = r["step_time_s"] / max(eager["step_time_s"], 1e-9)
            compile_s = f"{r['compile_s']:.1f} s" if r["compile_s"] else "-"
            print(f"| {name} | {label} | {measure.format_bytes(r['peak_bytes'])}"
                  f" | {peak_ratio:.2f}x lower | {r['step_time_s'] * 1e3:.0f} ms"
                  f" | {time_ratio:.2f}x | {compile_s} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
