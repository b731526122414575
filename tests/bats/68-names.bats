#!/usr/bin/env bats
# Names (docs/USER-GUIDE.md, "Names"): a container, object, tag or KV object name is 1 to 1023
# bytes of UTF-8 without control characters. In a real 2-node local job, libpdc refuses every
# bad name before sending anything, saying which rule broke at which byte; the daemons refuse
# the same names sent straight over the wire and keep serving; valid names in several scripts
# drain and list back. Whatever a drain directory or a FAILED report holds (an older version's
# drain, or one planted by someone), pdcbb ls and pdcbb why print its names escaped.

load helpers
bats_require_minimum_version 1.5.0

JOB_ID=6801

setup_file() {
    require_build
    NAMES_WORK="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats-names.XXXXXX")"
    export NAMES_WORK
    mkdir -p "$NAMES_WORK/dest"
    # The job: bad names through the API (each must fail with the code given after '!'), then
    # valid ones; then bad names straight to daemon 0 over the wire, and a request after them.
    cat > "$NAMES_WORK/job.sh" <<'EOF'
T=$1 R=$2 W=$3
ep="$PDCBB_JOB_DIR/bbd-0.endpoint" tok="$PDCBB_JOB_DIR/token"
"$T" "!BAD_NAME cont-create "$'c\xff\xfe' \
     "!BAD_NAME cont-create "$'c\x1b]0;owned\x07' \
     "!BAD_NAME cont-open "$'c\xff\xfe' \
     'cont-create plain' \
     "!BAD_NAME obj-create plain "$'o\xc3' \
     "!BAD_NAME obj-create plain "$'o\xc0\x80x' \
     "!BAD_NAME obj-create plain "$'o\xed\xa0\x80' \
     "!BAD_NAME obj-create plain "$'o\rx' \
     "!BAD_NAME obj-open "$'o\xc3' \
     'obj-create plain ok int 1 4' \
     "!BAD_NAME tag-put obj ok "$'t\x80'" string v" \
     "!BAD_NAME tag-get obj ok "$'t\x80' \
     "!BAD_NAME tag-del obj ok "$'t\x07' \
     "!BAD_NAME tag-put cont plain "$'t\xc2\x9b'" string v" \
     "!BAD_NAME kv-create plain "$'k\x1b[0m' \
     "!BAD_NAME kv-create plain "$'k\xf4\x90\x80\x80' \
     "!BAD_NAME prop-set app_name "$'sim\xff' \
     "!BAD_NAME prop-set data_loc "$'/d/\xc3' \
     "!BAD_NAME prop-set tags "$'t=\xed\xa0\x80' \
     "prop-set app_name "$'sim\tv2' \
     'cont-create café' \
     'obj-create café 数据 float 1 8' \
     'obj-create café 🚀rocket int 2 2 3' \
     'tag-put obj 数据 élan string naïve' \
     'tag-put cont café 温度 int 21' \
     'kv-create café clé' || echo "API CHECKS FAILED"
for c in namecont contopen nameobj objopen nametag nametagget nametagsearch namekv; do
    echo -n "raw $c: "; "$R" "$ep" "$tok" $c $'c\xff\xfe'
done
echo -n "raw esc: "; "$R" "$ep" "$tok" namecont $'x\x1b[2J'
echo -n "raw c1: "; "$R" "$ep" "$tok" nameobj $'x\xc2\x85'
echo -n "raw after: "; "$R" "$ep" "$tok" good
"$T" 'obj-create café still-serving int 1 2'
cp "$PDCBB_JOB_DIR/bbd-0.log" "$W/bbd-0.log"
EOF
    "$PDCBB" run --nodes 2 --workdir "$NAMES_WORK/job" --job-id "$JOB_ID" \
        --drain "$NAMES_WORK/dest" -- bash "$NAMES_WORK/job.sh" "$TOOL" "$RAWMSG" "$NAMES_WORK" \
        >"$NAMES_WORK/job.out" 2>"$NAMES_WORK/job.err" || {
        cat "$NAMES_WORK/job.out" "$NAMES_WORK/job.err" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${NAMES_WORK:-}" ] || return 0
    assert_no_daemons "$NAMES_WORK"
    rm -rf "$NAMES_WORK"
}

