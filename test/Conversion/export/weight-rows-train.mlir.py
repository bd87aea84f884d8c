"""weight-rows-train.mlir: import a model with two large linear layers, mark
them backward = #memopt.backward<weight_rows> (what
memopt-chunk-weight-gradients does; the second also saved_input = bit),
export, and train against eager with the runtime loaded."""
import pathlib
import subprocess
import sys

import torch
from torch import nn

torch._C._set_graph_executor_optimize(False)
out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
translate = pathlib.Path(sys.argv[2])
torch.ops.load_library(str(translate.parent.parent / "lib" / "libmemopt_runtime.so"))


class TwoHeads(nn.Module):
    # 2560 x 2048 floats (8 KiB a row): over four 4 MiB blocks of rows.
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2048, 2560)
        self.fc2 = nn.Linear(2560, 2560, bias=False)

    def forward(self, x):
        h = self.fc1(x)
        return self.fc2((h > 0).float()) + h


torch.manual_seed(0)
eager = TwoHeads()
torch.jit.script(eager).save(str(out / "src.pt"))
ir = subprocess.run([str(translate), "--import-torchscript", str(out / "src.pt"),
                     "--input-shape", "x:3x4x2048"],
                    capture_output=True, text=True, check=True).stdout
ir = ir.replace(
    '{overload = ""} : (tensor<3x4x2048xf32>, tensor<2560x2048xf32>',
    '{backward = #memopt.backward<weight_rows>, overload = ""} : '
    '(tensor<3x4x2048xf32>, tensor<2560x2048xf32>')
ir = ir.replace(
    '{overload = ""} : (tensor<3x4x2560xf32>, tensor<2560x2560xf32>',
    '{backward = #memopt.backward<weight_rows>, overload = "", '
    'saved_input = #memopt.compress<bit>} : '
    '(tensor<3x4x2560xf32>, tensor<2560x2560xf32>')
assert ir.count("weight_rows") == 2, ir
(out / "rows.mlir").write_text(ir)
subprocess.run([str(translate), "--export-torchscript", str(out / "rows.mlir"),
                "-o", str(out / "rows.pt")], check=True)
print(torch.jit.load(str(out / "rows.pt")).code)


def train(model, set_to_none, steps):
    torch.manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    records = []
    for step in range(steps):
        optimizer.zero_grad(set_to_none=set_to_none)
        x = torch.randn(3, 4, 2048,
                        generator=torch.Generator().manual_seed(step))
        y = model(x)
        (y * y).sum().backward()
        records.append([y.detach().clone()] +
                       [p.grad.clone() for p in model.parameters()])
        optimizer.step()
    return records


for mode, set_to_none, steps in (("resident", False, 3),
                                 ("allocated", True, 2)):
    state = {k: v.clone() for k, v in eager.state_dict().items()}
    compiled = torch.jit.load(str(out / "rows.pt"))
    compiled.load_state_dict(state)
    reference = TwoHeads()
    reference.load_state_dict(state)
    for step, (a, b) in enumerate(zip(train(reference, set_to_none, steps),
                                      train(compiled, set_to_none, steps))):
        same = all(torch.equal(u, v) for u, v in zip(a, b))
        print(f"{mode} step {step}: {'bitwise' if same else 'DIFFERENT'}")
