"""Measures convolution kernels' memory on the GPU that will train.

    python3 bench/cuda_kernel_probe.py REQUESTS... --out MARKS [--deterministic]

The calls come from `memopt-compile --device cuda --kernel-requests
REQUESTS` on the compiling machine; MARKS goes back to it as
`--kernel-marks MARKS`. Needs PyTorch only (no MLIR, no memopt build);
`--device cpu` measures on memopt's counting CPU allocator instead (the
runtime library). What is measured and how: python/memopt/kernel_marks.py,
docs/gpu.md.
"""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
from memopt import kernel_marks  # noqa: E402

if __name__ == "__main__":
    sys.exit(kernel_marks.main(sys.argv[1:]))
