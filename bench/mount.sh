#!/usr/bin/env bash
# bench/mount.sh - the job's filesystem (pdcbb_mount, --pdc mount=yes) against the node-local
# filesystem it lives on and against the PDC API, the same work in the same run: starts a
# fresh local job of one node with the mount and runs bench/pdc_mount_bench in it
# (docs/PERFORMANCE.md "The mount"), and the same work through a reference FUSE filesystem over
# the same node-local filesystem (libfuse's own passthrough_ll, built from Debian's libfuse3-dev
# examples by the project's build: what FUSE itself allows on this kernel). Builds nothing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")

usage() {
    cat <<EOF
usage: bench/mount.sh [OPTIONS] [BUILD_DIR]

In a fresh local job of one node with --pdc mount=yes, times the same work through the mount
(\$PDCBB_MOUNT), on the node-local filesystem directly (raw: a directory in the job directory,
where the daemons keep their data), through a reference FUSE filesystem over that filesystem
(fuse-ref: libfuse's own passthrough_ll, multithreaded, -o cache=never,timeout=1, the floor
any FUSE filesystem starts from here) and through the PDC API, and prints per figure the rate
of the job's first repetition and of the steady state, the ratio to raw and to fuse-ref
(/ref), the CPU used meanwhile by the program, the side's FUSE process and the daemons, and
what limits it:
  write, read   a large file in 1 MiB write(2)/read(2) requests (PDC: a 1-D uint8 object,
                one region transfer per MiB, or one for the whole)
  create        many 4 KiB files created, written and closed in one directory (mdtest-like)
  stat          stat(2) of each right after, and again once the mount's attribute cache
                (1 s) expired (stat>1s)
  read4k        each opened, read and closed;  remove: each unlinked
Nothing is synced, on either side. BUILD_DIR is a built tree (default: $repo/build).

Options:
  --size SIZE      bytes of the large file (M or G; default 1G)
  --files N        small files (default 2000)
  --repeat R       steady-state repetitions after the first (default 3)
  --settle S       seconds each side waits before the job's first write (default 10)
  --work DIR       where the job's directories go (default: \$TMPDIR or /tmp)
  --read-ahead KB  set the mount's read-ahead (its bdi's read_ahead_kb; root only) to KB
                   before the run: the kernel asks the mount 128 KiB at a time by default
  --ref-options O  passthrough_ll's -o options for fuse-ref (default cache=never,timeout=1;
                   e.g. cache=auto,timeout=1,writeback for the kernel's writeback cache)
  -o, --results F  also write the RESULT lines to F
  -h, --help       this text
Environment: PDCBB_BENCH_QUICK=1 makes it a smoke run (64 MiB, 200 files, one steady
repetition, no settling). Needs fusermount3 and /dev/fuse.
Exit status: 0 after a complete run, 1 if the job or a check failed, 2 on usage errors.
EOF
}

build="$repo/build" size=1G files=2000 repeat=3 settle=10 work="${TMPDIR:-/tmp}" results="" ra_kb=""
ref_opts=cache=never,timeout=1
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --size | --files | --repeat | --settle | --work | --read-ahead | --ref-options | -o | --results)
        [ $# -ge 2 ] || { echo "bench/mount.sh: $1 needs a value (see --help)" >&2; exit 2; }
        case "$1" in
        --size) size=$2 ;; --files) files=$2 ;; --repeat) repeat=$2 ;; --settle) settle=$2 ;;
        --work) work=$2 ;; --read-ahead) ra_kb=$2 ;; --ref-options) ref_opts=$2 ;; *) results=$2 ;;
        esac
        shift 2 ;;
    -*) echo "bench/mount.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build=$1; shift ;;
    esac
done
case "$size" in
[1-9]*M | [1-9]*G) mib=${size%?}; [ "${size: -1}" = G ] && mib=$((mib * 1024)) ;;
*) mib="" ;;
esac
case "$mib" in '' | *[!0-9]*) echo "bench/mount.sh: --size wants e.g. 256M or 1G, not '$size'" >&2; exit 2 ;; esac
for v in "files:$files" "repeat:$repeat" "settle:$settle" "read-ahead:${ra_kb:-0}"; do
    case "${v#*:}" in '' | *[!0-9]*) echo "bench/mount.sh: --${v%%:*} wants a whole number, not '${v#*:}'" >&2; exit 2 ;; esac
