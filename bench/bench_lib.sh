# bench/bench_lib.sh - what the copy benchmarks (bench/drain.sh, bench/export.sh) share: their
# options, the PDCBB_BENCH_QUICK smoke sizes, the built programs they run and small timing
# helpers. Sourced, not run: the caller defines usage() and bench_name (e.g. bench/drain.sh),
# sets the defaults (build size objects repeat drop work, and dest if it takes --dest), then
# calls bench_parse_options "$@".

# Parse the options (see the caller's usage), apply PDCBB_BENCH_QUICK=1, check --repeat and
# that the build has cli/pdcbb and bench/pdc_fill: sets pdcbb and fill. Exits 2 on usage
# errors, 1 if the build is missing.
bench_parse_options() {
    while [ $# -gt 0 ]; do
        case "$1" in
        -h | --help) usage; exit 0 ;;
        --size) size=$2; shift 2 ;;
        --objects) objects=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --dest) [ -n "${dest+set}" ] || { echo "$bench_name: unknown option $1 (see --help)" >&2; exit 2; }
            dest=$2; shift 2 ;;
        --drop-caches) drop=1; shift ;;
        -*) echo "$bench_name: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) build=$1; shift ;;
        esac
    done
    # PDCBB_BENCH_QUICK=1: a smoke run (the docs test runs the printed commands so).
    if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then size=16M objects=2 repeat=1; fi
    case "$repeat" in '' | *[!0-9]* | 0) echo "$bench_name: --repeat needs a positive number, not '$repeat'" >&2; exit 2 ;; esac
    pdcbb="$build/cli/pdcbb" fill="$build/bench/pdc_fill"
    for f in "$pdcbb" "$fill"; do
        [ -x "$f" ] || { echo "$bench_name: missing $f: build the project first" >&2; exit 1; }
    done
    export UCX_WARN_UNUSED_ENV_VARS=n
}

# Seconds since the epoch, with nanoseconds.
now() { date +%s.%N; }
# --drop-caches: drop the page cache (root) before a timed copy.
drop_caches() { [ "$drop" = 1 ] && sync && echo 3 > /proc/sys/vm/drop_caches || true; }
# The bytes of all files below DIR.
filebytes() { find "$1" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}'; }
# The median of the numbers given (the upper one of an even count).
med() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
