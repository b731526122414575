#!/usr/bin/env bats
# Strided regions (PDCbb_region_create_strided): the selection arithmetic (unit test), a model
# test against an in-memory reference (tests/progs/pdc_strided_model.c) over 1, 2 and 3
# daemons and every placement, with start_all/wait_all batches and queries; bad input refused
# by the client and by the daemon; the data after the job through the drained API; the user
# guide's example as printed; and the bench's quick run.

load helpers
bats_require_minimum_version 1.5.0

MODEL="$BUILD_DIR/tests/pdc_strided_model"
GUIDE="$REPO_DIR/docs/USER-GUIDE.md"
IN_JOB_SUBDIR=/job # in_job's jobs keep their files apart from the tests' own

setup() {
    setup_workdir "$MODEL"
    export MODEL BUILD_DIR
}

teardown() {
    cleanup_workdir
}

# Every placement saw strided writes and reads, and (int objects) queries.
assert_all_placements_used() {
    local pl
    for pl in obj_static region_static region_dynamic region_local; do
        grep -Eq "^placement $pl strided_writes=[1-9][0-9]* strided_reads=[1-9][0-9]* box_writes=[1-9][0-9]* box_reads=[1-9][0-9]* queries=[1-9]" <<<"$output" ||
            { echo "placement $pl: no strided writes, reads, box transfers or queries" >&2; return 1; }
    done
}

@test "selection arithmetic: checks, ranks, clipping and runs against a naive enumeration" {
    run "$BUILD_DIR/tests/test_select"
    assert_success
    assert_output --regexp "^select: [0-9]+ checks, 0 failures$"
}

@test "model: strided and box transfers, batches and queries on 1 daemon, every placement" {
    in_job 1 'for s in 1 2; do "$MODEL" model --seed $s --ops 400 --name m$s || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
    assert_all_placements_used
    refute_output --partial MISMATCH
    assert_no_daemons "$WORKDIR"
}

@test "model on 2 daemons" {
    in_job 2 'for s in 3 4; do "$MODEL" model --seed $s --ops 400 --name m$s || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "model on 2 daemons, writes through the mapping path (as when a direct writer is active)" {
    # Without a DATA_DIRECT writer a daemon rewrites spans (read, fill, write); with one it
    # stores only the selected bytes through a mapping: forced here for the whole job.
    PDCBB_STRIDED_MAPPED=1 in_job 2 '"$MODEL" model --seed 7 --ops 400 --name mm7 || exit 1
        grep -h "strided writes store through mappings" "$PDCBB_JOB_DIR"/bbd-*.log | wc -l'
    assert_success
    assert_line OK
    assert_line --regexp "^[12]$"
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "interleaved writers: strided even columns and direct-path odd columns at the same time lose nothing" {
    # One process writes the even columns of a 512 x 512 object with a strided region, another
    # the odd columns as one-column boxes through the direct path (it writes the daemon's file
    # itself), 30 times each, at the same time. Whatever the interleaving (the daemon rewrites
    # spans only while no direct writer is active, else it stores through a mapping), every
    # column ends with its own writer's last values. How often they overlapped is only shown.
    in_job 1 '"$MODEL" interleave-even & e=$!
        PDCBB_LOG=debug "$MODEL" interleave-odd 2>odd.err & o=$!
        wait $e || exit 1; wait $o || exit 1
        "$MODEL" interleave-check || exit 1
        echo "odd used the direct path: $(grep -c "region bytes move directly" odd.err)"
        echo "mapped stores: $(grep -c "store through mappings" "$PDCBB_JOB_DIR"/bbd-0.log)"'
    assert_success
    assert_line "interleave even: 30 writes"
    assert_line "interleave odd: 30 writes"
    assert_line "interleave check: every column holds its writer's last values"
    assert_line "odd used the direct path: 1"
    assert_no_daemons "$WORKDIR"
}

@test "model on 3 daemons; the drained job holds what strided writes wrote" {
    mkdir "$WORKDIR/dest"
    in_job 3 'for s in 5 6; do "$MODEL" model --seed $s --ops 400 --name m$s || exit 1; done' \
        --job-id 7272 --drain "$WORKDIR/dest"
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
    assert_all_placements_used
    [ -f "$WORKDIR/dest/pdcbb.7272/COMPLETE" ]
    assert_no_daemons "$WORKDIR"
    # After the job: every object whole and 20 strided reads each, through the drained API.
    cd "$WORKDIR"
    for s in 5 6; do
        PDCBB_DRAINED_DIR="$WORKDIR/dest/pdcbb.7272" run "$MODEL" verify --name m$s
        echo "$output"
        assert_success
        [ "$(grep -c 'whole and 20 strided reads match; write refused: PDCBB_ERR_READ_ONLY' <<<"$output")" -eq 8 ]
        assert_line OK
    done
}

@test "the model's checker fails on a wrong byte" {
    # The reference file of a drained object, one element changed: verify must report it.
    mkdir "$WORKDIR/dest"
    in_job 1 '"$MODEL" model --seed 9 --ops 100 --name bad9 || exit 1' --job-id 7273 \
        --drain "$WORKDIR/dest"
    assert_success
    cd "$WORKDIR"
    printf '\xff\xff\xff\x7f' | dd of=bad9-0.model bs=1 seek=48 conv=notrunc 2>/dev/null
    PDCBB_DRAINED_DIR="$WORKDIR/dest/pdcbb.7273" run "$MODEL" verify --name bad9
    assert_failure 1
    assert_output --regexp "MISMATCH drained whole: object bad9-0 \(obj_static\) element 0 differs"
}

@test "bad strided regions are refused by the client with the value at fault" {
    in_job 1 '"$MODEL" bad'
    assert_success
    assert_line --regexp "^refused zero count: PDCBB_ERR_BAD_REGION: .*count\[1\] is 0$"
    assert_line --regexp "^refused block > stride: PDCBB_ERR_BAD_REGION: .*block\[0\] = 3 is larger than stride\[0\] = 2$"
    assert_line --regexp "^refused zero block: PDCBB_ERR_BAD_REGION: .*block\[0\] is 0$"
    assert_line --regexp "^refused too many dims: PDCBB_ERR_BAD_REGION: .*ndims 17 out of range"
    assert_line --regexp "^refused overflow: PDCBB_ERR_BAD_REGION: .*dimension 0 overflows"
    assert_line --regexp "^refused NULL stride: PDCBB_ERR_INVAL: "
    assert_line --regexp "^refused outside the object: PDCBB_ERR_BAD_REGION: .*bounding box \[2:9,0:9\].* is outside object 'strided-bad-obj' of dimensions 10x10$"
    assert_line --regexp "^refused wrong ndim: PDCBB_ERR_BAD_REGION: "
    assert_line --regexp "^refused count mismatch: PDCBB_ERR_BAD_REGION: "
    assert_line --regexp "^refused strided local region: PDCBB_ERR_BAD_REGION: "
    assert_line OK
}

@test "a strided write beyond the capacity is refused with the figures; one that fits, and its overwrite, succeed" {
    in_job 1 '"$MODEL" nospc' --pdc capacity=4M
    assert_success
    assert_line --regexp "^write failed: PDCBB_ERR_NOSPC: .*no space: this daemon's share of the job capacity is 4.0 MiB"
    assert_line "fits and overwrite: ok"
    assert_line OK
}

@test "bad strided descriptors on the wire are refused by the daemon, which says why and keeps serving" {
    in_job 1 '
        for c in stridedcount0 stridedblock stridedoutside stridedndim stridedoverflow stridedtruncated stridedwrite good; do
            echo "$c: $("$BUILD_DIR/tests/pdcbb_rawmsg" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" $c | head -1)"
        done
        grep -h "STRIDED_READ refused" "$PDCBB_JOB_DIR"/bbd-0.log'
    assert_success
    assert_line "stridedcount0: status PDCBB_ERR_BAD_REGION"
    assert_line "stridedblock: status PDCBB_ERR_BAD_REGION"
    assert_line "stridedoutside: status PDCBB_ERR_BAD_REGION"
    assert_line "stridedndim: status PDCBB_ERR_PROTO"
    assert_line "stridedoverflow: status PDCBB_ERR_BAD_REGION"
    assert_line "stridedtruncated: status PDCBB_ERR_PROTO"
    assert_line "stridedwrite: status PDCBB_ERR_TRUNCATED"
    assert_line "good: status PDCBB_OK"
    assert_output --partial "STRIDED_READ refused: bad selection: count[0] is 0"
    assert_output --partial "STRIDED_READ refused: bad selection: block[0] = 3 is larger than stride[0] = 2"
    assert_output --partial "STRIDED_READ refused: the selection reaches past the object's dimensions"
    assert_output --partial "STRIDED_READ refused: 17 dimensions (1..16 allowed)"
    assert_output --partial "STRIDED_READ refused: truncated descriptor"
}

