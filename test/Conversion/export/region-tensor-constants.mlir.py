"""region-tensor-constants.mlir: run the exported module once, forward and
backward, with the runtime loaded."""
import pathlib
import sys

import torch

translate = pathlib.Path(sys.argv[2])
torch.ops.load_library(
    str(translate.parent.parent / "lib" / "libmemopt_runtime.so"))
model = torch.jit.load(sys.argv[1])
x = torch.ones(2, requires_grad=True)
y = model(x)
y.sum().backward()
print("output", y.tolist())
print("grad", x.grad.tolist())
