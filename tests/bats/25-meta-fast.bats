#!/usr/bin/env bats
# The shared-memory channel between a client and a daemon of its node (common/pdcbb_shm.h,
# docs/PROTOCOL.md): it is what synchronous metadata calls use, it answers exactly as UCX does,
# PDCBB_SHM=0 turns it off, a client killed in the middle of a stream of calls is detected and
# released while the daemon keeps serving others, and garbage on the channel gets clear errors.

load helpers

SHMRAW="$BUILD_DIR/tests/pdcbb_shmraw"
BENCH="$BUILD_DIR/bench/pdc_meta_bench"
KVBENCH="$BUILD_DIR/bench/pdc_kv_bench"

setup() {
    require_build
    [ -x "$SHMRAW" ] || { echo "missing $SHMRAW" >&2; return 1; }
    [ -x "$BENCH" ] || { echo "missing $BENCH" >&2; return 1; }
    [ -x "$KVBENCH" ] || { echo "missing $KVBENCH" >&2; return 1; }
    make_workdir
}

teardown() {
    cleanup_workdir
}

in_job() {
    local nodes=$1
    shift
    run "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR" --quiet -- bash -c "$*"
}

# A fixed sequence of metadata calls whose output does not depend on the transport.
SCRIPT=(
    "cont-create c1" "cont-create c2"
    "obj-create c1 o1 float 3 4 5 6" "obj-create c2 o2 int 1 100" "!EXISTS obj-create c1 o1"
    "tag-put obj o1 units string kelvin" "tag-put obj o1 n int 42" "tag-put cont c1 owner string alice"
    "tag-get obj o1 units" "tag-get obj o1 n" "tag-get cont c1 owner" "tag-get obj o1 nope"
    "tag-all-types o2" "obj-set-dims o1 3 8 5 6" "obj-info o1" "obj-open o2" "obj-list c1"
    "objids-put c1 o1 o2" "objids-get c1" "tag-search units kelvin" "tag-del obj o1 n"
    "tag-get obj o1 n" "obj-del o2" "!NOT_FOUND obj-open o2" "cont-info c1" "cont-list"
)

@test "synchronous metadata calls go over shared memory; PDCBB_SHM=0 sends them over UCX" {
    in_job 1 '
        ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        "'"$TOOL"'" "cont-create c" "obj-create c o float 1 8" "tag-put obj o k string v" \
            "tag-get obj o k" "obj-open o" >/dev/null || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
        PDCBB_SHM=0 "'"$TOOL"'" "obj-open o" "tag-get obj o k" "obj-create c p float 1 8" >/dev/null || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
    '
    assert_success
    # The first client: HELLO-free; at least its 5 calls and the STATS itself over the channel.
    first="$(grep -m1 '^requests' <<<"$output")"
    second="$(grep '^requests' <<<"$output" | tail -1)"
    n1="$(sed -E 's/.*shm_requests ([0-9]+).*/\1/' <<<"$first")"
    n2="$(sed -E 's/.*shm_requests ([0-9]+).*/\1/' <<<"$second")"
    [ "$n1" -ge 6 ]
    # The PDCBB_SHM=0 client added nothing: only the second STATS came over shared memory.
    [ "$n2" -eq $(( n1 + 1 )) ]
    [[ "$first" == *"shm_channels 2 shm_open 1"* ]]
    [[ "$second" == *"shm_channels 3 shm_open 1"* ]]
    grep -q "shared-memory channels on abstract socket" "$WORKDIR"/node0/pdcbb.*/bbd-0.log
    assert_no_daemons "$WORKDIR"
}

@test "blocking KV calls go over shared memory; non-blocking ones and PDCBB_SHM=0 over UCX" {
    in_job 1 '
        ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        "'"$SHMRAW"'" "$ep" "$tok" good
        "'"$KVBENCH"'" --count 600 --phases set >/dev/null || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
        "'"$KVBENCH"'" --count 600 --phases set_async >/dev/null || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
        PDCBB_SHM=0 "'"$KVBENCH"'" --count 600 --batch 10 --phases set_list >/dev/null || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
    '
    assert_success
    mapfile -t n < <(grep '^requests' <<<"$output" | sed -E 's/.*shm_requests ([0-9]+).*/\1/')
    [ "${#n[@]}" -eq 4 ]
    # 600 blocking sets (and the bench's few metadata calls) came over the channel ...
    [ $(( n[1] - n[0] )) -ge 600 ]
    # ... 600 sets with events did not (only the metadata calls and the STATS did) ...
    [ $(( n[2] - n[1] )) -lt 50 ]
    # ... nor did anything of a PDCBB_SHM=0 client (only the next STATS).
    [ $(( n[3] - n[2] )) -eq 1 ]
    assert_no_daemons "$WORKDIR"
}

