#!/usr/bin/env bats
# `pdcbb bcast SRC DEST` (issue 13 item 7, ZOID's file broadcast): a file read once by the
# command and passed down a tree of the job's daemons arrives identical on every node of local
# jobs of 1 to 5 nodes (each "node" has its own job directory; absolute destinations use %n so
# that the nodes, which share this machine's filesystem, write different files), with its mode,
# atomically (no temporary file left), for an odd size over many small chunks, a big file over
# the default chunks, an empty file; the errors name what failed (the node, for a node's
# failure) and leave no partial copy anywhere; the daemons count the bytes under the
# `broadcast` kind of `pdcbb stats`; the user guide's example runs as printed.

load helpers

setup() {
    require_build
    make_workdir
    MOUNTS=()
    export PDCBB
}

teardown() {
    unmount_tmpfs
    cleanup_workdir
}

# in_job NODES SCRIPT: run SCRIPT with bash inside a local job of NODES nodes, in $WORKDIR.
in_job() {
    run timeout 600 "$PDCBB" run --nodes "$1" --workdir "$WORKDIR" --quiet -- \
        bash -c "cd \"\$WORKDIR\" || exit 1; $2"
    echo "$output"
}

# same_on_nodes SRC REL NODES: every node's job directory holds REL, identical to SRC, with
# SRC's permission bits, and no temporary file of a broadcast is left anywhere.
same_on_nodes() {
    local src=$1 rel=$2 n=$3 i f
    for ((i = 0; i < n; i++)); do
        f="$(echo "$WORKDIR"/node$i/pdcbb.*/"$rel")"
        [ -f "$f" ] || { echo "node$i has no $rel" >&2; return 1; }
        cmp "$src" "$f" || { echo "node$i: $f differs from $src" >&2; return 1; }
        [ "$(stat -c %a "$f")" = "$(stat -c %a "$src")" ] || {
            echo "node$i: mode $(stat -c %a "$f"), source $(stat -c %a "$src")" >&2; return 1; }
    done
    no_temporaries
}

no_temporaries() {
    local left
    left="$(find "$WORKDIR" -name '.*.bcast-*' 2>/dev/null)"
    [ -z "$left" ] || { echo "temporary files left: $left" >&2; return 1; }
}

@test "an odd-size file over small chunks and a 200 MiB file arrive identical on 4 nodes, with their mode" {
    head -c 1000003 /dev/urandom > "$WORKDIR/odd.bin"
    chmod 751 "$WORKDIR/odd.bin"
    head -c $((200 << 20)) /dev/urandom > "$WORKDIR/big.bin"
    chmod 640 "$WORKDIR/big.bin"
    in_job 4 '
        set -e
        "$PDCBB" bcast --verbose --chunk 64K odd.bin in/odd.copy > odd.out
        "$PDCBB" bcast big.bin big.copy > big.out 2> big.err'
    assert_success
    cd "$WORKDIR"
    cat odd.out big.out big.err
    same_on_nodes odd.bin in/odd.copy 4
    same_on_nodes big.bin big.copy 4
    # --verbose: one line per node (rank, node, path), then the summary with the CRC-32C.
    for i in 0 1 2 3; do
        grep -qE "^$i node$i $WORKDIR/node$i/pdcbb\.[0-9]+/in/odd.copy\$" odd.out
    done
    grep -q "odd.bin -> in/odd.copy on 4 nodes: 1000003 bytes, CRC-32C [0-9a-f]\{8\}" odd.out
    grep -q "on 4 nodes: $((200 << 20)) bytes" big.out
    # A big file shows its progress on stderr, ending at 100%.
    grep -q "^pdcbb bcast: 100% 200.0 of 200.0 MiB" big.err
    assert_no_daemons "$WORKDIR"
}

