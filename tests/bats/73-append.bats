#!/usr/bin/env bats
# Append (issue 13 item 3): PDCbb_obj_append adds the rows of one object at the end of a growing
# object inside the burst buffer. On 1, 2 and 3 daemons and every placement of both objects the
# result matches a model (remembered placements with overlapping writes, repeated appends, a
# growing source with an extent); concurrent appends from 4 MPI ranks land in disjoint row
# ranges that add up; the daemons carry the data (the "append" counters of `pdcbb stats`) while
# the client's data requests stay at zero; the drain holds the appended rows and extent; bad
# input gets clear errors; the user guide's example runs as printed.

load helpers
use_install_prefix

AP="$BUILD_DIR/tests/pdc_append"
GUIDE="$REPO_DIR/docs/USER-GUIDE.md"

setup() {
    setup_workdir "$AP"
    export AP PDCBB OMPI_MCA_rmaps_base_oversubscribe=1
}

teardown() {
    cleanup_workdir
}

@test "dst += src += C on 1, 2 and 3 daemons, every placement of dst and src, match the model" {
    for nodes in 1 2 3; do
        run timeout 400 "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR/w$nodes" --quiet -- \
            "$AP" matrix "m$nodes"
        echo "$output"
        assert_success
        for d in objstatic rstatic dynamic local; do
            for s in objstatic rstatic dynamic local; do
                assert_line "matrix $d $s: extent 46 ok"
            done
        done
    done
}

@test "concurrent appends from 4 ranks into one dst: disjoint row ranges, every row once, extent the sum" {
    command -v mpirun >/dev/null || { echo "mpirun is required" >&2; return 1; }
    for nodes in 2 3; do
        run timeout 400 "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR/w$nodes" --quiet -- \
            timeout 300 mpirun -np 4 "$AP" conc "c$nodes" 3
        echo "$output"
        assert_success
        # Ranks append 2, 3, 4 and 5 rows, 3 times each: 42 rows.
        for p in objstatic rstatic dynamic local; do
            assert_line "conc $p: 4 ranks x 3 appends, extent 42 ok"
        done
    done
}

# sum_delta KIND FIELD: the growth of a counter summed over the daemons (after.json - before.json).
sum_delta() {
    jq -n --slurpfile a after.json --slurpfile b before.json \
        "([\$a[0].daemons[].kinds.$1.$2] | add) - ([\$b[0].daemons[].kinds.$1.$2] | add)"
}

@test "the daemons carry the copy: append counters grow by the bytes, the client's data requests do not" {
    cd "$WORKDIR"
    run timeout 400 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet -- bash -ec '
        "$AP" bigw s 16
        "$PDCBB" stats --json > before.json
        "$AP" bigapp s
        "$PDCBB" stats --json > after.json
        "$AP" bigcheck s'
    echo "$output"
    assert_success
    assert_line "bigcheck: extent 256 rows, 16 MiB ok"
    mib=$((16 << 20))
    for f in bytes_recv bytes_sent; do
        echo "append $f: $(sum_delta append $f), data $f: $(sum_delta data $f)"
    done
    # Daemon to daemon: the 16 MiB went out of one daemon and into another.
    [ "$(sum_delta append bytes_sent)" -ge "$mib" ]
    [ "$(sum_delta append bytes_recv)" -ge "$mib" ]
    # The client: no region data request at all (reads and writes are the "data" kind), and its
    # append requests are small control messages (below 64 KiB in all).
    [ "$(sum_delta data msgs_recv)" -eq 0 ]
    [ "$(sum_delta data bytes_sent)" -eq 0 ]
    # src lives on one daemon, dst on the other here: what one daemon sent, the other received.
    jq -e '[.daemons[].kinds.append.bytes_sent] | max >= 16777216' after.json
    jq -e '[.daemons[].kinds.append.bytes_recv] | max >= 16777216' after.json
    client=$(( $(sum_delta append bytes_recv) - $(jq '[.daemons[].kinds.append.bytes_recv] | max' after.json) ))
    echo "append bytes received by the daemon holding src (the client's requests, the acks): $client"
    [ "$client" -lt 65536 ]
}

@test "bad input: type, trailing dims, ndim, a fixed dst, itself, bad ids, a container, a deleted src" {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet -- "$AP" bad
    echo "$output"
    assert_success
    assert_line "bad: int32 onto int64: PDCBB_ERR_WRONG_TYPE ok"
    assert_line "bad: 6 columns onto 4: PDCBB_ERR_BAD_REGION ok"
    assert_line "bad: 3 dims onto 2: PDCBB_ERR_BAD_REGION ok"
    assert_line "bad: onto a fixed object: PDCBB_ERR_UNSUPPORTED ok"
    assert_line "bad: onto itself: PDCBB_ERR_INVAL ok"
    assert_line "bad: src id 0: PDCBB_ERR_BAD_ID ok"
    assert_line "bad: dst id 987654321: PDCBB_ERR_BAD_ID ok"
    assert_line "bad: a container as src: PDCBB_ERR_WRONG_TYPE ok"
    assert_line "bad: a deleted src: PDCBB_ERR_NOT_FOUND ok"
    assert_line "bad: ok"
}

# The fenced blocks of language $1 in the guide's "Appending one array to another", verbatim.
guide_blocks() {
    awk -v lang="$1" '
        /^##+ / {sec = ($0 ~ /^### Appending one array to another/)}
        !sec {next}
        !fence && /^```/ {fence = 1; take = ($0 == "```" lang); next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print}' "$GUIDE"
}

@test "USER-GUIDE.md's append example runs as printed; the drain holds the rows and the extent" {
    mkdir "$WORKDIR/src"
    cd "$WORKDIR/src"
    guide_blocks c > append.c
    guide_blocks sh > commands.sh
    guide_blocks text > expected
    grep -q 'PDCbb_obj_append(' append.c
    [ "$(wc -l < expected)" -eq 2 ]
    run env -u LD_LIBRARY_PATH PATH="$PREFIX/bin:$PATH" \
        PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")" TMPDIR="$WORKDIR" \
        timeout 300 bash -e commands.sh
    echo "$output"
    assert_success
    while IFS= read -r line; do
        assert_line "$line"
    done < expected
    refute_output --partial "append:"
    D="$WORKDIR/src/out/pdcbb.73"
    grep -q 'current_dims: \[60, 1024\]' "$D/manifest.yaml"
    # The drained API: the extent, every value, and an append refused (READ_ONLY).
    run env PDCBB_DRAINED_DIR="$D" "$AP" drained
    echo "$output"
    assert_success
    assert_line "bad: append over a drain: PDCBB_ERR_READ_ONLY ok"
    assert_line "drained: arrayB 60x1024 ok"
}
