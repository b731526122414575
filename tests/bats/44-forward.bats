#!/usr/bin/env bats
# Forwarding (bbd/bbd_forward.c, FORWARD; configuration key forward): a client's requests for
# other nodes' daemons go through its own node's daemon, so that a daemon holds connections to
# its node's clients and to the other daemons, not to every client of the job. Many clients of
# one node cost another node's daemon one connection; metadata, region data of every placement
# and a killed and restarted daemon work through it; what the daemon must not send on is
# refused; `auto` forwards in jobs of more than 32 daemons only.

load helpers

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

# The job script of the connection test: 8 clients on node0, each creating objects on every
# daemon and staying connected while `pdcbb stats` counts every daemon's connections.
eight_clients='
    for k in $(seq 8); do
        "'"$TOOL"'" "cont-create c$k" "many-objs c$k o${k}_ 16" "sleep 3" > "client.$k" 2>&1 &
    done
    for i in $(seq 200); do
        [ "$(cat client.* 2>/dev/null | grep -c "^ok many-objs")" -ge 8 ] && break
        sleep 0.05
    done
    "'"$PDCBB"'" stats --json > stats.json
    wait
    cat client.*
    jq -r ".daemons[] | \"daemon \\(.rank) connections \\(.connections) forwarded \\(.kinds.forward.msgs_recv)\"" stats.json'

@test "eight clients of one node cost each other node's daemon one connection when forwarding, eight when not" {
    command -v jq >/dev/null
    PDCBB_FORWARD=always in_job 4 "$eight_clients"
    assert_success
    [ "$(grep -c "^ok many-objs per-server: [1-9]" <<<"$output")" -eq 8 ]
    refute_output --partial FAILED
    # the other nodes' daemons: daemon 0's connection only (pdcbb stats went through it too)
    for r in 1 2 3; do
        assert_line "daemon $r connections 1 forwarded 0"
    done
    # daemon 0: the 8 clients (and pdcbb stats), and it forwarded their requests
    local c0 f0
    c0=$(sed -n 's/^daemon 0 connections \([0-9]*\) .*/\1/p' <<<"$output")
    f0=$(sed -n 's/^daemon 0 .* forwarded \([0-9]*\)$/\1/p' <<<"$output")
    [ "$c0" -ge 8 ] && [ "$c0" -le 12 ]
    [ "$f0" -ge $(( 8 * 16 / 2 )) ]
    assert_no_daemons "$WORKDIR"

    PDCBB_FORWARD=never IN_JOB_SUBDIR=/never in_job 4 "$eight_clients"
    assert_success
    for r in 1 2 3; do
        local c
        c=$(sed -n "s/^daemon $r connections \([0-9]*\) forwarded 0$/\1/p" <<<"$output")
        [ "$c" -ge 8 ]
    done
    assert_no_daemons "$WORKDIR/never"
}

@test "through forwarding: metadata, tags, searches and region data of every placement match" {
    PDCBB_FORWARD=always in_job 3 '
        "'"$TOOL"'" "cont-create c" "many-objs c o 30" "tag-put obj o7 colour string red" \
            "tag-get obj o7 colour" "tag-count colour red" "obj-list c" || exit 1
        "'"$BUILD_DIR"'/tests/pdc_region_model" --seed 7 --ops 400 || exit 1
        "'"$PDCBB"'" stats --json | jq -r ".daemons[] | \"daemon \\(.rank) forwarded \\(.kinds.forward.msgs_recv)\""'
    assert_success
    assert_output --partial "ok tag-get colour type=PDC_STRING"
    assert_output --partial "ok tag-count n=1"
    [ "$(grep -o ' o[0-9][0-9]*' <<<"$(grep '^ok obj-list' <<<"$output")" | wc -l)" -eq 30 ]
    [ "$(grep -c "^OK" <<<"$output")" -eq 1 ]
    refute_output --partial MISMATCH
    local f0
    f0=$(sed -n 's/^daemon 0 forwarded \([0-9]*\)$/\1/p' <<<"$output")
    [ "$f0" -gt 40 ]
    assert_line "daemon 1 forwarded 0"
    assert_no_daemons "$WORKDIR"
}

