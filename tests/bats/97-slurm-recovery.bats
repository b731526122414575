#!/usr/bin/env bats
# Recovery on a real local Slurm cluster (3 slurmd, prolog and epilog as root): local_root is
# root's with mode 1733, so the job user drains and removes its own stranded job directory with
# `pdcbb drain`; a directory another user planted under the job's name is moved aside, never
# used; `pdcbb admin stranded` lists what is left (owner, job, size, age, why) and removes it;
# a daemon that died during the job is recorded and its log is kept with the drain.

load helpers

setup_file() {
    require_build
    BASE="$(mktemp -d /tmp/pdcbb-bats-recovery.XXXXXX)"
    chmod 755 "$BASE"
    export BASE CL="$BASE/cluster" SITE="$BASE/site"
    mkdir -p "$SITE/bin" "$SITE/lib" "$SITE/drain" "$SITE/local" "$SITE/out"
    cp "$BBD" "$TOOL" "$PDCBB" "$BUILD_DIR/tests/pdc_stage_check" "$SITE/bin/"
    cp -a "$BUILD_DIR"/client/libpdc.so* "$SITE/lib/"
    chmod -R a+rX "$SITE"
    chmod 1777 "$SITE/drain" "$SITE/out"
    mkdir -m 755 "$SITE/drain/locked"    # under drain_roots, but not writable by the job user
    cat > "$SITE/site.yaml" <<YAML
local_root: $SITE/local/%n
daemon_path: $SITE/bin/pdc_bbd
listen_address: 127.0.0.1
ucx_net_devices: lo
max_capacity: 10G
drain_roots: [$SITE/drain]
ready_timeout: 20
YAML
    chmod 644 "$SITE/site.yaml"
    echo "required $BUILD_DIR/spank_plugin/spank_pdc.so config=$SITE/site.yaml" > "$SITE/plugstack.conf"
    "$REPO_DIR/scripts/slurm-cluster.sh" start --dir "$CL" --nodes 3 --plugstack "$SITE/plugstack.conf" >&3
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

run_job() { # script-body [sbatch options...]; sets JOB and OUT
    local body=$1
    shift
    local script="$SITE/out/job.$RANDOM.sh"
    printf '#!/bin/bash\nexport UCX_WARN_UNUSED_ENV_VARS=n LD_LIBRARY_PATH=%s\n%s\n' "$SITE/lib" "$body" > "$script"
    chmod 755 "$script"
    JOB="$(runuser -u pdcbbtest -- sbatch --parsable -o "$SITE/out/%j.out" "$@" "$script")"
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

stranded() { # pdcbb admin stranded on node n1 with the site file
    "$PDCBB" admin stranded --site-config "$SITE/site.yaml" --node n1 "$@"
}

@test "a failed drain strands the job directory; the job user drains it and it is removed" {
    run_job "timeout 60 srun -N1 -n1 $SITE/bin/pdc_stage_check write 5; echo tool_exit=\$?" \
        -N1 -w n1 --pdc=capacity=1G,drain=$SITE/drain/locked
    echo "$OUT"
    grep -q "tool_exit=0" <<<"$OUT"
    no_daemons_left
    D="$SITE/local/n1/pdcbb.$JOB"
    [ -d "$D" ]
    [ -s "$D/drain.error" ]
    # local_root is root's, sticky and writable by all; the job directory the user's, 0700
    [ "$(stat -c '%U %a' "$SITE/local/n1")" = "root 1733" ]
    [ "$(stat -c '%U %a' "$D")" = "pdcbbtest 700" ]
    # the administrator's view: owner, job id, size, age and why
    run stranded
    echo "$output"
    assert_success
    assert_output --partial "1 job directory in $SITE/local/n1"
    grep -Eq "^$JOB +pdcbbtest +[0-9.]+ (B|KiB|MiB) +[0-9]+s  $D: drain failed: .*Permission denied" <<<"$output"
    # the user finishes the drain elsewhere: no "Permission denied", the directory is gone
    mkdir -m 700 "$SITE/drain/ok" && chown pdcbbtest "$SITE/drain/ok"
    run runuser -u pdcbbtest -- "$SITE/bin/pdcbb" drain --to "$SITE/drain/ok" "$D"
    echo "$output"
    assert_success
    refute_output --partial "Permission denied"
    assert_output --partial "removed $D"
    [ ! -e "$D" ]
    [ -f "$SITE/drain/ok/pdcbb.$JOB/COMPLETE" ]
    # the daemon's log went with the drain
    [ -s "$SITE/drain/ok/pdcbb.$JOB/logs/n1.bbd-0.log" ]
    [ -z "$(find "$SITE/drain/ok/pdcbb.$JOB" ! -user pdcbbtest)" ]
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$SITE/drain/ok/pdcbb.$JOB" \
        "$SITE/bin/pdc_stage_check" check 5
    echo "$output"
    assert_success
    run stranded
    assert_output --partial "0 job directories in $SITE/local/n1"
}

@test "a directory planted under the next job's name is moved aside, never used, and the admin removes it" {
    run_job "true" -N1 -w n1
    next=$((JOB + 1))
    runuser -u pdcbbtest2 -- mkdir -m 777 "$SITE/local/n1/pdcbb.$next"
    runuser -u pdcbbtest2 -- touch "$SITE/local/n1/pdcbb.$next/planted"
    run_job "stat -c 'jobdir %U %a' \$PDCBB_JOB_DIR; ls \$PDCBB_JOB_DIR; LD_LIBRARY_PATH=$SITE/lib timeout 60 $SITE/bin/pdc_meta_tool info; echo tool_exit=\$?" \
        -N1 -w n1 --pdc=capacity=1G
    echo "$OUT"
    [ "$JOB" -eq "$next" ]
    grep -q "jobdir pdcbbtest 700" <<<"$OUT"
    ! grep -q "planted" <<<"$OUT"
    grep -q "tool_exit=0" <<<"$OUT"
    no_daemons_left
    [ ! -e "$SITE/local/n1/pdcbb.$JOB" ]
    moved="$(echo "$SITE"/local/n1/pdcbb-moved."$JOB".*)"
    [ -f "$moved/planted" ]
    run stranded
    echo "$output"
    grep -Eq "^$JOB +pdcbbtest2 .*$moved: moved aside by a prolog" <<<"$output"
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
    run_job "kill -9 \$(cat \$PDCBB_JOB_DIR/bbd-1.pid); sleep 0.5; echo killed" \
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
    [ ! -e "$SITE/local/n1/pdcbb.$JOB" ]
    run sinfo -h -N -o "%N %t"
    refute_output --partial "drain"
}