@test "libpdc refuses every bad name before sending, naming the rule, the kind and the byte" {
    run cat "$NAMES_WORK/job.out"
    refute_output --partial "API CHECKS FAILED"
    refute_output --partial "UNEXPECTED"
    refute_output --partial "FAILED:"
    local e="error PDCBB_ERR_BAD_NAME:"
    assert_line "$e PDCcont_create: container name is not valid UTF-8 at byte 1"
    assert_line "$e PDCcont_create: container name holds control character 0x1b at byte 1"
    assert_line "$e PDCcont_open: container name is not valid UTF-8 at byte 1"
    [ "$(grep -c "^$e PDCobj_create: object name is not valid UTF-8 at byte 1$" <<<"$output")" -eq 3 ]
    assert_line "$e PDCobj_create: object name holds control character 0x0d at byte 1"
    assert_line "$e PDCobj_open: object name is not valid UTF-8 at byte 1"
    assert_line "$e PDCobj_put_tag: tag name is not valid UTF-8 at byte 1"
    assert_line "$e PDCobj_get_tag: tag name is not valid UTF-8 at byte 1"
    assert_line "$e PDCobj_del_tag: tag name holds control character 0x07 at byte 1"
    assert_line "$e PDCcont_put_tag: tag name holds control character 0x9b at byte 1"
    assert_line "$e PDCkv_create: KV object name holds control character 0x1b at byte 1"
    assert_line "$e PDCkv_create: KV object name is not valid UTF-8 at byte 1"
    # free text kept with an object is drained too: UTF-8 only (control characters allowed)
    assert_line "$e PDCprop_set_obj_app_name: app_name is not valid UTF-8 at byte 3"
    assert_line "$e PDCprop_set_obj_data_loc: data_loc is not valid UTF-8 at byte 3"
    assert_line "$e PDCprop_set_obj_tags: tags is not valid UTF-8 at byte 2"
    assert_line "ok prop-set app_name"
    # valid names in several scripts
    assert_line "ok cont-create café"
    assert_line --regexp "^ok obj-create name=数据 "
    assert_line --regexp "^ok obj-create name=🚀rocket "
    assert_line "ok kv-create clé"
    # nothing raw reached the output
    run grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$NAMES_WORK/job.out" "$NAMES_WORK/job.err"
    assert_output "$NAMES_WORK/job.out:0"$'\n'"$NAMES_WORK/job.err:0"
}

@test "a daemon answers a bad name sent over the wire with PDCBB_ERR_BAD_NAME and keeps serving" {
    run cat "$NAMES_WORK/job.out"
    local c
    for c in namecont contopen nameobj objopen nametag nametagget nametagsearch namekv; do
        assert_line "raw $c: status PDCBB_ERR_BAD_NAME"
    done
    assert_line "raw esc: status PDCBB_ERR_BAD_NAME"
    assert_line "raw c1: status PDCBB_ERR_BAD_NAME"
    assert_line --regexp "^raw after: status PDCBB_OK$"
    assert_line --regexp "^ok obj-create name=still-serving "
    # its log names what it refused, escaped: never a raw byte
    local log="$NAMES_WORK/bbd-0.log"
    grep -qF "refused container name 'c\\xff\\xfe': container name is not valid UTF-8 at byte 1" "$log"
    grep -qF "refused container name 'x\\x1b[2J': container name holds control character 0x1b at byte 1" "$log"
    grep -qF "refused object name 'x\\xc2\\x85': object name holds control character 0x85 at byte 1" "$log"
    run env LC_ALL=C grep -c $'[\x1b\xff\x85]' "$log"
    assert_output "0"
}

