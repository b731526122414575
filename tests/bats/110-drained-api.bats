#!/usr/bin/env bats
# Reading a drained job through the PDC API (PDCBB_DRAINED_DIR): an unchanged PDC program gets
# exactly the data it wrote during the job, without any daemon, and every modifying call fails
# with PDCBB_ERR_READ_ONLY naming the drained directory.

load helpers
bats_require_minimum_version 1.5.0

DRAINED_TOOL="$BUILD_DIR/tests/pdc_drained_read"
JOB_ID=7311

# The lines of the report that must be the same live and drained.
report() {
    grep -E '^(object|container|start_all|get_data|iter|query|run1\.)' "$1" | sort
}

setup_file() {
    require_build
    [ -x "$DRAINED_TOOL" ] || { echo "missing $DRAINED_TOOL" >&2; return 1; }
    DRAINED_WORK="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats-drained.XXXXXX")"
    export DRAINED_WORK
    mkdir -p "$DRAINED_WORK/dest"
    # Two nodes: REGION_STATIC data is striped over both daemons, REGION_DYNAMIC data has a
    # placement map; both must read back as written from the drain's one virtual daemon.
    "$PDCBB" run --nodes 2 --workdir "$DRAINED_WORK/job" --job-id "$JOB_ID" \
        --drain "$DRAINED_WORK/dest" -- "$DRAINED_TOOL" write run1 \
        >"$DRAINED_WORK/live.out" 2>"$DRAINED_WORK/live.err" || {
        cat "$DRAINED_WORK/live.out" "$DRAINED_WORK/live.err" >&2
        return 1
    }
    [ -f "$DRAINED_WORK/dest/pdcbb.$JOB_ID/COMPLETE" ] || {
        echo "the job was not drained" >&2
        cat "$DRAINED_WORK/live.err" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${DRAINED_WORK:-}" ] || return 0
    assert_no_daemons "$DRAINED_WORK"
    rm -rf "$DRAINED_WORK"
}

@test "the writer saw its own data during the job" {
    run grep -c "matches the known data: yes" "$DRAINED_WORK/live.out"
    assert_output 5
    run grep -Ec "^discovery (daemon|jobtable), 2 daemons" "$DRAINED_WORK/live.out"
    assert_output 1
}

@test "a drained job reads back exactly through the PDC API" {
    local dir="$DRAINED_WORK/dest/pdcbb.$JOB_ID"
    PDCBB_DRAINED_DIR="$dir" run "$DRAINED_TOOL" read run1
    assert_success
    assert_output --partial "discovery drained, 1 daemons"
    echo "$output" >"$DRAINED_WORK/drained.out"
    [ "$(grep -c 'matches the known data: yes' "$DRAINED_WORK/drained.out")" -eq 5 ]
    diff <(report "$DRAINED_WORK/live.out") <(report "$DRAINED_WORK/drained.out")
    # PDC_timing_report still works: the ops were served in-process.
    assert_output --partial "timing OBJ_OPEN"
}

@test "tag search with patterns answers the same from a drained job as from the daemons" {
    local dir="$DRAINED_WORK/dest/pdcbb.$JOB_ID"
    # Live: the daemons' index (2 daemons); the 'query pattern' lines are part of report().
    grep -q '^query pattern ki\*=kno\*: 3 objects$' "$DRAINED_WORK/live.out"
    grep -q '^query pattern \*in\*=\*now\*: 3 objects$' "$DRAINED_WORK/live.out"
    grep -q '^query pattern ind\*=int 1: 1 objects$' "$DRAINED_WORK/live.out"
    grep -q '^query pattern k\*=unknown\*: 0 objects$' "$DRAINED_WORK/live.out"
    grep -q '^dart kin\*=\*nown: 3 objects$' "$DRAINED_WORK/live.out"
    PDCBB_DRAINED_DIR="$dir" run "$DRAINED_TOOL" read run1
    assert_success
    diff <(grep '^query pattern' "$DRAINED_WORK/live.out" | sort) \
        <(grep '^query pattern' <<<"$output" | sort)
    [ "$(grep -c '^query pattern' <<<"$output")" -ge 14 ]
    # DART references are not part of a drain: the search says so.
    assert_line --regexp '^dart kin\*=\*nown: PDCBB_ERR_UNSUPPORTED: .*not available here'
}

@test "the destination holding one drained job is accepted as well" {
    PDCBB_DRAINED_DIR="$DRAINED_WORK/dest" run "$DRAINED_TOOL" read run1
    assert_success
    assert_output --partial "discovery drained, 1 daemons"
    diff <(report "$DRAINED_WORK/live.out") <(echo "$output" | report /dev/stdin)
}

@test "every modifying call fails read-only, naming the drained directory" {
    local dir="$DRAINED_WORK/dest/pdcbb.$JOB_ID"
    PDCBB_DRAINED_DIR="$dir" run "$DRAINED_TOOL" readonly run1
    assert_success
    refute_output --partial "UNEXPECTED-SUCCESS"
    refute_output --partial "FAILED"
    for call in PDCcont_create PDCobj_create PDCcont_put_tag PDCobj_put_tag PDCobj_del_tag \
        PDC_Client_insert_obj_ref_into_dart PDCobj_set_dims "PDCregion_transfer_start-write" PDCobj_put_data PDCobj_del \
        PDCcont_del; do
        assert_line --regexp "^refused $call: yes PDCBB_ERR_READ_ONLY: .*read-only.*$dir"
    done
}

@test "no daemon is looked for: a job environment is ignored" {
    local dir="$DRAINED_WORK/dest/pdcbb.$JOB_ID"
    PDCBB_DRAINED_DIR="$dir" PDCBB_JOB_DIR=/nonexistent/job PDCBB_SERVER_DIRS=/nonexistent/job \
        run "$DRAINED_TOOL" read run1
    assert_success
    assert_output --partial "discovery drained, 1 daemons"
}

@test "a missing or incomplete drain fails PDCinit with the reason" {
    PDCBB_DRAINED_DIR="$DRAINED_WORK/nothing-here" run "$DRAINED_TOOL" read run1
    assert_failure 1
    assert_output --partial "PDCinit failed"
    assert_output --partial "$DRAINED_WORK/nothing-here"
    cp -r "$DRAINED_WORK/dest/pdcbb.$JOB_ID" "$DRAINED_WORK/partial"
    rm "$DRAINED_WORK/partial/COMPLETE"
    PDCBB_DRAINED_DIR="$DRAINED_WORK/partial" run "$DRAINED_TOOL" read run1
    assert_failure 1
    assert_output --partial "PDCinit failed"
    assert_output --partial "incomplete drain"
    rm -rf "$DRAINED_WORK/partial"
}

@test "an object missing from the drain is NOT_FOUND, as from a daemon" {
    local dir="$DRAINED_WORK/dest/pdcbb.$JOB_ID"
    PDCBB_DRAINED_DIR="$dir" run "$DRAINED_TOOL" read no-such-container
    assert_failure 1
    assert_output --partial "PDCcont_open no-such-container"
    assert_output --partial "PDCBB_ERR_NOT_FOUND"
}
