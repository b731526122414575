#!/usr/bin/env bats
# The suite's own set-up, which every other file leans on: scripts/test-users.sh creates and
# removes the test users, scripts/test-clean.sh finds what runs leave behind (.ci/run removes it
# for real before every run), and scripts/test.sh runs each bats file alone in a seeded random
# order.

load helpers
bats_require_minimum_version 1.5.0

USERS_SH="$REPO_DIR/scripts/test-users.sh"
CLEAN_SH="$REPO_DIR/scripts/test-clean.sh"

setup() {
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root (as the CI runs them)" >&2; return 1; }
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "test-users.sh list names the two test users" {
    run -0 "$USERS_SH" list
    assert_output "pdcbbtest
pdcbbtest2"
}

@test "test-users.sh create makes both users with private homes; again it changes nothing; remove undoes it" {
    run -0 "$USERS_SH" remove
    for u in pdcbbtest pdcbbtest2; do
        run ! getent passwd "$u"
        [ ! -e "/home/$u" ]
    done
    run -0 "$USERS_SH" create
    assert_line "test-users.sh: created test user pdcbbtest (uid $(id -u pdcbbtest))"
    assert_line "test-users.sh: created test user pdcbbtest2 (uid $(id -u pdcbbtest2))"
    for u in pdcbbtest pdcbbtest2; do
        [ "$(stat -c '%U %a' "/home/$u")" = "$u 700" ]
        [ "$(id -gn "$u")" = "$u" ]
    done
    # one user cannot look into the other's home
    run ! runuser -u pdcbbtest2 -- ls /home/pdcbbtest
    run -0 "$USERS_SH" create
    assert_output ""
    # remove ends what the user still runs, then removes user, group and home
    runuser -u pdcbbtest -- sleep 300 &
    local sleeper=$!
    sleep 0.3
    run -0 "$USERS_SH" remove
    assert_line "test-users.sh: removed test user pdcbbtest"
    assert_line "test-users.sh: removed test user pdcbbtest2"
    wait_gone "$sleeper" 5
    for u in pdcbbtest pdcbbtest2; do
        run ! getent passwd "$u"
        run ! getent group "$u"
        [ ! -e "/home/$u" ]
    done
    run -0 "$USERS_SH" create
}

@test "test-users.sh names a bad command and exits 2" {
    run -2 "$USERS_SH" frobnicate
    assert_output "test-users.sh: unknown command 'frobnicate' (see --help)"
    run -2 "$USERS_SH"
    assert_output --partial "Usage: test-users.sh COMMAND"
    run -0 "$USERS_SH" --help
    assert_output --partial "pdcbbtest pdcbbtest2"
}

@test "test-clean.sh --check lists a leftover work directory, a stopped cluster and the test users, and removes nothing" {
    "$USERS_SH" create
    mkdir -p "$WORKDIR/cluster"
    touch "$WORKDIR/cluster/.pdcbb-slurm-cluster"
    run -1 "$CLEAN_SH" --check
    assert_line "test-clean.sh: left behind: local Slurm cluster $WORKDIR/cluster"
    assert_line "test-clean.sh: left behind: $WORKDIR"
    assert_line "test-clean.sh: left behind: test user pdcbbtest"
    assert_line "test-clean.sh: left behind: test user pdcbbtest2"
    [ -e "$WORKDIR/cluster/.pdcbb-slurm-cluster" ]
    getent passwd pdcbbtest
}

@test "test-clean.sh names a bad option and exits 2" {
    run -2 "$CLEAN_SH" --all
    assert_output "test-clean.sh: unknown option '--all' (see --help)"
    run -0 "$CLEAN_SH" --help
    assert_output --partial "Removes, by name,"
}

@test "test.sh: PDCBB_TEST_SEED must be a number" {
    run -2 env PDCBB_TEST_SEED=abc "$REPO_DIR/scripts/test.sh"
    assert_output "test.sh: PDCBB_TEST_SEED must be a number, not 'abc'"
}
