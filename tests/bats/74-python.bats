#!/usr/bin/env bats
# The Python module pdcbb (python/pdcbb, docs/PYTHON.md) with Debian's /usr/bin/python3 and
# NumPy, in local jobs of 2 nodes: containers and objects of every dtype in 1 to 3 dimensions
# and every placement (whole, region and strided round trips), tags of every kind, KV objects
# with versions, transactions and a migration, read again by another process of the job; data
# and tags written by C programs read in Python and the other way round; errors as
# pdcbb.Error with pdcbb's code and message. After the job the same reads from the drain
# (open_drained and PDCBB_DRAINED_DIR), every write refused read-only, a damaged data file
# raising CorruptError. The package from the build tree, from the sources with PDCBB_LIBPDC,
# and installed by `cmake --install` where /usr/bin/python3 finds it; PYTHON.md's commands and
# example programs run exactly as printed and print what the page shows.

load helpers
bats_require_minimum_version 1.5.0

PY=/usr/bin/python3
CHECK="$REPO_DIR/tests/progs/pdcbb_py_check.py"
STAGE="$BUILD_DIR/tests/pdc_stage_check"
DOC="$REPO_DIR/docs/PYTHON.md"
JOB_ID=7401
export PYTHONDONTWRITEBYTECODE=1   # no __pycache__ in the sources or the build

setup_file() {
    require_build && require_progs "$STAGE" || return 1
    "$PY" -c 'import numpy, yaml' ||
        { echo "python3-numpy or python3-yaml is missing (scripts/install-deps.sh)" >&2; return 1; }
    PYWORK="$(mktemp -d "${BATS_TMPDIR:-/tmp}/pdcbb-bats-python.XXXXXX")"
    export PYWORK
    mkdir "$PYWORK/dest"
    # The job every test of the drain reads: one process writes and checks everything,
    # another process of the same job reads it all again.
    PYTHONPATH="$BUILD_DIR/python" timeout 600 "$PDCBB" run --nodes 2 --workdir "$PYWORK/job" \
        --job-id "$JOB_ID" --drain "$PYWORK/dest" -- bash -c \
        "'$PY' '$CHECK' write-all '$PYWORK/expect.pkl' && '$PY' '$CHECK' read-all '$PYWORK/expect.pkl'" \
        >"$PYWORK/live.out" 2>&1 || { cat "$PYWORK/live.out" >&2; return 1; }
    [ -f "$PYWORK/dest/pdcbb.$JOB_ID/COMPLETE" ] ||
        { echo "the job was not drained" >&2; cat "$PYWORK/live.out" >&2; return 1; }
    install_prefix
}

teardown_file() {
    [ -n "${PYWORK:-}" ] || return 0
    assert_no_daemons "$PYWORK"
    rm -rf "$PYWORK"
    remove_prefix
}

setup() {
    setup_workdir
    export PYTHONPATH="$BUILD_DIR/python"
    D="$PYWORK/dest/pdcbb.$JOB_ID"
}

teardown() {
    cleanup_workdir
}

# Where cmake --install put the package for $PREFIX.
pydir() {
    echo "$PREFIX/$(sed -n 's/^PDCBB_PYTHON_INSTALL_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")"
}

