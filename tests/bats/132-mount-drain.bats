#!/usr/bin/env bats
# The mount's files after the job (issue 25, item 4): the drain lists every entry of files/
# with its CRC-32C (files.manifest, named with its own CRC-32C in manifest.yaml); pdcbb verify
# checks files/ against it and names each missing, extra, changed or damaged entry; pdcbb ls
# lists the files; pdcbb mount shows them read-only without daemons (mount/mount_drain.c),
# checking each file's bytes before serving them; USER-GUIDE.md's "After the job: the files" as
# printed. Every mount a test starts is stopped by its pid and leaves no mount behind.

load helpers
bats_require_minimum_version 1.5.0

MOUNT_DRAIN="$BUILD_DIR/mount/pdcbb_mount_drain"
JOB_ID=1320

setup_file() {
    setup_workdir "$MOUNT_DRAIN" || return 1
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root (as the CI runs them)" >&2; return 1; }
    command -v fusermount3 >/dev/null || { echo "fusermount3 missing: scripts/install-deps.sh" >&2; return 1; }
    FILES_WORK="$WORKDIR"
    export FILES_WORK
    mkdir -p "$FILES_WORK/dest" "$FILES_WORK/src"
    head -c 3000000 /dev/urandom >"$FILES_WORK/src/blob"
    # a tree of every kind of entry, on two nodes' daemons
    timeout 300 "$PDCBB" run --nodes 2 --quiet --workdir "$FILES_WORK/job" --job-id "$JOB_ID" \
        --pdc mount=yes,drain="$FILES_WORK/dest" -- sh -c '
        cd "$PDCBB_MOUNT" || exit 1
        cp -r /usr/share/doc/bash bash
        mkdir -p deep/a/b && cp "$FILES_WORK/src/blob" deep/a/b/blob
        echo "first line" > notes.txt
        : > empty
        printf x | dd of=sparse bs=1 seek=2000000 2>/dev/null
        ln -s deep/a/b/blob link
        chmod 640 deep/a/b/blob
        chmod 700 deep/a
        touch -d "2021-03-04 05:06:07" notes.txt' >"$FILES_WORK/job.out" 2>&1 || {
        cat "$FILES_WORK/job.out" >&2
        return 1
    }
    [ -f "$FILES_WORK/dest/pdcbb.$JOB_ID/COMPLETE" ] || {
        echo "the job was not drained" >&2
        cat "$FILES_WORK/job.out" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${FILES_WORK:-}" ] || return 0
    assert_no_daemons "$FILES_WORK"
    rm -rf "$FILES_WORK"
}

setup() {
    WORKDIR="$(mktemp -d "$FILES_WORK/t.XXXXXX")"
    MOUNT_PIDS=()
}

# Stop every mount this test started (by pid), and unmount what is left.
teardown() {
    local m p
    for m in "$WORKDIR"/m*; do
        mountpoint -q "$m" 2>/dev/null && { fusermount3 -u -z "$m" 2>/dev/null || umount -l "$m"; }
    done
    for p in "${MOUNT_PIDS[@]}"; do
        kill "$p" 2>/dev/null || true
        wait_gone "$p" 10 || kill -9 "$p" 2>/dev/null || true
    done
    assert_no_daemons "$WORKDIR"
}

# A copy of the drain (same name, owner, modes and times) in a destination of its own: prints
# its path.
drain_copy() {
    mkdir -p "$WORKDIR/$1"
    cp -a "$FILES_WORK/dest/pdcbb.$JOB_ID" "$WORKDIR/$1/"
    echo "$WORKDIR/$1/pdcbb.$JOB_ID"
}

# mount_fg DRAIN DIR [pdcbb mount options...]: pdcbb mount --foreground in the background of
# this test (its pid in MOUNT_PIDS, its output in DIR.out), once DIR is mounted.
mount_fg() {
    local drain=$1 dir=$2
    shift 2
    mkdir -p "$dir"
    "$PDCBB" mount --foreground "$@" "$drain" "$dir" >"$dir.out" 2>&1 3>&- &
    MOUNT_PIDS+=($!)
    for _ in $(seq 100); do
        mountpoint -q "$dir" && return 0
        kill -0 "${MOUNT_PIDS[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "pdcbb mount did not mount $dir:" >&2
    cat "$dir.out" >&2
    return 1
}

