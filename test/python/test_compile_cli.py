"""End-to-end tests of `memopt-compile` (docs/compile.md).

The compiled .pt loads with torch.jit.load once the runtime is loaded and
trains like the source; the report has its keys; every bad input exits 1
with exactly one `memopt: error:` line and leaves outputs untouched; and a
scripted resnet18 compiles in about a second.

Tests that need the planning pipeline (`memopt-pipeline`) are skipped, with
the tool's own message, in a build that does not register it yet.
"""
import json
import os
import pathlib
import subprocess
import sys
import time
import zipfile

import pytest
import torch

from conftest import REPO, runtime_library_path, tool_path, \
    zip_record_data_offset

INPUTS = REPO / "test" / "Compile" / "Inputs"
CHAIN = INPUTS / "chain_cnn.pt"
SPIKING = INPUTS / "spiking_cnn.pt"
TWO_INPUTS = INPUTS / "two_inputs.pt"
NOT_REGISTERED = "is not registered in this build"
# Regions may read a conv's Optional[Tensor] bias (the stems of the test
# models): no module needs keeping out of regions.
CHAIN_WORKAROUND: list = []
SPIKING_WORKAROUND: list = []


def compile_tool() -> pathlib.Path:
    tool = tool_path("memopt-compile")
    if not tool.exists():
        pytest.fail(f"memopt-compile not built: {tool}")
    return tool


