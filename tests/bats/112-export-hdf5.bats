#!/usr/bin/env bats
# pdcbb export --format hdf5: a real 2-node job writes one object of every PDC type (1-3
# dimensions, every placement, two containers), an unlimited object, an object without
# dimensions, tags of several types and a KV object (tests/progs/pdc_export_types.c); its drain
# is exported as one HDF5 file and read back with h5py (Debian's python3-h5py), value by value
# against the program's known data and against `pdcbb export --format npy`. Then bad input:
# an existing file, an incomplete drain, a corrupted extent.

load helpers

TYPES_TOOL="$BUILD_DIR/tests/pdc_export_types"
JOB_ID=1234
# Debian's python3 (scripts/install-deps.sh installs python3-h5py and python3-numpy for it).
PY=/usr/bin/python3

setup_file() {
    require_build
    [ -x "$TYPES_TOOL" ] || { echo "missing $TYPES_TOOL" >&2; return 1; }
    "$PY" -c 'import h5py, numpy' || { echo "python3-h5py is missing (scripts/install-deps.sh)" >&2; return 1; }
    H5_WORK="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats-hdf5.XXXXXX")"
    export H5_WORK
    mkdir -p "$H5_WORK/dest"
    "$PDCBB" run --nodes 2 --workdir "$H5_WORK/job" --job-id "$JOB_ID" \
        --drain "$H5_WORK/dest" -- "$TYPES_TOOL" write \
        >"$H5_WORK/live.out" 2>"$H5_WORK/live.err" || {
        cat "$H5_WORK/live.out" "$H5_WORK/live.err" >&2
        return 1
    }
    grep -q "^ok write$" "$H5_WORK/live.out" || { cat "$H5_WORK/live.out" >&2; return 1; }
    [ -f "$H5_WORK/dest/pdcbb.$JOB_ID/COMPLETE" ] || {
        echo "the job was not drained" >&2
        cat "$H5_WORK/live.err" >&2
        return 1
    }
}

teardown_file() {
    [ -n "${H5_WORK:-}" ] || return 0
    assert_no_daemons "$H5_WORK"
    rm -rf "$H5_WORK"
}

setup() {
    make_workdir
    D="$H5_WORK/dest/pdcbb.$JOB_ID"
}

teardown() {
    cleanup_workdir
}

# A copy of the drain the test may damage (same owner and modes: the trust check passes).
drain_copy() {
    cp -a "$D" "$WORKDIR/$1"
    echo "$WORKDIR/$1"
}

