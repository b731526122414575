#!/usr/bin/env bats
# PMIx discovery under OpenMPI's mpirun: every rank builds the daemon table through PMIx
# Put/Fence/Get, and objects written by one rank are read by another.

load helpers

setup() {
    require_build
    [ -x "$MPI_TOOL" ] || { echo "missing $MPI_TOOL (built with PDCBB_WITH_MPI=ON)" >&2; return 1; }
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "mpirun -np 4 uses the PMIx discovery path across 2 daemons" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- \
        timeout 120 mpirun --oversubscribe -np 4 -x PDCBB_JOB_DIR -x PDCBB_SERVER_DIRS \
        -x PDCBB_JOB_ID -x UCX_WARN_UNUSED_ENV_VARS "$MPI_TOOL" mpi4
    echo "$output"
    assert_success
    for r in 0 1 2 3; do
        assert_output --partial "rank $r of 4: discovery=pmix nservers=2 ok"
    done
    assert_no_daemons "$WORKDIR"
}

@test "under PMIx only local rank 0 reads the endpoint records" {
    # Ranks other than local rank 0 get no job directories: they can only learn the daemons
    # through PMIx.
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- bash -c '
        cat > wrapper.sh <<WRAP
#!/bin/bash
if [ "\$OMPI_COMM_WORLD_LOCAL_RANK" != 0 ]; then unset PDCBB_SERVER_DIRS; export PDCBB_JOB_DIR=/nonexistent; fi
exec "\$@"
WRAP
        chmod +x wrapper.sh
        timeout 120 mpirun --oversubscribe -np 3 -x PDCBB_JOB_DIR -x PDCBB_SERVER_DIRS -x PDCBB_JOB_ID \
            -x UCX_WARN_UNUSED_ENV_VARS ./wrapper.sh "'"$MPI_TOOL"'" pmixonly'
    echo "$output"
    assert_success
    for r in 0 1 2; do
        assert_output --partial "rank $r of 3: discovery=pmix nservers=2 ok"
    done
}
