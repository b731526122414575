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
    fuse_for_users
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

@test "pdcbb run --pdc mount=yes: every node's filesystem at mnt/, PDCBB_MOUNT node 0's; unmounted at the end, even with a file open" {
    run timeout 120 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet --pdc mount=yes -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        [ "$PDCBB_MOUNT" = "$d0/mnt" ] && echo "PDCBB_MOUNT is node 0s"
        echo "written on node 0" > "$PDCBB_MOUNT/x"
        cat "$d1/mnt/x"
        stat -c "%a %U" "$d1/mnt"
        # a process that still holds a file of the mount when the job ends
        setsid sleep 300 < "$d1/mnt/x" > /dev/null 2>&1 &
        echo $! > "$WORKDIR/holder"'
    echo "$output"
    assert_success
    assert_output --partial "PDCBB_MOUNT is node 0s"
    assert_output --partial "written on node 0"
    assert_output --partial "700 $(id -un)"
    # nothing is left mounted, no mount process runs
    ! grep -q " $WORKDIR/w" /proc/mounts
    [ -z "$(pgrep -f "pdcbb_mount .*$WORKDIR/w" || true)" ]
    kill "$(cat "$WORKDIR/holder")"
    assert_no_daemons "$WORKDIR"
}

@test "an MPI program, fio and a plain libhdf5 C program, unchanged, through the mounts of a 3-node job" {
    # --pdc mount (the key alone) is mount=yes; each rank works in its own node's mount
    run timeout 600 "$PDCBB" run --nodes 3 --workdir "$WORKDIR/w" --quiet --pdc mount -- bash -c '
        IFS=: read -r d0 d1 d2 <<<"$PDCBB_SERVER_DIRS"
        set -e
        timeout 120 mpirun --oversubscribe -np 3 "'"$BUILD_DIR"'/tests/mpi_file_exchange" \
            "$d0/mnt:$d1/mnt:$d2/mnt"
        # fio: written and verified (crc32c) on node 1, then read and verified on node 2
        fio --name=seq --directory="$d1/mnt" --rw=write --bs=1M --size=48M --verify=crc32c --verify_state_save=0 \
            --do_verify=1 --output-format=terse --minimal > /dev/null && echo "fio seq ok"
        fio --name=rand --directory="$d1/mnt" --rw=randwrite --bs=4k --size=8M --verify=crc32c --verify_state_save=0 \
            --do_verify=1 --randrepeat=1 --output-format=terse --minimal > /dev/null && echo "fio rand ok"
        fio --name=seq --directory="$d2/mnt" --rw=read --bs=1M --size=48M --verify=crc32c --verify_state_save=0 \
            --verify_only=1 --output-format=terse --minimal > /dev/null && echo "fio verify on node 2 ok"
        "'"$BUILD_DIR"'/tests/hdf5_file_check" write "$d0/mnt/t.h5" 700
        "'"$BUILD_DIR"'/tests/hdf5_file_check" read "$d2/mnt/t.h5" 700'
    echo "$output"
    assert_success
    for r in 0 1 2; do
        assert_output --regexp "rank $r of 3 on .* in $WORKDIR/w/node$r/pdcbb\.[0-9]+/mnt: wrote 3145745 bytes, read 2 files: ok"
    done
    assert_output --partial "fio seq ok"
    assert_output --partial "fio rand ok"
    assert_output --partial "fio verify on node 2 ok"
    assert_output --regexp "hdf5 .*/node2/pdcbb\.[0-9]+/mnt/t.h5: 700 x 1000 ok"
    assert_no_daemons "$WORKDIR"
}

