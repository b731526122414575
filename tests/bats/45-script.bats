#!/usr/bin/env bats
# The user script (config key `script`, `pdcbb run --script`, jobctl/pdcbb_job_script.c) on real
# local jobs: it runs on every node with the job's facts, as the job user, before the first task
# (which sees what it wrote) and after the last one, while the daemons still run and before the
# drain (its log lands in the drain); a failing start script fails the job with its message and
# runs no task, a failing end script is reported and the drain still happens; the timeout kills
# the script's whole process group. USER-GUIDE.md's example runs as printed.

load helpers
bats_require_minimum_version 1.5.0

TESTUSER=pdcbbtest

setup_file() {
    ensure_test_users
}

setup() {
    require_build
    make_workdir
    chmod 755 "$WORKDIR"
    OUT="$WORKDIR/out"
    mkdir -p "$OUT"
    chmod 1777 "$OUT"
    export OUT PATH="$BUILD_DIR/cli:$PATH"
}

teardown() {
    cleanup_workdir
}

# script NAME BODY: an executable shell script $WORKDIR/NAME (mode 0755), path in $S.
script() {
    S="$WORKDIR/$1"
    printf '#!/bin/sh\n%s\n' "$2" > "$S"
    chmod 755 "$S"
}

@test "every node runs the script with the job's facts, start before the task, end after it" {
    script s.sh '
echo "$1 $(pwd) $(id -u)" > "$OUT/$PDCBB_NODE_NAME.$1"
env | grep "^PDCBB_" | sort >> "$OUT/$PDCBB_NODE_NAME.$1"
# the burst buffer runs in both phases: the CLI finds the job through the environment
pdcbb stats --count 1 > "$OUT/$PDCBB_NODE_NAME.$1.stats"
if [ "$1" = end ] && [ ! -e "$OUT/task.done" ]; then echo "end before the task ended" >&2; exit 1; fi
echo "output of $1 on $PDCBB_NODE_NAME"'
    # the task checks what every node's start script wrote, and marks its own end
    run "$PDCBB" run --nodes 2 --ntasks 5 --job-id 4501 --workdir "$WORKDIR/w" --keep \
        --script "$S" -- sh -c 'test -e "$OUT/node0.start" && test -e "$OUT/node1.start" &&
            test ! -e "$OUT/node0.end" && touch "$OUT/task.done"'
    echo "$output"
    assert_success
    [ -e "$OUT/task.done" ]
    for k in 0 1; do
        dir="$WORKDIR/w/node$k/pdcbb.4501"
        for phase in start end; do
            f="$OUT/node$k.$phase"
            cat "$f"
            [ "$(head -1 "$f")" = "$phase $dir $(id -u)" ]
            grep -qx "PDCBB_SCRIPT_PHASE=$phase" "$f"
            grep -qx "PDCBB_JOB_ID=4501" "$f"
            grep -qx "PDCBB_JOB_DIR=$dir" "$f"
            grep -qx "PDCBB_NODE_NAME=node$k" "$f"
            grep -qx "PDCBB_NODE_INDEX=$k" "$f"
            grep -qx "PDCBB_NNODES=2" "$f"
            grep -qx "PDCBB_NTASKS=5" "$f"
            grep -qx "PDCBB_SCRIPT_LOG=$dir/script-$phase.log" "$f"
            ! grep -q "^PDCBB_DRAIN" "$f"   # no drain asked
            # both daemons of the job answered the script's pdcbb stats
            grep -q "node0" "$OUT/node$k.$phase.stats"
            grep -q "node1" "$OUT/node$k.$phase.stats"
            # its output is in the node's log of that phase, the file the user's
            grep -qx "output of $phase on node$k" "$dir/script-$phase.log"
            [ "$(stat -c %a "$dir/script-$phase.log")" = 600 ]
        done
        [ ! -e "$dir/script.error" ]
    done
    assert_no_daemons "$WORKDIR"
}

