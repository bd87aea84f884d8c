"""region-tensor-lists.mlir: `source OUT` saves the source model (a list of
two parameters as an attribute); `run PT TRANSLATE` runs the exported module
forward and backward with the runtime loaded."""
import pathlib
import sys
from typing import List

import torch
from torch import nn


class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.ones(2))
        self.b = nn.Parameter(torch.full((2,), 2.0))
        self.weights: List[torch.Tensor] = [self.a, self.b]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x * torch.stack(self.weights).sum(0)


if sys.argv[1] == "source":
    torch.jit.script(Weighted()).save(sys.argv[2])
    sys.exit(0)
translate = pathlib.Path(sys.argv[3])
torch.ops.load_library(
    str(translate.parent.parent / "lib" / "libmemopt_runtime.so"))
model = torch.jit.load(sys.argv[2])
x = torch.ones(2, requires_grad=True)
y = model(x)
y.sum().backward()
print("output", y.tolist())
print("grad x", x.grad.tolist(), "a", model.a.grad.tolist(), "b",
      model.b.grad.tolist())
