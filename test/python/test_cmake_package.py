"""The installed CMake package (issue 21): `cmake --install` into a
temporary prefix, then test/cmake-consumer/, a project outside memopt's
build, finds it (`find_package(memopt CONFIG)`), compiles a model at build
time with `memopt_add_model` and builds a C++ program that trains the
compiled module next to the original with LibTorch: parameters bitwise
equal after 3 SGD steps, a lower measured peak, the predicted peaks in the
generated header. A second build runs nothing; touching the model re-runs
the compile; changing an option does too (the last test on that build).

examples/cpp-train/, built the same way against the same prefix, trains the
bundled spiking VGG and ResNet-18 from C++ with their launch stubs linked:
bitwise equal to training the original .pt, every compression launch a
stub's, and the peak reduction the Python path measures (within 10 %).
"""
import json
import os
import pathlib
import re
import runpy
import shutil
import subprocess
import sys

import pytest
import torch

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))
import memopt  # noqa: E402
from memopt import measure  # noqa: E402

CHAIN = REPO / "test" / "Compile" / "Inputs" / "chain_cnn.pt"


def run(cmd, **kwargs):
    out = subprocess.run([str(c) for c in cmd], capture_output=True,
                         text=True, timeout=1200, **kwargs)
    assert out.returncode == 0, (cmd, out.stdout[-3000:], out.stderr[-3000:])
    return out


@pytest.fixture(scope="module")
def consumer(tmp_path_factory):
    build = measure.build_dir()
    if not (build / "memoptConfig.cmake").exists():
        pytest.fail(f"{build} was configured before the package rules: "
                    f"re-run cmake")
    tmp = tmp_path_factory.mktemp("package")
    prefix = tmp / "prefix"
    run(["cmake", "--install", build, "--prefix", prefix,
         "--component", "memopt"])
    model = tmp / "chain.pt"
    shutil.copy(CHAIN, model)
    # The training machine's cost-model fit (here: the built-in one).
    fit = tmp / "machine.def"
    shutil.copy(REPO / "lib" / "Analysis" / "CostCoefficients.def", fit)
    project = tmp / "consumer"
    shutil.copytree(REPO / "test" / "cmake-consumer", project)
    # The project's own operator library (its source: the tests' one) and
    # a model calling its operators, scripted with the tests' build of it.
    operators = project / "operators.cpp"
    shutil.copy(REPO / "test" / "extension" / "TestOperators.cpp", operators)
    ops_model = tmp / "ops_net.pt"
    save_operator_model(build, ops_model)
    out = tmp / "build"
    prefixes = f"{prefix};{torch.utils.cmake_prefix_path}"
    run(["cmake", "-S", project, "-B", out, "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_PREFIX_PATH={prefixes}",
         f"-DMODEL={model}", "-DINPUT_SHAPE=x:2x3x8x8",
         # Two threads (train.cpp sets what the header says): oneDNN's
         # weight gradients then allocate more than on one.
         "-DTHREADS=2", f"-DCOST_MODEL={fit}",
         f"-DOPERATORS_SOURCE={operators}",
         f"-DOPERATORS_MODEL={ops_model}",
         "-DOPERATORS_INPUT_SHAPE=x:4x3x32x32"])
    first = run(["cmake", "--build", out])
    return {"prefix": prefix, "out": out, "model": model, "first": first,
            "project": project, "operators": operators,
            "ops_model": ops_model, "fit": fit}


class OperatorNet(torch.nn.Module):
    """Convolutions with memopt_test::soft_clip between them."""

    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList(
            [torch.nn.Conv2d(3 if i == 0 else 16, 16, 3, padding=1)
             for i in range(4)])

    def forward(self, x):
        for conv in self.convs:
            x = torch.ops.memopt_test.soft_clip(conv(x), 2.0)
        return torch.ops.memopt_test.scale(x)


def save_operator_model(build, path):
    library = pathlib.Path(os.environ.get(
        "MEMOPT_TEST_OPERATORS_LIB",
        build / "lib" / "libmemopt_test_operators.so"))
    torch.ops.load_library(str(library))
    torch.manual_seed(0)
    torch.jit.script(OperatorNet()).save(str(path))


def test_package_files_are_installed(consumer):
    prefix = consumer["prefix"]
    for name in ("memoptConfig.cmake", "memoptConfigVersion.cmake",
                 "memoptTargets.cmake", "memoptAddModel.cmake"):
        assert (prefix / "lib" / "cmake" / "memopt" / name).exists(), name
    assert (prefix / "include" / "memopt" / "Runtime" /
            "MemoryStats.h").exists()
    version = (prefix / "lib" / "cmake" / "memopt" /
               "memoptConfigVersion.cmake").read_text()
    assert f'set(PACKAGE_VERSION "{memopt.__version__}")' in version


def test_compiled_at_build_time_and_trains_bitwise(consumer):
    out = consumer["out"]
    assert "memopt: compiling" in consumer["first"].stdout
    assert (out / "net.memopt.pt").exists()
    header = (out / "net_memopt.h").read_text()
    assert "kCompiledModule" in header and "x:2x3x8x8" in header
    assert "kIntraOpThreads = 2;" in header
    run_ = run([out / "train", consumer["model"], "2,3,8,8"])
    text = run_.stdout
    assert "bitwise 1" in text, text
    assert "intra-op threads 2" in text, text
    measured = re.search(r"measured peak original (\d+) compiled (\d+)", text)
    predicted = re.search(r"predicted peak baseline (\d+) planned (\d+)", text)
    original, compiled = map(int, measured.groups())
    baseline, planned = map(int, predicted.groups())
    print(text)
    assert compiled < original
    assert planned < baseline
    # The prediction the header carries is the measured one within 10 %.
    assert abs(planned / compiled - 1) < 0.10, text


