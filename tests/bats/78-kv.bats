#!/usr/bin/env bats
# KV objects (issue 12, docs/KV.md) end to end against real daemons: the layout unit test; the
# seed's own examples under mpirun (collective create, set/get/list/delete, versions) with the
# bad input cases; the model test (tests/progs/pdc_kv_model.c) on 1, 2 and 3 daemons, both
# sharding modes, INT/FLOAT/STRING keys with 1024-byte keys, concurrent writers, transactions
# with commits and aborts, values larger than one message; shared keys written by every rank;
# acknowledged records and an open transaction surviving kill -9 of the daemons; hand-made
# wire messages with garbage.

load helpers

MODEL="$BUILD_DIR/tests/pdc_kv_model"
SEED="$BUILD_DIR/tests/pdc_kv_seed"
UNIT="$BUILD_DIR/tests/test_kv_layout"

setup() {
    setup_workdir "$MODEL" "$SEED" "$UNIT"
    export MODEL SEED BBD RAWMSG
}

teardown() {
    cleanup_workdir
}

# (Sanitizer builds: leak checks stay on for the daemons; the clients' are off, because OpenMPI
# itself leaks at exit and LeakSanitizer would fail every rank.)
NOLEAK='env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0'
MPIRUN="$NOLEAK timeout 300 mpirun --oversubscribe -x PDCBB_JOB_DIR -x PDCBB_JOB_ID -x UCX_WARN_UNUSED_ENV_VARS -x ASAN_OPTIONS"

@test "layout: key encodings order as their type, long keys fit LMDB, records and meta round-trip" {
    run "$UNIT"
    echo "$output"
    assert_success
    assert_output --partial "all checks passed"
}

@test "seed examples and bad input on 1, 2 and 3 daemons, hash and range sharding, 3 ranks" {
    in_job 1 "$MPIRUN -np 3 \"\$SEED\" default"
    assert_success
    [ "$(grep -c "^ok " <<<"$output")" -eq 6 ]
    refute_output --partial FAIL
    in_job 2 "$MPIRUN -np 3 \"\$SEED\" hash"
    assert_success
    assert_output --partial "layout nshards=2 sharding=hash"
    [ "$(grep -c "^ok " <<<"$output")" -eq 6 ]
    in_job 3 "$MPIRUN -np 3 \"\$SEED\" range"
    assert_success
    assert_output --partial "layout nshards=3 sharding=range"
    [ "$(grep -c "^ok " <<<"$output")" -eq 6 ]
    assert_no_daemons "$WORKDIR"
}

@test "model: 1, 2 and 3 daemons x INT, FLOAT, STRING keys x hash and range, 3 concurrent writers" {
    for n in 1 2 3; do
        in_job $n 'for t in int float string; do for s in hash range; do
                '"$MPIRUN"' -np 3 "$MODEL" --seed '$n'$RANDOM --steps 30 --type $t --sharding $s || exit 1
            done; done'
        assert_success
        [ "$(grep -c '^OK$' <<<"$output")" -eq 6 ]
        refute_output --partial MISMATCH
        assert_output --regexp "type=string sharding=range nshards=$n ranks=3: gets=[1-9][0-9]* lists=[1-9][0-9]* nums=[1-9]"
        # transactions were committed and aborted along the way
        [ "$(grep -o 'commits=[0-9]*' <<<"$output" | cut -d= -f2 | paste -sd+ | bc)" -gt 0 ]
        [ "$(grep -o 'aborts=[0-9]*' <<<"$output" | cut -d= -f2 | paste -sd+ | bc)" -gt 0 ]
    done
    assert_no_daemons "$WORKDIR"
}

@test "model: values larger than one message, long runs, shared keys written by every rank" {
    in_job 2 "$MPIRUN -np 2 \"\$MODEL\" --seed 7 --steps 12 --big --type string &&
              $MPIRUN -np 2 \"\$MODEL\" --seed 8 --steps 10 --big --type int --sharding range &&
              $MPIRUN -np 3 \"\$MODEL\" --seed 9 --steps 120 --type string &&
              $MPIRUN -np 4 \"\$MODEL\" --phase shared --steps 10"
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 4 ]
    [ "$(grep -c 'big_values=1' <<<"$output")" -eq 2 ]
    refute_output --partial MISMATCH
    assert_no_daemons "$WORKDIR"
}

@test "transactions: while one rank commits, readers of 3 shards never see part of a commit" {
    in_job 3 "$MPIRUN -np 3 \"\$MODEL\" --phase atomic --steps 30"
    assert_success
    assert_output --regexp "atomic: [1-9][0-9]* transactions committed while 600 listings read, none mixed"
    refute_output --partial MISMATCH
    assert_no_daemons "$WORKDIR"
}

