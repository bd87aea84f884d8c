#!/usr/bin/env bash
# The GPU validation (issue 23, docs/gpu.md), in two halves.
#
#   scripts/gpu-check.sh compile [DIR] [torch2]   on this machine: builds the
#       compiler and compiles the e2e zoo for --device cuda (several
#       preferences, one budget) into DIR (default gpu-check-artifacts/,
#       git-ignored); with torch2, by the PyTorch 2.6 build of
#       scripts/test-torch2.sh (whose graphs call fused attention, as eager 2.x).
#   scripts/gpu-check.sh gpu [DIR] [OUT]   on the GPU machine (PyTorch with CUDA,
#       nvcc, CMake; no MLIR): builds the runtime with CUDA against that
#       python3's PyTorch, runs the CUDA tests, then bench/gpu_check.py over
#       DIR; writes OUT/gpu-check.md (+ .json and logs; default DIR/out) and
#       OUT/cuda-kernel-marks.txt (the plans' convolutions measured there),
#       which MEMOPT_GPU_KERNEL_MARKS=FILE hands to the next compile.
#   scripts/gpu-check.sh repredict [DIR] [OUT] [torch2]   back here: the
#       measured plans predicted again with those marks (OUT/repredict.md).
#   scripts/gpu-check.sh dry-run [DIR]     CI, no GPU: both halves on the CPU at
#       small sizes (the runtime half configures the runtime-only build and
#       uses build/'s runtime), so the script cannot rot.
#
# The GPU half is one command under 10 minutes; its exit status is non-zero
# when the build, a CUDA test or a check failed, and the table says which.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mode="${1:-}"
DIR="$(realpath -m "${2:-$ROOT/gpu-check-artifacts}")"
PYTHON="${MEMOPT_GPU_PYTHON:-python3}"

# Configures (and unless $2 = configure-only, builds) libmemopt_runtime alone
# against $PYTHON's PyTorch, with the CUDA kernels when nvcc is found. File
# by file: the GPU machine has the cores, and its CUDA sources batched
# together (MEMOPT_UNITY_BUILD) are compiled nowhere else first.
build_runtime() {
  local build="$1" what="${2:-build}" prefix
  prefix="$("$PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')"
  cmake -S "$ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DMEMOPT_BUILD_COMPILER=OFF -DMEMOPT_BUILD_TESTS=OFF \
    -DMEMOPT_UNITY_BUILD=OFF \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CUDA_ARCHITECTURES="${MEMOPT_CUDA_ARCHITECTURES:-90}"
  [ "$what" = configure-only ] || cmake --build "$build" -j"$(nproc)"
}

# Empties DIR for a new check. A non-empty folder that no earlier check
# made (no .gpu-check mark) is refused: a mistyped argument must not wipe it.
fresh_dir() {
  if [ -d "$1" ] && [ -n "$(ls -A "$1")" ] && [ ! -f "$1/.gpu-check" ]; then
    echo "gpu-check: $1 is not empty and holds no earlier check; name a new folder" >&2
    exit 2
  fi
  rm -rf "$1"
  mkdir -p "$1"
  touch "$1/.gpu-check"
}

case "$mode" in
compile)
  fresh_dir "$DIR"
  # MEMOPT_GPU_KERNEL_MARKS: a marks file an earlier GPU half wrote
  # (OUT/cuda-kernel-marks.txt), inside this checkout for the torch2 root.
  marks=()
  [ -z "${MEMOPT_GPU_KERNEL_MARKS:-}" ] ||
    marks=(--kernel-marks "$(realpath "$MEMOPT_GPU_KERNEL_MARKS")")
  if [ "${3:-}" = torch2 ]; then
    # Compiled by PyTorch 2.6 (scripts/test-torch2.sh's Debian 13 root), whose
    # graphs call the fused attention that eager PyTorch 2.x calls.
    "$ROOT/scripts/test-torch2.sh" --prepare
    "$ROOT/scripts/test-torch2.sh" --run bash -c '
      [ -f "$MEMOPT_BUILD_DIR/build.ninja" ] || cmake -S . -B "$MEMOPT_BUILD_DIR" \
        -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
      cmake --build "$MEMOPT_BUILD_DIR" --target memopt-compile memopt_runtime' \
      >/dev/null
    "$ROOT/scripts/test-torch2.sh" --run /usr/bin/python3 \
      "$ROOT/bench/gpu_check.py" compile "$DIR" "${marks[@]}"
  else
    "$ROOT/scripts/setup.sh" "$ROOT/build"
    cmake --build "$ROOT/build"
    MEMOPT_BUILD_DIR="$ROOT/build" /usr/bin/python3 "$ROOT/bench/gpu_check.py" \
      compile "$DIR" "${marks[@]}"
  fi
  du -sh "$DIR"
  ;;
