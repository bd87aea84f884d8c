"""Prints an exported module's code, methods and state_dict keys, and what
calling it with several inputs gives (the RUN lines of dispatch.mlir)."""
import sys

import torch

torch._C._set_graph_executor_optimize(False)
m = torch.jit.load(sys.argv[1])
print(m.code)
for name in sorted(m._c._method_names()):
    if name != "forward":
        print(getattr(m, name).code)
print("methods:", sorted(m._c._method_names()))
print("state_dict:", list(m.state_dict()))


def call(what, x):
    try:
        print(f"{what}: {tuple(m(x).shape)}")
    except Exception as error:
        print(f"{what}: " + str(error).strip().splitlines()[-1])


call("batch 8", torch.randn(8, 4))
call("batch 2", torch.randn(2, 4))
call("batch 5", torch.randn(5, 4))
call("batch 5 f64", torch.randn(5, 4, dtype=torch.float64))
call("batch 1x2x4", torch.randn(1, 2, 4))
m.eval()
call("eval", torch.randn(2, 4))
