"""Small models whose training memory depends on one autograd mechanism,
for test_prediction_mechanisms.py. Run as a script in a fresh process
(graph-executor optimization off, one thread) to measure one:

    prediction_models.py <model> [<compiled.pt>]

prints JSON {"eager": peak bytes, "compiled": peak bytes, "bitwise": bool}
(the last two with a compiled module: its measured peak and whether two SGD
steps of it match eager's bit for bit).
"""
import json
import math
import sys

from typing import Dict

import torch
import torch.nn as nn
import torch.nn.functional as F

from memopt.zoo_families import DecoderBlock, FusedSelfAttention, split_heads


class TiedLM(nn.Module):
    """Token embedding, two MLP layers, an LM head tied to the embedding:
    autograd holds the head's weight gradient until the embedding's arrives
    and adds the two out of place."""

    def __init__(self, vocab: int = 512, dim: int = 128):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.wte(idx)
        x = x + self.fc2(torch.tanh(self.fc1(x)))
        return self.head(x)


class HeadAttention(nn.Module):
    """Multi-head attention without a fused kernel: the 4-d matmuls copy
    operands whose two batch dims do not fold into one (q and k^T, v)."""

    def __init__(self, dim: int = 128, heads: int = 4):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        q, k, v = split_heads(self.qkv(x), self.heads)
        h = self.heads
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(c // h), -1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


def conv_block(cin: int, cout: int, stride: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
        nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class TapBackbone(nn.Module):
    """Named stages whose outputs are tapped into a dict under names a
    module attribute gives, as torchvision's IntermediateLayerGetter does."""

    def __init__(self, taps: Dict[str, str]):
        super().__init__()
        self.stages = nn.ModuleDict({
            f"s{i}": conv_block(3 if i == 0 else 16, 16, 2 if i == 3 else 1)
            for i in range(6)})
        self.taps = taps

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        out: Dict[str, torch.Tensor] = {}
        for name, stage in self.stages.items():
            x = stage(x)
            if name in self.taps:
                out[self.taps[name]] = x
        return out


class DictSegmenter(nn.Module):
    """A segmentation net as torchvision writes them: the backbone's taps
    through a main and an auxiliary head, each resampled to the input size,
    returned in a dict filled by item assignment."""

    def __init__(self):
        super().__init__()
        self.backbone = TapBackbone({"s2": "aux", "s5": "out"})
        self.head = nn.Conv2d(16, 5, 1)
        self.aux = nn.Conv2d(16, 5, 1)

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        size = x.shape[-2:]
        features = self.backbone(x)
        result: Dict[str, torch.Tensor] = {}
        result["out"] = F.interpolate(self.head(features["out"]), size=size,
                                      mode="bilinear", align_corners=False)
        result["aux"] = F.interpolate(self.aux(features["aux"]), size=size,
                                      mode="nearest")
        return result


class GatedMLP(nn.Module):
    """An MLP with a rescaling step taken only when the activations grew
    large: an `if` on tensor data, kept whole, whose taken branch keeps more
    for backward than its input and result (the scale, the rescaled and
    squashed tensors)."""

    def __init__(self, dim: int = 256, depth: int = 4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))
        self.scale = nn.Parameter(torch.full((dim,), 0.5))
        self.head = nn.Linear(dim, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = torch.relu(layer(x))
            if i == 1:
                if x.abs().max() > 0.5:
                    x = torch.tanh(x / x.abs().max() * self.scale) * x
                else:
                    x = x * 2.0
        return self.head(x)


class HalvesGate(nn.Module):
    """A branch on data that splits its input in halves by its width: an
    int the IR computes from the static shape (`h.size(1) // 2`), which the
    kept op reads as an operand."""

    def __init__(self, dim: int = 256):
        super().__init__()
        self.inner = nn.Linear(dim, dim)
        self.outer = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inner(x))
        n = h.size(1) // 2
        if h.mean() > 0:
            y = torch.tanh(h[:, :n]) * h[:, n:]
            h = torch.cat([y, y * 2.0], 1)
        return self.outer(h)


class FusedAttention(nn.Module):
    """Causal attention through scaled_dot_product_attention (PyTorch 2.x),
    dropout `p` a module attribute: on CPU p > 0 runs the math
    decomposition, p = 0 the flash kernel with its per-thread buffers."""

    def __init__(self, p: float, dim: int = 128, heads: int = 4):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.heads = heads
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape[0], x.shape[1], x.shape[2]
        q, k, v = split_heads(self.qkv(x), self.heads)
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.p if self.training else 0.0,
            is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))


MODELS = {
    "gated_mlp": (GatedMLP, [("x", (128, 256))]),
    "halves_gate": (HalvesGate, [("x", (128, 256))]),
    "tied_lm": (TiedLM, [("idx", (2, 64), "tokens:512")]),
    "head_attention": (HeadAttention, [("x", (2, 64, 128))]),
    "fused_attention": (lambda: FusedAttention(0.1), [("x", (2, 64, 128))]),
    "fused_attention_no_dropout": (lambda: FusedAttention(0.0),
                                   [("x", (2, 64, 128))]),
    # The flash kernel's output, transposed back and made contiguous: no copy.
    "fused_attention_block": (
        lambda: DecoderBlock(FusedSelfAttention(128, 4, 64, 0.0), 128, 0.0),
        [("x", (2, 64, 128))]),
    "dict_segmenter": (DictSegmenter, [("x", (2, 3, 48, 48))]),
}


def build(name: str, seed: int = 0):
    torch.manual_seed(seed)
    make, specs = MODELS[name]
    return make().train(), specs


def main(argv) -> int:
    torch._C._set_graph_executor_optimize(False)
    torch.set_num_threads(1)
    from memopt import measure
    stats = measure.load_runtime()
    model, specs = build(argv[0])
    inputs = measure.make_inputs(specs)
    result = {"eager": measure.measure_training_step(
        model, inputs, stats=stats, set_to_none=False).peak_bytes}
    if len(argv) > 1:
        reference, _ = build(argv[0])
        module = torch.jit.load(argv[1])
        module.train()
        cmp = measure.compare_with_eager(reference, module, inputs,
                                         stats=stats, set_to_none=False)
        result["bitwise"] = cmp["bitwise"]
        result["compiled"] = measure.measure_training_step(
            module, inputs, stats=stats, set_to_none=False).peak_bytes
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
