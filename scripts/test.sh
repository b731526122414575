#!/usr/bin/env bash
# Install what pdcbb needs, build it, and run every test: the unit tests (ctest) and the
# end-to-end tests (bats) against real daemons, UCX, LMDB and PMIx; then the unit tests and
# the core end-to-end tests again on an AddressSanitizer/UBSan build, where any report from
# any process (clients and daemons) fails the run. Exit status 0 only if everything passed.
# BUILD_DIR overrides the build directory (default <repo>/build; the sanitizer build goes to
# BUILD_DIR-asan).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
asan="$build-asan"
"$repo/scripts/install-deps.sh"

echo "== build"
BUILD_DIR="$build" "$repo/scripts/build.sh" -DPDCBB_WERROR=ON

echo "== unit tests"
ctest --test-dir "$build" --output-on-failure --timeout 300

echo "== end-to-end tests"
PDCBB_BUILD_DIR="$build" bats --timing "$repo/tests/bats"

echo "== sanitizer build: unit tests and core end-to-end tests"
BUILD_DIR="$asan" CMAKE_BUILD_TYPE=Debug "$repo/scripts/build.sh" -DPDCBB_SANITIZE=ON \
    -DPDCBB_WERROR=ON
reports="$asan/sanitizer-reports"
rm -rf "$reports"
mkdir -p "$reports"
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1"
export LSAN_OPTIONS="suppressions=$repo/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=0"
ctest --test-dir "$asan" --output-on-failure --timeout 300
PDCBB_BUILD_DIR="$asan" bats "$repo/tests/bats/10-daemon.bats" "$repo/tests/bats/20-metadata.bats" \
    "$repo/tests/bats/30-faults.bats" "$repo/tests/bats/40-launcher.bats" \
    "$repo/tests/bats/70-regions.bats" "$repo/tests/bats/100-drain.bats" \
    "$repo/tests/bats/110-drained-api.bats" "$repo/tests/bats/120-stage.bats"
if [ -n "$(ls -A "$reports")" ]; then
    echo "sanitizer reports:" >&2
    head -n 60 "$reports"/* >&2
    exit 1
fi
echo "== all tests passed"
