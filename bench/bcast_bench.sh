#!/usr/bin/env bash
# bench/bcast_bench.sh - `pdcbb bcast` against the other ways to put one file on every node of
# a job: `srun -N NODES cp SRC DEST` (every node reads the shared file itself) and Slurm's own
# `sbcast SRC DEST`, in the same batch job on a local Slurm cluster whose nodes have private
# node-local storage, plus a plain `cp` of the file on this machine as the yardstick.
#
# Starts its own cluster (scripts/slurm-cluster.sh start --node-local, the SPANK plugin in
# plugstack.conf, as tests/bats/slurm_helpers.bash does) in a fresh directory under /tmp, runs
# one job as an unprivileged user, checks that every node got identical copies from every
# method, prints the time, MB/s (file bytes / wall time) and ratio to the plain cp of each,
# and stops the cluster by pid on the way out, also on an error or Ctrl-C. See
# docs/PERFORMANCE.md, "File broadcast".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
PROG=bench/bcast_bench.sh

usage() {
    cat <<EOF
usage: $PROG [--nodes N] [--size SIZE] [--repeat R] [--keep] [BUILD_DIR]

Starts a local Slurm cluster of N nodes with private node-local storage, makes a file of SIZE
random bytes on the shared filesystem and, in one batch job of N nodes (sbatch --pdc), puts it
on every node's node-local job directory R times with each of
  pdcbb bcast SRC DEST        (read once, streamed down the daemons' tree)
  srun -N N cp SRC DEST       (every node reads the shared file)
  sbcast -f SRC DEST          (Slurm's file broadcast)
then prints per method the best time of the R runs, its MB/s and its ratio to a plain cp of the
file on this machine (best of R). Every copy is checked (sha256) on every node.
BUILD_DIR is a built tree (default: \$PDCBB_BUILD_DIR, else $repo/build). Needs root.

Options:
  --nodes N    nodes of the cluster and the job (default 4)
  --size SIZE  file size with K, M or G suffix (default 1G)
  --repeat R   runs of each method (default 3)
  --keep       keep the work directory (cluster logs, job output)
  -h, --help   this text

Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (4 MiB, 1 run).
Exit status: 0 if every method put identical copies on every node, 1 otherwise, 2 on usage
errors. The cluster is stopped in every case.
EOF
}

die_usage() { echo "$PROG: $*" >&2; exit 2; }
say() { echo "$PROG: $*"; }

nodes=4
size=1G
repeat=3
keep=0
build=""
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --nodes) nodes=${2:-}; shift 2 || die_usage "--nodes needs a value" ;;
    --size) size=${2:-}; shift 2 || die_usage "--size needs a value" ;;
    --repeat) repeat=${2:-}; shift 2 || die_usage "--repeat needs a value" ;;
    --keep) keep=1; shift ;;
    -*) die_usage "unknown option '$1' (see --help)" ;;
    *) [ -z "$build" ] || die_usage "more than one BUILD_DIR given"; build=$1; shift ;;
    esac
done
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then
    size=4M repeat=1
fi
[[ "$nodes" =~ ^[1-9][0-9]*$ ]] && [ "$nodes" -le 16 ] || die_usage "--nodes must be 1 to 16"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die_usage "--repeat must be a positive number"
[[ "$size" =~ ^([1-9][0-9]*)([KMG]?)$ ]] || die_usage "--size '$size': a size like 1G"
case "${BASH_REMATCH[2]}" in
K) bytes=$(( BASH_REMATCH[1] << 10 )) ;; M) bytes=$(( BASH_REMATCH[1] << 20 )) ;;
G) bytes=$(( BASH_REMATCH[1] << 30 )) ;; *) bytes=${BASH_REMATCH[1]} ;;
esac
[ "$(id -u)" = 0 ] || { echo "$PROG: needs root (it starts a Slurm cluster)" >&2; exit 2; }
build=${build:-${PDCBB_BUILD_DIR:-$repo/build}}
build=$(cd "$build" 2>/dev/null && pwd) || die_usage "build directory '$build' not found"
for f in "$build/bbd/pdc_bbd" "$build/cli/pdcbb" "$build/spank_plugin/spank_pdc.so"; do
    [ -e "$f" ] || die_usage "$f not found (build the project first)"
done

cluster=$repo/scripts/slurm-cluster.sh
base=""
cl=""
started=0
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ "$started" = 1 ]; then
        "$cluster" stop --dir "$cl" 2>&1 | sed 's/^/    /' || true
        local left
        left=$(pgrep -f "pdc_bbd .*--job-dir $base/local/" || true)
        if [ -n "$left" ]; then
            echo "$PROG: warning: pdc_bbd left after stop, killing pids $left" >&2
            kill -KILL $left 2>/dev/null || true
            [ "$rc" != 0 ] || rc=1
        fi
    fi
    if [ -n "$base" ] && [ -d "$base" ]; then
        if [ "$keep" = 1 ]; then say "kept the work directory $base"; else rm -rf "$base"; fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'echo "$PROG: interrupted" >&2; exit 130' INT TERM

