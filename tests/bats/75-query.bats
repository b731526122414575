#!/usr/bin/env bats
# Data queries (PDCquery_*) evaluated by the daemons holding the data: a randomized model
# (tests/progs/pdc_query_model.c: random types, 1-3 dims, every placement, several objects,
# random AND/OR trees with regions) checked against a brute-force scan in the client over 1, 2
# and 3 daemons; histograms and block skipping; bad input with clear errors; and queries over a
# drained job (PDCBB_DRAINED_DIR) giving the same results as live.

load helpers

QMODEL="$BUILD_DIR/tests/pdc_query_model"
IN_JOB_SUBDIR=/job # in_job's jobs keep their files apart from the tests' own

setup() {
    setup_workdir "$QMODEL"
    export QMODEL
    # Selections of the ramp object then take several replies (paging is exercised).
    export PDCBB_QUERY_HITS_PER_REPLY=65536
}

teardown() {
    cleanup_workdir
}

assert_model_ok() {
    refute_output --partial MISMATCH
    refute_output --partial FAILED
    local pl
    for pl in obj_static region_static region_dynamic region_local region_striped; do
        grep -Eq "^placement $pl objects=[1-9]" <<<"$output" ||
            { echo "no object with placement $pl" >&2; return 1; }
    done
    grep -Eq "^skipping .* then scanned=[0-9]+ skipped=[1-9]" <<<"$output"
    grep -q "^stale-check: the rewritten block was scanned again" <<<"$output"
}

@test "model: random queries on 1 daemon match a brute-force scan" {
    in_job 1 'for s in 1 2 3; do "$QMODEL" --seed $s --queries 40 --name s$s || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 3 ]
    assert_model_ok
    assert_no_daemons "$WORKDIR"
}

@test "model: random queries on 2 daemons match a brute-force scan" {
    in_job 2 'for s in 4 5 6; do "$QMODEL" --seed $s --queries 40 --name s$s || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 3 ]
    assert_model_ok
    grep -q '^daemons 2$' <<<"$output"
}

@test "model: random queries on 3 daemons, several objects per query, match a brute-force scan" {
    in_job 3 'for s in 7 8 9 10; do "$QMODEL" --seed $s --queries 45 --objects 12 --name s$s || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 4 ]
    assert_model_ok
    grep -q '^daemons 3$' <<<"$output"
    # Queries over several objects were among them and found elements.
    grep -Eq '^result q[0-9]+ leaves=[2-7] multi=1 region=[01] nhits=[1-9]' <<<"$output"
}

@test "model over UCX only (PDCBB_DIRECT=0): block statistics are never stale" {
    PDCBB_DIRECT=0 in_job 1 '"$QMODEL" --seed 11 --queries 20 --name u'
    assert_success
    assert_model_ok
    assert_line "stale-check: the rewritten block was scanned again"
}

@test "model: the same seed gives the same results whatever the number of daemons" {
    in_job 1 '"$QMODEL" --seed 21 --queries 30 --name one'
    assert_success
    grep '^result' <<<"$output" >"$WORKDIR/one.txt"
    rm -rf "$WORKDIR/job"
    in_job 3 '"$QMODEL" --seed 21 --queries 30 --name three'
    assert_success
    grep '^result' <<<"$output" >"$WORKDIR/three.txt"
    [ -s "$WORKDIR/one.txt" ]
    diff "$WORKDIR/one.txt" "$WORKDIR/three.txt"
}

@test "model: a wrong expectation is detected (the checker can fail)" {
    in_job 2 '"$QMODEL" --seed 3 --queries 5 --inject-mismatch'
    assert_failure
    assert_output --partial "MISMATCH: query 0"
}

