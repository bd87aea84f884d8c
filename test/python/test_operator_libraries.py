"""Models that call operators a library registers (a team's C++ extension,
torchvision's ops): memopt-compile --load-library imports, prices, plans,
checks and writes them; memopt.wrap passes the libraries its process loaded.

The library is test/extension/TestOperators.cpp (built beside the runtime):
memopt_test::soft_clip has its own backward (saves only its result) and
allocates two temporaries in forward, so the memory model is right only if
the kernel probe ran it; memopt_test::accumulate writes its first operand
(not probed: the table would have to say what a write keeps);
memopt_test::scale is composite.
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
os.environ.setdefault("MEMOPT_BUILD_DIR", str(HERE.parents[1] / "build"))
import memopt  # noqa: E402
from memopt import measure  # noqa: E402

from conftest import (BUILD, compile_with_report, measured_peaks,  # noqa: E402
                      right_convolutions)

LIBRARY = pathlib.Path(os.environ.get(
    "MEMOPT_TEST_OPERATORS_LIB", BUILD / "lib" / "libmemopt_test_operators.so"))


@pytest.fixture(scope="module", autouse=True)
def operators():
    if not LIBRARY.exists():
        pytest.fail(f"test operator library not built: {LIBRARY}")
    torch.ops.load_library(str(LIBRARY))
    return torch.ops.memopt_test


class ClipNet(nn.Module):
    """Convolutions with the extension's activation between them."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(
            [nn.Conv2d(3 if i == 0 else 16, 16, 3, padding=1)
             for i in range(4)])
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        for conv in self.convs:
            x = torch.ops.memopt_test.soft_clip(conv(x), 2.0)
        x = torch.ops.memopt_test.scale(x)
        return self.head(x.mean(dim=(2, 3)))