@test "a forwarded call to a killed daemon fails within 5 s naming it and the hop; once restarted it is reached again" {
    PDCBB_FORWARD=always in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        "'"$TOOL"'" "cont-create c" "many-objs c k 10" "tag-put obj k1 v int 11" || exit 1
        kill -9 "$(cat "$d1/bbd-1.pid")"
        start=$(date +%s.%N)
        "'"$TOOL"'" "obj-open k1" "tag-get obj k1 v"
        echo "seconds=$(echo "$(date +%s.%N) - $start" | bc)"
        "'"$BBD"'" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 3>ready --ready-fd 3 &
        for i in $(seq 100); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
        "'"$TOOL"'" "obj-open k1" "tag-get obj k1 v" "obj-list c"'
    assert_success
    assert_output --partial "daemon 1 (node node1) could not be reached through daemon 0 of this node"
    secs="$(sed -n 's/^seconds=//p' <<<"$output")"
    [ "$(echo "$secs < 5" | bc)" -eq 1 ]
    assert_output --partial "type=PDC_INT size=4 value=11"
    [ "$(grep -o ' k[0-9]' <<<"$(grep 'ok obj-list' <<<"$output")" | wc -l)" -eq 10 ]
    assert_no_daemons "$WORKDIR"
}

@test "FORWARD refuses what it must not send on, and sends on the rest" {
    in_job 2 '
        ep="$(echo "$WORKDIR"/node0/pdcbb.*/bbd-0.endpoint)"
        tok="$(echo "$WORKDIR"/node0/pdcbb.*/token)"
        for c in fwdgood fwdself fwdrank fwdreply fwdhello fwdnested fwddaemonop fwdtruncated; do
            echo "case $c: $("'"$RAWMSG"'" "$ep" "$tok" $c | tr "\n" " ")"
        done
        # and the daemon still serves
        "'"$RAWMSG"'" "$ep" "$tok" good'
    assert_success
    assert_line "case fwdgood: status PDCBB_OK inner status PDCBB_OK op STATS "
    assert_line "case fwdself: status PDCBB_ERR_INVAL "
    assert_line "case fwdrank: status PDCBB_ERR_INVAL "
    assert_line "case fwdreply: status PDCBB_ERR_PROTO "
    assert_line "case fwdhello: status PDCBB_ERR_UNSUPPORTED "
    assert_line "case fwdnested: status PDCBB_ERR_UNSUPPORTED "
    # only daemons send APPEND_WRITE: not forwarded (it once was)
    assert_line "case fwddaemonop: status PDCBB_ERR_UNSUPPORTED "
    assert_line "case fwdtruncated: status PDCBB_ERR_TRUNCATED "
    assert_output --partial "requests "
    assert_no_daemons "$WORKDIR"
}

@test "forward=auto forwards in a job of 33 daemons, not of 32; a bad value is refused by name" {
    command -v jq >/dev/null
    for n in 32 33; do
        IN_JOB_SUBDIR=/n$n in_job $n '
            "'"$TOOL"'" "cont-create c" "many-objs c o 66" || exit 1
            "'"$PDCBB"'" stats --json | jq "[.daemons[].kinds.forward.msgs_recv] | add" | sed "s/^/forwarded /"'
        assert_success
        local f
        f=$(sed -n 's/^forwarded //p' <<<"$output")
        if [ "$n" = 33 ]; then
            [ "$f" -ge 60 ]
        else
            [ "$f" -eq 0 ]
        fi
        assert_no_daemons "$WORKDIR/n$n"
    done
    PDCBB_FORWARD=maybe in_job 2 '"'"$TOOL"'" info'
    assert_failure
    assert_output --partial "PDCBB_FORWARD"
    assert_output --partial "use auto, always or never"
}
