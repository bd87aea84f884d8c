#!/usr/bin/env bash
# memopt under AddressSanitizer and UndefinedBehaviorSanitizer (GCC's),
# in its own build folder (build-asan/):
#
#   scripts/test-sanitizers.sh            the runtime: its C++ built with
#                                         ASan + UBSan, every runtime pytest
#                                         file run with the sanitizer
#                                         runtimes preloaded into Python
#   scripts/test-sanitizers.sh --all      also the compiler: lit (memopt-opt,
#                                         memopt-translate) and GoogleTest
#
# LibTorch, MLIR and Python are Debian's, not instrumented: what is checked
# is memopt's own code and every access it makes. Leak checking is off
# (Python and LibTorch keep allocations until exit by design); any other
# report fails the run. Ends with ctest's or pytest's summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

all=0
case "${1:-}" in
  --all) all=1 ;;
  "") ;;
  *) echo "usage: $0 [--all]" >&2; exit 2 ;;
esac

scripts/setup.sh build >/dev/null

build=build-asan
compiler=OFF
targets=(memopt_runtime)
if ((all)); then
  compiler=ON
  targets+=(memopt-opt memopt-translate memopt-compile memopt-unit-tests
            memopt-planner-tests memopt-analysis-tests memopt-archive-tests
            memopt_test_operators)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMOPT_SANITIZE=address,undefined -DMEMOPT_ENABLE_CUDA=OFF \
  -DMEMOPT_BUILD_COMPILER="$compiler" -DMEMOPT_BUILD_TESTS=ON >/dev/null
cmake --build "$build" --target "${targets[@]}"

# allow_user_poisoning=0: LLVM's inline allocators (BumpPtrAllocator) poison
# their slabs' free space in memopt's instrumented copies but not in
# libMLIR's, so MLIR's own allocations from those slabs would be reported
# (found by the .mlir fuzzer, docs/reliability.md).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:alloc_dealloc_mismatch=0:detect_odr_violation=0:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

# Python is not instrumented: the runtimes must come first in the process.
preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"

status=0
if ((all)); then
  # Executables link the sanitizer runtimes themselves; the tests' Python
  # (which loads memopt's runtime library) gets them preloaded.
  MEMOPT_PYTHON_PRELOAD="$preload" \
    /usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py -q "$build/test" ||
    status=$?
  for unit in memopt-unit-tests memopt-planner-tests memopt-analysis-tests \
              memopt-archive-tests; do
    "$build/test/unit/$unit" --gtest_brief=1 || status=$?
  done
fi

LD_PRELOAD="$preload" MEMOPT_BUILD_DIR="$PWD/$build" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider test/python/test_runtime_*.py \
  || status=$?
exit "$status"
