#!/usr/bin/env bats
# Growing objects and collective create/open (issue 13 items 1 and 4): an object whose first
# dimension is unlimited has a current extent kept by its home daemon, raised by writes and by
# PDCbb_obj_extend from several MPI ranks at once on 1 to 3 daemons and every placement (the
# largest request wins, checked against a model of every rank's actions); the extent survives
# the drain (manifest current_dims, pdcbb ls/get, the PDC API over the drain, stage-in) even
# when nothing was written; bad input gets clear errors; the collective calls give every rank
# the same object with one daemon request in all; the user guide's example runs as printed.

load helpers
use_install_prefix

GROW="$BUILD_DIR/tests/pdc_grow"
GUIDE="$REPO_DIR/docs/USER-GUIDE.md"

setup() {
    setup_workdir "$GROW"
    mkdir -p "$WORKDIR/dest"
    export GROW PDCBB OMPI_MCA_rmaps_base_oversubscribe=1
}

teardown() {
    cleanup_workdir
}

# MPIRUN NP ARGS...: pdc_grow under mpirun, inside a job.
MPIRUN='timeout 300 mpirun -np'

@test "concurrent writers and extenders from 4 ranks on 1, 2 and 3 daemons, every placement, match the model" {
    for nodes in 1 2 3; do
        run timeout 400 "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR/w$nodes" --quiet -- \
            $MPIRUN 4 "$GROW" grow "g$nodes" 40 "$nodes"
        echo "$output"
        assert_success
        for p in objstatic rstatic dynamic local; do
            assert_output --regexp "grow $p: extent [0-9]+, [0-9]+ rows written, [0-9]+ refused shrinks ok"
        done
    done
    # Two daemons per node: the objects' homes and data spread over 4 daemons.
    run timeout 400 "$PDCBB" run --nodes 2 --pdc servers_per_node=2 --workdir "$WORKDIR/w4" \
        --quiet -- $MPIRUN 3 "$GROW" grow g4 40 4
    echo "$output"
    assert_success
    [ "$(grep -c 'refused shrinks ok' <<<"$output")" -eq 4 ]
}

@test "the extent survives the drain: current_dims, pdcbb ls, get and export, the drained API, stage-in" {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --job-id 7101 \
        --drain "$WORKDIR/dest" --quiet -- "$GROW" setup
    echo "$output"
    assert_success
    assert_output --partial "check: ext-only 7x3, written 10x4 (rows 2..4 written) ok"
    D="$WORKDIR/dest/pdcbb.7101"
    # current_dims only for the two unlimited objects, with their extents.
    [ "$(grep -c 'current_dims:' "$D/manifest.yaml")" -eq 2 ]
    grep -q 'current_dims: \[7, 3\]' "$D/manifest.yaml"
    grep -q 'current_dims: \[10, 4\]' "$D/manifest.yaml"
    run "$PDCBB" ls --long "$D"
    echo "$output"
    assert_success
    assert_output --partial "shape 7x3"
    assert_output --partial "shape 10x4"
    # pdcbb get: the whole extent, rows never written as zeros.
    "$PDCBB" get "$D" ext-only -o "$WORKDIR/ext.bin"
    [ "$(stat -c %s "$WORKDIR/ext.bin")" -eq $((7 * 3 * 4)) ]
    [ -z "$(tr -d '\0' < "$WORKDIR/ext.bin")" ]
    "$PDCBB" get "$D" written -o "$WORKDIR/written.bin"
    [ "$(stat -c %s "$WORKDIR/written.bin")" -eq $((10 * 4 * 8)) ]
    # pdcbb export: numpy arrays of the extents' shapes.
    "$PDCBB" export "$D" --format npy -o "$WORKDIR/npy"
    grep -aq "'shape': (7, 3)" "$WORKDIR/npy/ext-only.npy"
    grep -aq "'shape': (10, 4)" "$WORKDIR/npy/written.npy"
    # The PDC API over the drain: the same extents and data.
    run env PDCBB_DRAINED_DIR="$D" "$GROW" check
    echo "$output"
    assert_success
    assert_output --partial "check: ext-only 7x3, written 10x4 (rows 2..4 written) ok"
    # A later job on 3 daemons sees the same extents.
    run timeout 300 "$PDCBB" run --nodes 3 --workdir "$WORKDIR/w2" --job-id 7102 \
        --stage-in "$D" --quiet -- "$GROW" check
    echo "$output"
    assert_success
    assert_output --partial "check: ext-only 7x3, written 10x4 (rows 2..4 written) ok"
    # A drain from before current_dims: the extents' reach (5 rows written, nothing for the
    # object never written).
    cp -r "$D" "$WORKDIR/old"
    sed -i '/current_dims/d' "$WORKDIR/old/manifest.yaml"
    run "$PDCBB" ls --long "$WORKDIR/old"
    assert_success
    assert_output --partial "shape 0x3"
    assert_output --partial "shape 5x4"
    # A current_dims that does not match the object is refused with its reason.
    cp -r "$D" "$WORKDIR/badcur"
    sed -i 's/current_dims: \[7, 3\]/current_dims: [7, 4]/' "$WORKDIR/badcur/manifest.yaml"
    run "$PDCBB" ls "$WORKDIR/badcur"
    assert_failure
    assert_output --partial "current_dims"
}

