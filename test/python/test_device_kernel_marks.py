"""Convolution workspaces of a GPU, measured on the GPU.

cuDNN picks a convolution's algorithm, and so its buffers, on the device;
the compiling machine can neither run it nor derive it. The CPU formulas
(oneDNN's) priced CUDA plans' convolutions until now, which is wrong for a
GPU. Now:

  * a CUDA plan counts no CPU kernel's buffers (convolutions, batch norm):
    only its results, gradients and what a marks file measured;
  * `--kernel-requests R` writes every convolution call a CUDA model makes
    (one JSON line per distinct call, the gradient masks it needs);
  * `bench/cuda_kernel_probe.py R --out M` runs them where the GPU is; run
    here with `--device cpu` (memopt's counting allocator) it measures the
    same bytes as the compiler's own CPU probe, call for call, which checks
    that it runs each call as the compiler means it;
  * `--kernel-marks M` puts those marks on the convolutions, and the
    prediction follows them exactly; a call the file lacks is requested;
  * a file of another device, of several, damaged, or missing: one line,
    exit 1; the options with --device cpu: one line, exit 1;
  * memopt.wrap on a GPU does it itself (memopt.kernel_marks.WrapMarks):
    the calls a compile lacks are measured in a fresh process on that GPU,
    kept per GPU in the cache folder, and the model compiled again with
    them. Here, without a GPU: the measuring process on the CPU, and the
    compile-measure-compile sequence with marks written by a stand-in.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from conftest import REPO, tool_path
from test_kernel_probe import MODELS, shape_spec

sys.path.insert(0, str(REPO / "python"))
from memopt import kernel_marks  # noqa: E402
from memopt.compiler import Compiler  # noqa: E402
from memopt.flags import flags_of  # noqa: E402
from memopt.options import make_options  # noqa: E402
from memopt.runtime import load_runtime  # noqa: E402
from memopt.signatures import collect_signatures  # noqa: E402

PROBE = REPO / "bench" / "cuda_kernel_probe.py"
NAMES = ["convs2d", "convs1d", "convs3d", "unet", "channels_last", "listed"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("marks")
    paths = {}
    for name in NAMES:
        cls, _ = MODELS[name]
        torch.manual_seed(0)
        paths[name] = folder / f"{name}.pt"
        torch.jit.script(cls()).save(str(paths[name]))
    return paths


def compile_cuda(pt, shape, *extra, check=True):
    report = pt.with_suffix(f".{abs(hash(extra))}.json")
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(pt), "--input-shape",
         shape_spec(shape), "--analyze-only", "--device", "cuda",
         "--grad-buffers", "resident", "--report", str(report),
         "--emit-mlir", "-", *map(str, extra)],
        capture_output=True, text=True)
    if not check:
        return result
    assert result.returncode == 0, result.stderr
    return json.loads(report.read_text()), result.stdout, result.stderr


def peak(report):
    return report["signatures"][0]["baseline"]["predicted_peak_bytes"]


def requests_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_probe(requests, out, device="cpu"):
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    result = subprocess.run(
        [sys.executable, str(PROBE), *map(str, requests), "--out", str(out),
         "--device", device], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    return result


def cpu_probe_marks(pt, shape, cache):
    """The compiler's own CPU probe on one intra-op thread: {key: marks}."""
    env = dict(os.environ, MEMOPT_KERNEL_PROBE_CACHE=str(cache))
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(pt), "--input-shape",
         shape_spec(shape), "--analyze-only", "--intra-op-threads", "1"],
        capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    marks = {}
    for line in cache.read_text().splitlines():
        _, key, numbers = line.split("\t")
        marks[key] = [int(n) for n in numbers.split()]
    return marks


def as_cpu_key(key):
    """A GPU call's key (0 threads) as the CPU probe's on one thread."""
    return re.sub(r":0(:channels_last)?$", r":1\1", key)


