#!/usr/bin/env bash
# bench/run.sh - run pdcbb's region data-path benchmarks in local jobs on this machine.
#
# Builds nothing: it runs BUILD_DIR/bench/pdc_region_sweep and BUILD_DIR/bench/pdc_vpic_bench
# inside `BUILD_DIR/cli/pdcbb run --nodes N`, for N = 1 and 2 (one daemon per node), plus a
# `cp`/`cat` reference of the same volume, prints every table, and collects the machine-readable
# RESULT lines (each extended with nodes=N and run=NAME) in a file. See docs/PERFORMANCE.md.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

usage() {
    cat <<EOF
usage: bench/run.sh [OPTIONS] [BUILD_DIR]

Runs the region data-path benchmarks of pdcbb in local jobs (pdcbb run) and prints their
tables; builds nothing. BUILD_DIR is a configured and built tree (default: $repo/build).

Runs, for each node count (default 1 and 2, one daemon per node):
  pdcbb run --nodes N --pdc capacity=CAP -- pdc_region_sweep [SWEEP_ARGS]
  pdcbb run --nodes N --pdc capacity=CAP -- pdc_vpic_bench   [VPIC_ARGS]
and, with --mpi NP, also the VPIC bench under 'mpirun -np NP'. Then a cp/cat reference.

Options:
  -o, --results FILE   write the RESULT lines (plus nodes=N run=NAME) to FILE
                       (default: bench-results-DATE.txt in the current directory)
  --bench-dir DIR      where the benchmark programs are (default: BUILD_DIR/bench)
  --nodes "LIST"       node counts to run (default: "1 2")
  --capacity SIZE      burst-buffer capacity per node for the jobs (default: 8G)
  --mpi NP             also run pdc_vpic_bench under mpirun -np NP (MPI builds)
  --jobs J             run pdc_vpic_bench (and its --mpi run) in J fresh jobs per node
                       count (default 1) and summarise its cold (the job's first transfer)
                       and warm ratios to raw over the jobs: median and worst
  --sweep-args "ARGS"  extra arguments for pdc_region_sweep (e.g. "--repeat 5")
  --vpic-args "ARGS"   extra arguments for pdc_vpic_bench (e.g. "--particles 1M")
  --quick              small volumes, one repetition, at most 2 jobs (a smoke run, not a
                       measurement; also PDCBB_BENCH_QUICK=1 in the environment)
  --no-sweep, --no-vpic, --no-cp
                       skip that part
  -h, --help           this text

Environment: UCX_WARN_UNUSED_ENV_VARS=n is set for the jobs. TMPDIR decides where pdcbb run
puts the node-local directories (default /tmp) and where the cp reference runs.
Exit status: 0 if every benchmark ran to completion (missed performance targets do not count),
1 if one failed, 2 on usage errors.
EOF
}

build=""
results=""
bench_dir=""
nodes_list="1 2"
capacity="8G"
mpi_np=""
jobs=1
sweep_args=""
vpic_args=""
quick=0
do_sweep=1
do_vpic=1
do_cp=1
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    -o | --results) results=${2:?--results needs a file}; shift 2 ;;
    --bench-dir) bench_dir=${2:?--bench-dir needs a directory}; shift 2 ;;
    --nodes) nodes_list=${2:?--nodes needs a list}; shift 2 ;;
    --capacity) capacity=${2:?--capacity needs a size}; shift 2 ;;
    --mpi) mpi_np=${2:?--mpi needs a process count}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a count}; shift 2 ;;
    --sweep-args) sweep_args=${2?}; shift 2 ;;
    --vpic-args) vpic_args=${2?}; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-sweep) do_sweep=0; shift ;;
    --no-vpic) do_vpic=0; shift ;;
    --no-cp) do_cp=0; shift ;;
    --) shift; break ;;
    -*) echo "bench/run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *)
        if [ -n "$build" ]; then
            echo "bench/run.sh: more than one BUILD_DIR given (see --help)" >&2
            exit 2
        fi
        build=$1
        shift
        ;;
    esac
