#!/usr/bin/env bats
# Fan-out through the tree of daemons (bbd/bbd_gather.c, GATHER): a query over an object spread
# over every daemon, in a job that forwards, and `pdcbb stats` send one request to this node's
# daemon, which carries the requests down the tree and every reply back. The results are those
# of asking each daemon directly; a daemon that cannot be reached is that daemon's error, not
# the whole call's; what GATHER must not carry is refused.

load helpers

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

# The per-daemon counters a test compares: messages of kind other received (GATHER is one),
# forwarded requests received, connections.
counters='jq -r ".daemons[] | \"daemon \\(.rank) other \\(.kinds.other.msgs_recv) forwarded \\(.kinds.forward.msgs_recv) connections \\(.connections)\""'

@test "a query over an object on 8 daemons is one request from the client, through the tree" {
    command -v jq >/dev/null
    PDCBB_FORWARD=always in_job 8 '
        "'"$TOOL"'" "cont-create c" "obj-spread c o 100000" || exit 1
        "'"$PDCBB"'" stats --json | '"$counters"' | sed "s/^/before /"
        "'"$TOOL"'" "obj-open o" "query-count o 49999" "query-count o 99990" || exit 1
        "'"$PDCBB"'" stats --json | '"$counters"' | sed "s/^/after /"'
    assert_success
    assert_line --partial "ok query-count n=50000 "
    assert_output --partial "ok query-count n=9 "
    local r q0 q1 f0 f1
    for r in 1 2 3 4 5 6 7; do
        q0=$(sed -n "s/^before daemon $r other \([0-9]*\) .*/\1/p" <<<"$output")
        q1=$(sed -n "s/^after daemon $r other \([0-9]*\) .*/\1/p" <<<"$output")
        # two queries and the second `pdcbb stats`, one GATHER each; no client connected
        [ $((q1 - q0)) -eq 3 ]
        assert_line "after daemon $r other $q1 forwarded 0 connections 1"
    done
    # daemon 0 forwarded only the object's open (OBJ_OPEN and its home's reply), not one
    # QUERY_EVAL per daemon per query
    f0=$(sed -n "s/^before daemon 0 other [0-9]* forwarded \([0-9]*\) .*/\1/p" <<<"$output")
    f1=$(sed -n "s/^after daemon 0 other [0-9]* forwarded \([0-9]*\) .*/\1/p" <<<"$output")
    [ $((f1 - f0)) -le 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "queries through the tree give the results of asking every daemon directly" {
    local mode
    for mode in always never; do
        PDCBB_QUERY_HITS_PER_REPLY=65536 PDCBB_FORWARD=$mode IN_JOB_SUBDIR=/$mode in_job 4 '
            "'"$BUILD_DIR"'/tests/pdc_query_model" --seed 21 --queries 30 --objects 6 --name m'
        assert_success
        assert_line OK
        refute_output --partial MISMATCH
        grep '^result' <<<"$output" >"$WORKDIR/$mode.txt"
        assert_no_daemons "$WORKDIR/$mode"
    done
    [ "$(wc -l <"$WORKDIR/always.txt")" -ge 30 ]
    grep -Eq 'nhits=[1-9]' "$WORKDIR/always.txt"
    diff "$WORKDIR/always.txt" "$WORKDIR/never.txt"
}

@test "a killed daemon is its own error in pdcbb stats and a query through the tree, and is reached again once restarted" {
    command -v jq >/dev/null
    PDCBB_FORWARD=always in_job 4 '
        IFS=: read -r d0 d1 d2 d3 <<<"$PDCBB_SERVER_DIRS"
        "'"$TOOL"'" "cont-create c" "obj-spread c o 4000" || exit 1
        # daemon 3: not the home of o (daemon 2), which the open needs
        kill -9 "$(cat "$d3/bbd-3.pid")"
        "'"$PDCBB"'" stats --json > stats.json
        echo "stats exit $?"
        jq -r ".daemons[] | \"daemon \\(.rank) ok \\(.error == null)\"" stats.json
        jq -r ".daemons[] | select(.error != null) | .error" stats.json
        "'"$TOOL"'" "obj-open o" "query-count o 10"
        "'"$BBD"'" --job-dir "$d3" --rank 3 --nservers 4 --job-id "$PDCBB_JOB_ID" --node node3 3>ready --ready-fd 3 &
        for i in $(seq 100); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
        "'"$TOOL"'" "obj-open o" "query-count o 10"
        "'"$PDCBB"'" stats --json | jq -r "[.daemons[] | select(.error == null)] | length" | sed "s/^/answered /"'
    assert_success
    assert_line "stats exit 1"
    assert_line "daemon 0 ok true"
    assert_line "daemon 1 ok true"
    assert_line "daemon 2 ok true"
    assert_line "daemon 3 ok false"
    assert_line "STATS to daemon 3 through the tree of daemons: burst-buffer daemon unreachable"
    assert_output --partial "evaluating the query on object 'o' at daemon 3 (through the tree of daemons): burst-buffer daemon unreachable"
    assert_line --partial "ok query-count n=3989 "
    assert_line "answered 4"
    assert_no_daemons "$WORKDIR"
}

@test "GATHER refuses what it must not carry, and carries the rest" {
    in_job 2 '
        ep="$(echo "$WORKDIR"/node0/pdcbb.*/bbd-0.endpoint)"
        tok="$(echo "$WORKDIR"/node0/pdcbb.*/token)"
        for c in fanoutgood fanoutrank fanoutbelow fanouttwice fanoutop fanouttree fanoutevery fanoutcount fanouttrailing; do
            echo "case $c: $("'"$RAWMSG"'" "$ep" "$tok" $c | tr "\n" " ")"
        done
        "'"$RAWMSG"'" "$ep" "$tok" good'
    assert_success
    assert_line "case fanoutgood: status PDCBB_OK daemon 0 status PDCBB_OK op STATS daemon 1 status PDCBB_OK op STATS "
    assert_line "case fanoutrank: status PDCBB_ERR_INVAL "
    assert_line "case fanoutbelow: status PDCBB_ERR_INVAL "
    assert_line "case fanouttwice: status PDCBB_ERR_INVAL "
    assert_line "case fanoutop: status PDCBB_ERR_UNSUPPORTED "
    assert_line "case fanouttree: status PDCBB_ERR_INVAL "
    assert_line "case fanoutevery: status PDCBB_ERR_INVAL "
    assert_line "case fanoutcount: status PDCBB_ERR_PROTO "
    assert_line "case fanouttrailing: status PDCBB_ERR_PROTO "
    assert_output --partial "requests "
    assert_no_daemons "$WORKDIR"
}