@test "every tree shape: 1, 2, 3 and 5 nodes, fanout 1 (a chain) and 2, an empty file" {
    head -c 300007 /dev/urandom > "$WORKDIR/f.bin"
    : > "$WORKDIR/empty"
    chmod 600 "$WORKDIR/empty"
    for n in 1 2 3 5; do
        in_job $n '
            set -e
            "$PDCBB" bcast --quiet --chunk 4K --fanout 1 f.bin chain.bin
            "$PDCBB" bcast --quiet --chunk 16K --fanout 2 f.bin tree.bin
            "$PDCBB" bcast --quiet --fanout 3 f.bin wide.bin
            "$PDCBB" bcast empty empty.copy'
        assert_success
        assert_output --partial "empty -> empty.copy on $n node"
        same_on_nodes "$WORKDIR/f.bin" chain.bin $n
        same_on_nodes "$WORKDIR/f.bin" tree.bin $n
        same_on_nodes "$WORKDIR/f.bin" wide.bin $n
        same_on_nodes "$WORKDIR/empty" empty.copy $n
        assert_no_daemons "$WORKDIR"
        rm -rf "$WORKDIR"/node* "$WORKDIR"/rendezvous
    done
}

@test "absolute destinations with %n and %r, a directory destination, and replacing a copy" {
    head -c 123457 /dev/urandom > "$WORKDIR/a.bin"
    head -c 99 /dev/urandom > "$WORKDIR/b.bin"
    mkdir "$WORKDIR/abs"
    in_job 3 '
        set -e
        "$PDCBB" bcast a.bin "$WORKDIR/abs/%n-%r-100%%.bin"
        "$PDCBB" bcast a.bin dir/
        "$PDCBB" bcast a.bin dir
        "$PDCBB" bcast b.bin dir/a.bin'
    assert_success
    for i in 0 1 2; do
        cmp "$WORKDIR/a.bin" "$WORKDIR/abs/node$i-$i-100%.bin"
    done
    # dir/ received a.bin's base name, and the last broadcast replaced it atomically.
    same_on_nodes "$WORKDIR/b.bin" dir/a.bin 3
}

@test "errors: missing SRC, '..', the job's own files, unwritable DEST, a full disk on one node, not in a job" {
    head -c 200000 /dev/urandom > "$WORKDIR/s.bin"
    mount_tmpfs "$WORKDIR/ro" ro
    mkdir -p "$WORKDIR/full/node0" "$WORKDIR/full/node2"
    mount_tmpfs "$WORKDIR/full/node1" size=64k
    in_job 3 '
        "$PDCBB" bcast no-such-file x; echo "missing=$?"
        "$PDCBB" bcast s.bin ../escape.bin; echo "dotdot=$?"
        "$PDCBB" bcast s.bin a/../../escape.bin; echo "dotdot2=$?"
        "$PDCBB" bcast s.bin token; echo "token=$?"
        "$PDCBB" bcast s.bin "$WORKDIR/ro/x.bin"; echo "ro=$?"
        "$PDCBB" bcast s.bin "$WORKDIR/full/%n/x.bin"; echo "full=$?"
        "$PDCBB" bcast s.bin "$WORKDIR/nodir/x.bin"; echo "nodir=$?"
        "$PDCBB" bcast "$WORKDIR" x; echo "dir=$?"
        "$PDCBB" bcast s.bin "%q"; echo "pattern=$?"
        "$PDCBB" bcast s.bin; echo "usage=$?"
        "$PDCBB" bcast --chunk 1K s.bin x; echo "chunk=$?"'
    assert_success
    assert_line "missing=1"
    assert_output --partial "pdcbb bcast: cannot read no-such-file: No such file or directory"
    assert_line "dotdot=1"
    assert_line "dotdot2=1"
    assert_output --partial "DEST '../escape.bin' leaves the job directory ('..')"
    assert_line "token=1"
    assert_output --partial "would replace the burst buffer's own file token"
    assert_line "ro=1"
    # Every node is named with its cause.
    for i in 0 1 2; do
        assert_output --regexp "node node$i \(daemon $i\): cannot create $WORKDIR/ro/x.bin: Read-only file system"
    done
    assert_line "full=1"
    assert_output --regexp "node node1 \(daemon 1\): cannot allocate 200000 bytes for $WORKDIR/full/node1/x.bin: No space left on device"
    refute_output --regexp "node node[02] \(daemon [02]\): cannot allocate"
    assert_line "nodir=1"
    assert_output --partial "cannot create $WORKDIR/nodir/x.bin: No such file or directory"
    assert_line "dir=1"
    assert_output --partial "is not a regular file"
    assert_line "pattern=1"
    assert_output --partial "unknown pattern '%q'"
    assert_line "usage=2"
    assert_line "chunk=2"
    # No copy anywhere: not on the nodes that could write (the broadcast was aborted), not
    # outside the job directories, no temporary file.
    [ ! -e "$WORKDIR/full/node0/x.bin" ] && [ ! -e "$WORKDIR/full/node2/x.bin" ]
    [ ! -e "$WORKDIR/escape.bin" ] && [ -z "$(ls "$WORKDIR"/node0/ 2>/dev/null | grep escape)" ]
    for i in 0 1 2; do
        [ "$(cat "$WORKDIR"/node$i/pdcbb.*/token | wc -c)" -gt 32 ]
    done
    no_temporaries
    # Outside a job.
    run env -u PDCBB_JOB_DIR "$PDCBB" bcast "$WORKDIR/s.bin" x
    assert_failure 1
    assert_output --partial "pdcbb bcast: no running job: run inside the job"
    run "$PDCBB" bcast --job-dir "$WORKDIR/none" "$WORKDIR/s.bin" x
    assert_failure 1
    assert_output --partial "no running job at $WORKDIR/none"
}

