#!/usr/bin/env bash
# Install what pdcbb needs, build it, and run the demo: a local 2-node job on this machine
# whose program creates containers, objects and tags across the job's 2 daemons.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
"$repo/scripts/install-deps.sh"
BUILD_DIR="$build" "$repo/scripts/build.sh"
export UCX_WARN_UNUSED_ENV_VARS=n
echo
echo "== pdcbb run --nodes 2 -- pdc_demo"
exec "$build/cli/pdcbb" run --nodes 2 -- "$build/examples/pdc_demo"
