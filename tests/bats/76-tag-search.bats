#!/usr/bin/env bats
# Tag search: PDC_Client_query_kvtag with patterns and the DART calls (insert, search, delete
# object references) against real daemons over UCX and LMDB, checked against a brute-force model
# (tests/progs/pdc_tag_search_model.c) over 2 and 3 daemons; the indexes after a restart of
# every daemon; bad input; and the bench's smoke run.

load helpers

MODEL="$BUILD_DIR/tests/pdc_tag_search_model"
BENCH="$BUILD_DIR/bench/pdc_tag_bench"

setup() {
    setup_workdir "$MODEL" "$BENCH"
    export MODEL BENCH BBD BUILD_DIR
}

teardown() {
    cleanup_workdir
}

# Every daemon of N held objects of the model run in $output.
assert_homes() {
    local n=$1 s
    for ((s = 0; s < n; s++)); do
        grep -Eq "^summary .*homes=.*\b$s:[1-9]" <<<"$output" ||
            { echo "daemon $s held no object of the model" >&2; return 1; }
    done
}

# A search sees every object of the job: one model run per job.
@test "model: 3 seeds of random tags and references over 2 daemons, every kind of match" {
    for s in 1 2 3; do
        in_job 2 '"$MODEL" --seed '$s' --objects 64 --ops 1500 --queries 160'
        assert_success
        assert_line OK
        refute_output --partial MISMATCH
        assert_homes 2
        # The queries found things: not a model of empty answers.
        [ "$(grep -o 'hits=[0-9]*' <<<"$output" | cut -d= -f2)" -gt 100 ]
        assert_no_daemons "$WORKDIR"
    done
}

@test "model: 2 seeds over 3 daemons" {
    for s in 11 12; do
        in_job 3 '"$MODEL" --seed '$s' --objects 96 --ops 2000 --queries 160'
        assert_success
        assert_line OK
        assert_homes 3
        assert_no_daemons "$WORKDIR"
    done
}

@test "the checker fails on a wrong answer" {
    in_job 2 '"$MODEL" --seed 5 --objects 32 --ops 400 --queries 40 --inject-mismatch'
    assert_failure
    assert_output --partial MISMATCH
}

@test "indexes survive a restart of every daemon (kill -9)" {
    in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        "$MODEL" --seed 21 --objects 64 --ops 1500 --phase write || exit 1
        kill -9 "$(cat "$d0/bbd-0.pid")" "$(cat "$d1/bbd-1.pid")"
        sleep 0.5
        r=0
        for d in "$d0" "$d1"; do
            "$BBD" --job-dir "$d" --rank $r --nservers 2 --job-id "$PDCBB_JOB_ID" --node node$r 3>"ready$r" --ready-fd 3 &
            r=$((r + 1))
        done
        for i in $(seq 200); do grep -q ready ready0 2>/dev/null && grep -q ready ready1 2>/dev/null && break; sleep 0.05; done
        "$MODEL" --seed 21 --objects 64 --ops 1500 --queries 160 --phase check
    '
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
    refute_output --partial MISMATCH
    assert_homes 2
    assert_no_daemons "$WORKDIR"
}

@test "bad input gets a clear error and the daemons keep serving" {
    in_job 2 '"$MODEL" --bad-inputs'
    assert_success
    refute_output --partial WRONG
    assert_line --regexp "^bad search key pattern '\*': PDCBB_ERR_INVAL: .*empty or only '\*'"
    assert_line --regexp "^bad search '\*=\*': PDCBB_ERR_INVAL: "
    assert_line --regexp "^bad search without '=': PDCBB_ERR_INVAL: .*not KEY=VALUE"
    assert_line --regexp "^bad insert key of 241 bytes: PDCBB_ERR_TOO_BIG: .*longer than 240"
    assert_line --regexp "^bad insert NULL key: PDCBB_ERR_INVAL: .*NULL or empty"
    assert_line --regexp "^bad kvtag name '\*': PDCBB_ERR_INVAL: .*empty or only '\*'"
    assert_line --regexp "^bad kvtag name of 1099 bytes: PDCBB_ERR_TOO_BIG: "
    assert_line --regexp "^bad delete a reference never inserted: PDCBB_ERR_NOT_FOUND: .*no reference 'never=there'"
    assert_line OK
}

@test "bad wire input to a daemon is refused with a status, and it keeps serving" {
    # The client checks first; a daemon must refuse the same on its own (another client may not).
    in_job 1 '
        for c in dartstar dartlong dartbadtype tagsearchbadmode tagsearchstar good; do
            echo -n "$c: "; "$BUILD_DIR/tests/pdcbb_rawmsg" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" $c | head -1
        done'
    assert_success
    assert_line "dartstar: status PDCBB_ERR_INVAL"
    assert_line "dartlong: status PDCBB_ERR_TOO_BIG"
    assert_line "dartbadtype: status PDCBB_ERR_INVAL"
    assert_line "tagsearchbadmode: status PDCBB_ERR_INVAL"
    assert_line "tagsearchstar: status PDCBB_ERR_INVAL"
    assert_line "good: status PDCBB_OK"
}