@test "import pdcbb from the build tree: help, libpdc found, the codes and types are the C headers'" {
    run "$PY" -c 'import pdcbb; print(pdcbb.libpdc_path())'
    assert_success
    assert_output --regexp "^$BUILD_DIR/client/libpdc\.so"
    run "$PY" -c 'import pydoc, pdcbb; print(pydoc.render_doc(pdcbb, renderer=pydoc.plaintext))'
    assert_success
    for s in "init(name='pdc')" "open_drained(path, owner=None)" "class Object" "class KV" \
        "class Container" "class Session" "class NotFoundError" "write(self, data, offset=None)" \
        "read(self, offset=None, shape=None)" "docs/PYTHON.md"; do
        assert_output --partial "$s"
    done
    # pdcbb.errors.CODES is common/pdcbb_error.h's list; pdcbb.Type is pdc.h's pdc_var_type_t
    diff <(sed -n 's/^ *X(\(PDCBB_[A-Z_]*\), \([0-9]*\), "\(.*\)").*$/\2 \1 \3/p' \
        "$REPO_DIR/common/pdcbb_error.h") \
        <("$PY" -c 'import pdcbb; [print(*c) for c in pdcbb.errors.CODES]')
    diff <(sed -n 's/^ *\(PDC_[A-Z0-9_]*\) *= *\(-\{0,1\}[0-9]*\),.*$/\1 \2/p' "$REPO_DIR/include/pdc.h.in" |
        awk '/^PDC_UNKNOWN/ {on = 1} on; /^PDC_SIZE_T/ {exit}') \
        <("$PY" -c 'import pdcbb; [print(t.pdc_name, int(t)) for t in pdcbb.Type]')
    "$PY" -c 'import pdcbb; assert pdcbb.ERR_READ_ONLY == 29 and pdcbb.ERR_CORRUPT == 31'
}

@test "the sources with PDCBB_LIBPDC; a missing libpdc and a program outside a job fail clearly" {
    run env PYTHONPATH="$REPO_DIR/python" PDCBB_LIBPDC="$BUILD_DIR/client/libpdc.so.0" \
        "$PY" -c 'import pdcbb; print(pdcbb.libpdc_path(), pdcbb.__version__)'
    assert_success
    assert_output "$BUILD_DIR/client/libpdc.so.0 unknown (source tree)"
    [ ! -e "$REPO_DIR/python/pdcbb/_config.py" ]
    run env PDCBB_LIBPDC=/nonexistent/libpdc.so "$PY" -c 'import pdcbb; pdcbb.init()'
    assert_failure
    assert_output --partial "OSError: pdcbb: cannot load libpdc; tried /nonexistent/libpdc.so (PDCBB_LIBPDC)"
    run "$PY" -c '
import pdcbb
try:
    pdcbb.init()
except pdcbb.Error as e:
    print(type(e).__name__, e.code, e)'
    assert_success
    assert_output --regexp '^Error 21 PDCBB_ERR_DISCOVERY: PDCinit: .*PDCBB_JOB_DIR'
}

@test "in a job: every dtype in 1-3 dims and every placement, whole, region and strided round trips, tags, KV, read again by another process" {
    run cat "$PYWORK/live.out"
    refute_output --partial "FAIL"
    assert_line "ok write-all: 0 failures"
    assert_line "ok read-all: 0 failures"
    for d in int8 uint8 int16 uint16 int32 uint32 int64 uint64 float32 float64 bool S1; do
        for n in 1 2 3; do
            assert_line --regexp "^ok whole round trip py-$d-${n}d "
            assert_line --regexp "^ok strided read py-$d-${n}d "
            assert_line "ok live read py-$d-${n}d"
        done
    done
    for p in default obj_static region_static region_dynamic region_local striped; do
        assert_line --regexp "^ok region round trip py-.* $p$"
    done
    assert_line "ok grow extent and data"
    assert_line "ok tag object u = 'température ✓' as PDC_STRING"
    assert_line "ok tag container big = 18446744073709551615 as PDC_UINT64"
    assert_line "ok kv versions by tag"
    assert_line "ok kv value of 200000 bytes"
    assert_line "ok live kv kv-s at every tag"
    [ "$(grep -c '^ok ' <<<"$output")" -ge 400 ]
}

