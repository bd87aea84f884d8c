"""Plans follow the intra-op thread count CPU training runs with
(`memopt-compile --intra-op-threads`, docs/compile.md).

The thread count picks PyTorch's CPU convolution kernels and what they
allocate: an unstrided 1x1 convolution on a batch under 16 runs without
oneDNN on one thread and through oneDNN (blocked copies) on more, and
oneDNN's weight gradient on more than one thread allocates more (a 3x3
convolution at 2x8x8x8: 3584 bytes more on two threads, PyTorch 1.13 and
2.6 alike). The kernel probe runs each convolution with the given count and
the formulas read the module's stamp, so for each count the baseline and
planned peaks are predicted to within 1 % of what a training process with
that many threads measures. Before the option existed the probe always ran
on one thread: the C++ consumer of test_cmake_package, on Debian 13's
PyTorch 2.6 (two threads by default on a two-CPU machine where 1.13 takes
one), measured 11 % above the plan. Measured at two threads against a
one-thread plan: pointwise 88192 bytes for 65536 predicted, small_chain
54048 for 50464.

Two models written here, one per mechanism, each at one and two threads;
`memopt.wrap` passes the calling process's count, and compiles again when
training moves to another.
"""
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import REPO

sys.path.insert(0, str(REPO / "python"))
import memopt  # noqa: E402
from memopt import measure  # noqa: E402

# Peaks are measured as docs/memory-prediction.md says and as memopt's
# output runs: the TorchScript interpreter without the profiling executor's
# autodiff subgraphs, which keep other tensors for backward. With them,
# small_chain's baseline on oneDNN's AVX2 kernels (PyTorch 1.13 and 2.6)
# measured 41800 bytes for 39456 predicted; without them 39456, as eager.
# (With the AVX-512 kernels a larger convolution peak hid the difference.)
torch._C._set_graph_executor_optimize(False)


class Pointwise(nn.Module):
    """1x1 convolutions on a batch of two: oneDNN or not by thread count."""

    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(16, 32, 1)
        self.project = nn.Conv2d(32, 16, 1)

    def forward(self, x):
        return self.project(F.relu(self.expand(x)))


class SmallChain(nn.Module):
    """3x3 convolution + batch norm + ReLU blocks on 8x8 maps."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.blocks = nn.Sequential(*[
            nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False),
                          nn.BatchNorm2d(8), nn.ReLU())
            for _ in range(3)])
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean([2, 3]))


MODELS = {"pointwise": (Pointwise, (2, 16, 8, 8)),
          "small_chain": (SmallChain, (2, 3, 8, 8))}


@pytest.fixture(autouse=True)
def restore_threads():
    saved = torch.get_num_threads()
    yield
    torch.set_num_threads(saved)


def measured_peak(path, shape, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    module = torch.jit.load(str(path))
    step = measure.measure_training_step(
        module, [torch.randn(shape)], steps=2, warmup=2, set_to_none=False)
    return step.peak_bytes


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_prediction_at_the_training_thread_count(tmp_path, name, threads):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    source = tmp_path / f"{name}.pt"
    torch.jit.script(make().train()).save(str(source))
    out = tmp_path / f"{name}.memopt.pt"
    report = measure.compile_model(
        source, out, [("x", shape)],
        ["--prefer", "memory", "--grad-buffers", "resident"],
        threads=threads)
    assert report["options"]["threads"] == threads
    signature = report["signatures"][0]
    for what, path in (("baseline", source), ("planned", out)):
        predicted = signature[what]["predicted_peak_bytes"]
        measured = measured_peak(path, shape, threads)
        assert abs(predicted / measured - 1) < 0.01, (
            f"{name} on {threads} thread(s), {what}: predicted {predicted} "
            f"bytes, measured {measured}")


def test_wrap_plans_for_the_calling_process(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMOPT_CACHE_DIR", str(tmp_path / "cache"))
    torch.set_num_threads(2)
    x = torch.randn(2, 3, 8, 8)
    model = memopt.wrap(SmallChain(), sample_input=x, prefer="memory")
    model(x).sum().backward()
    report = model._memopt_plan_for_summary().report
    assert report["options"]["threads"] == 2
    # Training on another count gets a plan for it.
    torch.set_num_threads(1)
    model(x).sum().backward()
    report = model._memopt_plan_for_summary().report
    assert report["options"]["threads"] == 1
