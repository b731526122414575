# Shared set-up for pdcbb's end-to-end tests: where the build is, the environment the real
# parts need on this machine, and helpers to start and check local jobs.
#
# PDCBB_BUILD_DIR names the CMake build tree (default: <repo>/build).

load '/usr/lib/bats/bats-support/load.bash'
load '/usr/lib/bats/bats-assert/load.bash'

REPO_DIR="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
BUILD_DIR="${PDCBB_BUILD_DIR:-$REPO_DIR/build}"
PDCBB="$BUILD_DIR/cli/pdcbb"
BBD="$BUILD_DIR/bbd/pdc_bbd"
TOOL="$BUILD_DIR/tests/pdc_meta_tool"
MPI_TOOL="$BUILD_DIR/tests/pdc_mpi_meta"
RAWMSG="$BUILD_DIR/tests/pdcbb_rawmsg"
DEMO="$BUILD_DIR/examples/pdc_demo"

export UCX_WARN_UNUSED_ENV_VARS=n
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_oob_tcp_if_include=lo
unset PDCBB_JOB_DIR PDCBB_SERVER_DIRS PDCBB_JOB_ID

require_build() {
    for f in "$PDCBB" "$BBD" "$TOOL" "$RAWMSG"; do
        [ -x "$f" ] || { echo "missing $f: build the project first (PDCBB_BUILD_DIR=$BUILD_DIR)" >&2; return 1; }
    done
}

# A fresh work directory per test, removed by the test's teardown.
make_workdir() {
    WORKDIR="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats.XXXXXX")"
    export WORKDIR
}

# require_progs PROG...: the other built programs a test file needs.
require_progs() {
    local f
    for f in "$@"; do
        [ -x "$f" ] || { echo "missing $f: build the project first (PDCBB_BUILD_DIR=$BUILD_DIR)" >&2; return 1; }
    done
}

# setup_workdir [PROG...]: the usual start of a test's setup: require_build, require_progs
# PROG..., make_workdir.
setup_workdir() {
    require_build && require_progs "$@" && make_workdir
}

# ensure_test_users: the suite's Unix users (scripts/test-users.sh: pdcbbtest, pdcbbtest2)
# exist, created here if missing. Every test file that runs something as one of them calls it
# (in setup_file), so no file depends on a user that another file or an earlier run created.
ensure_test_users() {
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root to create the test users" >&2; return 1; }
    local out
    out="$("$REPO_DIR/scripts/test-users.sh" create 2>&1)" || { echo "$out" >&2; return 1; }
}

# FUSE for users other than root, as Debian's udev rules make it (/dev/fuse mode 0666):
# fusermount3 opens /dev/fuse as the user, and a machine without udev (a container) may have
# the node root's alone.
fuse_for_users() {
    [ -c /dev/fuse ] || { echo "no /dev/fuse: the kernel's fuse module is needed" >&2; return 1; }
    [ "$(stat -c %a /dev/fuse)" = 666 ] || chmod 0666 /dev/fuse
}

# as USER CMD...: run a command as a test user (ensure_test_users), with a home of its own under
# $WORKDIR (which the user must be able to enter: chmod 755).
as() {
    local u=$1
    shift
    mkdir -p "$WORKDIR/home-$u"
    chown "$u" "$WORKDIR/home-$u"
    runuser -u "$u" -- env HOME="$WORKDIR/home-$u" TMPDIR="$WORKDIR/home-$u" "$@"
}

# For a test file whose tests use an installed tree: called at the file's top level, defines
# setup_file (install_prefix, one $PREFIX for the file) and teardown_file (remove_prefix).
use_install_prefix() {
    setup_file() { install_prefix; }
    teardown_file() { remove_prefix; }
}

# in_job NODES SCRIPT [pdcbb run options...]: run SCRIPT with bash inside a local job of NODES
# nodes (work directory $WORKDIR$IN_JOB_SUBDIR), in $WORKDIR; stdout and stderr in $output,
# also printed. IN_JOB_TIMEOUT: the job's limit in seconds (default 900).
in_job() {
    local nodes=$1 script=$2
    shift 2
    run timeout "${IN_JOB_TIMEOUT:-900}" "$PDCBB" run --nodes "$nodes" \
        --workdir "$WORKDIR${IN_JOB_SUBDIR:-}" --quiet "$@" -- \
        bash -c "cd \"\$WORKDIR\" || exit 1; $script"
    echo "$output"
}

# pdc_bbd processes whose command line mentions the given directory.
daemons_under() {
    pgrep -f "pdc_bbd .*--job-dir $1" || true
}

# Fail if any daemon of this work directory is still running.
assert_no_daemons() {
    local left
    left="$(daemons_under "$1")"
    if [ -n "$left" ]; then
        echo "pdc_bbd still running under $1: $left" >&2
        pkill -9 -f "pdc_bbd .*--job-dir $1" || true
        return 1
    fi
}

# Stop by pid anything a test left behind, then remove the work directory.
cleanup_workdir() {
    [ -n "${WORKDIR:-}" ] || return 0
    local pids
    pids="$(daemons_under "$WORKDIR")"
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null
    rm -rf "$WORKDIR"
}

# Wait until pid is gone (zombies count as gone), at most $2 seconds.
wait_gone() {
    local pid=$1 deadline=$(( $(date +%s) + ${2:-10} ))
    while [ -e "/proc/$pid" ] && ! grep -q '^[^ ]* ([^)]*) [ZX]' "/proc/$pid/stat" 2>/dev/null; do
        [ "$(date +%s)" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# `cmake --install` of the build into a fresh $PREFIX (for setup_file; remove_prefix undoes it).
install_prefix() {
    export PREFIX="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-prefix.XXXXXX")"
    cmake --install "$BUILD_DIR" --prefix "$PREFIX" > "$PREFIX.log" 2>&1
}

remove_prefix() {
    rm -rf "$PREFIX" "$PREFIX.log"
}

# mount_tmpfs DIR OPTIONS: a tmpfs that unmount_tmpfs (called from teardown) removes again.
# The test's setup starts with MOUNTS=().
mount_tmpfs() {
    mkdir -p "$1"
    mount -t tmpfs -o "$2" tmpfs "$1"
    MOUNTS+=("$1")
}

unmount_tmpfs() {
    local m
    for m in "${MOUNTS[@]}"; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    MOUNTS=()
}