gpu)
  OUT="$(realpath -m "${3:-$DIR/out}")"
  mkdir -p "$OUT"
  build="$ROOT/build-gpu"
  status=0
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv \
    | tee "$OUT/device.txt" || true
  if ! build_runtime "$build" >"$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    echo "gpu-check: building the runtime failed (log: $OUT/build.log)"
    exit 1
  fi
  grep -E "memopt: (LibTorch|nvcc)" "$OUT/build.log" || true
  export MEMOPT_BUILD_DIR="$build"
  export MEMOPT_RUNTIME_LIB="$build/lib/libmemopt_runtime.so"
  # Deterministic cuBLAS, so that eager and compiled can match bit for bit.
  export CUBLAS_WORKSPACE_CONFIG=:4096:8
  (cd "$ROOT/test/python" && "$PYTHON" -m pytest -q -p no:cacheprovider -k cuda \
    test_runtime_checkpoint.py test_runtime_offload.py test_runtime_packed.py \
    test_runtime_compression.py \
    2>&1 | tee "$OUT/cuda-tests.log") || status=1
  # The plans' convolution calls on this GPU, with the settings of the run
  # below (deterministic cuDNN): marks for the next compile (docs/gpu.md).
  if [ -f "$DIR/kernel-requests.jsonl" ]; then
    "$PYTHON" "$ROOT/bench/cuda_kernel_probe.py" "$DIR/kernel-requests.jsonl" \
      --out "$OUT/cuda-kernel-marks.txt" --deterministic \
      2>&1 | tee "$OUT/kernel-probe.log" || status=1
  fi
  "$PYTHON" "$ROOT/bench/gpu_check.py" run "$DIR" "$OUT" --device cuda \
    2>&1 | tee "$OUT/gpu-check.log" || status=1
  # Per-operator saved and transient bytes on CPU and CUDA (for the model).
  "$PYTHON" "$ROOT/bench/cuda_saved_bytes.py" "$OUT" >"$OUT/cuda-saved.log" 2>&1 ||
    { tail -5 "$OUT/cuda-saved.log"; status=1; }
  exit $status
  ;;
dry-run)
  OUT="$DIR/out"
  fresh_dir "$DIR"
  # The GPU half's build, configured against this PyTorch (not built: the
  # runtime in build/ is the same sources).
  PYTHON=/usr/bin/python3 build_runtime "$DIR/build-runtime" configure-only \
    >"$DIR/configure.log" 2>&1 || { cat "$DIR/configure.log"; exit 1; }
  export MEMOPT_BUILD_DIR="${MEMOPT_BUILD_DIR:-$ROOT/build}"
  /usr/bin/python3 "$ROOT/bench/gpu_check.py" compile "$DIR" --dry-run
  # The GPU's kernel probe, on this CPU's counting allocator.
  mkdir -p "$OUT"
  /usr/bin/python3 "$ROOT/bench/cuda_kernel_probe.py" \
    "$DIR/kernel-requests.jsonl" --out "$OUT/cuda-kernel-marks.txt" --device cpu
  /usr/bin/python3 "$ROOT/bench/gpu_check.py" run "$DIR" "$OUT" --device cpu
  /usr/bin/python3 "$ROOT/bench/gpu_check.py" repredict "$DIR" "$OUT" \
    --marks-device cpu
  ;;
repredict)
  # Back here after the GPU half: its plans predicted again with the
  # convolution marks it measured (OUT/repredict.md). The compile half's
  # build (torch2: the Debian 13 root's) has memopt-opt.
  OUT="$(realpath -m "${3:-$DIR/out}")"
  if [ "${4:-}" = torch2 ]; then
    # The compile half built only memopt-compile there.
    "$ROOT/scripts/test-torch2.sh" --run bash -c \
      'cmake --build "$MEMOPT_BUILD_DIR" --target memopt-opt' >/dev/null
    "$ROOT/scripts/test-torch2.sh" --run /usr/bin/python3 \
      "$ROOT/bench/gpu_check.py" repredict "$DIR" "$OUT"
  else
    MEMOPT_BUILD_DIR="$ROOT/build" /usr/bin/python3 \
      "$ROOT/bench/gpu_check.py" repredict "$DIR" "$OUT"
  fi
  ;;
*)
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
  ;;
esac
