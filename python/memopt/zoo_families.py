"""Model families written here the way users write them (issue 20): a
GPT-2-style decoder, GRU and LSTM language models, a U-Net, the
SpikingJelly neuron family, and models with control flow on tensor data
(a guarded rescale, a refinement loop that stops early). Every entry returns `(model, inputs)` as
memopt.zoo's do; token inputs are `(name, shape, "tokens:<vocab>")`
(int64), event frames `(name, shape, "events")` (0/1 floats). All models
script with torch.jit.script on PyTorch 1.13 and 2.x.
"""
import math
from typing import List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

Inputs = List[tuple]


# ---------------------------------------------------------------------------
# GPT-2-style decoder
# ---------------------------------------------------------------------------

def split_heads(qkv: torch.Tensor,
                heads: int) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[B, T, 3C] -> three [B, heads, T, C / heads]."""
    b, t, c = qkv.shape[0], qkv.shape[1], qkv.shape[2] // 3
    q, k, v = qkv.split(c, dim=2)
    return (q.view(b, t, heads, c // heads).transpose(1, 2),
            k.view(b, t, heads, c // heads).transpose(1, 2),
            v.view(b, t, heads, c // heads).transpose(1, 2))


class MaskedSelfAttention(nn.Module):
    """Causal attention with the mask applied by masked_fill(-inf), as
    nanoGPT writes it without a fused kernel."""

    def __init__(self, dim: int, heads: int, seq: int, dropout: float):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.heads = heads
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq))
                             .view(1, 1, seq, seq))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        q, k, v = split_heads(self.qkv(x), self.heads)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = self.attn_drop(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.proj(y))


class FusedSelfAttention(nn.Module):
    """Causal attention through scaled_dot_product_attention (PyTorch 2.x)."""

    def __init__(self, dim: int, heads: int, seq: int, dropout: float):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.resid_drop = nn.Dropout(dropout)
        self.heads = heads
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        q, k, v = split_heads(self.qkv(x), self.heads)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p,
                                           is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_drop(self.proj(y))


class DecoderBlock(nn.Module):
    def __init__(self, attention: nn.Module, dim: int, dropout: float):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = attention
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fc_out = nn.Linear(4 * dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.drop(self.fc_out(F.gelu(self.fc(self.ln2(x)))))


class GPTDecoder(nn.Module):
    """Token and position embeddings, pre-LayerNorm blocks, a final
    LayerNorm and an LM head tied to the token embedding."""

    def __init__(self, vocab: int, seq: int, dim: int, heads: int,
                 layers: int, dropout: float, attention: str):
        super().__init__()
        kinds = {"mask": MaskedSelfAttention, "sdpa": FusedSelfAttention}
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            DecoderBlock(kinds[attention](dim, heads, seq, dropout), dim,
                         dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def gpt_decoder(batch: int = 2, seq: int = 64, vocab: int = 512,
                dim: int = 128, heads: int = 4, layers: int = 4,
                dropout: float = 0.1, attention: str = "mask"):
    """`attention`: "mask" (masked_fill) or "sdpa" (PyTorch 2.x only)."""
    if attention == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
        raise RuntimeError("scaled_dot_product_attention needs PyTorch 2.x")
    model = GPTDecoder(vocab, seq, dim, heads, layers, dropout, attention)
    return model.train(), [("idx", (batch, seq), f"tokens:{vocab}")]


# ---------------------------------------------------------------------------
# Recurrent language models
# ---------------------------------------------------------------------------

class RecurrentLM(nn.Module):
    def __init__(self, cell: str, vocab: int, dim: int, hidden: int,
                 layers: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        self.rnn = rnn(dim, hidden, num_layers=layers, dropout=dropout,
                       batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnn(self.drop(self.embed(idx)))
        return self.head(self.drop(y))


def rnn_lm(cell: str = "lstm", batch: int = 4, seq: int = 32,
           vocab: int = 512, dim: int = 128, hidden: int = 256,
           layers: int = 2, dropout: float = 0.2):
    model = RecurrentLM(cell, vocab, dim, hidden, layers, dropout)
    return model.train(), [("idx", (batch, seq), f"tokens:{vocab}")]


# ---------------------------------------------------------------------------
# U-Net
# ---------------------------------------------------------------------------

class DoubleConv(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_out), nn.ReLU(inplace=True),
            nn.Conv2d(c_out, c_out, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class UNet(nn.Module):
    """Encoder of DoubleConv + max-pool, decoder of ConvTranspose2d and
    DoubleConv over the upsampled map concatenated with the skip."""

    def __init__(self, in_channels: int, classes: int, width: int,
                 depth: int):
        super().__init__()
        widths = [width << i for i in range(depth + 1)]
        self.down = nn.ModuleList()
        c = in_channels
        for w in widths[:-1]:
            self.down.append(DoubleConv(c, w))
            c = w
        self.bottom = DoubleConv(widths[-2], widths[-1])
        self.up = nn.ModuleList()
        self.dec = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose2d(2 * w, w, 2, stride=2))
            self.dec.append(DoubleConv(2 * w, w))
        self.out = nn.Conv2d(widths[0], classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips: List[torch.Tensor] = []
        for down in self.down:
            x = down(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        i = len(skips) - 1
        for up, dec in zip(self.up, self.dec):
            x = dec(torch.cat([skips[i], up(x)], dim=1))
            i -= 1
        return self.out(x)


def unet(batch: int = 2, image: int = 64, in_channels: int = 3,
         classes: int = 4, width: int = 16, depth: int = 3):
    model = UNet(in_channels, classes, width, depth)
    return model.train(), [("x", (batch, in_channels, image, image))]


# ---------------------------------------------------------------------------
# SpikingJelly neuron family
# ---------------------------------------------------------------------------

class SpikingNeuron(nn.Module):
    """A multi-step IF, LIF or parametric-LIF neuron over [T, B, ...],
    written as SpikingJelly computes it (`neuronal_charge`, `neuronal_fire`
    with a straight-through surrogate, `neuronal_reset`):

    - charge: IF h = v + x; LIF with decay_input h = v + (x - v) / tau, without
      h = v - v / tau + x; parametric LIF the same with 1 / tau = sigmoid(w),
      w learnable;
    - fire: s = heaviside(h - v_th) forward, the surrogate's gradient
      backward (ATan: atan(pi/2 * alpha * u) / pi + 1/2; Sigmoid:
      sigmoid(alpha * u));
    - reset (with `s.detach()` when detach_reset): hard v = h * (1 - s),
      soft v = h - s * v_th.
    """

    def __init__(self, steps: int, kind: str, surrogate: str, reset: str,
                 detach_reset: bool, decay_input: bool, tau: float = 2.0,
                 v_th: float = 1.0):
        super().__init__()
        if kind not in ("if", "lif", "plif") or \
                surrogate not in ("atan", "sigmoid") or \
                reset not in ("hard", "soft"):
            raise ValueError(f"unknown neuron {kind}/{surrogate}/{reset}")
        self.steps = steps
        self.kind = kind
        self.atan = surrogate == "atan"
        self.alpha = 2.0 if self.atan else 4.0
        self.hard = reset == "hard"
        self.detach_reset = detach_reset
        self.decay_input = decay_input
        self.v_th = v_th
        self.inv_tau = 1.0 / tau
        init = -math.log(tau - 1.0)  # sigmoid(w) = 1 / tau
        self.w = nn.Parameter(torch.tensor(init)) if kind == "plif" else None

    def charge(self, v: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "if":
            return v + x
        w = self.w
        if w is not None:
            k = torch.sigmoid(w)
            if self.decay_input:
                return v + (x - v) * k
            return v - v * k + x
        if self.decay_input:
            return v + (x - v) * self.inv_tau
        return v - v * self.inv_tau + x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = torch.zeros_like(x[0])
        spikes: List[torch.Tensor] = []
        for t in range(self.steps):
            h = self.charge(v, x[t])
            u = h - self.v_th
            if self.atan:
                sg = torch.atan((math.pi / 2) * self.alpha * u) / math.pi + 0.5
            else:
                sg = torch.sigmoid(self.alpha * u)
            spike = (u >= 0).to(x.dtype) + (sg - sg.detach())
            s = spike.detach() if self.detach_reset else spike
            if self.hard:
                v = h * (1.0 - s)
            else:
                v = h - s * self.v_th
            spikes.append(spike)
        return torch.stack(spikes)


def spiking_family(neuron: str = "lif", surrogate: str = "atan",
                   reset: str = "hard", detach_reset: bool = True,
                   decay_input: bool = True, steps: int = 4, batch: int = 2,
                   size: int = 32, in_channels: int = 2,
                   channels: Tuple[int, ...] = (16, 32, 32, 64),
                   classes: int = 10):
    """conv3x3-BatchNorm-neuron blocks (memopt.zoo.SpikingVGG) on event
    frames [T, B, C, H, W], max-pool after every second block."""
    from memopt.zoo import SpikingVGG
    pool_after = [i for i in range(len(channels)) if i % 2 == 1]
    model = SpikingVGG(steps, in_channels, list(channels), pool_after,
                       classes, neuron=lambda t: SpikingNeuron(
                           t, neuron, surrogate, reset, detach_reset,
                           decay_input))
    return model.train(), [("x", (steps, batch, in_channels, size, size),
                            "events")]


# ---------------------------------------------------------------------------
# Control flow on tensor data
# ---------------------------------------------------------------------------

class GatedMLP(nn.Module):
    """An MLP that rescales its activations halfway only when they grew
    large (`if h.abs().max() > limit`), as models that guard against
    overflow do: an `if` on tensor data."""

    def __init__(self, dim: int, depth: int, classes: int, limit: float):
        super().__init__()
        self.stem = nn.Linear(dim, dim)
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))
        self.scale = nn.Parameter(torch.full((dim,), 0.5))
        self.head = nn.Linear(dim, classes)
        self.limit = limit
        self.gate_at = depth // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.stem(x))
        for i, layer in enumerate(self.layers):
            h = torch.relu(layer(h))
            if i == self.gate_at:
                peak = h.abs().max()
                if peak > self.limit:
                    h = torch.tanh(h / peak * self.scale) * h
        return self.head(h)


def gated_mlp(batch: int = 256, dim: int = 512, depth: int = 8,
              classes: int = 10, limit: float = 0.05):
    return GatedMLP(dim, depth, classes, limit).train(), \
        [("x", (batch, dim))]


class Refiner(nn.Module):
    """Refines its state for up to `steps` iterations and stops early once
    the update is small (`for ...: ... if delta < tol: break`), as
    iterative-refinement and early-exit models do: a loop whose number of
    iterations is data."""

    def __init__(self, dim: int, steps: int, classes: int, tol: float):
        super().__init__()
        self.embed = nn.Linear(dim, dim)
        self.update = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)
        self.steps = steps
        self.tol = tol

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.embed(x))
        for _ in range(self.steps):
            delta = torch.tanh(self.update(h)) * 0.5
            h = h + delta
            if bool(delta.abs().mean() < self.tol):
                break
        return self.head(h)


def refiner(batch: int = 128, dim: int = 256, steps: int = 6,
            classes: int = 10, tol: float = 1e-3):
    return Refiner(dim, steps, classes, tol).train(), [("x", (batch, dim))]
