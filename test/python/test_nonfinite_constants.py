"""Constants the IR parser cannot read, inside checkpoint regions (issue 20).

A causal mask applied with `masked_fill(mask == 0, float('-inf'))` (GPT-style
decoders) put `prim::Constant[value=-inf]` into a region's IR text, which
the runtime's IR parser cannot read: the compiled module failed on its first
call. The exporter now writes non-finite floats as float("inf") / "-inf" /
"nan". These tests force the masked attention into a checkpoint region and
train the compiled module against eager, bit for bit.
"""
import math
from typing import Tuple
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import REPO

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402


class MaskedAttention(nn.Module):
    """One causal attention head, masked GPT-style with a literal -inf."""

    def __init__(self, dim: int):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])

    def mask(self, x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        causal = torch.tril(torch.ones(x.shape[1], x.shape[1]))
        # A bound that changes nothing, as a float("inf") literal too.
        return scores.masked_fill(causal == 0, float("-inf")).clamp(
            max=float("inf"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = self.mask(x, self.scores(q, k))
        return self.out(F.softmax(scores, dim=-1) @ v)


class NanMaskedAttention(MaskedAttention):
    """The same with a literal nan fill (NaN rows, in eager as compiled)."""

    def mask(self, x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        causal = torch.tril(torch.ones(x.shape[1], x.shape[1]))
        return scores.masked_fill(causal == 0, float("nan"))


class Decoder(nn.Module):
    def __init__(self, attention=MaskedAttention, dim: int = 16):
        super().__init__()
        self.attn = attention(dim)
        self.head = nn.Linear(dim, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.attn(x) + x))


def compile_with_attention_in_a_region(tmp_path, attention):
    """The seeded decoder and its compile with `attn` forced into a region."""
    torch.manual_seed(0)
    model = Decoder(attention).train()
    source = tmp_path / "decoder.pt"
    torch.jit.script(model).save(str(source))
    out = tmp_path / "decoder.memopt.pt"
    report = measure.compile_model(source, out, ["x:2x8x16"],
                                   ["--checkpoint", "attn"])
    regions = report.get("regions") or report["signatures"][0]["regions"]
    assert any(r["label"].startswith("attn") for r in regions), regions
    return model, torch.jit.load(str(out))


def test_region_with_nonfinite_constants_trains_like_eager(tmp_path, runtime):
    model, compiled = compile_with_attention_in_a_region(tmp_path,
                                                         MaskedAttention)
    x = torch.randn(2, 8, 16)
    result = measure.compare_with_eager(model, compiled, [x], steps=2)
    assert result["bitwise"], result
    assert not result["problems"], result["problems"]


def test_nan_constant_survives_the_region(tmp_path, runtime):
    """nan as a fill value: the compiled output has NaN where eager's has."""
    model, compiled = compile_with_attention_in_a_region(tmp_path,
                                                         NanMaskedAttention)
    x = torch.randn(2, 8, 16)
    expected, actual = model(x), compiled(x)
    assert torch.equal(torch.isnan(expected), torch.isnan(actual))
    assert torch.isnan(actual).any()


class WindowPartition(nn.Module):
    """Splits a feature map into windows whose size is a tuple attribute
    (as MaxViT's partitions are): the region's IR holds a tuple constant,
    which the runtime's IR parser cannot read as a literal."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.window: Tuple[int, int] = (2, 2)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        p = self.window
        x = x.view(b, c, h // p[0], p[0], w // p[1], p[1])
        x = x.permute(0, 2, 4, 3, 5, 1).reshape(-1, p[0] * p[1], c)
        return torch.relu(self.proj(x))


class WindowNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.windows = WindowPartition()
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.windows(self.stem(x)))


def test_region_with_tuple_constant_trains_like_eager(tmp_path, runtime):
    torch.manual_seed(0)
    model = WindowNet().train()
    source = tmp_path / "windows.pt"
    torch.jit.script(model).save(str(source))
    out = tmp_path / "windows.memopt.pt"
    report = measure.compile_model(source, out, ["x:2x3x8x8"],
                                   ["--checkpoint", "windows"])
    regions = report["signatures"][0]["regions"]
    assert any("windows" in r["module_paths"] for r in regions), regions
    compiled = torch.jit.load(str(out))
    x = torch.randn(2, 3, 8, 8)
    result = measure.compare_with_eager(model, compiled, [x], steps=2)
    assert result["bitwise"], result
    assert not result["problems"], result["problems"]
