#!/usr/bin/env bats
# The job's table of daemons, gathered up and down a tree of daemons when they start
# (bbd/bbd_table_gather.c, TABLE_GATHER): every node ends with the same complete table, each
# daemon reads one record (its parent's) from the shared rendezvous directory and sends one
# request, a restarted daemon starts from its node's table and clients elsewhere reach it, and
# malformed TABLE_GATHER requests are refused. A node that fails in the middle of the tree:
# 90-slurm-pdc.bats (a local job stops when any node fails).

load helpers

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

@test "24 daemons, fanout 2 (a tree 5 levels deep): the same complete table on every node; one record read and one request per daemon" {
    in_job 24 '
        for i in $(seq 400); do
            [ "$(ls "$WORKDIR"/node*/pdcbb.*/job.table 2>/dev/null | wc -l)" -eq 24 ] && break
            sleep 0.05
        done
        echo "tables: $(ls "$WORKDIR"/node*/pdcbb.*/job.table | wc -l)"
        echo "distinct tables: $(cat "$WORKDIR"/node*/pdcbb.*/job.table | md5sum >/dev/null; md5sum "$WORKDIR"/node*/pdcbb.*/job.table | cut -d" " -f1 | sort -u | wc -l)"
        echo "records: $(grep -c "^rank=" "$WORKDIR"/node17/pdcbb.*/job.table)"
        unset PDCBB_SERVER_DIRS
        export PDCBB_JOB_DIR="$(echo "$WORKDIR"/node23/pdcbb.*)" PDCBB_NODE_NAME=node23
        "'"$TOOL"'" info "cont-create c" "many-objs c o 48"' --pdc table_fanout=2
    assert_success
    assert_line "tables: 24"
    assert_line "distinct tables: 1"
    assert_line "records: 24"
    assert_line "ok info discovery=jobtable nservers=24"
    # every daemon: at most 2 reads of its parent's record (the launcher starts parents first),
    # one request sent (none by the root), and the table gathered
    run bash -c 'grep -h "gathered in" "$WORKDIR"/node*/pdcbb.*/bbd-*.log'
    [ "${#lines[@]}" -eq 24 ]
    [ "$(grep -c "0 record reads, [0-9]* error-file checks, 0 requests sent" <<<"$output")" -eq 1 ]
    [ "$(grep -cE "[12] record reads, [0-9]+ error-file checks, 1 requests sent" <<<"$output")" -eq 23 ]
    assert_no_daemons "$WORKDIR"
}

@test "TABLE_GATHER that is not of the sender's subtree, not of this job, not parsable or from the daemon itself is refused; the daemon keeps serving" {
    in_job 3 '
        for c in gatherself gathergarbage gatherforeign gatheroutside good; do
            echo "case $c: $("'"$RAWMSG"'" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" $c | head -1)"
        done
        grep -h "TABLE_GATHER from" "$PDCBB_JOB_DIR"/bbd-0.log'
    assert_success
    assert_output --partial "case gatherself: status PDCBB_ERR_INVAL"
    assert_output --partial "case gathergarbage: status PDCBB_ERR_INVAL"
    assert_output --partial "case gatherforeign: status PDCBB_ERR_INVAL"
    assert_output --partial "case gatheroutside: status PDCBB_ERR_INVAL"
    assert_output --partial "case good: status PDCBB_OK"
    assert_output --partial "TABLE_GATHER from daemon 0: not of this daemon's subtree"
    assert_output --partial "TABLE_GATHER from daemon 1: a malformed record"
    assert_output --regexp "TABLE_GATHER from daemon 1: a record of daemon 1 of job [0-9]+ that is not of its subtree"
    assert_output --partial "TABLE_GATHER from daemon 2: a record of daemon 1 of job"
    # a one-node job gathers no table
    in_job 1 '"'"$RAWMSG"'" "$PDCBB_JOB_DIR/bbd-0.endpoint" "$PDCBB_JOB_DIR/token" gatheroutside
        grep -h "TABLE_GATHER from" "$PDCBB_JOB_DIR"/bbd-0.log'
    assert_output --partial "status PDCBB_ERR_INVAL"
    assert_output --partial "this job gathers no table (one node, or no rendezvous directory)"
}

@test "a daemon killed and restarted takes its node's table with its new address; a client on another node reaches it" {
    in_job 3 '
        IFS=: read -r d0 d1 d2 <<<"$PDCBB_SERVER_DIRS"
        "'"$TOOL"'" info "cont-create c" "many-objs c o 30" || exit 1
        pid="$(cat "$d2/bbd-2.pid")"; kill -9 "$pid"
        for i in $(seq 200); do [ -e "/proc/$pid" ] || break; sleep 0.05; done
        "'"$BBD"'" --job-dir "$d2" --rank 2 --nservers 3 --job-id "$PDCBB_JOB_ID" --node node2 \
            3>"$d2/ready" --ready-fd 3 &
        for i in $(seq 200); do grep -q ready "$d2/ready" 2>/dev/null && break; sleep 0.05; done
        grep -h "restarted: the job.s table from" "$d2"/bbd-2.log
        # node0 still has the old address of daemon 2 in its job.table: the client asks again
        "'"$TOOL"'" info "obj-open o0" "obj-open o1" "obj-open o2" "obj-open o29"
        grep -h "daemon 2 is now at" "$d0"/bbd-0.log'
    assert_success
    assert_output --partial "restarted: the job's table from"
    assert_output --partial "ok obj-open name=o29"
    assert_output --regexp "daemon 2 is now at 127\.0\.0\.1:[0-9]+"
    assert_no_daemons "$WORKDIR"
}