def run(*args, timeout=300):
    return subprocess.run([str(compile_tool()), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def assert_one_error_line(result, expected=""):
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line, got:\n{result.stderr}"
    assert lines[0].startswith("memopt: error: "), lines[0]
    assert expected in lines[0], lines[0]


def require_planning(result):
    """Skips when this build has no planning pipeline yet."""
    if result.returncode != 0 and NOT_REGISTERED in result.stderr:
        pytest.skip(result.stderr.strip())


# ---------------------------------------------------------------------------
# Loading and training the written module
# ---------------------------------------------------------------------------

_TRAIN_SCRIPT = r"""
import sys, torch
torch._C._set_graph_executor_optimize(False)
torch.ops.load_library(sys.argv[1])
src = torch.jit.load(sys.argv[2])
out = torch.jit.load(sys.argv[3])
shape = [int(d) for d in sys.argv[4].split("x")]
assert list(dict(src.state_dict()).keys()) == list(dict(out.state_dict()).keys())
x = torch.randn(*shape, generator=torch.Generator().manual_seed(3))
grads = []
for model in (src, out):
    model.train()
    torch.manual_seed(0)
    loss = model(x).square().sum()
    loss.backward()
    grads.append([None if p.grad is None else p.grad.clone()
                  for p in model.parameters()])
    print(float(loss))
for a, b in zip(*grads):
    assert (a is None) == (b is None)
    if a is not None:
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (a - b).abs().max()
print("ok")
"""


def train_and_compare(source, compiled, shape):
    """Trains one step of `source` and `compiled` in a fresh process (with
    the profiling executor off, as the round-trip tests do) and checks that
    the parameter gradients match."""
    result = subprocess.run(
        [sys.executable, "-c", _TRAIN_SCRIPT, str(runtime_library_path()),
         str(source), str(compiled), shape],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("ok"), result.stdout


def test_passthrough_pt_loads_and_trains(tmp_path, runtime):
    out = tmp_path / "chain.memopt.pt"
    result = run(CHAIN, "--passthrough-spec", "x:2x3x8x8", "-o", out)
    assert result.returncode == 0, result.stderr
    assert out.exists()
    model = torch.jit.load(str(out))
    y = model(torch.randn(2, 3, 8, 8))
    assert y.shape == (2, 10)
    y.sum().backward()
    train_and_compare(CHAIN, out, "2x3x8x8")


def test_analyze_only_with_output_writes_unplanned_model(tmp_path, runtime):
    out = tmp_path / "analyzed.pt"
    result = run(SPIKING, "--input-shape", "x:2x2x3x8x8", "--analyze-only",
                 "-o", out)
    assert result.returncode == 0, result.stderr
    train_and_compare(SPIKING, out, "2x2x3x8x8")


def test_planned_pt_loads_and_trains(tmp_path, runtime):
    out = tmp_path / "chain.memopt.pt"
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:4x3x16x16", "-o", out,
                 "--budget", "60%", "--allow-over-budget", "--report", report,
                 *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["planned"]["predicted_peak_bytes"] <= \
        data["baseline"]["predicted_peak_bytes"]
    train_and_compare(CHAIN, out, "4x3x16x16")


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------

SIGNATURE_KEYS = {
    "function", "signature", "count", "passthrough", "baseline", "planned",
    "budget_bytes", "feasible", "min_reachable_peak_bytes",
    "planner_peak_bytes", "preference", "regions", "compressed", "offloaded",
    "backward_kernels",
    "recompute_seconds", "step_seconds", "recompute_overhead", "unknown_ops",
    "recommendation"}
TOP_KEYS = {"version", "pytorch_version", "kernel_probe", "device_kernel_marks",
            "cost_model",
            "model", "output",
            "command", "mode", "options", "fallback", "signatures",
            "forward_check", "timings"} | SIGNATURE_KEYS


def test_analyze_only_report(tmp_path):
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "--analyze-only",
                 "--budget", "800MB", "--report", report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert set(data) == TOP_KEYS
    assert data["version"] == 1
    assert data["mode"] == "analyze-only"
    assert data["model"] == str(CHAIN)
    assert data["output"] is None
    assert "memopt-compile" in data["command"]
    baseline = data["baseline"]
    assert baseline["predicted_peak_bytes"] > 0
    assert baseline["resident_bytes"] > 0
    assert baseline["peak_at"]["module_path"]
    assert data["budget_bytes"] == 800 * 1000 * 1000
    assert data["planned"] is None and data["feasible"] is None
    assert data["regions"] == [] and data["compressed"] == []
    assert len(data["signatures"]) == 1
    assert set(data["signatures"][0]) == SIGNATURE_KEYS
    assert data["signatures"][0]["baseline"] == baseline
    timings = data["timings"]
    assert set(timings) == {"import_s", "probe_s", "plan_s", "check_s",
                            "export_s", "total_s"}
    assert timings["total_s"] >= timings["import_s"] >= 0
    # The summary on stderr.
    assert "baseline peak" in result.stderr
    assert "recommendation" in result.stderr
    assert "fits the budget" in result.stderr


def test_report_to_stdout(tmp_path):
    result = run(TWO_INPUTS, "--spec", "x:3x8,y:3x4", "--analyze-only",
                 "--report", "-")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["signature"] == "x:3x8,y:3x4"


def test_budget_percentage_resolves_against_baseline(tmp_path):
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "--analyze-only",
                 "--budget", "40%", "--report", report)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["budget_bytes"] == int(data["baseline"]["predicted_peak_bytes"] * 0.4)


@pytest.mark.parametrize("budget, expected", [
    ("123456", 123456), ("800MB", 800 * 10**6), ("1.5GiB", 3 * 2**29),
    ("2kib", 2048), ("64 MiB", 64 * 2**20), ("1e3", None)])
def test_budget_units(tmp_path, budget, expected):
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "--analyze-only",
                 "--budget", budget, "--report", report)
    if expected is None:
        assert_one_error_line(result, f"invalid --budget '{budget}'")
        return
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["budget_bytes"] == expected


def test_planned_report_describes_the_plan(tmp_path):
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:4x3x16x16", "-o",
                 tmp_path / "o.pt", "--budget", "50%", "--allow-over-budget",
                 "--report", report, *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["mode"] == "compile"
    assert data["planned"] is not None
    assert data["budget_bytes"] > 0
    assert isinstance(data["feasible"], bool)
    for region in data["regions"]:
        assert region["label"]
        assert region["saved_bytes_avoided"] >= 0
        assert all(p == "keep" or p.startswith(("compress:", "offload:"))
                   for p in region["input_policies"])
    assert 0 <= data["recompute_overhead"] < 10
    assert "planned peak" in result.stderr
    assert "recommendation" in result.stderr


def test_spiking_compression_is_reported(tmp_path, runtime):
    report = tmp_path / "r.json"
    result = run(SPIKING, "--input-shape", "x:2x2x3x8x8", "-o",
                 tmp_path / "o.pt", "--prefer", "memory", "--report", report,
                 *SPIKING_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["compressed"], "the spikes conv2 saves are provably binary"
    for c in data["compressed"]:
        assert c["kind"] in ("bit", "bool", "uint8", "sparse")
        assert 0 < c["bytes_packed"] <= c["bytes_full"]
    assert f"compressed          {len(data['compressed'])} tensor(s)" in result.stderr
    train_and_compare(SPIKING, tmp_path / "o.pt", "2x2x3x8x8")


# ---------------------------------------------------------------------------
# Several signatures
# ---------------------------------------------------------------------------

_DISPATCH_SCRIPT = r"""
import sys, torch
torch.ops.load_library(sys.argv[1])
model = torch.jit.load(sys.argv[2])
for shape in sys.argv[3:]:
    dims = [int(d) for d in shape.split("x")]
    try:
        y = model(torch.randn(*dims))
        y.sum().backward()
        print(shape, "ok", tuple(y.shape))
    except Exception as error:
        print(shape, "raised", str(error).strip().splitlines()[-1])
"""


def run_shapes(compiled, *shapes):
    result = subprocess.run(
        [sys.executable, "-c", _DISPATCH_SCRIPT, str(runtime_library_path()),
         str(compiled), *shapes], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return dict(line.split(" ", 1) for line in result.stdout.splitlines())


def test_several_signatures_dispatch(tmp_path):
    out = tmp_path / "multi.pt"
    report = tmp_path / "r.json"
    result = run(CHAIN, "--spec", "x:2x3x8x8;count=3", "--spec", "x:4x3x8x8",
                 "--passthrough-spec", "x:1x3x8x8", "-o", out,
                 "--report", report, *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert [s["signature"] for s in data["signatures"]] == \
        ["x:2x3x8x8", "x:4x3x8x8", "x:1x3x8x8"]
    assert data["signature"] == "x:2x3x8x8" and data["count"] == 3
    assert data["signatures"][2]["passthrough"] is True
    assert data["signatures"][2]["planned"] is None
    outcome = run_shapes(out, "2x3x8x8", "4x3x8x8", "1x3x8x8", "3x3x8x8")
    assert all(v.startswith("ok") for v in outcome.values()), outcome


def test_signature_file_and_strict(tmp_path):
    recorded = tmp_path / "rec.json"
    recorded.write_text(json.dumps({"version": 1, "signatures": [
        {"inputs": [{"name": "x", "shape": [2, 3, 8, 8]}], "count": 5},
        {"inputs": [{"name": "x", "shape": [4, 3, 8, 8], "dtype": "f32"}],
         "count": 9}]}))
    out = tmp_path / "strict.pt"
    report = tmp_path / "r.json"
    result = run(CHAIN, "--signatures", recorded, "--strict-signatures",
                 "-o", out, "--report", report, *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["signature"] == "x:4x3x8x8" and data["count"] == 9
    assert data["options"]["strict_signatures"] is True
    outcome = run_shapes(out, "4x3x8x8", "3x3x8x8")
    assert outcome["4x3x8x8"].startswith("ok")
    assert outcome["3x3x8x8"].startswith("raised")
    assert "matches none of the compiled signatures" in outcome["3x3x8x8"]


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    (["{tmp}/missing.pt", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt"],
     "cannot open"),
    (["{tmp}/garbage.pt", "--input-shape", "x:2x3x8x8", "--analyze-only"],
     "not a TorchScript archive"),
    (["{tmp}/truncated.pt", "--input-shape", "x:2x3x8x8", "--analyze-only"],
     "corrupt or truncated zip archive"),
    (["{chain}", "--input-shape", "x:2xAx8", "-o", "{tmp}/o.pt"],
     "invalid input spec 'x:2xAx8'"),
    (["{chain}", "--input-shape", "x:2x3x8", "--analyze-only"],
     "on inputs of the given shapes failed"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--budget", "lots"], "invalid --budget 'lots'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--budget", "-1GB"], "invalid --budget '-1GB'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--prefer", "fast"], "unknown --prefer 'fast'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--fallback", "maybe"], "unknown --fallback 'maybe'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--device", "cuda", "--offload-bandwidth", "0"],
     "--offload-bandwidth must be a positive number of GB/s, got 0"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--device", "cuda", "--offload-d2h-bandwidth", "-2"],
     "--offload-d2h-bandwidth must be a positive number of GB/s"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--device", "cuda", "--offload-policy", "disk"],
     "unknown --offload-policy 'disk' (expected host or unified)"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/nodir/o.pt"],
     "does not exist"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}"],
     "it is a directory"),
    (["{chain}", "--input-shape", "x:2x3x8x8"], "no output file"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt", "--frobnicate"],
     "Unknown command line argument '--frobnicate'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--checkpoint", "layers.0;rm"], "invalid module path 'layers.0;rm'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--signatures", "{tmp}/missing.json"], "missing.json"),
    (["{chain}", "--spec", "x:2x3x8x8;budget=lots", "-o", "{tmp}/o.pt"],
     "invalid --budget 'lots'"),
    (["{chain}", "--spec", "x:2x3x8x8", "--spec", "x:2x3x8x8", "-o",
      "{tmp}/o.pt"], "is given twice"),
    (["{chain}", "--input-shape", "y:2x3x8x8", "-o", "{tmp}/o.pt"],
     "input spec 'y' names no input of the method (its inputs: x)"),
    (["{chain}", "--spec", "x:2x3x8x8", "--spec", "img:4x3x8x8", "-o",
      "{tmp}/o.pt"], "input spec 'img' names no input of the method"),
    (["{tmp}/flipped.pt", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt"],
     "does not match its CRC-32"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--world-size", "0"], "--world-size must be between 1 and 1048576, got 0"),
    # Control characters in what a message quotes are escaped: one line,
    # and no forged "memopt: error:" line (the parser fuzzer's finding).
    (["{chain}", "--input-shape", "x:2x3\nx8x8", "-o", "{tmp}/o.pt"],
     "invalid input spec 'x:2x3\\nx8x8'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--budget", "1\n2MB"], "invalid --budget '1\\n2MB'"),
    (["{chain}", "--input-shape", "x:2x3x8x8", "-o", "{tmp}/o.pt",
      "--prefer", "fast\nmemopt: error: forged"],
     "unknown --prefer 'fast\\nmemopt: error: forged'"),
    (["{chain}", "--spec", "x:2x3x8x8;count=3\x01", "-o", "{tmp}/o.pt"],
     "count '3\\x01' is not a non-negative integer"),
    (["{chain}", "-o", "{tmp}/o.pt", "--signatures", "{tmp}/newline.json"],
     "has unknown key 'a\\nb'"),
    # A signature without inputs (the parser fuzzer's): as --spec refuses.
    (["{chain}", "-o", "{tmp}/o.pt", "--signatures", "{tmp}/no_inputs.json"],
     "signatures[0].inputs is empty, expected at least one input"),
])
def test_bad_input_is_one_line(tmp_path, args, expected):
    (tmp_path / "garbage.pt").write_text("not a zip\n")
    (tmp_path / "no_inputs.json").write_text(json.dumps({
        "version": 1, "signatures": [{"inputs": [], "count": 3}]}))
    (tmp_path / "newline.json").write_text(json.dumps({
        "version": 1, "signatures": [{"inputs": [], "a\nb": 1}]}))
    (tmp_path / "truncated.pt").write_bytes(CHAIN.read_bytes()[:3000])
    flipped = bytearray(CHAIN.read_bytes())
    with zipfile.ZipFile(CHAIN) as archive:  # 50 bits in the first weight
        info = next(i for i in archive.infolist()
                    if i.filename.endswith("data/0"))
    start = zip_record_data_offset(flipped, info)
    for i in range(50):
        flipped[start + (i * 13) % info.file_size] ^= 1 << (i % 8)
    (tmp_path / "flipped.pt").write_bytes(bytes(flipped))
    args = [a.format(tmp=tmp_path, chain=CHAIN) for a in args]
    result = run(*args)
    assert_one_error_line(result, expected)
    assert not (tmp_path / "o.pt").exists()


def test_small_offload_bandwidth_reaches_the_planner(tmp_path):
    """The validated --offload-bandwidth reaches the passes with every
    digit: 0.004 GB/s once arrived as "0.00" and was refused as zero."""
    out = tmp_path / "o.pt"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "-o", out,
                 "--device", "cuda", "--offload-bandwidth", "0.004")
    require_planning(result)
    assert result.returncode == 0, result.stderr
    assert out.exists()


def test_unknown_checkpoint_path_is_one_line(tmp_path):
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "-o", tmp_path / "o.pt",
                 "--checkpoint", "no.such.module")
    require_planning(result)
    assert_one_error_line(result, "no.such.module")


