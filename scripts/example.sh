#!/usr/bin/env bash
# Runs memopt on the bundled example: parses and verifies a planned spiking
# block (examples/spiking_block.mlir), prints it, then undoes the plan with
# memopt-inline-checkpoints to show the graph autograd would otherwise keep.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MEMOPT_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh" "$BUILD"
cmake --build "$BUILD" --target memopt-opt memopt-translate memopt_runtime

OPT="$BUILD/bin/memopt-opt"
EXAMPLE="$ROOT/examples/spiking_block.mlir"
echo "== planned block (verified, round-tripped) =="
"$OPT" "$EXAMPLE"
echo
echo "== the same block with checkpoint regions inlined =="
"$OPT" "$EXAMPLE" --memopt-inline-checkpoints
