#!/usr/bin/env bats
# MPI programs under OpenMPI's mpirun (a real PMIx launcher): every rank learns the whole
# table of daemons from a daemon of its own node (JOB_TABLE), whatever the launcher tells it,
# and objects written by one rank are read by another.

load helpers

setup() {
    require_build
    [ -x "$MPI_TOOL" ] || { echo "missing $MPI_TOOL (built with PDCBB_WITH_MPI=ON)" >&2; return 1; }
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "mpirun -np 4: every rank reaches both daemons through its node's daemon" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- \
        timeout 120 mpirun --oversubscribe -np 4 -x PDCBB_JOB_DIR \
        -x PDCBB_JOB_ID -x UCX_WARN_UNUSED_ENV_VARS "$MPI_TOOL" mpi4
    echo "$output"
    assert_success
    for r in 0 1 2 3; do
        assert_output --regexp "rank $r of 4: discovery=(daemon|jobtable) nservers=2 ok"
    done
    assert_no_daemons "$WORKDIR"
}

@test "ranks that see only their own node's job directory find every daemon" {
    # As on a real cluster: each rank's PDCBB_JOB_DIR is its own node's directory, and no
    # variable lists the others.
    run "$PDCBB" run --nodes 3 --workdir "$WORKDIR" --quiet -- bash -c '
        cat > "$WORKDIR/pernode.sh" <<WRAP
#!/bin/bash
unset PDCBB_SERVER_DIRS
export PDCBB_JOB_DIR="$WORKDIR/node\$(( OMPI_COMM_WORLD_RANK % 3 ))/pdcbb.\$PDCBB_JOB_ID"
export PDCBB_NODE_NAME="node\$(( OMPI_COMM_WORLD_RANK % 3 ))"
exec "\$@"
WRAP
        chmod +x "$WORKDIR/pernode.sh"
        timeout 120 mpirun --oversubscribe -np 3 -x PDCBB_JOB_ID -x WORKDIR \
            -x UCX_WARN_UNUSED_ENV_VARS "$WORKDIR/pernode.sh" "'"$MPI_TOOL"'" pernode'
    echo "$output"
    assert_success
    for r in 0 1 2; do
        assert_output --regexp "rank $r of 3: discovery=(daemon|jobtable) nservers=3 ok"
    done
}

@test "6 ranks race on the same tags of the same named containers: every delete succeeds, as in PDC" {
    # As PDC's cont_tags run with several ranks: each rank creates containers of the same names
    # (the same containers), puts, reads and deletes the same tags; all but one delete a tag
    # that is already gone, which succeeds in PDC, and a tag read after another rank deleted it
    # reads as deleted (success, value NULL, size 0), never as an error.
    local tags="$BUILD_DIR/tests/pdc_mpi_tags"
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- \
        timeout 120 mpirun --oversubscribe -np 6 -x PDCBB_JOB_DIR -x PDCBB_JOB_ID \
        -x UCX_WARN_UNUSED_ENV_VARS "$tags" 20
    echo "$output"
    assert_success
    for r in 0 1 2 3 4 5; do
        assert_line --regexp "^rank $r of 6: rounds=20 deletes=40 read-deleted=[0-9]+ ok$"
    done
    # Each tag is deleted by all 6 ranks after the last put of the round: at most one delete
    # finds it (before the fix, the others failed with "has no tag").
    refute_output --partial "failed"
    assert_no_daemons "$WORKDIR"
}