@test "bench smoke run (PDCBB_BENCH_QUICK=1) over 2 daemons" {
    in_job 2 'PDCBB_BENCH_QUICK=1 "$BENCH"'
    assert_success
    for k in value_exact value_prefix value_suffix value_infix name_exact name_prefix name_suffix name_infix; do
        assert_line --regexp "^RESULT name=kvtag_$k count=2000 daemons=2 queries=10 "
        assert_line --regexp "^RESULT name=dart_$k count=2000 daemons=2 queries=10 "
    done
    assert_line --regexp "^RESULT name=tag_put count=2000 daemons=2 "
    assert_no_daemons "$WORKDIR"
}

# Tag changes reach the index lazily, through a log (bbd/bbd_tagidx.c): a search reads the index
# and the log. PDCBB_TAGIDX_IDLE=0 keeps idle daemons from applying the log and
# PDCBB_TAGIDX_SEARCH_BATCH sets how much of it each search applies first (0: nothing), so the
# searches below see tag puts, overwrites and deletes still in the log, or in the index with
# their removals still in the log.
@test "lazy index: searches see tag changes still in the log (never applied, or a little per search)" {
    for b in 0 3; do
        PDCBB_TAGIDX_IDLE=0 PDCBB_TAGIDX_SEARCH_BATCH=$b \
            in_job 2 '"$MODEL" --seed 3'$b' --objects 64 --ops 1500 --queries 160'
        assert_success
        assert_line OK
        refute_output --partial MISMATCH
        assert_homes 2
        grep -q "applied by searches only (PDCBB_TAGIDX_IDLE=0)" "$WORKDIR"/node0/*/bbd-0.log
        assert_no_daemons "$WORKDIR"
    done
}

@test "lazy index: kill -9 with tag changes in the log, restart, searches are right" {
    PDCBB_TAGIDX_IDLE=0 PDCBB_TAGIDX_SEARCH_BATCH=0 in_job 2 '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        "$MODEL" --seed 41 --objects 64 --ops 1500 --phase write || exit 1
        kill -9 "$(cat "$d0/bbd-0.pid")" "$(cat "$d1/bbd-1.pid")"
        sleep 0.5
        r=0
        # Restarted as a job would (idle application on).
        for d in "$d0" "$d1"; do
            env -u PDCBB_TAGIDX_IDLE -u PDCBB_TAGIDX_SEARCH_BATCH \
                "$BBD" --job-dir "$d" --rank $r --nservers 2 --job-id "$PDCBB_JOB_ID" --node node$r 3>"ready$r" --ready-fd 3 &
            r=$((r + 1))
        done
        for i in $(seq 200); do grep -q ready ready0 2>/dev/null && grep -q ready ready1 2>/dev/null && break; sleep 0.05; done
        "$MODEL" --seed 41 --objects 64 --ops 1500 --queries 160 --phase check
    '
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
    refute_output --partial MISMATCH
    assert_homes 2
    # The restarted daemons found the changes the killed ones had not applied.
    grep -q "logged tag changes to apply (left by the previous run)" "$WORKDIR"/node0/*/bbd-0.log
    grep -q "logged tag changes to apply (left by the previous run)" "$WORKDIR"/node1/*/bbd-1.log
    assert_no_daemons "$WORKDIR"
}

@test "lazy index: the log is bounded: past PDCBB_TAGIDX_LOG_MAX each change applies the oldest" {
    # A daemon never idle (PDCBB_TAGIDX_IDLE=0) and never searched (batch 0): the log grows
    # with every change unless bounded. kill -9 keeps it as it was, and the restarted daemon
    # says how long it is; the searches after the restart are right either way.
    for max in 50 ""; do
        IN_JOB_SUBDIR=/max$max PDCBB_TAGIDX_LOG_MAX=$max PDCBB_TAGIDX_IDLE=0 PDCBB_TAGIDX_SEARCH_BATCH=0 in_job 1 '
            d="$PDCBB_JOB_DIR"
            "$MODEL" --seed 61 --objects 64 --ops 1500 --phase write || exit 1
            kill -9 "$(cat "$d/bbd-0.pid")"
            sleep 0.5
            "$BBD" --job-dir "$d" --rank 0 --nservers 1 --job-id "$PDCBB_JOB_ID" --node node0 3>ready --ready-fd 3 &
            for i in $(seq 200); do grep -q ready ready 2>/dev/null && break; sleep 0.05; done
            "$MODEL" --seed 61 --objects 64 --ops 1500 --queries 160 --phase check
            sed -n "s/.*tag index: \([0-9]*\) logged tag changes to apply.*/logged \1/p" "$d"/bbd-0.log'
        assert_success
        [ "$(grep -c '^OK$' <<<"$output")" -eq 2 ]
        refute_output --partial MISMATCH
        n=$(sed -n 's/^logged //p' <<<"$output")
        if [ -n "$max" ]; then
            [ "$n" -ge 40 ] && [ "$n" -le 52 ]
        else
            [ "$n" -gt 200 ]
        fi
        assert_no_daemons "$WORKDIR/max$max"
    done
}

