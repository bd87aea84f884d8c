#!/usr/bin/env bash
# Runs one of memopt's libFuzzer targets (fuzz/) for a bounded time:
#
#   scripts/fuzz.sh TARGET SECONDS [--keep-corpus]
#
# TARGET: import (TorchScript archives), mlir (memopt-opt's parse, verify
# and planning pipelines), report (the compile report over any verified
# module), parser (--budget, --input-shape, --spec, signature files, whole
# option sets), or all (SECONDS each). Builds build-fuzz/ with clang-14,
# libFuzzer, ASan and UBSan (installed with apt when missing). Seeds: the
# corpus kept in test/fuzz/TARGET.tar.xz plus, for import, the lit tests'
# models and, for mlir and report, every lit test's .mlir split at
# `// -----`. What the run finds grows build-fuzz/fuzz/TARGET/corpus;
# --keep-corpus merges the inputs that add coverage into the kept corpus
# and writes test/fuzz/TARGET.tar.xz again (xz: the text corpora shrink
# 50-fold). Findings
# (crash-*, timeout-*, oom-*, leak-*) land in build-fuzz/fuzz/TARGET/ and
# fail the run.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() { echo "usage: $0 import|mlir|report|parser|all SECONDS [--keep-corpus]" >&2; exit 2; }
[ $# -ge 2 ] || usage
target=$1 seconds=$2 keep=0
[[ $seconds =~ ^[0-9]+$ ]] || usage
case "${3:-}" in --keep-corpus) keep=1 ;; "") ;; *) usage ;; esac
case "$target" in
  all) targets=(parser report mlir import) ;;
  import|mlir|report|parser) targets=("$target") ;;
  *) usage ;;
esac

scripts=$repo/scripts
"$scripts/setup.sh" "$repo/build" >/dev/null
source "$scripts/ensure-packages.sh"
ensure_packages clang-14 libclang-rt-14-dev

build=$repo/build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DMEMOPT_FUZZ=ON -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_ENABLE_CUDA=OFF >/dev/null
fi

# Splits every lit test at `// -----` (as -split-input-file does) into
# one seed file per chunk.
split_lit_tests() {
  local out=$1
  mkdir -p "$out"
  find "$repo/test" -name '*.mlir' -print0 | sort -z |
    while IFS= read -r -d '' file; do
      awk -v out="$out" -v base="$(basename "$file" .mlir)" '
        function next_file() { n++; name = sprintf("%s/%s-%03d.mlir", out, base, n) }
        BEGIN { next_file() }
        /^\/\/ -----/ { close(name); next_file(); next }
        { print > name }' "$file"
    done
}

status=0
for t in "${targets[@]}"; do
  cmake --build "$build" --target "memopt-$t-fuzzer"
  work=$build/fuzz/$t
  archive=$repo/test/fuzz/$t.tar.xz
  kept=$work/kept
  rm -rf "$kept"
  mkdir -p "$work/corpus" "$work/seeds" "$kept"
  if [ -f "$archive" ]; then tar -xJf "$archive" -C "$kept"; fi
  seeds=("$kept" "$work/seeds")
  max_len=16384
  extra=()
  # LLVM's inline allocators poison their slabs' free space in our
  # instrumented copies but not in libMLIR's: ASan would report MLIR's own
  # allocations from those slabs, so manual poisoning is off.
  options=detect_leaks=1:allow_user_poisoning=0
  case "$t" in
    import)
      cp -n "$repo"/test/Conversion/Inputs/*.pt "$work/seeds/" 2>/dev/null || true
      max_len=65536
      # LibTorch is not instrumented and keeps global state; its unpickler
      # reserves string lengths read from the file before reading them, so
      # large single mallocs are allowed while resident memory is capped.
      options=detect_leaks=0:allocator_may_return_null=1:allow_user_poisoning=0
      # Damaged length fields make LibTorch ask for tens of GB: under ASan
      # an out-of-memory report, outside it std::bad_alloc, which the
      # importer reports in one line (test_import_errors.py replays them).
      # A child process per run keeps going past them, and past LibTorch's
      # parser crashing on a damaged code record (memopt turns that into
      # one line outside the fuzzer): each is still saved and fails the run.
      extra=(-fork=1 -ignore_ooms=1 -ignore_crashes=1) ;;
    mlir|report)
      split_lit_tests "$work/seeds" ;;
  esac
  echo "fuzz: $t for $seconds s (corpus $work/corpus, kept $kept)"
  findings() { ls "$work" | grep -E '^(crash|timeout|oom|leak|slow-unit)-' || true; }
  before=$(findings)
  rc=0
  (cd "$work" && ASAN_OPTIONS=$options UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/memopt-$t-fuzzer" -max_total_time="$seconds" -timeout=30 \
      -rss_limit_mb=6144 -malloc_limit_mb=16384 -max_len="$max_len" \
      -artifact_prefix="$work/" -print_final_stats=1 "${extra[@]}" \
      "$work/corpus" "${seeds[@]}") || rc=$?
  new=$(comm -13 <(echo "$before") <(findings) | tr '\n' ' ')
  if ((rc)) || [ -n "${new// /}" ]; then
    echo "fuzz: $t found something (exit $rc): $new" >&2
    status=1
  else
    echo "fuzz: $t: nothing found in $seconds s"
  fi
  if ((keep)); then
    (cd "$work" && ASAN_OPTIONS=$options "$build/bin/memopt-$t-fuzzer" \
      -merge=1 -max_len="$max_len" "$kept" "$work/corpus" 2>&1 | tail -1)
    tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
      -cJf "$archive" -C "$kept" .
    echo "fuzz: kept $(ls "$kept" | wc -l) inputs in $archive"
  fi
done
exit $status