# unmount_fg DIR: fusermount3 -u DIR, then the mount's process ends with status 0 and nothing
# is mounted there any more.
unmount_fg() {
    local pid=${MOUNT_PIDS[-1]}
    fusermount3 -u "$1"
    wait "$pid"
    ! grep -q " $1 " /proc/mounts
}

@test "the drain lists every entry of files/ with its CRC-32C, and the manifest names the list with its own" {
    local d="$FILES_WORK/dest/pdcbb.$JOB_ID"
    [ -f "$d/files.manifest" ]
    head -1 "$d/files.manifest" | grep -qx 'pdcbb-files 1'
    # manifest.yaml: files: {list: "files.manifest", entries: N, bytes: B, crc32c: 0x...}
    run grep -E '^files: \{list: "files.manifest", entries: [0-9]+, bytes: [0-9]+, crc32c: 0x[0-9a-f]{8}\}$' "$d/manifest.yaml"
    assert_success
    local entries bytes
    entries="$(sed -n 's/^files: .*entries: \([0-9]*\),.*/\1/p' "$d/manifest.yaml")"
    bytes="$(sed -n 's/^files: .*bytes: \([0-9]*\),.*/\1/p' "$d/manifest.yaml")"
    [ "$bytes" -eq "$(stat -c %s "$d/files.manifest")" ]
    # one line per entry: as many as find sees under files/
    [ "$entries" -eq "$(cd "$d/files" && find . -mindepth 1 | wc -l)" ]
    [ "$(grep -c '^[fdl] ' "$d/files.manifest")" -eq "$entries" ]
    # the blob's line holds the CRC-32C of its bytes
    local hexpath crc
    hexpath="$(printf 'deep/a/b/blob' | od -An -tx1 | tr -d ' \n')"
    crc="$(python3 -c 'import sys
def crc32c(data, crc=0):
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
print("%08x" % crc32c(open(sys.argv[1], "rb").read()))' "$FILES_WORK/src/blob")"
    run grep " $hexpath -\$" "$d/files.manifest"
    assert_success
    assert_output --regexp "^f 0640 3000000 [0-9]+ $crc - $hexpath -\$"
}

@test "pdcbb verify passes on a good drain, checking every file; pdcbb ls lists the files" {
    local d="$FILES_WORK/dest/pdcbb.$JOB_ID"
    run "$PDCBB" verify "$d"
    assert_success
    assert_output --regexp "^verified [0-9]+ extents, [0-9]+ bytes, [0-9]+ files \([0-9]+ bytes\): OK$"
    local nfiles
    nfiles="$(cd "$d/files" && find . -type f | wc -l)"
    assert_output --partial ", $nfiles files ("
    run "$PDCBB" ls "$d"
    assert_success
    assert_output --partial "OBJECTS ("
    assert_line --regexp "^FILES \([0-9]+ entries, $nfiles files, [0-9]+ bytes, in $d/files\)$"
    assert_line --regexp '^  -rw-r-----  +3000000  [0-9-]{10} [0-9:]{8}  deep/a/b/blob$'
    assert_line --regexp '^  drwx------  +0  [0-9-]{10} [0-9:]{8}  deep/a$'
    assert_line --regexp '^  lrwxrwxrwx  +13  [0-9-]{10} [0-9:]{8}  link -> deep/a/b/blob$'
    assert_line --regexp "^  -rw-r--r--  +11  2021-03-04 05:06:07  notes.txt$"
    assert_line --regexp '^  -rw-r--r--  +0  .*  empty$'
    # --files: only the files; --long adds each file's CRC-32C
    run "$PDCBB" ls --files --long "$d"
    assert_success
    refute_output --partial "OBJECTS"
    assert_line --index 0 --regexp "^FILES \("
    assert_line --regexp '^  -rw-r-----  +3000000  .*  [0-9a-f]{8}  deep/a/b/blob$'
    assert_line --regexp '^  lrwxrwxrwx  +13  .*  -  +link -> deep/a/b/blob$'
    [ "$(grep -c '^  [-dl][-rwxsStT]\{9\} ' <<<"$output")" -eq "$(cd "$d/files" && find . -mindepth 1 | wc -l)" ]
}

