"""Multi-graph specialization end to end: memopt-compile with several input
signatures writes one .pt whose forward dispatches to one plan per signature
and falls back to a generic version for the rest.

Training is compared with eager PyTorch in fresh processes where the graph
executor's optimizations are off before the first call (the profiling
executor redraws dropout masks and re-plans otherwise).
"""
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch
import torchvision

from conftest import runtime_library_path, tool_path

SMALL, LARGE, UNSEEN = 2, 8, 4
IMAGE = 32


@pytest.fixture(scope="module")
def resnet(tmp_path_factory):
    directory = tmp_path_factory.mktemp("specialize")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10).train()
    source = directory / "resnet18.pt"
    torch.jit.script(model).save(str(source))
    return directory, source


def compile_model(source, output, specs, *extra):
    """Plans for .grad zeroed in place (resident, as MEASURE leaves them) on
    every PyTorch: the byte budget below is about activations."""
    report = output.with_suffix(".json")
    command = [str(tool_path("memopt-compile")), str(source), "-o", str(output),
               "--report", str(report), "--grad-buffers", "resident"]
    for spec in specs:
        command += ["--spec", spec]
    result = subprocess.run(command + list(extra), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text())


def spec(batch):
    return f"x:{batch}x3x{IMAGE}x{IMAGE}"


