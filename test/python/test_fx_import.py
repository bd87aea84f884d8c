"""FX GraphModules reach memopt through memopt.fx.export_fx (script, or trace
when scripting fails); the saved archive imports like any TorchScript."""
import subprocess

import pytest
import torch
import torch.fx
import torch.nn as nn

import memopt.fx
from conftest import tool_path


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean([2, 3]))


def untraceable_helper(x):
    # *args are fine for FX but TorchScript cannot compile this function.
    return torch.cat([*x.chunk(2, dim=1)], dim=1)


torch.fx.wrap("untraceable_helper")


class NeedsTrace(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return untraceable_helper(self.fc(x))


def import_pt(path, *specs):
    args = [str(tool_path("memopt-translate")), "--import-torchscript", str(path)]
    for spec in specs:
        args += ["--input-shape", spec]
    result = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_scripted_graph_module_imports(tmp_path):
    gm = torch.fx.symbolic_trace(Net())
    path = tmp_path / "fx.pt"
    scripted = memopt.fx.export_fx(gm, torch.randn(2, 3, 8, 8), path)
    assert set(scripted.state_dict()) == set(gm.state_dict())
    ir = import_pt(path, "x:2x3x8x8")
    assert 'memopt.param "conv.weight" : tensor<4x3x3x3xf32>' in ir
    assert 'memopt.buffer "bn.running_mean"' in ir
    assert "-> tensor<2x2xf32>" in ir


def test_trace_fallback_keeps_state_and_imports(tmp_path):
    gm = torch.fx.symbolic_trace(NeedsTrace())
    with pytest.raises(Exception):
        torch.jit.script(gm)
    before = {k: v.clone() for k, v in gm.state_dict().items()}
    path = tmp_path / "fx_traced.pt"
    memopt.fx.export_fx(gm, (torch.randn(3, 4),), path)
    for key, value in gm.state_dict().items():
        assert torch.equal(value, before[key])
    ir = import_pt(path, "x:3x4")
    assert "aten::chunk" in ir or "aten::split" in ir or "aten::slice" in ir
    assert "-> tensor<3x4xf32>" in ir


def test_no_fallback_raises_clear_error(tmp_path):
    gm = torch.fx.symbolic_trace(NeedsTrace())
    with pytest.raises(memopt.fx.FxExportError, match="torch.jit.script failed"):
        memopt.fx.export_fx(gm, (torch.randn(3, 4),), tmp_path / "x.pt",
                            allow_trace=False)