@test "pdcbb verify names each damaged entry of files/ by path and fails: a flipped byte, a planted file, a removed file, a changed mode, a changed link, a file turned directory" {
    local d
    # one kind of damage per copy: each alone must fail verify
    d="$(drain_copy flip)"
    printf '\xff' | dd of="$d/files/deep/a/b/blob" bs=1 seek=1234567 conv=notrunc 2>/dev/null
    touch -r "$FILES_WORK/dest/pdcbb.$JOB_ID/files/deep/a/b/blob" "$d/files/deep/a/b/blob"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line --regexp "^CHANGED files/deep/a/b/blob: contents differ: CRC-32C 0x[0-9a-f]{8}, the list says 0x[0-9a-f]{8}$"
    assert_line --regexp ": 1 changed file$"

    d="$(drain_copy plant)"
    echo "not the job's" >"$d/files/bash/planted"
    mkdir "$d/files/deep/newdir"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line "EXTRA files/bash/planted: not in the list (a regular file of 14 bytes)"
    assert_line "EXTRA files/deep/newdir: not in the list (a directory)"
    assert_output --partial "2 extra files"

    d="$(drain_copy removed)"
    rm "$d/files/notes.txt"
    rm -r "$d/files/deep/a"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line "MISSING files/notes.txt: missing (a regular file of 11 bytes)"
    assert_line "MISSING files/deep/a: missing (a directory, with 2 entries under it)"
    assert_output --partial "4 missing files"

    d="$(drain_copy mode)"
    chmod 600 "$d/files/deep/a/b/blob"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line "CHANGED files/deep/a/b/blob: mode 0600, the list says 0640"

    d="$(drain_copy link)"
    ln -sfn notes.txt "$d/files/link"
    touch -h -r "$FILES_WORK/dest/pdcbb.$JOB_ID/files/link" "$d/files/link"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line "CHANGED files/link: a link to 'notes.txt', the list says 'deep/a/b/blob'"

    d="$(drain_copy type)"
    rm "$d/files/empty" && mkdir "$d/files/empty"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line "CHANGED files/empty: a directory, the list says a regular file"

    # the list itself: one byte changed is a damaged list, not a clean bill
    d="$(drain_copy list)"
    sed -i 's/^f 0640 /f 0644 /' "$d/files.manifest"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_output --regexp "pdcbb verify: .*/files.manifest is damaged: its CRC-32C is 0x[0-9a-f]{8}, the manifest says 0x[0-9a-f]{8}"
    refute_output --partial ": OK"

    # the untouched drain still passes
    run "$PDCBB" verify "$FILES_WORK/dest/pdcbb.$JOB_ID"
    assert_success
}

