"""A fourth batch of models written the way users write them (issue 20),
each through `memopt.wrap(prefer="memory")` and trained two SGD steps
beside eager, bit for bit (conftest.train_beside_eager). Each stands for
a construct the earlier batches do not have: a Conformer block (a
half-step feed-forward, MultiheadAttention, a GLU over a pointwise
Conv1d, a depthwise Conv1d with BatchNorm1d), writes into a slice of an
activation and an in-place add on it, a straight-through Gumbel-softmax
with an argmax-indexed embedding, a bfloat16 round trip inside forward,
nn.Bilinear into nn.Unflatten, a stack of the less common layers
(PReLU, affine InstanceNorm2d, Mish, ELU, LocalResponseNorm, Dropout2d, a
ceil-mode AvgPool2d, nearest Upsample, Hardsigmoid, AdaptiveMaxPool2d),
top-k routing into slots (topk, index_select, remainder, scatter_add),
a gather along the sequence with a where on its values, a classifier that
returns its own loss (cross entropy with label smoothing, an NLL term and
an MSE term: aten::cross_entropy_loss, nll_loss_nd, broadcast_tensors), a
bag-of-words model (nn.EmbeddingBag, summed and averaged) and
space-to-depth with sliding windows (pixel_unshuffle, Tensor.unfold).

The memory model is exact (within 1 %) on most of them (the Conformer
is 2.7 % under; the loss and the bags are within 5 %): the Gumbel codebook (exponential_, scatter_), the
router, the gather, the loss, the bags and the windows were unknown
operators (each modelled as saving every tensor) before the saved-tensor
table gained rows for them, and where's backward is now measured in the
unit the memory model prices it in (its float result, not its boolean
condition: it was 4x over).

Written for this test (2026-12-06).
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

from conftest import assert_predicted_within, train_beside_eager  # noqa: E402,E501


class Conformer(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.ff_norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.SiLU(),
                                nn.Dropout(0.1), nn.Linear(4 * dim, dim))
        self.att_norm = nn.LayerNorm(dim)
        self.att = nn.MultiheadAttention(dim, heads, dropout=0.1,
                                         batch_first=True)
        self.conv_norm = nn.LayerNorm(dim)
        self.pointwise_in = nn.Conv1d(dim, 2 * dim, 1)
        self.depthwise = nn.Conv1d(dim, dim, 15, padding=7, groups=dim)
        self.bn = nn.BatchNorm1d(dim)
        self.pointwise_out = nn.Conv1d(dim, dim, 1)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        x = x + 0.5 * self.ff(self.ff_norm(x))
        h = self.att_norm(x)
        x = x + self.att(h, h, h, need_weights=False)[0]
        h = self.conv_norm(x).transpose(1, 2)
        h = F.glu(self.pointwise_in(h), dim=1)
        h = self.pointwise_out(F.silu(self.bn(self.depthwise(h))))
        x = x + h.transpose(1, 2)
        return self.head(x.mean(1))


class SliceWrites(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        h = F.relu(self.c1(x), inplace=True)
        h = self.c2(h)
        h[:, 0] = h[:, 0] * 2.0
        h.add_(1.0)
        return self.fc(F.hardswish(h).mean((2, 3)))


class GumbelCodebook(nn.Module):
    def __init__(self):
        super().__init__()
        self.logits = nn.Linear(32, 16)
        self.code = nn.Embedding(16, 32)
        self.dec = nn.Linear(32, 32)

    def forward(self, x):
        y = F.gumbel_softmax(self.logits(x), tau=0.5, hard=True)
        index = y.argmax(-1)
        return self.dec(y @ self.code.weight + 0.1 * self.code(index))


class Bfloat16Middle(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(64, 128)
        self.b = nn.Linear(128, 64)

    def forward(self, x):
        h = torch.relu(self.a(x)).to(torch.bfloat16)
        return self.b((h * h).to(torch.float32))


class BilinearUnflatten(nn.Module):
    def __init__(self):
        super().__init__()
        self.bilinear = nn.Bilinear(16, 24, 32)
        self.unflatten = nn.Unflatten(1, (4, 8))
        self.conv = nn.Conv1d(4, 4, 3, padding=1)

    def forward(self, a, b):
        h = self.unflatten(torch.relu(self.bilinear(a, b)))
        return self.conv(h).sum(-1)


class LayerStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.PReLU(16),
            nn.InstanceNorm2d(16, affine=True), nn.Mish(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ELU(),
            nn.LocalResponseNorm(3), nn.Dropout2d(0.2),
            nn.AvgPool2d(3, 2, ceil_mode=True),
            nn.Upsample(scale_factor=2.0, mode="nearest"),
            nn.Conv2d(16, 8, 1), nn.Hardsigmoid(), nn.AdaptiveMaxPool2d(2),
            nn.Flatten(), nn.Linear(32, 4))

    def forward(self, x):
        return self.body(x)


class SlotRouter(nn.Module):
    """Scores tokens, keeps the top 8, gates them and sums each into one of
    16 slots by its index modulo 16."""

    def __init__(self, dim: int = 64):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.proj = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 5)

    def forward(self, x):
        scores = self.score(x).squeeze(-1)
        values, index = torch.topk(scores, 8, dim=1)
        rows = index + torch.arange(x.size(0))[:, None] * x.size(1)
        picked = torch.index_select(x.reshape(-1, x.size(-1)), 0,
                                    rows.reshape(-1))
        h = torch.relu(self.proj(picked)).reshape(x.size(0), 8, -1)
        h = h * torch.sigmoid(values)[..., None]
        slots = (index % 16)[..., None].expand(-1, -1, h.size(-1))
        summed = torch.zeros(x.size(0), 16, h.size(-1)).scatter_add(1, slots,
                                                                    h)
        return self.head(summed.mean(1))


class GatherWhere(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)

    def forward(self, x, index):
        h = torch.gather(F.softplus(self.a(x)), 1, index)
        h = torch.where(h > 1.0, h, h * 0.1)
        return self.b(h).pow(2).mean(1)


class ReturnsLoss(nn.Module):
    """(loss, logits): the loss computed in forward, as HF-style models do."""

    def __init__(self, dim: int = 32, classes: int = 12):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 64), nn.GELU(),
                                  nn.Linear(64, classes))
        self.recon = nn.Linear(classes, dim)

    def forward(self, x, labels):
        logits = self.body(x)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.1)
        loss = loss + 0.5 * F.nll_loss(F.log_softmax(logits, 1), labels)
        loss = loss + F.mse_loss(self.recon(logits), x)
        return loss, logits


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.summed = nn.EmbeddingBag(200, 32, mode="sum")
        self.averaged = nn.EmbeddingBag(200, 32, mode="mean")
        self.head = nn.Sequential(nn.Linear(64, 64), nn.ReLU(),
                                  nn.Linear(64, 3))

    def forward(self, tokens):
        return self.head(torch.cat([self.summed(tokens),
                                    self.averaged(tokens)], 1))


class SpaceToDepth(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(12, 16, 3, padding=1)
        self.mix = nn.Linear(4, 4)

    def forward(self, x):
        h = torch.relu(self.conv(F.pixel_unshuffle(x, 2)))
        windows = h.flatten(2).unfold(2, 4, 4)  # (n, c, hw / 4, 4)
        return self.mix(windows).tanh().mean((1, 2))


MODELS = {
    "conformer": (Conformer, lambda: torch.randn(4, 32, 64)),
    "slice_writes": (SliceWrites, lambda: torch.randn(2, 3, 16, 16)),
    "gumbel_codebook": (GumbelCodebook, lambda: torch.randn(8, 32)),
    "bfloat16_middle": (Bfloat16Middle, lambda: torch.randn(8, 64)),
    "bilinear_unflatten": (BilinearUnflatten, lambda: (
        torch.randn(8, 16), torch.randn(8, 24))),
    "layer_stack": (LayerStack, lambda: torch.randn(2, 3, 16, 16)),
    "slot_router": (SlotRouter, lambda: torch.randn(4, 32, 64)),
    "gather_where": (GatherWhere, lambda: (
        torch.randn(4, 16, 64), torch.randint(0, 16, (4, 8, 64)))),
    "returns_loss": (ReturnsLoss, lambda: (
        torch.randn(64, 32), torch.randint(0, 12, (64,)))),
    "bag_of_words": (BagOfWords, lambda: torch.randint(0, 200, (16, 12))),
    "space_to_depth": (SpaceToDepth, lambda: torch.randn(2, 3, 32, 32)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_user_model_trains_like_eager(name, tmp_path):
    train_beside_eager(*MODELS[name], tmp_path)


PREDICTED = ["gumbel_codebook", "slot_router", "gather_where", "layer_stack",
             "bfloat16_middle", "bilinear_unflatten", "slice_writes",
             "space_to_depth"]


@pytest.mark.parametrize("name", PREDICTED)
def test_prediction_of_user_models(name, tmp_path):
    assert_predicted_within(*MODELS[name], tmp_path, 0.01)


# Within 5 %, not yet exact: the model returning its loss (+4.6 % on 1.13;
# its cross entropy and NLL terms are exact alone, its MSE term is priced
# from the kernel probe's run of mse_loss, 9 % under alone) and the bags
# (-1.3 %: the mean bag's backward holds a little more than the sum's).
# Before the table's rows for them: the loss's three operators were
# unknown, the bags 17 % under.
@pytest.mark.parametrize("name", ["returns_loss", "bag_of_words"])
def test_prediction_of_losses_and_bags(name, tmp_path):
    assert_predicted_within(*MODELS[name], tmp_path, 0.05)
