#!/usr/bin/python3
"""Is this PyTorch's CPU convolution backward reproducible here?

Runs the same small conv-bn-relu-pool net (test/python/models.py SmallCNN)
forward and backward four times in one process from the same seed and
prints, for runs 2-4, the largest difference of each gradient from run 1
and whether it holds NaN. On PyTorch 1.13 every difference is 0; on
PyTorch 2.6 on this project's machines they are not (docs/pytorch2.md):

    /usr/bin/python3 bench/conv_determinism.py [threads]
    scripts/test-torch2.sh --run python3 bench/conv_determinism.py 2
"""
import pathlib
import sys

import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "test" / "python"), str(REPO / "python")]
import models  # noqa: E402

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)


def run():
    torch.manual_seed(0)
    model = models.SmallCNN()
    x = torch.randn(64, 3, 16, 16, generator=torch.Generator().manual_seed(1),
                    requires_grad=True)
    model(x).sum().backward()
    return [x.grad.clone()] + [p.grad.clone() for p in model.parameters()]


runs = [run() for _ in range(4)]
print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} thread(s)")
for i in range(1, 4):
    diffs = [f"{(a - b).abs().max().item():.3g}" for a, b in zip(runs[0], runs[i])]
    nan = any(bool(torch.isnan(g).any()) for g in runs[i])
    print(f"run {i + 1} vs run 1: max |diff| per gradient {diffs}; NaN: {nan}")
