#!/usr/bin/python3
"""Predicted vs measured peak training memory of the model zoo.

For every zoo entry (python/memopt/zoo.py) and size, this
  * scripts the model, imports it with `memopt-translate --import-torchscript
    --probe-kernels` (its convolutions run once on this CPU, as
    memopt-compile does for --device cpu; `--kernel-workspaces model`: the
    workspace formulas instead) and reads the prediction (`peak N`) of
    `memopt-opt --memopt-test-memory-model`;
  * measures one training step `out = model(x); out.backward(ones_like(out))`
    with the runtime's counting allocator: the high-water mark above the
    bytes live before the step, in steady state (after a warm-up step, with
    the .grad buffers allocated and zeroed), once for the eager module and
    once for the scripted one (graph-executor optimization off), each in a
    fresh process with one intra-op thread;
and prints a markdown table.

    /usr/bin/python3 bench/memory_prediction.py --build build [--models a,b]
        [--sizes small,large] [--kernel-workspaces probe|model] [--json out.json]
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))


def runtime_lib(build: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(os.environ.get(
        "MEMOPT_RUNTIME_LIB", build / "lib" / "libmemopt_runtime.so"))


# ---------------------------------------------------------------------------
# Measurement (run in a fresh process: `--worker`)
# ---------------------------------------------------------------------------

def measure_step(model, inputs, stats, steps: int = 2):
    """Peak bytes above live bytes of one step, after `steps - 1` warm-ups.
    Returns (peak, leaked) for the last step."""
    import torch
    params = [p for p in model.parameters() if p.requires_grad]

    def step():
        out = model(*inputs)
        out.backward(torch.ones_like(out))

    peak = leaked = 0
    for _ in range(steps):
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
        live = stats.memory_stats()[0]
        stats.reset_peak_memory_stats()
        step()
        current, high = stats.memory_stats()
        peak, leaked = high - live, current - live
    return peak, leaked


def worker(args) -> None:
    import torch
    torch.set_num_threads(args.threads)
    if args.mode == "scripted":
        torch._C._set_graph_executor_optimize(False)
    torch.ops.load_library(str(runtime_lib(pathlib.Path(args.build))))
    stats = torch.ops.memopt
    stats.enable_memory_stats()
    from memopt import zoo
    model, inputs = zoo.build(args.model, args.size, seed=0)
    if args.mode == "scripted":
        model = torch.jit.load(args.pt)
        model.train()
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(*spec[1], generator=gen) for spec in inputs]
    peak, leaked = measure_step(model, xs, stats, steps=args.steps)
    print(json.dumps({"peak": peak, "leaked": leaked}))


# ---------------------------------------------------------------------------
# Prediction
# ---------------------------------------------------------------------------

def save_scripted(name: str, size: str, path: pathlib.Path):
    import torch
    from memopt import zoo
    model, inputs = zoo.build(name, size, seed=0)
    torch.jit.script(model).save(str(path))
    return inputs


def run_tool(cmd, attempts: int = 10):
    """subprocess.run(check=True) that waits out a tool being relinked."""
    for attempt in range(attempts):
        try:
            return subprocess.run(cmd, check=True, capture_output=True,
                                  text=True)
        except (PermissionError, FileNotFoundError, OSError):
            if attempt == attempts - 1:
                raise
            time.sleep(3)


def predict(build: pathlib.Path, pt: pathlib.Path, inputs, workdir,
            threads: int = 1, probe: bool = True):
    """(peak, unknown op names, resident bytes) from memopt-opt, on the
    import with its convolutions' kernels measured on this CPU (`probe`, as
    memopt-compile does for --device cpu) or left to the workspace
    formulas."""
    from memopt import zoo
    mlir = pathlib.Path(workdir) / (pt.stem + ".mlir")
    cmd = [str(build / "bin" / "memopt-translate"), "--import-torchscript",
           str(pt), "-o", str(mlir)]
    if probe:
        cmd += ["--probe-kernels", f"--probe-threads={threads}"]
    for spec in zoo.input_specs(inputs):
        cmd += ["--input-shape", spec]
    run_tool(cmd)
    out = run_tool(
        [str(build / "bin" / "memopt-opt"),
         f"--memopt-test-memory-model=threads={threads}", str(mlir), "-o",
         "/dev/null"]).stdout
    peak = int(re.search(r"^\s*peak (\d+)", out, re.M).group(1))
    resident = int(re.search(r"^\s*resident (\d+)", out, re.M).group(1))
    unknown = sorted(set(re.findall(r"^\s*unknown (\S+)", out, re.M)))
    return peak, unknown, resident


def measure(build: pathlib.Path, name: str, size: str, mode: str,
            pt: pathlib.Path, threads: int = 1, steps: int = 2) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get(
        "PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", str(threads))
    out = subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker",
         "--build", str(build), "--model", name, "--size", size, "--mode",
         mode, "--pt", str(pt), "--threads", str(threads), "--steps",
         str(steps)], check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(build: pathlib.Path, name: str, size: str, workdir,
             modes=("eager", "scripted"), threads: int = 1,
             probe: bool = True) -> dict:
    from memopt import zoo
    pt = pathlib.Path(workdir) / f"{name}-{size}.pt"
    inputs = save_scripted(name, size, pt)
    peak, unknown, resident = predict(build, pt, inputs, workdir, threads,
                                      probe)
    row = {"model": name, "size": size,
           "input": " ".join(zoo.input_specs(inputs)),
           "predicted": peak, "resident": resident, "unknown": unknown}
    for mode in modes:
        row[mode] = measure(build, name, size, mode, pt, threads)["peak"]
    return row


def error(pred: int, meas: int) -> float:
    return (pred - meas) / meas if meas else float("inf")


def markdown(rows, modes=("eager", "scripted")) -> str:
    head = ["model", "input", "predicted (B)"]
    for m in modes:
        head += [f"{m} (B)", f"error vs {m}"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|"]
    for r in rows:
        cells = [r["model"], f"`{r['input']}`", f"{r['predicted']:,}"]
        for m in modes:
            delta = r["predicted"] - r[m]
            cells += [f"{r[m]:,}",
                      f"{100 * error(r['predicted'], r[m]):+.2f} % ({delta:+,} B)"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=str(REPO / "build"))
    parser.add_argument("--models", default=None,
                        help="comma-separated zoo names (default: all)")
    parser.add_argument("--sizes", default="small,large")
    parser.add_argument("--modes", default="eager,scripted")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--kernel-workspaces", choices=("probe", "model"),
                        default="probe",
                        help="convolution workspaces measured on this CPU "
                             "(as memopt-compile does) or from the formulas")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--keep", help="keep the .pt/.mlir files here")
    # internal: one measurement in this process
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--pt", help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    from memopt import zoo
    build = pathlib.Path(args.build).resolve()
    names = args.models.split(",") if args.models else list(zoo.ZOO)
    modes = tuple(args.modes.split(","))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.keep or tmp
        os.makedirs(workdir, exist_ok=True)
        for name in names:
            for size in args.sizes.split(","):
                t0 = time.time()
                row = run_case(build, name, size, workdir, modes, args.threads,
                               args.kernel_workspaces == "probe")
                row["seconds"] = round(time.time() - t0, 1)
                rows.append(row)
                errs = " ".join(
                    f"{m} {100 * error(row['predicted'], row[m]):+.1f}%"
                    for m in modes)
                print(f"{name} {size}: predicted {row['predicted']} {errs}"
                      f"{' unknown ' + ','.join(row['unknown']) if row['unknown'] else ''}"
                      f" ({row['seconds']} s)", file=sys.stderr, flush=True)
    print(markdown(rows, modes))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
