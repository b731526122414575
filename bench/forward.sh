#!/usr/bin/env bash
# bench/forward.sh - what forwarding costs one client's calls to another node's daemon: the
# straight path (PDCBB_FORWARD=never: the client holds a connection to that daemon) against the
# forwarded one (PDCBB_FORWARD=always: the request goes through this node's daemon, FORWARD).
#
# Per mode, --jobs fresh 2-node local jobs (pdcbb run --nodes 2) each run pdc_remote_bench:
# metadata round trips (create, tag put, tag get, open) and region writes and reads of objects
# on the other node's daemon, the first transfer of a fresh object and the steady state apart.
# Then this machine's own limit in the same run: dd writing and reading the same bytes in
# $TMPDIR, and cp of them. Prints per phase the medians over the jobs, forwarded/straight, and
# the data rates' ratio to the raw write and read. See docs/PERFORMANCE.md, "Forwarding".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
jobs=3
ops=20000
sizes="64K,1M,16M,64M"
total="256M"

usage() {
    cat <<EOF
usage: bench/forward.sh [--jobs N] [--ops N] [--sizes LIST] [--total SIZE] [BUILD_DIR]

Compares one client's calls to another node's daemon straight (PDCBB_FORWARD=never) and
through its own node's daemon (PDCBB_FORWARD=always), in fresh 2-node local jobs of
BUILD_DIR's pdcbb (default BUILD_DIR: \$PDCBB_BUILD_DIR, else $repo/build), with the
machine's raw write and read (dd) and cp of the same bytes as the limit.
Options:
  --jobs N      fresh jobs per mode (default $jobs; medians are printed)
  --ops N       metadata calls per phase (default $ops)
  --sizes LIST  region sizes (default $sizes)
  --total SIZE  bytes per object and size (default $total)
  -h, --help    this text
PDCBB_BENCH_QUICK=1 makes it a smoke run (1 job, 500 calls, 16M per size).
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) jobs=${2:-}; shift 2 ;;
        --ops) ops=${2:-}; shift 2 ;;
        --sizes) sizes=${2:-}; shift 2 ;;
        --total) total=${2:-}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "bench/forward.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
for v in "$jobs" "$ops"; do
    case "$v" in ''|*[!0-9]*|0)
        echo "bench/forward.sh: --jobs and --ops want whole numbers above 0, not '$v'" >&2
        exit 2 ;;
    esac
done
case "$total" in *[!0-9KMG]*|'')
    echo "bench/forward.sh: --total wants a size such as 256M, not '$total'" >&2; exit 2 ;;
esac
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then
    jobs=1 ops=500 total=16M
fi
build=${1:-${PDCBB_BUILD_DIR:-$repo/build}}
pdcbb=$build/cli/pdcbb
rbench=$build/bench/pdc_remote_bench
for f in "$pdcbb" "$rbench"; do
    [ -x "$f" ] || { echo "bench/forward.sh: missing $f: build the project first" >&2; exit 1; }
done
export UCX_WARN_UNUSED_ENV_VARS=n
work=$(mktemp -d "${TMPDIR:-/tmp}/pdcbb-forward.XXXXXX")
trap 'rm -rf "$work"' EXIT
median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }

declare -A vals
for (( j = 0; j < jobs; j++ )); do
    for mode in never always; do
        echo "== job $((j + 1)) of $jobs, PDCBB_FORWARD=$mode" >&2
        out=$(PDCBB_FORWARD=$mode "$pdcbb" run --quiet --nodes 2 --pdc capacity=4G \
            --workdir "$work/job" -- "$rbench" --ops "$ops" --sizes "$sizes" --total "$total" \
            --repeat 1)
        rm -rf "$work/job"
        while read -r key value; do
            vals[$mode.$key]+="$value "
        done < <(sed -n 's/^RESULT name=remote_\([a-z_]*\) forward=[a-z]* \(size=\([0-9]*\) \)\{0,1\}.*=\([0-9.]*\)$/\1.\3 \4/p' <<<"$out")
    done
done

# The machine's limit in the same run: the same bytes written, read and copied on $TMPDIR.
bytes=$(numfmt --from=iec "$total")
mb=$(( bytes / 1048576 ))
t0=$(date +%s.%N); dd if=/dev/zero of="$work/raw" bs=1M count="$mb" conv=fsync status=none
t1=$(date +%s.%N); dd if="$work/raw" of=/dev/null bs=1M status=none
t2=$(date +%s.%N); cp "$work/raw" "$work/raw.cp"; sync "$work/raw.cp"
t3=$(date +%s.%N)
rate() { awk -v b="$bytes" -v a="$1" -v z="$2" 'BEGIN { printf "%.0f", b / (z - a) / 1e6 }'; }
raw_w=$(rate "$t0" "$t1") raw_r=$(rate "$t1" "$t2") cp_r=$(rate "$t2" "$t3")
echo "this machine: raw write ${raw_w} MB/s (dd, fsync), raw read ${raw_r} MB/s (page cache), cp ${cp_r} MB/s"

get() { tr ' ' '\n' <<<"${vals[$1]:-}" | grep . | median; }
printf '\n%-22s %14s %14s %10s\n' "metadata (ops/s)" straight forwarded fwd/straight
for phase in create tag_put tag_get open; do
    s=$(get "never.$phase.") f=$(get "always.$phase.")
    printf '%-22s %14.0f %14.0f %10.2f\n' "$phase" "$s" "$f" \
        "$(awk -v s="$s" -v f="$f" 'BEGIN { print (s > 0 ? f / s : 0) }')"
done
printf '\n%-22s %14s %14s %10s %10s\n' "data (MB/s)" straight forwarded fwd/straight fwd/raw
IFS=, read -ra size_list <<<"$sizes"
for sz in "${size_list[@]}"; do
    b=$(numfmt --from=iec "$sz")
    for phase in write_first write_steady read_first read_steady; do
        s=$(get "never.$phase.$b") f=$(get "always.$phase.$b")
        case $phase in write*) lim=$raw_w ;; *) lim=$raw_r ;; esac
        printf '%-22s %14.0f %14.0f %10.2f %10.2f\n' "$sz $phase" "$s" "$f" \
            "$(awk -v s="$s" -v f="$f" 'BEGIN { print (s > 0 ? f / s : 0) }')" \
            "$(awk -v f="$f" -v l="$lim" 'BEGIN { print (l > 0 ? f / l : 0) }')"
    done
done
