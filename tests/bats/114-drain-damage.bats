#!/usr/bin/env bats
# A damaged drain is never read as if it were intact: with 4 bytes flipped in a drained data
# file, or a data file cut to half its size, every reader of the drain (pdcbb get, pdcbb export
# raw / npy / hdf5, the read-only PDC API and a stage-in job) fails, naming the object, the
# extent and its byte range, and leaves no output file behind; an object the damage does not
# touch still reads; pdcbb verify fails; --partial reads what is intact and names what it
# skipped (stager/drain_read.c checks every extent's CRC-32C as it serves its bytes).

load helpers
bats_require_minimum_version 1.5.0

STAGE="$BUILD_DIR/tests/pdc_stage_check"
PY=/usr/bin/python3
JOB_ID=1141

setup_file() {
    setup_workdir "$STAGE" || return 1
    "$PY" -c 'import yaml' || { echo "python3-yaml is missing (scripts/install-deps.sh)" >&2; return 1; }
    DAMAGE_WORK="$WORKDIR"
    export DAMAGE_WORK
    mkdir -p "$DAMAGE_WORK/dest"
    # two daemons: st-rstatic is striped over both, one extent per stripe
    "$PDCBB" run --quiet --pdc servers_per_node=2 --workdir "$DAMAGE_WORK/job" \
        --job-id "$JOB_ID" --drain "$DAMAGE_WORK/dest" -- "$STAGE" write 7 \
        >"$DAMAGE_WORK/write.out" 2>&1 || { cat "$DAMAGE_WORK/write.out" >&2; return 1; }
    [ -f "$DAMAGE_WORK/dest/pdcbb.$JOB_ID/COMPLETE" ] || {
        echo "the job was not drained" >&2
        cat "$DAMAGE_WORK/write.out" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${DAMAGE_WORK:-}" ] || return 0
    assert_no_daemons "$DAMAGE_WORK"
    rm -rf "$DAMAGE_WORK"
}

setup() {
    WORKDIR="$(mktemp -d "$DAMAGE_WORK/t.XXXXXX")"
}

teardown() {
    assert_no_daemons "$WORKDIR"
}

# A copy of the drain (same name, owner and modes) in a destination of its own: prints its path.
drain_copy() {
    mkdir -p "$WORKDIR/$1"
    cp -a "$DAMAGE_WORK/dest/pdcbb.$JOB_ID" "$WORKDIR/$1/"
    echo "$WORKDIR/$1/pdcbb.$JOB_ID"
}

# extent_of DRAIN OBJECT RANK: "FILE FILE_OFFSET LENGTH INDEX A B" of OBJECT's extent held by
# RANK: its data file, where it is, its index among the object's extents (ordered by rank,
# then object offset, as readers name them) and its object bytes A..B.
extent_of() {
    "$PY" - "$1" "$2" "$3" <<'EOF'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1] + "/manifest.yaml"))
oid = [o["id"] for o in m["objects"] if o["name"] == sys.argv[2]][0]
xs = sorted((x for x in m["extents"] if x["object"] == oid),
            key=lambda x: (x["rank"], x["object_offset"]))
for i, x in enumerate(xs):
    if x["rank"] == int(sys.argv[3]):
        print(x["file"], x["file_offset"], x["length"], i, x["object_offset"],
              x["object_offset"] + x["length"])
        break
EOF
}

# cut_victim DRAIN FILE CUT: "NAME INDEX A B" of the extent a reader meets first that a cut of
# FILE to CUT bytes damages: of the object holding the extent that crosses the cut, its first
# extent (by object offset) in FILE ending past the cut.
cut_victim() {
    "$PY" - "$1" "$2" "$3" <<'EOF'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1] + "/manifest.yaml"))
f, cut = sys.argv[2], int(sys.argv[3])
cross = [x for x in m["extents"] if x["file"] == f and x["file_offset"] < cut < x["file_offset"] + x["length"]][0]
xs = sorted((x for x in m["extents"] if x["object"] == cross["object"]),
            key=lambda x: (x["rank"], x["object_offset"]))