@test "pdcbb mount shows the files with the same bytes, modes, times and links; writes fail with EROFS; fusermount3 -u leaves nothing" {
    local d="$FILES_WORK/dest/pdcbb.$JOB_ID" m="$WORKDIR/m"
    mkdir "$m"
    # the default: in the background, once the mount is ready
    run "$PDCBB" mount "$d" "$m"
    assert_success
    mountpoint -q "$m"
    local pid
    pid="$(pgrep -f "pdcbb_mount_drain .*$m\$")"
    [ -n "$pid" ]
    MOUNT_PIDS+=("$pid")
    diff -r /usr/share/doc/bash "$m/bash"
    cmp "$FILES_WORK/src/blob" "$m/deep/a/b/blob"
    diff -r --no-dereference "$d/files" "$m"
    [ "$(stat -c %a "$m/deep/a/b/blob")" = 640 ]
    [ "$(stat -c %a "$m/deep/a")" = 700 ]
    [ "$(stat -c %Y "$m/notes.txt")" -eq "$(date -d "2021-03-04 05:06:07" +%s)" ]
    [ "$(readlink "$m/link")" = deep/a/b/blob ]
    [ "$(stat -c %s "$m/sparse")" -eq 2000001 ]
    [ "$(tail -c 1 "$m/sparse")" = x ]
    [ ! -s "$m/empty" ] && [ -f "$m/empty" ]
    # nothing can be changed
    local what
    for what in 'echo x > "$M/notes.txt"' 'echo x >> "$M/notes.txt"' 'echo x > "$M/new"' \
        'touch "$M/notes.txt"' 'mkdir "$M/d"' 'rm "$M/notes.txt"' 'rmdir "$M/deep/a/b"' \
        'mv "$M/notes.txt" "$M/n2"' 'chmod 600 "$M/notes.txt"' 'ln -s x "$M/l2"' \
        'truncate -s 0 "$M/notes.txt"'; do
        run env M="$m" sh -c "$what"
        assert_failure
        assert_output --partial "Read-only file system"
    done
    [ "$(cat "$m/notes.txt")" = "first line" ]
    # unmounted: the process ends, nothing is mounted, the drain is as it was
    fusermount3 -u "$m"
    wait_gone "$pid" 10
    ! grep -q " $m " /proc/mounts
    [ -z "$(ls -A "$m")" ]
    run "$PDCBB" verify "$d"
    assert_success
}

@test "pdcbb mount gives EIO for a damaged or removed file and logs its name; a planted file does not show; a file changed after its first open is checked again" {
    local d m="$WORKDIR/m"
    d="$(drain_copy dmg)"
    printf '\xff' | dd of="$d/files/deep/a/b/blob" bs=1 seek=4321 conv=notrunc 2>/dev/null
    rm "$d/files/empty"
    echo "not the job's" >"$d/files/planted"
    mount_fg "$d" "$m" --log "$WORKDIR/mount.log"
    run cat "$m/deep/a/b/blob"
    assert_failure
    assert_output --partial "Input/output error"
    run cat "$m/empty"
    assert_failure
    assert_output --partial "Input/output error"
    [ ! -e "$m/planted" ]
    run ls "$m"
    refute_output --partial planted
    # the others still read
    [ "$(cat "$m/notes.txt")" = "first line" ]
    diff -r /usr/share/doc/bash "$m/bash"
    # a file checked at its first open, changed in the drain afterwards, fails the next open
    printf 'F' | dd of="$d/files/notes.txt" bs=1 seek=0 conv=notrunc 2>/dev/null
    run cat "$m/notes.txt"
    assert_failure
    assert_output --partial "Input/output error"
    unmount_fg "$m"
    run cat "$WORKDIR/mount.log"
    assert_line --regexp "pdcbb mount\[[0-9]+\]: files/deep/a/b/blob: does not match the drain's list of files: contents differ: CRC-32C 0x[0-9a-f]{8}, the list says 0x[0-9a-f]{8}: refused with EIO"
    assert_line --regexp "pdcbb mount\[[0-9]+\]: files/empty: cannot open it in the drain: No such file or directory: refused with EIO"
    assert_line --regexp "pdcbb mount\[[0-9]+\]: files/notes.txt: does not match the drain's list of files: contents differ"
    assert_line --regexp "pdcbb mount\[[0-9]+\]: .*: unmounted from $m$"
    # --foreground without --log: the log lines on standard error
    mount_fg "$d" "$m"
    run cat "$m/deep/a/b/blob"
    assert_failure
    unmount_fg "$m"
    grep -q "files/deep/a/b/blob: does not match the drain's list of files" "$m.out"
}

