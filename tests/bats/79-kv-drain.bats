#!/usr/bin/env bats
# KV objects after the job (issue 12 item 4): a job on 3 daemons writes KV objects (string,
# int and float keys, several versions, a committed and an aborted transaction, deletion
# markers, a 1024-byte key, a 17 MiB value) and drains. `pdcbb kv` keys/get/export and the
# read-only API over the drain (PDCBB_DRAINED_DIR) answer exactly what the job read live; a
# flipped byte in a KV dump is caught by verify and by the readers; a stage-in into 1 and into
# 3 daemons answers identically; PDCkv_migrate during the job leaves a readable partial drain
# holding only the records with a tag below T.

load helpers
bats_require_minimum_version 1.5.0

TOOL="$BUILD_DIR/tests/pdc_kv_drain_check"
JOB_ID=7901
TAGS="0 1 5 6 7 10 14 15 19 20 29 30 39 40 41 max"

setup_file() {
    require_build
    [ -x "$TOOL" ] || { echo "missing $TOOL" >&2; return 1; }
    KV_WORK="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats-kvdrain.XXXXXX")"
    export KV_WORK
    mkdir -p "$KV_WORK/dest"
    cat >"$KV_WORK/job.sh" <<EOF
#!/bin/sh
set -e
"$TOOL" write C
"$TOOL" report C >"$KV_WORK/live.txt"
"$TOOL" cli C "$KV_WORK/cli"
"$TOOL" txcheck C >"$KV_WORK/live.tx"
EOF
    chmod +x "$KV_WORK/job.sh"
    "$PDCBB" run --nodes 3 --workdir "$KV_WORK/job" --job-id "$JOB_ID" \
        --drain "$KV_WORK/dest" -- "$KV_WORK/job.sh" >"$KV_WORK/job.out" 2>&1 || {
        cat "$KV_WORK/job.out" >&2
        return 1
    }
    [ -f "$KV_WORK/dest/pdcbb.$JOB_ID/COMPLETE" ] || {
        echo "the job was not drained" >&2
        cat "$KV_WORK/job.out" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${KV_WORK:-}" ] || return 0
    assert_no_daemons "$KV_WORK"
    rm -rf "$KV_WORK"
}

setup() {
    D="$KV_WORK/dest/pdcbb.$JOB_ID"
}

@test "the job read its KV objects live as the semantics say" {
    run cat "$KV_WORK/live.tx"
    assert_output "$(printf 'trans_start 30: PDCBB_ERR_EXISTS\ntrans_start 31: SUCCEED')"
    run grep -ac FAILED "$KV_WORK/live.txt"
    assert_output 0
    # versions, a deletion marker at 15, the committed transaction 30, the aborted 40
    grep -aqx "  get alpha -> tag 10 hex=$(printf alpha-10 | od -An -tx1 | tr -d ' \n')" "$KV_WORK/live.txt"
    grep -aqx "  get alpha -> tag 30 hex=$(printf alpha-30-tx | od -An -tx1 | tr -d ' \n')" "$KV_WORK/live.txt"
    ! grep -aq "$(printf alpha-40-aborted | od -An -tx1 | tr -d ' \n')" "$KV_WORK/live.txt"
    ! grep -aq "get epsilon -> tag" "$KV_WORK/live.txt"
    run sed -n '/^s tag 15 num/,/^s tag 19 num/p' "$KV_WORK/live.txt"
    assert_output --partial "get beta -> PDCBB_ERR_NOT_FOUND"
    run sed -n '/^s tag 14 num/,/^s tag 15 num/p' "$KV_WORK/live.txt"
    assert_output --partial "get beta -> tag 5"
    grep -aq "list big tag 7 len=17825792 " "$KV_WORK/live.txt"
    grep -aq "^  list LKKKK" "$KV_WORK/live.txt"
    [ "$(stat -c %s "$KV_WORK/cli/big.value")" -eq 17825792 ]
}

@test "the drain lists every KV object with its dumps, and verify checks them" {
    run "$PDCBB" kv ls "$D"
    assert_success
    assert_output --partial "3 KV objects"
    assert_line --regexp '^C +s +STRING +HASH +3 '
    assert_line --regexp '^C +i +INT +RANGE +3 '
    assert_line --regexp '^C +f +FLOAT +HASH +2 '
    grep -q "^kv_objects:" "$D/manifest.yaml"
    grep -q "^kv_dumps:" "$D/manifest.yaml"
    grep -q "committed_tags: \[30\]" "$D/manifest.yaml"
    run "$PDCBB" verify "$D"
    assert_success
    assert_output --regexp 'verified [0-9]+ extents, [0-9]+ bytes, [0-9]+ KV dumps \([0-9]+ records\): OK'
}

