#!/usr/bin/env python3
"""Builds libmemopt_runtime.so with torch.utils.cpp_extension, the way
PyTorch builds its own extensions: the fallback of scripts/gpu-check.sh
when CMake cannot find a pip-installed PyTorch's CUDA setup. Same sources
and flags as lib/Runtime/CMakeLists.txt (CUDA kernels in when nvcc is).

    python3 scripts/build_runtime_extension.py BUILD_DIR
prints the library's path.
"""
import pathlib
import shutil
import sys

import torch
from torch.utils import cpp_extension

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(build: pathlib.Path) -> int:
    runtime = ROOT / "lib" / "Runtime"
    sources = sorted(str(p) for p in runtime.glob("*.cpp"))
    cuda = torch.cuda.is_available() and cpp_extension.CUDA_HOME is not None
    flags = ["-O3"]
    if cuda:
        sources += sorted(str(p) for p in (runtime / "cuda").glob("*.cu"))
        flags.append("-DMEMOPT_WITH_CUDA=1")
    build.mkdir(parents=True, exist_ok=True)
    path = cpp_extension.load(
        name="memopt_runtime", sources=sources, extra_cflags=flags,
        extra_cuda_cflags=["-O3"], extra_include_paths=[
            str(ROOT / "include"), str(runtime)],
        build_directory=str(build), is_python_module=False, verbose=True)
    library = build / "lib" / "libmemopt_runtime.so"
    library.parent.mkdir(exist_ok=True)
    shutil.copy(build / "memopt_runtime.so", library)
    print(library)
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]).resolve()))