def test_infeasible_budget_fails_or_reports(tmp_path):
    out = tmp_path / "o.pt"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "-o", out,
                 "--budget", "1B")
    require_planning(result)
    assert_one_error_line(result)
    assert not out.exists()
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "-o", out,
                 "--budget", "1B", "--allow-over-budget", "--report", report,
                 *CHAIN_WORKAROUND)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    assert data["feasible"] is False
    assert data["min_reachable_peak_bytes"] > 1
    assert "budget infeasible" in result.stderr
    assert out.exists()


def test_failure_keeps_existing_output(tmp_path):
    out = tmp_path / "o.pt"
    out.write_bytes(b"previous build")
    result = run(CHAIN, "--input-shape", "x:2x3x8", "-o", out,
                 "--passthrough-spec", "x:2x3x8x8")
    assert result.returncode == 1
    assert out.read_bytes() == b"previous build"


def test_help_lists_the_options():
    result = run("--help")
    assert result.returncode == 0
    for option in ("--budget", "--prefer", "--device", "--checkpoint",
                   "--no-checkpoint", "--assume-binary", "--analyze-only",
                   "--report", "--emit-mlir", "--allow-over-budget",
                   "--timeline", "--spec", "--signatures",
                   "--strict-signatures", "--fallback", "--passthrough-spec",
                   "--input-shape", "--no-check-forward", "--cost-model"):
        assert option in result.stdout, option


