#!/usr/bin/env bats
# PDC's buffer maps and region locks (PDCbuf_obj_map/unmap, PDCreg_obtain/release_lock), the
# transforms and analyses that run on mapped data, against real daemons over UCX and LMDB:
# tests/progs/pdc_maplock.c does the work, this file starts the jobs and the processes that
# contend, die and wait.

load helpers

ML="$BUILD_DIR/tests/pdc_maplock"
IN_JOB_TIMEOUT=600 # in_job

setup() {
    setup_workdir "$ML"
    export ML RAWMSG
}

teardown() {
    cleanup_workdir
}

@test "example: map, obtain a write lock, fill, release, read back; every placement, 2 daemons" {
    in_job 2 'for p in obj_static region_static region_dynamic region_local; do
                  "$ML" example $p || exit 1
              done'
    assert_success
    refute_output --partial FAIL
    [ "$(grep -c '^ok example .*published the mapped box' <<<"$output")" -eq 4 ]
    [ "$(grep -c '^ok example .*into the mapped buffer' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "drained: a read lock on a mapped region reads a drained job; a write lock is refused" {
    mkdir -p "$WORKDIR/dest"
    run timeout 600 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/job" --job-id 7377 --quiet \
        --drain "$WORKDIR/dest" -- bash -c '"$ML" example region_static && "$ML" example obj_static'
    echo "$output"
    assert_success
    [ -f "$WORKDIR/dest/pdcbb.7377/COMPLETE" ]
    for p in region_static obj_static; do
        PDCBB_DRAINED_DIR="$WORKDIR/dest/pdcbb.7377" run "$ML" drained-read $p
        echo "$output"
        assert_success
        refute_output --partial FAIL
        assert_output --partial "ok drained $p: a read lock brought the drained region into the buffer"
        assert_output --partial "PDCBB_ERR_READ_ONLY"
    done
}

@test "errors: unmapped regions, bad ids, double maps, self-deadlock and type mismatches are named" {
    in_job 1 '"$ML" errors'
    assert_success
    refute_output --partial FAIL
    assert_output --partial "PDCbuf_obj_unmap: region"
    assert_output --partial "is not mapped (PDCbuf_obj_map first)"
    assert_output --partial "is already mapped (PDCbuf_obj_unmap it first)"
    assert_output --partial "is not a live object id"
    assert_output --partial "would wait for itself"
    assert_output --partial "no transform converts them"
    assert_output --partial "holds no PDC_WRITE lock on region"
    assert_output --partial "link it with -rdynamic"
    assert_output --partial "ok unmap released the held write lock and published the buffer"
}

# contend PLACEMENT ROUNDS MODE: 3 writers and 2 readers in one job of 2 daemons; MODE is ""
# (locks) or "nolock-" (the control). Readers read at least ROUNDS times and until the writers
# are done; writers write at least ROUNDS times and until a reader saw the data of several
# writers (the control: a torn read), up to 120 s (tests/progs/pdc_maplock.c).
contend() {
    in_job 2 "
        pids=()
        for w in 1 2 3; do \"\$ML\" contend ${3}writer \$w $2 $1 \"\$WORKDIR\" 3 & pids+=(\$!); done
        for r in 4 5; do \"\$ML\" contend ${3}reader \$r $2 $1 \"\$WORKDIR\" 3 & pids+=(\$!); done
        rc=0
        for p in \"\${pids[@]}\"; do wait \$p || rc=1; done
        exit \$rc"
}

# readers_read N: both readers read N times or more, and no read was torn
readers_read() {
    [ "$(grep -cE '^ok reader [0-9]: .* [0-9]+ reads, 0 torn' <<<"$output")" -eq 2 ] || return 1
    local n
    for n in $(grep '^ok reader' <<<"$output" | sed -E 's/.* ([0-9]+) reads,.*/\1/'); do
        [ "$n" -ge "$1" ] || return 1
    done
}

@test "contention: 3 writers, 2 readers on overlapping regions over 2 daemons: exclusion, no torn read" {
    contend region_static 60 ""
    assert_success
    refute_output --partial FAIL
    [ "$(grep -c '^ok writer' <<<"$output")" -eq 3 ]
    readers_read 60
    # the readers ran while the writers wrote: they saw the data of several writers
    assert_output --regexp "ok reader [0-9]: .* data of [23] writers seen"
    # both ways of writing and reading were used; each writer wrote its 60 rounds or more (it
    # goes on until a reader saw several writers), half of them through maps
    local n=0 r m t
    while read -r r m t; do
        { [ "$r" -ge 60 ] && [ "$m" -ge 30 ] && [ "$t" -ge 30 ]; } || return 1
        n=$((n + 1))
    done < <(sed -nE 's/^ok writer [0-9]: ([0-9]+) rounds \(([0-9]+) through maps, ([0-9]+) through transfers\).*/\1 \2 \3/p' <<<"$output")
    [ "$n" -eq 3 ]
    assert_output --regexp "ok reader [0-9]: [0-9]+ rounds \([1-9][0-9]* through maps, [1-9][0-9]* through transfers\)"
    assert_no_daemons "$WORKDIR"
}

@test "contention with the object on one daemon (obj_static) and dynamic placement" {
    contend obj_static 40 ""
    assert_success
    refute_output --partial FAIL
    readers_read 40
    contend region_dynamic 40 ""
    assert_success
    refute_output --partial FAIL
    readers_read 40
}

@test "control: the same readers without locks do see torn regions (the check can fail)" {
    contend region_static 60 "nolock-"
    assert_success
    grep -q '^torn: torn read' <<<"$output"
}

@test "locks: disjoint granted, overlapping refused; a killed holder's lock is released" {
    in_job 2 '
        "$ML" hold deadlock_obj 0 100 "$WORKDIR" > hold.out 2>&1 & holder=$!
        for i in $(seq 200); do [ -e held ] && break; sleep 0.05; done
        [ -e held ] || { echo "holder never got its lock"; cat hold.out; exit 1; }
        "$ML" probe deadlock_obj || exit 1
        # a blocking request waits while the holder lives ...
        "$ML" wait deadlock_obj 50 10 > wait.out 2>&1 & waiter=$!
        for i in $(seq 400); do grep -q "^waiting" wait.out && break; sleep 0.05; done
        sleep 1.5
        kill -0 $waiter 2>/dev/null || { echo "FAIL: the waiter did not wait"; cat wait.out; exit 1; }
        # ... and gets the lock once the holder is killed
        kill -9 $holder
        for i in $(seq 100); do kill -0 $waiter 2>/dev/null || break; sleep 0.05; done
        if kill -0 $waiter 2>/dev/null; then
            echo "FAIL: the lock of the killed holder was not released within 5 s"; kill $waiter; exit 1
        fi
        wait $waiter || { echo "FAIL: waiter failed"; cat wait.out; exit 1; }
        cat wait.out'
    assert_success
    refute_output --partial FAIL
    assert_output --partial "ok a write lock on a disjoint region is granted while another process holds one"
    assert_output --partial "ok refused PDCreg_obtain_lock(obj, overlap, PDC_WRITE, PDC_NOBLOCK) == SUCCEED: PDCBB_ERR_BUSY"
    assert_output --partial "ok refused PDCreg_obtain_lock(obj, inside, PDC_READ, PDC_NOBLOCK) == SUCCEED: PDCBB_ERR_BUSY"
    # it waited at least as long as the holder lived after the waiter started
    secs="$(sed -n 's/^ok got the write lock after \([0-9.]*\) s$/\1/p' <<<"$output")"
    [ -n "$secs" ]
    awk -v s="$secs" 'BEGIN { exit !(s >= 1.4) }'
    assert_no_daemons "$WORKDIR"
}

@test "locks: a waiter gets the lock when the holder releases it, in another job of 2 daemons" {
    in_job 2 '
        "$ML" hold release_obj 10 20 "$WORKDIR" > hold.out 2>&1 & holder=$!
        for i in $(seq 200); do [ -e held ] && break; sleep 0.05; done
        "$ML" wait release_obj 25 100 > wait.out 2>&1 & waiter=$!
        for i in $(seq 400); do grep -q "^waiting" wait.out && break; sleep 0.05; done
        sleep 1
        kill -0 $waiter 2>/dev/null || { echo "FAIL: the waiter did not wait"; exit 1; }
        touch go
        wait $holder || exit 1
        wait $waiter || exit 1
        cat hold.out wait.out'
    assert_success
    refute_output --partial FAIL
    assert_output --partial "ok released"
    assert_output --regexp "ok got the write lock after (0\.9|[1-9])"
}

@test "wire: the daemon refuses malformed lock requests with a precise status and keeps serving" {
    in_job 1 '
        for c in lockbadbox lockbadmode locknoobj lockrelease good; do
            echo "case $c: $("$RAWMSG" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" $c | head -1)"
        done'
    assert_success
    assert_output --partial "case lockbadbox: status PDCBB_ERR_INVAL"
    assert_output --partial "case lockbadmode: status PDCBB_ERR_INVAL"
    assert_output --partial "case locknoobj: status PDCBB_ERR_NOT_FOUND"
    assert_output --partial "case lockrelease: status PDCBB_ERR_NOT_FOUND"
    assert_output --partial "case good: status PDCBB_OK"
}

