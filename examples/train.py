#!/usr/bin/python3
"""Trains a bundled example before (eager PyTorch) and after memopt-compile,
and prints peak training memory and step time of both.

    /usr/bin/python3 examples/train.py examples/spiking_vgg.py \\
        spiking_vgg.memopt.pt [--report report.json] [--steps 3]

Each side runs in a fresh process with one intra-op thread: warm-up step,
then `--steps` forward+backward steps; peak = high-water mark of the
runtime's counting allocator above the bytes live before the step (see
python/memopt/measure.py). The compiled module is also trained for two SGD
steps next to the eager model, from the same weights and seed with dropout
active, and its outputs, gradients and batch-norm buffers are compared.
"""
import argparse
import json
import pathlib
import runpy
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

from memopt import measure  # noqa: E402


def mib(n: int) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("example", help="examples/<model>.py")
    parser.add_argument("compiled", help="the .pt memopt-compile wrote")
    parser.add_argument("--report", help="memopt-compile's --report JSON")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    example = runpy.run_path(args.example)
    name, kwargs = example["MODEL"], example["KWARGS"]
    common = {"zoo": name, "kwargs": kwargs, "seed": 0,
              "threads": args.threads, "steps": args.steps, "warmup": 1}
    eager = measure.run_worker(dict(common, eager=True))["eager"]
    run = measure.run_worker(dict(common, compiled={"memopt": args.compiled},
                                  compare=True, measure=True))
    got = run["compiled"]["memopt"]
    if "error" in got:
        print(f"compiled model failed to train: {got['error']}")
        return 1
    after, cmp = got["measure"], got["compare"]
    label = "memopt"
    report = None
    if args.report:
        report = json.loads(pathlib.Path(args.report).read_text())
        options = report.get("options") or {}
        label += (f" (--budget {options['budget']})" if options.get("budget")
                  else f" (--prefer {options.get('prefer', '?')})")
    print(f"{name} {' '.join(run['inputs'])}: {args.steps} steps after a "
          f"warm-up, {run['threads']} thread(s)")
    print(f"  {'':28} {'peak memory':>12}  {'step time':>10}")
    print(f"  {'eager PyTorch':28} {mib(eager['peak_bytes'])}  "
          f"{eager['step_time_s']:8.3f} s")
    print(f"  {label:28} {mib(after['peak_bytes'])}  "
          f"{after['step_time_s']:8.3f} s")
    print(f"  => {eager['peak_bytes'] / after['peak_bytes']:.2f}x lower peak, "
          f"{after['step_time_s'] / eager['step_time_s']:.2f}x the step time"
          f" (resident parameters+buffers+grads: "
          f"{mib(eager['resident_bytes']).strip()}, not part of the peak)")
    if cmp["problems"]:
        verdict = f"DIFFERENT: {cmp['problems'][:3]}"
    elif cmp["bitwise"]:
        verdict = "bit for bit equal to eager"
    else:
        verdict = (f"not bitwise: worst relative difference "
                   f"{cmp['worst_relative']:.2g} ({cmp['worst_what']})")
    print(f"  outputs, gradients and BN buffers after 2 SGD steps: {verdict}")
    planned = (report or {}).get("planned") or {}
    if planned.get("predicted_peak_bytes"):
        p = planned["predicted_peak_bytes"]
        print(f"  memopt-compile predicted {mib(p).strip()} "
              f"({100 * (p - after['peak_bytes']) / after['peak_bytes']:+.1f} % "
              f"vs measured)")
    return 0 if not cmp["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