@test "the end script runs before the drain: its output is in the drain; its failure does not stop the drain" {
    mkdir -m 700 "$WORKDIR/dest"
    script s.sh '
if [ "$1" = end ]; then
    echo "end saw drain $PDCBB_DRAIN dir $PDCBB_DRAIN_DIR"
    echo "cannot archive the results" >&2
    exit 3
fi'
    run "$PDCBB" run --nodes 2 --job-id 4502 --workdir "$WORKDIR/w" --drain "$WORKDIR/dest" \
        --script "$S" -- true
    echo "$output"
    assert_failure 1   # the command succeeded; the failed end script makes it 1
    for k in 0 1; do
        assert_output --partial "pdcbb run: node$k: end script $S failed on node$k: exit status 3: end saw drain $WORKDIR/dest dir $WORKDIR/dest/pdcbb.4502; cannot archive the results (the drain goes on)"
        assert_output --regexp "node$k: drained .* to $WORKDIR/dest/pdcbb.4502"
        log="$WORKDIR/dest/pdcbb.4502/logs/node$k.script-end.log"
        grep -qx "end saw drain $WORKDIR/dest dir $WORKDIR/dest/pdcbb.4502" "$log"
        grep -q "^pdcbb: end script $S failed on node$k: exit status 3" "$log"
        [ -e "$WORKDIR/dest/pdcbb.4502/logs/node$k.script-start.log" ]
    done
    run "$PDCBB" verify "$WORKDIR/dest/pdcbb.4502"
    assert_success
    assert_no_daemons "$WORKDIR"
}

@test "a failing start script fails the job with its last lines; no task runs on any node" {
    script s.sh '
echo "reading input on $PDCBB_NODE_NAME"
if [ "$PDCBB_NODE_INDEX" = 1 ]; then
    echo "no input data" >&2
    exit 3
fi
echo "$1" >> "$OUT/ran.$PDCBB_NODE_NAME"'
    run "$PDCBB" run --nodes 2 --job-id 4503 --workdir "$WORKDIR/w" --keep --script "$S" -- \
        touch "$OUT/task.ran"
    echo "$output"
    assert_failure 1
    assert_output --partial "pdcbb run: node1: start script $S failed on node1: exit status 3: reading input on node1; no input data"
    assert_output --partial "the start script failed, touch not run"
    [ ! -e "$OUT/task.ran" ]
    # node0's start ran, its end did not follow a job that never ran
    [ "$(cat "$OUT/ran.node0")" = start ]
    [ ! -e "$OUT/ran.node1" ]
    grep -q "exit status 3: reading input on node1; no input data" \
        "$WORKDIR/w/node1/pdcbb.4503/script.error"
    assert_no_daemons "$WORKDIR"

    # killed by a signal
    script k.sh 'kill -9 $$'
    run "$PDCBB" run --script "$S" -- touch "$OUT/task.ran"
    assert_failure 1
    assert_output --regexp "start script $S failed on node0: killed by signal 9"
    [ ! -e "$OUT/task.ran" ]
    assert_no_daemons "$WORKDIR"
}

@test "a bad script path is refused before anything starts" {
    run "$PDCBB" run --workdir "$WORKDIR/w" --script "$WORKDIR/missing.sh" -- touch "$OUT/task.ran"
    assert_failure 2
    assert_output "pdcbb run: script $WORKDIR/missing.sh: No such file or directory"
    run "$PDCBB" run --script relative.sh -- true
    assert_failure 2
    assert_output --partial "key 'script'"
    script s.sh 'exit 0'
    chmod 644 "$S"
    run -0 runuser -u "$TESTUSER" -- test -r "$S"
    cp "$S" "$WORKDIR/u.sh"
    chown "$TESTUSER" "$WORKDIR/u.sh"
    run runuser -u "$TESTUSER" -- env HOME="$WORKDIR" "$PDCBB" run --script "$S" -- true
    assert_failure 2
    assert_output "pdcbb run: script $S: not readable and executable by you (mode 0644)"
    chmod 757 "$S"
    run "$PDCBB" run --script "$S" -- true
    assert_failure 2
    assert_output "pdcbb run: script $S: writable by others (mode 0757)"
    # someone else's script is not run as you
    chmod 755 "$WORKDIR/u.sh"
    run "$PDCBB" run --script "$WORKDIR/u.sh" -- true
    assert_failure 2
    assert_output "pdcbb run: script $WORKDIR/u.sh: owned by uid $(id -u "$TESTUSER"), not by you (uid 0) or root"
    [ ! -e "$OUT/task.ran" ]
    [ ! -e "$WORKDIR/w/node0" ]
    assert_no_daemons "$WORKDIR"
}