# check_h5 FILE NPYDIR: every check of the file's content; prints "checked N datasets".
check_h5() {
    "$PY" - "$1" "$2" "$JOB_ID" <<'EOF'
import os, sys
import h5py, numpy as np

path, npydir, job = sys.argv[1], sys.argv[2], int(sys.argv[3])
f = h5py.File(path, "r")
fails = []
def check(cond, what):
    if not cond:
        fails.append(what)

# the job
check(f.attrs["pdc_job_id"] == job, "pdc_job_id")
check(f.attrs["pdc_complete"] == 1, "pdc_complete")
check(f.attrs["pdc_nservers"] == 2, "pdc_nservers")
check(f.attrs["pdc_format"] == "pdcbb-drain", "pdc_format")
check(sorted(f.keys()) == ["xa", "xb"], "root members %s" % sorted(f.keys()))
for g in ("xa", "xb"):
    check(isinstance(f[g], h5py.Group), g + " is a group")
    check(f[g].attrs["pdc_name"] == g and f[g].attrs["pdc_lifetime"] == "persistent", g + " attrs")
xa, xb = f["xa"], f["xb"]
check(xa.attrs["purpose"] == "hdf5 export test", "xa purpose")
check(xa.attrs["level"] == 7 and xa.attrs["level"].dtype == np.int32, "xa level")
check(np.array_equal(xb.attrs["weights"], [0.5, 1.5, 2.5]) and
      xb.attrs["weights"].dtype == np.float64, "xb weights")
check(sorted(xa.keys()) == sorted(["t%d" % t for t in range(0, 19, 2)] + ["grow"]),
      "xa members %s" % sorted(xa.keys()))
check(sorted(xb.keys()) == sorted(["t%d" % t for t in range(1, 19, 2)] + ["a_slash", "nodims"]),
      "xb members %s" % sorted(xb.keys()))

# one object of every PDC type: the program's known values (pdc_export_types.c, fill())
names = ["PDC_INT", "PDC_FLOAT", "PDC_DOUBLE", "PDC_CHAR", "PDC_STRING", "PDC_BOOLEAN",
         "PDC_SHORT", "PDC_UINT", "PDC_INT64", "PDC_UINT64", "PDC_INT16", "PDC_INT8",
         "PDC_UINT8", "PDC_UINT16", "PDC_INT32", "PDC_UINT32", "PDC_LONG", "PDC_VOID_PTR",
         "PDC_SIZE_T"]
dtypes = ["<i4", "<f4", "<f8", "|i1", "|S1", "|b1", "<i2", "<u4", "<i8", "<u8", "<i2", "|i1",
          "|u1", "<u2", "<i4", "<u4", "<i8", "|V8", "<u8"]
parts = ["PDC_OBJ_STATIC", "PDC_REGION_STATIC", "PDC_REGION_DYNAMIC", "PDC_REGION_LOCAL"]
shapes = [(37,), (5, 9), (3, 4, 5)]

def known(t, n):
    i = np.arange(n, dtype=np.uint64)
    v = (i * np.uint64(2654435761) + np.uint64(t * 977)) % np.uint64(100003)
    vi = v.astype(np.int64)
    if t in (0, 14): return (vi - 50000).astype(np.int32)
    if t == 1: return v.astype(np.float32) / np.float32(3.0)
    if t == 2: return v.astype(np.float64) / 7.0
    if t in (3, 11): return (vi & 0xff).astype(np.uint8).view(np.int8)
    if t == 4: return (ord("a") + vi % 26).astype(np.uint8).view("S1")
    if t == 5: return (vi & 1).astype(np.bool_)
    if t in (6, 10): return ((vi - 50000) & 0xffff).astype(np.uint16).view(np.int16)
    if t in (7, 15): return ((vi * 40000) & 0xffffffff).astype(np.uint32)
    if t in (8, 16): return -(vi << 30)
    if t in (9, 18): return (v << np.uint64(40)).astype(np.uint64)
    if t == 12: return (vi & 0xff).astype(np.uint8)
    if t == 13: return (vi & 0xffff).astype(np.uint16)
    if t == 17:
        b = (vi[:, None] + np.arange(8)) & 0xff
        return b.astype(np.uint8).reshape(-1).view("V8")
    raise SystemExit("no type %d" % t)

count = 0
for t in range(19):
    g = "xa" if t % 2 == 0 else "xb"
    d = f[g]["t%d" % t]
    shape = shapes[t % 3]
    a = d[()]
    w = "t%d (%s)" % (t, names[t])
    check(d.dtype.str == dtypes[t], "%s dtype %s" % (w, d.dtype.str))
    check(d.shape == shape and d.maxshape == shape and d.chunks is None, w + " shape")
    want = known(t, int(np.prod(shape))).reshape(shape)
    check(a.tobytes() == want.tobytes(), w + " values")
    if d.dtype.kind in "iufb":
        check(np.array_equal(a, want), w + " values (typed)")
    at = d.attrs
    check(at["pdc_type"] == names[t], w + " pdc_type")
    check(at["pdc_name"] == "t%d" % t and at["pdc_container"] == g, w + " pdc_name/container")
    check(at["pdc_partition"] == parts[t % 4], w + " pdc_partition")
    check(at["pdc_time_step"] == t + 1 and at["pdc_app_name"] == "app%d" % t, w + " step/app")
    check(list(at["pdc_dims"]) == list(shape), w + " pdc_dims")
    check(at["pdc_id"] > 0 and at["pdc_container_id"] == f[g].attrs["pdc_id"], w + " ids")
    check(at["pdc_rank"] in (0, 1), w + " pdc_rank")
    check(at["index"] == t and at["index"].dtype == np.int32 and at["name"] == "t%d" % t,
          w + " tags")
    count += 1

# the unlimited object: chunked, extendable, as many rows as written
d = xa["grow"]
# (its extent: 13 rows written, 16 after PDCbb_obj_extend; the 3 unwritten rows read as zero)
check(d.shape == (16, 4) and d.maxshape == (None, 4) and d.chunks == (16, 4), "grow shape")
check(d.dtype == np.int64, "grow dtype")
check(np.array_equal(d[:13], np.arange(13)[:, None] * 1000 + np.arange(4)), "grow values")
check(not d[13:].any(), "grow: unwritten rows are zero")
at = d.attrs
check(list(at["pdc_dims"]) == [2**64 - 1, 4], "grow pdc_dims")
check(np.array_equal(at["i64s"], [-1, 2, -3]) and at["i64s"].dtype == np.int64, "tag i64s")
check(at["u8"] == 200 and at["u8"].dtype == np.uint8, "tag u8")
check(at["flag"] == True and at["flag"].dtype == np.bool_, "tag flag")
check(at["f"] == 2.25 and at["f"].dtype == np.float32, "tag f")
check(at["raw"].tobytes() == bytes(i * 17 for i in range(16)), "tag raw (opaque)")
check(at["tag:pdc_id"] == 99 and at["pdc_id"] != 99, "tag pdc_id renamed")
count += 1

d = xb["a_slash"]
check(d.attrs["pdc_name"] == "a/slash", "a/slash name")
check(d.dtype == np.uint16 and np.array_equal(d[()], np.arange(12).reshape(6, 2) + 100),
      "a/slash values")
count += 1

d = xb["nodims"]
check(d.shape is None, "nodims has a null dataspace")
check(d.attrs["note"] == "metadata only" and d.attrs["pdc_type"] == "PDC_DOUBLE", "nodims attrs")
check(d.attrs["pdc_dims"].shape is None, "nodims pdc_dims empty")
count += 1

# the same bytes as `pdcbb export --format npy`, object by object
nnpy = 0
for fn in sorted(os.listdir(npydir)):
    if not fn.endswith(".npy"):
        continue
    a = np.load(os.path.join(npydir, fn))
    name = fn[:-4]
    g = "xb" if name in ("a_slash",) or (name.startswith("t") and int(name[1:]) % 2) else "xa"
    h = f[g][name][()]
    check(h.shape == a.shape and h.tobytes() == a.tobytes(), "npy " + fn)
    if a.dtype.kind in "iufb":
        check(h.dtype == a.dtype and np.array_equal(h, a), "npy typed " + fn)
    nnpy += 1
check(nnpy == 21, "npy files: %d" % nnpy)

for x in fails:
    print("FAIL", x)
print("checked %d datasets, %d npy files" % (count, nnpy))
sys.exit(1 if fails else 0)
EOF
}

