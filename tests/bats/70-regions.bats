#!/usr/bin/env bats
# Region data end to end: transfers against real daemons, checked against an in-memory model
# (tests/progs/pdc_region_model.c) over 1, 2 and 3 daemons, every placement, several processes
# and cross-process verification; targeted cases (tests/progs/pdc_region_cases.c) for the
# consistency semantics, bad regions, capacity and the whole-object calls; and durability of
# completed writes across kill -9 of every daemon.

load helpers

MODEL="$BUILD_DIR/tests/pdc_region_model"
CASES="$BUILD_DIR/tests/pdc_region_cases"
BENCH_DIR="$BUILD_DIR/bench"

setup() {
    setup_workdir "$MODEL" "$CASES"
    MOUNTS=()
    # The job scripts below use these names and write their files in the work directory.
    export MODEL CASES BBD BENCH_DIR
}

teardown() {
    unmount_tmpfs
    cleanup_workdir
}

# Every placement saw transfers in the model runs of $output.
assert_all_placements_used() {
    local pl
    for pl in obj_static region_static region_dynamic region_local region_striped; do
        grep -Eq "^placement $pl objects=[1-9][0-9]* transfers=[1-9]" <<<"$output" ||
            { echo "no transfers with placement $pl" >&2; return 1; }
    done
}

# ----------------------------------------------------------------------------------------------
# The model

@test "model: 4 seeds x 3000 random transfers on 1 daemon, every placement" {
    in_job 1 'for s in 1 2 3 4; do "$MODEL" --seed $s --ops 3000 || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 4 ]
    assert_all_placements_used
    refute_output --partial MISMATCH
    assert_no_daemons "$WORKDIR"
}

@test "model: 4 seeds x 3000 random transfers on 2 daemons, every placement" {
    in_job 2 'for s in 5 6 7 8; do "$MODEL" --seed $s --ops 3000 || exit 1; done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 4 ]
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "model: 3 daemons, 4 seeds x 3000 transfers, then objects of up to 8 dimensions" {
    in_job 3 'for s in 9 10 11 12; do "$MODEL" --seed $s --ops 3000 || exit 1; done
              "$MODEL" --seed 13 --ops 2000 --max-ndim 8 || exit 1'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 5 ]
    assert_all_placements_used
    # local buffers of other shapes and with offsets were used
    assert_output --regexp "reshaped=[1-9][0-9]* local_offsets=[1-9]"
    assert_no_daemons "$WORKDIR"
}

@test "model: each placement alone over 3 daemons" {
    in_job 3 'for pl in obj_static region_static region_dynamic region_local region_striped; do
                  "$MODEL" --seed 21 --ops 1500 --placements $pl --name only-$pl || exit 1
              done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 5 ]
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "model: PDCBB_REGION_STRIPED objects of up to 12 MiB over 3 daemons: every daemon holds stripes" {
    in_job 3 '"$MODEL" --seed 31 --ops 800 --placements region_striped --objects 6 \
                  --min-obj-bytes 3000000 --max-obj-bytes 12582912 --name big || exit 1
              IFS=: read -r -a dirs <<<"$PDCBB_SERVER_DIRS"
              for d in "${dirs[@]}"; do
                  # bytes allocated (512-byte blocks) by the daemon'"'"'s data files
                  echo "daemon data MiB: $(find "$d" -name "*.dat" -printf "%b\n" |
                      awk "{s += \$1 * 512} END {print int(s / 1048576)}")"
              done'
    assert_success
    assert_output --partial "OK"
    assert_output --regexp "placement region_striped objects=[1-9][0-9]* transfers=[1-9]"
    # the stripes are spread: every daemon holds some of them
    [ "$(grep -c '^daemon data MiB: [1-9]' <<<"$output")" -eq 3 ]
    assert_no_daemons "$WORKDIR"
}

@test "model: large objects (20-100 MB) over 2 daemons" {
    in_job 2 '"$MODEL" --seed 301 --ops 60 --min-obj-bytes 20000000 --max-obj-bytes 100000000' \
        --pdc capacity=2G
    assert_success
    assert_output --regexp "bytes_written=[0-9]{8,}"
    assert_no_daemons "$WORKDIR"
}

