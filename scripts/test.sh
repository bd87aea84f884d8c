#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test suite
# (lit, GoogleTest, pytest) through ctest, ending on ctest's summary.
# Usage: scripts/test.sh [ctest arguments...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${MEMOPT_BUILD_DIR:-$ROOT/build}"

"$ROOT/scripts/setup.sh" "$BUILD"
cmake --build "$BUILD"
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
