#!/usr/bin/env bats
# Checksums of node-local region data (docs/INTERNALS.md "Checksums"): a data file damaged while
# its daemon was down (truncated to half, 4 bytes overwritten) is found when the daemon starts
# again or when the bytes are next served, over the direct path and over UCX: the read fails
# naming the object, the stored block and the byte range, never returning zeros or the damaged
# bytes; the rest of the job still reads; the drain carries the damage into the manifest and
# `pdcbb verify` fails naming the damaged extent.

load helpers
bats_require_minimum_version 1.5.0

DAMAGE="$BUILD_DIR/tests/pdc_damage"
MODEL="$BUILD_DIR/tests/pdc_region_model"

setup() {
    setup_workdir "$DAMAGE" "$MODEL"
}

teardown() {
    cleanup_workdir
}

# The job script's helpers: stop daemon 0 of node 0 (kill -SIG), restart it on its directory.
JOB_LIB='
IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
stop0() {
    local pid; pid="$(cat "$d0/bbd-0.pid")"
    kill "-$1" "$pid"
    while kill -0 "$pid" 2>/dev/null && ! grep -q "^[^ ]* ([^)]*) [ZX]" "/proc/$pid/stat" 2>/dev/null; do sleep 0.05; done
}
start0() {
    rm -f ready0
    "'"$BBD"'" --job-dir "$d0" --rank 0 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node0 3>ready0 --ready-fd 3 &
    for i in $(seq 200); do grep -q ready ready0 2>/dev/null && break; sleep 0.05; done
}
datafile0() { ls "$d0"/bbd-0/objects/*.dat; } # the data files of daemon 0
'

# damage_case DIRECT: write 8 MiB to daemon 0, damage it while the daemon is down, read.
damage_case() {
    in_job 2 "$JOB_LIB"'
        export PDCBB_DIRECT='"$1"'
        "'"$DAMAGE"'" write trunc 8 || exit 1
        ft="$(datafile0)"
        "'"$DAMAGE"'" write flip 8 || exit 1
        ff="$(datafile0 | grep -v "$ft")"
        [ -f "$ft" ] && [ -f "$ff" ] || exit 1
        "'"$DAMAGE"'" read trunc 8 || exit 1
        stop0 9
        truncate -s 4M "$ft"
        printf "\xde\xad\xbe\xef" | dd of="$ff" bs=1 seek=$((5 * 1048576 + 4321)) conv=notrunc status=none
        start0
        r() { local out; out="$("'"$DAMAGE"'" read "$@")"; echo "$out rc=$?"; }
        echo "trunc: $(r trunc 8)"
        echo "trunc again: $(r trunc 8)"
        echo "trunc head: $(r trunc 8 0 4)"
        echo "flip: $(r flip 8)"
        echo "flip head: $(r flip 8 0 5)"
        echo "flip tail: $(r flip 8 6 2)"
        grep -h "truncated\|damaged" "$d0/bbd-0.log"
    '
    assert_success
    refute_output --partial "WRONG byte"
    # truncation: found at start, named with the missing bytes, never read as zeros
    local trunc="PDCBB_ERR_CORRUPT: stored bytes 4194304-5242879 of the object (elements 4194304-5242879, checksum block 4 of 1048576 bytes) are damaged: the node-local data file is shorter than the data written to it (truncated) rc=2"
    assert_output --partial "trunc: read failed: PDCBB_ERR_CORRUPT: PDCregion_transfer_wait: read of object 'trunc': daemon 0: $trunc"
    assert_output --partial "trunc again: read failed: PDCBB_ERR_CORRUPT: PDCregion_transfer_wait: read of object 'trunc': daemon 0: $trunc"
    assert_output --partial "trunc head: read ok rc=0"
    assert_output --partial "its data file is 4194304 bytes but data was written up to byte 8388608: truncated"
    # 4 overwritten bytes: found when served, named, the rest of the object still served
    assert_output --partial "flip: read failed: PDCBB_ERR_CORRUPT: PDCregion_transfer_wait: read of object 'flip': daemon 0: PDCBB_ERR_CORRUPT: stored bytes 5242880-6291455 of the object (elements 5242880-6291455, checksum block 5 of 1048576 bytes) are damaged: the bytes do not match the checksum taken when they were written rc=2"
    assert_output --partial "flip head: read ok rc=0"
    assert_output --partial "flip tail: read ok rc=0"
    assert_output --partial "bytes 5242880-6291455 of its data (checksum block 5"
}

@test "damage found after a restart, over the direct path: the read fails naming object, block and bytes" {
    damage_case 1
}

@test "damage found after a restart, over UCX (PDCBB_DIRECT=0): the read fails naming object, block and bytes" {
    damage_case 0
}

# The bookkeeping of overlapping, partial, batched and unwaited writes of every placement keeps
# every block's checksum equal to its bytes: with PDCBB_CSUM_VERIFY=always the daemons check
# every block they serve on every read (not once per life), and the model reads everything it
# wrote, in random boxes and whole.
model_checked() {
    in_job 3 '
        export PDCBB_CSUM_VERIFY=always PDCBB_DIRECT='"$1"'
        for s in 21 22; do "'"$MODEL"'" --seed $s --ops 1500 || exit 1; done
        # many-dimensional objects: messages of many regions whose runs share blocks
        "'"$MODEL"'" --seed 13 --ops 2000 --max-ndim 8 || exit 1
        grep -h "damaged" node*/pdcbb.*/bbd-*.log
        exit 0'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 3 ]
    refute_output --partial "damaged"
    refute_output --partial "MISMATCH"
}

