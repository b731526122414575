#!/usr/bin/env bats
# `pdcbb drain`: a node's job directory kept by `pdcbb run --keep` is drained to a destination
# in the drain format (docs/DRAIN-FORMAT.md); the drained data reads back the same as it did
# live; failures (no destination, a read-only or full destination, a drain killed half-way)
# keep the node-local data, and a second `pdcbb drain` finishes the job.

load helpers
bats_require_minimum_version 1.5.0

DRAINED_READ="$BUILD_DIR/tests/pdc_drained_read"
CASES="$BUILD_DIR/tests/pdc_region_cases"
MODEL="$BUILD_DIR/tests/pdc_region_model"

setup() {
    require_build
    for f in "$DRAINED_READ" "$CASES" "$MODEL"; do
        [ -x "$f" ] || { echo "missing $f: build the project first" >&2; return 1; }
    done
    make_workdir
    MOUNTS=()
    DRAIN_PID=
}

teardown() {
    if [ -n "${DRAIN_PID:-}" ]; then
        kill -9 "$DRAIN_PID" 2>/dev/null || true
        wait_gone "$DRAIN_PID" 10 || true
    fi
    unmount_tmpfs
    cleanup_workdir
}


# A kept local job: job_kept ID NODES SPN CMD...; its node directories are
# $WORKDIR/w/nodeK/pdcbb.ID.
job_kept() {
    local id=$1 nodes=$2 spn=$3
    shift 3
    run "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR/w" --job-id "$id" \
        --pdc "servers_per_node=$spn,capacity=1G" --keep --quiet -- "$@"
    assert_success
    assert_no_daemons "$WORKDIR"
}

# The report of pdc_drained_read without the lines that differ between live and drained.
# What must read back the same from the drain: not timings, not how the daemons were found,
# and not DART searches (references are not drained; 110-drained-api checks both answers).
report() {
    grep -v -e '^timing' -e '^discovery' -e '^dart ' <<<"$1"
}

@test "pdcbb drain --help and bad usage" {
    run "$PDCBB" drain --help
    assert_success
    assert_output --partial "Usage: pdcbb drain"
    assert_output --partial "--to DEST"
    assert_output --partial "--keep"
    run "$PDCBB" drain
    assert_failure 2
    assert_output --partial "no job directory"
    run "$PDCBB" drain --frobnicate "$WORKDIR"
    assert_failure 2
    run "$PDCBB" drain "$WORKDIR"
    assert_failure 1
    assert_output --partial "not a job directory"
}

@test "a kept job drains node by node; the drain is complete and reads back the same" {
    job_kept 5101 2 2 "$DRAINED_READ" write C
    local live
    live="$(report "$output")"
    assert_output --regexp "discovery (daemon|jobtable), 4 daemons"
    mkdir "$WORKDIR/dest"
    run "$PDCBB" drain --to "$WORKDIR/dest" "$WORKDIR/w/node0/pdcbb.5101"
    assert_success
    assert_output --partial "ranks 0..1: 2 drained"
    assert_output --partial "not complete yet: 2 of 4 ranks drained"
    [ ! -e "$WORKDIR/dest/pdcbb.5101/COMPLETE" ]
    [ ! -e "$WORKDIR/w/node0/pdcbb.5101" ]
    [ -d "$WORKDIR/w/node1/pdcbb.5101" ]
    run "$PDCBB" drain --to "$WORKDIR/dest" "$WORKDIR/w/node1/pdcbb.5101"
    assert_success
    assert_output --partial "ranks 2..3: 2 drained"
    assert_output --regexp "[0-9]+ bytes in [0-9]+ extents"
    assert_output --partial "is complete (all 4 ranks)"
    [ ! -e "$WORKDIR/w/node1/pdcbb.5101" ]

    local d="$WORKDIR/dest/pdcbb.5101"
    [ -f "$d/COMPLETE" ]
    [ -f "$d/manifest.yaml" ]
    for r in 0 1 2 3; do
        [ -f "$d/parts/rank-0000$r.yaml" ]
        [ -f "$d/data/rank-0000$r.dat" ]
    done
    grep -q "^format: pdcbb-drain" "$d/manifest.yaml"
    grep -q "nservers: 4" "$d/manifest.yaml"
    # everything belongs to the caller
    run find "$d" ! -uid "$(id -u)"
    assert_output ""
    # the drained job reads back exactly as it did live, every placement included
    PDCBB_DRAINED_DIR="$d" run "$DRAINED_READ" read C
    assert_success
    assert_equal "$(report "$output")" "$live"
    if "$PDCBB" verify --help >/dev/null 2>&1; then
        run "$PDCBB" verify "$d"
        assert_success
    fi
    # draining again finds nothing left to do
    job_kept 5102 1 1 true
    run "$PDCBB" drain --to "$WORKDIR/dest" --keep "$WORKDIR/w/node0/pdcbb.5102"
    assert_success
    assert_output --partial "is complete"
    assert_output --partial "kept in $WORKDIR/w/node0/pdcbb.5102"
    run "$PDCBB" drain --to "$WORKDIR/dest" "$WORKDIR/w/node0/pdcbb.5102"
    assert_success
    assert_output --partial "1 already drained"
}

