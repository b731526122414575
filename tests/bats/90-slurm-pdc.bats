#!/usr/bin/env bats
# `#SBATCH --pdc` on a real local Slurm cluster (munged, slurmctld, 3 slurmd started by
# scripts/slurm-cluster.sh, each node's local storage private to it) with the SPANK plugin
# installed through plugstack.conf: submit-time validation, per-job daemons on every node as
# the job user, every kind of job step finding every daemon (one task on any node, a subset,
# consecutive steps, plain srun, a forked process, MPI under srun --mpi=pmix), isolation
# between jobs of different users, a failed daemon start that leaves the node usable and is
# reported as that node's, and no daemon left after any job.

load helpers
load slurm_helpers

setup_file() {
    # No rendezvous_dir in the site file: the default, ~/.pdcbb of the job user.
    pdc_cluster_start
}

teardown_file() {
    pdc_cluster_stop
}

@test "sbatch --help describes --pdc" {
    run sbatch --help
    assert_success
    assert_output --partial "--pdc"
    assert_output --partial "capacity=SIZE"
}

@test "a bad --pdc spec is refused at submission with the key named" {
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=capasity=1G --wrap true
    assert_failure
    assert_output --partial "unknown key 'capasity'"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=capacity=12Q --wrap true
    assert_failure
    assert_output --partial "key 'capacity': bad size '12Q'"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=drain=/etc/pdcbb --wrap true
    assert_failure
    assert_output --partial "key 'drain'"
    assert_output --partial "not under an allowed drain root"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=capacity=3P --wrap true
    assert_failure
    assert_output --partial "capacity"
    run squeue -h
    assert_output ""
}

@test "--pdc-config=FILE: a user YAML file is checked at submission and used by the job" {
    printf 'servers_per_node: 2\ncapasity: 1G\n' > "$SITE/out/bad.yaml"
    chmod 644 "$SITE/out/bad.yaml"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc-config="$SITE/out/bad.yaml" --wrap true
    assert_failure
    assert_output --partial "bad.yaml"
    assert_output --partial "capasity"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc-config="$SITE/out/missing.yaml" --wrap true
    assert_failure
    assert_output --partial "missing.yaml"
    printf 'servers_per_node: 2\ncapacity: 1G\n' > "$SITE/out/good.yaml"
    chmod 644 "$SITE/out/good.yaml"
    run_job pdcbbtest "timeout 60 srun -N1 -n1 $SITE/bin/pdc_meta_tool info" -N1 --pdc-config="$SITE/out/good.yaml"
    echo "$OUT"
    grep -q "nservers=2" <<<"$OUT"
    no_daemons_left
}

@test "sbatch -N3 --pdc: an MPI program under srun --mpi=pmix reaches every node's daemon" {
    run_job pdcbbtest "
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
stat -c 'jobdir %U %a' $LOCAL/pdcbb.\$SLURM_JOB_ID
env | grep '^PDCBB_' | sort
timeout 120 srun --mpi=pmix -N3 -n6 $SITE/bin/pdc_mpi_meta slurmjob
echo srun_exit=\$?" -N3 --ntasks-per-node=2 --pdc=capacity=1G
    echo "$OUT"
    for r in 0 1 2 3 4 5; do
        assert_equal "$(grep -Ec "rank $r of 6: discovery=(daemon|jobtable) nservers=3 ok" <<<"$OUT")" 1
    done
    grep -q "srun_exit=0" <<<"$OUT"
    grep -q "jobdir pdcbbtest 700" <<<"$OUT"
    # The plugin names only this node's directory: nothing lists the other nodes'.
    grep -q "^PDCBB_JOB_DIR=$LOCAL/pdcbb.$JOB$" <<<"$OUT"
    ! grep -q "PDCBB_SERVER_DIRS" <<<"$OUT"
    no_daemons_left
    # No drain was asked for: the epilog removed the node-local data, and the rendezvous.
    no_job_dirs "$JOB"
    [ -z "$(ls -A /home/pdcbbtest/.pdcbb 2>/dev/null)" ]
}

