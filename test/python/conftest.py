"""Shared fixtures for the end-to-end tests (run on /usr/bin/python3).

ctest sets MEMOPT_BUILD_DIR and MEMOPT_RUNTIME_LIB; running pytest by hand
falls back to ./build in the checkout.
"""
import json
import os
import pathlib
import subprocess

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MEMOPT_BUILD_DIR", REPO / "build"))


def runtime_library_path() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("MEMOPT_RUNTIME_LIB", BUILD / "lib" / "libmemopt_runtime.so"))


def tool_path(name: str) -> pathlib.Path:
    return BUILD / "bin" / name


def compile_with_report(source, specs, out_dir, args):
    """Runs memopt-compile on `source` (input specs `specs`, extra `args`),
    writing out.pt and report.json into `out_dir`; returns the finished
    process and the report (None when the compile failed)."""
    report = pathlib.Path(out_dir) / "report.json"
    result = subprocess.run(
        [str(tool_path("memopt-compile")), str(source), "-o",
         str(pathlib.Path(out_dir) / "out.pt"), "--report", str(report)] +
        [a for s in specs for a in ("--input-shape", s)] + list(args),
        capture_output=True, text=True)
    if result.returncode != 0:
        return result, None
    return result, json.loads(report.read_text())


def script_and_compile(make_model, tmp_path, specs, args):
    """The model `make_model()` builds from seed 0, in train mode, and the
    module memopt-compile makes of its scripted form (input `specs`, extra
    `args`)."""
    import sys
    sys.path.insert(0, str(REPO / "python"))
    from memopt import measure
    torch.manual_seed(0)
    model = make_model().train()
    source = pathlib.Path(tmp_path) / "m.pt"
    torch.jit.script(model).save(str(source))
    out = pathlib.Path(tmp_path) / "m.memopt.pt"
    measure.compile_model(source, out, specs, args)
    return model, torch.jit.load(str(out))


def measured_peaks(paths, args, steps=2, warmup=2):
    """The measured peak of a training step of each TorchScript module in
    `paths` ({label: .pt}) on `args`, as docs/memory-prediction.md measures
    and memopt's output runs: the graph executor's optimization off, one
    intra-op thread, seed 0; the runtime loaded."""
    import sys
    sys.path.insert(0, str(REPO / "python"))
    from memopt import measure
    measure.load_runtime()
    optimize = torch._C._get_graph_executor_optimize()
    torch._C._set_graph_executor_optimize(False)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        peaks = {}
        for label, path in paths.items():
            torch.manual_seed(0)
            peaks[label] = measure.measure_training_step(
                torch.jit.load(str(path)), args, steps=steps,
                warmup=warmup).peak_bytes
        return peaks
    finally:
        torch._C._set_graph_executor_optimize(optimize)
        torch.set_num_threads(threads)


def train_beside_eager(cls, sample, tmp_path):
    """Two SGD steps of `cls()` through `memopt.wrap(prefer="memory")` beside
    eager, from the same seeds (dropout, torch.rand): outputs, every
    parameter gradient and, at the end, every buffer bit for bit equal.
    `sample()` gives the input (a tuple for several); the loss is the mean
    square of the first output. Bits are compared, NaNs included. Where this
    PyTorch's oneDNN convolutions are wrong (MEMOPT_TEST_ONEDNN_WRONG:
    their results vary from run to run, NaN at times), both sides run on
    PyTorch's native kernels."""
    with right_convolutions():
        _train_beside_eager(cls, sample, tmp_path)


def right_convolutions():
    """A context in which eager convolutions can be trusted: where this
    PyTorch's oneDNN is wrong (MEMOPT_TEST_ONEDNN_WRONG, set by
    scripts/test-torch2.sh from scripts/onednn_check.py), PyTorch's native
    kernels, else unchanged. For tests that train a model beside eager in
    their own process; restored after, since tests that measure memory run
    oneDNN's kernels, as memopt-compile's probe does."""
    native = bool(os.environ.get("MEMOPT_TEST_ONEDNN_WRONG"))
    return torch.backends.mkldnn.flags(
        enabled=torch.backends.mkldnn.enabled and not native)


