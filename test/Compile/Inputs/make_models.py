#!/usr/bin/python3
"""Generates the small TorchScript archives memopt-compile's tests read.

Run with the system Python (PyTorch 1.13+):
    /usr/bin/python3 test/Compile/Inputs/make_models.py
The .pt files are checked in; regenerate them when this file changes.
"""
import pathlib
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent


class Block(nn.Module):
    """conv -> batch norm -> relu, a natural checkpoint region."""

    def __init__(self, channels: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class ChainCNN(nn.Module):
    """A chain of blocks: layers.0 ... layers.3, then a linear head."""

    def __init__(self, channels: int = 8, blocks: int = 4):
        super().__init__()
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.layers = nn.Sequential(*[Block(channels) for _ in range(blocks)])
        self.head = nn.Linear(channels, 10)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(x.mean([2, 3]))


class LIF(nn.Module):
    """Multi-step LIF neuron over x of [T, B, ...]; spikes are 0/1, with a
    sigmoid straight-through surrogate gradient (without one, no gradient
    reaches the layers before it and autograd keeps nothing of them)."""
    steps: torch.jit.Final[int]

    def __init__(self, steps: int = 2):
        super().__init__()
        self.steps = steps

    def forward(self, x):
        v = torch.zeros_like(x[0])
        spikes: List[torch.Tensor] = []
        for t in range(self.steps):
            v = v + (x[t] - v) * 0.5
            soft = torch.sigmoid(4.0 * (v - 1.0))
            spike = (v >= 1.0).to(x.dtype) + (soft - soft.detach())
            v = v * (1.0 - spike)
            spikes.append(spike)
        return torch.stack(spikes)


class SpikingCNN(nn.Module):
    """conv -> LIF -> conv -> LIF -> linear over T=2 steps."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.lif1 = LIF()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.lif2 = LIF()
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        # x: [T, B, 3, H, W]
        t, b = x.shape[0], x.shape[1]
        y = self.conv1(x.flatten(0, 1))
        y = self.lif1(y.view(t, b, 8, y.shape[2], y.shape[3]))
        y = self.conv2(y.flatten(0, 1))
        y = self.lif2(y.view(t, b, 8, y.shape[2], y.shape[3]))
        return self.fc(y.mean([0, 3, 4]))


class TwoInputs(nn.Module):
    """forward(x, y): one signature has two input specs."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, y):
        return self.fc(x) + y


def main():
    torch.manual_seed(0)
    torch.jit.script(ChainCNN()).save(str(HERE / "chain_cnn.pt"))
    torch.jit.script(SpikingCNN()).save(str(HERE / "spiking_cnn.pt"))
    torch.jit.script(TwoInputs()).save(str(HERE / "two_inputs.pt"))
    for path in sorted(HERE.glob("*.pt")):
        print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