@test "pdcbb mount refuses an incomplete, untrusted or file-less drain, or a damaged list, with a clear message, and mounts nothing" {
    local d m="$WORKDIR/m"
    mkdir "$m"
    d="$(drain_copy incomplete)"
    rm "$d/COMPLETE"
    run "$PDCBB" mount "$d" "$m"
    assert_failure 1
    assert_output "pdcbb mount: $d: incomplete drain: 2 of 2 ranks drained (finish it with pdcbb drain); only a complete drain can be mounted (pdcbb why $d says what became of it)"
    ! mountpoint -q "$m"

    d="$(drain_copy untrusted)"
    chmod g+w "$d/files/deep"
    run "$PDCBB" mount "$d" "$m"
    assert_failure 1
    assert_output --partial "pdcbb mount: untrusted drain: $d/files/deep is writable by its group (mode 0775)"
    ! mountpoint -q "$m"

    d="$(drain_copy list)"
    echo "x" >>"$d/files.manifest"
    run "$PDCBB" mount "$d" "$m"
    assert_failure 1
    assert_output --regexp "^pdcbb mount: $d/files.manifest is damaged: [0-9]+ bytes, the manifest says [0-9]+$"
    ! mountpoint -q "$m"

    # a job without the mount has no files to show
    mkdir "$WORKDIR/dest"
    run timeout 120 "$PDCBB" run --quiet --workdir "$WORKDIR/job" --job-id 1321 \
        --drain "$WORKDIR/dest" -- true
    assert_success
    run "$PDCBB" mount "$WORKDIR/dest/pdcbb.1321" "$m"
    assert_failure 1
    assert_output "pdcbb mount: $WORKDIR/dest/pdcbb.1321 has no files: the job did not use the mount (--pdc mount=yes)"
    ! mountpoint -q "$m"
    run "$PDCBB" verify "$WORKDIR/dest/pdcbb.1321"
    assert_success
    refute_output --partial "files ("

    # bad command lines
    run "$PDCBB" mount "$d"
    assert_failure 2
    assert_output "pdcbb mount: missing the directory DIR to mount on (see pdcbb mount --help)"
    run "$PDCBB" mount --bogus "$d" "$m"
    assert_failure 2
    run "$PDCBB" mount "$FILES_WORK/dest/pdcbb.$JOB_ID" "$WORKDIR/none"
    assert_failure 1
    assert_output --partial "pdcbb mount: mount point $WORKDIR/none: No such file or directory"
    run "$PDCBB" mount --help
    assert_success
    assert_output --partial "fusermount3 -u DIR"
    [ -z "$(pgrep -f "pdcbb_mount_drain .*$WORKDIR" || true)" ]
}

@test "a file built from damaged node-local bytes: the list marks it, verify and ls name it, the mount refuses it" {
    local m="$WORKDIR/m"
    mkdir "$WORKDIR/dest"
    # the file's node-local bytes are overwritten while its daemon is down: the drain finds them
    # against the checksums taken when they were written and marks its extent damaged
    run timeout 300 "$PDCBB" run --quiet --workdir "$WORKDIR/job" --job-id 1322 \
        --pdc mount=yes,drain="$WORKDIR/dest" -- bash -c '
        d0="$PDCBB_JOB_DIR"
        head -c 3000000 /dev/urandom > "$PDCBB_MOUNT/hurt"
        echo fine > "$PDCBB_MOUNT/fine"
        f="$(ls -S "$d0"/bbd-0/objects/*.dat | head -1)"
        pid="$(cat "$d0/bbd-0.pid")"
        kill -TERM "$pid"
        while kill -0 "$pid" 2>/dev/null && ! grep -q "^[^ ]* ([^)]*) [ZX]" "/proc/$pid/stat" 2>/dev/null; do sleep 0.05; done
        printf "\xde\xad\xbe\xef" | dd of="$f" bs=1 seek=$((1048576 + 4321)) conv=notrunc status=none
        "'"$BBD"'" --job-dir "$d0" --rank 0 --nservers 1 --job-id "$PDCBB_JOB_ID" --node node0 \
            3>"$d0/ready0" --ready-fd 3 &
        for _ in $(seq 200); do grep -q ready "$d0/ready0" 2>/dev/null && break; sleep 0.05; done'
    echo "$output"
    assert_success
    local d="$WORKDIR/dest/pdcbb.1322" hexpath
    [ -f "$d/COMPLETE" ]
    hexpath="$(printf hurt | od -An -tx1 | tr -d ' \n')"
    grep -Eq "^f 0644 3000000 [0-9]+ [0-9a-f]{8} damaged $hexpath -\$" "$d/files.manifest"
    run "$PDCBB" verify "$d"
    assert_failure 1
    assert_line --regexp "^DAMAGED damaged extent: object '.*' \(id [0-9]+\) rank 0 bytes 1048576-2097151 "
    assert_line "DAMAGED files/hurt: built from damaged extents of its object (those bytes are not the job's; the DAMAGED extents are listed above)"
    assert_output --regexp ": 1 damaged file, 1 damaged$"
    run "$PDCBB" ls --files "$d"
    assert_success
    assert_line --regexp '^  -rw-r--r--  +3000000  .*  hurt  \(damaged\)$'
    mount_fg "$d" "$m" --log "$WORKDIR/mount.log"
    run cat "$m/hurt"
    assert_failure
    assert_output --partial "Input/output error"
    [ "$(cat "$m/fine")" = fine ]
    unmount_fg "$m"
    grep -q "files/hurt: the drain built it from damaged extents of its object" "$WORKDIR/mount.log"
}