@test "pdcbb kv keys and get give what the job read live, at every tag" {
    for o in s i f; do
        for t in $TAGS; do
            "$PDCBB" kv keys "$D" "$o" --tag "$t" >"$BATS_TEST_TMPDIR/keys"
            cmp "$KV_WORK/cli/keys.$o.$t" "$BATS_TEST_TMPDIR/keys"
        done
    done
    # pages of keys
    "$PDCBB" kv keys "$D" i --tag 20 --offset 3 --count 4 >"$BATS_TEST_TMPDIR/page"
    sed -n 4,7p "$KV_WORK/cli/keys.i.20" | cmp - "$BATS_TEST_TMPDIR/page"
    # values: text, hex, the 17 MiB value, a NULLTAG value updated in place
    run "$PDCBB" kv get "$D" s alpha --tag 12
    assert_success
    assert_output alpha-10
    run "$PDCBB" kv get "$D" s binary --hex
    assert_output ff0001c3288078
    run "$PDCBB" kv get "$D" s zeta --tag 0
    assert_output zeta-second
    "$PDCBB" kv get "$D" s big -o "$BATS_TEST_TMPDIR/big"
    cmp "$KV_WORK/cli/big.value" "$BATS_TEST_TMPDIR/big"
    run "$PDCBB" kv get "$D" s "$(printf 'L%01023d' 0 | tr 0 K)"
    assert_output "the long key"
    run "$PDCBB" kv get --tag 14 "$D" i -- -926
    assert_output "int -926 at 1"
    run "$PDCBB" kv get --tag 13 "$D" i -- -963
    assert_output "int -963 at 1"
    run "$PDCBB" kv get --tag 14 "$D" i -- -963
    assert_failure 1
    run "$PDCBB" kv get "$D" f -- -0.0
    assert_output "minus zero is zero"
    run "$PDCBB" kv get "$D" f inf
    assert_output "float inf"
}

@test "pdcbb kv errors name what was wrong" {
    run "$PDCBB" kv get "$D" nokv a
    assert_failure 1
    assert_output --partial "unknown KV object 'nokv'"
    run "$PDCBB" kv get "$D" i 12x
    assert_failure 2
    assert_output --partial "key '12x' is not an INT"
    run "$PDCBB" kv get "$D" f 1.5.2
    assert_failure 2
    assert_output --partial "key '1.5.2' is not a FLOAT"
    run "$PDCBB" kv keys "$D" s --tag abc
    assert_failure 2
    assert_output --partial "bad tag 'abc'"
    run "$PDCBB" kv get "$D" s beta --tag 15
    assert_failure 1
    assert_output --partial "KV object 's' has no key 'beta' at tag 15"
    run "$PDCBB" kv export "$D" s --format xml
    assert_failure 2
    assert_output --partial "bad value for --format: 'xml'"
    run "$PDCBB" kv frob "$D"
    assert_failure 2
    assert_output --partial "unknown action 'frob'"
    run "$PDCBB" kv --help
    assert_success
    assert_output --partial "base64"
}

# Parse an export back and compare with the records the job listed at the latest tag.
check_export() { # format object file
    python3 - "$1" "$2" "$3" "$KV_WORK/cli/records.$2" <<'EOF'
import base64, csv, json, sys
csv.field_size_limit(sys.maxsize)  # the 17 MiB value is one field
fmt, obj, path, want_path = sys.argv[1:5]
def dec(v, enc):
    return base64.b64decode(v, validate=True) if enc == "base64" else v.encode("utf-8")
def keyrepr(k, enc):
    if enc in ("utf8", "base64"):
        return dec(k, enc).hex()
    if enc == "int":
        return str(int(k))
    return "%.17g" % float(k)
if fmt == "jsonl":
    rows = [json.loads(line) for line in open(path, encoding="utf-8")]
else:
    rows = list(csv.DictReader(open(path, newline="", encoding="utf-8")))
got = ["%s %s %s" % (keyrepr(r["key"], r["key_encoding"]), int(r["tag"]),
                     dec(r["value"], r["value_encoding"]).hex()) for r in rows]
want = [l.rstrip("\n") for l in open(want_path)]
if got != want:
    print("export differs: %d records, %d expected" % (len(got), len(want)))
    for g, w in zip(got, want):
        if g != w:
            print(" got ", g[:200]); print(" want", w[:200]); break
    sys.exit(1)
print("%d records match" % len(got))
EOF
}

