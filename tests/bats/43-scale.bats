#!/usr/bin/env bats
# The scale test bed (bench/scale.sh, docs/SCALE.md), short: jobs of 16 and 48 daemons on this
# machine with 12 client processes on their own nodes. Every step completes (start, the table
# gathered by every daemon, creates on every daemon from every client, one tag search that
# finds every client's tag, the drain), and the model's bounds hold: a daemon reads at most 2
# records from the rendezvous directory whatever N, and holds at most a connection per client
# plus its tree's (F + 1) and the search's client, not one per daemon of the job.

load helpers

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "the scale test bed at 16 and 48 daemons: every step completes; record reads and connections per daemon stay bounded" {
    run env TMPDIR="$WORKDIR" "$REPO_DIR/bench/scale.sh" --nodes "16 48" --clients 12 "$BUILD_DIR"
    echo "$output"
    assert_success
    [ "${#lines[@]}" -eq 3 ]
    for n in 16 48; do
        row=$(grep -E "^$n +12 " <<<"$output")
        read -r nodes clients start gather tail reads creates rate cmax cavg msgs search again query stop <<<"$row"
        [ "$reads" -ge 1 ] && [ "$reads" -le 2 ]
        [ "$cmax" -ge 12 ] && [ "$cmax" -le $(( 12 + 16 + 1 + 1 )) ]
        [ "$msgs" -gt $(( 12 * n )) ]
    done
    assert_no_daemons "$WORKDIR"
}