@test "every kind of step finds all three nodes' daemons: one task on the last node, a subset, plain srun, a forked process" {
    # Objects are placed on all daemons (names hash over them, region_static stripes over all).
    run_job pdcbbtest "
T=$SITE/bin/pdc_meta_tool
S=$SITE/bin/pdc_stage_check
timeout 60 srun -N1 -n1 -w n3 \$T 'cont-create c' 'many-objs c o 30' info; echo step1=\$?
timeout 60 srun -N1 -n1 -w n3 \$S write 7; echo step2=\$?
timeout 60 srun -N2 -n2 -w n1,n2 \$S check 7 | grep -c 'ok check: 0 failures'; echo step3=\${PIPESTATUS[0]}
timeout 60 srun -N1 -n1 -w n2 sh -c \"\$T 'obj-open o0' 'obj-open o29' info & wait \\\$!\"; echo step4=\$?
timeout 60 srun --mpi=none -N1 -n1 -w n1 \$S check 7; echo step5=\$?
ls /home/pdcbbtest/.pdcbb/" -N3 --pdc=capacity=1G,placement=region_static
    echo "$OUT"
    for k in 1 2 3 4 5; do grep -q "^step$k=0$" <<<"$OUT"; done
    grep -Eq "per-server: [1-9][0-9]* [1-9][0-9]* [1-9][0-9]*" <<<"$OUT"
    [ "$(grep -Ec 'ok info discovery=(daemon|jobtable) nservers=3' <<<"$OUT")" -eq 2 ]
    grep -q "^2$" <<<"$OUT"        # both tasks of the subset step checked everything
    grep -Eq "^job\.$JOB\.[0-9a-f]{32}$" <<<"$OUT"   # the rendezvous, while the job ran
    no_daemons_left
    no_job_dirs "$JOB"
}

@test "a job drains to a shared directory as its user; the data is read after the job and staged into another" {
    run_job pdcbbtest "timeout 120 srun -N1 -n1 -w n3 $SITE/bin/pdc_stage_check write 21; echo write_exit=\$?" \
        -N3 --pdc=capacity=1G,servers_per_node=2,drain=$SITE/drain
    echo "$OUT"
    grep -q "write_exit=0" <<<"$OUT"
    no_daemons_left
    D="$SITE/drain/pdcbb.$JOB"
    [ -f "$D/COMPLETE" ]
    [ "$(ls "$D/parts" | wc -l)" -eq 6 ]
    # one instance id for the whole job, given at submission, in every part
    [ "$(grep -h '^  instance:' "$D"/parts/*.yaml | sort -u | wc -l)" -eq 1 ]
    grep -Eq '^  instance: "[0-9a-f]{32}"' "$D/manifest.yaml"
    # every drained file belongs to the job user, none to root
    [ -z "$(find "$D" ! -user pdcbbtest)" ]
    no_job_dirs "$JOB"
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" verify "$D"
    echo "$output"
    assert_success
    for o in st-objstatic st-rstatic st-dynamic st-local st-unlimited; do
        runuser -u pdcbbtest -- "$SITE/bin/pdcbb" get "$D" "$o" -o "$SITE/out/got.$JOB.$o"
        LD_LIBRARY_PATH="$SITE/lib" "$SITE/bin/pdc_stage_check" expect 21 "$o" | cmp - "$SITE/out/got.$JOB.$o"
    done
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$D" \
        "$SITE/bin/pdc_stage_check" check 21
    echo "$output"
    assert_success
    # stage it into a 1-node job with 3 daemons
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check check 21; echo check_exit=\$?" \
        -N1 --pdc=capacity=1G,servers_per_node=3,stage_in=$D
    echo "$OUT"
    grep -q "check_exit=0" <<<"$OUT"
    grep -q "ok check: 0 failures" <<<"$OUT"
    no_daemons_left
}

@test "salloc + srun reach every daemon" {
    run timeout 120 runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" UCX_WARN_UNUSED_ENV_VARS=n \
        salloc -N3 --pdc=capacity=1G,servers_per_node=2 \
        srun -N3 -n3 "$SITE/bin/pdc_meta_tool" info "cont-create shared"
    echo "$output"
    assert_success
    [ "$(grep -Ec 'ok info discovery=(daemon|jobtable) nservers=6' <<<"$output")" -eq 3 ]
    no_daemons_left
}

