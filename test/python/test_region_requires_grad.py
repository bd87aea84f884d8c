"""A checkpoint region's forward computes eager's bits where kernels pick by
which operands require grad (found 2026-12-01 with OpenBLAS on PyTorch 2.6,
docs/pytorch2.md "OpenBLAS").

PyTorch 2.x's matmul folds a 3-d input times a matrix into one mm when the
matrix requires grad, and runs a bmm of the expanded matrix otherwise; with
an optimized BLAS the two sum in other orders. A region's forward used to
run on detached inputs, parameters included, so a region around a linear
layer fed a non-contiguous input (nn.MultiheadAttention with
batch_first=True) computed other bits than eager: its plan was refused by
the forward check, or, where the first step's bits happened to agree,
trained apart from eager. The forward now runs on leaves that require grad
where eager's tensors do (lib/Runtime/CheckpointFunction.cpp, runAsEager),
and drops the graph it records at the region's end; the memory model holds
what the region's ops save until then.

Each model here puts the matrix of such a product in a region in another
way: a parameter, a tensor the region derives from one, a tensor computed
before the region and passed in, and nn.MultiheadAttention. On PyTorch 1.13
(whose matmul does not look at requires_grad) and with the reference BLAS
they pass either way; on 2.x with OpenBLAS they failed before.
"""
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import REPO, measured_peaks

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)


class TransposedProjection(nn.Module):
    """A linear layer on a sequence-first view of a batch-first input."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(48, 32) / 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.matmul(x.transpose(0, 1), self.weight.t()))


class DerivedMatrix(nn.Module):
    """The matrix is computed in the region from parameters (a scaled
    weight, as weight normalization does)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(48, 32) / 6)
        self.gain = nn.Parameter(torch.rand(48, 1) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        matrix = self.weight * self.gain
        return torch.tanh(torch.matmul(x.transpose(0, 1), matrix.t()))


class PassedMatrix(nn.Module):
    """The matrix is an input of the region: a tensor requiring grad that
    is no leaf."""

    def forward(self, x: torch.Tensor, matrix: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.matmul(x.transpose(0, 1), matrix))


class ProjectionNet(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.weight = nn.Parameter(torch.randn(32, 48) / 6)
        self.projection = TransposedProjection()
        self.derived = DerivedMatrix()
        self.passed = PassedMatrix()
        self.head = nn.Linear(48, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "parameter":
            h = self.projection(x)
        elif self.kind == "derived":
            h = self.derived(x)
        else:
            h = self.passed(x, self.weight * 2.0)
        return self.head(h)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(32, 4, dropout=0.1,
                                               batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.attention(x, x, x, need_weights=False)
        return self.head(y)


def compile_and_compare(tmp_path, model, region, inputs):
    source = tmp_path / "m.pt"
    torch.jit.script(model).save(str(source))
    out = tmp_path / "m.memopt.pt"
    specs = [f"x:{'x'.join(map(str, t.shape))}" for t in inputs]
    report = measure.compile_model(source, out, specs,
                                   ["--checkpoint", region])
    regions = report["signatures"][0]["regions"]
    assert any(region in r["label"] for r in regions), regions
    result = measure.compare_with_eager(model, torch.jit.load(str(out)),
                                        inputs, steps=2)
    assert result["bitwise"], result
    assert not result["problems"], result["problems"]
    return source, out


@pytest.mark.parametrize("kind,region", [("parameter", "projection"),
                                         ("derived", "derived"),
                                         ("passed", "passed")])
def test_region_around_a_folded_product_trains_like_eager(
        tmp_path, runtime, kind, region):
    torch.manual_seed(0)
    model = ProjectionNet(kind).train()
    x = torch.randn(6, 10, 32, generator=torch.Generator().manual_seed(1))
    compile_and_compare(tmp_path, model, region, [x])


def test_region_around_batch_first_attention_trains_like_eager(
        tmp_path, runtime):
    torch.manual_seed(0)
    model = Attention().train()
    x = torch.randn(8, 16, 32, generator=torch.Generator().manual_seed(1))
    compile_and_compare(tmp_path, model, "attention", [x])


class SavingBlock(nn.Module):
    """A region whose ops save more than they hold live at once: each tanh
    saves its result for backward, where without a graph the first would
    die at the second linear layer."""

    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(nn.Linear(64, 256), nn.Tanh(),
                                   nn.Linear(256, 256), nn.Tanh(),
                                   nn.Linear(256, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) * 2.0


def forward_peak(model, x, stats) -> int:
    """The peak above the bytes live before one training forward."""
    live = stats.memory_stats()[0]
    stats.reset_peak_memory_stats()
    out = model(x)
    peak = stats.memory_stats()[1] - live
    out.sum().backward()
    return peak


def test_region_forward_footprint_is_predicted(tmp_path, runtime):
    """The runtime holds what the region's ops save until the region's end
    (about half the forward's peak here), and the memory model counts it:
    the forward's measured peak is the predicted one."""
    torch.manual_seed(0)
    model = SavingBlock().train()
    x = torch.randn(512, 64)
    source = tmp_path / "m.pt"
    torch.jit.script(model).save(str(source))
    out = tmp_path / "m.memopt.pt"
    report = measure.compile_model(source, out, ["x:512x64"],
                                   ["--checkpoint", "block", "--timeline"])
    signature = report["signatures"][0]
    assert signature["regions"], signature
    timeline = signature["planned"]["timeline"]
    predicted = max(p["live_bytes"] for p in timeline
                    if p["phase"] == "forward")
    stats = measure.load_runtime()
    compiled = torch.jit.load(str(out))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        forward_peak(compiled, x, stats)  # warm up
        measured = forward_peak(compiled, x, stats)
    finally:
        torch.set_num_threads(threads)
    # Without a graph the forward would peak at two 512x256 intermediates;
    # with it, the first tanh's result stays (saved) beside them.
    assert measured >= 3 * 512 * 256 * 4, measured
    assert abs(predicted / measured - 1) < 0.02, (predicted, measured)
    peaks = measured_peaks({"baseline": source, "planned": out}, [x])
    for what, step in peaks.items():
        assert abs(signature[what]["predicted_peak_bytes"] / step - 1) < 0.02
    result = measure.compare_with_eager(model, compiled, [x], steps=2)
    assert result["bitwise"], result