@test "C writes, Python reads; Python writes, C reads: every placement, an unlimited object, tags" {
    mkdir "$WORKDIR/exp"
    for o in st-objstatic st-rstatic st-dynamic st-local st-unlimited; do
        "$STAGE" expect 7 "$o" >"$WORKDIR/exp/$o.bin"
    done
    export PY CHECK STAGE TOOL
    in_job 2 '"$STAGE" write 7 | tail -1 && "$PY" "$CHECK" stage-read exp'
    assert_success
    assert_line "ok write: 0 failures"
    assert_line "ok stage-read: 0 failures"
    assert_line "ok C's st-unlimited reads as written"
    in_job 2 '"$PY" "$CHECK" stage-write exp && "$STAGE" check 7'
    assert_success
    assert_line "ok stage-write: 0 failures"
    assert_line "ok read-whole st-unlimited"
    assert_line "ok check: 0 failures"
    # tags: pdc_meta_tool puts them, Python reads; Python puts, pdc_meta_tool reads
    in_job 2 '"$TOOL" "cont-create cc" "obj-create cc ct" "tag-put obj ct ti INT -12" \
        "tag-put obj ct tf FLOAT 0.5" "tag-put obj ct td DOUBLE 3.25" \
        "tag-put obj ct tl INT64 -1099511627776" "tag-put obj ct tu UINT64 9223372036854775813" \
        "tag-put obj ct ts STRING hello" "tag-put obj ct tc CHAR raw" \
        "tag-put cont cc where STRING container" >/dev/null &&
        "$PY" "$CHECK" c-tags-read && "$PY" "$CHECK" c-tags-write &&
        "$TOOL" "cont-open cc" "obj-open ct" "tag-get obj ct p_s" "tag-get obj ct p_i" \
        "tag-get obj ct p_f" "tag-get obj ct p_i32" "tag-get obj ct p_f32" "tag-get cont cc p_c"'
    assert_success
    assert_line "ok c-tags-read: 0 failures"
    assert_line "ok tag-get p_s type=PDC_STRING size=12 value=from python"
    assert_line "ok tag-get p_i type=PDC_INT64 size=8 value=1099511627777"
    assert_line "ok tag-get p_f type=PDC_DOUBLE size=8 value=0.10000000000000001"
    assert_line "ok tag-get p_i32 type=PDC_INT size=4 value=-3"
    assert_line "ok tag-get p_f32 type=PDC_FLOAT size=4 value=1.5"
    assert_line "ok tag-get p_c type=PDC_STRING size=17 value=on the container"
    assert_no_daemons "$WORKDIR"
}

@test "errors raise pdcbb.Error subclasses with pdcbb's code, name and message" {
    export PY CHECK
    in_job 2 '"$PY" "$CHECK" errors'
    assert_success
    refute_output --partial FAIL
    assert_line "ok errors: 0 failures"
    for what in "open of a missing object" "create of an existing object" \
        "a name with a control character" "float data into an int object" \
        "a box outside the object" "a second session" "a closed object" "a missing key"; do
        assert_line "ok $what"
    done
    # What a program that does not catch it shows.
    in_job 2 '"$PY" -c "import pdcbb; pdcbb.init().open_object(\"nope\")"'
    assert_failure
    assert_output --partial "pdcbb.errors.NotFoundError: PDCBB_ERR_NOT_FOUND: PDCobj_open: no object named 'nope'"
}

@test "after the job: the same reads from the drain, through open_drained and PDCBB_DRAINED_DIR" {
    run "$PY" "$CHECK" read-all "$PYWORK/expect.pkl" "$D"
    echo "$output"
    assert_success
    assert_line "ok drained session"
    assert_line "ok drained read py-float64-3d"
    assert_line "ok drained read py-grow"
    assert_line "ok drained kv kv-i at every tag"
    assert_line "ok read-all: 0 failures"
    # the destination holding the one drain, through the environment and pdcbb.init()
    PDCBB_DRAINED_DIR="$PYWORK/dest" run "$PY" "$CHECK" read-all "$PYWORK/expect.pkl"
    assert_success
    assert_line "ok drained session"
    assert_line "ok read-all: 0 failures"
    # KV.migrate(6) during the job: a partial drain of the records with a tag below 6
    run "$PY" -c 'import sys, pdcbb
with pdcbb.open_drained(sys.argv[1]) as pdc:
    print(pdc.open_container("pyc").open_kv("kv-s").records())' "$D/kv-migrate/pyc/kv-s@6"
    assert_success
    assert_output "[('alpha', 5, b'a5'), ('beta', 3, b'b3'), ('plain', 0, b'unversioned')]"
    # a drain that is not there: PDCinit's reason, naming it
    run "$PY" -c 'import sys, pdcbb
try:
    pdcbb.open_drained(sys.argv[1])
except pdcbb.Error as e:
    print(e)' "$PYWORK/nothing-here"
    assert_success
    assert_output --regexp "^PDCBB_ERR_[A-Z_]+: PDCinit: .*$PYWORK/nothing-here"
}