@test "the destination comes from the job's drain= setting" {
    job_kept 5103 1 1 "$DRAINED_READ" write C
    run "$PDCBB" drain "$WORKDIR/w/node0/pdcbb.5103"
    assert_failure 2
    assert_output --partial "--to DEST"
    # a job whose own drain at its end failed: its destination vanished while it ran, so the
    # report goes to the home directory
    mkdir "$WORKDIR/later" "$WORKDIR/home"
    HOME="$WORKDIR/home" run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w" --job-id 5111 \
        --quiet --pdc "drain=$WORKDIR/later" -- \
        bash -c "'$DRAINED_READ' write C && rm -rf '$WORKDIR/later'"
    assert_failure 1
    assert_output --partial "drain destination $WORKDIR/later does not exist"
    assert_output --partial "report in $WORKDIR/home/pdcbb.5111.node0.FAILED"
    assert_no_daemons "$WORKDIR"
    local jd="$WORKDIR/w/node0/pdcbb.5111"
    [ -d "$jd/bbd-0" ]
    grep -q "^reason: drain destination $WORKDIR/later does not exist" \
        "$WORKDIR/home/pdcbb.5111.node0.FAILED"
    mkdir "$WORKDIR/later"
    HOME="$WORKDIR/home" run "$PDCBB" drain --quiet "$jd"
    assert_success
    assert_output ""
    [ -f "$WORKDIR/later/pdcbb.5111/COMPLETE" ]
    [ ! -e "$jd" ]
    # the finished drain removed the stale report
    [ ! -e "$WORKDIR/home/pdcbb.5111.node0.FAILED" ]
}

@test "a missing destination fails, names it, and keeps the node-local data" {
    job_kept 5104 1 1 "$DRAINED_READ" write C
    local jd="$WORKDIR/w/node0/pdcbb.5104"
    run "$PDCBB" drain --to "$WORKDIR/nowhere" "$jd"
    assert_failure 1
    assert_output --partial "drain destination $WORKDIR/nowhere does not exist"
    assert_output --partial "node-local data kept in $jd"
    [ -d "$jd/bbd-0" ]
    [ ! -e "$WORKDIR/nowhere" ]
}

@test "a read-only destination fails and keeps the data; a good one then completes" {
    job_kept 5105 1 2 "$DRAINED_READ" write C
    local live
    live="$(report "$output")"
    local jd="$WORKDIR/w/node0/pdcbb.5105"
    mount_tmpfs "$WORKDIR/ro" ro
    run "$PDCBB" drain --to "$WORKDIR/ro" "$jd"
    assert_failure 1
    assert_output --partial "$WORKDIR/ro"
    assert_output --partial "not writable"
    assert_output --partial "node-local data kept in $jd"
    [ -d "$jd/bbd-0" ] && [ -d "$jd/bbd-1" ]
    mkdir "$WORKDIR/good"
    run "$PDCBB" drain --to "$WORKDIR/good" "$jd"
    assert_success
    assert_output --partial "is complete"
    [ ! -e "$jd" ]
    PDCBB_DRAINED_DIR="$WORKDIR/good/pdcbb.5105" run "$DRAINED_READ" read C
    assert_success
    assert_equal "$(report "$output")" "$live"
}

