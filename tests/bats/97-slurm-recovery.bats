#!/usr/bin/env bats
# Recovery on a real local Slurm cluster (3 slurmd, prolog and epilog as root, each node's
# local storage private to it): local_root is root's with mode 1733, so the job user drains
# (in a job step on the node) and removes its own stranded job directory with `pdcbb drain`; a
# directory another user planted under the job's name is moved aside, never used; `pdcbb admin
# stranded`, run on the node, lists what is left (owner, job, size, age, why) and removes it;
# a daemon that died during the job is recorded and its log is kept with the drain.

load helpers
load slurm_helpers

setup_file() {
    pdc_cluster_start "max_capacity: 10G"
    mkdir -m 755 "$SITE/drain/locked"    # under drain_roots, but not writable by the job user
}

teardown_file() {
    pdc_cluster_stop
}

stranded() { # pdcbb admin stranded on node n1 (as root, in its namespace) with the site file
    on_node n1 "$PDCBB" admin stranded --site-config "$SITE/site.yaml" --node n1 "$@"
}

@test "a failed drain strands the job directory; the job user drains it and it is removed" {
    # a destination the job user cannot write is refused before the job runs...
    run runuser -u pdcbbtest -- sbatch -N1 -w n1 --pdc=capacity=1G,drain=$SITE/drain/locked --wrap true
    assert_failure
    assert_output --partial "drain destination $SITE/drain/locked is not writable by pdcbbtest"
    # ...so the job takes write permission away from its own drain directory: the drain fails
    # at the end
    run_job pdcbbtest "timeout 60 srun -N1 -n1 $SITE/bin/pdc_stage_check write 5; echo tool_exit=\$?
chmod 500 $SITE/drain/pdcbb.\$SLURM_JOB_ID" \
        -N1 -w n1 --pdc=capacity=1G,drain=$SITE/drain
    echo "$OUT"
    grep -q "tool_exit=0" <<<"$OUT"
    no_daemons_left
    D="$LOCAL/pdcbb.$JOB"             # as n1 sees it
    H="$(node_dir n1)/pdcbb.$JOB"     # the host's view of it
    [ -d "$H" ]
    [ -s "$H/drain.error" ]
    # local_root is root's, sticky and writable by all; the job directory the user's, 0700
    [ "$(stat -c '%U %a' "$(node_dir n1)")" = "root 1733" ]
    [ "$(stat -c '%U %a' "$H")" = "pdcbbtest 700" ]
    # the administrator's view: owner, job id, size, age and why
    run stranded
    echo "$output"
    assert_success
    assert_output --partial "1 job directory in $LOCAL"
    grep -Eq "^$JOB +pdcbbtest +[0-9.]+ (B|KiB|MiB) +[0-9]+s  $D: drain failed: .*Permission denied" <<<"$output"
    # the user finishes the drain elsewhere, on the node (a job step): no "Permission denied",
    # the directory is gone
    mkdir -m 700 "$SITE/drain/ok" && chown pdcbbtest "$SITE/drain/ok"
    run timeout 120 runuser -u pdcbbtest -- srun -w n1 -N1 -n1 "$SITE/bin/pdcbb" drain --to "$SITE/drain/ok" "$D"
    echo "$output"
    assert_success
    refute_output --partial "Permission denied"
    assert_output --partial "removed $D"
    [ ! -e "$H" ]
    [ -f "$SITE/drain/ok/pdcbb.$JOB/COMPLETE" ]
    # the daemon's log went with the drain
    [ -s "$SITE/drain/ok/pdcbb.$JOB/logs/n1.bbd-0.log" ]
    [ -z "$(find "$SITE/drain/ok/pdcbb.$JOB" ! -user pdcbbtest)" ]
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$SITE/drain/ok/pdcbb.$JOB" \
        "$SITE/bin/pdc_stage_check" check 5
    echo "$output"
    assert_success
    run stranded
    assert_output --partial "0 job directories in $LOCAL"
}

@test "a directory planted under the next job's name is moved aside, never used, and the admin removes it" {
    # a --pdc job first: its prolog makes n1's local_root 1733, where anyone may plant
    run_job pdcbbtest "true" -N1 -w n1 --pdc=capacity=1G
    next=$((JOB + 1))
    on_node n1 runuser -u pdcbbtest2 -- mkdir -m 777 "$LOCAL/pdcbb.$next"
    on_node n1 runuser -u pdcbbtest2 -- touch "$LOCAL/pdcbb.$next/planted"
    run_job pdcbbtest "stat -c 'jobdir %U %a' \$PDCBB_JOB_DIR; ls \$PDCBB_JOB_DIR; LD_LIBRARY_PATH=$SITE/lib timeout 60 $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?" \
        -N1 -w n1 --pdc=capacity=1G
    echo "$OUT"
    [ "$JOB" -eq "$next" ]
    grep -q "jobdir pdcbbtest 700" <<<"$OUT"
    ! grep -q "planted" <<<"$OUT"
    grep -q "tool_exit=0" <<<"$OUT"
    no_daemons_left
    [ ! -e "$(node_dir n1)/pdcbb.$JOB" ]
    moved="$(echo "$(node_dir n1)"/pdcbb-moved."$JOB".*)"    # the host's view
    [ -f "$moved/planted" ]
    run stranded
    echo "$output"
    grep -Eq "^$JOB +pdcbbtest2 .*$LOCAL/${moved##*/}: moved aside by a prolog" <<<"$output"
    # younger than the site's stranded_max_age (7d): kept
    run stranded --remove
    assert_output --partial "kept: younger than 7d0h"
    [ -d "$moved" ]
    run stranded --remove --older-than 0
    echo "$output"
    assert_success
    assert_output --partial "  removed"
    [ ! -e "$moved" ]
}

@test "a daemon killed during the job is recorded by the epilog and its log is kept with the drain" {
    run_job pdcbbtest "kill -9 \$(cat \$PDCBB_JOB_DIR/bbd-1.pid); sleep 0.5; echo killed" \
        -N1 -w n1 --pdc=capacity=1G,servers_per_node=2,drain=$SITE/drain
    echo "$OUT"
    grep -q "killed" <<<"$OUT"
    no_daemons_left
    Dd="$SITE/drain/pdcbb.$JOB"
    [ -f "$Dd/COMPLETE" ]
    run cat "$Dd/logs/n1.daemons.died"
    echo "$output"
    assert_output --partial "node n1: daemon rank 1 (pid "
    assert_output --partial "was not running when the job ended"
    [ -s "$Dd/logs/n1.bbd-1.log" ] && [ -s "$Dd/logs/n1.bbd-0.log" ]
    run grep -h "job $JOB node n1: .*1 daemon died during the job" "$CL"/log/slurmd-n1.log
    echo "$output"
    assert_success
    no_job_dirs "$JOB"
    run sinfo -h -N -o "%N %t"
    refute_output --partial "drain"
}