@test "bad input: shrink, zero rows, a fixed object, wrong and stale ids, NULL dims, a deleted object" {
    run timeout 300 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet -- "$GROW" bad
    echo "$output"
    assert_success
    assert_line "bad: shrink: PDCBB_ERR_INVAL: PDCbb_obj_extend: object 'bad-grow' already has 20 rows: an extent never shrinks (asked 5; nothing changed)"
    assert_line --partial "bad: fixed object: PDCBB_ERR_UNSUPPORTED: PDCbb_obj_extend: object 'bad-fixed' does not grow"
    assert_line --partial "bad: zero rows: PDCBB_ERR_INVAL"
    assert_line --partial "bad: unlimited rows: PDCBB_ERR_INVAL"
    assert_line --partial "bad: container id: PDCBB_ERR_WRONG_TYPE"
    assert_line --partial "bad: bad id: PDCBB_ERR_BAD_ID"
    assert_line --partial "bad: NULL dims: PDCBB_ERR_INVAL"
    assert_line --partial "bad: deleted object: PDCBB_ERR_NOT_FOUND: PDCbb_obj_extend: object 'bad-grow'"
    # A drained job is read-only: extending is refused.
    run timeout 300 "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w2" --job-id 7103 \
        --drain "$WORKDIR/dest" --quiet -- "$GROW" setup
    assert_success
    run env PDCBB_DRAINED_DIR="$WORKDIR/dest/pdcbb.7103" "$GROW" readonly
    echo "$output"
    assert_success
    assert_line --partial "bad: extend a drained object: PDCBB_ERR_READ_ONLY: PDCbb_obj_extend: object 'written'"
}

# metadata_requests FILE: the metadata requests every daemon received, summed.
metadata_requests() {
    jq '[.daemons[].kinds.metadata.msgs_recv] | add' "$1"
}

@test "collective create/open: one daemon request whatever the ranks, the same ids everywhere, failures on every rank" {
    run timeout 400 "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --quiet -- bash -c '
        cd "$WORKDIR" || exit 1
        for np in 1 4; do
            "$PDCBB" stats --json > before$np.json || exit 1
            timeout 300 mpirun -np $np "$GROW" coll only$np only || exit 1
            "$PDCBB" stats --json > after$np.json || exit 1
        done
        timeout 300 mpirun -np 3 "$GROW" coll full fail'
    echo "$output"
    assert_success
    for r in 0 1 2; do assert_line "coll rank $r: ok"; done
    cd "$WORKDIR"
    # Container create (1), object create (1), object open (1), container open (open and
    # info: 2): the same 5 requests from 1 rank as from 4.
    one=$(( $(metadata_requests after1.json) - $(metadata_requests before1.json) ))
    four=$(( $(metadata_requests after4.json) - $(metadata_requests before4.json) ))
    echo "metadata requests: np 1: $one, np 4: $four"
    [ "$one" -eq 5 ]
    [ "$four" -eq 5 ]
}

# The fenced blocks of language $1 in the guide's "Growing arrays" section (not its
# subsections), verbatim.
guide_section_blocks() {
    awk -v lang="$1" '
        /^##+ / {sec = ($0 ~ /^## Growing arrays/)}
        !sec {next}
        !fence && /^```/ {fence = 1; take = ($0 == "```" lang); next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print}' "$GUIDE"
}

@test "USER-GUIDE.md's growing array example builds and runs as printed" {
    mkdir "$WORKDIR/src"
    cd "$WORKDIR/src"
    guide_section_blocks c > grow.c
    guide_section_blocks sh > commands.sh
    guide_section_blocks text > expected
    grep -q 'PDCbb_obj_extend(' grow.c
    grep -q 'PDCbb_obj_create_coll(' grow.c
    [ "$(wc -l < expected)" -eq 2 ]
    run env -u LD_LIBRARY_PATH PATH="$PREFIX/bin:$PATH" \
        PKG_CONFIG_PATH="$(dirname "$(ls "$PREFIX"/lib*/pkgconfig/pdc.pc)")" TMPDIR="$WORKDIR" \
        timeout 300 bash -e commands.sh
    echo "$output"
    assert_success
    while IFS= read -r line; do
        assert_line "$line"
    done < expected
    # Every rank's extends succeeded (none was refused as a shrink).
    refute_output --partial "extend:"
}
