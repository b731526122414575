#!/usr/bin/env bats
# `pdcbb stats` (issue 13 item 8): the live counters of every daemon of a running job. A local
# two-node job does known work (tests/progs/pdc_stats_work.c: objects, tags, a failed open,
# region bytes written and read back, a persist, a tag query, KV sets) and the counters the
# daemons report must have grown by at least that much for the right kinds on the right
# daemons, seen from inside the job (node0's environment: rank 0 is reached over the
# shared-memory channel, rank 1 over UCX) and from node1's environment. Then refused requests
# (wrong token, unknown op) as errors, --interval with --count, the table, and the errors of the
# command line.

load helpers

WORK="$BUILD_DIR/tests/pdc_stats_work"

setup() {
    require_build
    [ -x "$WORK" ] || { echo "missing $WORK: build the project first" >&2; return 1; }
    make_workdir
    export PDCBB WORK RAWMSG
}

teardown() {
    cleanup_workdir
}

# in_job SCRIPT: run SCRIPT with bash inside a local job of 2 nodes, in $WORKDIR.
in_job() {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- \
        bash -c "cd \"\$WORKDIR\" || exit 1; $1"
    echo "$output"
}

# delta FILE_AFTER FILE_BEFORE RANK KIND FIELD: how much a counter grew.
delta() {
    jq -n --slurpfile a "$1" --slurpfile b "$2" \
        "(\$a[0].daemons[$3].kinds.$4.$5) - (\$b[0].daemons[$3].kinds.$4.$5)"
}

# sum_delta FILE_AFTER FILE_BEFORE KIND FIELD: the growth summed over every daemon.
sum_delta() {
    jq -n --slurpfile a "$1" --slurpfile b "$2" \
        "([\$a[0].daemons[].kinds.$3.$4] | add) - ([\$b[0].daemons[].kinds.$3.$4] | add)"
}

# at_least WHAT GOT WANT
at_least() {
    [ "$2" -ge "$3" ] || { echo "$1: $2, expected at least $3" >&2; return 1; }
}

@test "pdcbb stats --json counts the job's known work per kind on the right daemons, from both nodes" {
    in_job '
        set -e
        "$PDCBB" stats --json > before.json
        PDCBB_DIRECT=0 "$WORK" 10 65536 20 > expect.txt
        "$PDCBB" stats --json > after.json
        echo "$PDCBB_JOB_ID" > job_id
        other=$(ls -d "$WORKDIR"/node1/pdcbb.*)
        PDCBB_JOB_DIR=$other "$PDCBB" stats --json > after1.json
        "$PDCBB" stats --json "$other" > after1b.json'
    assert_success
    cd "$WORKDIR"
    cat expect.txt
    for f in before.json after.json after1.json after1b.json; do
        [ "$(wc -l < $f)" -eq 1 ] || { echo "$f: not one line" >&2; return 1; }
        jq -e --arg job "$(cat job_id)" '.job_id == ($job | tonumber) and (.daemons | length) == 2
            and ([.daemons[].rank] == [0, 1]) and ([.daemons[].node] == ["node0", "node1"])
            and (.timestamp | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$"))' $f
    done
    # Per daemon: the object creates and tags sent to each (home of the name), both ways.
    while read -r what a b; do
        case $what in
        metadata)
            at_least "metadata requests received by $a" "$(delta after.json before.json $a metadata msgs_recv)" $((2 * b))
            at_least "metadata replies sent by $a" "$(delta after.json before.json $a metadata msgs_sent)" $((2 * b))
            at_least "metadata bytes received by $a" "$(delta after.json before.json $a metadata bytes_recv)" $((2 * b * 64)) ;;
        error)
            at_least "metadata errors of $a" "$(delta after.json before.json $a metadata errors)" "$b"
            at_least "errors of $a" "$(jq ".daemons[$a].errors" after.json)" "$b" ;;
        drain)
            at_least "drain requests of $a" "$(delta after.json before.json $a drain msgs_recv)" "$b" ;;
        data_bytes)
            at_least "region bytes received" "$(sum_delta after.json before.json data bytes_recv)" "$a"
            at_least "region bytes sent" "$(sum_delta after.json before.json data bytes_sent)" "$a"
            at_least "capacity used" "$(jq '[.daemons[].capacity_used] | add' after.json)" "$a"
            at_least "data requests" "$(sum_delta after.json before.json data msgs_recv)" 2 ;;
        query)
            at_least "query requests" "$(sum_delta after.json before.json query msgs_recv)" "$a" ;;
        kv)
            at_least "KV requests" "$(sum_delta after.json before.json kv msgs_recv)" "$a"
            at_least "KV replies" "$(sum_delta after.json before.json kv msgs_sent)" "$a" ;;
        *) echo "unexpected line: $what" >&2; return 1 ;;
        esac
    done < expect.txt
    [ "$(grep -c '^metadata' expect.txt)" -eq 2 ]
    # No broadcast op exists: its counters stay zero.
    jq -e '[.daemons[].kinds.broadcast[]] | all(. == 0)' after.json
    # Every daemon has a capacity; nothing is waiting between the job's calls.
    jq -e '.daemons | all(.capacity_limit > 0 and .in_flight == 0 and .uptime_ms > 0)' after.json
    # From node1: the same job and counters at least as high as node0 saw just before.
    for f in after1.json after1b.json; do
        for r in 0 1; do
            for k in metadata data drain query kv other; do
                at_least "$f rank $r $k" "$(delta $f after.json $r $k msgs_recv)" 0
            done
            at_least "$f rank $r other (this stats request counted)" "$(delta $f after.json $r other msgs_recv)" 1
        done
    done
}