def _train_beside_eager(cls, sample, tmp_path):
    import sys
    sys.path.insert(0, str(REPO / "python"))
    import memopt
    from memopt.measure import same_bits
    torch.manual_seed(0)
    eager = cls().train()
    torch.manual_seed(0)
    model = cls().train()
    x = sample()
    args = x if isinstance(x, tuple) else (x,)
    wrapped = memopt.wrap(model, x, prefer="memory", cache_dir=tmp_path,
                          verbose=False)
    first = lambda out: out[0] if isinstance(out, tuple) else out  # noqa
    for step in range(2):
        outputs = []
        for module in (eager, wrapped):
            torch.manual_seed(100 + step)
            out = module(*args)
            first(out).float().pow(2).mean().backward()
            outputs.append(first(out))
        assert same_bits(outputs[0], outputs[1]), f"step {step}"
        for (n, p), (_, q) in zip(eager.named_parameters(),
                                  model.named_parameters()):
            assert (p.grad is None) == (q.grad is None), n
            if p.grad is not None:
                assert same_bits(p.grad, q.grad), f"{n} step {step}"
        with torch.no_grad():
            for m in (eager, model):
                for p in m.parameters():
                    if p.grad is not None:
                        p -= 0.1 * p.grad
                        p.grad.zero_()
    for (n, a), (_, b) in zip(eager.named_buffers(), model.named_buffers()):
        assert same_bits(a, b), n
    for (n, a), (_, b) in zip(eager.named_parameters(),
                              model.named_parameters()):
        assert same_bits(a, b), n


def assert_predicted_within(cls, sample, tmp_path, tolerance):
    """`cls()` scripted and compiled with `--prefer memory`: no operator left
    unknown, and the predicted baseline and planned peaks within
    `tolerance` (a fraction) of what a training step measures."""
    import sys
    sys.path.insert(0, str(REPO / "python"))
    from memopt import measure
    x = sample()
    args = list(x if isinstance(x, tuple) else (x,))
    torch.manual_seed(0)
    source = tmp_path / "model.pt"
    torch.jit.script(cls().train()).save(str(source))
    out = tmp_path / "model.memopt.pt"
    names = [a.name for a in
             torch.jit.load(str(source)).forward.schema.arguments[1:]]
    dtypes = {torch.int64: ":i64", torch.int32: ":i32", torch.bool: ":i1"}
    report = measure.compile_model(
        source, out, [f"{n}:{'x'.join(map(str, t.shape))}"
                      f"{dtypes.get(t.dtype, '')}"
                      for n, t in zip(names, args)],
        ["--prefer", "memory"])
    signature = report["signatures"][0]
    assert not signature.get("unknown_ops"), signature["unknown_ops"]
    peaks = measured_peaks({"baseline": source, "planned": out}, args)
    for what, measured in peaks.items():
        predicted = signature[what]["predicted_peak_bytes"]
        assert abs(predicted / measured - 1) < tolerance, (
            f"{cls.__name__} {what}: predicted {predicted}, "
            f"measured {measured}")


@pytest.fixture(scope="session")
def runtime():
    """Loads libmemopt_runtime once per session and returns torch.ops.memopt."""
    path = runtime_library_path()
    if not path.exists():
        pytest.fail(f"runtime library not built: {path}")
    torch.ops.load_library(str(path))
    return torch.ops.memopt


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


def compare_on_right_convolutions():
    """For tests that compare memopt's runtime ops with eager convolutions in
    this process: where scripts/test-torch2.sh found this PyTorch's oneDNN
    computing wrong convolution gradients even with its AVX2 kernels
    (MEMOPT_TEST_ONEDNN_WRONG, docs/pytorch2.md), eager itself is wrong and
    nothing can equal it, so both sides run on PyTorch's native kernels."""
    if os.environ.get("MEMOPT_TEST_ONEDNN_WRONG"):
        torch.backends.mkldnn.enabled = False


def zip_record_data_offset(raw: bytes, info) -> int:
    """Where the data of zip record `info` (a zipfile.ZipInfo) starts in the
    archive bytes `raw`: after its 30-byte local header, name and extra
    field (the local lengths, which may differ from the directory's)."""
    local = info.header_offset
    return local + 30 + int.from_bytes(raw[local + 26:local + 28], "little") \
        + int.from_bytes(raw[local + 28:local + 30], "little")
