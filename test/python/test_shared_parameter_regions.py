"""A parameter used at several places sums its gradient as eager does.

A parametric-LIF neuron reads its learnable decay at every time step;
autograd adds the steps' gradients one by one. A checkpoint region returns
the sum of its own uses' gradients at once, so a region holding some of the
steps but not all would add them in another order (other bits): the
planner never makes one (ChainPlanner's parameter uses, PlanApplier's
check). At this size `--prefer memory` used to place such a region (the
steps of `lifs.1` split 5 / 3) and training was not bitwise.
"""
import sys

import pytest

from conftest import REPO, BUILD

sys.path.insert(0, str(REPO / "python"))

from memopt import measure  # noqa: E402

KWARGS = dict(neuron="plif", surrogate="atan", reset="hard",
              detach_reset=True, decay_input=True, steps=8, size=32)


@pytest.mark.parametrize("prefer", ["memory", "balanced"])
def test_plif_plans_train_bitwise(tmp_path, prefer):
    if not (BUILD / "bin" / "memopt-compile").exists():
        pytest.fail(f"memopt-compile not built in {BUILD}")
    pt = tmp_path / "plif.pt"
    shapes = measure.save_zoo_model("spiking_family", KWARGS, pt)
    out = tmp_path / f"plif.{prefer}.pt"
    report = measure.compile_model(pt, out, shapes, ["--prefer", prefer])
    assert report["signatures"][0]["regions"], "no region planned"
    result = measure.run_worker({
        "zoo": "spiking_family", "kwargs": KWARGS, "threads": 1,
        "steps": 1, "warmup": 1, "compiled": {prefer: str(out)},
        "compare": True, "compare_steps": 2, "measure": False})
    entry = result["compiled"][prefer]
    assert "error" not in entry, entry
    assert entry["compare"]["bitwise"], entry["compare"]["problems"]
