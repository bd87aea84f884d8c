"""Control flow on tensor data (`if h.abs().max() > 1:`, `while
bool(h.norm() > 1):`) used to make the import refuse the whole model
("prim::If condition depends on tensor data"). It is now kept whole: one
opaque op the planner places like any other, whose TorchScript graph the
exported module runs, so the branch and the number of iterations are
decided at run time. Tested on models written here, on inputs that take
each branch, with and without a checkpoint region around the kept op.
"""
import json
import subprocess
import sys
from typing import List

import pytest
import torch
import torch.nn as nn

from conftest import REPO, script_and_compile
from test_prediction_mechanisms import compile_case, run_models_script

sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

torch._C._set_graph_executor_optimize(False)


class GatedBlock(nn.Module):
    """Rescales its activations only when they grew large, reading a
    parameter inside one branch and calling a layer in the other."""

    def __init__(self, width: int):
        super().__init__()
        self.inner = nn.Linear(width, width)
        self.scale = nn.Parameter(torch.full((width,), 0.5))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if h.abs().max() > 4.0:
            h = h / h.abs().max() * self.scale
        else:
            h = torch.tanh(self.inner(h))
        return h


class GatedNet(nn.Module):
    def __init__(self, width: int = 128, depth: int = 6):
        super().__init__()
        self.stem = nn.Linear(32, width)
        self.layers = nn.ModuleList(nn.Linear(width, width)
                                    for _ in range(depth))
        self.gate = GatedBlock(width)
        self.head = nn.Linear(width, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.stem(x)
        for i, layer in enumerate(self.layers):
            h = torch.relu(layer(h))
            if i == 2:
                h = self.gate(h)
        return self.head(h)


class Damped(nn.Module):
    """Halves its activations until their norm is small: a while loop whose
    number of iterations depends on the data."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.a = nn.Linear(16, width)
        self.b = nn.Linear(width, width)
        self.c = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.a(x))
        steps = 0
        while bool(h.norm() > 1.0) and steps < 8:
            h = self.b(h) * 0.5
            steps += 1
        return self.c(h)


class EarlyExit(nn.Module):
    """A `for` loop that breaks on data: its first iterations unroll, the
    rest is kept whole from the first condition that is data."""

    def __init__(self, width: int = 32):
        super().__init__()
        self.a = nn.Linear(8, width)
        self.step = nn.Linear(width, width)
        self.c = nn.Linear(width, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        for i in range(6):
            h = torch.tanh(self.step(h)) * 0.5 + h * 0.25
            if bool(h.abs().mean() < 0.1):
                break
        return self.c(h)


class BoundedRefine(nn.Module):
    """Up to `h.size(0) // 32` refinement steps, stopping once the update is
    small: a bounded loop with a break on data, whose bound the IR computes
    from the static shape."""

    def __init__(self, width: int = 256):
        super().__init__()
        self.a = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.a(x)
        for _ in range(h.size(0) // 32):
            h = torch.tanh(h) * 1.5
            if bool(h.abs().mean() < 0.1):
                break
        return self.a(h)


class CountingDropout(nn.Module):
    """A branch that draws random numbers, updates a buffer in place and
    writes its input in place: effects the kept op must carry."""

    def __init__(self, width: int = 64):
        super().__init__()
        self.a = nn.Linear(16, width)
        self.b = nn.Linear(width, width)
        self.c = nn.Linear(width, 4)
        self.drop = nn.Dropout(0.25)
        self.register_buffer("clipped", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        g = self.b(h)
        if x.mean() > 0:
            self.clipped.add_(1)
            g = self.drop(g)
            g.mul_(0.5)
        else:
            g = torch.sigmoid(g)
        return self.c(g + h)


class AppendsInBranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs: List[torch.Tensor] = [x]
        if x.sum() > 0:
            outs.append(x * 2)
        return torch.stack(outs).sum(0)


class ShapeChanging(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            x = x[:, :2]
        return x * 2


def assert_trains_bitwise(model, compiled, shape, scale, seed):
    """Two SGD steps of `compiled` on seeded normal inputs of `shape` times
    `scale` (which picks the branch) equal eager's bit for bit."""
    torch.manual_seed(seed)
    x = torch.randn(*shape) * scale
    result = measure.compare_with_eager(model, compiled, [x], steps=2)
    assert result["bitwise"], (shape, scale, result)
    assert not result["problems"], result["problems"]


def kept_and_measured(mlir_path, name):
    """True when the IR has a kept `name` op the kernel probe measured."""
    return any(f'memopt.op "{name}"' in line and "measured_saves" in line
               and "script = " in line
               for line in mlir_path.read_text().splitlines())


def planned_ops(report):
    return {u["op"] for s in report["signatures"] for u in s["unknown_ops"]}


@pytest.mark.parametrize("prefer", ["memory", "balanced"])
def test_data_dependent_if_trains_bitwise_on_both_branches(tmp_path, runtime,
                                                           prefer):
    # .grad zeroed in place (PyTorch 2.x sets it to None by default, which
    # puts this small net's peak at its weights' gradients: nothing to plan).
    model, compiled = script_and_compile(
        GatedNet, tmp_path, ["x:64x32"],
        ["--prefer", prefer, "--grad-buffers", "resident",
         "--emit-mlir", str(tmp_path / "m.mlir")])
    report = json.loads((tmp_path / "m.memopt.report.json").read_text())
    assert 'memopt.op "prim::If"' in (tmp_path / "m.mlir").read_text()
    # The kernel probe measured its branches: not an unknown op.
    assert not planned_ops(report), report["signatures"][0]["unknown_ops"]
    assert report["signatures"][0]["regions"], "the rest is still planned"
    torch.manual_seed(3)
    small = torch.randn(64, 32) * 0.01
    large = torch.randn(64, 32) * 100.0
    # The eager model takes each branch on one of them.
    taken = []
    for x in (small, large):
        h = model.stem(x)
        for layer in model.layers[:3]:
            h = torch.relu(layer(h))
        taken.append(bool(h.abs().max() > 4.0))
    assert taken == [False, True]
    for x in (small, large):
        result = measure.compare_with_eager(model, compiled, [x], steps=2)
        assert result["bitwise"], result
        assert not result["problems"], result["problems"]


def test_several_signatures_and_the_generic_fallback(tmp_path, runtime):
    # One plan per batch size, and the shape-generic function for the rest:
    # each keeps the branch whole.
    model, compiled = script_and_compile(
        GatedNet, tmp_path, [],
        ["--spec", "x:64x32", "--spec", "x:32x32", "--prefer", "memory"])
    for batch in (64, 32, 16):
        for scale in (0.01, 100.0):
            assert_trains_bitwise(model, compiled, (batch, 32), scale, 8)


def test_memopt_wrap_trains_a_model_with_an_if_on_data(tmp_path):
    """The Python path: one `memopt.wrap` call, then an ordinary training
    loop whose batches take either branch."""
    import memopt
    torch.manual_seed(0)
    eager = GatedNet().train()
    torch.manual_seed(0)
    model = GatedNet().train()
    sample = torch.randn(64, 32)
    wrapped = memopt.wrap(model, sample, prefer="memory",
                          cache_dir=tmp_path, verbose=False)
    assert wrapped.state_dict().keys() == eager.state_dict().keys()
    opt_eager = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_wrapped = torch.optim.SGD(wrapped.parameters(), lr=0.1)
    for step, scale in enumerate((0.01, 100.0, 0.01, 100.0)):
        torch.manual_seed(10 + step)
        x = torch.randn(64, 32) * scale
        for net, opt in ((eager, opt_eager), (wrapped, opt_wrapped)):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
        for (name, a), b in zip(eager.named_parameters(),
                                wrapped.parameters()):
            assert measure.same_bits(a, b), (step, name)
    # The compiled plan ran (not a fallback to the model's own forward).
    from memopt.binding import Plan
    assert [p for p in wrapped._memopt_plans.values()
            if isinstance(p, Plan)], wrapped._memopt_plans


def test_data_dependent_if_inside_a_checkpoint_region(tmp_path, runtime):
    model, compiled = script_and_compile(GatedNet, tmp_path, ["x:64x32"],
                                         ["--checkpoint", "gate"])
    report = json.loads((tmp_path / "m.memopt.report.json").read_text())
    labels = [r["label"] for r in report["signatures"][0]["regions"]]
    assert any("gate" in label for label in labels), labels
    for scale in (0.01, 100.0):
        assert_trains_bitwise(model, compiled, (64, 32), scale, 4)


def test_data_dependent_while_loop_trains_bitwise(tmp_path, runtime):
    model, compiled = script_and_compile(
        Damped, tmp_path, ["x:16x16"],
        ["--prefer", "memory", "--emit-mlir", str(tmp_path / "m.mlir")])
    # Kept whole, and measured by the kernel probe (not an unknown op).
    assert kept_and_measured(tmp_path / "m.mlir", "prim::Loop")
    for scale in (0.001, 1.0, 50.0):
        assert_trains_bitwise(model, compiled, (16, 16), scale, 5)


def test_loop_breaking_on_data_trains_bitwise(tmp_path, runtime):
    model, compiled = script_and_compile(
        EarlyExit, tmp_path, ["x:16x8"],
        ["--prefer", "memory", "--emit-mlir", str(tmp_path / "m.mlir")])
    assert kept_and_measured(tmp_path / "m.mlir", "prim::Loop")
    iterations = []
    for scale in (0.001, 1.0, 30.0):
        torch.manual_seed(7)
        x = torch.randn(16, 8) * scale
        with torch.no_grad():
            h, n = model.a(x), 0
            for _ in range(6):
                n += 1
                h = torch.tanh(model.step(h)) * 0.5 + h * 0.25
                if bool(h.abs().mean() < 0.1):
                    break
        iterations.append(n)
        result = measure.compare_with_eager(model, compiled, [x], steps=2)
        assert result["bitwise"], result
    # Inputs that leave after the first iteration (unrolled), after the
    # second (in the kept rest) and at the last.
    assert iterations == [1, 2, 6], iterations


def test_a_bounded_loop_is_predicted_at_its_bound(tmp_path, runtime):
    """The probe runs a kept loop with a bound to that bound, whatever its
    own data would do: the prediction is the peak of the inputs that run
    every iteration, and above that of inputs that leave early."""
    model, compiled = script_and_compile(
        BoundedRefine, tmp_path, ["x:128x256"],
        ["--prefer", "memory", "--grad-buffers", "resident",
         "--emit-mlir", str(tmp_path / "m.mlir")])
    assert kept_and_measured(tmp_path / "m.mlir", "prim::Loop")
    report = json.loads((tmp_path / "m.memopt.report.json").read_text())
    predicted = report["signatures"][0]["baseline"]["predicted_peak_bytes"]
    torch.set_num_threads(1)
    peaks = {}
    for scale in (0.01, 1.0):  # leaves after one iteration; runs all four
        torch.manual_seed(5)
        x = torch.randn(128, 256) * scale
        peaks[scale] = measure.measure_training_step(
            model, [x], stats=runtime, set_to_none=False).peak_bytes
        result = measure.compare_with_eager(model, compiled, [x], steps=2)
        assert result["bitwise"], result
    print(f"bounded loop: predicted {predicted} B, measured {peaks}")
    assert peaks[0.01] < peaks[1.0]
    assert abs(predicted - peaks[1.0]) <= 0.02 * peaks[1.0]


def test_attributes_a_kept_loop_reads_are_assumed_and_checked(tmp_path,
                                                              runtime):
    """The refiner's loop reads `self.steps` and `self.tol`: they enter its
    graph as constants (so the probe can run it), assumed like attributes
    control flow folds on, and the compiled forward checks them."""
    from memopt import zoo
    model, compiled = script_and_compile(
        lambda: zoo.build("refiner", "small")[0], tmp_path, ["x:16x64"],
        ["--prefer", "memory", "--emit-mlir", str(tmp_path / "m.mlir")])
    text = (tmp_path / "m.mlir").read_text()
    assert "memopt.assumes = {steps = 6 : i64, tol = 1.000000e-03 : f64}" \
        in text
    assert kept_and_measured(tmp_path / "m.mlir", "prim::Loop")
    assert_trains_bitwise(model, compiled, (16, 64), 1.0, 9)
    compiled.tol = 0.5
    x = torch.randn(16, 64)
    with pytest.raises(torch.jit.Error) as error:
        compiled(x)
    assert "compiled for tol == 0.001" in str(error.value), str(error.value)


@pytest.mark.parametrize("args", [["--prefer", "memory"],
                                  ["--checkpoint", "a,b,drop"]])
def test_random_and_in_place_effects_inside_kept_control_flow(tmp_path,
                                                              runtime, args):
    model, compiled = script_and_compile(CountingDropout, tmp_path,
                                         ["x:16x16"], args)
    for shift, clipped in ((-20.0, 0), (20.0, 2)):
        torch.manual_seed(6)
        x = torch.randn(16, 16) + shift
        result = measure.compare_with_eager(model, compiled, [x], steps=2)
        assert result["bitwise"], result
        assert not result["problems"], result["problems"]
        # Two steps in the branch that counts (buffers compared above).
        assert float(model.clipped) == clipped
        model.clipped.zero_()
        compiled.clipped.zero_()


def compile_error(model, tmp_path):
    torch.jit.script(model).save(str(tmp_path / "s.pt"))
    run = subprocess.run(
        [str(measure.tool_path("memopt-compile")), str(tmp_path / "s.pt"),
         "-o", str(tmp_path / "s.memopt.pt"), "--input-shape", "x:4x8"],
        capture_output=True, text=True)
    assert run.returncode == 1
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert "test_data_dependent_control_flow.py" in lines[0]
    assert not (tmp_path / "s.memopt.pt").exists()
    return lines[0]


def test_kept_branches_are_measured_and_predicted(tmp_path):
    """The kernel probe runs each branch of a kept `if` with autograd (what
    it keeps, the peaks of its forward and backward); the condition's own
    `x.abs().max()` keeps nothing for backward (a comparison's mask carries
    no gradient)."""
    out, sig = compile_case("gated_mlp", tmp_path, "--prefer", "memory")
    assert not sig["unknown_ops"], sig["unknown_ops"]
    result = run_models_script("gated_mlp", out)
    assert result["bitwise"]
    baseline = sig["baseline"]["predicted_peak_bytes"]
    planned = sig["planned"]["predicted_peak_bytes"]
    print(f"gated_mlp: eager {result['eager']} B (predicted {baseline}), "
          f"compiled {result['compiled']} B (predicted {planned})")
    # PyTorch 1.13: 1,453,060 B predicted to the byte; the plan, whose peak
    # is the kept op's backward recomputed in a region, +0.1 % (1,190,917
    # for 1,189,893 B). It was 10.9 % under while the probe fed each
    # result's gradient through a `* 1` and subtracted that node's gradient
    # from the branch's peak, which falls after the node has freed it.
    assert abs(baseline - result["eager"]) <= 0.02 * result["eager"]
    assert abs(planned - result["compiled"]) <= 0.02 * result["compiled"]
    assert result["compiled"] < 0.9 * result["eager"]
    # Without the probe the op is an unknown one.
    _, unprobed = compile_case("gated_mlp", tmp_path, "--prefer", "memory",
                               "--kernel-workspaces", "model")
    assert [u["op"] for u in unprobed["unknown_ops"]] == ["prim::If"]


def test_a_kept_if_reading_a_size_is_measured_and_predicted(tmp_path):
    """The kept op reads `h.size(1) // 2`, which the IR computes from the
    static shape: the probe runs the branch with that value instead of
    leaving the op unknown (modelled as saving every tensor)."""
    out, sig = compile_case("halves_gate", tmp_path, "--prefer", "memory",
                            "--emit-mlir", tmp_path / "h.mlir")
    assert kept_and_measured(tmp_path / "h.mlir", "prim::If")
    assert not sig["unknown_ops"], sig["unknown_ops"]
    result = run_models_script("halves_gate", out)
    assert result["bitwise"]
    baseline = sig["baseline"]["predicted_peak_bytes"]
    planned = (sig["planned"] or sig["baseline"])["predicted_peak_bytes"]
    print(f"halves_gate: eager {result['eager']} B (predicted {baseline}), "
          f"compiled {result['compiled']} B (predicted {planned})")
    assert abs(baseline - result["eager"]) <= 0.02 * result["eager"]
    assert abs(planned - result["compiled"]) <= 0.02 * result["compiled"]


def test_branches_of_different_shapes_are_refused(tmp_path):
    assert ("prim::If on tensor data returns [4, 2] Float from its 'then' "
            "branch but [4, 8] Float from its 'else' branch"
            ) in compile_error(ShapeChanging(), tmp_path)


def test_a_list_changed_in_a_branch_is_refused(tmp_path):
    # The stacked list's length is data: what the import knew of it after
    # the branch would be stale.
    line = compile_error(AppendsInBranch(), tmp_path)
    assert "prim::If on tensor data changes 'outs' (List[Tensor]) in place" \
        in line
