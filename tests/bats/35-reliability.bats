#!/usr/bin/env bats
# The reliability suite, short version (scripts/reliability.sh runs it longer; figures in
# docs/RELIABILITY.md): clients mixing every kind of operation (creates, tags, region writes in
# every placement, KV sets) under faults, each logging what the burst buffer acknowledged
# (tests/progs/pdc_load.c); then everything acknowledged must be there, in the job and in the
# drain. PDCBB_RELIABILITY_SCALE=N makes every phase N times longer (scripts/reliability.sh).

load helpers

LOAD="$BUILD_DIR/tests/pdc_load"
SHMRAW="$BUILD_DIR/tests/pdcbb_shmraw"
SCALE="${PDCBB_RELIABILITY_SCALE:-1}"

setup_file() {
    ensure_test_users
}

setup() {
    setup_workdir "$LOAD" "$SHMRAW"
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root (as the CI runs them)" >&2; return 1; }
    chmod 755 "$WORKDIR"
    mkdir "$WORKDIR/drain"
    MOUNTS=()
}

teardown() {
    unmount_tmpfs
    cleanup_workdir
}

# run_load NODES SCRIPT [OPTIONS...]: SCRIPT in a local job of NODES nodes (more `pdcbb run`
# OPTIONS) that drains into $WORKDIR/drain (job id 3500); then the logs are checked from the
# drain too.
run_load() {
    local nodes=$1 script=$2
    shift 2
    run timeout 600 "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR/w" --quiet --job-id 3500 \
        --drain "$WORKDIR/drain" "$@" -- \
        bash -c "cd '$WORKDIR' || exit 1; L='$LOAD'; BBD='$BBD'; RAWMSG='$RAWMSG'; $script"
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

@test "the node-local disk fills up under load (another process takes its space), then frees: writes fail clearly, then go on; nothing acknowledged is lost" {
    # the node-local storage is a 192 MiB filesystem; the job's capacity (40 MiB) and metadata
    # store (104 MiB) fit in it
    mount_tmpfs "$WORKDIR/w" size=192m
    # The clients store at most 4 x 1,000 objects of 4 KiB (16 MiB: never the job's 40 MiB,
    # however fast the machine), and the disk fills once they have stored a few hundred
    # operations, when new objects still need new space.
    run_load 1 '
        for i in $(seq 4); do "$L" write --id $i --seconds $((12 * '"$SCALE"')) --objects 1000 --log log.$i --keep-going > out.$i 2>&1 & done
        clients=$(jobs -p)
        for _ in $(seq 500); do [ "$(cat log.* 2>/dev/null | grep -vc "^try")" -ge 400 ] && break; sleep 0.01; done
        # another process fills what is left of the disk
        dd if=/dev/zero of=w/filler bs=1M 2>/dev/null
        echo "disk full: $(df -m --output=avail w | tail -1 | tr -d " ") MiB free"
        sleep $((3 * '"$SCALE"'))
        before=$(cat log.* | grep -vc "^try")
        rm w/filler
        echo "disk freed after $before acknowledged operations"
        sleep $((3 * '"$SCALE"'))
        echo "then $(cat log.* | grep -vc "^try") acknowledged operations"
        wait $clients
        cat out.*
        "$L" check log.*' --pdc capacity=40M
    output="$JOB_OUTPUT"
    assert_output --partial "disk full: 0 MiB free"
    # writes failed while the disk was full, with a message that says so: the disk, not the
    # job's capacity (before, "no space left in the burst buffer" blamed the capacity)
    assert_output --partial "failed: PDCBB_ERR_DISK_FULL: "
    assert_output --regexp "failed: PDCBB_ERR_DISK_FULL: .*disk full: its filesystem has no space left"
    refute_output --partial "PDCBB_ERR_NOSPC"
    [ "$(grep -Ec "^wrote [0-9]+ operations \([1-9][0-9]* failed\)" <<<"$JOB_OUTPUT")" -ge 1 ]
    # and went on once it was freed
    local before after
    before="$(sed -n 's/^disk freed after \([0-9]*\) .*/\1/p' <<<"$JOB_OUTPUT")"
    after="$(sed -n 's/^then \([0-9]*\) acknowledged.*/\1/p' <<<"$JOB_OUTPUT")"
    [ "$after" -gt $((before + 100)) ]
}

@test "the metadata store fills up under load: writes fail naming lmdb_map_size; nothing acknowledged is lost" {
    # 1 MiB of metadata per daemon: full after some thousand operations; each client goes on
    # until 20 of its operations failed
    printf 'lmdb_map_size: 1M\n' > "$WORKDIR/site.yaml"
    run_load 2 '
        for i in $(seq 4); do "$L" write --id $i --seconds 120 --log log.$i --keep-going --stop-after $((20 * '"$SCALE"')) > out.$i 2>&1 & done
        wait
        cat out.*
        "$L" check log.*' --site-config "$WORKDIR/site.yaml"
    output="$JOB_OUTPUT"
    # whichever kind of write hit the full store first (creates, tag puts, region writes, KV
    # sets: which depends on timing and on how much each kind stores), its message names the
    # daemon and the site key
    assert_output --regexp "failed: PDCBB_ERR_META_FULL: (.*: )?daemon [01]: metadata store full \\(site key lmdb_map_size\\)"
    [ "$(grep -Ec "^wrote [0-9]+ operations \([1-9][0-9]* failed\)" <<<"$JOB_OUTPUT")" -eq 4 ]
    [ "$(logged)" -gt 1000 ]
}

@test "a second Unix user attacks every entry point under load: every attempt is refused, the load never notices" {
    local attacker=pdcbbtest2
    mkdir -m 777 "$WORKDIR/pub"
    run_load 2 '
        for i in $(seq 4); do "$L" write --id $i --seconds $((10 * '"$SCALE"')) --log log.$i & done
        clients=$(jobs -p)
        # what the other user can learn from outside: the daemons ports (ss, /proc/net/tcp) and
        # the shared-memory socket names (/proc/net/unix); here the endpoint records, copied
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        grep -v "^token=" "$d0/bbd-0.endpoint" > pub/bbd-0.endpoint
        grep -v "^token=" "$d1/bbd-1.endpoint" > pub/bbd-1.endpoint
        head -c 32 /dev/urandom | od -An -tx1 | tr -d " \n" > pub/guess
        chmod 644 pub/*
        end=$((SECONDS + 8 * '"$SCALE"')) rounds=0 shm_tries=0
        while [ $SECONDS -lt $end ] || [ $rounds -lt 2 ]; do  # on a slow machine, 2 rounds still
            rounds=$((rounds + 1))
            for ep in pub/bbd-0.endpoint pub/bbd-1.endpoint; do
                for c in notoken wrongtoken tokennoauth badmagic oversized short; do
                    echo "ucx $c: $(runuser -u '"$attacker"' -- "$RAWMSG" "$ep" pub/guess $c 2>&1 | tail -1)"
                done
                echo "shm: $(runuser -u '"$attacker"' -- "'"$SHMRAW"'" "$ep" pub/guess good badhello 2>&1 | tr "\n" " ")"
                shm_tries=$((shm_tries + 1))
            done
            echo "files: $(runuser -u '"$attacker"' -- cat "$d0/token" "$d0/bbd-0.endpoint" 2>&1 | tr "\n" " ")"
            echo "ls: $(runuser -u '"$attacker"' -- ls "$d0" 2>&1 | tr "\n" " ")"
            echo "client: $(runuser -u '"$attacker"' -- env PDCBB_JOB_DIR="$d0" "$L" check log.1 2>&1 | tail -1)"
        done
        echo "flood: $(runuser -u '"$attacker"' -- "$RAWMSG" pub/bbd-0.endpoint pub/guess noauthflood 2>&1 | tail -1)"
        # the daemons log a refusal when they handle the channel, which may be just after the
        # attempt returned: wait for the last ones (at most 10 s)
        refusals() {
            cat "$d0/bbd-0.log" "$d1/bbd-1.log" |
                grep -c "refused a shared-memory channel from pid [0-9]* uid '"$(id -u $attacker)"': not the job user"
        }
        for _ in $(seq 100); do [ "$(refusals)" -ge "$shm_tries" ] && break; sleep 0.1; done
        echo "shm refusals logged: $(refusals)"
        wait $clients
        "$L" check log.*'
    output="$JOB_OUTPUT"
    # every fault-free client finished without one failed operation
    [ "$(grep -Ec "^wrote [0-9]+ operations \(0 failed\)" <<<"$JOB_OUTPUT")" -eq 4 ]
    local tries
    tries="$(grep -c "^ucx " <<<"$JOB_OUTPUT")"
    [ "$tries" -ge 24 ]
    # nothing the other user sent was served
    ! grep -E "^(ucx|shm)" <<<"$JOB_OUTPUT" | grep -q "status PDCBB_OK"
    ! grep -E "^(ucx|shm)" <<<"$JOB_OUTPUT" | grep -qv "PDCBB_ERR_\|no reply\|handshake"
    ! grep "^files: \|^ls: " <<<"$JOB_OUTPUT" | grep -qv "Permission denied"
    ! grep "^client: " <<<"$JOB_OUTPUT" | grep -q "checked"
    assert_output --regexp "flood: .*closed [1-9][0-9]* of 300"
    # the shared-memory channel refused the other user by its uid (SO_PEERCRED), every time
    [ "$(sed -n 's/^shm refusals logged: //p' <<<"$output")" -eq "$(grep -c "^shm: " <<<"$output")" ]
}
