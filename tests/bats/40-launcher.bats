#!/usr/bin/env bats
# `pdcbb run`, the local job: the same prolog/epilog the Slurm plugin uses, the step's
# environment, exit status, failures, Ctrl-C, and nothing left running afterwards.

load helpers
bats_require_minimum_version 1.5.0

setup() {
    require_build
    make_workdir
    MOUNTS=()
}

teardown() {
    unmount_tmpfs
    cleanup_workdir
}

@test "pdcbb --help, --version and bad usage" {
    run "$PDCBB" --help
    assert_success
    assert_output --partial "run"
    assert_output --partial "status"
    run "$PDCBB" --version
    assert_success
    assert_output --regexp "[0-9]+\.[0-9]+\.[0-9]+"
    run "$PDCBB" frobnicate
    assert_failure 2
    assert_output --partial "frobnicate"
    run "$PDCBB" run --nodes zero -- true
    assert_failure 2
    assert_output --partial "--nodes"
    assert_output --partial "'zero'"
    run "$PDCBB" run --nodes 2
    assert_failure 2
    run "$PDCBB" run --pdc capasity=1G -- true
    assert_failure 2
    assert_output --partial "unknown key 'capasity'"
    run "$PDCBB" run --pdc capacity=12Q -- true
    assert_failure 2
    assert_output --partial "bad size '12Q'"
    run "$PDCBB" run --pdc local_root=/tmp -- true
    assert_failure 2
    assert_output --partial "site configuration"
}

@test "the command gets the step environment and its exit status is returned" {
    run "$PDCBB" run --nodes 3 --workdir "$WORKDIR" --job-id 4242 -- bash -c '
        echo "job=$PDCBB_JOB_ID nnodes=$PDCBB_NNODES node=$PDCBB_NODE_NAME"
        echo "dir=$PDCBB_JOB_DIR"
        echo "dirs=$PDCBB_SERVER_DIRS"
        ls "$PDCBB_JOB_DIR"
        stat -c "mode=%a" "$PDCBB_JOB_DIR"
        exit 7'
    assert_failure 7
    assert_output --partial "job=4242 nnodes=3 node=node0"
    assert_output --partial "dir=$WORKDIR/node0/pdcbb.4242"
    assert_output --partial "dirs=$WORKDIR/node0/pdcbb.4242:$WORKDIR/node1/pdcbb.4242:$WORKDIR/node2/pdcbb.4242"
    assert_output --partial "bbd-0.endpoint"
    assert_output --partial "token"
    assert_output --partial "mode=700"
    assert_output --partial "status 7"
    assert_no_daemons "$WORKDIR"
    # Data is kept in the work directory given by the user; daemons are gone.
    [ -f "$WORKDIR/node1/pdcbb.4242/bbd-1/data.mdb" ]
    [ ! -e "$WORKDIR/node1/pdcbb.4242/bbd-1.pid" ]
}

@test "servers_per_node starts several daemons per node and pdcbb status lists them" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --pdc servers_per_node=2 -- bash -c '
        "'"$PDCBB"'" status
        echo "status_exit=$?"
        "'"$TOOL"'" info "cont-create c" "many-objs c x 40"'
    assert_success
    [ "$(grep -c running <<<"$output")" -eq 4 ]
    assert_output --partial "status_exit=0"
    assert_output --partial "nservers=4"
    assert_output --regexp "per-server: [1-9][0-9]* [1-9][0-9]* [1-9][0-9]* [1-9][0-9]*"
    assert_no_daemons "$WORKDIR"
}

@test "pdcbb status reports a dead daemon" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" --quiet -- bash -c '
        IFS=: read -r d0 d1 <<<"$PDCBB_SERVER_DIRS"
        kill -9 "$(cat "$d1/bbd-1.pid")"
        sleep 0.5
        "'"$PDCBB"'" status
        echo "status_exit=$?"'
    assert_output --partial "dead"
    assert_output --partial "status_exit=1"
    assert_no_daemons "$WORKDIR"
}

