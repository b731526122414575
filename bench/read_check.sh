#!/usr/bin/env bash
# bench/read_check.sh - what checking every extent's CRC-32C while reading a drain costs
# (docs/PERFORMANCE.md, "Checking extents while reading"): pdcbb get and export of one large
# object by this build and, when PDCBB_BASE names one, by a pdcbb built without the check.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
bench_name=bench/read_check.sh
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"

usage() {
    cat <<EOF2
usage: [PDCBB_BASE=OLD_PDCBB] bench/read_check.sh [OPTIONS] [BUILD_DIR]

Drains a local job holding one object of SIZE bytes (pdc_fill: PDC_DOUBLE, 64 MiB extents),
then times, with the page cache warm, each with BUILD_DIR's pdcbb and (when set) PDCBB_BASE:
  get:      pdcbb get DRAIN OBJ > /dev/null             (slabs aligned with the extents:
                                                         each checked in the caller's buffer)
  get-off:  pdcbb get DRAIN OBJ 1000:N-1000 > /dev/null (slabs straddle the extents: each read
                                                         once into the extent buffer)
  npy:      pdcbb export --format npy -o OUT DRAIN && sync
  hdf5:     pdcbb export --format hdf5 -o OUT DRAIN && sync
rotating which pdcbb goes first; prints the seconds of each and the median of new/base.
BUILD_DIR is a built tree (default: $repo/build).

Options:
  --size SIZE      bytes of the object (K/M/G; default 1G)
  --repeat R       repetitions (default 3)
  --work DIR       where the job and its drain go (default: \$TMPDIR or /tmp)
  --drop-caches    echo 3 > /proc/sys/vm/drop_caches before each command (root)
  -h, --help       this text
Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (16 MiB, 1 repetition).
Exit status: 0 after a complete run, 1 if a step failed, 2 on usage errors.
EOF2
}

build="$repo/build" size=1G objects=1 repeat=3 drop=0 work="${TMPDIR:-/tmp}"
bench_parse_options "$@"
objects=1
base="${PDCBB_BASE:-}"
[ -z "$base" ] || [ -x "$base" ] || { echo "$bench_name: PDCBB_BASE=$base is not a program" >&2; exit 2; }

W=$(mktemp -d "$work/pdcbb-readcheck.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/dest" "$W/out"
"$pdcbb" run --quiet --workdir "$W/job" --job-id 4244 --drain "$W/dest" \
    --pdc "capacity=$(( $(numfmt --from=iec "$size") / 1048576 + 1024 ))M" \
    -- "$fill" --objects 1 --size "$size"
drain="$W/dest/pdcbb.4244"
obj=$("$pdcbb" ls "$drain" | awk '/PDC_DOUBLE/ {print $1; exit}')
n=$(( $(numfmt --from=iec "$size") / 8 ))
cat "$drain"/data/*.dat > /dev/null # warm
echo "read-check benchmark: object $obj, $n doubles, from $drain"

# one_run PDCBB KIND: seconds of one command
one_run() {
    local p=$1 t0 t1
    drop_caches
    t0=$(now)
    case $2 in
    get) "$p" get "$drain" "$obj" > /dev/null ;;
    get-off) "$p" get "$drain" "$obj" "1000:$((n - 1000))" > /dev/null ;;
    npy) "$p" export --format npy -q -o "$W/out/npy" "$drain" > /dev/null; sync ;;
    hdf5) "$p" export --format hdf5 -q -o "$W/out/x.h5" "$drain" > /dev/null; sync ;;
    esac
    t1=$(now)
    rm -rf "$W/out/npy" "$W/out/x.h5"
    awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", b - a}'
}

printf "%-4s %-8s %8s %8s %8s\n" rep what "new s" "base s" new/base
for kind in get get-off npy hdf5; do
    ratios=()
    for r in $(seq "$repeat"); do
        b=-
        if [ -n "$base" ] && [ $((r % 2)) = 0 ]; then b=$(one_run "$base" "$kind"); fi
        a=$(one_run "$pdcbb" "$kind")
        if [ -n "$base" ] && [ $((r % 2)) = 1 ]; then b=$(one_run "$base" "$kind"); fi
        q=-
        if [ "$b" != - ]; then q=$(awk -v x="$a" -v y="$b" 'BEGIN {printf "%.2f", x / y}'); ratios+=("$q"); fi
        printf "%-4s %-8s %8s %8s %8s\n" "$r" "$kind" "$a" "$b" "$q"
    done
    [ ${#ratios[@]} -eq 0 ] || echo "RESULT bench=read_check what=$kind new_over_base_median=$(med "${ratios[@]}")"
done