@test "direct path: a client moves its own node's region bytes itself, other nodes' over UCX; both agree" {
    # Large transfers to the daemon of the client's node go through its data files
    # (DATA_DIRECT); the daemon of the other node is reached over UCX. The model checks every
    # byte, written one way and read back the other (PDCBB_DIRECT=0 turns the path off).
    in_job 2 '
        m() { "$MODEL" --ops 40 --min-obj-bytes 2000000 --max-obj-bytes 30000000 "$@"; }
        PDCBB_LOG=debug m --seed 302 --phase write 2>direct.log; echo "direct write rc=$?"
        PDCBB_DIRECT=0 PDCBB_LOG=debug m --seed 302 --owner 0 --phase verify 2>ucx.log
        echo "ucx verify rc=$?"
        PDCBB_DIRECT=0 m --seed 303 --phase write; echo "ucx write rc=$?"
        m --seed 303 --owner 0 --phase verify; echo "direct verify rc=$?"
        grep -c "region bytes move directly" direct.log ucx.log
        grep -h "daemon [0-9]*: region bytes move directly" direct.log | sort -u' \
        --pdc capacity=2G
    assert_success
    for w in "direct write" "ucx verify" "ucx write" "direct verify"; do
        assert_output --partial "$w rc=0"
    done
    [ "$(grep -c '^OK$' <<<"$output")" -eq 4 ]
    assert_output --partial "direct.log:1"
    assert_output --partial "ucx.log:0"
    assert_output --regexp "daemon 0: region bytes move directly through /.*/objects"
    refute_output --partial "daemon 1: region bytes move directly"
    assert_no_daemons "$WORKDIR"
}

@test "UCX path: 4 writers of 256 MiB at once; the daemon's memory stays bounded (staging waits for the file writes)" {
    # Received bytes stay in staging until the I/O thread has written them; without the bound
    # they pile up to most of the 1 GiB sent. The bench resets the daemon's VmHWM before its
    # write phases and prints the peak; it also verifies every byte it reads back.
    command -v mpirun >/dev/null
    # each rank's stderr in its own file: mpirun may drop a failing rank's last lines
    printf '#!/bin/bash\nexec "$@" 2>"$WORKDIR/rank.$OMPI_COMM_WORLD_RANK.err"\n' >"$WORKDIR/rank.sh"
    chmod +x "$WORKDIR/rank.sh"
    # (Sanitizer runs: leak checks stay on for the daemon; the ranks' are off, because OpenMPI
    # itself leaks at exit and LeakSanitizer would fail every rank.)
    in_job 1 'ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
        PDCBB_DIRECT=0 timeout 600 mpirun --oversubscribe -np 4 -x PDCBB_JOB_DIR \
        -x PDCBB_JOB_ID -x PDCBB_DIRECT -x UCX_WARN_UNUSED_ENV_VARS -x WORKDIR "$WORKDIR/rank.sh" \
        "$BENCH_DIR/pdc_vpic_bench" --particles 8M --repeat 1 --cold-settle 0' --pdc capacity=4G
    head -50 "$WORKDIR"/rank.*.err
    assert_success
    peak="$(sed -n 's/.*during writes \([0-9]*\)\.[0-9] MiB.*/\1/p' <<<"$output")"
    [ -n "$peak" ]
    echo "daemon peak during writes: $peak MiB"
    [ "$peak" -ge 64 ] # the bytes did go through the daemon
    [ "$peak" -le 400 ]
    assert_no_daemons "$WORKDIR"
}

@test "model: 3 writer processes at once on 3 nodes, each verified by another process" {
    # Each writer claims its own node (REGION_LOCAL data lands on its daemon), owns objects and
    # writes its stripe of two shared objects; verifiers recompute everything from the seed.
    in_job 3 '
        for s in 31 32; do
            pids=
            for r in 0 1 2; do
                PDCBB_NODE_NAME=node$r "$MODEL" --seed $s --ops 3000 --procs 3 --rank $r \
                    --phase write > write-$s-$r.out 2>&1 &
                pids="$pids $!"
            done
            st=0
            for p in $pids; do wait $p || st=1; done
            cat write-$s-*.out
            [ $st = 0 ] || exit 1
            for r in 0 1 2; do
                v=$(( (r + 1) % 3 ))
                PDCBB_NODE_NAME=node$v "$MODEL" --seed $s --ops 3000 --procs 3 --rank $v \
                    --owner $r --phase verify || exit 1
            done
        done'
    assert_success
    [ "$(grep -c '^summary .*phase=write' <<<"$output")" -eq 6 ]
    [ "$(grep -c '^summary .*phase=verify' <<<"$output")" -eq 6 ]
    [ "$(grep -c '^OK$' <<<"$output")" -eq 12 ]
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "model: 3 processes on 3 nodes overwrite each other's data in turn; others verify" {
    # --sequential: every rank writes anywhere in the shared objects, after the previous rank
    # finished, from another node: the newest write wins wherever its bytes were placed.
    in_job 3 '
        for s in 41 42; do
            for r in 0 1 2; do
                PDCBB_NODE_NAME=node$r "$MODEL" --seed $s --ops 2000 --procs 3 --rank $r \
                    --sequential --phase write || exit 1
            done
            for r in 0 1 2; do
                v=$(( (r + 2) % 3 ))
                PDCBB_NODE_NAME=node$v "$MODEL" --seed $s --ops 2000 --procs 3 --rank $v \
                    --owner $r --sequential --phase verify || exit 1
            done
        done'
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 12 ]
    assert_all_placements_used
    assert_no_daemons "$WORKDIR"
}