@test "a full destination fails with no space, keeps the data, and a bigger one completes" {
    # 8 objects of 256 KB each, plus the drained-read set: more than 1 MiB
    job_kept 5106 1 2 bash -c "'$CASES' durable-write dur 7 && '$DRAINED_READ' write C"
    local jd="$WORKDIR/w/node0/pdcbb.5106"
    mount_tmpfs "$WORKDIR/small" size=1M
    run "$PDCBB" drain --to "$WORKDIR/small" "$jd"
    assert_failure 1
    assert_output --partial "destination full"
    assert_output --partial "node-local data kept in $jd"
    [ -d "$jd/bbd-0" ] && [ -d "$jd/bbd-1" ]
    [ ! -e "$WORKDIR/small/pdcbb.5106/COMPLETE" ]
    mount_tmpfs "$WORKDIR/big" size=64M
    run "$PDCBB" drain --to "$WORKDIR/big" "$jd"
    assert_success
    assert_output --partial "is complete"
    [ ! -e "$jd" ]
    # the drained data is the written data
    PDCBB_DRAINED_DIR="$WORKDIR/big/pdcbb.5106" run "$DRAINED_READ" read C
    assert_success
    assert_output --partial "matches the known data: yes"
    refute_output --partial "matches the known data: no"
}