@test "JSON Lines and CSV exports parse back to the records the job listed" {
    for o in s i f; do
        "$PDCBB" kv export "$D" "$o" -o "$BATS_TEST_TMPDIR/$o.jsonl"
        run check_export jsonl "$o" "$BATS_TEST_TMPDIR/$o.jsonl"
        assert_success
        "$PDCBB" kv export "$D" "$o" --format csv >"$BATS_TEST_TMPDIR/$o.csv"
        run check_export csv "$o" "$BATS_TEST_TMPDIR/$o.csv"
        assert_success
    done
    # binary values are base64, text values are text
    grep -q '"key":"binary","key_encoding":"utf8","tag":5,"value_encoding":"base64","value":"/wABwyiAeA=="' "$BATS_TEST_TMPDIR/s.jsonl"
    grep -q '"key":"unicode","key_encoding":"utf8","tag":20,"value_encoding":"utf8"' "$BATS_TEST_TMPDIR/s.jsonl"
    # every version: deletion markers included, nothing of the aborted transaction
    "$PDCBB" kv export "$D" s --all-versions --progress -o "$BATS_TEST_TMPDIR/all.jsonl" \
        2>"$BATS_TEST_TMPDIR/progress"
    grep -q "pdcbb kv export: 100.0% (19 of 19 records" "$BATS_TEST_TMPDIR/progress"
    run python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
dead = sorted((r["key"], r["tag"]) for r in rows if r["deleted"])
print(len(rows), dead, max(r["tag"] for r in rows))' "$BATS_TEST_TMPDIR/all.jsonl"
    assert_output "19 [('beta', 15), ('gamma', 30)] 30"
    # a key that is not UTF-8 is base64
    grep -q '"key":"bm90LXV0Zjgt//4=","key_encoding":"base64","tag":3' "$BATS_TEST_TMPDIR/s.jsonl"
}

@test "the read-only API over the drain answers exactly as the live job did" {
    PDCBB_DRAINED_DIR="$D" run "$TOOL" report C
    assert_success
    diff "$KV_WORK/live.txt" <(echo "$output")
    PDCBB_DRAINED_DIR="$D" run "$TOOL" readonly C
    assert_success
    for call in set unlink_keys trans_start migrate create delete; do
        assert_line "$call: PDCBB_ERR_READ_ONLY"
    done
}