base=$(mktemp -d /tmp/pdcbb-bcast-bench.XXXXXX)
chmod 0755 "$base"
cl=$base/cluster
site=$base/site
local_root=$base/local
mkdir -p "$site/bin" "$site/lib" "$site/out" "$site/data" "$local_root"
chmod 0755 "$local_root"
cp "$build/bbd/pdc_bbd" "$build/cli/pdcbb" "$site/bin/"
cp -a "$build"/client/libpdc.so* "$build/spank_plugin/spank_pdc.so" "$site/lib/"
cat >"$site/site.yaml" <<EOF
local_root: $local_root
daemon_path: $site/bin/pdc_bbd
listen_address: 127.0.0.1
ucx_net_devices: lo
max_capacity: 2P
ready_timeout: 20
EOF
echo "required $site/lib/spank_pdc.so config=$site/site.yaml" >"$site/plugstack.conf"
src=$site/data/src.bin
head -c "$bytes" /dev/urandom >"$src"
sum=$(sha256sum "$src" | cut -d' ' -f1)
chmod -R a+rX "$site"
chmod 1777 "$site/out"

now() { date +%s.%N; }
best() { sort -g | head -n 1; }
# The yardstick: a plain cp of the file on this machine, into a fresh file each time.
cp_times=()
for ((i = 0; i < repeat; i++)); do
    rm -f "$base/cp.bin"
    t0=$(now)
    cp "$src" "$base/cp.bin"
    t1=$(now)
    cp_times+=("$(echo "$t1 - $t0" | bc -l)")
done
rm -f "$base/cp.bin"
cp_best=$(printf '%s\n' "${cp_times[@]}" | best)

say "$(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg);" \
    "file $bytes bytes, $nodes nodes, best of $repeat"
say "starting a $nodes-node Slurm cluster with private node-local storage in $cl"
started=1
"$cluster" start --dir "$cl" --nodes "$nodes" --node-local "$local_root" \
    --plugstack "$site/plugstack.conf" 2>&1 | sed 's/^/    /'
eval "$("$cluster" env --dir "$cl")"
export SLURM_CONF

job=$site/out/bcast.sh
cat >"$job" <<EOF
#!/bin/bash
export UCX_WARN_UNUSED_ENV_VARS=n LD_LIBRARY_PATH=$site/lib
set -e
now() { date +%s.%N; }
cd "\$PDCBB_JOB_DIR"
for ((i = 0; i < $repeat; i++)); do
    t0=\$(now); $site/bin/pdcbb bcast --quiet $src bcast.bin; t1=\$(now)
    echo "TIME pdcbb_bcast \$(echo "\$t1 - \$t0" | bc -l)"
    t0=\$(now); srun -N $nodes --ntasks-per-node=1 cp $src "\$PDCBB_JOB_DIR/srun_cp.bin"; t1=\$(now)
    echo "TIME srun_cp \$(echo "\$t1 - \$t0" | bc -l)"
    t0=\$(now); sbcast -f $src "\$PDCBB_JOB_DIR/sbcast.bin"; t1=\$(now)
    echo "TIME sbcast \$(echo "\$t1 - \$t0" | bc -l)"
done
srun -N $nodes --ntasks-per-node=1 bash -c 'cd "\$PDCBB_JOB_DIR"; for f in bcast.bin srun_cp.bin sbcast.bin; do echo "SUM \$SLURMD_NODENAME \$f \$(sha256sum \$f | cut -d" " -f1)"; done'
EOF
chmod 0755 "$job"
id=$(cd "$site/out" && runuser -u pdcbbtest -- sbatch --parsable -N "$nodes" \
    --ntasks-per-node=1 --pdc="capacity=$(( bytes * 3 / 1048576 + 64 ))M" -t 30 \
    -o "$site/out/%j.out" "$job")
id=${id%%;*}
for _ in $(seq 3600); do
    [ -n "$(squeue -h -j "$id" -o %i 2>/dev/null)" ] || break
    sleep 0.5
done
out=$site/out/$id.out
# Every node must have got identical copies from every method.
ok=1
sums=$(grep -c "^SUM .* $sum\$" "$out" || true)
nnodes=$( (grep '^SUM ' "$out" || true) | awk '{print $2}' | sort -u | wc -l)
if [ "$sums" != $(( 3 * nodes )) ] || [ "$nnodes" != "$nodes" ]; then
    echo "$PROG: expected $(( 3 * nodes )) identical copies, found $sums on $nnodes nodes; the job's output:" >&2
    cat "$out" >&2
    ok=0
fi
printf '%-14s %10s %10s %10s\n' method seconds MB/s "cp ratio"
line() {
    awk -v m="$1" -v t="$2" -v b="$bytes" -v c="$cp_best" \
        'BEGIN { printf "%-14s %10.3f %10.1f %10.2f\n", m, t, b / 1e6 / t, c / t }'
}
line "cp (local)" "$cp_best"
for m in pdcbb_bcast srun_cp sbcast; do
    t=$(sed -n "s/^TIME $m //p" "$out" | best)
    if [ -z "$t" ]; then
        echo "$PROG: no time for $m" >&2
        ok=0
        continue
    fi
    line "$m" "$t"
done
say "cp ratio: the plain cp's time over the method's (1.00: as fast as copying the file once" \
    "on this machine, for all $nodes nodes together)"
[ "$ok" = 1 ]
