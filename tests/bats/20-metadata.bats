#!/usr/bin/env bats
# The PDC metadata API end to end: real daemons started by `pdcbb run`, real UCX, real LMDB.
# Every case runs its client processes inside one local job.

load helpers

setup() {
    require_build
    make_workdir
}

teardown() {
    cleanup_workdir
}

# Run a shell script inside a local job of N nodes.
in_job() {
    local nodes=$1
    shift
    run "$PDCBB" run --nodes "$nodes" --workdir "$WORKDIR" --quiet -- bash -c "$*"
}

@test "objects created by name in one process are opened from another" {
    in_job 2 "
        '$TOOL' 'cont-create shared' 'obj-create shared temperature float 3 4 5 6' \
                'tag-put obj temperature units string kelvin' || exit 1
        '$TOOL' 'obj-open temperature' 'tag-get obj temperature units' 'cont-info shared'
    "
    assert_success
    assert_output --partial "ok obj-open name=temperature type=PDC_FLOAT ndim=3 dims=4x5x6"
    assert_output --partial "value=kelvin"
    assert_output --partial "ok cont-info name=shared"
    assert_no_daemons "$WORKDIR"
}

@test "names hash across every daemon of a 3-node job" {
    in_job 3 "'$TOOL' 'cont-create c' 'many-objs c obj 60' 'info'"
    assert_success
    assert_output --regexp "discovery=(daemon|jobtable) nservers=3"
    line="$(grep 'many-objs per-server' <<<"$output")"
    read -r -a counts <<<"${line#*per-server: }"
    [ "${#counts[@]}" -eq 3 ]
    for c in "${counts[@]}"; do [ "$c" -gt 5 ]; done
    [ $(( counts[0] + counts[1] + counts[2] )) -eq 60 ]
    assert_no_daemons "$WORKDIR"
}

@test "containers spread over daemons too, and iteration finds them all" {
    in_job 2 "
        for c in alpha beta gamma delta epsilon; do '$TOOL' \"cont-create \$c\" >/dev/null || exit 1; done
        '$TOOL' 'cont-list' 'cont-create alpha'
    "
    assert_success
    for c in alpha beta gamma delta epsilon; do assert_output --partial " $c"; done
}

@test "every PDC tag type round-trips, on objects and containers" {
    in_job 2 "
        '$TOOL' 'cont-create c' 'obj-create c o double 1 8' 'tag-all-types o' \
                'tag-put cont c owner string alice' 'tag-put cont c level int 3' || exit 1
        '$TOOL' 'tag-all-types o' 'tag-get cont c owner' 'tag-get cont c level' \
                'tag-del cont c level' 'tag-get cont c level'
    "
    assert_success
    assert_output --partial "PDC_INT PDC_FLOAT PDC_DOUBLE PDC_CHAR PDC_STRING PDC_BOOLEAN PDC_SHORT PDC_UINT PDC_INT64 PDC_UINT64 PDC_INT16 PDC_INT8 PDC_UINT8 PDC_UINT16 PDC_INT32 PDC_UINT32 PDC_LONG PDC_VOID_PTR PDC_SIZE_T"
    assert_output --partial "value=alice"
    assert_output --partial "type=PDC_INT size=4 value=3"
    # a deleted tag: PDC's answer (success, value NULL, size 0), the cause kept
    assert_output --partial "ok tag-get level absent (PDCBB_ERR_NOT_FOUND: PDCcont_get_tag: container 'c' has no tag 'level')"
}

@test "PDCobj_prop_query finds a container's objects by name, container name, app name and user id" {
    # user_id is 0 unless the object property set another (PDCprop_set_obj_user_id)
    in_job 2 "
        '$TOOL' 'cont-create c' 'cont-create d' 'obj-create c a int 1 4' 'obj-create c b int 1 4' \
            'obj-create c e int 1 4' 'obj-create d f int 1 4' \
            'prop-query c obj_name b' 'prop-query c obj_name f' 'prop-query c cont_name c' \
            'prop-query d cont_name c' 'prop-query c app_name pdc_meta_tool' \
            'prop-query c app_name other' 'prop-query d user_id 0' 'prop-query d user_id 4242' \
            'obj-del b' 'prop-query c cont_name c' '!INVAL prop-query c 9 x'
    "
    echo "$output"
    assert_success
    [ "$(grep -c '^ok prop-query' <<<"$output")" -eq 9 ]
    grep '^ok prop-query' <<<"$output" | awk '{print $3}' | tr '\n' ' ' >"$WORKDIR/n"
    [ "$(cat "$WORKDIR/n")" = "n=1 n=0 n=3 n=0 n=3 n=0 n=1 n=0 n=2 " ]
    assert_output --partial "PDCobj_prop_query: unknown field 9"
}