@test "a command that cannot be executed exits 127 and the daemons are stopped" {
    run -127 "$PDCBB" run --nodes 2 --workdir "$WORKDIR" -- /no/such/program
    assert_failure 127
    assert_output --partial "/no/such/program"
    assert_no_daemons "$WORKDIR"
}

@test "a daemon binary under another name (PDCBB_DAEMON_PATH) is stopped at the end too" {
    mkdir -p "$WORKDIR/bin"
    cp "$BBD" "$WORKDIR/bin/site_bbd"
    run env PDCBB_DAEMON_PATH="$WORKDIR/bin/site_bbd" "$PDCBB" run --nodes 2 \
        --workdir "$WORKDIR/job" -- true
    local left
    left="$(pgrep -f "site_bbd .*--job-dir $WORKDIR/job" || true)"
    [ -z "$left" ] || kill -9 $left
    assert_success
    assert_output --partial "2 daemons stopped"
    refute_output --partial "had already exited"
    [ -z "$left" ]
}

@test "a daemon that cannot start fails the run with its reason, without running the command" {
    PDCBB_DAEMON_PATH=/no/such/pdc_bbd run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" -- \
        bash -c 'echo command-ran'
    assert_failure 1
    refute_output --partial "command-ran"
    assert_output --partial "/no/such/pdc_bbd"
    assert_no_daemons "$WORKDIR"
    # The reason is recorded where clients and pdcbb status find it.
    run cat "$WORKDIR"/node0/pdcbb.*/prolog.error
    assert_output --partial "/no/such/pdc_bbd"
    # it names its node, so a client that reads several nodes' directories says whose it is
    assert_output --regexp "^node node0: "
    run "$PDCBB" status --workdir "$WORKDIR"
    assert_failure 1
}

@test "a capacity larger than the filesystem is refused with both sizes named" {
    run "$PDCBB" run --nodes 1 --workdir "$WORKDIR" --pdc capacity=1P -- true
    assert_failure 1
    assert_output --partial "1P"
    assert_output --partial "free"
    assert_no_daemons "$WORKDIR"
}

@test "Ctrl-C stops the command and the daemons" {
    "$PDCBB" run --nodes 2 --workdir "$WORKDIR" -- sleep 60 > "$WORKDIR/out" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        [ "$(daemons_under "$WORKDIR" | wc -l)" -eq 2 ] && pgrep -f "^sleep 60" > /dev/null && break
        sleep 0.1
    done
    [ "$(daemons_under "$WORKDIR" | wc -l)" -eq 2 ]
    kill -INT "$pid"
    status=0
    wait "$pid" || status=$?
    cat "$WORKDIR/out"
    [ "$status" -eq 130 ]
    assert_no_daemons "$WORKDIR"
}

@test "the temporary work directory is removed unless --keep" {
    export TMPDIR="$WORKDIR"
    run "$PDCBB" run --nodes 1 -- bash -c 'echo "dir=$PDCBB_JOB_DIR"'
    assert_success
    dir="$(sed -n 's/^dir=//p' <<<"$output")"
    [ -n "$dir" ]
    [ ! -e "$dir" ]
    run "$PDCBB" run --nodes 1 --keep -- bash -c 'echo "dir=$PDCBB_JOB_DIR"'
    assert_success
    dir="$(sed -n 's/^dir=//p' <<<"$output")"
    [ -d "$dir" ]
}