@test "a drain killed half-way leaves no part for its rank and a rerun completes" {
    job_kept 5107 1 1 "$MODEL" --seed 7 --ops 12 --phase write --objects 1 \
        --min-obj-bytes 300000000 --max-obj-bytes 400000000 --placements obj_static --max-ndim 1
    local jd="$WORKDIR/w/node0/pdcbb.5107" f
    # make the object's data dense: a few hundred MiB to drain
    for f in "$jd"/bbd-0/objects/*.dat; do
        dd if=/dev/zero of="$f" bs=1M count=$(( ($(stat -c %s "$f") + 1048575) / 1048576 )) \
            conv=notrunc status=none
        truncate -s "$(stat -c %s "$f")" "$f"
    done
    [ "$(du -sm "$jd/bbd-0/objects" | cut -f1)" -ge 250 ]
    mkdir "$WORKDIR/dest"
    sync
    echo 1 > /proc/sys/vm/drop_caches || true
    "$PDCBB" drain --quiet --to "$WORKDIR/dest" "$jd" &
    DRAIN_PID=$!
    local data="$WORKDIR/dest/pdcbb.5107/data/rank-00000.dat" i
    for i in $(seq 1 2000); do
        [ -s "$data" ] && break
        sleep 0.005
    done
    kill -9 "$DRAIN_PID"
    wait "$DRAIN_PID" || true
    DRAIN_PID=
    # killed before the part was written (else the drain was too fast to test anything)
    [ ! -e "$WORKDIR/dest/pdcbb.5107/parts/rank-00000.yaml" ]
    [ ! -e "$WORKDIR/dest/pdcbb.5107/COMPLETE" ]
    [ -d "$jd/bbd-0" ]
    run "$PDCBB" drain --to "$WORKDIR/dest" "$jd"
    assert_success
    assert_output --partial "1 drained"
    assert_output --partial "is complete"
    [ -f "$WORKDIR/dest/pdcbb.5107/parts/rank-00000.yaml" ]
    [ "$(stat -c %s "$data")" -ge $(( 250 << 20 )) ]
    [ ! -e "$jd" ]
}

@test "a job directory whose daemon is still running is refused" {
    mkdir "$WORKDIR/dest"
    run "$PDCBB" run --nodes 1 --workdir "$WORKDIR/w" --job-id 5108 --quiet -- \
        bash -c "'$PDCBB' drain --to '$WORKDIR/dest' \"\$PDCBB_JOB_DIR\"; echo drain_exit=\$?"
    assert_output --partial "still running"
    assert_output --partial "drain_exit=1"
    assert_no_daemons "$WORKDIR"
}

@test "only the owner (or root, as the owner) may drain a job directory" {
    # prerequisites fail the test, never skip it
    id nobody >/dev/null 2>&1 || { echo "this test needs the user nobody" >&2; return 1; }
    [ "$(id -u)" -eq 0 ] || { echo "this test needs root (as the CI runs it)" >&2; return 1; }
    job_kept 5109 1 1 "$DRAINED_READ" write C
    local jd="$WORKDIR/w/node0/pdcbb.5109"
    mkdir -m 1777 "$WORKDIR/dest"
    chmod 755 "$WORKDIR" "$WORKDIR/w" "$WORKDIR/w/node0"
    # a job of user nobody, drained by root: the drained files are nobody's
    chown -R nobody "$jd"
    run "$PDCBB" drain --to "$WORKDIR/dest" "$jd"
    assert_success
    assert_output --partial "is complete"
    run find "$WORKDIR/dest/pdcbb.5109" ! -user nobody
    assert_output ""
    [ ! -e "$jd" ]
    # and nobody may not drain root's job
    job_kept 5110 1 1 true
    chmod 755 "$WORKDIR/w/node0/pdcbb.5110"
    run setpriv --reuid nobody --regid nogroup --clear-groups "$PDCBB" drain --to "$WORKDIR/dest" \
        "$WORKDIR/w/node0/pdcbb.5110"
    assert_failure 1
    assert_output --partial "only that user or root"
}

@test "on a terminal the drain shows bytes, objects, rate and time left; its log sums it up in one line" {
    # script(1) gives the commands a terminal; PDCBB_PROGRESS_INTERVAL=0 prints every update
    # (the default is one a second), so that a drain this short shows lines before its end.
    local fill="$BUILD_DIR/bench/pdc_fill" out
    mkdir "$WORKDIR/dest"
    script -qec "PDCBB_PROGRESS_INTERVAL=0 '$PDCBB' run --nodes 1 --workdir '$WORKDIR/w' \
        --job-id 5150 --keep --drain '$WORKDIR/dest' -- '$fill' --objects 8 --size 8M" \
        /dev/null >"$WORKDIR/run.tty"
    out="$(tr '\r' '\n' <"$WORKDIR/run.tty")"
    echo "$out"
    # updates on one line (carriage returns), then the summary
    grep -qE '^pdcbb run: node0: drain: +[0-9.]+% \([0-9.]+ [KMG]iB of 64.0 MiB, [0-9] of 8 objects, [0-9]+ MiB/s, [0-9]+s left\)' <<<"$out"
    grep -qE '^pdcbb run: node0: drain: 100.0% \(64.0 MiB of 64.0 MiB, 8 of 8 objects, [0-9]+ MiB/s\)' <<<"$out"
    grep -qE '^pdcbb run: node0: drained 64.0 MiB, 8 objects of 1 rank in [0-9.]+ s' <<<"$out"
    # the drain's log (kept with the job directory): one line with everything
    grep -qE "drained ranks 0..0 of job 5150: 67108864 bytes, 8 objects, 8 extents in [0-9.]+ s \([0-9]+ MB/s\), verified, to $WORKDIR/dest/pdcbb.5150 \(the job's drain is complete\)" \
        "$WORKDIR/w/node0/pdcbb.5150/drain.log"
    # pdcbb drain by hand, on a terminal: the same progress and its final line
    job_kept 5151 1 1 "$fill" --objects 4 --size 8M
    script -qec "PDCBB_PROGRESS_INTERVAL=0 '$PDCBB' drain --to '$WORKDIR/dest' \
        '$WORKDIR/w/node0/pdcbb.5151'" /dev/null >"$WORKDIR/drain.tty"
    out="$(tr '\r' '\n' <"$WORKDIR/drain.tty")"
    echo "$out"
    grep -qE '^pdcbb drain: +[0-9.]+% \([0-9.]+ [KMG]iB of 32.0 MiB, [0-9] of 4 objects, [0-9]+ MiB/s, [0-9]+s left\)' <<<"$out"
    grep -qE '^pdcbb drain: 100.0% \(32.0 MiB of 32.0 MiB, 4 of 4 objects, [0-9]+ MiB/s\)' <<<"$out"
    grep -qE '^pdcbb drain: job 5151 ranks 0..0: 1 drained; 33554432 bytes' <<<"$out"
    # without a terminal (or with --quiet) no progress lines
    job_kept 5152 1 1 "$fill" --objects 2 --size 8M
    run "$PDCBB" drain --to "$WORKDIR/dest" "$WORKDIR/w/node0/pdcbb.5152"
    assert_success
    refute_output --partial "% ("
}
