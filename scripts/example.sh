#!/usr/bin/env bash
# Runs memopt on the bundled examples: saves a spiking VGG and a ResNet-18
# as TorchScript (examples/*.py), compiles each with memopt-compile
# (--prefer memory), trains a few steps with the eager model and with the
# compiled one, and prints peak training memory and step time before and
# after, next to the compile summary. Ends with the memopt-opt demo on the
# planned spiking block (examples/spiking_block.mlir), and with a plain
# PyTorch training loop made memory-efficient by one `memopt.wrap` line
# (examples/train_wrap.py: summary, memory timeline figure, peak and step
# time eager vs wrapped).
#
# Installs what is missing and builds first (scripts/setup.sh; set
# MEMOPT_SKIP_BUILD=1 when the build is known to be up to date).
# Outputs go to $MEMOPT_BUILD_DIR/examples (default build/examples).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MEMOPT_BUILD_DIR:-$ROOT/build}"
PYTHON=/usr/bin/python3

"$ROOT/scripts/setup.sh" "$BUILD"
if [ "${MEMOPT_SKIP_BUILD:-0}" != 1 ]; then
  cmake --build "$BUILD" --target memopt-compile memopt-opt memopt_runtime
fi

export MEMOPT_BUILD_DIR="$BUILD"
export OMP_NUM_THREADS=1
OUT="$BUILD/examples"
mkdir -p "$OUT"
COMPILE="$BUILD/bin/memopt-compile"

for example in spiking_vgg resnet; do
  echo "== examples/$example.py =="
  shapes=$("$PYTHON" -W ignore "$ROOT/examples/$example.py" --out "$OUT/$example.pt")
  # shellcheck disable=SC2086  # $shapes is a list of arguments
  "$COMPILE" "$OUT/$example.pt" $shapes --prefer memory \
    -o "$OUT/$example.memopt.pt" --report "$OUT/$example.report.json"
  echo
  "$PYTHON" -W ignore "$ROOT/examples/train.py" "$ROOT/examples/$example.py" \
    "$OUT/$example.memopt.pt" --report "$OUT/$example.report.json"
  echo
done

OPT="$BUILD/bin/memopt-opt"
EXAMPLE="$ROOT/examples/spiking_block.mlir"
echo "== memopt-opt: a planned spiking block (verified, round-tripped) =="
"$OPT" "$EXAMPLE"
echo
echo "== the same block with its checkpoint regions inlined =="
"$OPT" "$EXAMPLE" --memopt-inline-checkpoints
echo

echo "== examples/train_wrap.py: a training loop + one memopt.wrap line =="
"$PYTHON" -W ignore "$ROOT/examples/train_wrap.py" --cache-dir "$OUT/cache" \
  --out "$OUT/train_wrap" --plot "$OUT/train_wrap.timeline.svg"
