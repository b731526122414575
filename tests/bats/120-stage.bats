#!/usr/bin/env bats
# The job's life cycle through the stager with `pdcbb run`: write, drain at the end, read the
# drain back (pdcbb ls/get/verify and the PDC API on the drain), a damaged drain, a failed
# drain finished later, stage-in into a job with another node count, and a daemon restarted
# within a job (checkpoint/restart) whose data survives into the drain.

load helpers
bats_require_minimum_version 1.5.0

STAGE="$BUILD_DIR/tests/pdc_stage_check"
OBJECTS="st-objstatic st-rstatic st-dynamic st-local st-unlimited"

setup() {
    require_build
    [ -x "$STAGE" ] || { echo "missing $STAGE" >&2; return 1; }
    make_workdir
    mkdir -p "$WORKDIR/dest"
}

teardown() {
    cleanup_workdir
}

# The drained job directory of a run: DEST/pdcbb.<id>.
drained() { echo "$WORKDIR/dest/pdcbb.$1"; }

# Every object through `pdcbb get` equals what the writer wrote.
assert_get_matches() { # drain-dir seed
    for o in $OBJECTS; do
        "$PDCBB" get "$1" "$o" -o "$WORKDIR/got.$o"
        "$STAGE" expect "$2" "$o" > "$WORKDIR/want.$o"
        cmp "$WORKDIR/want.$o" "$WORKDIR/got.$o"
    done
}

@test "write on 2 nodes x 2 daemons, drain at the end: ls, get, verify and the PDC API read it back" {
    run "$PDCBB" run --nodes 2 --pdc servers_per_node=2 --workdir "$WORKDIR/w" --job-id 501 \
        --drain "$WORKDIR/dest" -- "$STAGE" write 7
    echo "$output"
    assert_success
    assert_output --partial "ok write: 0 failures"
    assert_output --partial "(complete)"
    D="$(drained 501)"
    [ -f "$D/COMPLETE" ] && [ -f "$D/manifest.yaml" ]
    [ "$(ls "$D/parts" | wc -l)" -eq 4 ]
    [ "$(stat -c %U "$D/manifest.yaml")" = "$(id -un)" ]
    # drained and verified: the node-local data is gone
    [ ! -e "$WORKDIR/w/node0/pdcbb.501" ] && [ ! -e "$WORKDIR/w/node1/pdcbb.501" ]
    assert_no_daemons "$WORKDIR"

    run "$PDCBB" ls "$D"
    echo "$output"
    assert_success
    for o in $OBJECTS; do assert_output --partial "$o"; done
    assert_output --partial "PDC_REGION_DYNAMIC"
    assert_output --partial "kelvin"
    run "$PDCBB" verify "$D"
    echo "$output"
    assert_success
    assert_get_matches "$D" 7
    # the same program reads the drain through the PDC API
    run env PDCBB_DRAINED_DIR="$D" "$STAGE" check 7
    echo "$output"
    assert_success
    assert_output --partial "ok check: 0 failures"
}

