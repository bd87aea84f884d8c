"""Offload planned jointly with recompute (issue 23): on the chain of
test/Transforms/pipeline.mlir (twelve linear + tanh blocks of 1 MiB
activations), the largest budget that recompute alone meets only beyond
1.25x the step time is met within 1.25x by a CUDA plan that offloads
region inputs;
the copy bandwidth is a parameter, and a slower link makes the plan spend
more predicted time on the same budget. All from the planner's prediction
(no GPU).
"""
import re
import subprocess

import pytest

from conftest import REPO, tool_path

CHAIN = REPO / "test" / "Transforms" / "pipeline.mlir"
ALLOWANCE = 1.25  # issue 23: at most 1.25x the step time


def plan(budget, device, bandwidth=None):
    """The @chain function's memopt.plan numbers and its region policies,
    or None when the budget is infeasible."""
    options = f"budget={budget} device={device}"
    if bandwidth is not None:
        options += f" offload-bandwidth={bandwidth}"
    result = subprocess.run(
        [str(tool_path("memopt-opt")), str(CHAIN),
         f"--memopt-pipeline={options}"], capture_output=True, text=True)
    if result.returncode != 0:
        assert "is infeasible for @chain" in result.stderr, result.stderr
        return None
    text = result.stdout
    chain = text[text.index("func.func @chain"):text.index("func.func @spiking")]
    summary = re.search(r"memopt\.plan = #memopt\.plan<([^>]*)>",
                        chain[:chain.index("{\n")]).group(1)
    numbers = {key: float(value) for key, value in re.findall(
        r"(\w+) = ([0-9.eE+-]+)(?=,|$)", summary)}
    numbers["feasible"] = "feasible = true" in summary
    # The side stream's schedule: what backward waits for the copies.
    schedule = re.search(r"memopt\.prefetch_schedule = #memopt\.prefetch<([^>]*)>",
                         chain[:chain.index("{\n")])
    numbers["schedule"] = {key: float(value) for key, value in re.findall(
        r"(\w+) = ([0-9.eE+-]+)(?=,|$)", schedule.group(1))} if schedule else {}
    numbers["policies"] = re.findall(r"policies \[([^\]]*)\]", chain)
    return numbers


def step_ratio(numbers):
    return 1 + numbers["recompute_seconds"] / numbers["step_seconds"]


def tightest_budget_recompute_cannot_meet():
    """The largest budget (in 5 % steps of the baseline) that recompute
    alone meets only beyond the allowance, or not at all: where it stops
    depends on the calibrated cost model, not on this test."""
    for percent in range(80, 25, -5):
        cpu = plan(f"{percent}%", "cpu")
        if cpu is None or step_ratio(cpu) > ALLOWANCE:
            return f"{percent}%", cpu
    pytest.fail("recompute alone meets every budget down to 30 % within "
                f"{ALLOWANCE}x: the chain no longer tests offload")


def test_offload_meets_what_recompute_alone_cannot():
    budget, cpu = tightest_budget_recompute_cannot_meet()
    cuda = plan(budget, "cuda")
    # Recompute alone: over the allowance, or no plan at all.
    assert cpu is None or step_ratio(cpu) > ALLOWANCE, cpu
    assert cpu is None or not any("offload" in p for p in cpu["policies"])
    # With offload: the budget met, within the allowance, inputs offloaded.
    assert cuda is not None and cuda["feasible"], cuda
    assert cuda["planned_peak_bytes"] <= cuda["budget_bytes"], cuda
    assert step_ratio(cuda) <= ALLOWANCE, cuda
    assert any("offload<host>" in p for p in cuda["policies"]), cuda
    # Still within it with the waits the copy schedule predicts added (the
    # plan's time already charges half of each copy: this counts them twice).
    schedule = cuda["schedule"]
    assert schedule["offloaded_regions"] >= 1, cuda
    assert schedule["predicted_peak_bytes"] <= cuda["budget_bytes"], cuda
    with_waits = 1 + ((cuda["recompute_seconds"] + schedule["stall_seconds"]) /
                      cuda["step_seconds"])
    assert with_waits <= ALLOWANCE, cuda


def test_slower_link_costs_more_predicted_time():
    fast, slow = plan("50%", "cuda", 55), plan("50%", "cuda", 5)
    assert fast["planned_peak_bytes"] <= fast["budget_bytes"]
    assert slow["planned_peak_bytes"] <= slow["budget_bytes"]
    assert slow["recompute_seconds"] > fast["recompute_seconds"], (fast, slow)