@test "a flipped byte in a KV dump is caught by verify, pdcbb kv and the drained API" {
    cp -a "$D" "$BATS_TEST_TMPDIR/copy"
    local C="$BATS_TEST_TMPDIR/copy"
    # the largest dump holds the 17 MiB value: flip a byte in its middle
    local f
    f="$(ls -S "$C"/kv/*.kvd | head -1)"
    python3 -c '
import os, sys
p = sys.argv[1]; n = os.path.getsize(p)
with open(p, "r+b") as fh:
    fh.seek(n // 2); b = fh.read(1); fh.seek(n // 2); fh.write(bytes([b[0] ^ 0x40]))' "$f"
    run "$PDCBB" verify "$C"
    assert_failure 1
    assert_output --partial "BAD KV object 's'"
    assert_output --partial "checksum mismatch"
    assert_output --regexp ': 0 bad, 0 missing, 1 bad KV dumps'
    run "$PDCBB" kv get "$C" s alpha
    assert_failure 1
    assert_output --partial "checksum mismatch"
    PDCBB_DRAINED_DIR="$C" run "$TOOL" report C s
    assert_failure
    assert_output --partial "FAILED"
    # the other objects are intact
    run "$PDCBB" kv keys "$C" i
    assert_success
}

@test "stage-in into 1 and into 3 daemons answers identically, and drains again unchanged" {
    mkdir -p "$BATS_TEST_TMPDIR/dest"
    for n in 1 3; do
        run "$PDCBB" run --nodes "$n" --workdir "$BATS_TEST_TMPDIR/w$n" --job-id "79$n" \
            --stage-in "$D" --drain "$BATS_TEST_TMPDIR/dest" \
            -- sh -c "\"$TOOL\" report C >\"$BATS_TEST_TMPDIR/staged$n.txt\" &&
                      \"$TOOL\" txcheck C >\"$BATS_TEST_TMPDIR/staged$n.tx\""
        assert_success
        diff "$KV_WORK/live.txt" "$BATS_TEST_TMPDIR/staged$n.txt"
        # the committed transaction 30 stays committed: it cannot be started again
        diff "$KV_WORK/live.tx" "$BATS_TEST_TMPDIR/staged$n.tx"
        PDCBB_DRAINED_DIR="$BATS_TEST_TMPDIR/dest/pdcbb.79$n" run "$TOOL" report C
        assert_success
        diff "$KV_WORK/live.txt" <(echo "$output")
    done
    # the 3-daemon job re-sharded the string keys over its daemons
    run "$PDCBB" kv ls "$BATS_TEST_TMPDIR/dest/pdcbb.793"
    assert_line --regexp '^C +s +STRING +HASH +3 +19 +10$'
    run "$PDCBB" kv ls "$BATS_TEST_TMPDIR/dest/pdcbb.791"
    assert_line --regexp '^C +s +STRING +HASH +1 +19 +10$'
}

@test "PDCkv_migrate during the job drains the records below T; they stay in the burst buffer" {
    cat >"$BATS_TEST_TMPDIR/mig.sh" <<EOF
#!/bin/sh
set -e
"$TOOL" write C
"$TOOL" report C s 19 >"$BATS_TEST_TMPDIR/live.s19.txt"
"$TOOL" migrate C s 20
! "$TOOL" migrate C s 20
! "$TOOL" migrate C i 0
"$TOOL" report C >"$BATS_TEST_TMPDIR/after.txt"
"$TOOL" cli C "$BATS_TEST_TMPDIR/cli"
EOF
    chmod +x "$BATS_TEST_TMPDIR/mig.sh"
    mkdir -p "$BATS_TEST_TMPDIR/dest"
    run "$PDCBB" run --nodes 3 --workdir "$BATS_TEST_TMPDIR/w" --job-id 7902 \
        --drain "$BATS_TEST_TMPDIR/dest" -- "$BATS_TEST_TMPDIR/mig.sh"
    assert_success
    assert_output --partial "migrate s 20: SUCCEED"
    assert_output --partial "migrate s 20: FAIL: PDCkv_migrate: KV object 's', tags below 20: daemon 0 failed: PDCBB_ERR_EXISTS"
    assert_output --partial "migrate i 0: FAIL: PDCkv_migrate: tag 0 is PDC_KV_NULLTAG"
    local M="$BATS_TEST_TMPDIR/dest/pdcbb.7902/kv-migrate/C/s@20"
    [ -f "$M/COMPLETE" ]
    # the records stay readable in the burst buffer: the job still read everything
    diff "$KV_WORK/live.txt" "$BATS_TEST_TMPDIR/after.txt"
    # the partial drain: only tags below 20, read by pdcbb kv and by the drained API
    run "$PDCBB" verify "$M"
    assert_success
    run "$PDCBB" kv ls "$M"
    assert_line --regexp '^C +s +STRING +HASH +3 '
    "$PDCBB" kv keys "$M" s >"$BATS_TEST_TMPDIR/mkeys"
    cmp "$BATS_TEST_TMPDIR/cli/keys.s.19" "$BATS_TEST_TMPDIR/mkeys"
    run python3 -c '
import json, subprocess, sys
out = subprocess.run([sys.argv[1], "kv", "export", sys.argv[2], "s", "--all-versions"],
                     check=True, capture_output=True, text=True).stdout
tags = [json.loads(l)["tag"] for l in out.splitlines()]
print(len(tags), max(tags))' "$PDCBB" "$M"
    assert_output "14 15"
    PDCBB_DRAINED_DIR="$M" run "$TOOL" report C s 19
    assert_success
    diff "$BATS_TEST_TMPDIR/live.s19.txt" <(echo "$output")
    # the job's own drain holds everything, and lists the migration
    run "$PDCBB" kv ls "$BATS_TEST_TMPDIR/dest/pdcbb.7902"
    assert_line "migration: $BATS_TEST_TMPDIR/dest/pdcbb.7902/kv-migrate/C/s@20"
    run "$PDCBB" kv keys "$BATS_TEST_TMPDIR/dest/pdcbb.7902" s --tag max
    assert_success
    cmp "$BATS_TEST_TMPDIR/cli/keys.s.max" <(echo "$output")
}

@test "PDCkv_migrate in a job without a drain destination fails and says why" {
    cat >"$BATS_TEST_TMPDIR/nodrain.sh" <<EOF
#!/bin/sh
"$TOOL" write C >/dev/null || exit 1
"$TOOL" migrate C s 5
EOF
    chmod +x "$BATS_TEST_TMPDIR/nodrain.sh"
    run "$PDCBB" run --workdir "$BATS_TEST_TMPDIR/w" --job-id 7903 -- "$BATS_TEST_TMPDIR/nodrain.sh"
    assert_failure
    assert_output --partial "no drain directory of this job"
}