first = min((x for x in xs if x["file"] == f and x["file_offset"] + x["length"] > cut),
            key=lambda x: x["object_offset"])
name = [o["name"] for o in m["objects"] if o["id"] == cross["object"]][0]
print(name, xs.index(first), first["object_offset"], first["object_offset"] + first["length"])
EOF
}

# flip4 FILE OFFSET: invert 4 bytes of FILE at OFFSET.
flip4() {
    "$PY" -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(o); b = bytearray(f.read(4)); f.seek(o); f.write(bytes(x ^ 0xff for x in b))' "$1" "$2"
}

# A drain with 4 bytes flipped in the middle of st-rstatic's stripe on rank 1. Sets C (the
# drain), and NAMED: what every error must say about the damaged extent.
flipped_drain() {
    C="$(drain_copy "$1")"
    read -r file foff len idx a b <<<"$(extent_of "$C" st-rstatic 1)"
    [ -n "$b" ]
    flip4 "$C/$file" $((foff + len / 2))
    NAMED="object 'st-rstatic' (id "
    EXTENT="extent $idx, bytes $a..$b: $file offset $foff (+$len bytes)"
}

# A drain whose rank 1 data file is cut to half its size. Sets C, NAMED and EXTENT.
cut_drain() {
    C="$(drain_copy "$1")"
    local f="data/rank-00001.dat" size
    size=$(stat -c %s "$C/$f")
    read -r name idx a b <<<"$(cut_victim "$C" "$f" $((size / 2)))"
    [ -n "$b" ]
    truncate -s $((size / 2)) "$C/$f"
    VICTIM="$name"
    NAMED="object '$name' (id "
    EXTENT="extent $idx, bytes $a..$b: "
}

assert_names_extent() {
    assert_output --partial "$NAMED"
    assert_output --partial "$EXTENT"
}

@test "4 flipped bytes: pdcbb get fails naming object, extent and bytes, even for a region beside them, and leaves no -o file; an intact object still reads" {
    flipped_drain flip
    run "$PDCBB" get -o "$WORKDIR/r.bin" "$C" st-rstatic
    echo "$output"
    assert_failure 1
    assert_names_extent
    assert_output --partial "CRC-32C mismatch"
    [ ! -e "$WORKDIR/r.bin" ]
    # row 32 is in the damaged extent (rank 1's stripe, rows 32-63) but not the flipped bytes
    run "$PDCBB" get -o "$WORKDIR/r.bin" "$C" st-rstatic 32:1,0:1000
    echo "$output"
    assert_failure 1
    assert_names_extent
    [ ! -e "$WORKDIR/r.bin" ]
    # to standard output as well
    run bash -c '"$0" get "$1" st-rstatic > "$2"' "$PDCBB" "$C" "$WORKDIR/stdout.bin"
    assert_failure 1
    assert_names_extent
    # rank 0's stripe of the same object, and another object, are intact
    "$PDCBB" get -o "$WORKDIR/s0.bin" "$C" st-rstatic 0:32,0:1000
    "$STAGE" expect 7 st-rstatic | head -c 128000 > "$WORKDIR/s0.want"
    cmp "$WORKDIR/s0.want" "$WORKDIR/s0.bin"
    "$PDCBB" get -o "$WORKDIR/o.bin" "$C" st-objstatic
    "$STAGE" expect 7 st-objstatic > "$WORKDIR/o.want"
    cmp "$WORKDIR/o.want" "$WORKDIR/o.bin"
    run "$PDCBB" verify "$C"
    echo "$output"
    assert_failure
    assert_output --partial "BAD $NAMED"
    assert_output --partial "$EXTENT"
}