@test "the same calls give the same answers with and without shared memory, on 2 daemons per node" {
    local a b
    rm -rf "$WORKDIR/a" "$WORKDIR/b"
    run "$PDCBB" run --nodes 1 --pdc servers_per_node=2 --workdir "$WORKDIR/a" --quiet -- \
        "$TOOL" "${SCRIPT[@]}"
    assert_success
    a="$output"
    PDCBB_SHM=0 run "$PDCBB" run --nodes 1 --pdc servers_per_node=2 --workdir "$WORKDIR/b" \
        --quiet -- "$TOOL" "${SCRIPT[@]}"
    assert_success
    b="$output"
    [ "$(grep -c '^ok' <<<"$a")" -ge 20 ]
    grep -q "^ok tag-get nope absent (PDCBB_ERR_NOT_FOUND: " <<<"$a"
    # Ids and timings aside (they differ between any two jobs), every line is the same.
    norm() { sed -E 's/(id|cont_id)=[0-9a-fx]+/\1=ID/g; s/[0-9.]+ ms/T ms/g' <<<"$1"; }
    diff <(norm "$a") <(norm "$b")
    # The first job's daemons served requests over shared memory, the second's none.
    grep -q "over 1 shared-memory channels" "$WORKDIR"/a/node0/pdcbb.*/bbd-0.log
    grep -q " 0 of them over 0 shared-memory channels" "$WORKDIR"/b/node0/pdcbb.*/bbd-0.log
}

@test "kill -9 of a client in a stream of metadata calls is detected; the daemon serves others" {
    in_job 1 '
        ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        "'"$BENCH"'" --counts 1M --containers 0 >/dev/null 2>&1 &
        victim=$!
        # Wait until it is in the middle of its creates over the channel.
        for i in $(seq 100); do
            "'"$SHMRAW"'" "$ep" "$tok" good | grep -qE "shm_requests [0-9]{4,}" && break
            sleep 0.1
        done
        kill -9 $victim; wait $victim 2>/dev/null
        for i in $(seq 50); do
            grep -q "of pid $victim closed: the process exited" "$PDCBB_JOB_DIR"/bbd-0.log && break
            sleep 0.1
        done
        grep "of pid $victim closed" "$PDCBB_JOB_DIR"/bbd-0.log
        "'"$TOOL"'" "cont-create after" "obj-create after survivor float 1 8" "tag-put obj survivor k int 7" "tag-get obj survivor k" || exit 1
        "'"$SHMRAW"'" "$ep" "$tok" good
    '
    assert_success
    assert_output --regexp "of pid [0-9]+ closed: the process exited"
    [ "$(grep -c 'closed: the process exited' <<<"$output")" -eq 1 ]
    assert_output --partial "ok obj-create name=survivor"
    assert_output --partial "value=7"
    # Only the last STATS channel is open: the killed client's and the tool's were released.
    assert_output --regexp "shm_channels [0-9]+ shm_open 1"
    assert_no_daemons "$WORKDIR"
}

@test "garbled requests on the shared-memory channel get clear errors; the daemon keeps serving" {
    in_job 1 '
        ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        "'"$SHMRAW"'" "$ep" "$tok" garbage toolong short wrongtoken dataop scribble good badhello nofd unsealed
        echo "shmraw exit $?"
        "'"$TOOL"'" "cont-create after-abuse" "obj-create after-abuse still-serving"
        "'"$SHMRAW"'" "$ep" "$tok" good
    '
    assert_success
    assert_output --partial "garbage: status PDCBB_ERR_PROTO"
    assert_output --partial "toolong: status PDCBB_ERR_PROTO"
    assert_output --partial "short: status PDCBB_ERR_PROTO"
    assert_output --partial "wrongtoken: status PDCBB_ERR_AUTH"
    assert_output --partial "dataop: status PDCBB_ERR_UNSUPPORTED"
    # A request overwritten while the daemon reads it is answered one way or the other.
    assert_output --regexp "scribble: status PDCBB_(OK|ERR_PROTO)"
    assert_output --partial "good: status PDCBB_OK"
    assert_output --partial "badhello: refused PDCBB_ERR_AUTH"
    assert_output --partial "nofd: refused PDCBB_ERR_PROTO"
    assert_output --partial "unsealed: refused PDCBB_ERR_PROTO"
    assert_output --partial "shmraw exit 0"
    assert_output --partial "ok obj-create name=still-serving"
    # Counted: 2 refused tokens; garbage, toolong, short, dataop, nofd, unsealed (and maybe
    # scribble).
    [[ "$(tail -1 <<<"$output")" =~ auth_failures\ 2\ proto_errors\ [67]\  ]]
    grep -q "refused a shared-memory channel from pid [0-9]*: wrong job token" \
        "$WORKDIR"/node0/pdcbb.*/bbd-0.log
    grep -q "refused a shared-memory channel from pid [0-9]*: the memory file is not sealed" \
        "$WORKDIR"/node0/pdcbb.*/bbd-0.log
    assert_no_daemons "$WORKDIR"
}

