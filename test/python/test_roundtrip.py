"""Round trip: import a TorchScript model, export it again with no pass in
between, and train both: outputs, parameter gradients and buffers must match
the eager model bit for bit (issue 3).

Each comparison runs in a fresh process (`models.py compare`) with the graph
executor's optimization off before the first call: the profiling executor
redraws dropout masks once a function has run twice, which no correct
compiled model can match.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import models
from conftest import tool_path

HERE = pathlib.Path(__file__).resolve().parent


def translate(*args, check=True):
    result = subprocess.run([str(tool_path("memopt-translate")), *map(str, args)],
                            capture_output=True, text=True)
    if check and result.returncode != 0:
        pytest.fail(f"memopt-translate {' '.join(map(str, args))} failed:\n"
                    f"{result.stderr}")
    return result


def roundtrip(case: models.ModelCase, directory: pathlib.Path) -> pathlib.Path:
    """source .pt -> memopt MLIR -> exported .pt; returns the exported path."""
    source = directory / f"{case.name}.pt"
    case.save(source)
    mlir = directory / f"{case.name}.mlir"
    specs = [f"--input-shape={spec}" for spec in case.input_specs()]
    translate("--import-torchscript", source, *specs, "-o", mlir)
    exported = directory / f"{case.name}.out.pt"
    translate("--export-torchscript", mlir, "-o", exported)
    return exported


def compare_in_fresh_process(case: models.ModelCase, exported: pathlib.Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(HERE.parents[1] / "python"), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-W", "ignore", str(HERE / "models.py"), "compare",
         case.name, str(exported)],
        capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", list(models.CASES))
def test_roundtrip_trains_like_eager(name, tmp_path):
    case = models.CASES[name]
    exported = roundtrip(case, tmp_path)
    report = compare_in_fresh_process(case, exported)
    assert report["problems"] == []
    if case.tolerance_reason:
        assert report["worst_relative"] <= 1e-6, (case.tolerance_reason, report)
    else:
        assert report["bitwise"], report


def test_exported_module_has_only_forward_on_root(tmp_path):
    """Submodules hold state only; forward reads it through GetAttr chains."""
    import torch
    exported = roundtrip(models.CASES["resnet18"], tmp_path)
    module = torch.jit.load(str(exported))
    assert module._c._method_names() == ["forward"]
    block = getattr(module.layer1, "0")
    assert block.conv1.original_name == "Conv2d"
    assert block._c._method_names() == []


#===------------------------------------------------------------------------===#
# Checkpoint regions: exported as calls of the runtime's memopt::checkpoint
#===------------------------------------------------------------------------===#

# Linear, then region "block" (batch norm with its running statistics,
# ReLU, dropout: state read inside the body, RNG replayed), then region
# "spikes" whose binary input is saved 1 bit per value.
CHECKPOINTED_MLIR = """
module attributes {memopt.source = "@SOURCE@"} {
  func.func @forward(%x: tensor<4x6xf32>) -> tensor<4x8xf32> {
    %w = memopt.param "0.weight" : tensor<8x6xf32>
    %b = memopt.param "0.bias" : tensor<8xf32>
    %y = memopt.op "aten::linear"(%x, %w, %b) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>] {overload = ""} : (tensor<4x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %r = memopt.checkpoint "block" (%y) policies [#memopt.keep] : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>):
      %nb = memopt.buffer "1.num_batches_tracked" : tensor<i64>
      %nb2 = memopt.op "aten::add_"(%nb) [#memopt.arg<0>, 1, 1] {mutates = array<i64: 0>, overload = "Scalar", views = array<i64: 0>} : (tensor<i64>) -> tensor<i64>
      %t = memopt.get_attr "1.training" : i1
      %g = memopt.param "1.weight" : tensor<8xf32>
      %gb = memopt.param "1.bias" : tensor<8xf32>
      %rm = memopt.buffer "1.running_mean" : tensor<8xf32>
      %rv = memopt.buffer "1.running_var" : tensor<8xf32>
      %n = memopt.op "aten::batch_norm"(%a, %g, %gb, %rm, %rv, %t) [#memopt.arg<0>, #memopt.arg<1>, #memopt.arg<2>, #memopt.arg<3>, #memopt.arg<4>, #memopt.arg<5>, 1.000000e-01, 1.000000e-05, true] {overload = ""} : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, i1) -> tensor<4x8xf32>
      %u = memopt.op "aten::relu"(%n) [#memopt.arg<0>] {overload = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      %d = memopt.op "aten::dropout"(%u) [#memopt.arg<0>, 5.000000e-01, true] {nondeterministic, overload = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      memopt.yield %d : tensor<4x8xf32>
    }
    %pos = memopt.op "aten::gt"(%r) [#memopt.arg<0>, 0] {overload = "Scalar"} : (tensor<4x8xf32>) -> tensor<4x8xi1>
    %s = memopt.op "aten::to"(%pos) [#memopt.arg<0>, 6, false, false, #memopt.none] {overload = "dtype"} : (tensor<4x8xi1>) -> tensor<4x8xf32>
    %o = memopt.checkpoint "spikes" (%s, %r) policies [#memopt.compress<bit>, #memopt.keep] : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%sp: tensor<4x8xf32>, %v: tensor<4x8xf32>):
      %m = memopt.op "aten::mul"(%sp, %v) [#memopt.arg<0>, #memopt.arg<1>] {overload = "Tensor"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
      %e = memopt.op "aten::exp"(%m) [#memopt.arg<0>] {overload = ""} : (tensor<4x8xf32>) -> tensor<4x8xf32>
      memopt.yield %e : tensor<4x8xf32>
    }
    return %o : tensor<4x8xf32>
  }
}
"""


def _checkpointed_reference(model, x):
    import torch
    r = model[3](torch.relu(model[1](model[0](x))))
    return torch.exp((r > 0).to(torch.float32) * r)


def test_checkpoint_regions_train_like_eager(runtime, tmp_path):
    import torch
    torch._C._set_graph_executor_optimize(False)
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(6, 8),
                                       torch.nn.BatchNorm1d(8),
                                       torch.nn.ReLU(), torch.nn.Dropout(0.5))
    eager = make()
    source = tmp_path / "seq.pt"
    torch.jit.script(eager).save(str(source))
    mlir = tmp_path / "checkpointed.mlir"
    mlir.write_text(CHECKPOINTED_MLIR.replace("@SOURCE@", str(source)))
    exported_path = tmp_path / "checkpointed.pt"
    translate("--export-torchscript", mlir, "-o", exported_path)
    exported = torch.jit.load(str(exported_path))
    code = exported.code
    assert code.count("ops.memopt.checkpoint(") == 2
    assert '"compress:bit"' in code and '"block"' in code

    x = torch.randn(4, 6)
    for step in range(2):  # the second step runs the updated statistics
        results = []
        for module, run in ((eager, _checkpointed_reference),
                            (exported, lambda m, v: m(v))):
            torch.manual_seed(100 + step)
            for p in module.parameters():
                p.grad = None
            out = run(module, x)
            out.sum().backward()
            results.append((out.detach(), {n: p.grad for n, p in module.named_parameters()},
                            {n: b.clone() for n, b in module.named_buffers()}))
        (out_e, grads_e, bufs_e), (out_c, grads_c, bufs_c) = results
        assert torch.equal(out_e, out_c)
        assert grads_e.keys() == grads_c.keys()
        for name in grads_e:
            assert torch.equal(grads_e[name], grads_c[name]), name
        for name in bufs_e:
            assert torch.equal(bufs_e[name], bufs_c[name]), name
