#!/usr/bin/python3
"""DistributedDataParallel over memopt.wrap, per-rank memory: WORLD
processes on this machine (gloo, CPU, one thread each), each model trained
3 SGD steps under DDP eager and DDP compiled (`--prefer memory`) from the
same state; prints a markdown table of the per-rank steady-state peaks
(counting allocator, above the bytes live before the step), the same
model's ratio in one process without DDP, the gradient buckets DDP
allocated against memopt's prediction (`world_size`), and whether the
parameters after the last step are bit for bit the eager ones.

    /usr/bin/python3 bench/distributed.py [--world 2] [--models resnet18,...]

MEMOPT_BUILD_DIR selects the build (default build/). docs/distributed.md
keeps the table.
"""
import argparse
import pathlib
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "test" / "python"))

import torch  # noqa: E402

import ddp_worker  # noqa: E402
from memopt import measure  # noqa: E402

MODELS = {
    "resnet18": {"batch": 4, "image": 64},
    "spiking_vgg": {"batch": 2, "size": 48},
    "transformer_encoder": {"batch": 8, "seq": 64, "dim": 128, "ff": 256},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    cases = [{"model": m, "kwargs": MODELS[m], "compiled": "wrap",
              "measure": True} for m in names]
    with tempfile.TemporaryDirectory() as work:
        results = ddp_worker.launch(cases, work, args.world)
    print(f"PyTorch {torch.__version__}, {args.world} processes, gloo, CPU\n")
    print("| model | rank | batch | DDP eager | DDP compiled | DDP ratio | "
          "one-process ratio | DDP buckets (measured / predicted) | "
          "bitwise |")
    print("|---|---|---|---|---|---|---|---|---|")
    ok = True
    for entry in results:
        for r in entry["ranks"]:
            if "error" in r:
                print(f"| {entry['case']['model']} | {r['rank']} | "
                      f"error: {r['error']} |")
                ok = False
                continue
            p = r["peak"]
            predicted = r["wrap_reports"][0]["gradient_bucket_bytes"]
            print(f"| {entry['case']['model']} | {r['rank']} | "
                  f"{','.join(r['signature'])} | "
                  f"{measure.format_bytes(p['ddp_eager'])} | "
                  f"{measure.format_bytes(p['ddp_compiled'])} | "
                  f"{p['ddp_eager'] / p['ddp_compiled']:.2f}x | "
                  f"{p['single_eager'] / p['single_compiled']:.2f}x | "
                  f"{measure.format_bytes(r['ddp_bucket_bytes']['compiled'])}"
                  f" / {measure.format_bytes(predicted)} | "
                  f"{'yes' if r['bitwise'] else 'NO'} |")
            ok = ok and r["bitwise"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
