"""A cost-model fit of the machine that trains (`--cost-model FILE`,
`memopt.wrap(..., cost_model=FILE)`; docs/analyses.md, "A machine's own
fit").

Plans depend on the ratios between the cost classes' prices, and those
differ between machines by up to 2.5x (docs/analyses.md): the built-in fit
is one machine's. What the calibration writes on the machine that trains is
what memopt-compile reads; the report names the file and its coefficients;
a fit that prices everything 1000x dearer keeps the plan and scales its
seconds; a fit that makes convolutions dearer moves the regions off them;
a damaged fit is one line and exit 1, with nothing written.
"""
import json
import re
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn as nn

from conftest import REPO, tool_path

sys.path.insert(0, str(REPO / "python"))
import memopt  # noqa: E402

CHAIN = REPO / "test" / "Compile" / "Inputs" / "chain_cnn.pt"
BUILTIN = REPO / "lib" / "Analysis" / "CostCoefficients.def"
LINE = re.compile(r"^MEMOPT_COST_CLASS\((\w+), ([^,]+), ([^,]+), ([^)]+)\)$",
                  re.M)
CLASSES = 14


def builtin_fit():
    return {m.group(1): [float(v) for v in m.groups()[1:]]
            for m in LINE.finditer(BUILTIN.read_text())}


def write_fit(path, scale):
    """The built-in fit with each class's coefficients times scale(class)."""
    path.write_text("// scaled from the built-in fit\n" + "".join(
        f"MEMOPT_COST_CLASS({name}, "
        + ", ".join(f"{v * scale(name):.4e}" for v in values) + ")\n"
        for name, values in builtin_fit().items()))
    return path


def compile_chain(tmp_path, name, *args):
    out, report = tmp_path / f"{name}.pt", tmp_path / f"{name}.json"
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(CHAIN), "--input-shape",
         "x:4x3x16x16", "--prefer", "balanced", "-o", str(out), "--report",
         str(report), *map(str, args)],
        capture_output=True, text=True, timeout=300)
    return result, out, report


def planned(tmp_path, name, *args):
    result, _, report = compile_chain(tmp_path, name, *args)
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text())


def regions(report):
    return [r["label"] for r in report["regions"]]


def test_the_calibration_writes_what_the_compiler_reads(tmp_path):
    fit = tmp_path / "this-machine.def"
    calibration = subprocess.run(
        [sys.executable, str(REPO / "bench" / "cost_model_calibration.py"),
         "--build", str(tool_path("memopt-opt").parents[1]), "--runs", "1",
         "--threads", "1", "--write", str(fit)],
        capture_output=True, text=True, timeout=600)
    assert calibration.returncode == 0, calibration.stderr
    written = {m.group(1): [float(v) for v in m.groups()[1:]]
               for m in LINE.finditer(fit.read_text())}
    assert len(written) == CLASSES
    report = planned(tmp_path, "fitted", "--cost-model", fit)
    assert report["cost_model"]["file"] == str(fit.resolve())
    classes = report["cost_model"]["classes"]
    assert set(classes) == set(written)
    for name, values in written.items():
        assert classes[name] == pytest.approx(values, rel=1e-12), name
    assert report["recompute_seconds"] > 0


def test_the_builtin_fit_read_as_a_file_plans_the_same(tmp_path):
    builtin = planned(tmp_path, "builtin")
    assert builtin["cost_model"] is None
    read = planned(tmp_path, "read", "--cost-model", BUILTIN)
    assert len(read["cost_model"]["classes"]) == CLASSES
    assert regions(read) == regions(builtin)
    assert read["planned"] == builtin["planned"]
    assert read["step_seconds"] == builtin["step_seconds"]
    assert read["recompute_seconds"] == builtin["recompute_seconds"]


def test_prices_scale_seconds_and_their_ratios_move_the_plan(tmp_path):
    builtin = planned(tmp_path, "builtin")
    assert regions(builtin), "the balanced plan recomputes something"
    # Every class 1000x dearer: the same plan, its seconds 1000x.
    dearer = planned(tmp_path, "dearer", "--cost-model",
                     write_fit(tmp_path / "x1000.def", lambda _: 1000))
    assert regions(dearer) == regions(builtin)
    assert dearer["planned"]["predicted_peak_bytes"] == \
        builtin["planned"]["predicted_peak_bytes"]
    assert dearer["step_seconds"] == pytest.approx(
        1000 * builtin["step_seconds"], rel=1e-3)
    assert dearer["recompute_seconds"] == pytest.approx(
        1000 * builtin["recompute_seconds"], rel=1e-3)
    # Convolutions 10^4x dearer than the rest: recompute leaves the stem's
    # convolutions for a cheaper region.
    conv = planned(tmp_path, "conv", "--cost-model",
                   write_fit(tmp_path / "conv.def",
                             lambda c: 1e4 if c == "Conv" else 1))
    assert regions(conv) != regions(builtin)
    assert conv["recompute_overhead"] <= builtin["recompute_overhead"] * 1.5


