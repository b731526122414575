#!/usr/bin/env bats
# docs/TEST-CLUSTER.md as a reader follows it: every ```sh block of the page runs exactly as
# printed, from the repository root, in a fresh shell that stops at the first failing command,
# each against a real local cluster that the block itself starts and stops.

load helpers

setup_file() {
    require_build
    # The job user runs the daemon from the build tree the page names: give it a copy it can
    # reach wherever this checkout lives (the page's PDCBB_BUILD_DIR knob).
    BUILD_COPY="$(mktemp -d /tmp/pdcbb-bats-docbuild.XXXXXX)"
    mkdir -p "$BUILD_COPY/bbd" "$BUILD_COPY/cli" "$BUILD_COPY/spank_plugin"
    cp "$BBD" "$BUILD_COPY/bbd/"
    cp "$PDCBB" "$BUILD_COPY/cli/"
    cp "$BUILD_DIR/spank_plugin/spank_pdc.so" "$BUILD_COPY/spank_plugin/"
    chmod -R a+rX "$BUILD_COPY"
    export BUILD_COPY
    awk '/^```sh$/ {n++; on = 1; next} on && /^```$/ {on = 0; next} on {print > (dir "/block" n ".sh")}' \
        dir="$BUILD_COPY" "$REPO_DIR/docs/TEST-CLUSTER.md"
}

teardown_file() {
    rm -rf "$BUILD_COPY"
}

# run_block N: the page's Nth sh block, as printed.
run_block() {
    [ -s "$BUILD_COPY/block$1.sh" ]
    cd "$REPO_DIR"
    run timeout 300 env PDCBB_BUILD_DIR="$BUILD_COPY" bash -e "$BUILD_COPY/block$1.sh"
    echo "$output"
}

@test "the page has the four command blocks this test knows" {
    [ "$(ls "$BUILD_COPY"/block*.sh | wc -l)" -eq 4 ]
}

@test "TEST-CLUSTER.md: using it by hand" {
    run_block 1
    assert_success
    assert_output --partial "2 n3"
    assert_output --partial "stopped in"
}

@test "TEST-CLUSTER.md: waiting for a job by polling the queue" {
    run_block 2
    assert_success
    assert_output --partial "JobState=COMPLETED"
    assert_output --partial "ExitCode=0:0"
}

@test "TEST-CLUSTER.md: looking at a node with exec and node-local-dir" {
    run_block 3
    assert_success
    assert_output --partial "not on n1"
    assert_output --partial "from-n2"
    [ "$(grep -c '^n[123]: f$' <<<"$output")" -eq 1 ]
    [ ! -e /tmp/pdcbb-node-local ]
}

@test "TEST-CLUSTER.md: run pdcbb on the test cluster" {
    run_block 4
    assert_success
    # each node sees only its own daemon's files, and the drain verifies
    for k in 1 2 3; do grep -qE "^n$k: bbd-$(( k - 1 ))\.endpoint$" <<<"$output"; done
    assert_output --partial ": OK"
    [ ! -e /tmp/pdcbb-site ] && [ ! -e /tmp/pdcbb-slurm/slurm.conf ]
}