@test "after the job: every call that would change the drain raises ReadOnlyError naming it" {
    run "$PY" "$CHECK" readonly "$PYWORK/expect.pkl" "$D"
    echo "$output"
    assert_success
    for call in create_container create_object create_kv write setitem "strided setitem" \
        "object tag put" "object tag del" "container tag put" extend resize "kv put" "kv setitem" \
        "kv put_many" "kv unlink" "kv transaction" "object delete" "container delete"; do
        assert_line "ok refused $call"
    done
    assert_line "ok the drain is unchanged"
    run "$PDCBB" verify "$D"
    assert_success
}

@test "a damaged drain data file raises CorruptError naming the object and extent; others still read" {
    mkdir "$WORKDIR/copy"
    cp -a "$D" "$WORKDIR/copy/"
    local C="$WORKDIR/copy/pdcbb.$JOB_ID"
    # 4 bytes inverted in the middle of py-float64-2d's first extent
    read -r file at <<<"$("$PY" - "$C" <<'EOF'
import sys, yaml
m = yaml.safe_load(open(sys.argv[1] + "/manifest.yaml"))
oid = [o["id"] for o in m["objects"] if o["name"] == "py-float64-2d"][0]
x = [x for x in m["extents"] if x["object"] == oid][0]
print(x["file"], x["file_offset"] + x["length"] // 2)
EOF
)"
    [ -n "$at" ]
    "$PY" -c 'import sys
p, o = sys.argv[1], int(sys.argv[2])
with open(p, "r+b") as f:
    f.seek(o); b = bytearray(f.read(4)); f.seek(o); f.write(bytes(x ^ 0xff for x in b))' "$C/$file" "$at"
    run "$PY" "$CHECK" damaged "$PYWORK/expect.pkl" "$C" py-float64-2d py-int32-3d
    echo "$output"
    assert_success
    assert_line "ok damaged py-float64-2d raises CorruptError"
    assert_line "ok intact py-int32-3d still reads"
    assert_output --regexp "message: PDCBB_ERR_CORRUPT: .*object 'py-float64-2d' \(id [0-9]+\), extent [0-9]+, bytes [0-9]+\.\.[0-9]+: $file offset"
    run "$PDCBB" verify "$C"
    assert_failure
}

@test "cmake --install puts the package where /usr/bin/python3 looks for the prefix, naming the installed libpdc" {
    local dir ver
    ver="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    dir="$(pydir)"
    [ "$dir" = "$PREFIX/lib/python$ver/dist-packages" ]
    for f in __init__.py _lib.py core.py dtypes.py errors.py kv.py _config.py; do
        [ -f "$dir/pdcbb/$f" ]
    done
    # For the default prefix that directory is on Debian's python3 path: nothing to set.
    "$PY" -c "import sys; assert '/usr/local/lib/python$ver/dist-packages' in sys.path, sys.path"
    # Only the documented setup, from outside the tree: the installed libpdc, no LD_LIBRARY_PATH.
    cd "$WORKDIR"
    run env -i PATH=/usr/bin:/bin PYTHONPATH="$dir" "$PY" -c \
        'import pdcbb, os; print(pdcbb.libpdc_path(), os.path.exists(pdcbb.libpdc_path()), pdcbb.__version__, pdcbb.__file__)'
    assert_success
    assert_output --regexp "^$PREFIX/lib[^ ]*/libpdc\.so\.0 True [0-9]+\.[0-9]+\.[0-9]+ $dir/pdcbb/__init__\.py$"
    run env -i PATH="$PREFIX/bin:/usr/bin:/bin" PYTHONPATH="$dir" UCX_WARN_UNUSED_ENV_VARS=n \
        TMPDIR="$WORKDIR" pdcbb run --nodes 2 -- "$PY" -c \
        'import pdcbb, numpy as np
with pdcbb.init() as pdc:
    o = pdc.create_container("c").create_object("o", (3, 4), "uint16", placement="striped")
    o[1] = 7
    print("installed", pdc.nservers, o.read().sum(), pdcbb.libpdc_path())'
    assert_success
    assert_line --regexp "^installed 2 28 $PREFIX/"
    assert_no_daemons "$WORKDIR"
}