# ---------------------------------------------------------------------------
# The forward check: what is written has run once
# ---------------------------------------------------------------------------

def test_forward_check_runs_every_signature(tmp_path):
    out = tmp_path / "multi.pt"
    report = tmp_path / "r.json"
    result = run(CHAIN, "--spec", "x:2x3x8x8", "--spec", "x:4x3x8x8",
                 "-o", out, "--report", report, *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    data = json.loads(report.read_text())
    # Two signatures through the dispatcher, and the generic fallback.
    assert data["forward_check"] == {"compared": 3, "not_compared": []}
    assert data["timings"]["check_s"] > 0
    assert "forward check: 3 calls of the compiled module matched the " \
        "source's outputs bit for bit" in result.stderr


def test_forward_check_is_skipped_for_cuda_plans(tmp_path):
    report = tmp_path / "r.json"
    result = run(CHAIN, "--input-shape", "x:2x3x8x8", "--device", "cuda",
                 "-o", tmp_path / "cuda.pt", "--report", report,
                 *CHAIN_WORKAROUND)
    require_planning(result)
    assert result.returncode == 0, result.stderr
    check = json.loads(report.read_text())["forward_check"]
    assert check["compared"] == 0
    assert check["not_compared"] == [
        "a CUDA plan runs on the GPU (scripts/gpu-check.sh runs it there)"]


def test_forward_check_needs_the_runtime_library(tmp_path):
    """A memopt-compile with no runtime beside it refuses to write an
    unchecked module unless told to; MEMOPT_RUNTIME_LIB points it at one."""
    bin_dir = tmp_path / "prefix" / "bin"
    bin_dir.mkdir(parents=True)
    tool = bin_dir / "memopt-compile"
    tool.write_bytes(compile_tool().read_bytes())
    tool.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MEMOPT_RUNTIME_LIB"}
    out = tmp_path / "chain.pt"
    report = tmp_path / "r.json"
    args = [str(tool), str(CHAIN), "--input-shape", "x:2x3x8x8", "-o",
            str(out), "--report", str(report), *CHAIN_WORKAROUND]
    result = subprocess.run(args, capture_output=True, text=True, env=env,
                            timeout=300)
    require_planning(result)
    assert_one_error_line(
        result, "cannot run the compiled model before writing it: "
        "libmemopt_runtime.so not found (looked at "
        f"{tmp_path / 'prefix' / 'lib' / 'libmemopt_runtime.so'}")
    assert "--no-check-forward writes it unchecked" in result.stderr
    assert not out.exists()

    result = subprocess.run(args + ["--no-check-forward"], capture_output=True,
                            text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["forward_check"] is None
    assert "forward check" not in result.stderr

    env["MEMOPT_RUNTIME_LIB"] = str(runtime_library_path())
    result = subprocess.run(args, capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["forward_check"]["compared"] == 1


# ---------------------------------------------------------------------------
# Time on a zoo model
# ---------------------------------------------------------------------------

def test_resnet18_compile_time(tmp_path, runtime):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    source = tmp_path / "resnet18.pt"
    torch.jit.script(model).save(str(source))
    out = tmp_path / "resnet18.memopt.pt"
    report = tmp_path / "r.json"
    args = [source, "--input-shape", "x:2x3x32x32", "-o", out,
            "--prefer", "balanced", "--report", report]
    result = run(*args)
    if result.returncode != 0 and NOT_REGISTERED in result.stderr:
        args = [source, "--passthrough-spec", "x:2x3x32x32", "-o", out,
                "--report", report]
    best_wall, best_total = None, None
    for _ in range(3):  # a shared machine: keep the best of three
        start = time.perf_counter()
        result = run(*args)
        wall = time.perf_counter() - start
        assert result.returncode == 0, result.stderr
        total = json.loads(report.read_text())["timings"]["total_s"]
        best_wall = wall if best_wall is None else min(best_wall, wall)
        best_total = total if best_total is None else min(best_total, total)
    timings = json.loads(report.read_text())["timings"]
    print(f"\nmemopt-compile resnet18 ({' '.join(map(str, args[1:3]))}): "
          f"in-process {best_total:.3f} s {timings}, wall {best_wall:.3f} s")
    # import + plan + export; process start-up (LibTorch) is extra. The goal
    # is under 1 s (measured ~0.5-0.8 s on the shared 2-core machine); the
    # bound leaves room for a machine busy with other builds.
    assert best_total < 2.0, timings
    assert torch.jit.load(str(out)) is not None


def test_inputs_are_named_as_forward_parameters(tmp_path):
    """Input specs name forward's parameters, whatever the graph calls its
    inputs after inlining: torchvision's GoogLeNet calls _transform_input(x)
    and its graph input came out as 'x0', so `x:...` was refused."""
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.googlenet(num_classes=10, aux_logits=False,
                                         init_weights=False)
    path = tmp_path / "googlenet.pt"
    torch.jit.script(model).save(str(path))
    result = run(path, "--input-shape", "x:1x3x64x64", "--analyze-only")
    assert result.returncode == 0, result.stderr
    wrong = run(path, "--input-shape", "img:1x3x64x64", "--analyze-only")
    assert_one_error_line(wrong, "input spec 'img' names no input of the "
                          "method (its inputs: x)")