@test "pdcbb stats counts refused requests (wrong token, bad op) as errors of the daemon that refused them" {
    in_job '
        set -e
        other=$(ls -d "$WORKDIR"/node1/pdcbb.*)
        "$PDCBB" stats --json > before.json
        for c in wrongtoken wrongtoken badop; do "'"$RAWMSG"'" "$other/bbd-1.endpoint" "$other/token" $c; done
        "$PDCBB" stats --json > after.json'
    assert_success
    [ "$(grep -c 'status PDCBB_ERR_AUTH' <<<"$output")" -eq 2 ]
    assert_output --partial "status PDCBB_ERR_BAD_OP"
    cd "$WORKDIR"
    d() { jq -n --slurpfile a after.json --slurpfile b before.json "(\$a[0].daemons[$1].$2) - (\$b[0].daemons[$1].$2)"; }
    # each wrong token: its AUTH (the handshake) and then its STATS request refused
    [ "$(d 1 auth_failures)" -eq 4 ]
    [ "$(d 1 proto_errors)" -eq 1 ]
    [ "$(d 1 errors)" -eq 5 ]
    # The refused requests were AUTH and STATS requests (wrong token) and an unknown op (bad
    # op): kind other.
    [ "$(d 1 kinds.other.errors)" -eq 5 ]
    [ "$(d 1 kinds.other.msgs_recv)" -ge 4 ]
    # Daemon 0 refused nothing.
    [ "$(d 0 errors)" -eq 0 ]
    [ "$(d 0 auth_failures)" -eq 0 ]
}

