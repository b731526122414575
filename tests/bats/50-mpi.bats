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
