"""`memopt.wrap` takes a forward that returns more than tensors: lists of
feature maps (a pyramid built by `append` in a loop), dicts of heads, and
tuples nesting them with ints, floats, strings and None; scripted or, where
TorchScript refuses the model, traced. memopt-compile compiles every one
of those results; wrap used to refuse all but a tensor or a tuple of
tensors.

Each model trains two SGD steps (momentum 0.9, one intra-op thread)
wrapped with `--prefer memory` and in eager from the same seed: the
result's structure (types, keys, non-tensor values) is eager's, and its
tensors, every parameter gradient and every parameter and buffer after
each step are bit for bit eager's. The pyramid and the heads are large
enough to get checkpoint regions, so the results cross the regions.
"""
import copy
import os
import pathlib
import sys
import warnings
from typing import Dict, List, Optional, Tuple

import pytest
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(REPO / "build"))

import memopt  # noqa: E402
from memopt import measure  # noqa: E402
from memopt.torchscript import _tensors_in  # noqa: E402


def _stage(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, 2, 1), nn.BatchNorm2d(cout),
                         nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1),
                         nn.BatchNorm2d(cout), nn.ReLU())


class Pyramid(nn.Module):
    """A backbone returning every stage's map (List[Tensor])."""

    def __init__(self):
        super().__init__()
        widths = [3, 16, 24, 32, 48]
        self.stages = nn.ModuleList(
            [_stage(a, b) for a, b in zip(widths, widths[1:])])

    def forward(self, x: torch.Tensor) -> List[torch.Tensor]:
        feats: List[torch.Tensor] = []
        for stage in self.stages:
            x = stage(x)
            feats.append(x)
        return feats


class Heads(nn.Module):
    """Named heads (Dict[str, Tensor]), one of them a 0-d statistic."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(_stage(3, 16), _stage(16, 32))
        self.cls = nn.Linear(32, 10)
        self.seg = nn.Conv2d(32, 4, 1)

    def forward(self, x: torch.Tensor) -> Dict[str, torch.Tensor]:
        h = self.body(x)
        return {"logits": self.cls(h.mean(dim=[2, 3])), "mask": self.seg(h),
                "energy": h.pow(2).mean()}


class Nested(nn.Module):
    """Tensors in a tuple, a list and a dict, beside an int, a float, a
    string and None."""

    def __init__(self):
        super().__init__()
        self.pyramid = Pyramid()
        self.head = nn.Linear(48, 5)

    def forward(self, x: torch.Tensor) -> Tuple[
            torch.Tensor, List[torch.Tensor], Dict[str, List[torch.Tensor]],
            int, float, str, Optional[torch.Tensor]]:
        feats = self.pyramid(x)
        logits = self.head(feats[-1].mean(dim=[2, 3]))
        return (logits, feats[:2], {"deep": feats[2:]}, x.size(0), 0.5,
                "nested", None)


class TracedHeads(Heads):
    """Not scriptable (a lambda), so wrap traces it: a dict result too."""

    def forward(self, x: torch.Tensor):
        double = (lambda t: t * 2.0)  # noqa: E731 (TorchScript has none)
        out = super().forward(x)
        return {"logits": double(out["logits"]), "mask": out["mask"]}


MODELS = {"pyramid": Pyramid, "heads": Heads, "nested": Nested,
          "traced_heads": TracedHeads}


def _structure(value):
    """The result with each tensor replaced by its shape."""
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, [_structure(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, _structure(v)) for k, v in value.items()])
    return (type(value).__name__, value)


def _loss(out) -> torch.Tensor:
    generator = torch.Generator().manual_seed(7)
    terms = [(t * torch.randn(t.shape, generator=generator)).sum()
             for t in _tensors_in(out) if t.requires_grad]
    return torch.stack(terms).sum()


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("name", list(MODELS))
def test_wrapped_result_trains_like_eager(name, tmp_path):
    torch.manual_seed(0)
    eager = MODELS[name]().train()
    model = copy.deepcopy(eager)
    x = torch.randn(2, 3, 32, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", memopt.MemoptWarning)
        wrapped = memopt.wrap(model, x, prefer="memory", cache_dir=tmp_path,
                              verbose=False)
    plan = next(iter(wrapped._memopt_plans.values()))
    assert wrapped._memopt_compiler.how == (
        "trace" if name.startswith("traced") else "script")
    if name != "traced_heads":
        assert "memopt::checkpoint" in str(plan.module.graph) or any(
            "memopt::checkpoint" in str(m.graph)
            for m in plan.module.modules()), \
            f"{name}: no checkpoint region, the results cross none"
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
                  for m in (eager, model)]
    for step in range(2):
        outs, grads = [], []
        for m, opt in zip((eager, wrapped), optimizers):
            opt.zero_grad(set_to_none=False)
            torch.manual_seed(100 + step)
            out = m(x)
            _loss(out).backward()
            outs.append(out)
            grads.append({n: p.grad.clone()
                          for n, p in m.named_parameters()})
            opt.step()
        assert _structure(outs[1]) == _structure(outs[0]), step
        for a, b in zip(_tensors_in(outs[0]), _tensors_in(outs[1])):
            assert measure.same_bits(a.detach(), b.detach()), step
        assert list(grads[0]) == list(grads[1])
        differ = [n for n in grads[0]
                  if not measure.same_bits(grads[0][n], grads[1][n])]
        assert not differ, f"step {step}: gradients differ: {differ[:3]}"
        state_e, state_w = eager.state_dict(), model.state_dict()
        differ = [k for k in state_e
                  if not measure.same_bits(state_e[k], state_w[k])]
        assert not differ, f"step {step}: state differs: {differ[:3]}"
