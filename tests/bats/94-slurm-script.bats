#!/usr/bin/env bats
# The user script (`--pdc=...,script=PATH`, site keys script and script_timeout) on a real local
# Slurm cluster (3 slurmd started by scripts/slurm-cluster.sh, each node's local storage private
# to it, the SPANK plugin through plugstack.conf): the start script runs on every node as the
# job user with the job's facts and the job waits for it; a failing start script (on any one
# node, or killed by the site's timeout) fails the job with its message and leaves every node
# idle, never drained; the end script runs while the daemons still run and before the drain,
# and its failure does not stop the drain; a bad path is refused at submission.

load helpers
load slurm_helpers

setup_file() {
    pdc_cluster_start
    cp "$SITE/site.yaml" "$SITE/site.yaml.good"
}

teardown_file() {
    pdc_cluster_stop
}

teardown() {
    cp "$SITE/site.yaml.good" "$SITE/site.yaml"
    chmod 644 "$SITE/site.yaml"
}

# user_script NAME BODY: an executable of pdcbbtest in $SITE/out (the script's environment
# is Slurm's clean one: it finds pdcbb and libpdc through these two variables); path in $S.
user_script() {
    S="$SITE/out/$1"
    printf '#!/bin/sh\nexport PATH=%s:$PATH LD_LIBRARY_PATH=%s UCX_WARN_UNUSED_ENV_VARS=n\n%s\n' \
        "$SITE/bin" "$SITE/lib" "$2" > "$S"
    chown pdcbbtest "$S"
    chmod 755 "$S"
}

@test "the start script runs on every node as the user with the job's facts; the job waits for it" {
    user_script facts.sh '
f='"$SITE"'/out/script.$PDCBB_JOB_ID.$PDCBB_NODE_NAME.$1
echo "$1 uid=$(id -un) cwd=$(pwd)" > $f
env | grep -E "^(PDCBB_|SLURM_)" | sort >> $f
# every daemon of the job at the start; at the end, those of this node (others end at their pace)
if [ "$1" = start ]; then pdcbb stats --count 1; else pdcbb status; fi >> $f 2>&1 && echo bb_ok >> $f
sleep 2   # the job waits: the batch script must see this file complete
echo done >> $f'
    run_job pdcbbtest "
for n in n1 n2 n3; do tail -1 $SITE/out/script.\$SLURM_JOB_ID.\$n.start; done
echo PDCBB_JOB_DIR=\$PDCBB_JOB_DIR" -N3 -n6 --pdc=capacity=1G,script=$S
    echo "$OUT"
    [ "$(grep -c '^done$' <<<"$OUT")" -eq 3 ]
    local i=0 n f
    for n in n1 n2 n3; do
        for phase in start end; do
            f="$SITE/out/script.$JOB.$n.$phase"
            cat "$f"
            grep -qx "$phase uid=pdcbbtest cwd=$LOCAL/pdcbb.$JOB" "$f"
            grep -qx "PDCBB_SCRIPT_PHASE=$phase" "$f"
            grep -qx "PDCBB_JOB_ID=$JOB" "$f"
            grep -qx "PDCBB_JOB_DIR=$LOCAL/pdcbb.$JOB" "$f"
            grep -qx "PDCBB_NODE_NAME=$n" "$f"
            grep -qx "PDCBB_NODE_INDEX=$i" "$f"
            grep -qx "PDCBB_NNODES=3" "$f"
            grep -qx "SLURM_JOB_ID=$JOB" "$f"   # the prolog's Slurm variables
            # the burst buffer runs in both phases and pdcbb finds it from the environment
            grep -qx "bb_ok" "$f"
        done
        i=$((i + 1))
    done
    no_daemons_left
    nodes_idle
}

@test "a start script failing on one node fails the job with its message; no node is drained" {
    user_script fail.sh '
echo "checking inputs on $PDCBB_NODE_NAME"
if [ "$PDCBB_NODE_INDEX" = 1 ]; then echo "no input data" >&2; exit 3; fi'
    run_job pdcbbtest "echo batch_ran; srun -N3 -n3 touch $SITE/out/task.\$SLURM_JOB_ID.ran" \
        -N3 --pdc=capacity=1G,script=$S
    echo "$OUT"
    grep -q "pdcbb: job $JOB not run: start script $S failed on n2: exit status 3: checking inputs on n2; no input data" <<<"$OUT"
    ! grep -q batch_ran <<<"$OUT"
    ! ls "$SITE/out/task.$JOB.ran" 2>/dev/null
    run scontrol show job "$JOB"
    echo "$output"
    assert_output --regexp "JobState=FAILED"
    no_daemons_left
    nodes_idle
    no_job_dirs "$JOB"
}