@test "valid UTF-8 names drain, and pdcbb ls shows them; nothing refused was stored" {
    local dir="$NAMES_WORK/dest/pdcbb.$JOB_ID"
    [ -f "$dir/COMPLETE" ]
    run ! ls "$NAMES_WORK/dest"/*.FAILED
    run "$PDCBB" verify "$dir"
    assert_success
    run "$PDCBB" ls "$dir"
    assert_success
    assert_line --regexp "^  café +persistent +3 +温度=21 \(INT\)$"
    assert_line --regexp "^  plain +persistent +1 +-$"
    assert_line --regexp "^  数据 +café +PDC_FLOAT +8 .*élan=\"naïve\" \(STRING\)$"
    assert_line --regexp "^  🚀rocket +café +PDC_INT +2x3 "
    assert_line --regexp "^CONTAINERS \(2\)$"
    assert_line --regexp "^OBJECTS \(4\)$"
    run "$PDCBB" kv ls "$dir"
    assert_success
    assert_output --partial "clé"
}

@test "a planted manifest with ESC, BEL and CR in names lists escaped; invalid UTF-8 is refused clearly" {
    local src="$NAMES_WORK/dest/pdcbb.$JOB_ID" dir="$NAMES_WORK/planted"
    rm -rf "$dir"
    cp -a "$src" "$dir"
    # YAML escapes make raw control bytes in the names once read
    sed -i 's/name: "plain"/name: "pl\\e]0;owned\\aain"/; s/name: "ok"/name: "o\\rk\\e[31m"/' \
        "$dir/manifest.yaml"
    grep -qF 'pl\e]0;owned\aain' "$dir/manifest.yaml"
    run "$PDCBB" ls "$dir"
    assert_success
    assert_line --regexp '^  pl\\x1b\]0;owned\\x07ain +persistent'
    assert_line --regexp '^  o\\rk\\x1b\[31m +plain +PDC_INT '
    run -0 bash -c "'$PDCBB' ls --long '$dir' | LC_ALL=C grep -c \$'[\\x07\\x0d\\x1b]' || true"
    assert_output "0"
    # bytes that are not UTF-8 in the manifest: refused with the file and the place
    cp -a "$src/manifest.yaml" "$dir/manifest.yaml"
    sed -i 's/name: "plain"/name: "pl\xffain"/' "$dir/manifest.yaml"
    run "$PDCBB" ls "$dir"
    assert_failure
    assert_output --regexp "$dir/manifest.yaml: not a valid manifest: invalid leading UTF-8 octet at byte [0-9]+"
    run -0 bash -c "'$PDCBB' ls '$dir' 2>&1 | LC_ALL=C grep -c \$'\\xff' || true"
    assert_output "0"
}

@test "pdcbb why prints a planted FAILED report escaped" {
    local dest="$NAMES_WORK/why"
    mkdir -p "$dest"
    printf 'pdcbb drain FAILED\njob: 77\nnode: n\033[31m1\nuser: me\ntime: now\007\nreason: cannot write object '"'"'x\033]0;owned\007'"'"': bad\r value \377\ndata: kept on node n1 in /x\nrecover: on node n1, as me: pdcbb drain --to %s /x\n' \
        "$dest" > "$dest/pdcbb.77.n1.FAILED"
    run "$PDCBB" why "$dest/pdcbb.77"
    assert_failure 1
    assert_output --partial 'FAILED on node n\x1b[31m1 at now\x07'
    assert_output --partial "reason: cannot write object 'x\\x1b]0;owned\\x07': bad\\r value \\xff"
    run -0 bash -c "'$PDCBB' why '$dest/pdcbb.77' | LC_ALL=C grep -c \$'[\\x07\\x0d\\x1b\\xff]' || true"
    assert_output "0"
}
