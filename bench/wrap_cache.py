#!/usr/bin/python3
"""How long `memopt.wrap` takes when its plan is cached: the second run of a
training script must not recompile (issue 18: <= 0.5 s).

For each model, in a fresh, empty cache directory: one process wraps it
(compiles: the cold time), then --repeat further NEW processes wrap the same
model and shapes (cache hits). Times are measured inside each process around
the `memopt.wrap` call only (interpreter start-up and `import torch` come on
top and are printed separately); the hit time is the median over the
processes, and the best is shown next to it.

    MEMOPT_BUILD_DIR=build /usr/bin/python3 bench/wrap_cache.py \\
        [--models resnet18,spiking_vgg,vit] [--size small] [--repeat 5] \\
        [--limit 0.5]

Exits 1 when a median cache-hit time exceeds --limit seconds or a later
process did not hit the cache.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]

_SCRIPT = r"""
import json, sys, time
t_start = time.perf_counter()
import torch
import memopt
from memopt import measure, zoo
t_import = time.perf_counter() - t_start
torch.set_num_threads(1)
name, size, cache = sys.argv[1], sys.argv[2], sys.argv[3]
model, shapes = zoo.build(name, size)
x = measure.make_inputs(shapes)
t0 = time.perf_counter()
wrapped = memopt.wrap(model, tuple(x), cache_dir=cache, verbose=False)
seconds = time.perf_counter() - t0
plan = next(iter(wrapped._memopt_plans.values()))
print(json.dumps({"wrap_s": seconds, "import_s": t_import,
                  "hit": plan.cache_hit,
                  "shapes": zoo.input_specs(shapes)}))
"""


def run_once(name: str, size: str, cache: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(REPO / "python"), env.get("PYTHONPATH", "")] if p)
    env.setdefault("MEMOPT_BUILD_DIR", str(REPO / "build"))
    env["OMP_NUM_THREADS"] = "1"
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT,
                          name, size, cache], capture_output=True, text=True,
                         env=env, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"{name}: wrap failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet18,spiking_vgg,vit")
    parser.add_argument("--size", default="small", choices=["small", "large"])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--limit", type=float, default=0.5)
    args = parser.parse_args()
    failed = False
    print(f"memopt.wrap, cold (compiles) vs cached (a new process, same "
          f"model and shapes); {args.repeat} cached runs, median (best)")
    print(f"  {'model':22} {'inputs':20} {'cold':>8} {'cached':>16} "
          f"{'import torch+memopt':>20}")
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="memopt-cache-") as cache:
            cold = run_once(name, args.size, cache)
            hits = [run_once(name, args.size, cache) for _ in range(args.repeat)]
        times = [h["wrap_s"] for h in hits]
        median = statistics.median(times)
        ok = (not cold["hit"]) and all(h["hit"] for h in hits) and \
            median <= args.limit
        failed |= not ok
        print(f"  {name:22} {' '.join(cold['shapes']):20} "
              f"{cold['wrap_s']:7.2f}s {median:7.3f}s ({min(times):.3f}s) "
              f"{statistics.median(h['import_s'] for h in hits):19.2f}s"
              f"{'' if ok else '  FAIL'}")
    print(f"limit: cached wrap <= {args.limit} s: "
          f"{'met' if not failed else 'NOT met'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
