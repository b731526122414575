#!/usr/bin/env bats
# No interrupted operation makes data unreachable (the drain's promise): a daemon killed with
# kill -9 in the middle of deletes, creates, tag writes, region writes, KV writes and appends,
# then restarted on its job directory; the drain completes, and everything that was
# acknowledged reads back live, with pdcbb verify/ls/get, and through PDCBB_DRAINED_DIR.

load helpers

INTR="$BUILD_DIR/tests/pdc_interrupt"
export INTR BBD

setup() {
    setup_workdir "$INTR"
    mkdir "$WORKDIR/dest"
}

teardown() {
    cleanup_workdir
}

# The job script's helpers (in_job runs a bash -c script; these are pasted in front of it):
# kill1: kill -9 daemon 1 by its pid and wait until it is gone; restart1: start it again on
# its job directory, as the same job, and wait until it reports ready.
JOB_HELPERS='
IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
kill1() {
    local pid; pid="$(cat "$d1/bbd-1.pid")" || return 1
    kill -9 "$pid"
    for i in $(seq 200); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
    echo "killed daemon 1 (pid $pid)"
}
restart1() {
    rm -f "$d1/ready"
    "$BBD" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 \
        3>"$d1/ready" --ready-fd 3 &
    for i in $(seq 200); do grep -q ready "$d1/ready" 2>/dev/null && break; sleep 0.05; done
    grep -q ready "$d1/ready" && echo "restarted daemon 1"
}
'

@test "issue 23: REGION_STATIC objects deleted while a daemon is down; it restarts; the drain completes and everything reads" {
    in_job 2 "$JOB_HELPERS"'
        for k in 0 1 2 3; do "$INTR" write gone$k rstatic $k || exit 1; done
        "$INTR" write keep rstatic 10 && "$INTR" write keep2 objstatic 11 || exit 1
        kill1 || exit 1
        for k in 0 1 2 3; do "$INTR" del gone$k; done > del.out
        cat del.out
        restart1 || exit 1
        # a delete that reached the home daemon is done (the object is gone everywhere);
        # one whose home was down is undone (the object is whole)
        for k in 0 1 2 3; do
            if grep -q "del gone$k: .*is deleted, but its data on daemon 1" del.out; then
                "$INTR" gone gone$k || exit 1
            else
                "$INTR" check gone$k $k || exit 1
            fi
        done
        "$INTR" check keep 10 && "$INTR" check keep2 11
    ' --job-id 7301 --drain "$WORKDIR/dest"
    assert_success
    assert_output --partial "killed daemon 1"
    assert_output --partial "restarted daemon 1"
    # the reported case happened: deleted with data left on the daemon that was down
    assert_output --regexp "del gone[0-3]: .*is deleted, but its data on daemon 1 could not be removed"
    assert_output --regexp "dropped [0-9]+ extents of deleted objects"
    local d="$WORKDIR/dest/pdcbb.7301"
    [ -f "$d/COMPLETE" ]
    grep -q "^dropped_objects:" "$d/manifest.yaml"
    run "$PDCBB" verify "$d"
    echo "$output"
    assert_success
    assert_output --regexp "dropped [0-9]+ extents of deleted objects"
    run "$PDCBB" ls "$d"
    echo "$output"
    assert_success
    assert_output --partial "keep2"
    run "$PDCBB" get -o "$WORKDIR/keep.raw" "$d" keep
    echo "$output"
    assert_success
    [ "$(stat -c %s "$WORKDIR/keep.raw")" -eq $((64 * 1000 * 4)) ]
    PDCBB_DRAINED_DIR="$d" run "$INTR" check keep 10
    echo "$output"
    assert_success
    PDCBB_DRAINED_DIR="$d" run "$INTR" check keep2 11
    assert_success
    # the parts alone (a drain not finished yet) read the same with --partial
    rm "$d/COMPLETE" "$d/manifest.yaml"
    run "$PDCBB" ls --partial "$d"
    echo "$output"
    assert_success
    assert_output --partial "keep2"
    run "$PDCBB" get --partial -o "$WORKDIR/keep2.raw" "$d" keep
    assert_success
    cmp "$WORKDIR/keep.raw" "$WORKDIR/keep2.raw"
    assert_no_daemons "$WORKDIR"
}

# Seven loops, one per kind of operation (tests/progs/pdc_interrupt.c), run until daemon 1 is
# killed under them; after its restart, and again over the drain, every operation a loop saw
# acknowledged must be there.
@test "kill -9 of a daemon in the middle of creates, tags, region and KV writes, appends and deletes: the drain completes, everything acknowledged reads back" {
    local kinds="cont create tag write kv append del"
    in_job 2 "$JOB_HELPERS"'
        kinds="'"$kinds"'"
        for k in $kinds; do "$INTR" loop $k L > loop.$k 2>&1 & done
        # every loop is under way (set up, and some operations acknowledged)
        for i in $(seq 400); do
            n=0; for k in $kinds; do grep -q "^acked $k 2$" loop.$k && n=$((n + 1)); done
            [ $n -eq 7 ] && break; sleep 0.05
        done
        kill1 || exit 1
        wait
        grep -h -v "^acked" loop.*
        restart1 || exit 1
        for k in $kinds; do
            n="$(grep -c "^acked $k " loop.$k)"
            echo "$k $n" >> acked
            "$INTR" verify $k L "$n" || exit 1
        done
    ' --job-id 7302 --drain "$WORKDIR/dest"
    assert_success
    assert_output --partial "killed daemon 1"
    assert_output --partial "restarted daemon 1"
    # every loop was interrupted by the daemon's death, after some acknowledged operations
    for k in $kinds; do
        assert_output --regexp "stopped $k after [1-9][0-9]*: "
        refute_output --partial "never interrupted"
    done
    local d="$WORKDIR/dest/pdcbb.7302"
    [ -f "$d/COMPLETE" ]
    run "$PDCBB" verify "$d"
    echo "$output"
    assert_success
    assert_output --partial ": OK"
    run "$PDCBB" ls "$d"
    assert_success
    assert_output --partial "L-w0"
    run "$PDCBB" get -o "$WORKDIR/w.raw" "$d" L-w0
    assert_success
    [ "$(stat -c %s "$WORKDIR/w.raw")" -eq $((64 * 8 * 16384 * 4)) ]
    # the drained job answers every acknowledged operation through the PDC API
    local k n
    while read -r k n; do
        PDCBB_DRAINED_DIR="$d" run "$INTR" verify "$k" L "$n"
        echo "$output"
        assert_success
        assert_output --partial "ok verify $k: $n acknowledged"
    done < "$WORKDIR/acked"
    assert_no_daemons "$WORKDIR"
}