@test "a run whose burst buffer does not start prints the daemon's log and leaves no temporary directory unless --keep" {
    export TMPDIR="$WORKDIR/tmp"
    mkdir -p "$TMPDIR"
    # an address of no interface here (TEST-NET-1): the daemon cannot listen
    printf 'listen_address: 192.0.2.77\n' > "$WORKDIR/site.yaml"
    run "$PDCBB" run --site-config "$WORKDIR/site.yaml" --nodes 2 -- true
    echo "$output"
    assert_failure 1
    assert_output --partial "node0: daemon rank 0 on node0 failed to start: UCX cannot listen on 192.0.2.77"
    assert_output --partial "pdcbb run: node0: bbd-0.log:"
    assert_output --partial "error: start-up failed: UCX cannot listen on 192.0.2.77"
    assert_output --partial "job data removed (--keep keeps it, with the daemons' logs)"
    [ -z "$(ls -A "$TMPDIR")" ]
    # a capacity the node cannot give: refused before any daemon starts, nothing left either
    run "$PDCBB" run --nodes 1 --pdc capacity=1P -- true
    assert_failure 1
    assert_output --partial "exceeds the free space"
    [ -z "$(ls -A "$TMPDIR")" ]
    # the daemons' metadata stores count too: 150 MiB fits a 200 MiB file system, 150 MiB
    # plus two stores of 104 MiB ahead does not (one store does)
    mount_tmpfs "$WORKDIR/small" size=200m
    run env TMPDIR="$WORKDIR/small" "$PDCBB" run --nodes 1 --pdc capacity=150M,servers_per_node=2 -- true
    assert_failure 1
    assert_output --partial "requested capacity 150M plus 208M for the metadata of 2 daemon(s) exceeds the free space"
    [ -z "$(ls -A "$WORKDIR/small")" ]
    run env TMPDIR="$WORKDIR/small" "$PDCBB" run --nodes 1 --pdc capacity=80M -- true
    assert_success
    run "$PDCBB" run --site-config "$WORKDIR/site.yaml" --nodes 1 --keep -- true
    assert_failure 1
    assert_output --partial "job data kept in $TMPDIR/pdcbb-run."
    [ -s "$(echo "$TMPDIR"/pdcbb-run.*/node0/pdcbb.*/bbd-0.log)" ]
    assert_no_daemons "$WORKDIR"
}

@test "a client finds every daemon from job.table, or asks its node's daemon when it is missing or damaged" {
    run "$PDCBB" run --nodes 3 --workdir "$WORKDIR" --quiet -- bash -c '
        unset PDCBB_SERVER_DIRS
        export PDCBB_JOB_DIR="$WORKDIR/node2/pdcbb.$PDCBB_JOB_ID" PDCBB_NODE_NAME=node2
        for i in $(seq 100); do [ -s "$PDCBB_JOB_DIR/job.table" ] && break; sleep 0.05; done
        "'"$TOOL"'" info "cont-create c" "many-objs c o 12"
        rm "$PDCBB_JOB_DIR/job.table"
        "'"$TOOL"'" info
        echo "garbage" > "$PDCBB_JOB_DIR/job.table"
        "'"$TOOL"'" info "obj-open o0" "obj-open o11"
        ls "$WORKDIR/rendezvous"'
    echo "$output"
    assert_success
    assert_line "ok info discovery=jobtable nservers=3"
    [ "$(grep -c '^ok info discovery=daemon nservers=3$' <<<"$output")" -eq 2 ]
    assert_output --regexp "per-server: [1-9][0-9]* [1-9][0-9]* [1-9][0-9]*"
    assert_output --regexp "job\.[0-9]+\.[0-9a-f]{32}"
    assert_no_daemons "$WORKDIR"
    # the epilogs removed the rendezvous directory of the job
    [ -z "$(ls -A "$WORKDIR/rendezvous")" ]
}

@test "every subcommand names the bad option itself, bundled or not, and exits 2" {
    for cmd in run status ls get export verify drain why stats bcast "kv ls" "admin stranded"; do
        name="${cmd% ls}" # `pdcbb kv ACTION` reports as `pdcbb kv`
        # An unknown short option bundled with a good one: the message names '-Z', not the word.
        run $PDCBB $cmd -Zq
        assert_failure 2
        assert_output "pdcbb $name: unknown option '-Z' (see pdcbb $name --help)"
        run $PDCBB $cmd --no-such-option
        assert_failure 2
        assert_output "pdcbb $name: unknown option '--no-such-option' (see pdcbb $name --help)"
    done
    # A short option that needs a value, last in a bundle, is named alone too.
    run "$PDCBB" drain -qt
    assert_failure 2
    assert_output "pdcbb drain: option '-t' needs a value (see pdcbb drain --help)"
    run "$PDCBB" admin stranded --to
    assert_failure 2
    assert_output "pdcbb admin stranded: option '--to' needs a value (see pdcbb admin stranded --help)"
}
