"""The training-memory model predicts measured peaks.

For a representative subset of the zoo (python/memopt/zoo.py) at its small
size: the prediction of `memopt-opt --memopt-test-memory-model` on the
imported TorchScript must be within 10% of the peak the runtime's counting
allocator measures for one training step (after a warm-up step, .grad
buffers allocated), in eager PyTorch and/or the scripted module (each
measurement in a fresh process, graph-executor optimization off for the
scripted one). bench/memory_prediction.py does the same for every model and
both sizes; docs/memory-prediction.md has the table.
"""
import importlib.util
import os
import sys

import pytest

from conftest import REPO, BUILD, runtime_library_path

sys.path.insert(0, str(REPO / "python"))

TOLERANCE = 0.10

# (zoo entry, measured modes): every model family once, both modes where
# eager and TorchScript differ most (Python locals vs last-use liveness).
CASES = [
    ("resnet18", ("eager",)),
    ("mobilenet_v2", ("eager",)),
    ("vit", ("scripted",)),
    ("transformer_encoder", ("eager", "scripted")),
    ("spiking_vgg", ("eager", "scripted")),
]


def load_bench():
    path = REPO / "bench" / "memory_prediction.py"
    spec = importlib.util.spec_from_file_location("memory_prediction", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    for tool in ("memopt-translate", "memopt-opt"):
        if not (BUILD / "bin" / tool).exists():
            pytest.fail(f"{tool} not built in {BUILD}")
    if not runtime_library_path().exists():
        pytest.fail(f"runtime library not built: {runtime_library_path()}")
    os.environ.setdefault("MEMOPT_RUNTIME_LIB", str(runtime_library_path()))
    return load_bench()


@pytest.mark.parametrize("name,modes", CASES, ids=[c[0] for c in CASES])
def test_prediction_within_ten_percent(bench, tmp_path, name, modes):
    row = bench.run_case(BUILD, name, "small", tmp_path, modes=modes)
    assert not row["unknown"], f"{name}: ops without a table row: {row['unknown']}"
    for mode in modes:
        err = bench.error(row["predicted"], row[mode])
        print(f"{name} {row['input']}: predicted {row['predicted']} B, "
              f"{mode} {row[mode]} B ({100 * err:+.2f} %)")
        assert abs(err) <= TOLERANCE, (name, mode, row)
