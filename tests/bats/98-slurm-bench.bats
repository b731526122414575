#!/usr/bin/env bats
# bench/slurm.sh, the benchmark under the real local Slurm cluster: its help, one tiny run
# (a 2-node cluster with private node-local storage and the SPANK plugin, one sbatch job whose
# pdc_vpic_bench runs under srun --mpi=pmix as the test user) that prints the summary and
# exits 0, and a failing job that makes it exit 1. Each run starts and stops its own cluster:
# afterwards nothing of it may be left, neither processes nor its work directory.

load helpers

setup() {
    require_build
    [ -x "$BUILD_DIR/bench/pdc_vpic_bench" ]
}

# run_bench ARGS...: bench/slurm.sh with a results file in the test's directory; then its work
# directory (named in its output) must be gone, and no process may mention it.
run_bench() {
    cd "$REPO_DIR"
    run timeout 600 bench/slurm.sh -o "$BATS_TEST_TMPDIR/results.txt" "$@" "$BUILD_DIR"
    echo "$output"
    WORK="$(sed -n 's/.*Slurm cluster with private node-local storage in \(.*\)\/cluster$/\1/p' <<<"$output")"
    [ -n "$WORK" ]
    [ ! -e "$WORK" ]
    local left
    left="$(pgrep -f "$WORK/" || true)"
    [ -z "$left" ] || { echo "left running: $(pgrep -af "$WORK/")" >&2; kill -9 $left; return 1; }
}

@test "bench/slurm.sh --help describes the jobs and the options" {
    run "$REPO_DIR/bench/slurm.sh" --help
    assert_success
    assert_output --partial "srun --mpi=pmix -N NODES -n NODES*PPN pdc_vpic_bench"
    for opt in --nodes --ppn --jobs --particles --reopen --aligned --capacity -o; do
        assert_output --partial "  $opt"
    done
    run "$REPO_DIR/bench/slurm.sh" --jobs 0
    assert_failure 2
    run "$REPO_DIR/bench/slurm.sh" --ppn 3
    assert_failure 2
    assert_output --partial "--ppn must be 1 or 2"
    run "$REPO_DIR/bench/slurm.sh" --no-such-option
    assert_failure 2
}

@test "bench/slurm.sh: one tiny job on 2 nodes prints the summary, writes the results, exits 0" {
    run_bench --particles 64K --jobs 1
    [ "$status" -eq 0 ]
    assert_line --regexp '^bench/slurm.sh: job 1/1 \(id [0-9]+, [0-9]+ s\): ratio to raw cold write [0-9.]+ read [0-9.]+, warm write [0-9.]+ read [0-9.]+$'
    assert_line --partial "== summary: 1 job(s) of 2 node(s) x 1 process(es), pdc_vpic_bench --particles 64K"
    for m in "cold write" "cold read" "warm write" "warm read"; do
        assert_line --regexp "^$m +[0-9]+ \([0-9]+\) +[0-9]+ \([0-9]+\) +[0-9.]+ \([0-9.]+\)$"
    done
    assert_output --partial "stopped in"
    # The job ran as the test user, two processes over two nodes, each node its own daemon.
    r="$BATS_TEST_TMPDIR/results.txt"
    cat "$r"
    grep -Eq '^RESULT name=vpic_write particles=65536 procs=2 daemons=2 .* job=[0-9]+ nodes=2 ppn=1$' "$r"
    for m in bdcats_read vpic_write_cold bdcats_read_cold; do
        grep -q "^RESULT name=$m .*ratio=" "$r"
    done
    grep -q '^# cold write ' "$r"
}

@test "bench/slurm.sh: a failing job makes it exit 1 with the job's output, and still stops the cluster" {
    run_bench --particles 64K --jobs 2 --bench-args "--placement bogus"
    [ "$status" -eq 1 ]
    assert_output --partial "job 1/2 (id 1) failed: JobState=FAILED ExitCode=2:0"
    assert_output --partial "bad --placement 'bogus'"
    assert_output --partial "FAILED after 0 of 2 job(s)"
    assert_output --partial "stopped in"
}
