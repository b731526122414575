#!/usr/bin/env bash
# bench/slurm.sh - pdc_vpic_bench under the real local Slurm cluster, as applications run:
# one fresh batch job per repetition (`sbatch -N NODES --pdc=capacity=...`), the program
# started by `srun --mpi=pmix` on every node, as an unprivileged user, each node's burst
# buffer on private node-local storage.
#
# Starts its own cluster (scripts/slurm-cluster.sh start --node-local, the SPANK plugin in
# plugstack.conf, as tests/bats/slurm_helpers.bash does) in a fresh directory under /tmp,
# runs the jobs one after another, collects each job's RESULT lines, prints the median and
# the worst over the jobs of the cold (the job's first transfer) and warm (steady state)
# figures and of their raw baselines, and stops the cluster by pid on the way out, also on
# an error or Ctrl-C. See docs/PERFORMANCE.md, "Under Slurm".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
PROG=bench/slurm.sh

usage() {
    cat <<EOF
usage: $PROG [OPTIONS] [BUILD_DIR]

Runs pdc_vpic_bench in J fresh Slurm batch jobs on a local test cluster that this script
starts and stops (scripts/slurm-cluster.sh, private node-local storage per node, the pdcbb
SPANK plugin). Each job is
  sbatch -N NODES --ntasks-per-node=PPN --pdc=capacity=CAP   with the batch script
  srun --mpi=pmix -N NODES -n NODES*PPN pdc_vpic_bench [--particles N] [--repeat R]
       [--reopen] [--aligned] [BENCH_ARGS]
run as an unprivileged user. Prints every job's cold (first transfer of the job) and warm
(steady state) ratios to raw, then per metric the median and the worst over the jobs.
BUILD_DIR is a built tree (default: \$PDCBB_BUILD_DIR, else $repo/build); nothing is built.
Needs root (the cluster's daemons run as root; the jobs run as the user).

Options:
  --nodes N          nodes of the cluster and of every job (default 2)
  --ppn P            processes per node, 1 or 2 (default 1; the test nodes have 2 CPUs)
  --jobs J           fresh jobs, run one after another (default 5)
  --particles N      pdc_vpic_bench --particles: per process, K/M/G suffixes
                     (default: the program's, 8M = 256 MiB per process)
  --repeat R         pdc_vpic_bench --repeat: warm repetitions per job (default: its 3)
  --reopen           pdc_vpic_bench --reopen: read through objects reopened by name
  --aligned          pdc_vpic_bench --aligned: page-aligned, pre-touched buffers
  --bench-args "A"   more arguments for pdc_vpic_bench (e.g. "--placement region_static")
  --capacity SIZE    --pdc=capacity per node (default 8G)
  --ucx-tls LIST     ucx_tls of the site file, for daemons and clients (default: the
                     site default, cma,tcp; "tcp" moves all data over TCP on loopback)
  --user USER        the job user (default pdcbbtest, created by slurm-cluster.sh)
  --timeout SEC      limit per job, for srun inside it and for the wait (default 600)
  -o, --results FILE write the RESULT lines (plus job=ID nodes=N ppn=P) and the summary to
                     FILE (default: bench-slurm-DATE.txt in the current directory)
  -v, --verbose      print every job's whole output (default: its summary line)
  --keep             keep the work directory (site file, job scripts and outputs, the
                     cluster's logs) instead of removing it at the end
  -h, --help         this text

Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (1 job, 256K particles, 1 warm
repetition, no cold settle).
Exit status: 0 if every job completed with all its RESULT lines (missed performance targets
do not count), 1 if a job failed or the cluster could not start, 2 on usage errors, 130 if
interrupted. The cluster is stopped in every case.
EOF
}

die_usage() { echo "$PROG: $*" >&2; exit 2; }
say() { echo "$PROG: $*"; }

nodes=2
ppn=1
jobs=5
particles=""
repeat=""
reopen=0
aligned=0
bench_args=""
capacity=8G
ucx_tls=""
job_user=pdcbbtest
timeout_s=600
results=""
verbose=0
keep=0
build=""
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --nodes) nodes=${2:-}; shift 2 || die_usage "--nodes needs a value" ;;
    --ppn) ppn=${2:-}; shift 2 || die_usage "--ppn needs a value" ;;
    --jobs) jobs=${2:-}; shift 2 || die_usage "--jobs needs a value" ;;
    --particles) particles=${2:-}; shift 2 || die_usage "--particles needs a value" ;;
    --repeat) repeat=${2:-}; shift 2 || die_usage "--repeat needs a value" ;;
    --reopen) reopen=1; shift ;;
    --aligned) aligned=1; shift ;;
    --bench-args) bench_args=${2?--bench-args needs a value}; shift 2 ;;
    --capacity) capacity=${2:-}; shift 2 || die_usage "--capacity needs a value" ;;
    --ucx-tls) ucx_tls=${2:-}; shift 2 || die_usage "--ucx-tls needs a value" ;;
    --user) job_user=${2:-}; shift 2 || die_usage "--user needs a value" ;;
    --timeout) timeout_s=${2:-}; shift 2 || die_usage "--timeout needs a value" ;;
    -o | --results) results=${2:-}; shift 2 || die_usage "--results needs a file" ;;
    -v | --verbose) verbose=1; shift ;;
    --keep) keep=1; shift ;;
    -*) die_usage "unknown option '$1' (see --help)" ;;
    *)
        [ -z "$build" ] || die_usage "more than one BUILD_DIR given (see --help)"
        build=$1
        shift
        ;;
    esac
