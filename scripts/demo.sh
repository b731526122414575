#!/usr/bin/env bash
# Install what pdcbb needs, build it, and run the demo: a local 2-node job on this machine
# whose program creates containers, objects and tags across the job's 2 daemons, drained at
# the end to a directory that is then listed and verified.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
"$repo/scripts/install-deps.sh"
BUILD_DIR="$build" "$repo/scripts/build.sh"
export UCX_WARN_UNUSED_ENV_VARS=n
dest="$(mktemp -d "${TMPDIR:-/tmp}/pdcbb-demo-drain.XXXXXX")"
echo
echo "== pdcbb run --nodes 2 --drain $dest -- pdc_demo"
"$build/cli/pdcbb" run --nodes 2 --drain "$dest" -- "$build/examples/pdc_demo"
echo
echo "== after the job: pdcbb ls $dest"
"$build/cli/pdcbb" ls "$dest"
echo
echo "== pdcbb verify $dest"
"$build/cli/pdcbb" verify "$dest"
echo
echo "The drained job stays in $dest (docs/DRAIN-FORMAT.md describes it)."