class AccumulateNet(nn.Module):
    """An extension operator that writes its first operand."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.a(x))
        total = h.clone()
        torch.ops.memopt_test.accumulate(total, torch.relu(self.b(h)))
        return torch.ops.memopt_test.soft_clip(total, 1.5)


class PlainNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.a(x))


def script(cls, path):
    torch.manual_seed(0)
    torch.jit.script(cls().train()).save(str(path))
    return path


def one_error_line(result):
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memopt: error: "), lines[0]
    return lines[0]


def test_without_the_library_the_error_says_how(tmp_path):
    source = script(ClipNet, tmp_path / "m.pt")
    result, _ = compile_with_report(source, ["x:2x3x16x16"], tmp_path, [])
    line = one_error_line(result)
    assert "operator 'memopt_test::soft_clip' has no schema" in line
    assert "--load-library" in line
    assert not (tmp_path / "out.pt").exists()


@pytest.mark.parametrize("library,expected", [
    ("missing.so", "cannot load operator library 'missing.so': "),
    ("not-a-library.so", "cannot load operator library 'not-a-library.so': "
                         "invalid ELF header"),
])
def test_a_library_that_does_not_load(tmp_path, library, expected):
    source = script(ClipNet, tmp_path / "m.pt")
    (tmp_path / "not-a-library.so").write_text("not a shared library\n" * 64)
    result = subprocess.run(
        [str(BUILD / "bin" / "memopt-compile"), str(source), "-o", "out.pt",
         "--input-shape", "x:2x3x16x16", "--load-library", library],
        capture_output=True, text=True, cwd=tmp_path)
    assert expected in one_error_line(result)


def test_two_builds_of_one_library(tmp_path):
    # Their static initializers throw (one TORCH_LIBRARY per namespace):
    # one line, not LibTorch's terminate and stack dump.
    source = script(ClipNet, tmp_path / "m.pt")
    copy = tmp_path / "copy.so"
    shutil.copy(LIBRARY, copy)
    result, _ = compile_with_report(
        source, ["x:2x3x16x16"], tmp_path,
        ["--load-library", str(LIBRARY), "--load-library", str(copy)])
    line = one_error_line(result)
    assert f"cannot load operator library '{copy}': Only a single " \
           "TORCH_LIBRARY can be used to register the namespace " \
           "memopt_test" in line


def test_compiled_with_the_library(tmp_path):
    source = script(ClipNet, tmp_path / "m.pt")
    result, report = compile_with_report(
        source, ["x:4x3x32x32"], tmp_path,
        ["--load-library", str(LIBRARY), "--prefer", "memory",
         "--intra-op-threads", "1"])
    assert report is not None, result.stderr
    assert report["options"]["operator_libraries"] == [str(LIBRARY)]
    assert "operators of libmemopt_test_operators.so loaded" in result.stderr
    assert report["forward_check"] == {"compared": 1, "not_compared": []}
    # soft_clip is priced by running it, not as saving every tensor.
    assert not report["signatures"][0].get("unknown_ops")
    assert report["planned"]["predicted_peak_bytes"] < \
        report["baseline"]["predicted_peak_bytes"]


def predicted_and_measured(source, out, args, extra, library=LIBRARY):
    report = measure.compile_model(
        source, out, [f"x:{'x'.join(map(str, args[0].shape))}"],
        ["--load-library", str(library), "--prefer", "memory"] + extra)
    peaks = measured_peaks({"baseline": source, "planned": out}, args)
    return report, {
        what: (report["signatures"][0][what]["predicted_peak_bytes"], measured)
        for what, measured in peaks.items()}


def test_prediction_of_a_library_operator(tmp_path):
    # What soft_clip keeps (its result) and the temporaries its forward
    # makes are what the kernel probe measured: predicted peaks equal what
    # a training step measures within 1 %. Before the probe ran library
    # operators, the baseline was predicted with x saved as well.
    source = script(ClipNet, tmp_path / "m.pt")
    args = [torch.randn(4, 3, 32, 32)]
    report, rows = predicted_and_measured(source, tmp_path / "o.pt", args, [])
    assert not report["signatures"][0].get("unknown_ops")
    for what, (predicted, measured) in rows.items():
        assert abs(predicted / measured - 1) < 0.01, (what, predicted, measured)


def torchvision_library() -> str:
    import torchvision
    return next(path for path in torch.ops.loaded_libraries
                if "torchvision" in path and "_C" in pathlib.Path(path).name)


def test_an_operator_that_writes_its_operand(tmp_path):
    # Not run by the probe: modelled as saving every tensor, and listed.
    source = script(AccumulateNet, tmp_path / "m.pt")
    args = [torch.randn(4, 3, 32, 32)]
    report, rows = predicted_and_measured(source, tmp_path / "o.pt", args, [])
    unknown = [u["op"] if isinstance(u, dict) else u
               for u in report["signatures"][0].get("unknown_ops", [])]
    assert unknown == ["memopt_test::accumulate"], unknown
    # Saving every tensor over-predicts; the plan is not above eager.
    assert rows["planned"][1] <= rows["baseline"][1]


def train_like_eager(cls, x, tmp_path, steps=2):
    # Eager's oneDNN convolutions give NaN at times where they are wrong
    # (DeformNet's stem weight gradient under PyTorch 2.6 on CI's machine).
    with right_convolutions():
        return _train_like_eager(cls, x, tmp_path, steps)


def _train_like_eager(cls, x, tmp_path, steps):
    torch.manual_seed(0)
    eager = cls().train()
    torch.manual_seed(0)
    model = cls().train()
    wrapped = memopt.wrap(model, x, prefer="memory", cache_dir=tmp_path,
                          verbose=False)
    for step in range(steps):
        outs = []
        for module in (eager, wrapped):
            out = module(x)
            out.float().pow(2).mean().backward()
            outs.append(out)
        assert torch.equal(outs[0], outs[1]), f"step {step}"
        for (name, p), (_, q) in zip(eager.named_parameters(),
                                     model.named_parameters()):
            assert torch.equal(p.grad, q.grad), f"{name} step {step}"
        with torch.no_grad():
            for m in (eager, model):
                for p in m.parameters():
                    p -= 0.1 * p.grad
                    p.grad.zero_()
    return memopt.summary(wrapped).report


@pytest.mark.parametrize("cls", [ClipNet, AccumulateNet])
def test_wrap_passes_the_loaded_libraries(cls, tmp_path):
    report = train_like_eager(cls, torch.randn(4, 3, 32, 32), tmp_path)
    assert str(LIBRARY) in report["options"]["operator_libraries"]
    assert report["forward_check"]["compared"] == 1


def test_wrap_passes_no_library_to_a_model_without_their_operators(tmp_path):
    # The libraries are loaded in this process; the model does not call them.
    report = train_like_eager(PlainNet, torch.randn(2, 3, 16, 16), tmp_path,
                              steps=1)
    assert report["options"]["operator_libraries"] == []


def python_binding_library() -> str:
    """LibTorch's Python bindings, which torch._C links: a library that
    refers to the interpreter's symbols."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "libtorch_python" in os.path.basename(path):
                return path
    pytest.skip("libtorch_python is not mapped in this process")