@test "4 flipped bytes: export raw, npy and hdf5 fail naming the extent and leave no file of the damaged object" {
    flipped_drain flip
    for fmt in raw npy; do
        run "$PDCBB" export --format "$fmt" -o "$WORKDIR/$fmt" "$C"
        echo "$output"
        assert_failure 1
        assert_names_extent
        assert_output --partial "CRC-32C mismatch"
        run ls -A "$WORKDIR/$fmt"
        refute_output --partial "st-rstatic"
        refute_output --partial ".tmp."
    done
    mkdir "$WORKDIR/h5"
    run "$PDCBB" export --format hdf5 -o "$WORKDIR/h5" "$C"
    echo "$output"
    assert_failure 1
    assert_names_extent
    run ls -A "$WORKDIR/h5"
    assert_output ""
}

@test "4 flipped bytes: the read-only PDC API and a stage-in job fail naming the extent" {
    flipped_drain flip
    run env PDCBB_DRAINED_DIR="$C" "$STAGE" check 7
    echo "$output"
    assert_failure
    assert_names_extent
    assert_output --partial "PDCBB_ERR_CORRUPT"
    run "$PDCBB" run --pdc servers_per_node=2 --workdir "$WORKDIR/job" --job-id 1142 \
        --stage-in "$C" -- "$STAGE" check 7
    echo "$output"
    assert_failure
    assert_names_extent
}

@test "a data file cut to half: get, export, the API and stage-in fail naming the extent, never reading zeros" {
    cut_drain cut
    run "$PDCBB" get -o "$WORKDIR/v.bin" "$C" "$VICTIM"
    echo "$output"
    assert_failure 1
    assert_names_extent
    assert_output --partial "the file ends at"
    [ ! -e "$WORKDIR/v.bin" ]
    for fmt in raw npy hdf5; do
        mkdir "$WORKDIR/$fmt"
        run "$PDCBB" export --format "$fmt" -o "$WORKDIR/$fmt" "$C"
        echo "$output"
        assert_failure 1
        assert_names_extent
        run ls -A "$WORKDIR/$fmt"
        refute_output --partial ".tmp."
        refute_output --partial ".h5"
    done
    run env PDCBB_DRAINED_DIR="$C" "$STAGE" check 7
    echo "$output"
    assert_failure
    assert_names_extent
    run "$PDCBB" run --workdir "$WORKDIR/job" --job-id 1143 --stage-in "$C" -- "$STAGE" check 7
    echo "$output"
    assert_failure
    assert_names_extent
    run "$PDCBB" verify "$C"
    assert_failure
    assert_output --partial "missing"
}

@test "a missing data file fails the readers of its objects, naming object and extent" {
    C="$(drain_copy gone)"
    read -r file foff len idx a b <<<"$(extent_of "$C" st-rstatic 1)"
    rm "$C/$file"
    run "$PDCBB" get -o "$WORKDIR/r.bin" "$C" st-rstatic
    echo "$output"
    assert_failure 1
    assert_output --partial "object 'st-rstatic' (id "
    assert_output --partial "extent $idx, bytes $a..$b"
    assert_output --partial "missing"
    [ ! -e "$WORKDIR/r.bin" ]
}

@test "--partial reads around a damaged extent: its bytes read as zero, a warning names it, exit 0" {
    flipped_drain partial
    run --separate-stderr "$PDCBB" get --partial -o "$WORKDIR/r.bin" "$C" st-rstatic
    echo "$output"
    echo "$stderr"
    assert_success
    [[ "$stderr" == *"WARNING: damaged extent read as zeros: $NAMED"* ]]
    [[ "$stderr" == *"$EXTENT"* ]]
    # rank 0's stripe as written, rank 1's stripe (the damaged extent) zeros
    "$STAGE" expect 7 st-rstatic | head -c 128000 > "$WORKDIR/want"
    head -c 128000 /dev/zero >> "$WORKDIR/want"
    cmp "$WORKDIR/want" "$WORKDIR/r.bin"
    run --separate-stderr "$PDCBB" export --partial --format raw -o "$WORKDIR/raw" "$C"
    echo "$stderr"
    assert_success
    [[ "$stderr" == *"1 damaged extent read as zeros"* ]]
    cmp "$WORKDIR/want" "$WORKDIR/raw/st-rstatic.raw"
    "$STAGE" expect 7 st-objstatic | cmp - "$WORKDIR/raw/st-objstatic.raw"
}
