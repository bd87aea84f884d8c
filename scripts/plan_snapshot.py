#!/usr/bin/python3
"""Writes the planned IR of a fixed set of compiles, to compare two builds.

A refactoring of the compiler must not change any plan. This script compiles
every e2e-zoo configuration (test/python/test_compile_e2e.py's models, sizes
and options, both gradient-buffer modes) and every torchvision
classification model at 2x3x64x64 (--prefer memory and --prefer balanced)
with the memopt-compile of MEMOPT_BUILD_DIR (default build/), and writes
for each compile its `--emit-mlir` output (locations included) and its
predicted peaks into OUT/zoo-NAME/ and OUT/torchvision-NAME/. Compare two snapshots with `diff -r`:

    /usr/bin/python3 scripts/plan_snapshot.py /tmp/before   # old build
    /usr/bin/python3 scripts/plan_snapshot.py /tmp/after    # new build
    diff -r /tmp/before /tmp/after && echo identical

Options: --zoo-only, --torchvision-only, --models a,b (a subset by name).
A compile that fails writes its one-line error instead (so a change in
what fails shows too). Compile wall times go to OUT/times.tsv.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "python"), str(REPO / "test" / "python")]

import torch  # noqa: E402

from memopt import measure  # noqa: E402
# The e2e test's models, sizes and configurations.
from test_compile_e2e import CASES, CONFIGS as ZOO_CONFIGS  # noqa: E402

TORCHVISION_CONFIGS = {k: ZOO_CONFIGS[k] for k in ("balanced", "memory")}


def zoo_cases():
    for name, case in CASES.items():
        yield name, lambda n=name, c=case: _save_zoo(n, c.kwargs)


def _save_zoo(name, kwargs):
    def save(path):
        return measure.save_zoo_model(name, kwargs, path)
    return save


def torchvision_cases():
    import torchvision
    for name in sorted(torchvision.models.list_models(torchvision.models)
                       if hasattr(torchvision.models, "list_models")
                       else []):
        if name.startswith("vit_"):
            continue  # fixed 224-pixel inputs
        yield name, lambda n=name: _save_torchvision(n)


def _save_torchvision(name):
    def save(path):
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.get_model(name, num_classes=10).train()
        torch.jit.script(model).save(str(path))
        return ["x:2x3x64x64"]
    return save


def compile_one(tool, source, specs, args, out_dir, label, times):
    mlir = out_dir / f"{label}.mlir"
    report = out_dir / f"{label}.report.json"
    cmd = [str(tool), str(source), "-o", str(out_dir / "out.pt"),
           "--emit-mlir", str(mlir), "--report", str(report)]
    for spec in specs:
        cmd += ["--input-shape", spec]
    start = time.perf_counter()
    result = subprocess.run(cmd + args, capture_output=True, text=True,
                            timeout=900)
    times.write(f"{out_dir.name}\t{label}\t{time.perf_counter() - start:.3f}\n")
    if result.returncode != 0:
        (out_dir / f"{label}.error").write_text(result.stderr)
        return
    # The source's temporary path is the one thing two runs may differ in.
    mlir.write_text(mlir.read_text().replace(str(source.parent), "<tmp>"))
    data = json.loads(report.read_text())
    keep = {k: data.get(k) for k in ("baseline", "planned", "budget_bytes")}
    keep["signatures"] = [
        {k: s.get(k) for k in ("baseline", "planned", "budget_bytes")}
        for s in data.get("signatures") or []]
    report.write_text(json.dumps(keep, indent=1, sort_keys=True) + "\n")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--zoo-only", action="store_true")
    parser.add_argument("--torchvision-only", action="store_true")
    parser.add_argument("--models", default="")
    opts = parser.parse_args(argv)
    tool = measure.tool_path("memopt-compile")
    if not tool.exists():
        sys.exit(f"plan_snapshot: memopt-compile not built: {tool}")
    selected = set(filter(None, opts.models.split(",")))
    jobs = []
    if not opts.torchvision_only:
        jobs += [("zoo-" + n, s, ZOO_CONFIGS, True) for n, s in zoo_cases()]
    if not opts.zoo_only:
        jobs += [("torchvision-" + n, s, TORCHVISION_CONFIGS, False)
                 for n, s in torchvision_cases()]
    opts.out.mkdir(parents=True, exist_ok=True)
    with open(opts.out / "times.tsv", "w") as times, \
            tempfile.TemporaryDirectory() as tmp:
        for name, make_saver, configs, both_grads in jobs:
            if selected and name.split("-", 1)[1] not in selected:
                continue
            out_dir = opts.out / name
            out_dir.mkdir(exist_ok=True)
            source = pathlib.Path(tmp) / f"{name}.pt"
            try:
                specs = make_saver()(source)
            except Exception as e:  # not scriptable in this PyTorch
                (out_dir / "export.error").write_text(f"{type(e).__name__}\n")
                continue
            for label, args in configs.items():
                for grads in (["resident", "allocated"] if both_grads
                              else ["resident"]):
                    compile_one(tool, source, specs,
                                args + ["--grad-buffers", grads], out_dir,
                                f"{label}.{grads}", times)
            (out_dir / "out.pt").unlink(missing_ok=True)
            source.unlink(missing_ok=True)
            print(f"plan_snapshot: {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