def test_rebuilds_only_when_the_model_changes(consumer):
    out = consumer["out"]
    again = run(["cmake", "--build", out])
    assert "no work to do" in again.stdout, again.stdout
    os.utime(consumer["model"])
    touched = run(["cmake", "--build", out])
    assert "memopt: compiling" in touched.stdout, touched.stdout
    assert "no work to do" in run(["cmake", "--build", out]).stdout


def test_model_calling_library_operators(consumer):
    # memopt_add_model(... LIBRARIES model_ops): the project's own library
    # is loaded into memopt-compile and linked into the training program.
    out = consumer["out"]
    text = run([out / "train_ops", consumer["ops_model"], "4,3,32,32"]).stdout
    print(text)
    assert "bitwise 1" in text, text
    measured = re.search(r"measured peak original (\d+) compiled (\d+)", text)
    original, compiled = map(int, measured.groups())
    assert compiled < original, text
    report = json.loads((out / "ops_net.report.json").read_text())
    assert any(path.endswith("libmodel_ops.so")
               for path in report["options"]["operator_libraries"])


def test_rebuilt_library_recompiles_its_model(consumer):
    out = consumer["out"]
    assert "no work to do" in run(["cmake", "--build", out]).stdout
    os.utime(consumer["operators"])
    rebuilt = run(["cmake", "--build", out]).stdout
    assert "memopt: compiling" in rebuilt and "for ops_net" in rebuilt, rebuilt
    assert "for net" not in rebuilt, rebuilt  # its model calls no library
    assert "no work to do" in run(["cmake", "--build", out]).stdout


def test_changed_cost_model_recompiles(consumer):
    # memopt_add_model(... COST_MODEL fit): priced with it, and compiled
    # again when the fit changes (the machine was calibrated anew).
    out = consumer["out"]
    report = json.loads((out / "net.report.json").read_text())
    assert report["cost_model"]["file"] == str(consumer["fit"])
    assert "no work to do" in run(["cmake", "--build", out]).stdout
    os.utime(consumer["fit"])
    rebuilt = run(["cmake", "--build", out]).stdout
    assert "memopt: compiling" in rebuilt and "for net" in rebuilt, rebuilt
    assert "for ops_net" not in rebuilt, rebuilt
    assert "no work to do" in run(["cmake", "--build", out]).stdout


def test_changed_option_recompiles(consumer):
    # The last test of the consumer's build: it leaves the option changed
    # (restoring it would rebuild train.cpp twice more, a minute of CI).
    out = consumer["out"]
    cmake_lists = consumer["project"] / "CMakeLists.txt"
    original = cmake_lists.read_text()
    cmake_lists.write_text(original.replace("PREFER memory", "PREFER balanced"))
    changed = run(["cmake", "--build", out]).stdout
    assert "memopt: compiling" in changed and "for net" in changed, changed
    assert "no work to do" in run(["cmake", "--build", out]).stdout


@pytest.fixture(scope="module")
def cpp_train(consumer, tmp_path_factory):
    out = tmp_path_factory.mktemp("cpp-train") / "build"
    prefixes = f"{consumer['prefix']};{torch.utils.cmake_prefix_path}"
    run(["cmake", "-S", REPO / "examples" / "cpp-train", "-B", out, "-G",
         "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_PREFIX_PATH={prefixes}", f"-DPYTHON={sys.executable}"])
    run(["cmake", "--build", out])
    return out


@pytest.mark.parametrize("example", ["spiking_vgg", "resnet"])
def test_cpp_train_example(cpp_train, example):
    text = run([cpp_train / "cpp_train", example, "2"]).stdout
    print(text)
    assert "bitwise equal" in text, text
    original, compiled = map(int, re.search(
        r"measured peak original (\d+) compiled (\d+)", text).groups())
    stub, generic = map(int, re.search(
        r"(\d+) stub, (\d+) generic", text).groups())
    assert generic == 0, text  # the stubs pack every binary tensor
    if example == "spiking_vgg":
        assert stub > 0, text
    # The Python path on the same compiled module (examples/train.py).
    sys.path.insert(0, str(REPO / "examples"))  # for their _example.py
    script = runpy.run_path(str(REPO / "examples" / f"{example}.py"))
    common = {"zoo": script["MODEL"], "kwargs": script["KWARGS"], "seed": 0,
              "threads": 1, "steps": 2, "warmup": 1}
    eager = measure.run_worker(dict(common, eager=True))["eager"]
    python = measure.run_worker(dict(
        common, compiled={"memopt": str(cpp_train / f"{example}.memopt.pt")},
        measure=True))["compiled"]["memopt"]["measure"]
    cpp_ratio = original / compiled
    python_ratio = eager["peak_bytes"] / python["peak_bytes"]
    assert abs(cpp_ratio / python_ratio - 1) < 0.10, (cpp_ratio, python_ratio)


def test_cpp_train_rebuilds_nothing(cpp_train):
    assert "no work to do" in run(["cmake", "--build", cpp_train]).stdout
