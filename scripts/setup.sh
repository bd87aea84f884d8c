#!/usr/bin/env bash
# Installs the Debian packages memopt needs (idempotent) and configures the build.
# Usage: scripts/setup.sh [build-dir]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"

mapfile -t PACKAGES < <(grep -v '^#' "$ROOT/scripts/debian-packages.txt" | grep .)

source "$ROOT/scripts/ensure-packages.sh"
ensure_packages "${PACKAGES[@]}"

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