@test "the end script runs before the drain, its output lands in the drain; a failing one does not stop it" {
    user_script end.sh '
if [ "$1" = end ]; then
    # the daemons of this node (the other nodes end at their own pace: theirs may be stopping)
    pdcbb status > /dev/null && echo "end: daemons still up on $PDCBB_NODE_NAME"
    echo "end: drain to $PDCBB_DRAIN_DIR"
    echo "archive failed" >&2
    exit 4
fi'
    run_job pdcbbtest "timeout 120 srun -N1 -n1 $SITE/bin/pdc_stage_check write 7; echo write_exit=\$?" \
        -N3 --pdc=capacity=1G,drain=$SITE/drain,script=$S
    echo "$OUT"
    grep -q "write_exit=0" <<<"$OUT"
    local wait
    for wait in $(seq 80); do [ -f "$SITE/drain/pdcbb.$JOB/COMPLETE" ] && break; sleep 0.25; done
    [ -f "$SITE/drain/pdcbb.$JOB/COMPLETE" ]
    for n in n1 n2 n3; do
        log="$SITE/drain/pdcbb.$JOB/logs/$n.script-end.log"
        cat "$log"
        grep -qx "end: daemons still up on $n" "$log"
        grep -qx "end: drain to $SITE/drain/pdcbb.$JOB" "$log"
        grep -q "^pdcbb: end script $S failed on $n: exit status 4: .*archive failed" "$log"
    done
    run runuser -u pdcbbtest -- env LD_LIBRARY_PATH="$SITE/lib" PDCBB_DRAINED_DIR="$SITE/drain/pdcbb.$JOB" \
        "$SITE/bin/pdc_stage_check" check 7
    assert_success
    no_daemons_left
    nodes_idle
}

@test "a site default script and the site's script_timeout: a hanging start script is killed and fails the job" {
    user_script hang.sh '
echo "waiting for the tape library"
sleep 300 &
echo $! > '"$SITE"'/out/hang.$PDCBB_NODE_NAME.pid
sleep 300'
    chown root "$S"   # a site's script: root's
    printf 'script: %s\nscript_timeout: 2\n' "$S" >> "$SITE/site.yaml"
    run_job pdcbbtest "echo batch_ran" -N2 --pdc=capacity=1G
    echo "$OUT"
    grep -q "pdcbb: job $JOB not run: start script $S failed on n[12]: timed out after 2 s (its process group was killed): waiting for the tape library" <<<"$OUT"
    ! grep -q batch_ran <<<"$OUT"
    for n in n1 n2; do
        pid="$(cat "$SITE/out/hang.$n.pid")"
        wait_gone "$pid" 10
    done
    no_daemons_left
    nodes_idle
}

@test "a script that cannot run is refused at submission, as the user" {
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=script=$SITE/out/missing.sh --wrap true
    assert_failure
    assert_output --partial "key 'script': script $SITE/out/missing.sh: No such file or directory"
    user_script other.sh 'exit 0'
    chown pdcbbtest2 "$S"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc=script=$S --wrap true
    assert_failure
    assert_output --partial "owned by uid $(id -u pdcbbtest2), not by you"
    # a site default the user may not run refuses every --pdc job of that user
    chmod 700 "$S"
    printf 'script: %s\n' "$S" >> "$SITE/site.yaml"
    run runuser -u pdcbbtest -- sbatch -N1 --pdc --wrap true
    assert_failure
    assert_output --partial "key 'script'"
    run squeue -h
    assert_output ""
}

@test "USER-GUIDE.md's sbatch line with a user script works as printed" {
    line="$(awk '/^## User scripts/ {f = 1} f && /^sbatch / {print; exit}' "$REPO_DIR/docs/USER-GUIDE.md")"
    [ "$line" = 'sbatch -N 2 --pdc=script=$HOME/bb-script.sh job.sh' ]
    home="$SITE/out/home"
    mkdir -p "$home"
    chown pdcbbtest "$home"
    # the guide's script, with the test cluster's pdcbb and libpdc on its path
    user_script bb.sh '
echo "$1: node $PDCBB_NODE_INDEX of $PDCBB_NNODES ($PDCBB_NODE_NAME), job $PDCBB_JOB_ID"
if [ "$1" = start ]; then
    pdcbb stats --json > "$PDCBB_JOB_DIR/stats.start.json"
fi'
    mv "$S" "$home/bb-script.sh"
    printf '#!/bin/sh\ncat "$PDCBB_JOB_DIR/script-start.log"\n' > "$home/job.sh"
    chown pdcbbtest "$home/job.sh"
    cd "$home"
    JOB="$(runuser -u pdcbbtest -- env HOME="$home" bash -c "$line" | awk '{print $NF}')"
    [ -n "$JOB" ]
    wait_job "$JOB"
    run cat "$home/slurm-$JOB.out"
    echo "$output"
    assert_output "start: node 0 of 2 (n1), job $JOB"
    no_daemons_left
    nodes_idle
}