@test "export --format hdf5 writes the whole job as one HDF5 file that h5py reads back exactly" {
    cd "$WORKDIR"
    run "$PDCBB" export --format hdf5 "$D"
    echo "$output"
    assert_success
    assert_line "./pdcbb.$JOB_ID.h5"
    assert_output --partial "KV object 'kvx' (container 'xa') skipped"
    assert_output --partial "object 'nodims' has no dimensions"
    assert_output --partial "22 objects"
    [ -f "pdcbb.$JOB_ID.h5" ]
    run ls -a
    refute_output --partial ".tmp."
    run "$PDCBB" export --format npy -q -o npy "$D"
    assert_success
    run check_h5 "pdcbb.$JOB_ID.h5" npy
    echo "$output"
    assert_success
    assert_output --partial "checked 22 datasets, 21 npy files"
    # -o NAME.h5 (or .hdf5) is the file itself; its directory must exist
    run "$PDCBB" export --format hdf5 -q -o "$WORKDIR/sub/x.hdf5" "$D"
    assert_failure 1
    assert_output --partial "cannot create $WORKDIR/sub/x.hdf5.tmp."
    run "$PDCBB" export --format hdf5 -q -o "$WORKDIR/x.hdf5" "$D"
    assert_success
    # -q: no list and no summary; what is left out is still said
    assert_output "pdcbb export: KV object 'kvx' (container 'xa') skipped: the HDF5 export holds no KV objects (use pdcbb kv export)"
    run "$PY" -c 'import h5py, sys; print(h5py.is_hdf5(sys.argv[1]), sorted(h5py.File(sys.argv[1])))' \
        "$WORKDIR/x.hdf5"
    assert_output "True ['xa', 'xb']"
}