@test "lazy index: a job drained with tag changes in the log answers tag searches the same" {
    mkdir -p "$WORKDIR/dest"
    PDCBB_TAGIDX_IDLE=0 PDCBB_TAGIDX_SEARCH_BATCH=0 \
        in_job 2 '"$MODEL" --seed 51 --objects 64 --ops 1500 --queries 160' \
        --job-id 7651 --drain "$WORKDIR/dest"
    assert_success
    assert_line OK
    [ -f "$WORKDIR/dest/pdcbb.7651/COMPLETE" ]
    PDCBB_DRAINED_DIR="$WORKDIR/dest/pdcbb.7651" run "$MODEL" --seed 51 --objects 64 --ops 1500 \
        --queries 160 --drained
    echo "$output"
    assert_success
    assert_line OK
    refute_output --partial MISMATCH
}

# A client of node $2 of the running job: its job directory and node name.
as_node_client() {
    echo "unset PDCBB_SERVER_DIRS; export PDCBB_JOB_DIR=\"\$(echo \"\$WORKDIR\"/node$1/pdcbb.*)\" PDCBB_NODE_NAME=node$1"
}

@test "a tag search is one request to the client's node's daemon: 9 daemons, fanout 2, every daemon searched once through the tree" {
    in_job 9 '
        '"$(as_node_client 5)"'
        tool="$BUILD_DIR/tests/pdc_meta_tool"
        args=("cont-create c" "many-objs c o 40")
        for i in $(seq 0 39); do args+=("tag-put obj o$i color string red"); done
        "$tool" "${args[@]}" >/dev/null || exit 1
        "$BUILD_DIR/cli/pdcbb" stats --json > before.json
        "$tool" "tag-search color red" || exit 1
        "$BUILD_DIR/cli/pdcbb" stats --json > after.json
        jq -r "[.daemons[] | .kinds.query.msgs_recv] | @tsv" before.json
        jq -r "[.daemons[] | .kinds.query.msgs_recv] | @tsv" after.json' --pdc table_fanout=2
    assert_success
    assert_output --partial "ok tag-search n=40 "
    # Query-kind messages received per daemon: none before. After: on each daemon the one
    # TAG_SEARCH (the client's to daemon 5, the rest forwarded down the tree rooted there) and
    # the TAG_QUERY of the tool's PDCobj_get_name, plus, on the 4 daemons with children in that
    # tree (virtual ranks 0-3: daemons 5-8), their 2 children's answers.
    assert_line "$(printf '0\t0\t0\t0\t0\t0\t0\t0\t0')"
    assert_line "$(printf '2\t2\t2\t2\t2\t4\t4\t4\t4')"
    assert_no_daemons "$WORKDIR"
}

@test "a tag search through the tree with a daemon killed fails with a clear error, and the next ones still do once it is back" {
    in_job 5 '
        '"$(as_node_client 0)"'
        tool="$BUILD_DIR/tests/pdc_meta_tool"
        args=("cont-create c" "many-objs c o 20")
        for i in $(seq 0 19); do args+=("tag-put obj o$i color string red"); done
        "$tool" "${args[@]}" >/dev/null || exit 1
        d3="$(echo "$WORKDIR"/node3/pdcbb.*)"
        pid="$(cat "$d3/bbd-3.pid")"; kill -9 "$pid"
        for i in $(seq 200); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
        start=$(date +%s)
        "$tool" "tag-search color red"; echo "search exit=$? after $(( $(date +%s) - start )) s"
        grep -h "TAG_SEARCH through the tree: daemon 3" "$WORKDIR"/node*/pdcbb.*/bbd-*.log | head -1
        "$BBD" --job-dir "$d3" --rank 3 --nservers 5 --job-id "$PDCBB_JOB_ID" --node node3 \
            3>"$d3/ready" --ready-fd 3 &
        for i in $(seq 200); do grep -q ready "$d3/ready" 2>/dev/null && break; sleep 0.05; done
        "$tool" "tag-search color red"' --pdc table_fanout=2
    assert_success
    assert_output --regexp "search exit=1 after [0-9] s"
    assert_output --partial "TAG_SEARCH through the tree: daemon 3"
    assert_output --partial "ok tag-search n=20 "
    assert_no_daemons "$WORKDIR"
}