@test "region transfers and metadata calls interleaved: same results with and without shared memory" {
    # Transfers go over UCX, metadata calls over the channel unless a transfer of the process is
    # outstanding to that daemon (then they stay on UCX, behind it).
    local cases="$BUILD_DIR/tests/pdc_region_cases" a
    [ -x "$cases" ]
    script="for c in status close-unwaited deleted set-dims put-get flush; do '$cases' \$c || exit 1; done"
    run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/a" --quiet -- bash -c "$script"
    assert_success
    a="$output"
    PDCBB_SHM=0 run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/b" --quiet -- bash -c "$script"
    assert_success
    norm() { sed -E 's/x[0-9]+/xN/g; s/[0-9.]+ ms/T ms/g' <<<"$1"; }
    diff <(norm "$a") <(norm "$output")
    [ "$(grep -c '^ok' <<<"$a")" -ge 20 ]
    # Both transports carried requests of the first job; none went over shared memory in the second.
    line="$(grep 'requests served' "$WORKDIR"/a/node0/pdcbb.*/bbd-0.log)"
    [[ "$line" =~ ([0-9]+)\ requests\ served,\ ([0-9]+)\ of ]]
    [ "${BASH_REMATCH[2]}" -gt 0 ] && [ "${BASH_REMATCH[2]}" -lt "${BASH_REMATCH[1]}" ]
    grep -q " 0 of them over 0 shared-memory channels" "$WORKDIR"/b/node0/pdcbb.*/bbd-0.log
}

@test "concurrent clients: group commits answer each request as if it ran alone" {
    # 4 clients create the same 200 names at once: requests of several clients are committed
    # together, and a batch with a failing create (the name exists) is rolled back and replayed
    # one by one, so every name has exactly one winner and every loser gets EXISTS.
    in_job 1 '
        "'"$TOOL"'" "cont-create c" >/dev/null || exit 1
        args=(); for i in $(seq 200); do args+=("obj-create c dup$i float 1 4" "tag-put obj dup$i k int $i"); done
        for p in 1 2 3 4; do "'"$TOOL"'" "${args[@]}" >"$PDCBB_JOB_DIR/out.$p" & done
        wait
        cat "$PDCBB_JOB_DIR"/out.*
        "'"$TOOL"'" "tag-get obj dup1 k" "tag-get obj dup200 k"
        "'"$RAWMSG"'" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" good
    '
    assert_success
    [ "$(grep -c '^ok obj-create' <<<"$output")" -eq 200 ]
    [ "$(grep -c '^error PDCBB_ERR_EXISTS' <<<"$output")" -eq 600 ]
    [ "$(grep -c '^ok tag-put' <<<"$output")" -eq 800 ]
    assert_output --partial "value=1"
    assert_output --partial "value=200"
    assert_output --regexp "objects 200 "
    line="$(grep 'group commits' "$WORKDIR"/node0/pdcbb.*/bbd-0.log)"
    [[ "$line" =~ \ ([0-9]+)\ in\ ([0-9]+)\ group\ commits ]]
    [ "${BASH_REMATCH[1]}" -gt 0 ]
}

@test "kill -9 of the daemon under a client on its channel: a clear error, then the restarted daemon serves it" {
    in_job 1 '
        d0="$PDCBB_JOB_DIR"
        "'"$TOOL"'" "cont-create c" "obj-create c k float 1 4" "tag-put obj k v int 11" || exit 1
        # One client process across the kill and the restart.
        "'"$TOOL"'" "obj-open k" "sleep 1.5" "tag-get obj k v" "sleep 2.5" "tag-get obj k v" "tag-get obj k v" >"$d0/client.out" 2>&1 &
        client=$!
        sleep 0.7
        kill -9 "$(cat "$d0/bbd-0.pid")"
        sleep 1.5
        "'"$BBD"'" --job-dir "$d0" --rank 0 --nservers 1 --job-id "$PDCBB_JOB_ID" --node node0 3>"$d0/ready" --ready-fd 3 &
        for i in $(seq 100); do grep -q ready "$d0/ready" 2>/dev/null && break; sleep 0.05; done
        wait $client
        cat "$d0/client.out"
        "'"$SHMRAW"'" "$d0/bbd-0.endpoint" "$d0/token" good
    '
    assert_output --partial "lost the connection to daemon 0"
    assert_output --partial "PDCBB_ERR_UNREACHABLE"
    [ "$(grep -c 'type=PDC_INT size=4 value=11' <<<"$output")" -eq 2 ]
    # The restarted daemon: the client's first call reconnected over UCX (HELLO, AUTH, TAG_GET,
    # after re-reading the endpoint record), its next one came over a new channel, as did the
    # STATS.
    assert_output --regexp "requests 5 .* shm_requests 2 shm_channels 2 shm_open 1"
}
