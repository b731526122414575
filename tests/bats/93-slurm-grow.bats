#!/usr/bin/env bats
# Growing objects and collective create/open on a real local Slurm cluster (3 nodes, the SPANK
# plugin, scripts/slurm-cluster.sh), as MPI programs under srun --mpi=pmix: 6 ranks on 3 nodes
# create containers and objects collectively (one daemon request in all, the same ids on every
# rank, failures on every rank) and grow objects of every placement concurrently.

load helpers
load slurm_helpers

setup_file() {
    pdc_cluster_start
    cp "$BUILD_DIR/tests/pdc_grow" "$SITE/bin/"
    chmod a+rx "$SITE/bin/pdc_grow"
}

teardown_file() {
    pdc_cluster_stop
}

@test "srun --mpi=pmix on 3 nodes: collective create/open with one request, concurrent growth" {
    [ -x "$SITE/bin/pdc_grow" ]
    run_job pdcbbtest "
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
meta() { $SITE/bin/pdcbb stats --json | jq '[.daemons[].kinds.metadata.msgs_recv] | add'; }
before=\$(meta)
timeout 120 srun --mpi=pmix -N3 -n6 $SITE/bin/pdc_grow coll sl only
echo coll_only_exit=\$?
echo metadata_requests=\$(( \$(meta) - before ))
timeout 120 srun --mpi=pmix -N3 -n6 $SITE/bin/pdc_grow coll slf fail
echo coll_exit=\$?
timeout 120 srun --mpi=pmix -N3 -n6 $SITE/bin/pdc_grow grow sg 12 9
echo grow_exit=\$?" -N3 --ntasks-per-node=2 --pdc=capacity=1G
    echo "$OUT"
    grep -q "coll_only_exit=0" <<<"$OUT"
    grep -q "coll_exit=0" <<<"$OUT"
    grep -q "grow_exit=0" <<<"$OUT"
    for r in 0 1 2 3 4 5; do
        assert_equal "$(grep -c "^coll rank $r: ok" <<<"$OUT")" 2
    done
    # Container create 1, object create 1, object open 1, container open 2 (open, info).
    grep -q "^metadata_requests=5$" <<<"$OUT"
    for p in objstatic rstatic dynamic local; do
        grep -Eq "^grow $p: extent [0-9]+, [0-9]+ rows written, [0-9]+ refused shrinks ok" <<<"$OUT"
    done
    no_daemons_left
}