@test "USER-GUIDE.md's strided example builds and runs as printed, with the printed output" {
    install_prefix
    mkdir "$WORKDIR/src"
    # The ```c, ```sh and ```text blocks of the "Strided regions" section, verbatim.
    for lang in c sh text; do
        awk -v lang="$lang" '/^## Strided regions$/ {sec = 1; next} sec && /^## / {sec = 0}
            sec && $0 == "```" lang {on = 1; next} on && /^```$/ {on = 0; sec = 0} on' \
            "$GUIDE" > "$WORKDIR/src/block.$lang"
    done
    mv "$WORKDIR/src/block.c" "$WORKDIR/src/strided.c"
    grep -q PDCbb_region_create_strided "$WORKDIR/src/strided.c"
    [ "$(wc -l < "$WORKDIR/src/block.sh")" -eq 2 ]
    cd "$WORKDIR/src"
    run env -u LD_LIBRARY_PATH PATH="$PREFIX/bin:$PATH" \
        PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")" TMPDIR="$WORKDIR" \
        bash -e block.sh
    remove_prefix
    echo "$output"
    assert_success
    [ "$(wc -l < block.text)" -eq 2 ]
    while IFS= read -r line; do
        assert_line "$line"
    done < block.text
    assert_no_daemons "$WORKDIR"
}

@test "bench quick run (PDCBB_BENCH_QUICK=1): strided and contiguous cases, every read checked" {
    in_job 2 'PDCBB_BENCH_QUICK=1 "$BUILD_DIR/bench/pdc_strided_bench" --placement region_static'
    assert_success
    assert_line --regexp "^object 256 x 256 doubles, region_static, best of 1$"
    for c in cols cols-box rows rows-box cols-bbox; do
        assert_line --regexp "^$c +[0-9]+ bytes  write +[0-9.]+ s +[0-9.]+ MB/s  read +[0-9.]+ s"
    done
    assert_no_daemons "$WORKDIR"
}