done
[ "$files" -gt 0 ] || { echo "bench/mount.sh: --files must be at least 1" >&2; exit 2; }
if [ -n "$ra_kb" ] && [ "$(id -u)" -ne 0 ]; then
    echo "bench/mount.sh: --read-ahead needs root (it writes /sys/class/bdi/*/read_ahead_kb)" >&2
    exit 2
fi
if [ ! -d "$work" ] || [ ! -w "$work" ]; then
    echo "bench/mount.sh: --work $work is not a writable directory" >&2
    exit 2
fi
if [ "${PDCBB_BENCH_QUICK:-0}" = 1 ]; then mib=64 files=200 repeat=1 settle=0; fi
pdcbb="$build/cli/pdcbb" bench="$build/bench/pdc_mount_bench" ref="$build/bench/fuse_ref_passthrough_ll"
for f in "$pdcbb" "$bench" "$build/mount/pdcbb_mount"; do
    [ -x "$f" ] || { echo "bench/mount.sh: missing $f: build the project first" >&2; exit 1; }
done
if [ ! -x "$ref" ]; then
    echo "bench/mount.sh: missing $ref, the reference filesystem: the build found no" \
        "/usr/share/doc/libfuse3-dev/examples/passthrough_ll.c (scripts/install-deps.sh installs libfuse3-dev; then build again)" >&2
    exit 1
fi
command -v fusermount3 >/dev/null || { echo "bench/mount.sh: fusermount3 is missing (scripts/install-deps.sh)" >&2; exit 1; }
[ -c /dev/fuse ] || { echo "bench/mount.sh: /dev/fuse is missing: FUSE is not available here" >&2; exit 1; }
export UCX_WARN_UNUSED_ENV_VARS=n

# Room for one side's large file (each is removed before the next side runs), the first
# repetition's small files on every side (4 KiB files take 8 KiB with their data file), slack.
cap=$((mib * 2 + files * 3 * 8 / 1024 + 512))
echo "# bench/mount.sh $(date -u '+%F %T') UTC, tree $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?'), load average $(cut -d' ' -f1-3 /proc/loadavg), fuse-ref -o $ref_opts"
out=$(mktemp "$work/pdcbb-mountbench.XXXXXX")
refdir=$(mktemp -d "$work/pdcbb-mountbench-ref.XXXXXX") ref_pid=""
# shellcheck disable=SC2317 # called by the EXIT trap
stop_ref() {
    if [ -n "$ref_pid" ]; then
        fusermount3 -u "$refdir/mnt" 2>/dev/null ||
            { kill "$ref_pid" 2>/dev/null; fusermount3 -uz "$refdir/mnt" 2>/dev/null; } || true
        wait "$ref_pid" 2>/dev/null || true
    fi
    rm -rf "$out" "$refdir"
}
trap stop_ref EXIT
# The reference filesystem over the same filesystem as the job's directory (both in $work).
mkdir "$refdir/src" "$refdir/mnt"
# (libfuse 3.14 logs that it ignores passthrough_ll's unset thread limit: its log is shown only
# if it fails.)
"$ref" -f -o "source=$refdir/src,$ref_opts" "$refdir/mnt" 2>"$refdir/log" &
ref_pid=$!
for _ in $(seq 100); do mountpoint -q "$refdir/mnt" && break; sleep 0.1; done
if ! mountpoint -q "$refdir/mnt"; then
    echo "bench/mount.sh: the reference filesystem ($ref) did not mount at $refdir/mnt:" >&2
    cat "$refdir/log" >&2
    exit 1
fi
status=0
# shellcheck disable=SC2016
TMPDIR="$work" "$pdcbb" run --quiet --nodes 1 --pdc "capacity=${cap}M,mount=yes" -- bash -c '
    if [ -n "$6" ]; then
        bdi=/sys/class/bdi/$(mountpoint -d "$PDCBB_MOUNT")/read_ahead_kb
        echo "$6" >"$bdi" && echo "# the mount'"'"'s read-ahead: $(cat "$bdi") KiB" || exit 1
    fi
    mkdir "$PDCBB_JOB_DIR/raw" && exec "$1" --mib "$2" --files "$3" --reps "$4" --settle "$5" \
        --ref-pid "$8" "$PDCBB_MOUNT" "$PDCBB_JOB_DIR/raw" "$7"' \
    _ "$bench" "$mib" "$files" "$repeat" "$settle" "$ra_kb" "$refdir/mnt" "$ref_pid" >"$out" 2>&1 || status=1
cat "$out"
echo "# load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$results" ] || grep '^RESULT' "$out" >"$results" || true
[ $status = 0 ] || echo "bench/mount.sh: the job failed (its output is above)" >&2
exit $status