@pytest.mark.parametrize("text, expected", [
    ("MEMOPT_COST_CLASS(Conv, 1e-12, 0, 0)\nMEMOPT_COST_CLASS(Conv, 1e-12, "
     "0, 0)\n", "fit.def:2: cost class 'Conv' given twice"),
    ("MEMOPT_COST_CLASS(Conv, 1e-12, -3, 0)\n",
     "fit.def:1: '-3' (secondsPerByte of Conv) is not a finite non-negative"),
    ("MEMOPT_COST_CLASS(Convolution, 1e-12, 0, 0)\n",
     "fit.def:1: unknown cost class 'Convolution'"),
    ("MEMOPT_COST_CLASS(Conv, 1e-12, 0, 0\n", "fit.def:1: expected "
     "'MEMOPT_COST_CLASS(class, secondsPerFlop, secondsPerByte, "
     "overheadSeconds)'"),
    ("", "fit.def: no MEMOPT_COST_CLASS line"),
    (None, "cannot read cost model"),
])
def test_a_damaged_fit_is_one_line_and_writes_nothing(tmp_path, text,
                                                      expected):
    fit = tmp_path / "fit.def"
    if text is not None:
        fit.write_text(text)
    result, out, report = compile_chain(tmp_path, "o", "--cost-model", fit)
    assert result.returncode == 1, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memopt: error: "), \
        result.stderr
    assert expected in lines[0], lines[0]
    assert not out.exists() and not report.exists()


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.layers(x).mean((2, 3)))


def test_wrap_plans_with_the_fit_and_keys_its_cache_on_it(tmp_path):
    torch.manual_seed(0)
    model = ConvNet().train()
    x = torch.randn(2, 3, 16, 16)
    cache = tmp_path / "cache"
    fit = write_fit(tmp_path / "fit.def", lambda _: 1000)
    wrapped = memopt.wrap(model, x, prefer="memory", cache_dir=cache,
                          verbose=False, cost_model=fit)
    report = memopt.summary(wrapped).report
    assert report["cost_model"]["file"] == str(fit.resolve())
    assert "--cost-model" in report["command"]
    wrapped(x).sum().backward()
    entries = {p.name for p in cache.iterdir() if not p.name.startswith(".")}
    # The same file: the cached plan. Its contents changed: a new plan.
    memopt.wrap(memopt.detach(wrapped), x, prefer="memory", cache_dir=cache,
                verbose=False, cost_model=fit)
    assert {p.name for p in cache.iterdir()
            if not p.name.startswith(".")} == entries
    write_fit(fit, lambda _: 10)
    memopt.wrap(memopt.detach(wrapped), x, prefer="memory", cache_dir=cache,
                verbose=False, cost_model=fit)
    assert len({p.name for p in cache.iterdir()
                if not p.name.startswith(".")}) == len(entries) + 1


@pytest.mark.parametrize("value, error, expected", [
    ("/nonexistent/fit.def", memopt.InputError,
     "cost_model '/nonexistent/fit.def' is not a file"),
    (3, memopt.InputError, "cost_model is an int"),
    ("{damaged}", memopt.CompileError, "fit.def:1: expected"),
])
def test_wrap_reports_a_bad_fit_in_one_line(tmp_path, value, error,
                                            expected):
    damaged = tmp_path / "fit.def"
    damaged.write_text("Conv = 1e-12\n")
    if isinstance(value, str):
        value = value.format(damaged=damaged)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as excinfo:
            memopt.wrap(ConvNet().train(), torch.randn(2, 3, 16, 16),
                        cache_dir=tmp_path / "cache", verbose=False,
                        cost_model=value)
    text = str(excinfo.value)
    assert "\n" not in text and expected in text, text


@pytest.mark.parametrize("fit", sorted((REPO / "bench" / "fits").glob(
    "*.def")), ids=lambda p: p.stem)
def test_the_recorded_fits_are_readable_and_whole(tmp_path, fit):
    """Earlier machines' fits, kept to compare plans with (docs/analyses.md):
    each names all the classes and plans chain_cnn."""
    report = planned(tmp_path, fit.stem, "--cost-model", fit)
    assert len(report["cost_model"]["classes"]) == CLASSES
    assert report["planned"]["predicted_peak_bytes"] < \
        report["baseline"]["predicted_peak_bytes"]
