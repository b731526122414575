#!/usr/bin/env bash
# bench/init.sh - how long PDCinit takes, in fresh local jobs of 1, 2 and 4 nodes.
#
# Each repetition is a new job (pdcbb run). In it, a first process calls PDCinit once: it is the
# node's first client, pays for its UCX context, one connection and one JOB_TABLE request, and
# makes the node's daemon write job.table. A second process then calls PDCinit, and PDCclose +
# PDCinit N more times: the steady state of every later process of the node (one local file,
# no message). Prints per node count the median over the repetitions of the first process's
# PDCinit, of the second process's first PDCinit, and of its steady-state median. See
# docs/PERFORMANCE.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
reps=5
nodes_list="1 2 4"

usage() {
    cat <<EOF
usage: bench/init.sh [--reps N] [--nodes "LIST"] [BUILD_DIR]

Measures PDCinit in fresh local jobs (pdcbb run --nodes N) with BUILD_DIR/tests/pdc_meta_tool
(default BUILD_DIR: $PDCBB_BUILD_DIR, else $repo/build). Options:
  --reps N        fresh jobs per node count (default $reps)
  --nodes "LIST"  node counts (default "$nodes_list")
  -h, --help      this text
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --nodes) nodes_list=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "bench/init.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
build=${1:-${PDCBB_BUILD_DIR:-$repo/build}}
pdcbb=$build/cli/pdcbb
tool=$build/tests/pdc_meta_tool
for f in "$pdcbb" "$tool"; do
    [ -x "$f" ] || { echo "bench/init.sh: missing $f: build the project first" >&2; exit 1; }
done
export UCX_WARN_UNUSED_ENV_VARS=n

median() { sort -n | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }

printf '%-6s %22s %22s %22s\n' nodes "first process (ms)" "second process (ms)" "steady state (ms)"
for n in $nodes_list; do
    first=() second=() steady=()
    for (( r = 0; r < reps; r++ )); do
        out=$("$pdcbb" run --quiet --nodes "$n" -- sh -c \
            "'$tool' 'init-time 1' && '$tool' 'init-time 20'")
        first+=("$(sed -n '1s/.*first=\([0-9.]*\).*/\1/p' <<<"$out")")
        second+=("$(sed -n '2s/.*first=\([0-9.]*\).*/\1/p' <<<"$out")")
        steady+=("$(sed -n '2s/.*median=\([0-9.]*\).*/\1/p' <<<"$out")")
    done
    printf '%-6s %22s %22s %22s\n' "$n" "$(printf '%s\n' "${first[@]}" | median)" \
        "$(printf '%s\n' "${second[@]}" | median)" "$(printf '%s\n' "${steady[@]}" | median)"
done
echo "(median of $reps fresh jobs each; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