@test "USER-GUIDE.md's 'After the job: the files' runs as printed" {
    local block
    block="$(awk '/^### / {insec = ($0 == "### After the job: the files"); next}
                  /^## / {insec = 0}
                  insec && /^```sh$/ {take = 1; next} take && /^```$/ {exit} take {print}' \
        "$REPO_DIR/docs/USER-GUIDE.md")"
    [ -n "$block" ]
    grep -q '^pdcbb mount ' <<<"$block"
    grep -q '^fusermount3 -u ' <<<"$block"
    cd "$WORKDIR"
    run env PATH="$BUILD_DIR/cli:$PATH" TMPDIR="$WORKDIR" timeout 300 bash -e -c "$block"
    echo "$output"
    assert_success
    assert_output --regexp "verified [0-9]+ extents, [0-9]+ bytes, [0-9]+ files \([0-9]+ bytes\): OK"
    assert_output --partial "FILES ("
    assert_output --partial "same bytes"
    ! grep -q " $WORKDIR" /proc/mounts
    [ -z "$(pgrep -f "pdcbb_mount_drain .*$WORKDIR" || true)" ]
    assert_no_daemons "$WORKDIR"
}

# list_tree DIR: every entry under DIR but DIR itself, one line each: type, mode, size,
# mtime (ns), path, link target; sorted.
list_tree() {
    (cd "$1" && find . ! -name . -printf '%y %m %s %T@ %p %l\n' | LC_ALL=C sort)
}

@test "stage_in of the drain brings its files back into a later job's mount on 3 nodes: bytes, modes, times, links; one object per file; what the job changes drains again" {
    local src expect out="$WORKDIR/dest2/pdcbb.1321"
    src="$(drain_copy staged)"
    mkdir -p "$WORKDIR/dest2"
    run timeout 300 "$PDCBB" run --nodes 3 --quiet --workdir "$WORKDIR/job2" --job-id 1321 \
        --pdc "mount=yes,stage_in=$src,drain=$WORKDIR/dest2" -- sh -c '
        cd "$PDCBB_MOUNT" || exit 1
        find . ! -name . -printf "%y %m %s %T@ %p %l\n" | LC_ALL=C sort >"$2/staged.list"
        diff -r "$1/files" . && echo "the mount holds the drained bytes"
        echo more >>notes.txt && mkdir deep/new && echo new >deep/new/x && rm empty &&
            mv bash bash2' _ "$src" "$WORKDIR"
    echo "$output"
    assert_success
    assert_output --partial "the mount holds the drained bytes"
    # the tree as drained: every entry, with its type, mode, size, mtime and link target
    diff <(list_tree "$src/files") "$WORKDIR/staged.list"
    [ "$(wc -l <"$WORKDIR/staged.list")" -ge 10 ]
    # the second job's drain: the staged files with that job's changes, checked
    [ -f "$out/COMPLETE" ]
    run "$PDCBB" verify "$out"
    assert_success
    expect="$WORKDIR/expect"
    cp -a "$src/files" "$expect"
    (cd "$expect" && echo more >>notes.txt && mkdir deep/new && echo new >deep/new/x && rm empty &&
        mv bash bash2)
    diff -r "$expect" "$out/files"
    [ "$(cat "$out/files/deep/new/x")" = new ]
    # one object per file: the staged files' objects, not copies beside them
    local nfiles
    nfiles="$(find "$out/files" -type f | wc -l)"
    run "$PDCBB" ls "$out"
    assert_output --regexp "pdcbb\.files +persistent +$nfiles "
}