def budget_between_batches(directory, source):
    """A byte budget the small batch meets without recomputation and the
    large one only with it: between the small batch's baseline peak (or the
    large batch's least reachable peak, if higher) and the large batch's
    baseline. 20 MB on most machines; where a kernel's transient buffer
    dominates both peaks (oneDNN limited to AVX2 on an AVX-512 CPU: a
    47 MB weight-gradient workspace in layer4 at these shapes), no budget
    separates them and the test says so."""
    peaks = by_shape(compile_model(
        source, directory / "least.pt", [spec(SMALL), spec(LARGE)],
        "--prefer", "memory"))
    small = peaks[SMALL]["baseline"]["predicted_peak_bytes"]
    large = peaks[LARGE]["baseline"]["predicted_peak_bytes"]
    least = (peaks[LARGE]["planned"] or peaks[LARGE]["baseline"])[
        "predicted_peak_bytes"]
    floor = max(small, least)
    if floor >= large:
        pytest.skip(f"no budget separates the batches here: the large "
                    f"batch's least peak {least} B and the small batch's "
                    f"baseline {small} B reach its baseline {large} B")
    return min(max(20_000_000, floor), (floor + large) // 2)


@pytest.fixture(scope="module")
def budget(resnet):
    return budget_between_batches(*resnet)


@pytest.fixture(scope="module")
def compiled(resnet, budget):
    directory, source = resnet
    output = directory / "resnet18.memopt.pt"
    report = compile_model(source, output, [spec(SMALL), spec(LARGE)],
                           "--budget", str(budget))
    return output, report


def by_shape(report):
    """Plans by batch size, from signatures like "x:8x3x32x32"."""
    return {int(plan["signature"].split(":")[1].split("x")[0]): plan
            for plan in report["signatures"]}


def test_two_signatures_get_two_plans(compiled, budget):
    _, report = compiled
    plans = by_shape(report)
    assert set(plans) == {SMALL, LARGE}
    small, large = plans[SMALL], plans[LARGE]
    # The small batch fits without recomputation; the large one does not.
    assert small["recompute_overhead"] < large["recompute_overhead"]
    assert len(small["regions"]) < len(large["regions"])
    for plan in (small, large):
        assert plan["planned"]["predicted_peak_bytes"] <= budget
    assert report["fallback"] in ("generic", "original")


TRAIN = textwrap.dedent("""
    import sys, torch, torchvision
    torch._C._set_graph_executor_optimize(False)
    torch.ops.load_library(sys.argv[1])
    source, compiled, batches = sys.argv[2], sys.argv[3], [int(b) for b in sys.argv[4].split(",")]
    reference = torchvision.models.resnet18(num_classes=10).train()
    reference.load_state_dict(torch.jit.load(source).state_dict())
    candidate = torch.jit.load(compiled).train()
    assert list(reference.state_dict()) == list(candidate.state_dict())
    def step(model, optimizer, x):
        optimizer.zero_grad(set_to_none=False)
        out = model(x)
        out.backward(torch.ones_like(out))
        optimizer.step()
        return out
    opt_r = torch.optim.SGD(reference.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(candidate.parameters(), lr=0.1)
    for i, batch in enumerate(batches):
        torch.manual_seed(10 + i)
        x = torch.randn(batch, 3, %(image)d, %(image)d)
        a, b = step(reference, opt_r, x), step(candidate, opt_c, x)
        assert torch.equal(a, b), ("output", batch)
        for (name, p), q in zip(reference.named_parameters(), candidate.parameters()):
            assert torch.equal(p.grad, q.grad), ("grad", name, batch)
        for (name, u), v in zip(reference.named_buffers(), candidate.buffers()):
            assert torch.equal(u, v), ("buffer", name, batch)
    print("equal")
""") % {"image": IMAGE}


def run_training(source, compiled, batches):
    return subprocess.run(
        [sys.executable, "-c", TRAIN, str(runtime_library_path()), str(source),
         str(compiled), ",".join(str(b) for b in batches)],
        capture_output=True, text=True, timeout=600)


def test_each_signature_and_the_fallback_train_like_eager(resnet, compiled):
    _, source = resnet
    output, _ = compiled
    # Both compiled batch sizes and an unseen one (the fallback), mixed.
    result = run_training(source, output, [SMALL, LARGE, UNSEEN, SMALL])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "equal" in result.stdout


def test_strict_signatures_reject_an_unseen_shape(resnet, budget, tmp_path):
    _, source = resnet
    output = tmp_path / "strict.pt"
    compile_model(source, output, [spec(SMALL), spec(LARGE)], "--budget",
                  str(budget), "--strict-signatures")
    result = run_training(source, output, [UNSEEN])
    assert result.returncode != 0
    assert "matches none of the compiled signatures" in result.stderr
    assert f"x: {UNSEEN}x3x{IMAGE}x{IMAGE}" in result.stderr
    # Compiled shapes still run.
    result = run_training(source, output, [LARGE])
    assert result.returncode == 0, result.stderr[-3000:]


def test_parameters_are_stored_once(resnet, budget, tmp_path):
    _, source = resnet
    one, three = tmp_path / "one.pt", tmp_path / "three.pt"
    compile_model(source, one, [spec(LARGE)], "--budget", str(budget))
    compile_model(source, three, [spec(SMALL), spec(UNSEEN), spec(LARGE)],
                  "--budget", str(budget))
    assert three.stat().st_size < 1.10 * one.stat().st_size


MEASURE = textwrap.dedent("""
    import sys, torch
    torch._C._set_graph_executor_optimize(False)
    torch.ops.load_library(sys.argv[1])
    model = torch.jit.load(sys.argv[2]).train()
    batch = int(sys.argv[3])
    x = torch.randn(batch, 3, %(image)d, %(image)d)
    torch.ops.memopt.enable_memory_stats()
    out = model(x); out.backward(torch.ones_like(out)); del out  # .grad exist
    torch.ops.memopt.reset_peak_memory_stats()
    before = torch.ops.memopt.memory_stats()[0]
    out = model(x); out.backward(torch.ones_like(out))
    print(torch.ops.memopt.memory_stats()[1] - before)
""") % {"image": IMAGE}


@pytest.mark.parametrize("batch", [SMALL, LARGE])
def test_each_variant_meets_the_budget(compiled, budget, batch):
    output, report = compiled
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, str(runtime_library_path()),
         str(output), str(batch)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    measured = int(result.stdout.split()[-1])
    assert measured <= 1.05 * budget, (batch, measured)
