"""region-none-attributes.mlir: `source OUT` saves the source model (an
InstanceNorm1d without running statistics, whose buffers are None); `run PT
TRANSLATE` runs the exported module forward and backward with the runtime
loaded."""
import pathlib
import sys

import torch
from torch import nn


class Normed(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm1d(1, eps=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x * 1.0) * 2.0


if sys.argv[1] == "source":
    torch.jit.script(Normed()).save(sys.argv[2])
    sys.exit(0)
translate = pathlib.Path(sys.argv[3])
torch.ops.load_library(
    str(translate.parent.parent / "lib" / "libmemopt_runtime.so"))
model = torch.jit.load(sys.argv[2])
x = torch.tensor([[[1.0, 3.0]]], requires_grad=True)
y = model(x)
y.sum().backward()
print("output", y.flatten().tolist())
print("grad x", x.grad.flatten().tolist())