@test "model on 3 daemons, every block checked on every read: direct path" {
    model_checked 1
}

@test "model on 3 daemons, every block checked on every read: UCX" {
    model_checked 0
}

@test "the drain carries the damage: the rest drains, the manifest marks the damaged extents, pdcbb verify fails naming them" {
    mkdir "$WORKDIR/dest"
    in_job 2 "$JOB_LIB"'
        "'"$DAMAGE"'" write trunc 8 || exit 1
        ft="$(datafile0)"
        "'"$DAMAGE"'" write flip 8 || exit 1
        ff="$(datafile0 | grep -v "$ft")"
        "'"$DAMAGE"'" write good 8 || exit 1
        "'"$DAMAGE"'" write striped 8 rstatic || exit 1
        stop0 TERM
        truncate -s 4M "$ft"
        printf "\xde\xad\xbe\xef" | dd of="$ff" bs=1 seek=$((5 * 1048576 + 4321)) conv=notrunc status=none
        start0
        "'"$DAMAGE"'" read good 8 && "'"$DAMAGE"'" read striped 8
    ' --job-id 7320 --drain "$WORKDIR/dest"
    assert_success
    local d="$WORKDIR/dest/pdcbb.7320"
    [ -f "$d/COMPLETE" ]
    [ "$(grep -c "damaged: truncated" "$d/manifest.yaml")" -eq 1 ]
    [ "$(grep -c "damaged: checksum" "$d/manifest.yaml")" -eq 1 ]
    run "$PDCBB" verify "$d"
    echo "$output"
    assert_failure 1
    assert_output --partial "DAMAGED damaged extent: object 'trunc' (id "
    assert_output --partial "bytes 4194304-8388607 (data/rank-00000.dat at "
    assert_output --partial "lost on the node (its data file was truncated), drained as zeros"
    assert_output --partial "DAMAGED damaged extent: object 'flip' (id "
    assert_output --partial "bytes 5242880-6291455 (data/rank-00000.dat at "
    assert_output --partial "its node-local bytes did not match the checksum taken when they were written"
    assert_output --regexp "verified [0-9]+ extents, [0-9]+ bytes: 2 damaged"
    # the undamaged objects drained whole, with their bytes
    run "$PDCBB" get -o "$WORKDIR/good.raw" "$d" good
    assert_success
    run "$PDCBB" get -o "$WORKDIR/striped.raw" "$d" striped
    assert_success
    cmp "$WORKDIR/good.raw" "$WORKDIR/striped.raw"
    [ "$(stat -c %s "$WORKDIR/good.raw")" -eq $((8 << 20)) ]
    # what the job wrote: the pattern of pdc_damage (both objects hold the same bytes)
    [ "$(od -An -tu1 -j 4194305 -N1 "$WORKDIR/good.raw" | tr -d " ")" -eq $(( (4194305 * 131 + (4194305 >> 12) + 1) % 256 )) ]
    # every reader refuses the damaged extents (their drained checksum is of what was found)
    run "$PDCBB" get -o "$WORKDIR/flip.raw" "$d" flip
    assert_failure 1
    assert_output --partial "damaged on the node before the drain (checksum): its bytes did not match the checksum taken when they were written"
    [ ! -e "$WORKDIR/flip.raw" ]
    run "$PDCBB" get -o "$WORKDIR/trunc.raw" "$d" trunc
    assert_failure 1
    assert_output --partial "damaged on the node before the drain (truncated)"
    run "$PDCBB" export --format raw -o "$WORKDIR/exp" "$d"
    assert_failure 1
    assert_output --partial "damaged on the node before the drain"
    # --partial reads what is intact, the damaged bytes as zeros, and says so
    run "$PDCBB" get --partial -o "$WORKDIR/flip.raw" "$d" flip
    assert_success
    assert_output --partial "damaged extent read as zeros"
    assert_no_daemons "$WORKDIR"
}