@test "script_timeout from the site configuration kills the script's whole process group" {
    printf 'script_timeout: 1\n' > "$WORKDIR/site.yaml"
    script s.sh '
sleep 300 &
echo $! > "$OUT/child.pid"
echo $$ > "$OUT/script.pid"
echo "waiting for the file system"
sleep 300'
    start=$(date +%s)
    run "$PDCBB" run --site-config "$WORKDIR/site.yaml" --script "$S" -- touch "$OUT/task.ran"
    echo "$output"
    assert_failure 1
    assert_output --partial "start script $S failed on node0: timed out after 1 s (its process group was killed): waiting for the file system"
    [ $(( $(date +%s) - start )) -lt 100 ]
    [ ! -e "$OUT/task.ran" ]
    wait_gone "$(cat "$OUT/script.pid")" 10
    wait_gone "$(cat "$OUT/child.pid")" 10
    assert_no_daemons "$WORKDIR"
}

@test "background processes of the start script run during the job and are gone after the end" {
    script s.sh '
if [ "$1" = start ]; then
    sleep 300 &
    echo $! > "$OUT/bg.pid"
fi'
    run "$PDCBB" run --script "$S" -- sh -c 'kill -0 "$(cat "$OUT/bg.pid")" && echo bg-alive'
    echo "$output"
    assert_success
    assert_line bg-alive
    wait_gone "$(cat "$OUT/bg.pid")" 10
    assert_no_daemons "$WORKDIR"
}

@test "the script runs as the job user, never as root" {
    script s.sh 'echo "$1 uid $(id -u) gid $(id -g) home $HOME" >> "$OUT/who"'
    mkdir -p "$WORKDIR/home"
    chown "$TESTUSER" "$WORKDIR/home"
    cp "$S" "$WORKDIR/home/s.sh"
    chown "$TESTUSER" "$WORKDIR/home/s.sh"
    run runuser -u "$TESTUSER" -- env HOME="$WORKDIR/home" TMPDIR="$WORKDIR/home" \
        "$PDCBB" run --nodes 2 --script "$WORKDIR/home/s.sh" -- true
    echo "$output"
    assert_success
    uid=$(id -u "$TESTUSER") gid=$(id -g "$TESTUSER")
    [ "$(grep -c "^start uid $uid gid $gid home $WORKDIR/home$" "$OUT/who")" -eq 2 ]
    [ "$(grep -c "^end uid $uid gid $gid home $WORKDIR/home$" "$OUT/who")" -eq 2 ]
    [ "$(wc -l < "$OUT/who")" -eq 4 ]
    assert_no_daemons "$WORKDIR"
}

@test "USER-GUIDE.md: the user script example runs as printed" {
    guide="$REPO_DIR/docs/USER-GUIDE.md"
    awk '/^## User scripts/ {f = 1} f && /^```sh$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$guide" > "$WORKDIR/example.sh"
    awk '/^## User scripts/ {f = 1} f && /^```text$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$guide" > "$WORKDIR/expected"
    grep -q -- '--script "$HOME/bb-script.sh"' "$WORKDIR/example.sh"
    [ -s "$WORKDIR/expected" ]
    mkdir "$WORKDIR/home"
    cd "$WORKDIR"
    run --separate-stderr env HOME="$WORKDIR/home" TMPDIR="$WORKDIR" bash -e example.sh
    echo "$output"
    echo "$stderr"
    assert_success
    assert_equal "$output" "$(cat "$WORKDIR/expected")"
    assert_no_daemons "$WORKDIR"
}
