#!/usr/bin/env bash
# Install what pdcbb needs, build it, and run every test: the unit tests (ctest) and the
# end-to-end tests (bats) against real daemons, UCX, LMDB and PMIx. Exit status 0 only if
# everything passed. BUILD_DIR overrides the build directory (default <repo>/build).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
"$repo/scripts/install-deps.sh"
BUILD_DIR="$build" "$repo/scripts/build.sh" -DPDCBB_WERROR=ON

echo "== unit tests"
ctest --test-dir "$build" --output-on-failure --timeout 300

echo "== end-to-end tests"
export PDCBB_BUILD_DIR="$build"
bats --timing "$repo/tests/bats"
