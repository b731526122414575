#!/usr/bin/env bats
# `#SBATCH --pdc` on a real local Slurm cluster (munged, slurmctld, 2 slurmd started by
# scripts/slurm-cluster.sh) with the SPANK plugin installed through plugstack.conf: submit-time
# validation, per-job daemons on every node as the job user, PMIx discovery under
# srun --mpi=pmix, serial clients, isolation between jobs of different users, a failed daemon
# start that leaves the node usable, and no daemon left after any job.

load helpers

setup_file() {
    require_build
    # Not under BATS_TMPDIR: munge and the job user need every parent directory traversable.
    BASE="$(mktemp -d /tmp/pdcbb-bats-slurm.XXXXXX)"
    chmod 755 "$BASE"
    export BASE CL="$BASE/cluster" SITE="$BASE/site"
    mkdir -p "$SITE/bin" "$SITE/lib" "$SITE/drain" "$SITE/local" "$SITE/out"
    # The job user must reach what it runs: copies in a world-readable place.
    cp "$BBD" "$TOOL" "$MPI_TOOL" "$RAWMSG" "$PDCBB" "$BUILD_DIR/tests/pdc_stage_check" "$SITE/bin/"
    cp -a "$BUILD_DIR"/client/libpdc.so* "$SITE/lib/"
    chmod -R a+rX "$SITE"
    chmod 1777 "$SITE/drain" "$SITE/out"
    cat > "$SITE/site.yaml" <<YAML
local_root: $SITE/local/%n
daemon_path: $SITE/bin/pdc_bbd
listen_address: 127.0.0.1
ucx_net_devices: lo
max_capacity: 2P
drain_roots: [$SITE/drain]
ready_timeout: 20
YAML
    echo "required $BUILD_DIR/spank_plugin/spank_pdc.so config=$SITE/site.yaml" > "$SITE/plugstack.conf"
    "$REPO_DIR/scripts/slurm-cluster.sh" start --dir "$CL" --nodes 2 --plugstack "$SITE/plugstack.conf" >&3
    eval "$("$REPO_DIR/scripts/slurm-cluster.sh" env --dir "$CL")"
    export SLURM_CONF
}

teardown_file() {
    "$REPO_DIR/scripts/slurm-cluster.sh" stop --dir "$CL" >&3 || true
    left="$(pgrep -f "pdc_bbd .*--job-dir $SITE/" || true)"
    [ -n "$left" ] && kill -9 $left
    rm -rf "$BASE"
    [ -z "$left" ]
}

# Submit a batch script as a user and wait for the job to end; sets JOB and OUT.
run_job() { # user script-body [sbatch options...]
    local user=$1 body=$2
    shift 2
    local script="$SITE/out/job.$RANDOM.sh"
    printf '#!/bin/bash\nexport UCX_WARN_UNUSED_ENV_VARS=n LD_LIBRARY_PATH=%s\n%s\n' "$SITE/lib" "$body" > "$script"
    chmod 755 "$script"
    JOB="$(runuser -u "$user" -- sbatch --parsable -o "$SITE/out/%j.out" "$@" "$script")"
    for _ in $(seq 240); do
        squeue -h -j "$JOB" 2>/dev/null | grep -q . || break
        sleep 0.25
    done
    OUT="$(cat "$SITE/out/$JOB.out" 2>/dev/null || true)"
}