@test "tag search finds objects on every daemon" {
    in_job 2 "
        '$TOOL' 'cont-create c' 'many-objs c t 8' >/dev/null || exit 1
        for i in 0 1 2 3 4 5 6 7; do
            v=odd; [ \$((i % 2)) -eq 0 ] && v=even
            '$TOOL' \"tag-put obj t\$i parity string \$v\" >/dev/null || exit 1
        done
        '$TOOL' 'tag-search parity even'
    "
    assert_success
    assert_output --regexp "tag-search n=4 names=(t[0246],){3}t[0246]"
}

@test "duplicate names, unknown names, bad ids and wrong kinds give clear errors" {
    in_job 2 "
        '$TOOL' 'cont-create c' 'obj-create c dup int 1 4' \
            '!EXISTS obj-create c dup int 1 4' \
            '!NOT_FOUND obj-open no-such-object' \
            '!NOT_FOUND cont-open no-such-container' \
            '!BAD_ID stale-id dup' \
            '!BAD_ID foreign-id' \
            '!WRONG_TYPE wrong-kind c' \
            '!INVAL bad-type dup' \
            'tag-get obj dup missing' \
            '!INVAL obj-set-dims dup 2 4 4' \
            '!INVAL obj-create c zero int 2 4 0'
    "
    assert_success
    assert_output --partial "an object named 'dup' already exists"
    assert_output --partial "no object named 'no-such-object'"
    assert_output --partial "no container named 'no-such-container'"
    assert_output --partial "is not a live object id"
    assert_output --partial "is a container, not an object"
    assert_output --partial "bad tag value type 77"
    # as PDC: a missing tag is success with no value; the cause is kept
    assert_output --partial "ok tag-get missing absent (PDCBB_ERR_NOT_FOUND: PDCobj_get_tag: object 'dup' has no tag 'missing')"
    assert_output --partial "dims[1] is 0"
}

@test "object dimensions change and deletes remove names" {
    in_job 2 "
        '$TOOL' 'cont-create c' 'obj-create c grow double 2 10 10' 'obj-set-dims grow 2 20 10' || exit 1
        '$TOOL' 'obj-open grow' 'obj-del grow' '!NOT_FOUND obj-open grow' 'obj-create c grow int 1 5'
    "
    assert_success
    assert_output --partial "ok obj-set-dims ndim=2 dims=20x10"
    assert_output --partial "ok obj-open name=grow type=PDC_DOUBLE ndim=2 dims=20x10"
    assert_output --partial "ok obj-create name=grow type=PDC_INT ndim=1 dims=5"
}

@test "container object lists and object iteration" {
    in_job 2 "
        '$TOOL' 'cont-create box' 'cont-create other' 'obj-create box a' 'obj-create box b' \
                'obj-create other z' 'objids-put box a b' 'objids-get box' 'obj-list box'
    "
    assert_success
    assert_output --partial "ok objids-get n=2"
    assert_output --regexp "ok obj-list (a b|b a)$"
}

@test "a client outside any job gets a clear error from PDCinit" {
    run "$TOOL" info
    assert_failure
    assert_output --partial "PDCBB_ERR_DISCOVERY"
    assert_output --partial "PDCBB_JOB_DIR is not set"
}

@test "the demo program runs in a 2-node local job" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR" -- "$DEMO"
    assert_success
    assert_output --partial "connected to 2 burst-buffer daemon(s)"
    assert_output --partial "container simulation has 6 objects"
    assert_output --partial "demo done"
    assert_no_daemons "$WORKDIR"
}