@test "an existing file is kept without --force and replaced with it" {
    cd "$WORKDIR"
    echo "precious" > out.h5
    run "$PDCBB" export --format hdf5 -o out.h5 "$D"
    assert_failure 1
    assert_output --partial "out.h5 exists (use --force to overwrite); nothing written"
    [ "$(cat out.h5)" = precious ]
    mkdir dir && echo "precious" > "dir/pdcbb.$JOB_ID.h5"
    run "$PDCBB" export --format hdf5 -o dir "$D"
    assert_failure 1
    assert_output --partial "dir/pdcbb.$JOB_ID.h5 exists"
    [ "$(cat "dir/pdcbb.$JOB_ID.h5")" = precious ]
    run "$PDCBB" export --format hdf5 --force -o out.h5 "$D"
    assert_success
    run "$PY" -c 'import h5py,sys; print(h5py.File(sys.argv[1])["xa/grow"].shape)' out.h5
    assert_output "(16, 4)"
    run ls -a
    refute_output --partial ".tmp."
}

@test "an incomplete drain is refused without --partial; with it the drained ranks are exported" {
    local c
    c="$(drain_copy incomplete)"
    rm "$c/COMPLETE" "$c/manifest.yaml" "$c/parts/rank-00001.yaml"
    cd "$WORKDIR"
    run "$PDCBB" export --format hdf5 -o out.h5 "$c"
    assert_failure 1
    assert_output --partial "incomplete drain: 1 of 2 ranks drained"
    assert_output --partial "--partial"
    run ls -a
    refute_output --partial "out.h5"
    run "$PDCBB" export --format hdf5 --partial -o out.h5 "$c"
    echo "$output"
    assert_success
    assert_output --partial "incomplete drain: only the ranks drained so far"
    # rank 0's objects only; an object whose container was not drained is in the root group
    run "$PY" - out.h5 <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert f.attrs["pdc_complete"] == 0
groups = {k for k in f if isinstance(f[k], h5py.Group)}
ids = {f[g].attrs["pdc_id"] for g in groups}
n = root = 0
def visit(name, o):
    global n, root
    if isinstance(o, h5py.Dataset):
        n += 1
        assert o.attrs["pdc_rank"] == 0, name
        if "/" not in name:
            root += 1
            assert o.attrs["pdc_container_id"] not in ids, name
        else:
            assert o.attrs["pdc_container_id"] == f[name.split("/")[0]].attrs["pdc_id"], name
f.visititems(visit)
print("datasets", n, "in the root", root, "groups", len(groups))
assert 0 < n < 22
assert root > 0 and len(groups) == 1  # xa and xb have different home ranks
EOF
    echo "$output"
    assert_success
}