@test "model: 4 writers at once with 2 daemons per node, verified by other processes" {
    in_job 2 '
        pids=
        for r in 0 1 2 3; do
            PDCBB_NODE_NAME=node$((r % 2)) "$MODEL" --seed 51 --ops 2000 --procs 4 --rank $r \
                --phase write > write-$r.out 2>&1 &
            pids="$pids $!"
        done
        st=0
        for p in $pids; do wait $p || st=1; done
        cat write-*.out
        [ $st = 0 ] || exit 1
        for r in 0 1 2 3; do
            "$MODEL" --seed 51 --ops 2000 --procs 4 --rank $(( (r + 3) % 4 )) --owner $r \
                --phase verify || exit 1
        done' --pdc servers_per_node=2
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 8 ]
    assert_no_daemons "$WORKDIR"
}

@test "model: the checker reports a wrong byte with its coordinates and fails" {
    # --inject-mismatch flips one byte of the reference before the final check.
    in_job 1 '"$MODEL" --seed 61 --ops 300 --inject-mismatch'
    assert_failure
    assert_output --partial "inject: flipped reference byte"
    assert_output --partial "MISMATCH [verify: whole objects]"
    assert_output --regexp "first wrong element: object coordinates \([0-9,]+\)"
    assert_output --regexp "expected [0-9a-f]+ actual [0-9a-f]+"
    assert_output --partial "reproduce: $MODEL --seed 61 --ops 300 --inject-mismatch"
    assert_no_daemons "$WORKDIR"
}

# ----------------------------------------------------------------------------------------------
# Consistency and request life cycle

