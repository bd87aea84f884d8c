"""Models written the way users write them, each through `memopt.wrap`
with `prefer="memory"` and trained two SGD steps beside eager: outputs,
every parameter gradient and every buffer bit for bit equal (issue 20:
models no one here wrote). Each stands for a class of construct: group
and instance-free normalizations, pixel shuffle, token-mixing MLPs, 1-D
and 3-D convolutions, depthwise convolutions with squeeze-excitation and a
channel shuffle, a pre-norm TransformerEncoder, nearest upsampling with
skip concatenation, gated causal convolutions, MultiheadAttention with a
float mask buffer, one Linear applied three times, stochastic depth drawn
with torch.rand and in-place residual adds, an LSTMCell stepped in a
scripted loop, ModuleDict and ParameterList iteration with a second
detached output, and a buffer counted up in forward.

Written for this test; all bitwise on PyTorch 1.13 and 2.6.
"""
import os
import pathlib
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(HERE.parents[1] / "build"))
import memopt  # noqa: E402

class SuperResolution(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(3, 32, 3, padding=1)
        self.body = nn.Sequential(*[nn.Sequential(
            nn.GroupNorm(8, 32), nn.SiLU(), nn.Conv2d(32, 32, 3, padding=1))
            for _ in range(4)])
        self.up = nn.Sequential(nn.Conv2d(32, 12, 3, padding=1),
                                nn.PixelShuffle(2))

    def forward(self, x):
        h = self.head(x)
        return self.up(h + self.body(h))


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.n1 = nn.LayerNorm(dim)
        self.n2 = nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(),
                                 nn.Linear(2 * tokens, tokens))
        self.ch = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 64, 8, stride=8)
        self.blocks = nn.Sequential(*[MixerBlock(16, 64) for _ in range(4)])
        self.norm = nn.LayerNorm(64)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        return self.fc(self.norm(self.blocks(h)).mean(1))


class Audio1d(nn.Module):
    def __init__(self):
        super().__init__()
        layers, c = [], 1
        for w in (16, 32, 64):
            layers += [nn.Conv1d(c, w, 9, padding=4), nn.BatchNorm1d(w),
                       nn.ReLU(), nn.MaxPool1d(4)]
            c = w
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.pool(self.features(x)).flatten(1))


class SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a = nn.Conv2d(c, c // 4, 1)
        self.b = nn.Conv2d(c // 4, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.b(F.relu(self.a(s))))


class ShuffleSE(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, stride=2, padding=1)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.pw = nn.Conv2d(32, 32, 1, groups=4)
        self.se = SqueezeExcite(32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        h = F.hardswish(self.dw(F.hardswish(self.stem(x))))
        b, c, hh, ww = h.shape
        h = h.view(b, 4, c // 4, hh, ww).transpose(1, 2).reshape(b, c, hh, ww)
        return self.fc(self.se(self.pw(h)).mean((2, 3)))


class PreNormTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1,
                                           activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 3)
        self.emb = nn.Embedding(100, 64)
        self.fc = nn.Linear(64, 100)

    def forward(self, idx):
        return self.fc(self.enc(self.emb(idx)))


class SkipUpsample(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1),
                                nn.BatchNorm2d(16), nn.ELU())
        self.e2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1),
                                nn.BatchNorm2d(32), nn.ELU(), nn.Dropout2d(0.1))
        self.d1 = nn.Sequential(nn.Conv2d(48, 16, 3, padding=1), nn.ReLU6())
        self.out = nn.Conv2d(16, 2, 1)

    def forward(self, x):
        a = self.e1(x)
        u = F.interpolate(self.e2(a), scale_factor=2.0, mode="nearest")
        return self.out(self.d1(torch.cat([a, u], dim=1)))


class GatedConvLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(200, 32)
        self.convs = nn.ModuleList([nn.Conv1d(32, 64, 3) for _ in range(3)])
        self.fc = nn.Linear(32, 200)

    def forward(self, idx):
        h = self.emb(idx).transpose(1, 2)
        for conv in self.convs:
            a, b = conv(F.pad(h, (2, 0))).chunk(2, dim=1)
            h = h + a * torch.sigmoid(b)
        return F.log_softmax(self.fc(h.transpose(1, 2)), dim=-1)


class MaskedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 32)
        self.att = nn.MultiheadAttention(32, 4, batch_first=True)
        self.ln = nn.LayerNorm(32)
        self.register_buffer(
            "mask", torch.triu(torch.full((16, 16), float("-inf")), 1))
        self.fc = nn.Linear(32, 50)

    def forward(self, idx):
        h = self.emb(idx)
        a, _ = self.att(h, h, h, attn_mask=self.mask, need_weights=False)
        return self.fc(self.ln(h + a))


