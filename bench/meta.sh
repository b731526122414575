#!/usr/bin/env bash
# bench/meta.sh - run pdcbb's metadata benchmark (pdc_meta_bench) in local jobs on this machine:
# 1, 2, 4 and 8 client processes on one daemon, then the same on 2 daemons per node. Builds
# nothing; prints every table and collects the RESULT lines (each extended with spn=S and
# run=NAME) in a file. See docs/PERFORMANCE.md, section "Metadata".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

usage() {
    cat <<EOF
usage: bench/meta.sh [OPTIONS] [BUILD_DIR]

Runs pdc_meta_bench in fresh local jobs (pdcbb run --nodes 1), one job per setting:
  for S in SPN_LIST (daemons per node, default "1 2"), for P in PROCS_LIST (default "1 2 4 8"):
    pdcbb run --nodes 1 --pdc servers_per_node=S -- pdc_meta_bench --procs P --counts COUNTS
BUILD_DIR is a configured and built tree (default: $repo/build).

Options:
  -o, --results FILE   write the RESULT lines (plus spn=S run=NAME) to FILE
                       (default: meta-results-DATE.txt in the current directory)
  --counts LIST        objects per process, pdc_meta_bench --counts (default: 2000,20000)
  --procs "LIST"       client process counts (default: "1 2 4 8")
  --spn "LIST"         daemons per node (default: "1 2")
  --args "ARGS"        extra arguments for pdc_meta_bench (e.g. "--containers 500")
  --quick              --counts 2000 --containers 200 whatever --counts says (a smoke run,
                       not a measurement; also PDCBB_BENCH_QUICK=1 in the environment)
  -h, --help           this text

One process at 1,000,000 objects:  bench/meta.sh --procs 1 --spn 1 --counts 2k,20k,200k,1M
Environment: UCX_WARN_UNUSED_ENV_VARS=n is set for the jobs; PDCBB_SHM=0 in the environment
turns the clients' shared-memory path off (a "before" measurement of the transport).
Exit status: 0 if every run completed, 1 if one failed, 2 on usage errors.
EOF
}

build=""
results=""
counts="2000,20000"
procs_list="1 2 4 8"
spn_list="1 2"
extra=""
quick=0
while [ $# -gt 0 ]; do
    case "$1" in
    -o | --results) results="$2"; shift 2 ;;
    --counts) counts="$2"; shift 2 ;;
    --procs) procs_list="$2"; shift 2 ;;
    --spn) spn_list="$2"; shift 2 ;;
    --args) extra="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    -h | --help) usage; exit 0 ;;
    -*) echo "bench/meta.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
    *)
        [ -z "$build" ] || { echo "bench/meta.sh: one BUILD_DIR only" >&2; exit 2; }
        build="$1"; shift ;;
    esac
done
# PDCBB_BENCH_QUICK=1 in the environment is --quick (the docs test runs the printed commands so).
[ "${PDCBB_BENCH_QUICK:-0}" = 1 ] && quick=1
if [ $quick = 1 ]; then counts="2000"; extra="$extra --containers 200"; fi
build=${build:-$repo/build}
pdcbb="$build/cli/pdcbb"
bench="$build/bench/pdc_meta_bench"
for f in "$pdcbb" "$bench"; do
    [ -x "$f" ] || { echo "bench/meta.sh: $f not found: build the tree first" >&2; exit 2; }
done
results=${results:-meta-results-$(date +%Y%m%d-%H%M%S).txt}
export UCX_WARN_UNUSED_ENV_VARS=n
: >"$results"
echo "# bench/meta.sh $(date -u '+%F %T') UTC, tree $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), PDCBB_SHM=${PDCBB_SHM-unset}, counts $counts" | tee -a "$results"

status=0
for spn in $spn_list; do
    for p in $procs_list; do
        run="spn${spn}-p${p}"
        echo "== $run: $p client process(es), $spn daemon(s) on one node"
        out=$(mktemp)
        # shellcheck disable=SC2086
        if "$pdcbb" run --nodes 1 --pdc "servers_per_node=$spn" -- \
            "$bench" --procs "$p" --counts "$counts" $extra >"$out" 2>&1; then
            grep -v '^RESULT' "$out" | grep -v '^# summary' || true
            grep '^RESULT' "$out" | sed "s/\$/ spn=$spn run=$run/" >>"$results"
        else
            cat "$out"
            echo "bench/meta.sh: $run failed" >&2
            status=1
        fi
        rm -f "$out"
    done
done
echo "RESULT lines in $results"
exit $status