# The fenced blocks of language $1 in PYTHON.md's section $2 (a "## " heading), in order,
# each into $WORKDIR/$1.N (N from 1).
doc_blocks() {
    awk -v lang="$1" -v sec="## $2" -v out="$WORKDIR/$1." '
        /^## / {insec = ($0 == sec)}
        !insec {next}
        !fence && /^```/ {fence = 1; take = ($0 == "```" lang); if (take) n++; next}
        fence && /^```$/ {fence = 0; take = 0; next}
        fence && take {print > (out n)}' "$DOC"
}

@test "PYTHON.md: the example programs run as printed against the installed tree and print what the page shows" {
    doc_blocks python "A complete example"
    doc_blocks sh "A complete example"
    doc_blocks text "A complete example"
    [ -s "$WORKDIR/python.1" ] && [ -s "$WORKDIR/python.2" ] && [ ! -e "$WORKDIR/python.3" ]
    # each program is saved under the name its first line gives
    mkdir "$WORKDIR/run" "$WORKDIR/scratch"
    for n in 1 2; do
        name="$(sed -n '1s/^# \([a-z]*\.py\) - .*/\1/p' "$WORKDIR/python.$n")"
        [ -n "$name" ]
        cp "$WORKDIR/python.$n" "$WORKDIR/run/$name"
    done
    [ "$(cat "$WORKDIR/sh.1")" = "pdcbb run --nodes 2 --drain /scratch/me/run1 -- /usr/bin/python3 first.py" ]
    [ "$(cat "$WORKDIR/sh.2")" = "/usr/bin/python3 after.py /scratch/me/run1" ]
    # The page's setup for an installed prefix (PYTHONPATH, PATH) and nothing else; only the
    # destination /scratch/me/run1 is this test's.
    mkdir -p "$WORKDIR/scratch/me/run1"
    sed -i "s|/scratch/me/run1|$WORKDIR/scratch/me/run1|g" "$WORKDIR/sh.1" "$WORKDIR/sh.2"
    cd "$WORKDIR/run"
    for n in 1 2; do
        run --separate-stderr env -i PATH="$PREFIX/bin:/usr/bin:/bin" PYTHONPATH="$(pydir)" \
            HOME="$WORKDIR" UCX_WARN_UNUSED_ENV_VARS=n TMPDIR="$WORKDIR" bash -e "$WORKDIR/sh.$n"
        echo "$stderr"
        assert_success
        diff "$WORKDIR/text.$n" <(echo "$output")
        [ "$n" = 2 ] || grep -q "pdcbb run: .*exited with status 0" <<<"$stderr"
    done
    assert_no_daemons "$WORKDIR"
}

@test "PYTHON.md: the build-tree and install commands of 'Getting it' work as printed" {
    doc_blocks sh "Getting it"
    [ "$(wc -l <"$WORKDIR/sh.1")" -eq 2 ] && [ "$(wc -l <"$WORKDIR/sh.2")" -eq 3 ]
    # run from a top directory whose build/ is this test's build
    mkdir "$WORKDIR/top"
    ln -s "$BUILD_DIR" "$WORKDIR/top/build"
    cd "$WORKDIR/top"
    run env -u PYTHONPATH bash -e "$WORKDIR/sh.1"
    assert_success
    assert_output --regexp "^$BUILD_DIR/client/libpdc\.so"
    sed -i "s|/opt/pdcbb|$WORKDIR/opt|g" "$WORKDIR/sh.2"
    echo '/usr/bin/python3 -c "import pdcbb; print(pdcbb.libpdc_path())"' >>"$WORKDIR/sh.2"
    run env -u PYTHONPATH bash -e "$WORKDIR/sh.2"
    assert_success
    assert_line --regexp "^$WORKDIR/opt/lib[^ ]*/libpdc\.so\.0$"
}
