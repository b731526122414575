#!/usr/bin/env bash
# bench/export.sh - `pdcbb export --format hdf5` (and npy) throughput against `cp` of the same
# drained bytes into the same directory, in the same run (docs/PERFORMANCE.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
bench_name=bench/export.sh
# shellcheck source=bench/bench_lib.sh
. "$here/bench_lib.sh"

usage() {
    cat <<EOF2
usage: bench/export.sh [OPTIONS] [BUILD_DIR]

Fills a local job's burst buffer (pdcbb run --drain -- pdc_fill), then, from its drain
directory and into the same destination file system, times
  cp:    cp <drain>/data/*.dat OUT/cp.R && sync                (the machine's own limit)
  hdf5:  pdcbb export --format hdf5 -o OUT/R.h5 <drain> && sync (one HDF5 file)
  npy:   pdcbb export --format npy -o OUT/npy.R <drain> && sync (a .npy file per object)
(both check every extent's CRC-32C as they read it)
rotating which goes first, and prints MB/s (10^6 bytes/s) of each and hdf5/cp, npy/cp.
BUILD_DIR is a built tree (default: $repo/build).

Options:
  --size SIZE      bytes per object (K/M/G; default 256M)
  --objects N      objects (default 4: 1 GiB)
  --repeat R       repetitions (default 3; the median ratios are reported)
  --work DIR       where the job and its drain go (default: \$TMPDIR or /tmp)
  --drop-caches    echo 3 > /proc/sys/vm/drop_caches before each copy (root)
  -h, --help       this text
Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (2 objects of 16 MiB, 1 repetition).
Exit status: 0 after a complete run, 1 if a step failed, 2 on usage errors.
EOF2
}

build="$repo/build" size=256M objects=4 repeat=3 drop=0 work="${TMPDIR:-/tmp}"
bench_parse_options "$@"

W=$(mktemp -d "$work/pdcbb-exportbench.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir "$W/dest" "$W/out"

mbs() { awk -v b="$1" -v a="$2" -v c="$3" 'BEGIN {print b / (c - a) / 1e6}'; }

"$pdcbb" run --quiet --workdir "$W/job" --job-id 4243 --drain "$W/dest" \
    --pdc "capacity=$(( $(numfmt --from=iec "$size") * objects / 1048576 + 1024 ))M" \
    -- "$fill" --objects "$objects" --size "$size"
drain="$W/dest/pdcbb.4243"
bytes=$(filebytes "$drain/data")
echo "export benchmark: $objects objects of $size ($bytes bytes) from $drain to $W/out"
printf "%-4s %9s %11s %10s %8s %8s\n" rep "cp MB/s" "hdf5 MB/s" "npy MB/s" "hdf5/cp" "npy/cp"
rh=() rn=()
for r in $(seq "$repeat"); do
    one_cp() {
        drop_caches; mkdir "$W/out/cp.$r"
        t0=$(now); cp "$drain"/data/*.dat "$W/out/cp.$r/"; sync; t1=$(now)
        cp_mbs=$(mbs "$bytes" "$t0" "$t1")
    }
    one_h5() {
        drop_caches
        t0=$(now); "$pdcbb" export --format hdf5 -q -o "$W/out/$r.h5" "$drain" >/dev/null; sync; t1=$(now)
        h5_mbs=$(mbs "$bytes" "$t0" "$t1")
    }
    one_npy() {
        drop_caches
        t0=$(now); "$pdcbb" export --format npy -q -o "$W/out/npy.$r" "$drain" >/dev/null; sync; t1=$(now)
        npy_mbs=$(mbs "$bytes" "$t0" "$t1")
    }
    case $((r % 3)) in
    1) one_cp; one_h5; one_npy ;;
    2) one_h5; one_npy; one_cp ;;
    0) one_npy; one_cp; one_h5 ;;
    esac
    a=$(awk -v x="$h5_mbs" -v c="$cp_mbs" 'BEGIN {print x / c}')
    b=$(awk -v x="$npy_mbs" -v c="$cp_mbs" 'BEGIN {print x / c}')
    rh+=("$a") rn+=("$b")
    printf "%-4s %9.0f %11.0f %10.0f %8.2f %8.2f\n" "$r" "$cp_mbs" "$h5_mbs" "$npy_mbs" "$a" "$b"
    rm -rf "$W/out/cp.$r" "$W/out/$r.h5" "$W/out/npy.$r"
done
mh=$(med "${rh[@]}") mn=$(med "${rn[@]}")
printf "median hdf5/cp: %.2f, npy/cp: %.2f\n" "$mh" "$mn"
echo "RESULT bench=export bytes=$bytes objects=$objects repeat=$repeat hdf5_cp_median=$mh npy_cp_median=$mn"