@test "another user's job can neither read a job's directory nor use its daemons" {
    runuser -u pdcbbtest -- sbatch --parsable -o "$SITE/out/%j.out" -N1 -w n1 --pdc=capacity=1G \
        --wrap "sleep 30" > "$SITE/out/jobA"
    A="$(cat "$SITE/out/jobA")"
    hostA="$(node_dir n1)/pdcbb.$A"
    for _ in $(seq 80); do [ -s "$hostA/bbd-0.endpoint" ] && break; sleep 0.25; done
    [ -s "$hostA/bbd-0.endpoint" ]
    cp "$hostA/bbd-0.endpoint" "$SITE/out/epA"
    chmod 644 "$SITE/out/epA"
    dirA="$LOCAL/pdcbb.$A"
    run_job pdcbbtest2 "
ls $dirA && echo LISTED
ls $LOCAL && echo LISTED_ROOT
LD_LIBRARY_PATH=$SITE/lib PDCBB_JOB_DIR=$dirA $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?
$SITE/bin/pdcbb_rawmsg $SITE/out/epA none notoken" -N1 -w n1
    scancel "$A"
    echo "$OUT"
    ! grep -q "LISTED" <<<"$OUT"
    grep -q "Permission denied" <<<"$OUT"
    grep -q "tool_exit=1" <<<"$OUT"
    grep -q "status PDCBB_ERR_AUTH" <<<"$OUT"
    no_daemons_left
}

@test "a job whose daemons cannot start runs, is told why, and leaves the node idle" {
    # 1P fits under the site maximum but not in the node's free space: the prolog refuses it.
    run_job pdcbbtest "LD_LIBRARY_PATH=$SITE/lib $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?
$SITE/bin/pdcbb status; echo status_exit=\$?" -N3 --pdc=capacity=1P,drain=$SITE/drain
    echo "$OUT"
    grep -q "PDCBB_ERR_DISCOVERY" <<<"$OUT"
    grep -q "could not be started" <<<"$OUT"
    grep -q "free" <<<"$OUT"
    grep -q "tool_exit=1" <<<"$OUT"
    grep -q "status_exit=1" <<<"$OUT"
    run sinfo -h -N -o "%N %t"
    echo "$output"
    refute_output --partial "drain"
    for n in n1 n2 n3; do assert_output --partial "$n idle"; done
    no_daemons_left
    # nothing was ever stored: nothing drained, nothing left on the nodes
    [ ! -e "$SITE/drain/pdcbb.$JOB" ]
    no_job_dirs "$JOB"
}

@test "when one node's burst buffer cannot start, a task on another node names that node and its reason" {
    # n2's local storage is a 1 MiB filesystem: only n2's prolog refuses capacity=100M.
    on_node n2 mount -t tmpfs -o size=1m,mode=1733 pdcbb-small "$LOCAL"
    run_job pdcbbtest "timeout 60 srun -N1 -n1 -w n1 $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?" \
        -N3 --pdc=capacity=100M
    on_node n2 umount "$LOCAL"
    echo "$OUT"
    grep -q "tool_exit=1" <<<"$OUT"
    grep -q "PDCBB_ERR_DISCOVERY" <<<"$OUT"
    grep -q "node index 1 (daemons 1-1) has no burst buffer: node n2: " <<<"$OUT"
    grep -q "free" <<<"$OUT"
    ! grep -q "node n1:" <<<"$OUT"
    run sinfo -h -N -o "%N %t"
    refute_output --partial "drain"
    no_daemons_left
    no_job_dirs "$JOB"
}

@test "a node that cannot start in the middle of the tree of daemons: its subtree reaches the root past it, every task names it" {
    # 2 daemons per node, fanout 2: daemon 0 (n1) has children 1 (n1) and 2 (n2), daemon 1
    # has 3 (n2) and 4 (n3), daemon 2 has 5 (n3). n2 fails: daemon 5 finds its parent's node
    # failed and sends to daemon 0; daemons 0 and 1 find their children on n2 missing.
    on_node n2 mount -t tmpfs -o size=1m,mode=1733 pdcbb-small "$LOCAL"
    run_job pdcbbtest "for n in n1 n3; do timeout 60 srun -N1 -n1 -w \$n $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?; done
        srun -N1 -n1 -w n3 bash -c 'cat \$PDCBB_JOB_DIR/bbd-5.log'" \
        -N3 --pdc=capacity=100M,servers_per_node=2,table_fanout=2
    on_node n2 umount "$LOCAL"
    echo "$OUT"
    [ "$(grep -c "tool_exit=1" <<<"$OUT")" -eq 2 ]
    [ "$(grep -c "PDCinit: .*node index 1 (daemons 2-3) has no burst buffer: node n2: " <<<"$OUT")" -eq 2 ]
    grep -q "daemon 2's node failed to start: sending to daemon 0 instead" <<<"$OUT"
    run sinfo -h -N -o "%N %t"
    refute_output --partial "drain"
    no_daemons_left
    no_job_dirs "$JOB"
}
