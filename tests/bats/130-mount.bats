#!/usr/bin/env bats
# The job's burst buffer as a filesystem (mount/pdcbb_mount.c, docs/INTERNALS.md "The mount"):
# one pdcbb_mount per node of a local job, every node's mount the same tree; the POSIX calls
# programs make (tests/progs/posix_check.py), real programs unchanged (cp -r, tar, dd, Python
# with NumPy and h5py), what another node sees after a close, and another Unix user kept out.

load helpers

MOUNT="$BUILD_DIR/mount/pdcbb_mount"
CHECK="$REPO_DIR/tests/progs/posix_check.py"
# Debian's python3 (scripts/install-deps.sh installs python3-numpy and python3-h5py for it).
PY=/usr/bin/python3

setup_file() {
    ensure_test_users
}

setup() {
    setup_workdir "$MOUNT"
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root (as the CI runs them)" >&2; return 1; }
    command -v fusermount3 >/dev/null || { echo "fusermount3 missing: scripts/install-deps.sh" >&2; return 1; }
    chmod 755 "$WORKDIR"
}

teardown() {
    local m
    for m in "$WORKDIR"/m*; do
        mountpoint -q "$m" 2>/dev/null && { fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m"; }
    done
    cleanup_workdir
}

# mounted_job NODES SCRIPT: SCRIPT in a local job of NODES nodes, with node k's mount at
# $WORKDIR/mk ($M0, $M1, ...), started before and unmounted after SCRIPT (the mounts' stderr
# in $WORKDIR/mount-k.err, printed).
mounted_job() {
    in_job "$1" '
        IFS=: read -r -a dirs <<<"$PDCBB_SERVER_DIRS"
        pids=()
        for k in "${!dirs[@]}"; do
            mkdir -p "m$k"
            PDCBB_JOB_DIR="${dirs[$k]}" "'"$MOUNT"'" --ready-fd 3 "$WORKDIR/m$k" 3>"ready-$k" 2>"mount-$k.err" &
            pids+=($!)
            export M$k="$WORKDIR/m$k"
        done
        for _ in $(seq 100); do
            [ "$(cat ready-* 2>/dev/null | grep -c ready)" -eq "${#dirs[@]}" ] && break
            sleep 0.1
        done
        [ "$(cat ready-* 2>/dev/null | grep -c ready)" -eq "${#dirs[@]}" ] || { echo "a mount did not start"; cat mount-*.err; exit 1; }
        ( '"$2"' )
        rc=$?
        for k in "${!dirs[@]}"; do fusermount3 -u "m$k" || echo "cannot unmount m$k"; done
        for p in "${pids[@]}"; do wait $p || echo "mount $p exited $?"; done
        for k in "${!dirs[@]}"; do sed "s/^/mount $k: /" "mount-$k.err"; done
        exit $rc'
}

@test "the POSIX calls programs make work through the mount, and another node sees each closed file" {
    mounted_job 2 '"'"$PY"'" "'"$CHECK"'" "$M0" "$M1"'
    assert_success
    assert_output --partial "ok another node reads a closed file whole"
    assert_output --partial "ok an open file outlives its unlink"
    assert_output --partial "ok truncate longer reads zeros"
    assert_output --partial "ok mmap write reaches the file"
    assert_output --partial "0 failed"
    refute_output --partial "FAIL"
    refute_output --regexp "mount [0-9]: "
    [ "$(grep -c '^ok ' <<<"$output")" -ge 44 ]
    assert_no_daemons "$WORKDIR"
}

@test "cp -r, tar, dd and cmp through the mount: what one node writes, another reads the same" {
    mounted_job 3 '
        cp -r /usr/share/doc/bash "$M0/" && diff -r /usr/share/doc/bash "$M2/bash" && echo "cp -r: same"
        mkdir "$M1/inc" && tar -C /usr/include/linux -cf - . | tar -C "$M1/inc" -xf - &&
            diff -r /usr/include/linux "$M0/inc" && echo "tar: same"
        head -c 50000000 /dev/urandom > big
        dd if=big of="$M2/big" bs=1M 2>/dev/null && cmp big "$M0/big" && echo "dd: same"
        [ "$(stat -c %s "$M1/big")" -eq 50000000 ] && echo "size: same"
        tar -C "$M0" -cf - inc | tar -tf - | wc -l | sed "s/^/tar listed /"
        find "$M1/inc" | wc -l | sed "s/^/find found /"'
    assert_success
    assert_output --partial "cp -r: same"
    assert_output --partial "tar: same"
    assert_output --partial "dd: same"
    assert_output --partial "size: same"
    local listed found
    listed="$(sed -n 's/^tar listed //p' <<<"$output")"
    found="$(sed -n 's/^find found //p' <<<"$output")"
    [ "$listed" -gt 100 ] && [ "$listed" -eq "$found" ]
    refute_output --regexp "mount [0-9]: "
    assert_no_daemons "$WORKDIR"
}

@test "NumPy and h5py write files on one node that another node reads back" {
    mounted_job 2 '
        "'"$PY"'" -c "
import numpy as np, h5py, sys
a = np.arange(1000000, dtype=np.float64).reshape(1000, 1000)
np.save(sys.argv[1] + \"/a.npy\", a)
with h5py.File(sys.argv[1] + \"/a.h5\", \"w\") as f:
    f.create_dataset(\"x\", data=a, chunks=(100, 100), compression=\"gzip\")
    f[\"x\"].attrs[\"unit\"] = \"m\"
" "$M0" &&
        "'"$PY"'" -c "
import numpy as np, h5py, sys
a = np.arange(1000000, dtype=np.float64).reshape(1000, 1000)
assert (np.load(sys.argv[1] + \"/a.npy\") == a).all()
with h5py.File(sys.argv[1] + \"/a.h5\", \"r\") as f:
    assert (f[\"x\"][...] == a).all() and f[\"x\"].attrs[\"unit\"] == \"m\"
print(\"numpy and h5py: same\")
" "$M1"'
    assert_success
    assert_output --partial "numpy and h5py: same"
    assert_no_daemons "$WORKDIR"
}

@test "another Unix user cannot enter the mount, not even root's files in it" {
    mounted_job 1 '
        echo secret > "$M0/s" && chmod 644 "$M0/s"
        runuser -u pdcbbtest2 -- cat "$M0/s" 2>&1 | sed "s/^/other user: /"
        runuser -u pdcbbtest2 -- ls "$M0" 2>&1 | sed "s/^/other user: /"
        cat "$M0/s"'
    assert_success
    assert_output --partial "secret"
    assert_output --regexp "other user: .*Permission denied"
    refute_output --partial "other user: secret"
    assert_no_daemons "$WORKDIR"
}

@test "pdcbb_mount refuses bad arguments and says what was wrong" {
    run "$MOUNT"
    assert_failure 2
    assert_output --partial "Usage: pdcbb_mount"
    run "$MOUNT" --attr-timeout soon /tmp
    assert_failure 2
    assert_output --partial "--attr-timeout wants seconds"
    run "$MOUNT" --bogus /tmp
    assert_failure 2
    assert_output --partial "unknown or extra argument '--bogus'"
    run env -u PDCBB_JOB_DIR PDCBB_JOB_DIR="$WORKDIR/none" "$MOUNT" "$WORKDIR"
    assert_failure 1
    assert_output --partial "pdcbb_mount: cannot reach the job's burst buffer"
    run "$MOUNT" --help
    assert_success
    assert_output --partial "--ready-fd N"
}