@test "a large file is striped over every daemon in 1 MiB stripes; a small file lives on one" {
    run timeout 300 "$PDCBB" run --nodes 3 --workdir "$WORKDIR/w" --quiet --pdc mount -- bash -c '
        IFS=: read -r -a d <<<"$PDCBB_SERVER_DIRS"
        head -c 25165824 /dev/urandom > "$WORKDIR/big.src"
        cp "$WORKDIR/big.src" "${d[0]}/mnt/big"
        head -c 100000 /dev/urandom > "${d[0]}/mnt/small"
        cmp "$WORKDIR/big.src" "${d[2]}/mnt/big" && echo "big reads back on node 2"
        for f in big small; do
            obj="$(printf "%016x.dat" "$(stat -c %i "${d[1]}/mnt/$f")")"
            for k in 0 1 2; do
                n="$(find "${d[$k]}" -name "$obj" -printf "%b\n" | awk "{s += \$1 * 512} END {print int(s / 1048576)}")"
                if [ -n "$(find "${d[$k]}" -name "$obj")" ]; then echo "$f on daemon $k: $n MiB"; fi
            done
        done'
    echo "$output"
    assert_success
    assert_output --partial "big reads back on node 2"
    # 24 stripes round robin: 8 MiB on each daemon
    for k in 0 1 2; do assert_output --regexp "big on daemon $k: (7|8|9) MiB"; done
    [ "$(grep -c '^small on daemon' <<<"$output")" -eq 1 ]
    assert_no_daemons "$WORKDIR"
}

