#!/usr/bin/env bash
# Configure and build pdcbb into BUILD_DIR (default: <repo>/build). Extra arguments go to
# CMake's configure step, e.g. scripts/build.sh -DPDCBB_SANITIZE=ON.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$build" -j "$(nproc)"
