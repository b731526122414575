#!/usr/bin/env bash
# The reliability suite (tests/bats/35-reliability.bats, docs/RELIABILITY.md): clients mixing
# every kind of operation (creates, tags, region writes in every placement, KV sets), each
# logging what the burst buffer acknowledged (tests/progs/pdc_load.c), under load (8 and 32
# clients), client kill -9, SIGSTOP of a daemon, daemon kill -9 with restarts, a full disk, a
# full metadata store and a second Unix user attacking the daemons; after each, everything
# acknowledged must be there, in the job and from the drain. Builds first
# (scripts/build.sh), then prints every phase's figures and a total.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build}"
scale=1

usage() {
    cat <<USAGE
usage: scripts/reliability.sh [--scale N]
  Runs the reliability suite against the build in $build (built first).
  --scale N   every phase N times longer, with N times the daemon restarts (default 1: the
              version CI runs, about 2 minutes; docs/RELIABILITY.md has the figures of --scale 5)
USAGE
}

while [ $# -gt 0 ]; do
    case "$1" in
    --scale) scale="${2:?--scale needs N}"; shift 2 ;;
    --scale=*) scale="${1#--scale=}"; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "reliability.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
[[ "$scale" =~ ^[1-9][0-9]*$ ]] || { echo "reliability.sh: --scale wants a whole number >= 1, not '$scale'" >&2; exit 2; }

BUILD_DIR="$build" "$repo/scripts/build.sh" >/dev/null
log="$(mktemp "${TMPDIR:-/tmp}/pdcbb-reliability.XXXXXX")"
status=0
PDCBB_BUILD_DIR="$build" PDCBB_RELIABILITY_SCALE="$scale" \
    bats --show-output-of-passing-tests "$repo/tests/bats/35-reliability.bats" >"$log" 2>&1 || status=$?
# Each phase: its name, what the clients were told is stored, and the checks in the job and
# from the drain.
awk '/^(ok|not ok) / {print; next}
     /^# wrote / {w += $3; x = $5; gsub(/[()]/, "", x); f += x}
     /^# checked / || /^# from the drain: checked / {sub(/^# /, "    "); print}
     /^# (from the drain: )?(missing|bad|torn):/ {sub(/^# /, "    "); print}
     END {printf "operations acknowledged: %d (%d failed under the faults)\n", w, f}' "$log"
if [ "$status" -ne 0 ]; then
    # what bats printed for each phase that failed: the failed check (its first lines) and the
    # end of the job's output, so a failure in CI can be read from CI's log
    awk 'function flush(  i) {for (i = 0; i < n; i++) if (i < 4 || i >= n - 76) print line[i]; n = 0}
         /^(ok|not ok) / {flush(); on = /^not ok /}
         on {line[n++] = $0}
         END {flush()}' "$log" >&2
    echo "reliability.sh: a phase failed; the whole output is in $log" >&2
    exit 1
fi
rm -f "$log"
