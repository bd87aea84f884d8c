"""`bench/coverage.py --compile-only` (docs/coverage.md, "Compile time of
every classifier"): each row stops after the two compiles, keeps the
report's phases and the wall time from outside, and the table says where
the memory compile's seconds go. Run on two small classifiers."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, REPO

torchvision = pytest.importorskip("torchvision")

PHASES = ("import_s", "probe_s", "plan_s", "check_s", "export_s", "total_s")


def test_compile_only_rows_and_table(tmp_path):
    rows_path = tmp_path / "co.json"
    env = dict(os.environ, MEMOPT_BUILD_DIR=str(BUILD))
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "coverage.py"),
         "--compile-only", "--models", "squeezenet1_1,resnet18",
         "--json", str(rows_path)],
        capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(rows_path.read_text())
    assert [r["model"] for r in rows] == ["squeezenet1_1", "resnet18"]
    for row in rows:
        assert "eager" not in row  # nothing trained
        assert row["source_bytes"] > 1e6  # the scripted weights
        for prefer in ("memory", "balanced"):
            timings = row[prefer]["timings"]
            assert all(timings[k] >= 0 for k in PHASES), timings
            # The phases add up to no more than the process's own total,
            # which is less than the wall time seen from outside.
            parts = sum(timings[k] for k in PHASES if k != "total_s")
            assert parts <= timings["total_s"] * 1.01 + 0.01, timings
            assert timings["total_s"] < row[prefer]["compile_s"]
    table = done.stdout
    for row in rows:
        line = next(l for l in table.splitlines()
                    if l.startswith(f"| {row['model']} |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert len(cells) == 9, line
        assert float(cells[-1]) == pytest.approx(
            row["memory"]["compile_s"], abs=0.006)
    assert "- 2 models; 2 compile" in table
    # The saved rows print the same table again.
    again = subprocess.run(
        [sys.executable, str(REPO / "bench" / "coverage.py"),
         "--from-json", str(rows_path)],
        capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout.strip() in table


def test_a_row_compiles_only_when_both_preferences_do(tmp_path):
    """memory compiled, balanced refused: the row is its error, not a
    compiled row, and the count says so."""
    timings = {k: 0.1 for k in PHASES}
    rows = [
        {"model": "ok", "source_bytes": 2e6,
         "memory": {"compile_s": 1.5, "timings": timings},
         "balanced": {"compile_s": 1.4, "timings": timings}},
        {"model": "half", "compile_error": "memopt: error: no plan",
         "memory": {"compile_s": 0.5, "timings": timings}},
        {"model": "unscriptable", "script_error": "cannot script"},
    ]
    rows_path = tmp_path / "rows.json"
    rows_path.write_text(json.dumps(rows))
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "coverage.py"),
         "--from-json", str(rows_path)],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    table = done.stdout
    assert "| half | memopt: error: no plan |" in table
    assert "| unscriptable | cannot script |" in table
    assert "- 3 models; 1 compile" in table
    assert "median 1.50 s, max 1.50 s" in table
    assert "over 1 s (wall, from outside): ok (1.50 s)" in table
