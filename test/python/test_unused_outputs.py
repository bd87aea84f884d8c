"""An output of a checkpoint region that the loss does not use (an auxiliary
head, as torchvision's GoogLeNet and Inception have) gets no gradient: the
parameters that only it depends on keep `.grad` None, as in eager, instead
of zeros (which an optimizer would not skip). bench/coverage.py found it on
googlenet --prefer memory."""
import subprocess

import pytest
import torch
import torch.nn as nn

from conftest import tool_path

torch._C._set_graph_executor_optimize(False)


class AuxHeadNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, 4, 1)
        self.aux = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(8, 4, 1))

    def forward(self, x):
        y = self.body(x)
        return self.head(y), self.aux(y)


@pytest.mark.parametrize("checkpoint", ["aux", "body,aux", "body,head,aux"])
def test_unused_region_output_leaves_grad_none(runtime, tmp_path, checkpoint):
    torch.manual_seed(0)
    eager = AuxHeadNet()
    torch.jit.script(eager).save(str(tmp_path / "m.pt"))
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(tmp_path / "m.pt"),
         "-o", str(tmp_path / "c.pt"), "--input-shape", "x:2x3x8x8",
         "--checkpoint", checkpoint, "--prefer", "speed"],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    compiled = torch.jit.load(str(tmp_path / "c.pt"))
    assert "memopt::checkpoint" in str(compiled.graph) or any(
        "memopt::checkpoint" in str(m.graph) for m in compiled.modules()
        if hasattr(m, "graph")), "no region was made"
    x = torch.randn(2, 3, 8, 8)
    for model in (eager, compiled):
        model.train()
        main, _ = model(x)
        main.sum().backward()
    grads = {n: p.grad for n, p in eager.named_parameters()}
    for name, p in compiled.named_parameters():
        if grads[name] is None:
            assert p.grad is None, f"{name}: zeros instead of None"
        else:
            assert p.grad is not None and torch.equal(p.grad, grads[name]), name
    assert grads["aux.0.weight"] is None  # what the test is about