@test "transform: a float buffer stored as doubles (DATA_OUT) and read back as floats (DATA_IN)" {
    in_job 2 '"$ML" transform'
    assert_success
    refute_output --partial FAIL
    assert_output --partial "ok round 0: 64 floats stored as doubles through the DATA_OUT transform"
    assert_output --partial "ok round 1: 64 floats stored as doubles through the DATA_OUT transform"
    assert_output --partial "ok the DATA_IN transform converted the object's doubles into the float buffer"
    assert_output --partial "ok the object transform ran in state 0"
    assert_output --partial "is not ready in object 'transform_state''s current state"
}

@test "analysis: a running sum and row sums, re-run on every write of the input" {
    in_job 2 '"$ML" analysis'
    assert_success
    refute_output --partial FAIL
    assert_output --partial "ok at registration: the output object holds the running sum"
    assert_output --partial "ok after a write-lock release: the output object holds the running sum"
    assert_output --partial "ok after a region transfer: the output object holds the running sum"
    assert_output --partial "ok row sums of a 6x9 object, one row per block"
}

@test "install: pdc_analysis.h and pdc_transform.h are installed and compile with pdc.h" {
    install_prefix
    [ -f "$PREFIX/include/pdc_analysis.h" ]
    [ -f "$PREFIX/include/pdc_transform.h" ]
    cat > "$WORKDIR/app.c" <<'EOF'
#include "pdc.h"
#include "pdc_analysis.h"
#include "pdc_transform.h"
int main(void) {
    pdc_analysis_ftn_t a = 0; pdc_transform_ftn_t t = 0; (void)a; (void)t;
    return PDCobj_data_getSliceCount(PDC_ITER_NULL) == 0 && PDC_REGION_ALL == (pdcid_t)-1 ? 0 : 1;
}
EOF
    export PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")"
    # shellcheck disable=SC2046
    run cc -Wall -Werror -o "$WORKDIR/app" "$WORKDIR/app.c" $(pkg-config --cflags --libs pdc)
    echo "$output"
    assert_success
    run "$WORKDIR/app"
    assert_success
    remove_prefix
}