@test "bad input fails with a clear error" {
    in_job 2 '"$QMODEL" --cases'
    assert_success
    assert_line --regexp '^case null-query: PDCBB_ERR_INVAL: PDCquery_get_nhits: the query is NULL$'
    assert_line --regexp '^case wrong-type: PDCBB_ERR_INVAL: .*type PDC_FLOAT does not match the element type PDC_INT of object .qcases\.a.'
    assert_line --regexp '^case unknown-object: PDCBB_ERR_BAD_ID: PDCquery_create: .* is not a live object id'
    assert_line --regexp '^case bad-operator: PDCBB_ERR_INVAL: .*bad query operator 42'
    assert_line --regexp '^case closed-object: PDCBB_ERR_BAD_ID: PDCquery_get_nhits: .*not a live object id'
    assert_line --regexp '^case region-outside: PDCBB_ERR_BAD_REGION: PDCquery_sel_region: .*not within object .qcases\.a. of dimensions 100'
    assert_line --regexp '^case different-shapes: PDCBB_ERR_INVAL: .*same dimensions.*qcases\.a. is 100, .qcases\.b. is 10x10'
    assert_line --regexp '^case selection-outside: PDCBB_ERR_BAD_REGION: .*outside object .qcases\.a.'
    assert_line 'query: (qcases.b > 5)'
    assert_line OK
}

@test "queries over a drained job answer as they did live" {
    local dest="$WORKDIR/dest"
    mkdir -p "$dest"
    run timeout 900 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/job" --job-id 7531 --drain "$dest" \
        --quiet -- "$QMODEL" --seed 31 --queries 30 --name dq
    echo "$output"
    assert_success
    assert_line OK
    grep '^result' <<<"$output" >"$WORKDIR/live.txt"
    [ -f "$dest/pdcbb.7531/COMPLETE" ]
    PDCBB_DRAINED_DIR="$dest/pdcbb.7531" run "$QMODEL" --seed 31 --queries 30 --name dq --mode check
    echo "$output"
    assert_success
    assert_line OK
    assert_line "daemons 1"
    grep '^result' <<<"$output" >"$WORKDIR/drained.txt"
    [ -s "$WORKDIR/live.txt" ]
    diff "$WORKDIR/live.txt" "$WORKDIR/drained.txt"
}

@test "malformed query requests from the wire are refused with a clear status" {
    in_job 1 'ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        for c in querygood querybadprog querybadpiece querytype queryvalues; do
            echo -n "$c: "; "'"$RAWMSG"'" "$ep" "$tok" $c
        done
        "'"$RAWMSG"'" "$ep" "$tok" good'
    assert_success
    assert_line "querygood: status PDCBB_OK"
    assert_line "querybadprog: status PDCBB_ERR_PROTO"
    assert_line "querybadpiece: status PDCBB_ERR_BAD_REGION"
    assert_line "querytype: status PDCBB_ERR_WRONG_TYPE"
    assert_line "queryvalues: status PDCBB_ERR_BAD_REGION"
}

@test "a huge query runs in bounded steps: meanwhile another client is answered within 100 ms" {
    in_job 1 'ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        "'"$RAWMSG"'" "$ep" "$tok" querybig > "$WORKDIR/big.out" &
        big=$!
        sleep 1
        for i in 1 2 3 4 5; do "'"$RAWMSG"'" "$ep" "$tok" goodtimed | head -1; sleep 0.3; done
        kill -0 $big 2>/dev/null && echo "the query was still running"
        kill $big 2>/dev/null; wait $big; cat "$WORKDIR/big.out"'
    assert_success
    # before, the daemon evaluated the whole 20 GiB query in one go and answered nobody else
    assert_output --partial "the query was still running"
    [ "$(grep -c "^reply after [0-9]* ms: status PDCBB_OK" <<<"$output")" -eq 5 ]
    local ms
    for ms in $(sed -n 's/^reply after \([0-9]*\) ms.*/\1/p' <<<"$output"); do
        [ "$ms" -lt 100 ]
    done
    refute_output --partial "querybig: step"
    assert_no_daemons "$WORKDIR"
}