@test "durability: records acknowledged before a daemon's kill -9 are all there after its restart" {
    in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        '"$NOLEAK"' "$MODEL" --phase ackwrite --ack acked.txt > writer.out 2>&1 &
        writer=$!
        for i in $(seq 100); do [ "$(wc -l < acked.txt 2>/dev/null || echo 0)" -ge 20 ] && break; sleep 0.05; done
        p1=$(cat "$d1/bbd-1.pid")
        kill -9 "$p1"
        echo "daemon 1 killed with $(wc -l < acked.txt) batches acknowledged"
        wait $writer
        cat writer.out
        "$BBD" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 3>ready1 --ready-fd 3 &
        for i in $(seq 200); do grep -q ready ready1 2>/dev/null && break; sleep 0.05; done
        echo "daemon 1 restarted"
        '"$NOLEAK"' "$MODEL" --phase ackverify --ack acked.txt'
    assert_success
    assert_output --partial "daemon 1 killed"
    assert_output --regexp "ackwrite: batch [0-9]+ failed"
    assert_output --partial "daemon 1 restarted"
    assert_output --regexp "ackverify: [0-9]+ acknowledged batches"
    n="$(grep -o 'ackverify: [0-9]*' <<<"$output" | cut -d' ' -f2)"
    [ "$n" -ge 20 ]
    refute_output --partial MISMATCH
    assert_no_daemons "$WORKDIR"
}

@test "durability: an open transaction survives kill -9 of every daemon, invisible until committed" {
    in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        '"$NOLEAK"' "$MODEL" --phase txwrite || exit 1
        p0=$(cat "$d0/bbd-0.pid"); p1=$(cat "$d1/bbd-1.pid")
        kill -9 "$p0" "$p1"
        for p in $p0 $p1; do
            for i in $(seq 200); do [ ! -e /proc/$p ] || grep -q "^[^ ]* ([^)]*) [ZX]" /proc/$p/stat 2>/dev/null && break; sleep 0.05; done
        done
        "$BBD" --job-dir "$d0" --rank 0 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node0 3>ready0 --ready-fd 3 &
        "$BBD" --job-dir "$d1" --rank 1 --nservers 2 --job-id "$PDCBB_JOB_ID" --node node1 3>ready1 --ready-fd 3 &
        for i in $(seq 200); do grep -q ready ready0 2>/dev/null && grep -q ready ready1 2>/dev/null && break; sleep 0.05; done
        echo "daemons restarted"
        '"$NOLEAK"' "$MODEL" --phase txcommit'
    assert_success
    assert_output --partial "txwrite: transaction 50 open with 40 writes"
    assert_output --partial "daemons restarted"
    assert_output --partial "txcommit: invisible after the restart, all 40 visible after the commit"
    assert_no_daemons "$WORKDIR"
}

@test "wire: malformed KV requests get a clear status and the daemon keeps serving" {
    in_job 1 '
        ep="$PDCBB_JOB_DIR/bbd-0.endpoint"; tok="$PDCBB_JOB_DIR/token"
        for c in kvgood kvbadtype kvnan kvnegzero kvlongkey kvnul kvcount kvtrailing kvrecop \
                 kvvaluelen kvmaxtag kvbigtag kvunknown kvtransmode kvtranstag kvlistflags \
                 kvshards kvtoobig kvpartwrap kvpartbig; do
            echo -n "$c: "; "$RAWMSG" "$ep" "$tok" $c
        done
        "$RAWMSG" "$ep" "$tok" good'
    assert_success
    assert_output --partial "kvgood: status PDCBB_OK"
    assert_output --partial "kvbadtype: status PDCBB_ERR_INVAL"
    assert_output --partial "kvnan: status PDCBB_ERR_INVAL"
    assert_output --partial "kvnegzero: status PDCBB_ERR_INVAL"
    assert_output --partial "kvlongkey: status PDCBB_ERR_TOO_BIG"
    assert_output --partial "kvnul: status PDCBB_ERR_INVAL"
    assert_output --partial "kvcount: status PDCBB_ERR_TRUNCATED"
    assert_output --partial "kvtrailing: status PDCBB_ERR_PROTO"
    assert_output --partial "kvrecop: status PDCBB_ERR_PROTO"
    assert_output --partial "kvvaluelen: status PDCBB_ERR_TRUNCATED"
    assert_output --partial "kvmaxtag: status PDCBB_ERR_INVAL"
    assert_output --partial "kvbigtag: status PDCBB_ERR_INVAL"
    assert_output --partial "kvunknown: status PDCBB_ERR_BAD_ID"
    assert_output --partial "kvtransmode: status PDCBB_ERR_INVAL"
    assert_output --partial "kvtranstag: status PDCBB_ERR_INVAL"
    assert_output --partial "kvlistflags: status PDCBB_ERR_INVAL"
    assert_output --partial "kvshards: create status PDCBB_ERR_INVAL"
    assert_output --partial "kvtoobig: status PDCBB_ERR_TOO_BIG"
    # a value's size is bounded (PDCBB_KV_VALUE_MAX) whatever the object allows: before, a
    # SET_PART record of 2^64-1 bytes wrapped the record's size and overflowed the daemon's heap
    assert_output --partial "kvpartwrap: status PDCBB_ERR_TOO_BIG"
    assert_output --partial "kvpartbig: status PDCBB_ERR_TOO_BIG"
    assert_output --regexp "requests [0-9]+ auth_failures 0"
    assert_no_daemons "$WORKDIR"
}