done
if [ $# -gt 0 ]; then
    if [ -n "$build" ] || [ $# -gt 1 ]; then
        echo "bench/run.sh: unexpected arguments: $* (see --help)" >&2
        exit 2
    fi
    build=$1
fi

build=$(cd "${build:-$repo/build}" 2>/dev/null && pwd) || {
    echo "bench/run.sh: build directory '${build:-$repo/build}' not found (build first:" \
        "cmake -S . -B build && cmake --build build -j)" >&2
    exit 2
}
bench_dir=${bench_dir:-$build/bench}
pdcbb=$build/cli/pdcbb
sweep=$bench_dir/pdc_region_sweep
vpic=$bench_dir/pdc_vpic_bench
for f in "$pdcbb" $([ $do_sweep = 1 ] && echo "$sweep") $([ $do_vpic = 1 ] && echo "$vpic"); do
    if [ ! -x "$f" ]; then
        echo "bench/run.sh: $f not found or not executable (build the project, or give" \
            "--bench-dir)" >&2
        exit 2
    fi
done
results=${results:-$PWD/bench-results-$(date +%Y%m%d-%H%M%S).txt}
: >"$results"

# PDCBB_BENCH_QUICK=1 in the environment is --quick (the docs test runs the printed commands so).
[ "${PDCBB_BENCH_QUICK:-0}" = 1 ] && quick=1
if [ $quick = 1 ]; then
    sweep_args="--total 32M --min-regions 4 --repeat 1 $sweep_args"
    vpic_args="--particles 1M --repeat 1 --cold-settle 0 $vpic_args"
    [ "$jobs" -gt 2 ] && jobs=2
fi

export UCX_WARN_UNUSED_ENV_VARS=n

mpirun_cmd=()
if [ -n "$mpi_np" ]; then
    command -v mpirun >/dev/null || {
        echo "bench/run.sh: --mpi given but mpirun is not installed" >&2
        exit 2
    }
    mpirun_cmd=(mpirun -np "$mpi_np")
    if [ "$(id -u)" = 0 ]; then
        mpirun_cmd+=(--allow-run-as-root)
    fi
    # Two cores: allow more ranks than cores, and keep Open MPI off the network.
    mpirun_cmd+=(--oversubscribe --mca btl "self,vader")
fi

echo "# pdcbb benchmarks, $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)," \
    "$(sed -n 's/^PRETTY_NAME="\(.*\)"$/\1/p' /etc/os-release 2>/dev/null), kernel $(uname -r)"
echo "# tree: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown), build $build"
echo "# storage: ${TMPDIR:-/tmp} on $(df -P "${TMPDIR:-/tmp}" | awk 'NR==2 {print $1}')" \
    "($(stat -f -c %T "${TMPDIR:-/tmp}"))"
echo "# results file: $results"
{
    echo "# pdcbb benchmarks, $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores," \
        "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
} >>"$results"

failed=0
out=$(mktemp "${TMPDIR:-/tmp}/pdcbb-bench-out.XXXXXX")
trap 'rm -f "$out"' EXIT

# run NAME NODES CMD...: one local job; prints its output, collects its RESULT lines.
run() {
    local name=$1 nodes=$2
    shift 2
    echo
    echo "== $name: pdcbb run --nodes $nodes --pdc capacity=$capacity -- $*"
    local rc
    set +e
    "$pdcbb" run --nodes "$nodes" --pdc "capacity=$capacity" -- "$@" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" != 0 ]; then
        echo "bench/run.sh: $name on $nodes node(s) failed with status $rc" >&2
        failed=1
    fi
    grep '^RESULT ' "$out" | sed "s/\$/ nodes=$nodes run=$name/" >>"$results" || true
    grep '^TARGET ' "$out" | sed "s/^/# nodes=$nodes run=$name /" >>"$results" || true
}

# shellcheck disable=SC2086 # the extra arguments are meant to be split
for n in $nodes_list; do
    if [ $do_sweep = 1 ]; then
        run sweep "$n" "$sweep" $sweep_args
    fi
    if [ $do_vpic = 1 ]; then
        for (( j = 1; j <= jobs; j++ )); do
            run vpic "$n" "$vpic" $vpic_args
        done
    fi
    if [ $do_vpic = 1 ] && [ -n "$mpi_np" ]; then
        for (( j = 1; j <= jobs; j++ )); do
            run "vpic-mpi$mpi_np" "$n" "${mpirun_cmd[@]}" "$vpic" $vpic_args
        done
    fi
done

# Reference: cp of a page-cached file of 256 MiB (the VPIC volume) to a new file, no sync, and
# cat of the copy (page cache), in the directory the jobs use.
if [ $do_cp = 1 ]; then
    mb=256
    [ $quick = 1 ] && mb=32
    d=$(mktemp -d "${TMPDIR:-/tmp}/pdcbb-bench-cp.XXXXXX")
    head -c $((mb << 20)) /dev/urandom >"$d/src"
    cat "$d/src" >/dev/null
    best_w=0 best_r=0
    echo
    echo "== cp reference: $mb MiB, page-cached source -> new file in ${TMPDIR:-/tmp}, no sync"
    for i in 1 2 3; do
        t0=$(date +%s%N)
        cp "$d/src" "$d/dst"
        t1=$(date +%s%N)
        cat "$d/dst" >/dev/null
        t2=$(date +%s%N)
        w=$(awk -v b=$((mb << 20)) -v ns=$((t1 - t0)) 'BEGIN {printf "%.1f", b / (ns / 1e9) / 1e6}')
        r=$(awk -v b=$((mb << 20)) -v ns=$((t2 - t1)) 'BEGIN {printf "%.1f", b / (ns / 1e9) / 1e6}')
        echo "cp_write run $i: $w MB/s   cat_read: $r MB/s"
        rm -f "$d/dst"
        best_w=$(awk -v a="$best_w" -v b="$w" 'BEGIN {print (b > a ? b : a)}')
        best_r=$(awk -v a="$best_r" -v b="$r" 'BEGIN {print (b > a ? b : a)}')
    done
    rm -rf "$d"
    echo "RESULT name=cp_write bytes=$((mb << 20)) mbps=$best_w stat=best_of_3" | tee -a "$results"
    echo "RESULT name=cat_read bytes=$((mb << 20)) mbps=$best_r stat=best_of_3" | tee -a "$results"
fi

echo
echo "== summary (also in $results)"
grep -v '^#' "$results" || true
grep '^# nodes=.*TARGET' "$results" | sed 's/^# //' || true
# Cold (the job's first transfer) and warm (steady state) ratios of the VPIC runs, over jobs.
if [ $do_vpic = 1 ]; then
    echo
    echo "== pdc_vpic_bench over $jobs fresh job(s) per node count: ratio to raw, median (worst)"
    runs=vpic
    [ -n "$mpi_np" ] && runs="vpic vpic-mpi$mpi_np"
    for n in $nodes_list; do
        for r in $runs; do
            for m in vpic_write_cold bdcats_read_cold vpic_write bdcats_read; do
                grep "^RESULT name=$m .* nodes=$n run=$r\$" "$results" |
                    sed -n 's/.* ratio=\([0-9.]*\).*/\1/p' | sort -n |
                    awk -v n="$n" -v m="$m" -v r="$r" '{v[NR] = $1}
                        END {if (NR) printf "nodes=%s %-10s %-17s median %.2f (worst %.2f, %d jobs)\n",
                                            n, r, m, v[int((NR + 1) / 2)], v[1], NR}'
            done
        done
    done
fi

exit $failed

