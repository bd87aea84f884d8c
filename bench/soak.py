#!/usr/bin/python3
"""Soak: a compiled model trained for many small steps with the runtime's
counting allocator on; the bytes live after each step and each step's peak
must not grow (no leak in the runtime's pools, caches or recompute state).

For each model: scripts the seeded zoo model at its small size, compiles it
with `--prefer memory` (checkpoint regions, and for the spiking VGG 1-bit
packed inputs and saved forms), then trains it with SGD (momentum 0.9) on
fixed inputs for `--steps` steps, reading the allocator after every step.
Prints, per model, the bytes live after step 100 and after the last step,
the highest step peak up to step 100 and after it, and the step times; exits
non-zero when the live bytes after the last step differ from those after
step 100 or a later step peaks higher than the early ones did.

    /usr/bin/python3 bench/soak.py [--steps 10000] [--models spiking_vgg,gpt_decoder]

MEMOPT_BUILD_DIR selects the build (default build/).
"""
import argparse
import pathlib
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

from memopt import measure, zoo  # noqa: E402

CHECKPOINT_STEP = 100
MODELS = {
    "spiking_vgg": dict(steps=4, batch=2, size=16),
    "gpt_decoder": dict(batch=2, seq=16, layers=2),
}


def soak(name: str, kwargs: dict, steps: int, workdir: pathlib.Path,
         stats) -> dict:
    source = workdir / f"{name}.pt"
    compiled_path = workdir / f"{name}.memopt.pt"
    shapes = measure.save_zoo_model(name, kwargs, source)
    report = measure.compile_model(source, compiled_path, shapes,
                                   ["--prefer", "memory"])
    _, inputs = measure.build_zoo_model(name, kwargs, 0)
    batch = measure.make_inputs(inputs, 1)
    model = torch.jit.load(str(compiled_path))
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    live_at, peak_early, peak_late, times = {}, 0, 0, []
    for step in range(1, steps + 1):
        optimizer.zero_grad(set_to_none=False)
        before = stats.memory_stats()[0]
        stats.reset_peak_memory_stats()
        t0 = time.perf_counter()
        outs = measure.differentiable_outputs(model(*batch))
        sum(o.float().mean() for o in outs).backward()
        optimizer.step()
        times.append(time.perf_counter() - t0)
        del outs
        live, high = stats.memory_stats()
        if step <= CHECKPOINT_STEP:
            peak_early = max(peak_early, high - before)
        else:
            peak_late = max(peak_late, high - before)
        if step in (CHECKPOINT_STEP, steps):
            live_at[step] = live
    regions = len(report["signatures"][0]["regions"])
    return {"model": name, "regions": regions, "steps": steps,
            "live_100": live_at[CHECKPOINT_STEP], "live_last": live_at[steps],
            "peak_early": peak_early, "peak_late": peak_late,
            "step_ms_median": 1e3 * sorted(times)[len(times) // 2]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    if args.steps <= CHECKPOINT_STEP:
        parser.error(f"--steps must be above {CHECKPOINT_STEP}")
    torch.set_num_threads(1)
    stats = measure.load_runtime()
    stats.enable_memory_stats()
    rows, failed = [], False
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models.split(","):
            rows.append(soak(name, MODELS[name], args.steps,
                             pathlib.Path(tmp), stats))
    print(f"PyTorch {torch.__version__}, {args.steps} steps, one thread\n")
    print("| model | regions | live after step 100 (B) | live after last "
          "step (B) | peak, steps 1-100 (B) | peak, later steps (B) | "
          "median step (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']} | {r['regions']} | {r['live_100']} | "
              f"{r['live_last']} | {r['peak_early']} | {r['peak_late']} | "
              f"{r['step_ms_median']:.1f} |")
        grew = (r["live_last"] != r["live_100"] or
                r["peak_late"] > r["peak_early"])
        failed |= grew
        print(f"{r['model']}: {'GREW' if grew else 'steady'}",
              file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
