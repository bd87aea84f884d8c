#!/usr/bin/python3
"""Generates the small TorchScript archives the importer's lit tests read.

Run from anywhere with the system Python (PyTorch 1.13+):
    /usr/bin/python3 test/Conversion/Inputs/make_models.py
The .pt files are checked in; regenerate them when this file changes (the
tests check source lines of this file, so keep the model code where it is or
update the CHECK lines).
"""
import os
import pathlib
from typing import Dict, List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent


class ConvBNReLU(nn.Module):
    """conv -> batch norm -> relu; batch norm reads `training`."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class LIF(nn.Module):
    """Multi-step leaky integrate-and-fire neuron over T time steps."""
    T: torch.jit.Final[int]

    def __init__(self, T: int = 4, tau: float = 2.0):
        super().__init__()
        self.T = T
        self.tau = tau
        self.v_last = torch.zeros(1)  # plain tensor attribute, set in forward

    def forward(self, x_seq):
        v = torch.zeros_like(x_seq[0])
        spikes: List[torch.Tensor] = []
        for t in range(self.T):
            v = v + (x_seq[t] - v) / self.tau
            spike = (v >= 1.0).to(x_seq.dtype)
            v = v * (1.0 - spike)
            spikes.append(spike)
        self.v_last = v
        return torch.stack(spikes)


class SpikingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)
        self.lif = LIF()

    def forward(self, x):
        return self.lif(self.fc(x))


class InplaceView(nn.Module):
    def forward(self, x):
        y = x.view(x.size(0), -1)
        y.add_(1.0)
        z = y[:, 1:3]
        z.mul_(2.0)
        return x.t() + 1.0


class DropoutNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        return self.drop(self.fc(x))


class Block(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.conv(x)) + x


class Nested(nn.Module):
    """A submodule call two levels deep: features.1.conv."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 1), Block(4))
        self.head = nn.Linear(4, 2)
        self.head.bias.requires_grad_(False)

    def forward(self, x):
        x = self.features(x)
        return self.head(x.mean([2, 3]))


class DataDependentIf(nn.Module):
    def forward(self, x):
        if bool(x.sum() > 0):
            return x * 2.0
        return x


class DataDependentLoop(nn.Module):
    """Halves x until its norm is at most 1: how many times is data."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(3, 3)

    def forward(self, x):
        while bool(x.norm() > 1.0):
            x = self.layer(x) * 0.5
        return x


class DataDependentShapes(nn.Module):
    """Branches on data that return tensors of different shapes."""

    def forward(self, x):
        if bool(x.sum() > 0):
            x = x[:, :2]
        return x * 2.0


class AssignInDataBranch(nn.Module):
    """Assigns a module attribute in a branch taken on data."""

    def __init__(self):
        super().__init__()
        self.hits = 0

    def forward(self, x):
        if bool(x.sum() > 0):
            self.hits = self.hits + 1
        return x * 2.0


class GatheredBias(nn.Module):
    """A bias gathered from a parameter table by a buffer of integer indices
    (as Swin's relative position bias is), then control flow on the shape
    of a value computed from it: integer indices select exactly their own
    shape, so the condition is static and folds."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(5, 4))
        self.register_buffer("index", torch.tensor([[0, 2], [4, 1], [3, 3]]))

    def forward(self, x):
        y = x + self.table[self.index]
        if y.shape[0] >= 3:
            y = y * 2.0
        return y


class MaskedIndexIf(nn.Module):
    """Indexing by a boolean mask: how many elements it selects is data."""

    def forward(self, x):
        y = x[x > 0]
        if y.shape[0] > 2:
            return y * 2.0
        return y


class ModeSwitchNeuron(nn.Module):
    """A neuron whose charge rule is picked by a module attribute inside
    the time-step loop, through a method with early returns (as
    SpikingJelly's neuronal_charge is written)."""

    def __init__(self, kind: str = "lif"):
        super().__init__()
        self.kind = kind

    def charge(self, v, x):
        if self.kind == "if":
            return v + x
        return v - v * 0.5 + x

    def forward(self, x_seq):
        v = torch.zeros_like(x_seq[0])
        out: List[torch.Tensor] = []
        for t in range(3):
            v = self.charge(v, x_seq[t])
            out.append(v)
        return torch.stack(out)


class CustomOp(nn.Module):
    def forward(self, x):
        return torch.ops.memopt_test.scale(x)


def save_custom_op_model(path: pathlib.Path):
    """Registers memopt_test::scale only while scripting and saving, so that
    loading the archive elsewhere finds no schema for it."""
    lib = torch.library.Library("memopt_test", "DEF")
    lib.define("scale(Tensor x) -> Tensor")
    lib.impl("scale", lambda x: x * 2.0, "CPU")
    torch.jit.script(CustomOp()).save(str(path))


class DictTaps(nn.Module):
    """Stage outputs tapped into a dict under names a module attribute
    gives (as torchvision's IntermediateLayerGetter does), then a result
    dict filled by item assignment (as its segmentation models do)."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleDict(
            {name: nn.Linear(4, 4) for name in ("a", "b", "c")})
        self.taps: Dict[str, str] = {"a": "low", "c": "high"}

    def forward(self, x):
        feats: Dict[str, torch.Tensor] = {}
        for name, stage in self.stages.items():
            x = stage(x).relu()
            if name in self.taps:
                feats[self.taps[name]] = x
        result: Dict[str, torch.Tensor] = {}
        result["out"] = feats["high"] * 2.0
        result["aux"] = feats["low"] + 1.0
        return result


class UncheckableAttribute(nn.Module):
    """Control flow on an attribute whose value a compiled forward could
    not compare (TorchScript has no `!=` of such dicts)."""

    def __init__(self):
        super().__init__()
        self.cfg: Dict[str, List[int]] = {"scale": [2]}

    def forward(self, x):
        if "scale" in self.cfg:
            return x * 2.0
        return x


class DefaultedInputs(nn.Module):
    """Trailing inputs with defaults: an optional mask and a step count."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x, mask: Optional[torch.Tensor] = None,
                steps: int = 2):
        for _ in range(steps):
            x = torch.tanh(self.layer(x))
        if mask is not None:
            x = x * mask
        return x


