#!/usr/bin/env bats
# pdc_bbd on its own: options, configuration, start-up failures reported on the ready pipe,
# clean shutdown on SIGTERM, restart on the same job directory.

load helpers

setup() {
    require_build
    make_workdir
    JOBDIR="$WORKDIR/job"
    mkdir -m 700 "$JOBDIR"
    printf '%s\n' "$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" > "$JOBDIR/token"
    chmod 600 "$JOBDIR/token"
    printf 'listen_address: 127.0.0.1\nucx_net_devices: lo\nlmdb_map_size: 64M\n' > "$JOBDIR/config.yaml"
}

teardown() {
    cleanup_workdir
}

start_daemon() { # rank nservers; sets PID
    "$BBD" --job-dir "$JOBDIR" --rank "$1" --nservers "$2" --job-id 77 --node "n$1" \
        3>"$WORKDIR/ready.$1" --ready-fd 3 &
    PID=$!
    for _ in $(seq 100); do
        grep -q . "$WORKDIR/ready.$1" 2>/dev/null && break
        sleep 0.05
    done
}

@test "pdc_bbd --help describes every option" {
    run "$BBD" --help
    assert_success
    for opt in --job-dir --rank --nservers --job-id --node --config --ready-fd --foreground --print-config; do
        assert_output --partial "$opt"
    done
}

@test "pdc_bbd refuses bad and missing options with the option named" {
    run "$BBD" --job-dir "$JOBDIR" --rank x --nservers 2 --job-id 1 --node n
    assert_failure 2
    assert_output --partial "bad --rank 'x'"
    run "$BBD" --job-dir "$JOBDIR" --rank 0 --nservers 0 --job-id 1 --node n
    assert_failure 2
    assert_output --partial "bad --nservers '0'"
    run "$BBD" --job-dir "$JOBDIR" --rank 2 --nservers 2 --job-id 1 --node n
    assert_failure 2
    assert_output --partial "--rank 2 is not below --nservers 2"
    run "$BBD" --job-dir "$JOBDIR" --rank 0 --nservers 1 --node n
    assert_failure 2
    assert_output --partial "missing required option --job-id"
    run "$BBD" --bogus
    assert_failure 2
}

@test "pdc_bbd --print-config shows the job's resolved configuration" {
    run "$BBD" --job-dir "$JOBDIR" --print-config
    assert_success
    assert_output --partial "lmdb_map_size: 64M"
    assert_output --partial "listen_address:"
    PDCBB_LOG_LEVEL=debug run "$BBD" --job-dir "$JOBDIR" --print-config
    assert_output --partial "log_level: debug"
}

@test "pdc_bbd reports a bad configuration file on the ready pipe and exits" {
    printf 'lmdb_map_size: lots\n' > "$JOBDIR/config.yaml"
    start_daemon 0 1
    wait "$PID" || true
    run cat "$WORKDIR/ready.0"
    assert_output --partial "error"
    assert_output --partial "lmdb_map_size"
    assert_output --partial "config.yaml:1"
}

@test "pdc_bbd without the job token reports it and leaves no pid file" {
    rm "$JOBDIR/token"
    start_daemon 0 1
    status=0
    wait "$PID" || status=$?
    [ "$status" -eq 1 ]
    run cat "$WORKDIR/ready.0"
    assert_output --partial "error cannot read the job token"
    [ ! -e "$JOBDIR/bbd-0.pid" ]
    [ ! -e "$JOBDIR/bbd-0.endpoint" ]
}

@test "pdc_bbd reports ready, writes its records, and SIGTERM stops it cleanly" {
    start_daemon 0 1
    run cat "$WORKDIR/ready.0"
    assert_output --regexp '^ready 0 [0-9]+$'
    [ -s "$JOBDIR/bbd-0.endpoint" ]
    [ "$(cat "$JOBDIR/bbd-0.pid")" = "$PID" ]
    [ -f "$JOBDIR/bbd-0/data.mdb" ]
    grep -q "^port=$(awk '{print $3}' "$WORKDIR/ready.0")\$" "$JOBDIR/bbd-0.endpoint"
    kill -TERM "$PID"
    wait "$PID"
    [ ! -e "$JOBDIR/bbd-0.endpoint" ]
    [ ! -e "$JOBDIR/bbd-0.pid" ]
    grep -q "stopped cleanly" "$JOBDIR/bbd-0.log"
}

@test "a restarted daemon serves what it acknowledged before SIGKILL" {
    start_daemon 0 1
    PDCBB_JOB_DIR="$JOBDIR" run "$TOOL" "cont-create keep" "obj-create keep kept int 1 10" \
        "tag-put obj kept answer int 42"
    assert_success
    kill -9 "$PID"
    wait "$PID" || true
    start_daemon 0 1
    PDCBB_JOB_DIR="$JOBDIR" run "$TOOL" "obj-open kept" "tag-get obj kept answer" "cont-list"
    assert_success
    assert_output --partial "dims=10"
    assert_output --partial "value=42"
    assert_output --partial "cont-list keep"
    kill -TERM "$PID"
    wait "$PID"
}