no_daemons_left() {
    for _ in $(seq 40); do
        [ -z "$(pgrep -f "pdc_bbd .*--job-dir $SITE/" || true)" ] && return 0
        sleep 0.25
    done
    echo "pdc_bbd still running: $(pgrep -af "pdc_bbd .*--job-dir $SITE/")" >&2
    return 1
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

@test "sbatch -N2 --pdc: an MPI client writes on one node and reads on the other through PMIx" {
    run_job pdcbbtest "
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
stat -c 'jobdir %U %a' $SITE/local/n1/pdcbb.\$SLURM_JOB_ID
timeout 120 srun --mpi=pmix -N2 -n4 $SITE/bin/pdc_mpi_meta slurmjob
echo srun_exit=\$?" -N2 --ntasks-per-node=2 --pdc=capacity=1G
    echo "$OUT"
    for r in 0 1 2 3; do
        assert_equal "$(grep -c "rank $r of 4: discovery=pmix nservers=2 ok" <<<"$OUT")" 1
    done
    grep -q "srun_exit=0" <<<"$OUT"
    grep -q "jobdir pdcbbtest 700" <<<"$OUT"
    no_daemons_left
    # No drain was asked for: the epilog removed the node-local data.
    [ ! -e "$SITE/local/n1/pdcbb.$JOB" ] && [ ! -e "$SITE/local/n2/pdcbb.$JOB" ]
}

@test "a job drains to a shared directory as its user; the data is read after the job and staged into another" {
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 21; echo write_exit=\$?" \
        -N2 --pdc=capacity=1G,servers_per_node=2,drain=$SITE/drain
    echo "$OUT"
    grep -q "write_exit=0" <<<"$OUT"
    no_daemons_left
    D="$SITE/drain/pdcbb.$JOB"
    [ -f "$D/COMPLETE" ]
    [ "$(ls "$D/parts" | wc -l)" -eq 4 ]
    # one instance id for the whole job, given at submission, in every part
    [ "$(grep -h '^  instance:' "$D"/parts/*.yaml | sort -u | wc -l)" -eq 1 ]
    grep -Eq '^  instance: "[0-9a-f]{32}"' "$D/manifest.yaml"
    # every drained file belongs to the job user, none to root
    [ -z "$(find "$D" ! -user pdcbbtest)" ]
    [ ! -e "$SITE/local/n1/pdcbb.$JOB" ] && [ ! -e "$SITE/local/n2/pdcbb.$JOB" ]
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

@test "salloc + srun, and a serial program without PMIx, reach every daemon" {
    run timeout 120 runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" UCX_WARN_UNUSED_ENV_VARS=n \
        salloc -N2 --pdc=capacity=1G,servers_per_node=2 \
        srun -N2 -n2 "$SITE/bin/pdc_meta_tool" info "cont-create shared"
    echo "$output"
    assert_success
    [ "$(grep -c 'ok info discovery=environment nservers=4' <<<"$output")" -eq 2 ]
    run_job pdcbbtest "timeout 60 srun -N1 -n1 $SITE/bin/pdc_meta_tool 'cont-create serial' 'many-objs serial o 20' info" -N2 --pdc
    echo "$OUT"
    grep -q "nservers=2" <<<"$OUT"
    grep -Eq "per-server: [1-9][0-9]* [1-9][0-9]*" <<<"$OUT"
    no_daemons_left
}

@test "another user's job can neither read a job's directory nor use its daemons" {
    runuser -u pdcbbtest -- sbatch --parsable -o "$SITE/out/%j.out" -N1 --pdc=capacity=1G \
        --wrap "sleep 30" > "$SITE/out/jobA"
    A="$(cat "$SITE/out/jobA")"
    dirA="$SITE/local/n1/pdcbb.$A"
    for _ in $(seq 80); do [ -s "$dirA/bbd-0.endpoint" ] && break; sleep 0.25; done
    [ -s "$dirA/bbd-0.endpoint" ]
    cp "$dirA/bbd-0.endpoint" "$SITE/out/epA"
    chmod 644 "$SITE/out/epA"
    run_job pdcbbtest2 "
ls $dirA && echo LISTED
LD_LIBRARY_PATH=$SITE/lib PDCBB_JOB_DIR=$dirA $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?
$SITE/bin/pdcbb_rawmsg $SITE/out/epA none notoken" -N1
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
$SITE/bin/pdcbb status; echo status_exit=\$?" -N2 --pdc=capacity=1P,drain=$SITE/drain
    echo "$OUT"
    grep -q "PDCBB_ERR_DISCOVERY" <<<"$OUT"
    grep -q "could not be started" <<<"$OUT"
    grep -q "free" <<<"$OUT"
    grep -q "tool_exit=1" <<<"$OUT"
    grep -q "status_exit=1" <<<"$OUT"
    run sinfo -h -N -o "%N %t"
    echo "$output"
    refute_output --partial "drain"
    assert_output --partial "n1 idle"
    assert_output --partial "n2 idle"
    no_daemons_left
    # nothing was ever stored: nothing drained, nothing left on the nodes
    [ ! -e "$SITE/drain/pdcbb.$JOB" ]
    [ ! -e "$SITE/local/n1/pdcbb.$JOB" ] && [ ! -e "$SITE/local/n2/pdcbb.$JOB" ]
}