@test "a flipped byte in a drained data file makes verify fail and name the object" {
    "$PDCBB" run --quiet --job-id 502 --drain "$WORKDIR/dest" -- "$STAGE" write 3
    D="$(drained 502)"
    run "$PDCBB" verify "$D"
    assert_success
    f="$(ls "$D"/data/*.dat | head -1)"
    size=$(stat -c %s "$f")
    off=$((size / 2))
    byte=$(dd if="$f" bs=1 skip=$off count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
    printf "$(printf '\\%03o' $(( (byte ^ 0xff) & 0xff )))" |
        dd of="$f" bs=1 seek=$off count=1 conv=notrunc 2>/dev/null
    run "$PDCBB" verify "$D"
    echo "$output"
    assert_failure
    assert_output --partial "st-"
    assert_output --partial "$(basename "$f")"
}

@test "a missing destination is refused before the job; one gone at the end keeps the data; pdcbb drain finishes it later" {
    run "$PDCBB" run --workdir "$WORKDIR/w" --job-id 503 --drain "$WORKDIR/nowhere" -- \
        "$STAGE" write 5
    echo "$output"
    assert_failure 2
    assert_output --partial "drain destination $WORKDIR/nowhere does not exist"
    refute_output --partial "ok write"
    [ ! -e "$WORKDIR/w/node0/pdcbb.503" ]
    # the destination vanishes while the job runs
    mkdir "$WORKDIR/later"
    run "$PDCBB" run --workdir "$WORKDIR/w" --job-id 503 --drain "$WORKDIR/later" -- \
        bash -c "'$STAGE' write 5 && rm -rf '$WORKDIR/later'"
    echo "$output"
    assert_failure
    assert_output --partial "ok write: 0 failures"
    assert_output --partial "$WORKDIR/later"
    assert_output --partial "pdcbb drain $WORKDIR/w/node0/pdcbb.503"
    [ -d "$WORKDIR/w/node0/pdcbb.503" ]
    [ -s "$WORKDIR/w/node0/pdcbb.503/drain.error" ]
    grep -q "does not exist" "$WORKDIR/w/node0/pdcbb.503/drain.log"
    run "$PDCBB" status --job-dir "$WORKDIR/w/node0/pdcbb.503"
    echo "$output"
    assert_failure
    assert_output --partial "drain failed: "
    assert_output --partial "does not exist"
    assert_no_daemons "$WORKDIR"
    run "$PDCBB" drain --to "$WORKDIR/dest" "$WORKDIR/w/node0/pdcbb.503"
    echo "$output"
    assert_success
    [ -f "$(drained 503)/COMPLETE" ]
    [ ! -e "$WORKDIR/w/node0/pdcbb.503" ]
    assert_get_matches "$(drained 503)" 5
}

@test "stage-in of a 2-node drain into a 3-node job reads back identical data" {
    "$PDCBB" run --quiet --nodes 2 --job-id 504 --drain "$WORKDIR/dest" -- "$STAGE" write 11
    D="$(drained 504)"
    [ -f "$D/COMPLETE" ]
    run "$PDCBB" run --nodes 3 --pdc servers_per_node=2 --job-id 505 --stage-in "$D" \
        --drain "$WORKDIR/dest" -- "$STAGE" check 11
    echo "$output"
    assert_success
    assert_output --partial "ok check: 0 failures"
    # the staged data drains again, unchanged
    assert_get_matches "$(drained 505)" 11
    # a drain that is not complete is refused with the reason
    rm "$D/COMPLETE"
    run "$PDCBB" run --job-id 506 --stage-in "$D" -- true
    echo "$output"
    assert_failure
    assert_output --partial "incomplete drain"
    assert_no_daemons "$WORKDIR"
}

@test "a daemon killed and restarted within the job serves all acknowledged data, and the drain is complete" {
    cat > "$WORKDIR/restart.sh" <<'EOF'
#!/bin/bash
set -e
"$STAGE" write 9
dir="${PDCBB_SERVER_DIRS%%:*}"
pid=$(cat "$dir/bbd-0.pid")
mapfile -d '' args < /proc/$pid/cmdline
kill -9 "$pid"
while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
# the dead daemon's endpoint record goes, so the wait below sees the new daemon's (under load
# the new pid file came well before the new record, and the check read the old port)
rm -f "$dir/bbd-0.endpoint"
# the same command line, without the prolog's ready pipe
cmd=()
drop_next=0
for a in "${args[@]}"; do
    if [ $drop_next = 1 ]; then drop_next=0; continue; fi
    case "$a" in --ready-fd) drop_next=1; continue ;; --ready-fd=*) continue ;; esac
    cmd+=("$a")
done
setsid "${cmd[@]}" < /dev/null > /dev/null 2>&1 &
for _ in $(seq 100); do
    [ -s "$dir/bbd-0.endpoint" ] && [ "$(cat "$dir/bbd-0.pid" 2>/dev/null)" != "$pid" ] && break
    sleep 0.1
done
"$STAGE" check 9
EOF
    chmod +x "$WORKDIR/restart.sh"
    run env STAGE="$STAGE" "$PDCBB" run --workdir "$WORKDIR/w" --job-id 507 \
        --drain "$WORKDIR/dest" -- "$WORKDIR/restart.sh"
    echo "$output"
    assert_success
    assert_output --partial "ok check: 0 failures"
    assert_output --partial "1 daemon stopped"
    D="$(drained 507)"
    [ -f "$D/COMPLETE" ]
    run "$PDCBB" verify "$D"
    assert_success
    assert_get_matches "$D" 9
    assert_no_daemons "$WORKDIR"
}