def test_libraries_that_need_python_are_not_passed(tmp_path):
    # torchvision 0.21's image decoders refer to the interpreter: loading
    # them into memopt-compile fails ("undefined symbol: PyExc_ValueError").
    from memopt.runtime import needs_python, operator_libraries
    bindings = python_binding_library()
    assert needs_python(bindings)
    # torch._C's own module refers to no Python symbol itself, but needs
    # the bindings library (as cpp_extension builds link it by default).
    assert needs_python(torch._C.__file__)
    assert not needs_python(str(LIBRARY))
    text = tmp_path / "not-elf.so"
    text.write_text("not a library")
    assert not needs_python(str(text))
    short = tmp_path / "short.so"
    short.write_bytes(b"\x7fELF")
    assert not needs_python(str(short))
    torch.ops.load_library(bindings)  # already mapped: nothing new runs
    try:
        libraries = operator_libraries()
        assert str(LIBRARY) in libraries
        assert bindings not in libraries
    finally:
        torch.ops.loaded_libraries.discard(bindings)


class PythonOperatorNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return torch.ops.memopt_python_test.twice(self.a(x))


def test_operator_defined_from_python(tmp_path):
    # memopt-compile cannot run a Python kernel: wrap's error says why,
    # instead of suggesting --load-library.
    library = torch.library.Library("memopt_python_test", "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: x * 2.0, "CPU")
    with pytest.raises(memopt.CompileError) as raised:
        memopt.wrap(PythonOperatorNet(), torch.randn(2, 3, 8, 8),
                    cache_dir=tmp_path, verbose=False)
    message = str(raised.value)
    assert "operator 'memopt_python_test::twice' has no schema" in message
    assert "memopt-compile loads C++ libraries only" in message
    assert "an operator defined from Python" in message
    assert "--load-library" not in message


class DeformNet(nn.Module):
    """A deformable convolution (torchvision::deform_conv2d) whose offsets a
    convolution predicts."""

    def __init__(self):
        super().__init__()
        import torchvision
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.offsets = nn.Conv2d(8, 18, 3, padding=1)
        self.deform = torchvision.ops.DeformConv2d(8, 8, 3, padding=1)
        self.head = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        h = torch.relu(self.deform(h, self.offsets(h)))
        return self.head(h)


def torchvision_ops_available() -> bool:
    try:
        import torchvision
        torchvision.ops.deform_conv2d  # noqa: B018
        return hasattr(torch.ops.torchvision, "deform_conv2d")
    except Exception:
        return False


@pytest.mark.skipif(not torchvision_ops_available(),
                    reason="torchvision's operators are not installed")
def test_torchvision_operators_through_wrap(tmp_path):
    report = train_like_eager(DeformNet, torch.randn(2, 3, 24, 24), tmp_path)
    assert any("torchvision" in path
               for path in report["options"]["operator_libraries"])
    assert not report["signatures"][0].get("unknown_ops")


@pytest.mark.skipif(not torchvision_ops_available(),
                    reason="torchvision's operators are not installed")
def test_prediction_of_a_deformable_convolution(tmp_path):
    # deform_conv2d's integer operands are its module's stride, padding and
    # dilation tuples (unpacked in forward): static, so the probe runs it.
    # Modelled as saving every tensor it was predicted 37 % under.
    source = script(DeformNet, tmp_path / "m.pt")
    args = [torch.randn(2, 3, 32, 32)]
    report, rows = predicted_and_measured(source, tmp_path / "o.pt", args, [],
                                          library=torchvision_library())
    assert not report["signatures"][0].get("unknown_ops")
    for what, (predicted, measured) in rows.items():
        assert abs(predicted / measured - 1) < 0.01, (what, predicted, measured)
