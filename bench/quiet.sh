#!/usr/bin/env bash
# bench/quiet.sh - the burst buffer on a busy node: what idle daemons cost an application that
# computes, and one client's metadata rate while every core computes.
#
# 1. OS noise: B CPU-bound processes (B = the number of cores) each do a fixed amount of work,
#    alone (no job), then inside a local job whose daemon has just served a burst of metadata
#    requests and is now idle; repeated, alternating. Prints the median wall time of each and
#    the slowdown, and the daemon's CPU time and wake-ups while the application computed
#    (/proc/PID/stat and /proc/PID/status of pdc_bbd).
# 2. Metadata under load: pdc_meta_bench (one client, one daemon, shared memory) on a quiet
#    machine, then with B CPU-bound processes running; median ops/s of each phase.
# See docs/PERFORMANCE.md, "Busy nodes".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
reps=3
count=20000

usage() {
    cat <<EOF
usage: bench/quiet.sh [--reps N] [--count N] [BUILD_DIR]

Measures, in fresh local jobs (pdcbb run --nodes 1) with BUILD_DIR's pdcbb and
pdc_meta_bench (default BUILD_DIR: \$PDCBB_BUILD_DIR, else $repo/build):
  - the slowdown idle daemons cause a CPU-bound application on every core, and the
    daemon's CPU time and wake-ups meanwhile;
  - one client's metadata rate, quiet and with every core busy.
Options:
  --reps N     repetitions of each measurement (default $reps; medians are printed)
  --count N    objects per metadata run (default $count)
  -h, --help   this text
PDCBB_BENCH_QUICK=1 makes it a smoke run (1 repetition, 2000 objects, short work).
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=$2; shift 2 ;;
        --count) count=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "bench/quiet.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
for v in "$reps" "$count"; do
    case "$v" in ''|*[!0-9]*|0)
        echo "bench/quiet.sh: --reps and --count want whole numbers above 0, not '$v'" >&2
        exit 2 ;;
    esac
done
work_iters=40000000
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then
    reps=1 count=2000 work_iters=4000000
fi
build=${1:-${PDCBB_BUILD_DIR:-$repo/build}}
pdcbb=$build/cli/pdcbb
mbench=$build/bench/pdc_meta_bench
for f in "$pdcbb" "$mbench"; do
    [ -x "$f" ] || { echo "bench/quiet.sh: missing $f: build the project first" >&2; exit 1; }
done
export UCX_WARN_UNUSED_ENV_VARS=n
cores=$(nproc)
work=$(mktemp -d "${TMPDIR:-/tmp}/pdcbb-quiet.XXXXXX")
burners=()
stop_burners() {
    for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${burners[@]}"; do wait "$p" 2>/dev/null || true; done
    burners=()
}
trap 'stop_burners; rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }

# The application: $cores processes, each $work_iters loop iterations; prints wall seconds.
app() {
    local t0 t1 pids=() p
    t0=$(date +%s.%N)
    for (( i = 0; i < cores; i++ )); do
        awk -v n="$work_iters" 'BEGIN { for (i = 0; i < n; i++) s += i; exit s < 0 }' &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}
export -f app
export cores work_iters

# One line of a /proc file's field: $1 pid; utime+stime in clock ticks, and wake-ups.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
wakeups() { awk '/^voluntary_ctxt_switches/ {v = $2} /^nonvoluntary_ctxt_switches/ {n = $2} END {print v + n}' "/proc/$1/status"; }
export -f cpu_ticks wakeups

echo "== OS noise: $cores CPU-bound processes x $work_iters iterations, alone and beside an idle daemon"
alone=() injob=() dcpu=() dwake=()
for (( r = 0; r < reps; r++ )); do
    alone+=("$(app)")
    out=$("$pdcbb" run --quiet --nodes 1 --workdir "$work/job" -- bash -c '
        "$1" --procs 1 --counts 2000 >/dev/null || exit 1
        pid=$(cat "$PDCBB_JOB_DIR"/bbd-0.pid)
        sleep 0.2
        c0=$(cpu_ticks $pid) w0=$(wakeups $pid)
        t=$(app)
        c1=$(cpu_ticks $pid) w1=$(wakeups $pid)
        echo "$t $(( c1 - c0 )) $(( w1 - w0 ))"' job "$mbench")
    read -r t c w <<<"$out"
    injob+=("$t")
    dcpu+=("$(awk -v c="$c" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f\n", c * 1000 / hz }')")
    dwake+=("$(awk -v w="$w" -v t="$t" 'BEGIN { printf "%.1f\n", w / t }')")
    rm -rf "$work/job"
done
a=$(printf '%s\n' "${alone[@]}" | median)
j=$(printf '%s\n' "${injob[@]}" | median)
printf 'application alone %s s, beside an idle daemon %s s: slowdown %s %%\n' "$a" "$j" \
    "$(awk -v a="$a" -v j="$j" 'BEGIN { printf "%.1f", (j / a - 1) * 100 }')"
printf 'the idle daemon meanwhile: CPU %s ms (median; runs: %s), wake-ups %s per second\n' \
    "$(printf '%s\n' "${dcpu[@]}" | median)" "${dcpu[*]}" "$(printf '%s\n' "${dwake[@]}" | median)"

echo "== one client's metadata rate, $count objects, one daemon: quiet, then $cores cores busy"
declare -A rates
for load in quiet busy; do
    for (( r = 0; r < reps; r++ )); do
        if [ "$load" = busy ]; then
            for (( i = 0; i < cores; i++ )); do
                awk 'BEGIN { for (;;) s++ }' &
                burners+=($!)
            done
        fi
        out=$("$pdcbb" run --quiet --nodes 1 --workdir "$work/job" -- \
            "$mbench" --procs 1 --counts "$count")
        stop_burners
        rm -rf "$work/job"
        while read -r phase rate; do
            rates[$load.$phase]+="$rate "
        done < <(sed -n 's/^RESULT name=meta_\([a-z_]*\) .*ops_per_s=\([0-9.]*\).*/\1 \2/p' <<<"$out")
    done
done
printf '%-12s %14s %14s %8s\n' phase "quiet ops/s" "busy ops/s" busy/quiet
for phase in cont_create create tag_put tag_get open; do
    q=$(tr ' ' '\n' <<<"${rates[quiet.$phase]:-}" | grep . | median)
    b=$(tr ' ' '\n' <<<"${rates[busy.$phase]:-}" | grep . | median)
    printf '%-12s %14.0f %14.0f %8.2f\n' "$phase" "$q" "$b" \
        "$(awk -v q="$q" -v b="$b" 'BEGIN { print (q > 0 ? b / q : 0) }')"
done