@test "pdcbb stats --interval with --count 2 gives two samples with increasing timestamps and rates" {
    in_job '
        set -e
        "$PDCBB" stats --interval 0.3 --count 2 --json > two.json
        "$PDCBB" stats --interval 0.2 --count 2 > two.txt'
    assert_success
    cd "$WORKDIR"
    [ "$(wc -l < two.json)" -eq 2 ]
    t1=$(sed -n 1p two.json | jq -r .timestamp)
    t2=$(sed -n 2p two.json | jq -r .timestamp)
    s1=$(date -u -d "${t1%Z}" +%s.%N)
    s2=$(date -u -d "${t2%Z}" +%s.%N)
    # Increasing, about the interval apart.
    awk -v a="$s1" -v b="$s2" 'BEGIN { exit !(b - a >= 0.25 && b - a < 5) }'
    # The first sample has no rates; the second has them, and the first stats request itself
    # (kind other) shows in the second sample's counts and rate on every daemon.
    sed -n 1p two.json | jq -e '[.daemons[].kinds[] | keys[] | select(endswith("_per_s"))] | length == 0'
    sed -n 2p two.json | jq -e '.daemons | length == 2 and all(.kinds.other.msgs_recv_per_s > 0)'
    jq -s -e '[.[0].daemons[].kinds.other.msgs_recv] as $a | [.[1].daemons[].kinds.other.msgs_recv] as $b
        | ($b[0] > $a[0]) and ($b[1] > $a[1])' two.json
    # The table: two samples, each with a UTC timestamp, rate columns and 7 kinds x 2 daemons.
    [ "$(grep -cE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\.[0-9]{3}Z  job [0-9]+, 2 daemons$' two.txt)" -eq 2 ]
    [ "$(grep -c 'MSGS_IN/s' two.txt)" -eq 2 ]
    [ "$(grep -cE '^[01] +node[01] +(metadata|data|drain|broadcast|query|kv|other) ' two.txt)" -eq 28 ]
    # First sample: rates "-"; second: numbers.
    sed -n '3p' two.txt | grep -qE ' - '
    awk '/^[01] +node[01] +other /{n++; if (n == 4) print}' two.txt | grep -qE ' [0-9]+\.[0-9] '
}

@test "pdcbb stats prints one table of every daemon and kind by default" {
    in_job '"$PDCBB" stats > one.txt'
    assert_success
    cd "$WORKDIR"
    cat one.txt
    [ "$(grep -cE '^[0-9]{4}-.*Z  job [0-9]+, 2 daemons$' one.txt)" -eq 1 ]
    [ "$(grep -cE '^[01] +node[01] +(metadata|data|drain|broadcast|query|kv|other) ' one.txt)" -eq 14 ]
    ! grep -q 'MSGS_IN/s' one.txt
    # The stats request itself (STATS, kind other) reached both daemons before they answered.
    [ "$(awk '$3 == "other" && $4 >= 1 && $5 >= 64' one.txt | wc -l)" -eq 2 ]
    grep -qE '^1 +node1 +up [0-9.]+ s, [0-9]+ requests, 0 in flight, capacity [0-9]+ of [1-9][0-9]* bytes used, 0 errors' one.txt
}

@test "pdcbb stats refuses bad options and says when there is no running job" {
    run "$PDCBB" stats --interval 0
    assert_failure 2
    assert_output --partial "bad value for --interval: '0' (expected seconds from 0.01 to 86400)"
    run "$PDCBB" stats --interval soon
    assert_failure 2
    assert_output --partial "bad value for --interval: 'soon'"
    run "$PDCBB" stats --count 0
    assert_failure 2
    assert_output --partial "bad value for --count: '0'"
    run "$PDCBB" stats --interval
    assert_failure 2
    assert_output --partial "option '--interval' needs a value"
    run "$PDCBB" stats --bogus
    assert_failure 2
    assert_output --partial "unknown option '--bogus'"
    run "$PDCBB" stats a b
    assert_failure 2
    assert_output --partial "unexpected argument 'b'"
    run "$PDCBB" stats --help
    assert_success
    for opt in --interval --count --json --help JOB_DIR; do assert_output --partial -- "$opt"; done
    # No job: outside a job, a missing directory, a job that has ended.
    run env -u PDCBB_JOB_DIR "$PDCBB" stats
    assert_failure 1
    assert_output --partial "pdcbb stats: no running job: give its job directory (JOB_DIR) or run inside the job"
    run "$PDCBB" stats "$WORKDIR/none"
    assert_failure 1
    assert_output --partial "no running job at $WORKDIR/none"
    run timeout 120 "$PDCBB" run --nodes 1 --workdir "$WORKDIR" --quiet -- true
    assert_success
    dir=$(ls -d "$WORKDIR"/node0/pdcbb.*)
    run timeout 30 "$PDCBB" stats --json "$dir"
    assert_failure 1
    assert_output --partial "pdcbb stats: no running job at $dir"
    refute_output --partial '{'
}