class Volume(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(
            nn.Conv3d(1, 8, 3, padding=1), nn.BatchNorm3d(8), nn.Softplus(),
            nn.AvgPool3d(2), nn.Conv3d(8, 16, 3, padding=1), nn.Tanh(),
            nn.AdaptiveMaxPool3d(1), nn.Flatten(), nn.Linear(16, 4))

    def forward(self, x):
        return self.f(x)


class SharedLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(64, 128)
        self.shared = nn.Linear(128, 128)
        self.out = nn.Linear(128, 10)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for _ in range(3):
            h = torch.relu(self.shared(h)) + h
        return self.out(h)


class DropPathBlock(nn.Module):
    def __init__(self, d: int, p: float):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.gamma = nn.Parameter(torch.full((d,), 0.1))
        self.p = p

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(x))) * self.gamma
        if self.training and self.p > 0:
            keep = (torch.rand(x.shape[0], 1) >= self.p).to(x.dtype)
            h = h * keep / (1 - self.p)
        out = x.clone()
        out += h
        return out.relu_()


class DropPath(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(*[DropPathBlock(64, 0.2) for _ in range(4)])
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.blocks(x))


class CellLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(16, 32)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        h = torch.zeros(x.size(0), 32)
        c = torch.zeros(x.size(0), 32)
        outs = []
        for t in range(x.size(1)):
            h, c = self.cell(x[:, t], (h, c))
            outs.append(h)
        return self.fc(torch.stack(outs, 1))


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.branches = nn.ModuleDict({"a": nn.Linear(16, 16),
                                       "b": nn.Linear(16, 16)})
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(16)),
                                        nn.Parameter(torch.ones(16) * 2)])
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        h = x
        for layer in self.branches.values():
            h = torch.relu(layer(h))
        i = 0
        for s in self.scales:
            h = h * s + i
            i += 1
        return self.fc(h), h.detach().mean()


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 4)

    def forward(self, x):
        if self.training:
            self.seen += x.size(0)
        return self.fc2(F.silu(self.fc1(x)))


MODELS = {
    "super_resolution": (SuperResolution, lambda: torch.randn(2, 3, 32, 32)),
    "mixer": (Mixer, lambda: torch.randn(4, 3, 32, 32)),
    "audio1d": (Audio1d, lambda: torch.randn(4, 1, 4096)),
    "shuffle_se": (ShuffleSE, lambda: torch.randn(4, 3, 32, 32)),
    "prenorm_transformer": (PreNormTransformer,
                            lambda: torch.randint(0, 100, (4, 32))),
    "skip_upsample": (SkipUpsample, lambda: torch.randn(2, 3, 32, 32)),
    "gated_conv_lm": (GatedConvLM, lambda: torch.randint(0, 200, (4, 64))),
    "masked_attention": (MaskedAttention,
                         lambda: torch.randint(0, 50, (4, 16))),
    "volume": (Volume, lambda: torch.randn(2, 1, 16, 16, 16)),
    "shared_layer": (SharedLayer, lambda: torch.randn(32, 64)),
    "drop_path": (DropPath, lambda: torch.randn(16, 64)),
    "cell_loop": (CellLoop, lambda: torch.randn(4, 10, 16)),
    "containers": (Containers, lambda: torch.randn(8, 16)),
    "counter": (Counter, lambda: torch.randn(8, 32)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_user_model_trains_like_eager(name, tmp_path):
    cls, sample = MODELS[name]
    torch.manual_seed(0)
    eager = cls().train()
    torch.manual_seed(0)
    model = cls().train()
    x = sample()
    wrapped = memopt.wrap(model, x, prefer="memory", cache_dir=tmp_path,
                          verbose=False)
    for step in range(2):
        outputs = []
        for module in (eager, wrapped):
            torch.manual_seed(100 + step)  # same dropout and torch.rand
            out = module(x)
            first = out[0] if isinstance(out, tuple) else out
            first.float().pow(2).mean().backward()
            outputs.append(out)
        assert torch.equal(outputs[0][0] if isinstance(outputs[0], tuple)
                           else outputs[0],
                           outputs[1][0] if isinstance(outputs[1], tuple)
                           else outputs[1]), f"step {step}"
        for (n, p), (_, q) in zip(eager.named_parameters(),
                                  model.named_parameters()):
            assert (p.grad is None) == (q.grad is None), n
            if p.grad is not None:
                assert torch.equal(p.grad, q.grad), f"{n} step {step}"
        with torch.no_grad():
            for m in (eager, model):
                for p in m.parameters():
                    if p.grad is not None:
                        p -= 0.1 * p.grad
                        p.grad.zero_()
    for (n, a), (_, b) in zip(eager.named_buffers(), model.named_buffers()):
        assert torch.equal(a, b), n