@test "one store, two views: PDC objects read-only under .pdc/, a file of the mount through the PDC API" {
    local V="$BUILD_DIR/tests/pdc_file_view"
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet --pdc mount -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        "'"$V"'" put exp || exit 1
        # the objects, seen from the other node: names escaped, bytes row-major
        ls "$d1/mnt/.pdc"; ls "$d1/mnt/.pdc/exp"
        stat -c "%n %s %A" "$d1/mnt/.pdc/exp/grid" "$d1/mnt/.pdc/exp/wide"
        "'"$PY"'" -c "
import numpy as np, sys
d = sys.argv[1]
assert (np.fromfile(d + \"/grid\", dtype=np.int32) == np.arange(150000)).all()
assert (np.fromfile(d + \"/wide\", dtype=np.int32) == np.arange(4400000)).all()
w = open(d + \"/wide\", \"rb\"); w.seek(4 * 2199998); assert np.frombuffer(w.read(16), np.int32).tolist() == [2199998, 2199999, 2200000, 2200001]
assert (np.fromfile(d + \"/a%2Fb\", dtype=np.float64) == np.arange(1000) / 4.0).all()
print(\"objects read through the mount ok\")" "$d1/mnt/.pdc/exp"
        ls -a "$PDCBB_MOUNT" | grep -c "^.pdc$" | sed "s/^/listed in the root: /"
        echo x > "$PDCBB_MOUNT/.pdc/exp/new" 2>&1 || true
        mkdir "$PDCBB_MOUNT/.pdc" 2>&1 || true
        # a file of the mount, through the PDC API (relative, and absolute under this node)
        mkdir -p "$d1/mnt/dir"
        head -c 3000000 /dev/urandom > "$WORKDIR/src"
        cp "$WORKDIR/src" "$d1/mnt/dir/f"
        "'"$V"'" file dir/f "$WORKDIR/src"
        "'"$V"'" file "$PDCBB_MOUNT/dir/f" "$WORKDIR/src"
        "'"$V"'" open /etc/passwd; "'"$V"'" open dir; "'"$V"'" open dir/none; true'
    echo "$output"
    assert_success
    grep -qx "exp" <<<"$output"
    assert_output --partial "a%2Fb"
    assert_output --regexp "/mnt/.pdc/exp/grid 600000 -r--------"
    assert_output --regexp "/mnt/.pdc/exp/wide 17600000 -r--------"
    assert_output --partial "objects read through the mount ok"
    assert_output --partial "listed in the root: 0"
    assert_output --partial "Read-only file system"
    assert_output --partial "File exists"
    refute_output --regexp "^pdcbb.files$"
    assert_output --partial "file dir/f through the PDC API: 3000000 bytes ok"
    assert_output --regexp "file /.*/mnt/dir/f through the PDC API: 3000000 bytes ok"
    assert_output --partial "open /etc/passwd: PDCBB_ERR_INVAL: PDCbb_file_open: /etc/passwd is not under the job's filesystem"
    assert_output --partial "open dir: PDCBB_ERR_WRONG_TYPE: PDCbb_file_open: dir is not a regular file"
    assert_output --partial "open dir/none: PDCBB_ERR_NOT_FOUND: PDCbb_file_open: dir/none: no entry 'none'"
    assert_no_daemons "$WORKDIR"
}

@test "capacity exhausted: ENOSPC, the files closed before intact; space comes back when a file goes, the drain has the rest" {
    mkdir -m 700 "$WORKDIR/out"
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet \
        --pdc "capacity=16M,mount,drain=$WORKDIR/out" -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        for i in 1 2 3; do head -c 3000000 /dev/urandom > "$WORKDIR/keep.$i"; cp "$WORKDIR/keep.$i" "$PDCBB_MOUNT/keep.$i"; done
        df -B1 --output=size "$PDCBB_MOUNT" | tail -1 | sed "s/^ */size /"
        dd if=/dev/zero of="$PDCBB_MOUNT/huge" bs=1M count=64 2>&1 | grep -o "No space left on device" | head -1
        for i in 1 2 3; do cmp "$WORKDIR/keep.$i" "$d1/mnt/keep.$i" && echo "keep.$i intact"; done
        rm "$PDCBB_MOUNT/huge"
        head -c 8000000 /dev/urandom > "$PDCBB_MOUNT/after" && echo "space is back"'
    echo "$output"
    assert_success
    assert_output --partial "size 33554432"        # statfs: the job's capacity, 2 x 16 MiB
    assert_output --partial "No space left on device"
    for i in 1 2 3; do
        assert_output --partial "keep.$i intact"
        cmp "$WORKDIR/keep.$i" "$WORKDIR"/out/pdcbb.*/files/keep.$i
    done
    assert_output --partial "space is back"
    [ ! -e "$(echo "$WORKDIR"/out/pdcbb.*/files)/huge" ]
    assert_no_daemons "$WORKDIR"
}

@test "the mount process killed: calls fail at once, the job goes on, the end of the job leaves no mount behind" {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet --pdc mount=yes -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        echo kept > "$d1/mnt/before"
        kill -9 "$(cat "$d0/mount.pid")"
        sleep 0.5
        # the kernel answers for the dead process: an error, never a hang
        timeout 10 ls "$PDCBB_MOUNT" 2>&1; echo "ls exit $?"
        timeout 10 cat "$PDCBB_MOUNT/before" 2>&1; echo "cat exit $?"
        # node 1 still serves, and its files are there
        cat "$d1/mnt/before"
        grep -c " $d0/mnt " /proc/self/mountinfo | sed "s/^/dead mounts on node 0: /"'
    echo "$output"
    assert_success
    assert_output --partial "Transport endpoint is not connected"
    assert_output --partial "ls exit 2"
    assert_output --partial "cat exit 1"
    assert_output --partial "kept"
    assert_output --partial "dead mounts on node 0: 1"
    # the end of the job unmounted both, the dead one too
    ! grep -q " $WORKDIR/w" /proc/self/mountinfo
    [ -z "$(pgrep -f "pdcbb_mount .*$WORKDIR/w" || true)" ]
    assert_no_daemons "$WORKDIR"
}

@test "stage_in_files: a directory tree copied into the mount at the start, seen the same on every node" {
    mkdir -p "$WORKDIR/in/sub/deeper"
    head -c 5000000 /dev/urandom > "$WORKDIR/in/big.bin"
    echo "input 1" > "$WORKDIR/in/sub/a.txt"
    printf '' > "$WORKDIR/in/sub/deeper/empty"
    ln -s sub/a.txt "$WORKDIR/in/link"
    chmod 640 "$WORKDIR/in/sub/a.txt"
    touch -d "2020-01-02 03:04:05" "$WORKDIR/in/big.bin"
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet \
        --pdc "mount,stage_in_files=$WORKDIR/in" -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        diff -r --no-dereference "$WORKDIR/in" "$d1/mnt" && echo "node 1 sees the same tree"
        stat -c "%n %a %Y" "$d1/mnt/sub/a.txt" "$d1/mnt/big.bin"
        readlink "$d1/mnt/link"'
    echo "$output"
    assert_success
    assert_output --partial "node 1 sees the same tree"
    assert_output --regexp "/mnt/sub/a.txt 640 "
    assert_output --partial "/mnt/big.bin 644 $(date -d "2020-01-02 03:04:05" +%s)"
    assert_output --partial "sub/a.txt"
    # without mount, or from a directory that is not there: refused with the reason
    run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w" --pdc "stage_in_files=$WORKDIR/in" -- true
    assert_failure 2
    assert_output --partial "key 'stage_in_files': the files are copied into the job's filesystem: add mount=yes"
    run timeout 120 "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w" --quiet \
        --pdc "mount,stage_in_files=$WORKDIR/none" -- echo "should not run"
    assert_failure 1
    assert_output --partial "stage_in_files $WORKDIR/none: No such file or directory"
    refute_output --partial "should not run"
    assert_no_daemons "$WORKDIR"
}

@test "pdcbb run --pdc mount: a bad value is refused before anything starts; a mount that cannot start stops the job" {
    run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w" --pdc mount=on -- true
    assert_failure 2
    assert_output --partial "key 'mount': bad value 'on' (use yes or no)"
    PDCBB_MOUNT_PATH=/no/such/pdcbb_mount run timeout 60 "$PDCBB" run --nodes 1 \
        --workdir "$WORKDIR/w" --quiet --pdc mount=yes -- echo "should not run"
    echo "$output"
    assert_failure 1
    assert_output --partial "the filesystem did not start"
    assert_output --partial "cannot execute /no/such/pdcbb_mount"
    refute_output --partial "should not run"
    assert_no_daemons "$WORKDIR"
}

@test "USER-GUIDE.md's 'Files through the mount' runs as printed" {
    local block
    block="$(awk '/^## / {insec = ($0 == "## Files through the mount"); next}
                  insec && /^```sh$/ {take = 1; next} take && /^```$/ {exit} take {print}' \
        "$REPO_DIR/docs/USER-GUIDE.md")"
    [ -n "$block" ]
    run env PATH="$BUILD_DIR/cli:$PATH" TMPDIR="$WORKDIR" timeout 120 bash -e -c "$block"
    echo "$output"
    assert_success
    assert_output --partial "CHANGES.gz"
    assert_output --partial "copyright"
    ! grep -q " $WORKDIR" /proc/mounts
}

@test "a daemon killed under the mount: calls fail with EIO within the request timeout, never hang; restarted, the mount serves again, nothing lost" {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet \
        --pdc mount=yes,request_timeout=3 -- bash -c '
        cd "$WORKDIR" || exit 1
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        # files and directories on both daemons (entries live on the daemon of their parent)
        for i in $(seq 20); do mkdir "$PDCBB_MOUNT/d$i" && echo "file $i" > "$PDCBB_MOUNT/d$i/f"; done
        kill -9 "$(cat "$d1/bbd-1.pid")"
        start=$SECONDS; eio=0
        for i in $(seq 20); do
            timeout 30 cat "$PDCBB_MOUNT/d$i/f" > /dev/null 2> err.$i || eio=$((eio + 1))
        done
        echo "with daemon 1 dead: $eio of 20 reads failed in $((SECONDS - start)) s"
        cat err.* | sort | uniq -c | sed "s/^/  /"
        "'"$BBD"'" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 \
            3>ready --ready-fd 3 &
        for _ in $(seq 100); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
        ok=0
        for i in $(seq 20); do [ "$(cat "$PDCBB_MOUNT/d$i/f")" = "file $i" ] && ok=$((ok + 1)); done
        echo "after the restart: $ok of 20 files read back"'
    echo "$output"
    assert_success
    local eio secs
    eio="$(sed -n 's/^with daemon 1 dead: \([0-9]*\) of 20.*/\1/p' <<<"$output")"
    secs="$(sed -n 's/.* reads failed in \([0-9]*\) s/\1/p' <<<"$output")"
    [ "$eio" -ge 1 ]
    # each failed call waited at most about the request timeout (3 s), none the 30 s cap
    [ "$secs" -le $((eio * 8 + 10)) ]
    refute_output --partial "Terminated"
    assert_output --partial "Input/output error"
    assert_output --partial "after the restart: 20 of 20 files read back"
    assert_no_daemons "$WORKDIR"
}

@test "the drain keeps the mount's tree as files: the same bytes, names, links, modes and mtimes under files/" {
    mkdir "$WORKDIR/drain"
    run timeout 300 "$PDCBB" run --nodes 3 --workdir "$WORKDIR/w" --quiet --job-id 3600 \
        --drain "$WORKDIR/drain" --pdc mount=yes -- bash -c '
        cd "$PDCBB_MOUNT" || exit 1
        cp -a /usr/share/doc/bash bash
        mkdir -p deep/a/b/c && head -c 3000000 /dev/urandom > deep/a/b/c/blob
        cp deep/a/b/c/blob "$WORKDIR/blob"
        printf "x" | dd of=sparse bs=1 seek=5000000 2>/dev/null
        ln -s deep/a/b/c/blob link
        chmod 640 deep/a/b/c/blob
        chmod 664 bash/INTRO.gz
        touch -d "2020-01-02 03:04:05" bash/RBASH
        mkdir gone && echo x > gone/f && rm -r gone
        echo kept > renamed.tmp && mv renamed.tmp renamed'
    echo "$output"
    assert_success
    local f="$WORKDIR/drain/pdcbb.3600/files"
    [ -d "$f" ]
    [ -f "$WORKDIR/drain/pdcbb.3600/COMPLETE" ]
    diff -r /usr/share/doc/bash "$f/bash"
    cmp "$WORKDIR/blob" "$f/deep/a/b/c/blob"
    [ "$(stat -c %a "$f/deep/a/b/c/blob")" = 640 ]
    # a drain is nobody else's to change: group and others lose write
    [ "$(stat -c %a "$f/bash/INTRO.gz")" = 644 ]
    [ "$(readlink "$f/link")" = deep/a/b/c/blob ]
    [ "$(stat -c %s "$f/sparse")" -eq 5000001 ]
    [ "$(tail -c 1 "$f/sparse")" = x ]
    [ "$(head -c 4 "$f/sparse" | od -An -tx1 | tr -d ' ')" = 00000000 ]
    [ "$(stat -c %Y "$f/bash/RBASH")" -eq "$(date -d "2020-01-02 03:04:05" +%s)" ]
    [ "$(cat "$f/renamed")" = kept ]
    [ ! -e "$f/gone" ] && [ ! -e "$f/renamed.tmp" ]
    run "$PDCBB" verify "$WORKDIR/drain/pdcbb.3600"
    assert_success
    assert_no_daemons "$WORKDIR"
}

@test "what the mount reads ahead is never older than what the kernel may cache: another descriptor's write, another node's closed write" {
    mounted_job 2 '
        "'"$PY"'" - "$M0" "$M1" <<"PY"
import os, sys, time
m0, m1 = sys.argv[1], sys.argv[2]
MiB = 1 << 20
want = bytearray(os.urandom(12 * MiB))
with open(m0 + "/f", "wb") as f:
    f.write(want)
# node 0 reads the start: the mount reads ahead past it
r = os.open(m0 + "/f", os.O_RDONLY)
assert os.pread(r, 256 * 1024, 0) == want[:256 * 1024]
# node 1 changes bytes inside what node 0 read ahead, and closes
w = os.open(m1 + "/f", os.O_WRONLY)
os.pwrite(w, b"C" * 100, MiB + 5)
os.close(w)
want[MiB + 5:MiB + 105] = b"C" * 100
time.sleep(1.5)  # the attributes node 0 keeps expire (--attr-timeout 1)
with open(m0 + "/f", "rb") as f:
    assert f.read() == want, "an open on node 0 after the close read old bytes"
print("another node: same")
# node 0 again: read ahead, then a write through another descriptor of a part of a page
r2 = os.open(m0 + "/f", os.O_RDONLY)
assert os.pread(r2, 128 * 1024, 0) == want[:128 * 1024]
assert os.pread(r2, 4096, 3 * MiB) == want[3 * MiB:3 * MiB + 4096]  # now in the page cache
w = os.open(m0 + "/f", os.O_WRONLY)  # write-only: past the page cache (direct_io)
os.pwrite(w, b"B" * 100, 3 * MiB + 10)
want[3 * MiB + 10:3 * MiB + 110] = b"B" * 100
assert os.pread(r2, 4096, 3 * MiB) == want[3 * MiB:3 * MiB + 4096], "old bytes after a write"
os.close(w)
os.close(r2)
os.close(r)
print("same node: same")
PY
'
    assert_success
    assert_output --partial "another node: same"
    assert_output --partial "same node: same"
    refute_output --regexp "mount [0-9]: "
    assert_no_daemons "$WORKDIR"
}

@test "writes are answered before they are stored: overlapping writes to two files keep their order, as this node and another read them" {
    mounted_job 2 '
        "'"$PY"'" - "$M0" "$M1" <<"PY"
import os, random, sys
m0, m1 = sys.argv[1], sys.argv[2]
rnd = random.Random(int(os.environ.get("PDCBB_TEST_SEED", "1")))
want = [bytearray() for _ in range(3)]
# two files opened write-only (their writes pass the page cache: direct_io), one read-write
fds = [os.open(m0 + "/w%d" % k, (os.O_WRONLY, os.O_WRONLY, os.O_RDWR)[k] | os.O_CREAT, 0o644)
       for k in range(3)]
for i in range(600):
    k = rnd.randrange(3)
    off = rnd.randrange(0, 3 << 20)
    n = rnd.choice([1, 100, 4096, 65536, 300000, 1 << 20])
    b = bytes([i % 251 + 1]) * n
    os.pwrite(fds[k], b, off)
    w = want[k]
    if len(w) < off + n:
        w.extend(bytes(off + n - len(w)))
    w[off:off + n] = b
    if i % 97 == 0:  # a read of another file waits for the writes before it
        j = (k + 1) % 3
        with open(m0 + "/w%d" % j, "rb") as f:
            assert f.read() == want[j], "w%d read back while written differs" % j
for fd in fds:
    os.close(fd)
for m, where in ((m0, "this node"), (m1, "another node")):
    for k in range(3):
        with open(m + "/w%d" % k, "rb") as f:
            got = f.read()
        assert got == want[k], "%s: w%d differs (%d bytes, want %d)" % (where, k, len(got), len(want[k]))
    print(where + ": same")
PY
'
    assert_success
    assert_output --partial "this node: same"
    assert_output --partial "another node: same"
    refute_output --regexp "mount [0-9]: "
    assert_no_daemons "$WORKDIR"
}

@test "a full burst buffer: a writer through the mount is told ENOSPC, by a later write or by close" {
    in_job 1 '
        dd if=/dev/zero of="$PDCBB_MOUNT/big" bs=1M count=32 2>&1; echo "dd: $?"
        "'"$PY"'" - "$PDCBB_MOUNT/b2" <<"PY"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)
told = 0
try:
    for i in range(32):
        os.write(fd, bytes(1 << 20))
except OSError as e:
    told += e.errno == 28
try:
    os.close(fd)
except OSError as e:
    told += e.errno == 28
print("python told:", told)
PY
' --pdc capacity=8M,mount=yes
    assert_success
    assert_output --partial "No space left on device"
    assert_line --regexp "^dd: [1-9]"
    assert_line "python told: 1"
    assert_no_daemons "$WORKDIR"
}