@test "the drain reads node-local bytes once: each block is checked from the copy's own read; a damaged block makes it plan and copy again, as a drain that checks every block first" {
    local w="$WORKDIR/w" j="$WORKDIR/w/node0/pdcbb.7330"
    run "$PDCBB" run --quiet --keep --workdir "$w" --job-id 7330 -- bash -c '
        "'"$DAMAGE"'" write good 8 || exit 1
        ls "$PDCBB_SERVER_DIRS"/bbd-0/objects/*.dat > "'"$WORKDIR"'/before"
        "'"$DAMAGE"'" write flip 3 || exit 1
        ls "$PDCBB_SERVER_DIRS"/bbd-0/objects/*.dat | grep -vxFf "'"$WORKDIR"'/before" > "'"$WORKDIR"'/flipfile"'
    echo "$output"
    assert_success
    [ "$(wc -l < "$WORKDIR/flipfile")" -eq 1 ]
    mkdir "$WORKDIR/a" "$WORKDIR/b" "$WORKDIR/c"
    # undamaged: the 8 + 3 blocks are checked from the copy, none read twice, one copy
    run env PDCBB_LOG=debug "$PDCBB" drain --keep --to "$WORKDIR/a" "$j"
    echo "$output"
    assert_success
    assert_output --partial "rank 0: 11 block checksums from the copy, 0 blocks read again"
    refute_output --partial "planning again"
    run "$PDCBB" verify "$WORKDIR/a/pdcbb.7330"
    assert_success
    # four bytes of the second block of 'flip' changed on the node: found by the copy's read
    printf "\xde\xad\xbe\xef" | dd of="$(cat "$WORKDIR/flipfile")" bs=1 seek=$((1048576 + 4321)) conv=notrunc status=none
    run env PDCBB_LOG=debug "$PDCBB" drain --keep --to "$WORKDIR/b" "$j"
    echo "$output"
    assert_success
    assert_output --partial "blocks read again: damage found"
    assert_output --partial "rank 0: node-local data does not match its checksums: planning again with every block checked first, and copying again"
    assert_output --partial "(checksum block 1) are damaged"
    # the same drain as one that checks every block before it copies
    run env PDCBB_LOG=debug PDCBB_DRAIN_CHECK_FIRST=1 "$PDCBB" drain --keep --to "$WORKDIR/c" "$j"
    echo "$output"
    assert_success
    refute_output --partial "block checksums from the copy"
    refute_output --partial "planning again"
    cmp "$WORKDIR/b/pdcbb.7330/data/rank-00000.dat" "$WORKDIR/c/pdcbb.7330/data/rank-00000.dat"
    diff <(grep -v "seconds:" "$WORKDIR/b/pdcbb.7330/manifest.yaml") \
        <(grep -v "seconds:" "$WORKDIR/c/pdcbb.7330/manifest.yaml")
    [ "$(grep -c "damaged: checksum" "$WORKDIR/b/pdcbb.7330/manifest.yaml")" -eq 1 ]
    run "$PDCBB" verify "$WORKDIR/b/pdcbb.7330"
    assert_failure 1
    assert_output --partial "DAMAGED damaged extent: object 'flip' (id "
    assert_output --partial "bytes 1048576-2097151 (data/rank-00000.dat at "
    # and the undamaged drain holds the same bytes of 'good'
    run "$PDCBB" get -o "$WORKDIR/good.a" "$WORKDIR/a/pdcbb.7330" good
    assert_success
    run "$PDCBB" get -o "$WORKDIR/good.b" "$WORKDIR/b/pdcbb.7330" good
    assert_success
    cmp "$WORKDIR/good.a" "$WORKDIR/good.b"
    assert_no_daemons "$WORKDIR"
}
