"""Several input signatures compiled into one .pt (issue 7): import with two
or three `--signature`s, `memopt-opt --memopt-specialize-signatures`, export,
then train in a fresh process (graph executor optimization off before the
first call) on every compiled signature and on an unseen batch size, mixed
in one run: outputs, gradients and buffers must equal eager bit for bit.
Also: checkpoint regions planned per signature (and in the generic copy),
the strict dispatch's error, the original-forward fallback, and that the
weights are stored once.
"""
import inspect
import json
import os
import pathlib
import subprocess
import sys
from typing import List

import pytest
import torch
from torch import nn

import conftest
import models
from conftest import tool_path

HERE = pathlib.Path(__file__).resolve().parent


class SizedHead(nn.Module):
    """A head that branches on the batch size: no generic copy is valid."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x))).mean([2, 3])
        if x.size(0) > 3:
            y = y * 0.5
        return self.fc(y)


CASES = {
    "small_cnn": models.ModelCase("small_cnn", models.SmallCNN,
                                  [("x", (2, 3, 16, 16))]),
    "resnet18": models.CASES["resnet18"],
    "sized_head": models.ModelCase("sized_head", SizedHead,
                                   [("x", (2, 3, 8, 8))]),
}


def run_tool(name, *args):
    result = subprocess.run([str(tool_path(name)), *map(str, args)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"{name} {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result


def shape_of(case: models.ModelCase, batch: int) -> List[int]:
    return [batch, *case.inputs[0][1][1:]]


def compile_signatures(case, directory: pathlib.Path, batches, counts,
                       fallback="generic", tag="", plan="") -> pathlib.Path:
    """source .pt -> one function per signature -> dispatch -> exported .pt."""
    source = directory / f"{case.name}.pt"
    if not source.exists():
        case.save(source)
    mlir = directory / f"{case.name}{tag}.mlir"
    signatures = [
        f"--signature={case.inputs[0][0]}:{'x'.join(map(str, shape_of(case, b)))}"
        f";count={c}" for b, c in zip(batches, counts)]
    run_tool("memopt-translate", "--import-torchscript", source, *signatures,
             "-o", mlir)
    exported = directory / f"{case.name}{tag}.out.pt"
    if len(batches) > 1:
        specialized = directory / f"{case.name}{tag}.spec.mlir"
        # `plan`: function passes run on every signature function first.
        pipeline = (f"builtin.module({'func.func(' + plan + '),' if plan else ''}"
                    f"memopt-specialize-signatures{{fallback={fallback}}})")
        result = run_tool("memopt-opt", mlir, f"--pass-pipeline={pipeline}",
                          "-o", specialized)
        (directory / f"{case.name}{tag}.spec.stderr").write_text(result.stderr)
        mlir = specialized
    run_tool("memopt-translate", "--export-torchscript", mlir, "-o", exported)
    return exported


def in_fresh_process(*args) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), str(HERE.parents[1] / "python"), env.get("PYTHONPATH", "")])
    result = subprocess.run(
        [sys.executable, "-W", "ignore", __file__, *map(str, args)],
        capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["small_cnn", "resnet18"])
def test_signatures_and_unseen_batch_train_like_eager(name, tmp_path):
    case = CASES[name]
    exported = compile_signatures(case, tmp_path, [2, 4], [3, 5])
    spec = (tmp_path / f"{name}.spec.mlir").read_text()
    assert "@forward_generic" in spec, "expected a generic fallback"
    assert "memopt.shape_assumes" not in spec
    # Seen, seen, unseen (generic fallback), seen again: one training run.
    report = in_fresh_process("compare", name, exported, "2,4,3,2")
    assert report["methods"] == ["forward", "forward_generic", "forward_s0",
                                 "forward_s1"]
    assert report["bitwise"], report["problems"]
    assert report["state_dict_keys_equal"]


def test_planned_signatures_and_generic_checkpoints(tmp_path):
    """Checkpoint regions planned per signature, and kept in the generic
    copy: recomputing them for an unseen size is still bitwise."""
    if not conftest.runtime_library_path().exists():
        pytest.skip("the runtime is not built")
    case = CASES["resnet18"]
    exported = compile_signatures(
        case, tmp_path, [2, 4], [3, 1], tag=".planned",
        plan="memopt-insert-checkpoints{prefer=memory}")
    spec = (tmp_path / "resnet18.planned.spec.mlir").read_text()
    generic = spec[spec.index("func.func @forward_generic"):]
    assert "memopt.checkpoint" in generic
    assert "memopt.generic_of = @forward_s1" in generic
    report = in_fresh_process("compare", "resnet18", exported, "2,4,3,2")
    assert report["bitwise"], report["problems"]


def test_strict_dispatch_names_the_signature(tmp_path):
    case = CASES["small_cnn"]
    exported = compile_signatures(case, tmp_path, [8, 64], [1, 1],
                                  fallback="none", tag=".strict")
    report = in_fresh_process("compare", "small_cnn", exported, "8,64")
    assert report["bitwise"], report["problems"]
    error = in_fresh_process("call", "small_cnn", exported, "5")["error"]
    assert ("memopt: input signature (x: 5x3x16x16 f32) matches none of the "
            "compiled signatures (x: 8x3x16x16 f32, x: 64x3x16x16 f32); "
            "recompile with --spec for it or drop --strict-signatures") in error
    # Another dtype misses too.
    error = in_fresh_process("call", "small_cnn", exported, "8:f64")["error"]
    assert "input signature (x: 8x3x16x16 f64) matches none" in error


def test_size_dependent_branch_falls_back_to_original_forward(tmp_path):
    case = CASES["sized_head"]
    exported = compile_signatures(case, tmp_path, [2, 6], [4, 1])
    stderr = (tmp_path / "sized_head.spec.stderr").read_text()
    lines, first = inspect.getsourcelines(SizedHead.forward)
    branch = first + next(i for i, l in enumerate(lines) if "x.size(0)" in l)
    assert ("no generic fallback: @forward_s1 folded control flow on tensor "
            f"sizes (prim::If condition at test_dispatch_export.py:{branch})"
            in stderr)
    spec = (tmp_path / "sized_head.spec.mlir").read_text()
    assert 'memopt.original_method = "forward"' in spec
    # Batch 4 takes the other branch than the compiled batch 2: only the
    # original forward computes it right.
    report = in_fresh_process("compare", "sized_head", exported, "2,6,4,1")
    assert report["methods"] == ["forward", "forward_original", "forward_s0",
                                 "forward_s1"]
    assert report["bitwise"], report["problems"]


def test_original_fallback_on_request(tmp_path):
    case = CASES["small_cnn"]
    exported = compile_signatures(case, tmp_path, [2, 4], [1, 1],
                                  fallback="original", tag=".original")
    report = in_fresh_process("compare", "small_cnn", exported, "4,3,2")
    assert "forward_original" in report["methods"]
    assert "forward_generic" not in report["methods"]
    assert report["bitwise"], report["problems"]


def test_weights_are_stored_once(tmp_path):
    case = CASES["resnet18"]
    one = compile_signatures(case, tmp_path, [2], [1], tag=".one")
    three = compile_signatures(case, tmp_path, [2, 4, 8], [1, 1, 1],
                               tag=".three")
    ratio = three.stat().st_size / one.stat().st_size
    assert ratio < 1.10, f"{three.stat().st_size} vs {one.stat().st_size} bytes"


#===------------------------------------------------------------------------===#
# The fresh process
#===------------------------------------------------------------------------===#

def _batch(case, spec: str, index: int) -> torch.Tensor:
    batch, _, dtype = spec.partition(":")
    gen = torch.Generator().manual_seed(100 + index)
    x = torch.randn(*shape_of(case, int(batch)), generator=gen)
    return x.to(getattr(torch, {"f64": "float64", "": "float32"}[dtype]))


def _train(model, batches):
    torch.manual_seed(1234)
    optimizer = torch.optim.SGD([p for p in model.parameters()
                                 if p.requires_grad], lr=0.01, momentum=0.9)
    records = []
    for x in batches:
        optimizer.zero_grad()
        out = model(x)
        weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(7))
        (out * weights).sum().backward()
        records.append([("out", out.detach().clone())] +
                       [(f"grad[{n}]", p.grad.clone())
                        for n, p in model.named_parameters() if p.grad is not None] +
                       [(f"buffer[{n}]", b.clone()) for n, b in model.named_buffers()])
        optimizer.step()
    return records


def _main(argv):
    torch._C._set_graph_executor_optimize(False)
    runtime = conftest.runtime_library_path()
    if runtime.exists():  # checkpoint regions call memopt::checkpoint
        torch.ops.load_library(str(runtime))
    mode, name, path, specs = argv
    case = CASES[name]
    compiled = torch.jit.load(path)
    compiled.train()
    batches = [_batch(case, spec, i) for i, spec in enumerate(specs.split(","))]
    if mode == "call":
        try:
            compiled(*batches)
            return {"error": ""}
        except Exception as error:  # torch.jit.Error
            return {"error": str(error)}
    reference = case.make(0)
    problems = []
    for step, (r, c) in enumerate(zip(_train(reference, batches),
                                      _train(compiled, batches))):
        if [k for k, _ in r] != [k for k, _ in c]:
            problems.append(f"step {step}: different records")
        for (what, a), (_, b) in zip(r, c):
            if a.shape != b.shape or not torch.equal(a, b):
                problems.append(f"step {step}: {what} differs")
    return {
        "bitwise": not problems,
        "problems": problems[:10],
        "methods": sorted(compiled._c._method_names()),
        "state_dict_keys_equal":
            list(reference.state_dict()) == list(compiled.state_dict()),
    }


if __name__ == "__main__":
    print(json.dumps(_main(sys.argv[1:])))
