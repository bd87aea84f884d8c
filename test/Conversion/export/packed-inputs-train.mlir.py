"""packed-inputs-train.mlir: import a model whose conv and linear inputs are
0/1, mark them saved_input (what memopt-pack-saved-inputs does), export,
and train two SGD steps against eager with the runtime loaded."""
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


class Binary(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        y = self.conv((x > 0).float())
        return self.fc((y.mean([2, 3]) > 0).float()) + y.mean([2, 3])[:, :2]


torch.manual_seed(0)
eager = Binary()
torch.jit.script(eager).save(str(out / "src.pt"))
ir = subprocess.run([str(translate), "--import-torchscript", str(out / "src.pt"),
                     "--input-shape", "x:2x3x8x8"],
                    capture_output=True, text=True, check=True).stdout
ir = ir.replace('{overload = ""} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>',
                '{overload = "", saved_input = #memopt.compress<bit>} : '
                '(tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>')
ir = ir.replace('{overload = ""} : (tensor<2x4xf32>, tensor<2x4xf32>',
                '{overload = "", saved_input = #memopt.compress<bool>} : '
                '(tensor<2x4xf32>, tensor<2x4xf32>')
assert ir.count("saved_input") == 2, ir
(out / "packed.mlir").write_text(ir)
subprocess.run([str(translate), "--export-torchscript", str(out / "packed.mlir"),
                "-o", str(out / "packed.pt")], check=True)
compiled = torch.jit.load(str(out / "packed.pt"))
print(compiled.code)


def train(model):
    torch.manual_seed(1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    records = []
    for step in range(2):
        optimizer.zero_grad()
        x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(step))
        y = model(x)
        y.sum().backward()
        records.append([y.detach().clone()] +
                       [p.grad.clone() for p in model.parameters()])
        optimizer.step()
    return records


for step, (a, b) in enumerate(zip(train(eager), train(compiled))):
    same = all(torch.equal(u, v) for u, v in zip(a, b))
    print(f"step {step}: {'bitwise' if same else 'DIFFERENT'}")
