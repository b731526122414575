#!/usr/bin/env bats
# The reliability suite, short version (scripts/reliability.sh runs it longer; figures in
# docs/RELIABILITY.md): clients mixing every kind of operation (creates, tags, region writes in
# every placement, KV sets) under faults, each logging what the burst buffer acknowledged
# (tests/progs/pdc_load.c); then everything acknowledged must be there, in the job and in the
# drain. PDCBB_RELIABILITY_SCALE=N makes every phase N times longer (scripts/reliability.sh).

load helpers

LOAD="$BUILD_DIR/tests/pdc_load"
SCALE="${PDCBB_RELIABILITY_SCALE:-1}"

setup() {
    setup_workdir "$LOAD"
    mkdir "$WORKDIR/drain"
}

teardown() {
    cleanup_workdir
}

# run_load NODES SCRIPT: SCRIPT in a local job of NODES nodes that drains into $WORKDIR/drain
# (job id 3500); then the logs are checked from the drain too.
run_load() {
    run timeout 600 "$PDCBB" run --nodes "$1" --workdir "$WORKDIR/w" --quiet --job-id 3500 \
        --drain "$WORKDIR/drain" -- bash -c "cd '$WORKDIR' || exit 1; L='$LOAD'; BBD='$BBD'; $2"
    echo "$output"
    JOB_OUTPUT="$output"
    assert_success
    assert_output --regexp "checked [0-9]+ objects, [0-9]+ tags, [0-9]+ data, [0-9]+ kv records: 0 missing, 0 bad"
    local drained
    drained="$(ls -d "$WORKDIR"/drain/pdcbb.3500*)"
    [ -f "$drained/COMPLETE" ]
    PDCBB_DRAINED_DIR="$drained" run "$LOAD" check "$WORKDIR"/log.*
    sed 's/^/from the drain: /' <<<"$output"
    assert_success
    assert_output --regexp "checked [0-9]+ objects.*: 0 missing, 0 bad "
    assert_no_daemons "$WORKDIR"
}

# The number of acknowledged operations the logs hold (not the "try" lines).
logged() {
    cat "$WORKDIR"/log.* | grep -vc '^try'
}

# load_only NODES CLIENTS SECONDS: CLIENTS clients for SECONDS (x scale) without faults: every
# operation must succeed, and everything is checked.
load_only() {
    run_load "$1" '
        for i in $(seq '"$2"'); do "$L" write --id $i --seconds $(('"$3"' * '"$SCALE"')) --log log.$i & done
        fail=0; for p in $(jobs -p); do wait $p || fail=1; done
        [ $fail -eq 0 ] || exit 1
        "$L" check log.*'
    [ "$(logged)" -gt 1000 ]
}

@test "load: 8 clients mix every kind of operation on 2 nodes; all acknowledged is there, live and drained" {
    load_only 2 8 8
}

@test "load: 32 clients on 3 nodes; all acknowledged is there, live and drained" {
    load_only 3 32 5
}

@test "clients killed with -9 in the middle of their operations lose nothing they were told is stored" {
    run_load 2 '
        for i in $(seq 8); do "$L" write --id $i --seconds $((10 * '"$SCALE"')) --log log.$i & done
        sleep 2; for p in $(jobs -p | head -4); do kill -9 $p; sleep $((1 * '"$SCALE"')); done
        wait
        "$L" check log.*'
    [ "$(logged)" -gt 500 ]
}

@test "a daemon stopped with SIGSTOP for 4 s under load: its clients wait, then go on; nothing acknowledged is lost" {
    run_load 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        for i in $(seq 4); do "$L" write --id $i --seconds $((12 * '"$SCALE"')) --log log.$i --keep-going > out.$i 2>&1 & done
        sleep 3; pid=$(cat "$d1/bbd-1.pid"); kill -STOP $pid; sleep 4; kill -CONT $pid
        wait
        cat out.*
        "$L" check log.*'
    [ "$(grep -c "^wrote [0-9]* operations" <<<"$JOB_OUTPUT")" -eq 4 ]
}

@test "a daemon killed with -9 three times (x scale) under load and restarted: nothing acknowledged is lost" {
    run_load 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        for i in $(seq 4); do "$L" write --id $i --seconds $((14 * '"$SCALE"')) --log log.$i --keep-going > out.$i 2>&1 & done
        clients=$(jobs -p)
        for round in $(seq $((3 * '"$SCALE"'))); do
            sleep 2
            kill -9 "$(cat "$d1/bbd-1.pid")"
            sleep 1
            rm -f ready.$round
            "$BBD" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 \
                3>ready.$round --ready-fd 3 &
            for _ in $(seq 100); do grep -q ready ready.$round 2>/dev/null && break; sleep 0.05; done
            grep -q ready ready.$round || { echo "daemon 1 did not restart"; exit 1; }
        done
        wait $clients
        cat out.*
        "$L" check log.*'
    [ "$(logged)" -gt 300 ]
}