done
# PDCBB_BENCH_QUICK=1: a smoke run (the docs test runs the printed commands so).
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then
    jobs=1 particles=256K repeat=1
    bench_args="--cold-settle 0${bench_args:+ $bench_args}"
fi
is_count() { [[ "$1" =~ ^[1-9][0-9]*$ ]]; }
if ! is_count "$nodes" || [ "$nodes" -gt 32 ]; then die_usage "--nodes must be 1 to 32, not '$nodes'"; fi
# The test cluster's nodes have CPUs=2; Slurm 22.05 refused --overcommit with more tasks per node.
if ! is_count "$ppn" || [ "$ppn" -gt 2 ]; then die_usage "--ppn must be 1 or 2 (the test nodes have 2 CPUs), not '$ppn'"; fi
is_count "$jobs" || die_usage "--jobs must be a positive number, not '$jobs'"
is_count "$timeout_s" || die_usage "--timeout must be a positive number of seconds"
[ -z "$particles" ] || [[ "$particles" =~ ^[1-9][0-9]*[KMGkmg]?$ ]] \
    || die_usage "--particles '$particles': a count with an optional K, M or G"
[ -z "$repeat" ] || is_count "$repeat" || die_usage "--repeat must be a positive number"
[[ "$capacity" =~ ^[1-9][0-9]*[KMGTPkmgtp]?$ ]] || die_usage "--capacity '$capacity': a size like 8G"
[ -z "$ucx_tls" ] || [[ "$ucx_tls" =~ ^[A-Za-z0-9_,:.-]+$ ]] || die_usage "--ucx-tls '$ucx_tls': a UCX list like tcp"
[[ "$bench_args" != *[\'\"\\\$\`]* ]] \
    || die_usage "--bench-args: no quotes, backslashes, \$ or backquotes (words are split at spaces)"

[ "$(id -u)" = 0 ] || { echo "$PROG: needs root (it starts a Slurm cluster)" >&2; exit 2; }
build=${build:-${PDCBB_BUILD_DIR:-$repo/build}}
build=$(cd "$build" 2>/dev/null && pwd) \
    || die_usage "build directory '$build' not found (build first: scripts/build.sh)"
for f in "$build/bench/pdc_vpic_bench" "$build/bbd/pdc_bbd" "$build/cli/pdcbb"; do
    [ -x "$f" ] || die_usage "$f not found or not executable (build the project first)"
done
[ -r "$build/spank_plugin/spank_pdc.so" ] || die_usage "$build/spank_plugin/spank_pdc.so not found"
ls "$build"/client/libpdc.so* >/dev/null 2>&1 || die_usage "$build/client/libpdc.so not found"
getent passwd "$job_user" >/dev/null || [ "$job_user" = pdcbbtest ] \
    || die_usage "--user $job_user: no such user"
results=${results:-$PWD/bench-slurm-$(date +%Y%m%d-%H%M%S).txt}
: >"$results" || die_usage "cannot write $results"
results=$(cd "$(dirname "$results")" && pwd)/$(basename "$results")

np=$(( nodes * ppn ))
vpic_args=()
[ -n "$particles" ] && vpic_args+=(--particles "$particles")
[ -n "$repeat" ] && vpic_args+=(--repeat "$repeat")
[ "$reopen" = 1 ] && vpic_args+=(--reopen)
[ "$aligned" = 1 ] && vpic_args+=(--aligned)
# shellcheck disable=SC2206 # --bench-args is split at spaces, as documented
[ -n "$bench_args" ] && vpic_args+=($bench_args)
shown="pdc_vpic_bench${vpic_args[*]:+ ${vpic_args[*]}}"   # for the messages

# ---- the cluster: started here, stopped by pid in every case ---------------------------
cluster=$repo/scripts/slurm-cluster.sh
base=""
cl=""
started=0
failed=0

# Stop the cluster (slurm-cluster.sh stop: cancels jobs, stops every daemon by pid and ends
# what is left in the nodes' mount namespaces), then remove the work directory.
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$started" = 1 ]; then
        say "stopping the cluster in $cl"
        "$cluster" stop --dir "$cl" 2>&1 | sed 's/^/    /' || true
        # A burst-buffer daemon left over would be a bug of the epilog: say so, end it.
        local left
        left=$(pgrep -f "pdc_bbd .*--job-dir $base/local/" || true)
        if [ -n "$left" ]; then
            echo "$PROG: warning: pdc_bbd left after stop, killing pids $left" >&2
            # shellcheck disable=SC2086 # one pid per word
            kill -KILL $left 2>/dev/null || true
            [ "$rc" != 0 ] || rc=1
        fi
    fi
    if [ -n "$base" ] && [ -d "$base" ]; then
        if [ "$keep" = 1 ]; then
            say "kept the work directory $base"
        else
            rm -rf "$base"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM

base=$(mktemp -d /tmp/pdcbb-slurm-bench.XXXXXX)
chmod 0755 "$base"      # every parent must be traversable: munge and the job user need it
cl=$base/cluster
site=$base/site
local_root=$base/local
mkdir -p "$site/bin" "$site/lib" "$site/out" "$local_root"
chmod 0755 "$local_root"
# The job user runs copies in a world-readable place, wherever the build tree lives.
cp "$build/bench/pdc_vpic_bench" "$build/bbd/pdc_bbd" "$build/cli/pdcbb" "$site/bin/"
cp -a "$build"/client/libpdc.so* "$build/spank_plugin/spank_pdc.so" "$site/lib/"
cat >"$site/site.yaml" <<EOF
local_root: $local_root
daemon_path: $site/bin/pdc_bbd
listen_address: 127.0.0.1
ucx_net_devices: lo
max_capacity: 2P
ready_timeout: 20
EOF
[ -z "$ucx_tls" ] || echo "ucx_tls: $ucx_tls" >>"$site/site.yaml"
echo "required $site/lib/spank_pdc.so config=$site/site.yaml" >"$site/plugstack.conf"
chmod -R a+rX "$site"
chmod 1777 "$site/out"

load() { cut -d' ' -f1-3 /proc/loadavg; }
tree=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    tree="$tree+changes"
fi
load_start=$(load)
header="$(date -u '+%Y-%m-%d %H:%M:%S UTC'), tree $tree, $(nproc) cores, load average $load_start"
say "pdc_vpic_bench under Slurm, $header"
say "$jobs fresh job(s)${ucx_tls:+, ucx_tls $ucx_tls}: sbatch -N $nodes --ntasks-per-node=$ppn --pdc=capacity=$capacity;" \
    "srun --mpi=pmix -N $nodes -n $np $shown"
say "results file: $results"
{
    echo "# pdc_vpic_bench under Slurm (bench/slurm.sh), $header"
    echo "# sbatch -N $nodes --ntasks-per-node=$ppn --pdc=capacity=$capacity;" \
        "srun --mpi=pmix -N $nodes -n $np $shown; $jobs job(s);" \
        "ucx_tls ${ucx_tls:-default}"
} >>"$results"

say "starting a $nodes-node Slurm cluster with private node-local storage in $cl"
started=1
if ! "$cluster" start --dir "$cl" --nodes "$nodes" --node-local "$local_root" \
    --plugstack "$site/plugstack.conf" 2>&1 | sed 's/^/    /'; then
    echo "$PROG: the cluster did not start (logs in $cl/log; --keep keeps them)" >&2
    exit 1
fi
eval "$("$cluster" env --dir "$cl")"
export SLURM_CONF

# ---- the batch script: the same for every job --------------------------------------------
job_script=$site/out/vpic.sh
# shellcheck disable=SC2016 # the $ in single quotes are the batch script's
{
    echo '#!/bin/bash'
    echo '# Generated by bench/slurm.sh: one repetition of the benchmark.'
    echo "export UCX_WARN_UNUSED_ENV_VARS=n LD_LIBRARY_PATH=$site/lib"
    # Open MPI: shared memory within a node, TCP over loopback between the nodes
    # (docs/TEST-CLUSTER.md, "MPI under srun").
    echo 'export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo'
    echo 'echo "# job $SLURM_JOB_ID on $SLURM_JOB_NODELIST as $(id -un), PDCBB_JOB_DIR=$PDCBB_JOB_DIR"'
    printf 'timeout -k 10 %d srun --mpi=pmix -N %d -n %d %q' "$timeout_s" "$nodes" "$np" \
        "$site/bin/pdc_vpic_bench"
    [ "${#vpic_args[@]}" = 0 ] || printf ' %q' "${vpic_args[@]}"
    echo
    echo 'rc=$?'
    echo 'echo "# srun exit status $rc"'
    echo 'exit $rc'
} >"$job_script"
chmod 0755 "$job_script"
sbatch_opts=(-N "$nodes" --ntasks-per-node="$ppn" --pdc="capacity=$capacity"
    -t $(( (timeout_s + 59) / 60 + 1 )) -D "$site/out" -o "$site/out/%j.out")

# field NAME KEY FILE: value of KEY= on the RESULT line name=NAME of FILE (empty if none).
field() {
    sed -n "s/^RESULT name=$1 .*[ ]$2=\\([^ ]*\\).*/\\1/p" "$3" | head -n 1
}

# wait_gone ID: wait until job ID has left the queue, at most the job's limit plus a minute.
wait_gone() {
    local deadline=$(( SECONDS + timeout_s + 60 ))
    while [ -n "$(squeue -h -j "$1" -o %i 2>/dev/null)" ]; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.2
    done
}

metrics=(vpic_write_cold bdcats_read_cold vpic_write bdcats_read)
for (( j = 1; j <= jobs; j++ )); do
    t0=$SECONDS
    id=$(cd "$site/out" && runuser -u "$job_user" -- sbatch --parsable "${sbatch_opts[@]}" \
        "$job_script") || { echo "$PROG: sbatch failed" >&2; failed=1; break; }
    id=${id%%;*}
    if ! wait_gone "$id"; then
        echo "$PROG: job $id did not end within $(( timeout_s + 60 )) s" >&2
        failed=1
        break
    fi
    out=$site/out/$id.out
    state=$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[^ ]*\|ExitCode=[^ ]*' |
        tr '\n' ' ' | sed 's/ $//' || true)
    missing=""
    for m in "${metrics[@]}"; do
        grep -q "^RESULT name=$m " "$out" 2>/dev/null || missing="$missing $m"
    done
    [ "$verbose" = 0 ] || sed 's/^/    /' "$out"
    if [[ "$state" != *"JobState=COMPLETED"* ]] || [[ "$state" != *"ExitCode=0:0"* ]] \
        || [ -n "$missing" ]; then
        echo "$PROG: job $j/$jobs (id $id) failed: ${state:-state unknown}${missing:+, no RESULT for$missing}" >&2
        echo "---- its output ($out):" >&2
        tail -n 40 "$out" >&2 2>/dev/null || echo "(none)" >&2
        failed=1
        break
    fi
    grep '^RESULT ' "$out" | sed "s/\$/ job=$id nodes=$nodes ppn=$ppn/" >>"$results"
    grep '^TARGET ' "$out" | sed "s/^/# job=$id /" >>"$results" || true
    say "job $j/$jobs (id $id, $(( SECONDS - t0 )) s): ratio to raw" \
        "cold write $(field vpic_write_cold ratio "$out") read $(field bdcats_read_cold ratio "$out")," \
        "warm write $(field vpic_write ratio "$out") read $(field bdcats_read ratio "$out")"
done

# ---- summary over the jobs ---------------------------------------------------------------
# stats METRIC KEY WORST FORMAT: "median (worst)" of KEY over the jobs' RESULT lines of
# METRIC, in printf FORMAT; WORST is min or max.
stats() {
    sed -n "s/^RESULT name=$1 .*[ ]$2=\\([^ ]*\\).*/\\1/p" "$results" | sort -g |
        awk -v worst="$3" -v f="$4 ($4)\n" '{v[NR] = $1}
            END {
                if (!NR) { print "-"; exit }
                m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                w = worst == "min" ? v[1] : v[NR]
                printf f, m, w
            }'
}
done_jobs=$(grep -c '^RESULT name=vpic_write ' "$results" || true)
summary() {
    local m label rss
    echo "== summary: $done_jobs job(s) of $nodes node(s) x $ppn process(es)," \
        "$shown${ucx_tls:+, ucx_tls $ucx_tls}"
    echo "   median (worst) over the jobs; MB/s = 10^6 bytes/s; raw: the same bytes with" \
        "write()/read() in the job directory, in the same job"
    printf '%-12s %18s %18s %16s\n' metric "pdcbb MB/s" "raw MB/s" "ratio to raw"
    for m in "${metrics[@]}"; do
        case $m in
        vpic_write_cold) label="cold write" ;;
        bdcats_read_cold) label="cold read" ;;
        vpic_write) label="warm write" ;;
        bdcats_read) label="warm read" ;;
        esac
        printf '%-12s %18s %18s %16s\n' "$label" "$(stats "$m" mbps min %.0f)" \
            "$(stats "$m" raw_mbps min %.0f)" "$(stats "$m" ratio min %.2f)"
    done
    rss=$(stats daemon_peak_rss rss_bytes max %.0f | awk '$1 != "-" {
        gsub(/[()]/, ""); printf "%.0f MiB (largest %.0f MiB)", $1 / 1048576, $2 / 1048576}')
    [ -z "$rss" ] || echo "daemon peak resident set, on rank 0's node: $rss"
    echo "load average at start $load_start, at the end $(load)"
}
echo
summary_text=$(summary)
echo "$summary_text"
echo "${summary_text//$'\n'/$'\n'# }" | sed '1s/^/# /' >>"$results"
if [ "$failed" != 0 ]; then
    echo "$PROG: FAILED after $done_jobs of $jobs job(s) (results so far in $results)" >&2
    exit 1
fi
say "$jobs job(s) done; results in $results"
