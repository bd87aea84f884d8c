"""The memory model follows autograd where a plan's peak depends on it.

Each case is one mechanism, on a model written for it
(test/python/prediction_models.py) or a zoo model where it decides the
plan's prediction; every measurement runs in a fresh process:

- a parameter used twice (an LM head tied to the token embedding): autograd
  holds the first gradient until the second arrives and adds them out of
  place; the importer gives the tied tensor one parameter;
- 4-d matmuls (attention heads) save copies of operands whose batch dims do
  not fold into one, not the operands;
- scaled_dot_product_attention on CPU runs the math decomposition (dropout)
  or the flash kernel, whose per-thread buffers no table row can know: the
  kernel probe runs it alone (OperatorCatalog.def: `Measured`) and records
  its output's layout, so that the flash output transposed back is
  contiguous (a decoder block's `.transpose(1, 2).contiguous()`);
- a checkpoint region that uses a parameter used outside it too returns that
  gradient instead of accumulating it into .grad from inside;
- a region that updates batch-norm running statistics keeps a copy of them
  until its backward and recomputes on another.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPO, BUILD, runtime_library_path

sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "test" / "python"))

from memopt import measure  # noqa: E402
import prediction_models  # noqa: E402


def run_models_script(*args) -> dict:
    env = dict(os.environ, MEMOPT_BUILD_DIR=str(BUILD),
               OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "python"), str(REPO / "test" / "python")])
    out = subprocess.run(
        [sys.executable, "-W", "ignore",
         str(REPO / "test" / "python" / "prediction_models.py"),
         *map(str, args)], capture_output=True, text=True, env=env,
        timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def error(predicted: int, measured: int) -> float:
    return (predicted - measured) / measured


@pytest.fixture(scope="module", autouse=True)
def built():
    if not (BUILD / "bin" / "memopt-compile").exists():
        pytest.fail(f"memopt-compile not built in {BUILD}")
    if not runtime_library_path().exists():
        pytest.fail(f"runtime library not built: {runtime_library_path()}")


def compile_case(name, tmp_path, *args):
    model, specs = prediction_models.build(name)
    pt = tmp_path / f"{name}.pt"
    import torch
    torch.jit.script(model).save(str(pt))
    out = tmp_path / f"{name}.memopt.pt"
    report = measure.compile_model(pt, out, specs,
                                   ["--grad-buffers", "resident", *args])
    return out, report["signatures"][0]


FUSED_ATTENTION = pytest.mark.skipif(
    not hasattr(__import__("torch").nn.functional,
                "scaled_dot_product_attention"),
    reason="PyTorch 1.x has no scaled_dot_product_attention")


@pytest.mark.parametrize("name", [
    "tied_lm", "head_attention",
    pytest.param("fused_attention", marks=FUSED_ATTENTION),
    pytest.param("fused_attention_no_dropout", marks=FUSED_ATTENTION),
    pytest.param("fused_attention_block", marks=FUSED_ATTENTION)])
def test_baseline_prediction_is_exact(tmp_path, name):
    _, sig = compile_case(name, tmp_path, "--analyze-only")
    predicted = sig["baseline"]["predicted_peak_bytes"]
    measured = run_models_script(name)["eager"]
    print(f"{name}: predicted {predicted} B, eager {measured} B")
    assert abs(error(predicted, measured)) <= 0.01


def test_tied_weight_is_one_parameter(tmp_path):
    """The head's weight is the embedding's: one parameter, resident once,
    and nothing plans its gradient by rows (autograd sums two)."""
    _, sig = compile_case("tied_lm", tmp_path, "--analyze-only")
    model, _ = prediction_models.build("tied_lm")
    params = sum(p.numel() * 4 for p in model.parameters())
    # Parameters and their resident .grad, the input's int64 ids.
    assert sig["baseline"]["resident_bytes"] == 2 * params + 2 * 64 * 8


def test_region_returning_a_shared_gradient(tmp_path):
    """The embedding recomputed in a region, its weight also the head's:
    the region returns that gradient, summed with the held one."""
    out, sig = compile_case("tied_lm", tmp_path, "--checkpoint", "wte",
                            "--prefer", "memory")
    assert any("wte" in r["module_paths"] for r in sig["regions"]), \
        sig["regions"]
    result = run_models_script("tied_lm", out)
    assert result["bitwise"]
    predicted = sig["planned"]["predicted_peak_bytes"]
    print(f"tied_lm plan: predicted {predicted} B, "
          f"measured {result['compiled']} B")
    assert abs(error(predicted, result["compiled"])) <= 0.02


def test_regions_copy_the_statistics_they_update(tmp_path):
    """efficientnet_b0 at 32 pixels: many small regions over wide
    batch-norms, whose copied running statistics add up to several percent
    of the planned peak (-8 % predicted without them)."""
    model, specs = measure.build_zoo_model("efficientnet_b0",
                                           {"batch": 2, "image": 32})
    pt = tmp_path / "e.pt"
    measure.save_zoo_model("efficientnet_b0", {"batch": 2, "image": 32}, pt)
    out = tmp_path / "e.memopt.pt"
    report = measure.compile_model(pt, out, specs, ["--prefer", "memory"])
    sig = report["signatures"][0]
    result = measure.run_worker({
        "zoo": "efficientnet_b0", "kwargs": {"batch": 2, "image": 32},
        "threads": 1, "steps": 2, "warmup": 1, "compiled": {"m": str(out)},
        "compare": True, "compare_steps": 2})
    entry = result["compiled"]["m"]
    assert "error" not in entry, entry
    assert entry["compare"]["bitwise"], entry["compare"]["problems"]
    predicted = sig["planned"]["predicted_peak_bytes"]
    measured = entry["measure"]["peak_bytes"]
    print(f"efficientnet_b0 plan: predicted {predicted} B, "
          f"measured {measured} B")
    assert abs(error(predicted, measured)) <= 0.03