@pytest.mark.parametrize("name", NAMES)
def test_script_measures_what_the_compiler_probe_measures(saved, tmp_path,
                                                          name):
    requests = tmp_path / "requests.jsonl"
    report, _, _ = compile_cuda(saved[name], MODELS[name][1],
                                "--kernel-requests", requests)
    marks = report["device_kernel_marks"]
    asked = requests_of(requests)
    assert marks["requested"] == len(asked) >= 1 and marks["skipped"] == 0
    assert marks["applied"] == 0 and marks["file"] is None
    assert all(r["forward"] and r["masks"] for r in asked), asked

    out = tmp_path / "marks.txt"
    run_probe([requests], out)
    compiler = cpu_probe_marks(saved[name], MODELS[name][1],
                               tmp_path / "cache.txt")
    lines = out.read_text().splitlines()
    assert len(lines) == len(asked)
    for line in lines:
        context, key, numbers = line.split("\t")
        assert context.startswith("cpu ")
        script = [int(n) for n in numbers.split()]
        expected = compiler[as_cpu_key(key)]
        # Each mark the request asked for, as the compiler measured it.
        measured = [i for i, v in enumerate(script) if v >= 0]
        assert measured, line
        assert [script[i] for i in measured] == \
            [expected[i] for i in measured], (key, script, expected)


def test_cuda_plans_count_no_cpu_kernel_buffers(saved):
    """Without marks a CUDA convolution's forward peak is its result: the
    CPU probe's formulas (oneDNN's blocked copies) are not a GPU's."""
    _, ir, _ = compile_cuda(saved["convs2d"], MODELS["convs2d"][1])
    assert "high_water" not in ir
    cpu = subprocess.run(
        [str(tool_path("memopt-compile")), str(saved["convs2d"]),
         "--input-shape", shape_spec(MODELS["convs2d"][1]), "--analyze-only",
         "--kernel-workspaces=model", "--grad-buffers", "resident",
         "--timeline"], capture_output=True, text=True)
    assert cpu.returncode == 0, cpu.stderr
    cuda = compile_cuda(saved["convs2d"], MODELS["convs2d"][1], "--timeline")
    # The stem's forward: 2x16x16x16 floats (a block of 512 bytes' multiple).
    result = 2 * 16 * 16 * 16 * 4
    first = re.compile(r"^\s*1 forward\s+(\d+)\s+aten::conv2d\s+stem$", re.M)
    assert int(first.search(cuda[2]).group(1)) == result, cuda[2]
    assert int(first.search(cpu.stderr).group(1)) > result, cpu.stderr


def fake_marks(requests, forward, backward, context="cuda test-device"):
    """A marks file whose every call has the given marks."""
    lines = []
    for r in requests:
        marks = [forward] + [backward if m in r["masks"] else -1
                             for m in range(4)]
        lines.append(f"{context}\t{r['key']}\t" + " ".join(map(str, marks)))
    return "".join(line + "\n" for line in lines)


def test_marks_price_the_convolutions(saved, tmp_path):
    """Marks far above anything else in the model set the peak: the
    forward's result plus the rest, or the backward's mark."""
    name = "convs2d"
    requests = tmp_path / "requests.jsonl"
    plain, _, _ = compile_cuda(saved[name], MODELS[name][1],
                               "--kernel-requests", requests)
    asked = requests_of(requests)
    big = 256 << 20
    marks = tmp_path / "marks.txt"
    marks.write_text(fake_marks(asked, big, 2 * big))
    again = tmp_path / "again.jsonl"
    report, ir, summary = compile_cuda(saved[name], MODELS[name][1],
                                       "--kernel-marks", marks,
                                       "--kernel-requests", again)
    info = report["device_kernel_marks"]
    assert info["applied"] == len(re.findall(r'"aten::conv2d"', ir))
    assert info["requested"] == 0 and not again.exists()
    assert info["context"] == "cuda test-device"
    assert f"{info['applied']} convolutions priced from marks.txt" in summary
    predicted = peak(report)
    # A backward's mark counts above what was live before it.
    assert 2 * big < predicted < 2 * big + peak(plain), (predicted, plain)

    # Marks of the forward only: the backward needs the rest, requested.
    marks.write_text(fake_marks(asked, big, -1))
    report, _, _ = compile_cuda(saved[name], MODELS[name][1],
                                "--kernel-marks", marks,
                                "--kernel-requests", again)
    info = report["device_kernel_marks"]
    assert info["applied"] == 0 and info["requested"] == len(asked)
    again_asked = requests_of(again)
    assert all(not r["forward"] and r["masks"] for r in again_asked)
    assert big < peak(report) < big + peak(plain)


