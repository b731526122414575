#!/usr/bin/env bash
# bench/drain.sh - drain throughput against `cp` of the same bytes between the same
# directories, in the same run (docs/PERFORMANCE.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
bench_name=bench/drain.sh
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"

usage() {
    cat <<EOF2
usage: bench/drain.sh [OPTIONS] [BUILD_DIR]

Fills a local job's burst buffer (pdcbb run --keep -- pdc_fill), then, on the same node-local
data and into the same destination file system, times
  cp:     cp -r <job dir>/bbd-0/objects DEST/cp.R && sync      (the machine's own limit)
  drain:  pdcbb drain --keep --to DEST <job dir>                (write, fdatasync, re-read and
                                                               check every CRC-32C, manifests)
alternating which goes first, and prints MB/s (10^6 bytes/s) of each and drain/cp.
BUILD_DIR is a built tree (default: $repo/build).

Options:
  --size SIZE      bytes per object (K/M/G; default 512M)
  --objects N      objects (default 4: 2 GiB)
  --repeat R       repetitions (default 3; the median ratio is reported)
  --work DIR       where the node-local job directory goes (default: \$TMPDIR or /tmp)
  --dest DIR       drain destination file system (default: \$TMPDIR or /tmp)
  --drop-caches    echo 3 > /proc/sys/vm/drop_caches before each copy (root): both read
                   the node-local data from the device
  -h, --help       this text
Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (2 objects of 16 MiB, 1 repetition).
Exit status: 0 after a complete run, 1 if a step failed, 2 on usage errors.
EOF2
}

build="$repo/build" size=512M objects=4 repeat=3 drop=0
work="${TMPDIR:-/tmp}" dest="${TMPDIR:-/tmp}"
bench_parse_options "$@"

W=$(mktemp -d "$work/pdcbb-drainbench.XXXXXX")
D=$(mktemp -d "$dest/pdcbb-drainbench-dest.XXXXXX")
trap 'rm -rf "$W" "$D"' EXIT

jobdir="$W/node0/pdcbb.4242"
"$pdcbb" run --quiet --keep --workdir "$W" --job-id 4242 --pdc "capacity=$(( $(numfmt --from=iec "$size") * objects / 1048576 + 1024 ))M" \
    -- "$fill" --objects "$objects" --size "$size"
bytes=$(filebytes "$jobdir/bbd-0/objects")
echo "drain benchmark: $objects objects of $size ($bytes bytes) from $W to $D"
printf "%-4s %10s %10s %8s\n" rep "cp MB/s" "drain MB/s" "drain/cp"
ratios=()
for r in $(seq "$repeat"); do
    rm -rf "$D/pdcbb.4242" "$D/cp.$r"
    one_cp() {
        drop_caches
        t0=$(now); cp -r "$jobdir/bbd-0/objects" "$D/cp.$r"; sync; t1=$(now)
        cp_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    }
    one_drain() {
        drop_caches
        t0=$(now); "$pdcbb" drain --quiet --keep --to "$D" "$jobdir" >/dev/null; t1=$(now)
        dr_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')
    }
    if [ $((r % 2)) = 1 ]; then one_cp; one_drain; else one_drain; one_cp; fi
    drained=$(filebytes "$D/pdcbb.4242/data")
    cp_mbs=$(awk -v b="$bytes" -v s="$cp_s" 'BEGIN {print b / s / 1e6}')
    dr_mbs=$(awk -v b="$drained" -v s="$dr_s" 'BEGIN {print b / s / 1e6}')
    ratio=$(awk -v d="$dr_mbs" -v c="$cp_mbs" 'BEGIN {print d / c}')
    ratios+=("$ratio")
    printf "%-4s %10.0f %10.0f %8.2f\n" "$r" "$cp_mbs" "$dr_mbs" "$ratio"
    rm -rf "$D/cp.$r" "$D/pdcbb.4242"
done
median=$(med "${ratios[@]}")
printf "median drain/cp: %.2f (target >= 0.90)\n" "$median"
echo "RESULT bench=drain bytes=$bytes objects=$objects repeat=$repeat ratio_median=$median"