@test "POSIX consistency: a transfer is complete when start returns, every placement" {
    in_job 2 '"$CASES" posix'
    assert_success
    [ "$(grep -c '^ok posix placement=' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "default consistency: status is PENDING until COMPLETE, reported once, then NOT_FOUND" {
    in_job 2 '"$CASES" status'
    assert_success
    [ "$(grep -c '^ok status placement=' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "a never-started request: status NOT_FOUND, close succeeds, a closed id is refused" {
    in_job 1 '"$CASES" never-started'
    assert_success
    [ "$(grep -c '^ok never-started' <<<"$output")" -eq 2 ]
    assert_output --partial "PDCBB_ERR_BAD_ID"
    assert_no_daemons "$WORKDIR"
}

@test "transfer_close and PDCobj_close of a started, unwaited transfer wait for it" {
    in_job 2 '"$CASES" close-unwaited'
    assert_success
    [ "$(grep -c '^ok close-unwaited placement=' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "a request in flight cannot be started again (BUSY); a waited one can" {
    in_job 1 '"$CASES" busy'
    assert_success
    assert_output --partial "ok busy: second start: PDCBB_ERR_BUSY"
    assert_output --partial "ok busy: a waited request was started again"
    assert_no_daemons "$WORKDIR"
}

@test "PDCclose with requests left open completes the pending write and releases them" {
    in_job 2 '"$CASES" open-at-close'
    assert_success
    assert_output --partial "ok open-at-close: PDCclose with open requests"
    [ "$(grep -c '^ok open-at-close placement=' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

# ----------------------------------------------------------------------------------------------
# Regions

@test "bad regions are refused with PDCBB_ERR_BAD_REGION and a message naming the cause" {
    in_job 1 '"$CASES" bad-regions'
    assert_success
    # 15 kinds of bad boxes, each as a write and as a read
    [ "$(grep -c '^ok bad-region .*PDCBB_ERR_BAD_REGION' <<<"$output")" -eq 30 ]
    assert_output --partial "ok bad-region NULL buffer (write): refused at transfer_create: PDCBB_ERR_INVAL"
    assert_output --partial "ok bad-region access PDC_NA"
    assert_output --partial "ok bad-id closed region: PDCBB_ERR_BAD_ID"
    assert_output --partial "ok bad-regions: all refused; good transfers still work"
    assert_no_daemons "$WORKDIR"
}

@test "local buffers: offsets and other shapes map element by element in row-major order" {
    in_job 1 '"$CASES" local-shapes'
    assert_success
    [ "$(grep -c '^ok local-shapes' <<<"$output")" -eq 3 ]
    assert_no_daemons "$WORKDIR"
}

@test "never-written elements read as zero, every placement over 3 daemons" {
    in_job 3 '"$CASES" zero-read'
    assert_success
    [ "$(grep -c '^ok zero-read placement=' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "a deleted object refuses transfers (NOT_FOUND); a new one of the same name is empty" {
    in_job 2 '"$CASES" deleted'
    assert_success
    [ "$(grep -c '^ok deleted placement=.* refused at .*PDCBB_ERR_NOT_FOUND' <<<"$output")" -eq 8 ]
    [ "$(grep -c '^ok deleted placement=.*reads zeros' <<<"$output")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "PDCobj_set_dims on an object with data: shrink hides it, grow shows zeros" {
    in_job 1 '"$CASES" set-dims'
    assert_success
    assert_output --partial "ok set-dims"
    assert_no_daemons "$WORKDIR"
}

@test "put_data/get_data, object buffers, flush, and PDCobj_close on region ids" {
    in_job 2 'st=0; for c in put-get obj-buf flush close-region; do "$CASES" $c || st=1; done; exit $st'
    assert_success
    assert_output --partial "ok put-get: 300001 bytes round trip"
    assert_output --partial "ok put-get: get_data of too many bytes: PDCBB_ERR_INVAL"
    assert_output --partial "ok obj-buf"
    assert_output --partial "ok flush"
    assert_output --partial "ok close-region"
    assert_no_daemons "$WORKDIR"
}

# ----------------------------------------------------------------------------------------------
# Capacity

@test "capacity: a write that does not fit fails with NOSPC; the daemon keeps serving" {
    in_job 1 '"$CASES" capacity 4194304' --pdc capacity=4M
    assert_success
    assert_output --regexp "ok capacity placement=obj_static: NOSPC after [0-9]+ bytes .*PDCBB_ERR_NOSPC: .*no space"
    # the message names the capacity, what is used and what the write needs
    assert_output --regexp "no space: this daemon's share of the job capacity is 4\.0 MiB, [0-9.]+ (MiB|KiB) used, the write needs [0-9.]+ (MiB|KiB) more"
    assert_output --partial "POSIX write when full refused at start: PDCBB_ERR_NOSPC"
    assert_output --partial "after NOSPC, reads of all"
    assert_output --partial "after deleting the object"
    # the program checks that no more than the capacity was accepted; at least half fits
    n="$(sed -n 's/.*NOSPC after \([0-9]*\) bytes.*/\1/p' <<<"$output")"
    [ "$n" -ge 2097152 ]
    assert_no_daemons "$WORKDIR"
}

@test "capacity with 1 MiB writes (the direct path): NOSPC names the sizes; deleted data frees the disk at once" {
    # Node-local storage of 164 MiB (the daemon's LMDB keeps about 104 MiB allocated) for a
    # capacity of 48 MiB: after the object is deleted, its blocks must really be free (no
    # descriptor of the writer keeps the file alive), or the case's second write of 24 MiB
    # finds the file system full.
    mount_tmpfs "$WORKDIR" size=164m
    in_job 1 'PDCBB_LOG=debug "$CASES" capacity 50331648 1048576 2>err.log; echo "rc=$?"
              grep -c "region bytes move directly" err.log' --pdc capacity=48M
    assert_success
    assert_output --partial "rc=0"
    assert_output --regexp "ok capacity placement=obj_static: NOSPC after [0-9]+ bytes .*PDCBB_ERR_NOSPC: .*no space"
    assert_output --regexp "no space: this daemon's share of the job capacity is 48\.0 MiB, [0-9.]+ (MiB|KiB) used, the write needs [0-9.]+ (MiB|KiB) more"
    assert_output --partial "after deleting the object"
    assert_line "1"
    n="$(sed -n 's/.*NOSPC after \([0-9]*\) bytes.*/\1/p' <<<"$output")"
    [ "$n" -ge 49283072 ]
    assert_no_daemons "$WORKDIR"
}

@test "capacity over 2 daemons, every placement: NOSPC, overwrites when full, delete frees space" {
    in_job 2 '
        st=0
        for pl in region_dynamic obj_static region_static region_local; do
            "$CASES" --tag .$pl capacity 4194304 262144 $pl || st=1
        done
        exit $st' --pdc capacity=2M
    assert_success
    [ "$(grep -c '^ok capacity placement=.*: NOSPC after' <<<"$output")" -eq 4 ]
    [ "$(grep -c '^ok capacity placement=.*overwrites work' <<<"$output")" -eq 4 ]
    [ "$(grep -c '^ok capacity placement=.*written again' <<<"$output")" -eq 4 ]
    # dynamic placement spreads over both daemons: more than one daemon's capacity fits
    n="$(sed -n 's/^ok capacity placement=region_dynamic: NOSPC after \([0-9]*\) bytes.*/\1/p' <<<"$output")"
    [ "$n" -gt 2097152 ]
    assert_no_daemons "$WORKDIR"
}

@test "overwrites need no new space; deleted objects give all their space back" {
    # 60 overlapping overwrites of an object of half a daemon's capacity, for every placement
    # (each object is deleted after), then dynamic placement must find almost all the space.
    in_job 2 '
        for pl in obj_static region_static region_dynamic region_local; do
            "$CASES" --tag .$pl overwrite 2097152 $pl 60 || exit 1
        done
        "$CASES" capacity 4194304 262144 region_dynamic' --pdc capacity=2M
    assert_success
    [ "$(grep -c '^ok overwrite placement=.*no NOSPC' <<<"$output")" -eq 4 ]
    n="$(sed -n 's/^ok capacity placement=region_dynamic: NOSPC after \([0-9]*\) bytes.*/\1/p' <<<"$output")"
    [ "$n" -ge 3670016 ]
    assert_no_daemons "$WORKDIR"
}

# ----------------------------------------------------------------------------------------------
# Durability

@test "durability: completed writes survive kill -9 of every daemon; restarted daemons serve them" {
    in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        # Written from node 1 (REGION_LOCAL data on daemon 1), waited (or POSIX).
        PDCBB_NODE_NAME=node1 "$CASES" durable-write dur 42 || exit 1
        PDCBB_NODE_NAME=node1 "$MODEL" --seed 71 --ops 2000 --phase write > model-write.out ||
            { cat model-write.out; exit 1; }
        p0=$(cat "$d0/bbd-0.pid"); p1=$(cat "$d1/bbd-1.pid")
        kill -9 "$p0" "$p1"
        for p in $p0 $p1; do
            for i in $(seq 200); do
                grep -q "^[^ ]* ([^)]*) [ZX]" /proc/$p/stat 2>/dev/null || [ ! -e /proc/$p ] && break
                sleep 0.05
            done
        done
        echo "daemons killed"
        "$CASES" --tag .none durable-verify dur 42 && { echo "a client reached dead daemons"; exit 1; }
        "$BBD" --job-dir "$d0" --rank 0 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node0 \
            3>ready0 --ready-fd 3 &
        "$BBD" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 \
            3>ready1 --ready-fd 3 &
        for i in $(seq 200); do
            grep -q ready ready0 2>/dev/null && grep -q ready ready1 2>/dev/null && break
            sleep 0.05
        done
        echo "daemons restarted"
        PDCBB_NODE_NAME=node0 "$CASES" durable-verify dur 42 || exit 1
        "$MODEL" --seed 71 --ops 2000 --phase verify || exit 1'
    assert_success
    [ "$(grep -c '^ok durable-write' <<<"$output")" -eq 8 ]
    assert_output --partial "daemons killed"
    assert_output --partial "PDCBB_ERR_UNREACHABLE"
    assert_output --partial "daemons restarted"
    [ "$(grep -c '^ok durable-verify' <<<"$output")" -eq 8 ]
    assert_output --regexp "summary seed=71 phase=verify .*"
    assert_output --partial "OK"
    assert_no_daemons "$WORKDIR"
}

@test "a row too wide for one request (300 MiB of [1][N]) is split by the library, over UCX too" {
    # the first dimension cannot be split: the library splits along the next one, so no
    # request carries more than the daemon takes (PDCBB_DATA_BULK_MAX, 256 MiB)
    in_job 1 '"$CASES" wide-row 300 && PDCBB_DIRECT=0 "$CASES" --tag u wide-row 300' --pdc capacity=2G
    assert_success
    [ "$(grep -c "^ok wide-row 300 MiB written and read back" <<<"$output")" -eq 2 ]
    assert_no_daemons "$WORKDIR"
}