@pytest.mark.parametrize("content,message", [
    ("cuda a\tk\t1 -1 -1 -1 -1\ncuda b\tk\t1 -1 -1 -1 -1\n",
     "more than one device"),
    ("cpu torch=2.6\tk\t1 -1 -1 -1 -1\n", "not on a cuda device"),
    ("cuda a\tk\tone two\n", "line 1 of"),
    ("# nothing measured\n", "holds no marks"),
])
def test_unusable_marks_files_fail_in_one_line(saved, tmp_path, content,
                                               message):
    marks = tmp_path / "marks.txt"
    marks.write_text(content)
    result = compile_cuda(saved["unet"], MODELS["unet"][1], "--kernel-marks",
                          marks, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert message in lines[0], lines


def test_missing_marks_file_and_cpu_device_fail_in_one_line(saved, tmp_path):
    result = compile_cuda(saved["unet"], MODELS["unet"][1], "--kernel-marks",
                          tmp_path / "absent.txt", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1 and len(lines) == 1, result.stderr
    assert "cannot read the kernel marks file" in lines[0]
    for flag in ["--kernel-marks", "--kernel-requests"]:
        result = subprocess.run(
            [str(tool_path("memopt-compile")), str(saved["unet"]),
             "--input-shape", shape_spec(MODELS["unet"][1]), "--analyze-only",
             flag, str(tmp_path / "x")], capture_output=True, text=True)
        lines = result.stderr.strip().splitlines()
        assert result.returncode != 0 and len(lines) == 1, result.stderr
        assert flag in lines[0] and "--device cuda" in lines[0], lines


@pytest.mark.parametrize("threads", [1, 2])
def test_wrap_marks_are_measured_in_a_fresh_process(saved, tmp_path, threads):
    # The measuring process runs with this one's thread count, which the
    # marks' context names (PyTorch 2.x starts with one thread a core).
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        marks_measured_in_a_fresh_process(saved, tmp_path)
    finally:
        torch.set_num_threads(before)


def marks_measured_in_a_fresh_process(saved, tmp_path):
    name = "unet"
    requests = tmp_path / "requests.jsonl"
    compile_cuda(saved[name], MODELS[name][1], "--kernel-requests", requests)
    asked = requests_of(requests)
    marks = kernel_marks.WrapMarks(tmp_path / "cache", 0, device="cpu")
    assert marks.arguments(None) == []
    assert marks.measure(requests) == len(asked)
    lines = marks.file.read_text().splitlines()
    assert len(lines) == len(asked)
    assert all(line.split("\t")[0] == marks.context for line in lines)
    assert marks.arguments(requests) == [
        "--kernel-marks", str(marks.file), "--kernel-requests", str(requests)]
    # A request the measuring process refuses: RuntimeError, file unchanged.
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "pooling", "key": "k"}\n')
    with pytest.raises(RuntimeError, match="unknown kind"):
        marks.measure(bad)
    assert marks.file.read_text().splitlines() == lines


class StandInMarks(kernel_marks.WrapMarks):
    """A GPU's marks without a GPU: every requested mark is 64 MiB."""

    def __init__(self, root):
        super().__init__(root, 0, device="cpu")
        self.context = "cuda stand-in GPU"
        self.measured = []

    def measure(self, requests, timeout=600):
        asked = requests_of(requests)
        self.measured.append(len(asked))
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file, "a") as f:
            f.write(fake_marks(asked, 64 << 20, 64 << 20,
                               context=self.context))
        return len(asked)


