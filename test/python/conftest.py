"""Shared fixtures for the end-to-end tests (run on /usr/bin/python3).

ctest sets MEMOPT_BUILD_DIR and MEMOPT_RUNTIME_LIB; running pytest by hand
falls back to ./build in the checkout.
"""
import os
import pathlib

import pytest
import torch

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("MEMOPT_BUILD_DIR", REPO / "build"))


def runtime_library_path() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("MEMOPT_RUNTIME_LIB", BUILD / "lib" / "libmemopt_runtime.so"))


def tool_path(name: str) -> pathlib.Path:
    return BUILD / "bin" / name


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