@test "stage_in refuses a drain whose filesystem entries are damaged, naming the file, and leaves no daemon" {
    local src
    src="$(drain_copy hurt-ns)"
    # one byte of an entry line of rank 0's list of the tree
    local f="$src/ns/rank-00000.ns"
    [ -s "$f" ]
    printf 'Z' | dd of="$f" bs=1 seek=40 conv=notrunc 2>/dev/null
    run timeout 300 "$PDCBB" run --nodes 2 --quiet --workdir "$WORKDIR/job3" --job-id 1322 \
        --pdc "mount=yes,stage_in=$src" -- true
    echo "$output"
    assert_failure
    assert_output --partial "ns/rank-00000.ns is damaged"
    assert_no_daemons "$WORKDIR"
}

# ns_add FILE LINE...: append entry lines to a drained ns file and write its CRC-32C line again
# (as its owner could); checks first that the CRC-32C computed here is the file's own.
ns_add() {
    python3 - "$@" <<'PY'
import sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
path, extra = sys.argv[1], sys.argv[2:]
text = open(path, 'rb').read()
body, _, tail = text.rpartition(b'crc ')
assert int(tail.strip(), 16) == crc32c(body), "the CRC-32C here is not the drain's"
body += b''.join(l.encode() + b'\n' for l in extra)
open(path, 'wb').write(body + b'crc %08x\n' % crc32c(body))
PY
}

@test "stage_in leaves out entries that are not under the root (an orphan, a cycle) and files whose object is gone, says so, and stages the rest" {
    local src out="$WORKDIR/dest3/pdcbb.1323" name
    src="$(drain_copy crafted)"
    mkdir -p "$WORKDIR/dest3"
    name="$(printf lost | od -An -tx1 | tr -d ' \n')"
    # a directory whose directory is not in the drain, two that are each other's parent, and a
    # file whose object is not in the drain
    ns_add "$src/ns/rank-00000.ns" \
        "00000000deadbeef 0000000000bad001 2 755 0 0 0 1 1 $name -" \
        "0000000000bad003 0000000000bad002 2 755 0 0 0 1 1 $name -" \
        "0000000000bad002 0000000000bad003 2 755 0 0 0 1 1 $name -" \
        "0000000000000001 0000000000bad004 1 644 0 0 5 1 1 $name -"
    run timeout 300 "$PDCBB" run --nodes 2 --quiet --workdir "$WORKDIR/job4" --job-id 1323 \
        --pdc "mount=yes,stage_in=$src,drain=$WORKDIR/dest3" -- sh -c '
        cd "$PDCBB_MOUNT" && find . ! -name . -printf "%y %m %s %T@ %p %l\n" | LC_ALL=C sort'
    echo "$output"
    assert_success
    diff <(list_tree "$src/files") <(grep -v '^pdcbb' <<<"$output")
    grep -h "4 entries of the drained filesystem are left out: 3 not under its root .* and 1 of its files whose object is not staged" \
        "$out"/logs/*.log
}