@test "a job id used twice cannot mix two jobs' drains: the second drains under a fresh name" {
    "$PDCBB" run --quiet --job-id 508 --drain "$WORKDIR/dest" -- "$STAGE" write 1
    [ -f "$(drained 508)/COMPLETE" ]
    grep -q "instance" "$(drained 508)/manifest.yaml"
    run "$PDCBB" run --workdir "$WORKDIR/w" --job-id 508 --drain "$WORKDIR/dest" -- \
        "$STAGE" write 2
    echo "$output"
    assert_success
    assert_output --partial "$WORKDIR/dest/pdcbb.508 belongs to another job"
    assert_output --regexp "draining into $WORKDIR/dest/pdcbb\.508\.[0-9a-f]{8} instead"
    # the first job's drain is untouched
    assert_get_matches "$(drained 508)" 1
    run "$PDCBB" verify "$(drained 508)"
    assert_success
    # the second one is complete in its own directory
    local second
    second="$(ls -d "$WORKDIR/dest/pdcbb.508".*)"
    [ -f "$second/COMPLETE" ]
    assert_get_matches "$second" 2
    # two instances, one per drain
    [ "$(grep -h '^  instance:' "$(drained 508)/manifest.yaml" "$second/manifest.yaml" |
        sort -u | wc -l)" -eq 2 ]
}

# Debian's python3 (scripts/install-deps.sh installs python3-numpy and python3-yaml for it).
PY=/usr/bin/python3

@test "pdcbb export: .raw files hold the written bytes and NumPy loads the .npy files with the written values" {
    "$PDCBB" run --quiet --nodes 2 --job-id 509 --drain "$WORKDIR/dest" -- "$STAGE" write 4
    D="$(drained 509)"
    run "$PDCBB" export "$D" --format raw -o "$WORKDIR/raw"
    echo "$output"
    assert_success
    run "$PDCBB" export "$D" --format npy -o "$WORKDIR/npy"
    assert_success
    for o in $OBJECTS; do
        "$STAGE" expect 4 "$o" > "$WORKDIR/want.$o"
        cmp "$WORKDIR/want.$o" "$WORKDIR/raw/$o.raw"
    done
    run "$PY" - "$WORKDIR" <<'EOF2'
import sys, numpy as np
w = sys.argv[1]
want = {"st-objstatic": ("<f8", (300000,)), "st-rstatic": ("<i4", (64, 1000)),
        "st-dynamic": ("<f4", (100, 100)), "st-local": ("u1", (100000,)),
        "st-unlimited": ("<i8", (500, 16))}
for name, (dtype, shape) in want.items():
    a = np.load(f"{w}/npy/{name}.npy")
    b = np.fromfile(f"{w}/want.{name}", dtype=dtype).reshape(shape)
    assert a.dtype == np.dtype(dtype) and a.shape == shape, (name, a.dtype, a.shape)
    assert np.array_equal(a, b), name
    print("ok npy", name, a.dtype, a.shape)
EOF2
    echo "$output"
    assert_success
    [ "$(grep -c '^ok npy' <<<"$output")" -eq 5 ]
    # a region: rows 10..14, columns 100..119 of st-rstatic, elements packed row-major
    "$PDCBB" get "$D" st-rstatic 10:5,100:20 -o "$WORKDIR/region.raw"
    run "$PY" -c "
import numpy as np
a = np.fromfile('$WORKDIR/want.st-rstatic', dtype='<i4').reshape(64, 1000)
assert open('$WORKDIR/region.raw', 'rb').read() == a[10:15, 100:120].tobytes()
print('ok region')"
    echo "$output"
    assert_success
    run "$PDCBB" get "$D" st-rstatic 60:5,0:1 -o "$WORKDIR/bad.raw"
    assert_failure
    assert_output --partial "60:5"
    run "$PDCBB" get "$D" no-such-object -o "$WORKDIR/bad.raw"
    assert_failure
    assert_output --partial "no-such-object"
    # existing files are not overwritten without --force
    run "$PDCBB" export "$D" --format npy -o "$WORKDIR/npy"
    assert_failure
    assert_output --partial "st-"
}

@test "a drain reads without pdcbb: the Python reader of DRAIN-FORMAT.md rebuilds every object and checksum" {
    "$PDCBB" run --quiet --nodes 2 --pdc servers_per_node=2 --job-id 510 --drain "$WORKDIR/dest" \
        -- "$STAGE" write 8
    D="$(drained 510)"
    # the reader exactly as the document gives it
    awk '/^```python$/ {on = 1; next} /^```$/ {on = 0} on' "$REPO_DIR/docs/DRAIN-FORMAT.md" \
        > "$WORKDIR/drainreader.py"
    grep -q "def load" "$WORKDIR/drainreader.py"
    for o in $OBJECTS; do "$STAGE" expect 8 "$o" > "$WORKDIR/want.$o"; done
    run "$PY" - "$WORKDIR" "$D" <<'EOF2'
import sys, yaml
sys.path.insert(0, sys.argv[1])
import drainreader
w, d = sys.argv[1], sys.argv[2]
for name in ["st-objstatic", "st-rstatic", "st-dynamic", "st-local", "st-unlimited"]:
    a = drainreader.load(d, name)
    assert a.tobytes() == open(f"{w}/want.{name}", "rb").read(), name
    print("ok reader", name, a.shape)
m = yaml.safe_load(open(f"{d}/manifest.yaml"))
for e in m["extents"]:
    with open(f"{d}/{e['file']}", "rb") as f:
        f.seek(e["file_offset"])
        assert drainreader.crc32c(f.read(e["length"])) == e["crc32c"], e
print("ok crc", len(m["extents"]))
EOF2
    echo "$output"
    assert_success
    [ "$(grep -c '^ok reader' <<<"$output")" -eq 5 ]
    assert_output --partial "ok crc"
}