@test "a corrupted extent fails the export with the CRC error and leaves no file" {
    local c
    c="$(drain_copy bad)"
    # flip the first byte of rank 0's data file: the first extent's CRC-32C no longer matches
    "$PY" -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[0]^=0xff; open(p,"wb").write(b)' \
        "$c/data/rank-00000.dat"
    mkdir "$WORKDIR/out"
    run "$PDCBB" export --format hdf5 -o "$WORKDIR/out" "$c"
    echo "$output"
    assert_failure 1
    assert_output --partial "CRC-32C mismatch"
    assert_output --regexp "object '[^']+' \(id [0-9]+\), extent [0-9]+, bytes [0-9]+\.\.[0-9]+: data/rank-00000.dat offset 0 "
    run ls -A "$WORKDIR/out"
    assert_output ""
}

@test "bad usage: an unknown format names hdf5 among the choices; --help documents it" {
    run "$PDCBB" export --format hdf4 "$D"
    assert_failure 2
    assert_output --partial "expected raw, npy or hdf5"
    run "$PDCBB" export --help
    assert_success
    assert_output --partial "hdf5"
    assert_output --partial "H5S_UNLIMITED"
}

@test "USER-GUIDE.md's HDF5 example runs as printed, with the printed output" {
    guide="$REPO_DIR/docs/USER-GUIDE.md"
    awk '/^## A drained job as one HDF5 file/ {f = 1} f && /^```sh$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$guide" > "$WORKDIR/guide.sh"
    awk '/^## A drained job as one HDF5 file/ {f = 1} f && /^```text$/ {on = 1; next} on && /^```$/ {exit} on' \
        "$guide" > "$WORKDIR/guide.text"
    grep -q "^pdcbb export --format hdf5 -o run1.h5 /scratch/me/run1/pdcbb.$JOB_ID$" "$WORKDIR/guide.sh"
    [ "$(wc -l < "$WORKDIR/guide.text")" -eq 2 ]
    # only the destination /scratch/me/run1 is this test's
    sed -i "s|/scratch/me/run1|$H5_WORK/dest|g" "$WORKDIR/guide.sh"
    cd "$WORKDIR"
    run env PATH="$(dirname "$PDCBB"):$(dirname "$PY"):$PATH" bash -e guide.sh
    echo "$output"
    assert_success
    assert_equal "$(grep -v '^pdcbb export: ' <<<"$output")" "$(cat guide.text)"
}

@test "PERFORMANCE.md's HDF5 export benchmark lines run as printed (PDCBB_BENCH_QUICK=1: a smoke run)" {
    awk '/^## HDF5 export against `cp`/ {f = 1; next} f && /^## / {exit} f && /^    bench\// {sub(/^    /, ""); print}' \
        "$REPO_DIR/docs/PERFORMANCE.md" > "$WORKDIR/commands"
    [ "$(wc -l < "$WORKDIR/commands")" -eq 2 ]
    grep -q '^bench/export.sh build ' "$WORKDIR/commands"
    # bench/ and build/ relative to the top of the tree: this tree's scripts and this test's build
    mkdir "$WORKDIR/top" "$WORKDIR/tmp"
    ln -s "$REPO_DIR/bench" "$WORKDIR/top/bench"
    ln -s "$BUILD_DIR" "$WORKDIR/top/build"
    cd "$WORKDIR/top"
    while IFS= read -r cmd; do
        run env PDCBB_BENCH_QUICK=1 TMPDIR="$WORKDIR/tmp" bash -ec "$cmd" </dev/null
        echo "$output"
        assert_success
        case "$cmd" in
        *--help*) assert_output --partial "usage: bench/export.sh" ;;
        *) assert_output --regexp "RESULT bench=export bytes=33554432 .* hdf5_cp_median=[0-9.]+" ;;
        esac
    done <"$WORKDIR/commands"
    assert_no_daemons "$WORKDIR/tmp"
    [ -z "$(ls -A "$WORKDIR/tmp")" ]
}