def cuda_compiler(name, tmp_path):
    """wrap's Compiler for MODELS[name], planned for --device cuda."""
    cls, shape = MODELS[name]
    torch.manual_seed(0)
    model = cls()
    options = make_options(model, budget=None, prefer="memory",
                           device="cuda", checkpoint=None, no_checkpoint=None,
                           assume_binary=None, world_size=1)
    signatures = collect_signatures(model, torch.randn(*shape), None)
    return model, Compiler(model, signatures, options, tmp_path / "cache",
                           verbose=False)


def test_wrap_compiles_again_with_the_marks_it_measured(tmp_path,
                                                        monkeypatch):
    """The first compile of a CUDA model asks for its convolutions' marks;
    wrap measures them and compiles again with them; the next compile finds
    them all in the cache folder and runs once."""
    model, compiler = cuda_compiler("convs2d", tmp_path)
    stand_in = StandInMarks(tmp_path / "cache")
    monkeypatch.setattr(Compiler, "_marks", lambda self: stand_in)
    runs = []
    real_run = Compiler._run
    monkeypatch.setattr(Compiler, "_run", lambda self, command, log: (
        runs.append(command), real_run(self, command, log))[1])

    load_runtime()  # the compiled module calls its operators
    flags = flags_of(model)
    parts = compiler.key_parts(flags)
    assert parts["kernel_marks"] == "cuda stand-in GPU"
    entry = compiler._compile("first", parts, flags, "training")
    assert len(runs) == 2 and stand_in.measured == [7]
    assert "--kernel-marks" not in runs[0] and "--kernel-requests" in runs[0]
    assert "--kernel-marks" in runs[1]
    report = json.loads(entry.read_text("report.json"))
    assert report["device_kernel_marks"]["applied"] == 7
    assert report["device_kernel_marks"]["requested"] == 0
    peak = report["signatures"][0]["baseline"]["predicted_peak_bytes"]
    assert peak > 64 << 20

    runs.clear()
    compiler._compile("second", parts, flags, "training")
    assert len(runs) == 1 and stand_in.measured == [7]


def test_wrap_keeps_its_plan_when_measuring_fails(tmp_path, monkeypatch):
    model, compiler = cuda_compiler("convs1d", tmp_path)
    failing = StandInMarks(tmp_path / "cache")

    def fail(requests, timeout=600):
        raise RuntimeError("CUDA error: out of memory")
    failing.measure = fail
    monkeypatch.setattr(Compiler, "_marks", lambda self: failing)
    load_runtime()
    flags = flags_of(model)
    with pytest.warns(UserWarning, match="out of memory"):
        entry = compiler._compile("k", compiler.key_parts(flags), flags,
                                  "training")
    report = json.loads(entry.read_text("report.json"))
    assert report["device_kernel_marks"]["applied"] == 0
    assert report["device_kernel_marks"]["requested"] >= 1


def test_wrap_measures_again_when_its_marks_file_is_damaged(tmp_path,
                                                            monkeypatch):
    model, compiler = cuda_compiler("convs1d", tmp_path)
    stand_in = StandInMarks(tmp_path / "cache")
    stand_in.file.parent.mkdir(parents=True)
    stand_in.file.write_text(f"{stand_in.context}\tkey\t12 -1 -1 -1 -")
    monkeypatch.setattr(Compiler, "_marks", lambda self: stand_in)
    load_runtime()
    flags = flags_of(model)
    with pytest.warns(UserWarning, match="not a kernel marks line"):
        entry = compiler._compile("k", compiler.key_parts(flags), flags,
                                  "training")
    assert stand_in.measured == [2]
    report = json.loads(entry.read_text("report.json"))
    assert report["device_kernel_marks"]["applied"] == 2
