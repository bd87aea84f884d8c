"""Trailing forward inputs with defaults that the input specs leave out
(`mask: Optional[Tensor] = None`, `steps: int = 2`).

They are compiled for their defaults. Before, the compiled forward lost
the `=None` (calling it as the source model is called failed: "forward()
is missing value for argument 'mask'") and ignored a mask passed in (a
silently wrong result); an int default could not be left out at all. Now
the compiled forward takes them with their defaults and refuses any other
value with one line. Tested on a model written here.
"""
import sys
from typing import Optional

import pytest
import torch
import torch.nn as nn

from conftest import REPO, script_and_compile

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)


class Masked(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(16, 16) for _ in range(3))

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None,
                steps: int = 2) -> torch.Tensor:
        for _ in range(steps):
            for layer in self.layers:
                x = torch.tanh(layer(x))
        if mask is not None:
            x = x * mask
        return x


@pytest.fixture
def compiled(tmp_path, runtime):
    return script_and_compile(Masked, tmp_path, ["x:4x16"],
                              ["--checkpoint", "layers"])


def test_defaults_bind_as_in_the_source_and_train_bitwise(compiled):
    model, module = compiled
    x = torch.randn(4, 16)
    for call in (lambda m: m(x), lambda m: m(x, None), lambda m: m(x, None, 2),
                 lambda m: m(x=x, steps=2)):
        assert measure.same_bits(call(module), call(model))
    result = measure.compare_with_eager(model, module, [x], steps=2)
    assert result["bitwise"], result
    assert not result["problems"], result["problems"]


def test_other_values_are_refused_with_one_line(compiled):
    _, module = compiled
    x = torch.randn(4, 16)
    with pytest.raises(torch.jit.Error) as error:
        module(x, torch.ones(4, 16))
    assert "compiled for mask == None (left out of the input specs); " \
        "compile it again with an input spec for mask" in str(error.value)
    with pytest.raises(torch.jit.Error) as error:
        module(x, steps=3)
    assert "compiled for steps == 2 (left out of the input specs)" in \
        str(error.value)


def test_a_spec_for_the_mask_compiles_it_in(tmp_path, runtime):
    model, module = script_and_compile(Masked, tmp_path,
                                       ["x:4x16", "mask:4x16"], [])
    x, mask = torch.randn(4, 16), torch.rand(4, 16)
    assert measure.same_bits(module(x, mask), model(x, mask))


def test_wrap_leaves_out_defaulted_inputs_too(runtime):
    """memopt.wrap with a sample for `x` only: the same defaults, the same
    refusal."""
    import memopt
    torch.manual_seed(0)
    model = Masked().train()
    wrapped = memopt.wrap(model, torch.randn(4, 16), prefer="memory",
                          cache_dir=False, verbose=False)
    x = torch.randn(4, 16)
    assert measure.same_bits(wrapped(x), model(x))
    with pytest.raises(Exception, match="compiled for mask == None"):
        wrapped(x, torch.ones(4, 16))


class MiddleInput(nn.Module):
    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None,
                scale: Optional[torch.Tensor] = None) -> torch.Tensor:
        if bias is not None:
            x = x + bias
        return x if scale is None else x * scale


def test_wrap_leaves_out_trailing_inputs_only():
    """Inputs bind by position: a defaulted input before a given one
    cannot be left out."""
    import memopt
    with pytest.raises(memopt.InputError, match="input\\(s\\) bias"):
        memopt.wrap(MiddleInput(), {"x": torch.randn(2),
                                    "scale": torch.randn(2)},
                    cache_dir=False, verbose=False)
