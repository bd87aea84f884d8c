#!/usr/bin/python3
"""memopt-compile time against graph size (issue 20): GPT-2-style decoders
of 1 to 24 layers and a SpikingJelly-style spiking net with T = 4 to 16
(python/memopt/zoo_families.py), each compiled with `--prefer memory`.
Prints a markdown table: ops in the planned IR (`memopt.op`, region bodies
included), the report's import / kernel-probe / plan / forward-check /
export seconds, and the wall time from outside the process (start-up
included).

    /usr/bin/python3 bench/compile_scaling.py [--json out.json]
"""
import argparse
import json
import pathlib
import re
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

CONFIGS = [(f"gpt2 {n} layers", "gpt_decoder",
            dict(batch=2, seq=64, layers=n)) for n in (1, 2, 4, 8, 12, 24)] + [
    (f"spiking lif atan T={t}", "spiking_family",
     dict(neuron="lif", surrogate="atan", reset="hard", detach_reset=True,
          decay_input=False, steps=t, size=32)) for t in (4, 8, 16)]


def run(label, entry, kwargs, tmp: pathlib.Path) -> dict:
    source = tmp / "model.pt"
    specs = measure.save_zoo_model(entry, kwargs, source)
    mlir = tmp / "planned.mlir"
    report = measure.compile_model(source, tmp / "out.pt", specs,
                                   ["--prefer", "memory", "--emit-mlir",
                                    str(mlir)])
    ops = len(re.findall(r'memopt\.op "', mlir.read_text()))
    return {"model": label, "inputs": specs, "ops": ops,
            **report["timings"], "wall_s": report["_compile"]["wall_s"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, entry, kwargs in CONFIGS:
            rows.append(run(label, entry, kwargs, pathlib.Path(tmp)))
            print(f"{label}: {rows[-1]['wall_s']:.2f} s", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print("| model | inputs | ops | import (s) | probe (s) | plan (s) | "
          "check (s) | export (s) | total (s) | wall (s) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {' '.join(r['inputs'])} | {r['ops']} | "
              f"{r['import_s']:.2f} | {r['probe_s']:.2f} | "
              f"{r['plan_s']:.2f} | {r.get('check_s', 0):.2f} | "
              f"{r['export_s']:.2f} | "
              f"{r['total_s']:.2f} | {r['wall_s']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