@test "pdcbb stats counts the broadcast's bytes under the broadcast kind on every daemon" {
    head -c $((3 << 20)) /dev/urandom > "$WORKDIR/c.bin"
    in_job 3 '
        set -e
        "$PDCBB" stats --json > before.json
        "$PDCBB" bcast --chunk 256K c.bin c.copy
        "$PDCBB" stats --json > after.json'
    assert_success
    cd "$WORKDIR"
    size=$((3 << 20))
    for r in 0 1 2; do
        got=$(jq -n --slurpfile a after.json --slurpfile b before.json \
            "\$a[0].daemons[$r].kinds.broadcast.bytes_recv - \$b[0].daemons[$r].kinds.broadcast.bytes_recv")
        [ "$got" -ge "$size" ] || { echo "daemon $r received $got broadcast bytes, expected >= $size" >&2; return 1; }
        msgs=$(jq ".daemons[$r].kinds.broadcast.msgs_recv" after.json)
        [ "$msgs" -ge 14 ] || { echo "daemon $r: $msgs broadcast messages" >&2; return 1; }
        [ "$(jq ".daemons[$r].kinds.broadcast.bytes_recv" before.json)" -eq 0 ]
    done
    # The root forwards to two children: it sends at least twice the file.
    sent=$(jq '.daemons[0].kinds.broadcast.bytes_sent' after.json)
    [ "$sent" -ge $((2 * size)) ] || { echo "daemon 0 sent $sent" >&2; return 1; }
    # The table shows the kind too.
    run timeout 60 "$PDCBB" run --nodes 1 --workdir "$WORKDIR/t" --quiet -- \
        bash -c '"$PDCBB" bcast --quiet "$0" x && "$PDCBB" stats' "$WORKDIR/c.bin"
    assert_success
    assert_output --regexp "broadcast +[0-9]"
}

@test "USER-GUIDE.md's pdcbb bcast example runs as printed in a 3-node job" {
    awk '/^## Copying a file to every node/ {f = 1} f && /^```sh$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$REPO_DIR/docs/USER-GUIDE.md" > "$WORKDIR/example.sh"
    grep -q "pdcbb bcast" "$WORKDIR/example.sh"
    head -c 5000 /dev/urandom > "$WORKDIR/input.dat"
    in_job 3 "PATH=\"$(dirname "$PDCBB"):\$PATH\" bash -e example.sh"
    assert_success
    assert_output --partial "input.dat -> inputs/ on 3 nodes: 5000 bytes"
    same_on_nodes "$WORKDIR/input.dat" inputs/input.dat 3
}
