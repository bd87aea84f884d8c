#!/usr/bin/env bash
# Builds the libFuzzer target over the TorchScript importer and runs it for a
# bounded time:  scripts/fuzz-import.sh [SECONDS=300] [BUILD_DIR=build]
#
# Needs clang with libFuzzer (Debian: clang-14 + libclang-rt-14-dev) and a
# configured BUILD_DIR where MemoptDialect has been built (for the generated
# headers and libMemoptDialect.a). The importer's sources are compiled again
# with coverage instrumentation; the seed corpus is the lit tests' .pt files.
# Findings (crash-*, timeout-*, oom-*) land in BUILD_DIR/fuzz-import/.
set -euo pipefail
seconds=${1:-300}
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${2:-$repo/build}" && pwd)
work=$build/fuzz-import
mkdir -p "$work/obj" "$work/corpus"

cxx=""
for candidate in clang++-19 clang++-14 clang++; do
  if command -v "$candidate" >/dev/null; then cxx=$candidate; break; fi
done
if [ -z "$cxx" ]; then
  echo "fuzz-import: installing clang-14 and libFuzzer (libclang-rt-14-dev)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-14 libclang-rt-14-dev >/dev/null
  cxx=clang++-14
fi
echo "fuzz-import: using $cxx"

ninja -C "$build" MemoptDialect >/dev/null
flags=(-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer
       -fexceptions -I"$repo/include" -I"$build/include" -isystem /usr/lib/llvm-19/include
       -isystem /usr/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=1)
objects=()
for src in "$repo"/lib/Conversion/TorchScriptImport/*.cpp "$repo"/lib/Conversion/OneLineDiagnostic.cpp "$repo"/fuzz/ImportFuzzer.cpp; do
  obj=$work/obj/$(basename "$src" .cpp).o
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || \
     [ -n "$(find "$repo/lib/Conversion/TorchScriptImport" "$repo/include/memopt/Conversion" -newer "$obj" -name '*.h')" ]; then
    echo "fuzz-import: compiling $(basename "$src")"
    "$cxx" "${flags[@]}" -c "$src" -o "$obj"
  fi
  objects+=("$obj")
done
"$cxx" -fsanitize=fuzzer,address "${objects[@]}" "$build/lib/libMemoptDialect.a" \
  -L/usr/lib/llvm-19/lib -lMLIR -lLLVM-19 -Wl,-rpath,/usr/lib/llvm-19/lib \
  -ltorch -ltorch_cpu -lc10 -o "$work/memopt-import-fuzzer"

cp -n "$repo"/test/Conversion/Inputs/*.pt "$work/corpus/" 2>/dev/null || true
cd "$work"
# LibTorch is not instrumented; its allocator and global state would produce
# reports we cannot act on, so leaks are off. LibTorch's unpickler reserves
# string lengths read from the file before reading them (virtual memory the
# process never touches), so single large mallocs are allowed up to 16 GiB
# while resident memory stays capped.
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 \
  ./memopt-import-fuzzer -max_total_time="$seconds" -timeout=30 -rss_limit_mb=6144 \
  -malloc_limit_mb=16384 \
  -max_len=65536 -print_final_stats=1 corpus
