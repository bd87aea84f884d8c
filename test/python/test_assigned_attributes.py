"""Forward that assigns a value to a module attribute and reads it back
(RAFT keeps its correlation pyramid in `self.corr_pyramid` and loops over
it). The import used to refuse the loop ("prim::Loop trip count depends on
tensor data (through 'prim::GetAttr')"); reads after the assignment are now
the assigned value itself. The compiled model still assigns the attribute,
and trains bitwise. Tested on a model written here.
"""
import sys
from typing import List

import torch
import torch.nn as nn

from conftest import REPO, script_and_compile

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)


class Pyramid(nn.Module):
    levels: List[torch.Tensor]

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(nn.Linear(16, 16) for _ in range(4))
        self.levels = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        levels: List[torch.Tensor] = []
        for stage in self.stages:
            x = torch.tanh(stage(x))
            levels.append(x)
        self.levels = levels
        out = torch.zeros_like(x)
        for level in self.levels:
            out = out + level * 0.5
        return out


def test_read_back_attribute_unrolls_and_trains_bitwise(tmp_path, runtime):
    model, compiled = script_and_compile(Pyramid, tmp_path, ["x:8x16"],
                                         ["--prefer", "memory"])
    x = torch.randn(8, 16)
    result = measure.compare_with_eager(model, compiled, [x], steps=2)
    assert result["bitwise"], result
    assert not result["problems"], result["problems"]
    compiled(x)
    model(x)
    assert len(compiled.levels) == 4
    assert all(measure.same_bits(a, b)
               for a, b in zip(compiled.levels, model.levels))