class AssignedAttribute(nn.Module):
    """Forward keeps its intermediate results in a module attribute and
    loops over it (as RAFT keeps its correlation pyramid)."""

    levels: List[torch.Tensor]

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)
        self.levels = []

    def forward(self, x):
        levels: List[torch.Tensor] = [x]
        for _ in range(2):
            levels.append(torch.tanh(self.layer(levels[-1])))
        self.levels = levels
        out = torch.zeros_like(x)
        for level in self.levels:
            out = out + level
        return out



class NoGradTeacher(nn.Module):
    """A teacher layer run under torch.no_grad() beside a trained one."""

    def __init__(self):
        super().__init__()
        self.student = nn.Linear(3, 3)
        self.teacher = nn.Linear(3, 3)

    def forward(self, x):
        with torch.no_grad():
            target = self.teacher(x)
        return self.student(x) - target

def main():
    torch.manual_seed(0)
    torch.jit.script(ConvBNReLU()).save(str(HERE / "conv_bn.pt"))
    torch.jit.script(SpikingNet()).save(str(HERE / "lif.pt"))
    torch.jit.script(InplaceView()).save(str(HERE / "inplace_view.pt"))
    torch.jit.script(DropoutNet()).save(str(HERE / "dropout.pt"))
    torch.jit.script(Nested()).save(str(HERE / "nested.pt"))
    torch.jit.script(DataDependentIf()).save(str(HERE / "data_dependent_if.pt"))
    torch.jit.script(ModeSwitchNeuron()).save(str(HERE / "mode_switch.pt"))
    torch.jit.script(GatheredBias()).save(str(HERE / "gathered_bias.pt"))
    torch.jit.script(MaskedIndexIf()).save(str(HERE / "masked_index_if.pt"))
    torch.jit.script(DataDependentLoop()).save(
        str(HERE / "data_dependent_loop.pt"))
    torch.jit.script(DataDependentShapes()).save(
        str(HERE / "data_dependent_shapes.pt"))
    torch.jit.script(AssignInDataBranch()).save(
        str(HERE / "assign_in_data_branch.pt"))
    traced = torch.jit.trace(Nested().eval(), torch.randn(1, 3, 4, 4))
    traced.save(str(HERE / "traced.pt"))
    save_custom_op_model(HERE / "custom_op.pt")
    torch.jit.script(DictTaps()).save(str(HERE / "dict_taps.pt"))
    torch.jit.script(UncheckableAttribute()).save(
        str(HERE / "uncheckable_attribute.pt"))
    torch.jit.script(DefaultedInputs()).save(str(HERE / "defaulted_inputs.pt"))
    torch.jit.script(AssignedAttribute()).save(
        str(HERE / "assigned_attribute.pt"))
    torch.jit.script(NoGradTeacher()).save(str(HERE / "no_grad.pt"))
    # A zip archive that torch.save wrote: valid zip, not TorchScript.
    torch.save(ConvBNReLU().state_dict(), str(HERE / "state_dict.pt"))
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".pt"):
            print(f"{name}: {os.path.getsize(HERE / name)} bytes")


if __name__ == "__main__":
    main()
