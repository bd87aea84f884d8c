"""`--prefer` picks the least predicted peak whose predicted extra time is
within the preference's allowance (speed 5 %, balanced 12 %, memory 25 % of
the step). A budget plan just below the preference plan's peak must then not
fit the same allowance: if it does, the preference search missed a plan
that is lower and within it. The U-Net family once got 5.49 MiB at +24 %
with `--prefer memory` while `--budget` found 5.21 MiB at +22 %: the search
spent its tries on several candidates of one peak level (now one try per
level). Under PyTorch 2.6 with two intra-op threads its `--prefer memory`
plan ended at 6425632 bytes at +22 % while `--budget` found 6417456 bytes
at +24 %, reached from the least-peak plan with nested regions (now tried
for preferences too). Checked on models of different shapes; all from the
planner's predictions (no training). Plans lower by less than 1/256 of the
peak are not looked for (below).
"""
import pytest

from conftest import REPO, compile_with_report

import sys
sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402

ALLOWANCE = {"speed": 0.05, "balanced": 0.12, "memory": 0.25}
MODELS = [
    ("unet", "unet", dict(batch=2, image=64)),
    ("gpt_decoder", "gpt_decoder", dict(batch=2, seq=64, layers=4)),
    ("spiking_vgg", "spiking_vgg", dict(batch=2, size=32)),
]


def compile_plan(source, specs, tmp_path, args):
    _, report = compile_with_report(source, specs, tmp_path, args)
    return None if report is None else report["signatures"][0]


@pytest.mark.parametrize("label,zoo,kwargs", MODELS, ids=[m[0] for m in MODELS])
@pytest.mark.parametrize("prefer", ["balanced", "memory"])
def test_no_lower_plan_within_the_allowance(tmp_path, label, zoo, kwargs,
                                            prefer):
    source = tmp_path / "model.pt"
    try:
        specs = measure.save_zoo_model(zoo, kwargs, source)
    except RuntimeError as e:  # a family this PyTorch cannot build
        pytest.skip(str(e))
    chosen = compile_plan(source, specs, tmp_path, ["--prefer", prefer])
    assert chosen is not None
    peak = chosen["planned"]["predicted_peak_bytes"]
    step = chosen["step_seconds"]
    assert chosen["recompute_seconds"] <= ALLOWANCE[prefer] * step * 1.0001
    # Lower by more than 1/256: a budget below every candidate nests
    # regions without a time limit and then drops the regions the final
    # peak does not need, which a preference cannot afford to try (its
    # nesting stays within the allowance). On PyTorch 2.6 the GPT decoder's
    # `--prefer balanced` plan (4755456 bytes) is 1 KiB above what
    # `--budget` finds at the same time that way.
    lower = compile_plan(source, specs, tmp_path,
                         ["--budget", str(peak - peak // 256 - 1)])
    if lower is None:
        return  # nothing lower exists
    assert lower["planned"]["predicted_peak_bytes"] < peak
    # A lower plan exists; it must cost more than the preference allows.
    assert lower["recompute_seconds"] > ALLOWANCE[prefer] * step, (
        f"--prefer {prefer}: {peak} bytes at "
        f"{chosen['recompute_seconds']:.4g} s, but --budget finds "
        f"{lower['planned']['predicted_peak_bytes']} bytes at "
        f"{lower['recompute_seconds']:.4g} s of {step:.4g}")