@test "randomized model: every placement, overwrites from 3 nodes, drained, read through the API and after stage-in" {
    MODEL="$BUILD_DIR/tests/pdc_region_model"
    run "$PDCBB" run --nodes 3 --pdc servers_per_node=2 --job-id 511 --drain "$WORKDIR/dest" -- \
        bash -c 'for r in 0 1 2; do
                     PDCBB_NODE_NAME=node$r "$0" --seed 43 --ops 800 --procs 3 --rank $r \
                         --sequential --phase write || exit 1
                 done' "$MODEL"
    echo "$output" | tail -5
    assert_success
    assert_output --partial "(complete)"
    D="$(drained 511)"
    for r in 0 1 2; do
        run env PDCBB_DRAINED_DIR="$D" "$MODEL" --seed 43 --ops 800 --procs 3 --rank $r \
            --owner $r --sequential --phase verify
        echo "$output" | tail -3
        assert_success
        assert_output --partial "OK"
    done
    run "$PDCBB" run --nodes 2 --job-id 512 --stage-in "$D" -- \
        bash -c 'for r in 0 1 2; do
                     "$0" --seed 43 --ops 800 --procs 3 --rank $r --owner $r --sequential \
                         --phase verify || exit 1
                 done' "$MODEL"
    echo "$output" | tail -5
    assert_success
    [ "$(grep -c '^OK$' <<<"$output")" -eq 3 ]
}

@test "rows larger than a 64 MiB slab drain, read back and stage in" {
    run "$PDCBB" run --nodes 2 --job-id 513 --drain "$WORKDIR/dest" -- "$STAGE" wide-write 6
    echo "$output"
    assert_success
    D="$(drained 513)"
    run env PDCBB_DRAINED_DIR="$D" "$STAGE" wide-check 6
    echo "$output"
    assert_success
    assert_output --partial "ok wide-check: 0 failures"
    run "$PDCBB" run --nodes 3 --job-id 514 --stage-in "$D" -- "$STAGE" wide-check 6
    echo "$output"
    assert_success
    assert_output --partial "ok wide-check: 0 failures"
}

@test "objects without dimensions (metadata and tags only) drain, read back and stage in" {
    run "$PDCBB" run --nodes 2 --workdir "$WORKDIR/w" --job-id 530 --drain "$WORKDIR/dest" -- \
        "$TOOL" "cont-create c" "many-objs c o 6" "tag-put obj o1 k int 3" "tag-put obj o4 k int 4"
    echo "$output"
    assert_success
    D="$(drained 530)"
    [ -f "$D/COMPLETE" ]
    run "$PDCBB" ls "$D"
    assert_success
    assert_output --regexp "o1 +c +PDC_DOUBLE +- +PDC_OBJ_STATIC +0 +k=3"
    run "$PDCBB" verify "$D"
    assert_success
    run "$PDCBB" get "$D" o1 -o "$WORKDIR/got.o1"
    assert_success
    assert_output --partial "object 'o1' has no dimensions: it holds no data"
    run "$PDCBB" export -o "$WORKDIR/exp" "$D"
    assert_success
    assert_output --partial "0 objects (0 B) written"
    run env PDCBB_DRAINED_DIR="$D" "$TOOL" "obj-open o1" "tag-get obj o4 k" "obj-list c"
    assert_success
    assert_output --partial "value=4"
    assert_output --regexp "ok obj-list( o[0-5]){6}"
    run "$PDCBB" run --nodes 3 --workdir "$WORKDIR/w2" --stage-in "$D" -- \
        "$TOOL" "obj-open o5" "tag-get obj o1 k" "obj-list c"
    echo "$output"
    assert_success
    assert_output --partial "value=3"
    assert_output --regexp "ok obj-list( o[0-5]){6}"
}
