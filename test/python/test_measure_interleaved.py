"""measure.measure_interleaved: several models' training steps taken in
turn (bench/coverage.py's step-time column). Each model's peaks are the
ones it measures alone; the per-round ratios compare models stepped in the
same rounds, and a model against itself is 1.
"""
import sys

import torch
import torch.nn as nn

from conftest import REPO

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402


def mlp(width: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, width), nn.ReLU(),
                         nn.Linear(width, 64)).train()


def test_interleaved_steps_keep_each_models_peak_and_count():
    inputs = [torch.randn(32, 64)]
    small, large = mlp(128), mlp(4096)
    alone = {"small": measure.measure_training_step(mlp(128), inputs, 3, 1),
             "large": measure.measure_training_step(mlp(4096), inputs, 3, 1)}
    together = measure.measure_interleaved({"small": small, "large": large},
                                           inputs, steps=3, warmup=1)
    for label in ("small", "large"):
        assert len(together[label].step_times_s) == 3
        assert together[label].peaks == alone[label].peaks, label
        assert together[label].leaked_bytes == 0, label


def test_step_time_ratios_are_per_round():
    inputs = [torch.randn(32, 64)]
    measured = measure.measure_interleaved(
        {"small": mlp(128), "large": mlp(4096)}, inputs, steps=5, warmup=1)
    ratios = measure.step_time_ratios(measured, "small")
    assert ratios["small"] == 1.0
    # 32x the products per step: far above any noise of this machine.
    assert ratios["large"] > 2.0, ratios
    times = measured["large"].step_times_s
    base = measured["small"].step_times_s
    expected = sorted(t / b for t, b in zip(times, base))[2]
    assert ratios["large"] == expected
