#!/usr/bin/python3
"""pdcbb_py_check.py - the Python module pdcbb end to end, for tests/bats/74-python.bats.

    pdcbb_py_check.py write-all EXPECT     in a job: containers, objects of every dtype in 1-3
                                           dims and every placement (whole, region and strided
                                           round trips), tags of every kind, KV objects with
                                           versions and transactions; checks what it reads
                                           back and saves what a reader must see in EXPECT
    pdcbb_py_check.py read-all EXPECT [DRAIN]
                                           open everything again (in the job: another process;
                                           with DRAIN: pdcbb.open_drained(DRAIN); with
                                           PDCBB_DRAINED_DIR set: pdcbb.init()) and compare
    pdcbb_py_check.py readonly EXPECT DRAIN
                                           every call that would change the drain raises
                                           ReadOnlyError naming it; nothing changed
    pdcbb_py_check.py damaged EXPECT DRAIN OBJ INTACT
                                           reading OBJ raises CorruptError naming it, INTACT
                                           still reads
    pdcbb_py_check.py errors               failures raise pdcbb.Error with pdcbb's code, name
                                           and message
    pdcbb_py_check.py stage-read DIR       read what `pdc_stage_check write 7` wrote and compare
                                           with DIR/<object>.bin (`pdc_stage_check expect`)
    pdcbb_py_check.py stage-write DIR      write the same objects and tags from DIR/<object>.bin,
                                           for `pdc_stage_check check 7`
    pdcbb_py_check.py c-tags-read          the tags pdc_meta_tool put (see 74-python.bats)
    pdcbb_py_check.py c-tags-write         tags for pdc_meta_tool tag-get

Prints "ok WHAT" per check and "FAIL WHAT: why" for a failed one; exit 1 if any failed.
"""
import os
import pickle
import sys

import numpy as np

import pdcbb

failures = 0


def check(cond, what, why=""):
    global failures
    if cond:
        print("ok", what)
    else:
        failures += 1
        print("FAIL %s: %s" % (what, why))


def raises(cls, fn, what, contains=()):
    """Check that fn() raises cls (a pdcbb.Error class) whose message contains every string
    of contains; returns the exception."""
    try:
        fn()
    except cls as e:
        missing = [c for c in contains if c not in str(e)]
        shaped = not isinstance(e, pdcbb.Error) or str(e) == "%s: %s" % (e.name, e.message)
        check(not missing and shaped, what, "missing %s in %s" % (missing, e))
        return e
    except Exception as e:  # noqa: BLE001 - reported as a failure
        check(False, what, "raised %r" % e)
        return e
    check(False, what, "did not raise")
    return None


DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float32", "float64", "bool", "S1"]
SHAPES = {1: (37,), 2: (9, 13), 3: (4, 5, 6)}
PLACEMENTS = [None, "obj_static", "region_static", "region_dynamic", "region_local", "striped"]
# Objects of an explicit PDC type: what they read as.
EXPLICIT = {"INT32": "int32", "SHORT": "int16", "LONG": "int64", "UINT32": "uint32",
            "SIZE_T": "uint64", "INT": "int32", "UINT": "uint32"}


def random_data(rng, dtype, shape):
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if d.kind == "S":
        return rng.integers(0, 256, size=shape, dtype=np.uint8).view("S1")
    if d.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(d)
    info = np.iinfo(d)
    return rng.integers(info.min, info.max, size=shape, dtype=d, endpoint=True)


def write_objects(pdc, cont, rng, expect):
    k = 0
    for dtype in DTYPES:
        for ndim, shape in SHAPES.items():
            placement = PLACEMENTS[k % len(PLACEMENTS)]
            k += 1
            name = "py-%s-%dd" % (dtype, ndim)
            what = "%s %s" % (name, placement or "default")
            obj = cont.create_object(name, shape, dtype, placement=placement)
            check(obj.shape == shape and obj.dtype == np.dtype(dtype) and obj.ndim == ndim,
                  "create " + what, "%s %s" % (obj.shape, obj.dtype))
            model = random_data(rng, dtype, shape)
            obj.write(model)
            check(np.array_equal(obj.read(), model), "whole round trip " + what)
            # a region inside, then the whole again
            off = tuple(s // 3 for s in shape)
            box = tuple(max(1, s // 2) for s in shape)
            part = random_data(rng, dtype, box)
            obj.write(part, offset=off)
            model[tuple(slice(o, o + b) for o, b in zip(off, box))] = part
            check(np.array_equal(obj.read(off, box), part), "region round trip " + what)
            check(np.array_equal(obj.read(), model), "whole after region " + what)
            # NumPy-style indexing: steps (strided regions), integers, a broadcast scalar
            sel = tuple(slice(1, None, 2) for _ in shape)
            check(np.array_equal(obj[sel], model[sel]), "strided read " + what)
            value = model.flat[0]
            obj[sel] = value
            model[sel] = value
            idx = (0,) * (ndim - 1) + (slice(None),)
            check(np.array_equal(obj[idx], model[idx]), "row read " + what)
            check(np.array_equal(obj[...], model), "whole after strided write " + what)
            expect["objects"][name] = model
            obj.close()
    for t, dtype in EXPLICIT.items():
        obj = cont.create_object("py-type-" + t, (5, 3), pdcbb.Type[t])
        model = random_data(rng, dtype, (5, 3))
        obj.write(model)
        check(obj.type == pdcbb.Type[t] and obj.dtype == np.dtype(dtype) and
              np.array_equal(obj.read(), model), "explicit type PDC_" + t)
        expect["objects"]["py-type-" + t] = model
    # a growing object: rows added by writes and extend
    g = cont.create_object("py-grow", (None, 4), "float64", placement="region_dynamic")
    check(g.maxshape == (None, 4) and g.shape == (0, 4), "grow created empty", str(g.shape))
    rows = np.arange(20.0).reshape(5, 4)
    g.write(rows)
    g.write(rows[:2] + 100, offset=(7, 0))
    g.extend(12)
    model = np.zeros((12, 4))
    model[:5], model[7:9] = rows, rows[:2] + 100
    check(g.shape == (12, 4) and np.array_equal(g.read(), model), "grow extent and data",
          str(g.shape))
    expect["objects"]["py-grow"] = model


TAG_VALUES = {
    "s": ("kelvin", "STRING"), "u": ("température ✓", "STRING"), "b": (b"\x00\xff\x01", "CHAR"),
    "i": (42, "INT64"), "neg": (-7, "INT64"), "big": (2**64 - 1, "UINT64"),
    "f": (2.5, "DOUBLE"), "t": (True, "BOOLEAN"),
    "i32": (np.int32(-5), "INT"), "u8": (np.uint8(200), "UINT8"),
    "f32": (np.float32(1.25), "FLOAT"),
    "arr": (np.array([1.5, 2.5, 3.5]), "DOUBLE"), "ints": ([1, 2, 3], "INT64"),
}


def same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b and (type(a) is type(b) or isinstance(b, (np.generic, int, float)))


def check_tags(owner, what, expect=None):
    tags = owner.tags
    for name, (value, tname) in TAG_VALUES.items():
        tags[name] = value
        got, t = tags.get_typed(name)
        want = value if not isinstance(value, list) else np.array(value)
        check(same(want, got) and t == pdcbb.Type[tname],
              "tag %s %s = %r as PDC_%s" % (what, name, value, tname), "%r %s" % (got, t))
        if expect is not None:
            expect.append((name, got, t))
    tags["s"] = "replaced"
    check(tags["s"] == "replaced", "tag %s replaced" % what)
    if expect is not None:
        expect[0] = ("s", "replaced", pdcbb.Type.STRING)
    tags.put("as-int", 7, type="INT")
    check(tags.get_typed("as-int") == (7, pdcbb.Type.INT) and
          isinstance(tags["as-int"], np.int32), "tag %s with an explicit type" % what)
    owner.put_tag("tmp", 1.0)
    owner.del_tag("tmp")
    del tags["never-put"]  # deleting a missing tag succeeds, as in PDC
    check("tmp" not in tags and "i" in tags and tags.get("tmp", "dflt") == "dflt" and
          owner.get_tag("tmp", None) is None, "tag %s delete, in, get" % what)
    raises(pdcbb.NotFoundError, lambda: tags["tmp"], "missing tag %s raises" % what, ["'tmp'"])
    check(isinstance(raises(KeyError, lambda: owner.get_tag("tmp"), "missing tag is a KeyError"),
                     KeyError), "NotFoundError is a KeyError")
    raises(pdcbb.InvalidError, lambda: tags.__setitem__("e", b""), "empty tag value refused",
           ["0 bytes"])


KV_TAGS = [0, 3, 5, 6, 9, 10, 11, 12, 13, pdcbb.LATEST]


def kv_answers(kv, keys):
    """What a reader sees of kv: per tag, the count, the keys and each key's version."""
    out = {}
    for t in KV_TAGS:
        out[t] = (kv.count(t), kv.records(t, values=False),
                  {k: kv.get_version(k, t) if kv.get(k, t) is not None else None for k in keys})
    return out


def write_kv(cont, expect):
    ks = cont.create_kv("kv-s")
    ks.put("alpha", b"a0")
    ks.put("alpha", b"a5", tag=5)
    ks.put("alpha", "a9", tag=9)
    ks.put("beta", b"b3", tag=3)
    ks.unlink("beta", 6)
    with ks.transaction(10):
        ks.put("gamma", b"g10", tag=10)
        check(ks.get("gamma") is None, "kv transaction invisible before commit")
    try:
        with ks.transaction(11):
            ks.put("delta", b"d11", tag=11)
            raise RuntimeError("abort it")
    except RuntimeError:
        pass
    ks.put_many({"k%03d" % i: np.full(3, i, dtype=np.int16) for i in range(50)}, tag=12)
    big = os.urandom(200000)
    ks.put("big", big, tag=13)
    ks["plain"] = "unversioned"
    check(ks.get_version("alpha", 7) == (b"a5", 5) and ks["alpha"] == b"a9" and
          ks.get("alpha", tag=4) == b"a0", "kv versions by tag")
    check(ks.get("beta", tag=5) == b"b3" and ks.get("beta", tag=6) is None and "beta" not in ks,
          "kv deletion marker at 6")
    check(ks["gamma"] == b"g10" and ks.get("delta") is None, "kv commit and abort")
    check(ks.get("big") == big, "kv value of 200000 bytes")
    check(ks["k007"] == np.full(3, 7, dtype=np.int16).tobytes(), "kv put_many")
    keys = ks.keys()
    check(keys == sorted(keys) and len(ks) == len(keys) == 54 and keys[:2] == ["alpha", "big"],
          "kv keys in order, len", str(keys[:5]))
    check(ks.items()[0] == ("alpha", b"a9") and ks.records(count=2, offset=1)[0][:2] == ("big", 13),
          "kv items and records")
    check(ks.info["key_type"] is str and ks.info["nshards"] >= 1, "kv info", str(ks.info))
    ki = cont.create_kv("kv-i", key_type=int, sharding="range")
    for i in (-5, 0, 3, 1000):
        ki.put(i, str(i * 2), tag=abs(i) + 1)
    check(ki.keys() == [-5, 0, 3, 1000] and ki[-5] == b"-10" and ki.get(1000, tag=5) is None,
          "kv int keys, range sharding", str(ki.keys()))
    del ki[3]
    check(3 not in ki and len(ki) == 3, "kv del removes every version")
    kf = cont.create_kv("kv-f", key_type=float)
    kf.put_many([(-1.5, b"m"), (0.0, b"z"), (2.25, b"p")], tag=2)
    check(kf.keys() == [-1.5, 0.0, 2.25] and kf[-0.0] == b"z", "kv float keys")
    ks.migrate(6)  # the records with a tag below 6 to DEST/pdcbb.<job>/kv-migrate/pyc/kv-s@6
    raises(pdcbb.ExistsError, lambda: ks.migrate(6), "kv migrate twice at one tag")
    expect["kv"] = {"kv-s": kv_answers(ks, keys + ["beta", "delta"]),
                    "kv-i": kv_answers(ki, [-5, 0, 3, 1000]),
                    "kv-f": kv_answers(kf, [-1.5, 0.0, 2.25])}


def write_all(path):
    expect = {"objects": {}, "tags": {}, "kv": {}}
    rng = np.random.default_rng(74)
    with pdcbb.init() as pdc:
        check(pdc.nservers == 2 and pdc.discovery_method in ("jobtable", "daemon") and
              not pdc.read_only, "session in a job of 2 daemons", repr(pdc))
        with pdc.create_container("pyc") as cont:
            again = pdc.create_container("pyc")  # PDC: create of an existing name opens it
            check(again.meta_id == cont.meta_id and pdc.open_container("pyc").name == "pyc",
                  "container create twice and open: the same container")
            write_objects(pdc, cont, rng, expect)
            ctags, otags = [], []
            check_tags(cont, "container", ctags)
            with cont.create_object("py-tagged", 4, "int32") as obj:
                check_tags(obj, "object", otags)
            expect["tags"] = {"container": ctags, "object": otags}
            write_kv(cont, expect)
        check(cont.closed and not again.closed, "with closes the container")
    check(pdc.closed and again.closed, "with closes the session and its handles")
    with open(path, "wb") as f:
        pickle.dump(expect, f)


def read_all(path, drain=None):
    expect = load_expect(path)
    pdc = pdcbb.open_drained(drain) if drain else pdcbb.init()
    with pdc:
        mode = "drained" if pdc.read_only else "live"
        if drain or os.environ.get("PDCBB_DRAINED_DIR"):
            check(pdc.read_only and pdc.nservers == 1, "drained session", repr(pdc))
        for name, model in expect["objects"].items():
            with pdc.open_object(name) as obj:
                got = obj.read()
                check(obj.dtype == model.dtype and obj.shape == model.shape and
                      np.array_equal(got, model), "%s read %s" % (mode, name),
                      "%s %s" % (obj.dtype, obj.shape))
                if obj.ndim == 2 and obj.shape[0] > 2:
                    check(np.array_equal(obj[1:3, ::2], model[1:3, ::2]),
                          "%s strided read %s" % (mode, name))
        cont = pdc.open_container("pyc")
        with pdc.open_object("py-tagged") as obj:
            for owner, kind in ((cont, "container"), (obj, "object")):
                for name, value, t in expect["tags"][kind]:
                    got, gt = owner.tags.get_typed(name)
                    check(same(value, got) and gt == t, "%s tag %s %s" % (mode, kind, name),
                          "%r %s" % (got, gt))
        for name, answers in expect["kv"].items():
            kv = cont.open_kv(name)
            keys = list(answers[pdcbb.LATEST][2])
            check(kv_answers(kv, keys) == answers, "%s kv %s at every tag" % (mode, name))
    check(pdc.closed, "session closed")


def load_expect(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def readonly(path, drain):
    with pdcbb.open_drained(drain) as pdc:
        cont = pdc.open_container("pyc")
        obj = pdc.open_object("py-float64-2d")
        grow = pdc.open_object("py-grow")
        kv = cont.open_kv("kv-s")
        calls = {
            "create_container": lambda: pdc.create_container("new"),
            "create_object": lambda: cont.create_object("new", 3, "int8"),
            "create_kv": lambda: cont.create_kv("new"),
            "write": lambda: obj.write(np.zeros(obj.shape)),
            "setitem": lambda: obj.__setitem__((0, 0), 1.0),
            "strided setitem": lambda: obj.__setitem__((slice(None, None, 2), 0), 1.0),
            "object tag put": lambda: obj.tags.__setitem__("x", 1),
            "object tag del": lambda: obj.del_tag("s"),
            "container tag put": lambda: cont.put_tag("x", "y"),
            "extend": lambda: grow.extend(100),
            "resize": lambda: obj.resize((3, 3)),
            "kv put": lambda: kv.put("x", b"1", tag=3),
            "kv setitem": lambda: kv.__setitem__("x", b"1"),
            "kv put_many": lambda: kv.put_many({"x": b"1"}),
            "kv unlink": lambda: kv.unlink("alpha", 20),
            "kv transaction": lambda: kv.start(30),
            "object delete": lambda: obj.delete(),
            "container delete": lambda: cont.delete(),
        }
        for what, fn in calls.items():
            e = raises(pdcbb.ReadOnlyError, fn, "refused %s" % what, ["read-only", drain])
            check(e is not None and e.code == pdcbb.ERR_READ_ONLY and
                  e.name == "PDCBB_ERR_READ_ONLY", "refused %s: code" % what)
        check(np.array_equal(obj.read(), load_expect(path)["objects"]["py-float64-2d"]),
              "the drain is unchanged")


def damaged(path, drain, name, intact):
    with pdcbb.open_drained(drain) as pdc:
        obj = pdc.open_object(name)
        e = raises(pdcbb.CorruptError, obj.read, "damaged %s raises CorruptError" % name,
                   ["object '%s'" % name, "CRC-32C mismatch"])
        print("message:", e)
        check(e is not None and e.code == pdcbb.ERR_CORRUPT, "code PDCBB_ERR_CORRUPT")
        want = load_expect(path)["objects"][intact]
        check(np.array_equal(pdc.open_object(intact).read(), want),
              "intact %s still reads" % intact)


def errors():
    with pdcbb.init() as pdc:
        e = raises(pdcbb.NotFoundError, lambda: pdc.open_object("no-such-object"),
                   "open of a missing object", ["PDCobj_open", "'no-such-object'"])
        check(e.code == 4 and e.name == "PDCBB_ERR_NOT_FOUND" and isinstance(e, KeyError),
              "NotFoundError: code 4, PDCBB_ERR_NOT_FOUND, a KeyError")
        raises(pdcbb.NotFoundError, lambda: pdc.open_container("no-such-cont"),
               "open of a missing container", ["'no-such-cont'"])
        cont = pdc.create_container("errs")
        obj = cont.create_object("e1", (4, 4), "int32")
        raises(pdcbb.ExistsError, lambda: cont.create_object("e1", 3, "int8"),
               "create of an existing object", ["an object named 'e1' already exists"])
        e = raises(pdcbb.InvalidError, lambda: cont.create_object("bad\x1bname", 3, "int8"),
                   "a name with a control character", ["control character 0x1b"])
        check(e.name == "PDCBB_ERR_BAD_NAME" and isinstance(e, ValueError), "BAD_NAME code")
        raises(pdcbb.InvalidError, lambda: cont.create_object("c", 3, np.complex64),
               "a dtype PDC does not have", ["complex64"])
        raises(pdcbb.InvalidError, lambda: cont.create_object("c", 3, "PDC_STRING"),
               "a type without a dtype", ["PDC_STRING"])
        raises(pdcbb.InvalidError, lambda: obj.write(np.ones((2, 2))),
               "float data into an int object", ["float64", "'e1'", "PDC_INT"])
        raises(pdcbb.InvalidError, lambda: obj.write([[2**40]]), "a value that does not fit",
               ["1099511627776", "'e1'"])
        obj.write([[-7, 2**31 - 1]], offset=(1, 1))  # Python ints that fit: converted
        check(obj[1, 1:3].tolist() == [-7, 2**31 - 1], "Python ints into an int32 object")
        with cont.create_object("e3", 5, "uint8") as o3:
            o3.write(b"hello")
            check(o3.read().tobytes() == b"hello", "bytes into a uint8 object")
        e = raises(pdcbb.InvalidError, lambda: obj.write(np.ones((2, 2), "int32"), offset=(3, 3)),
                   "a box outside the object", ["'e1'"])
        check(e.name == "PDCBB_ERR_BAD_REGION", "outside: PDCBB_ERR_BAD_REGION", e.name)
        raises(pdcbb.InvalidError, lambda: obj.read(offset=(1,)), "an offset of the wrong length")
        raises(IndexError, lambda: obj[4], "an index out of bounds")
        e = raises(pdcbb.Error, pdcbb.init, "a second session", ["already initialised"])
        check(e.name == "PDCBB_ERR_BUSY", "second session: PDCBB_ERR_BUSY", e.name)
        raises(pdcbb.NotFoundError, lambda: cont.open_kv("no-kv"), "open of a missing KV object",
               ["no-kv"])
        kv = cont.create_kv("ki", key_type=int)
        raises(pdcbb.InvalidError, lambda: kv.put("text", b"1"), "a str key for int keys")
        raises(pdcbb.NotFoundError, lambda: kv[5], "a missing key", ["5"])
        raises(pdcbb.InvalidError, lambda: kv.put(1, b"x", tag=pdcbb.MAXTAG), "MAXTAG set")
        obj.close()
        raises(pdcbb.Error, obj.read, "a closed object", ["closed"])
        # resize, flush, deleting a container and a KV object
        with cont.create_object("e4", (4, 4), "int16") as o4:
            o4.write(np.ones((4, 4), "int16"))
            o4.flush()
            o4.resize((6, 4))
            check(o4.shape == (6, 4) and o4.read().sum() == 16, "resize: rows added read zero")
            o4.resize((2, 4))
            check(o4.read().tolist() == [[1] * 4] * 2, "resize: rows removed")
            raises(pdcbb.InvalidError, lambda: o4.resize((2, 2)), "resize of another dimension",
                   ["'e4'", "only its first dimension can change"])
        gone = pdc.create_container("errs-empty")
        gone.delete()
        check(gone.closed, "container delete closes it")
        raises(pdcbb.NotFoundError, lambda: pdc.open_container("errs-empty"),
               "a deleted container")
        kv2 = cont.create_kv("kv-gone")
        kv2["a"] = b"1"
        kv2.delete()
        check(kv2.closed, "KV delete closes it")
        raises(pdcbb.NotFoundError, lambda: cont.open_kv("kv-gone"), "a deleted KV object",
               ["'kv-gone'"])
        with cont.create_object("e2", 2, "int8") as o2:
            o2.delete()
        check(o2.closed, "delete closes")
        raises(pdcbb.NotFoundError, lambda: pdc.open_object("e2"), "a deleted object")
    raises(pdcbb.Error, lambda: pdc.open_object("e1"), "a closed session", ["closed"])


def stage_read(d):
    with pdcbb.init() as pdc:
        cont = pdc.open_container("stage")
        run = cont.tags["run"]
        check(run == 7 and isinstance(run, np.int32), "C's PDC_INT container tag", repr(run))
        for name, dtype, shape in STAGE:
            obj = pdc.open_object(name)
            want = np.fromfile(os.path.join(d, name + ".bin"), dtype=dtype).reshape(shape)
            check(obj.dtype == np.dtype(dtype) and obj.shape == shape, "C's %s type and shape"
                  % name, "%s %s" % (obj.dtype, obj.shape))
            check(np.array_equal(obj.read(), want), "C's %s reads as written" % name)
            box = tuple(slice(s // 5, s // 5 + s // 2) for s in shape)
            check(np.array_equal(obj[box], want[box]), "C's %s box" % name)
        check(pdc.open_object("st-objstatic").tags["units"] == "kelvin", "C's string tag")


# pdc_stage_check's objects: name, dtype, shape as written; and how each was created
STAGE = [("st-objstatic", "float64", (300000,)), ("st-rstatic", "int32", (64, 1000)),
         ("st-dynamic", "float32", (100, 100)), ("st-local", "uint8", (100000,)),
         ("st-unlimited", "int64", (500, 16))]
STAGE_CREATE = {"st-objstatic": ("obj_static", (300000,)),
                "st-rstatic": ("region_static", (64, 1000)),
                "st-dynamic": ("region_dynamic", (100, 100)),
                "st-local": ("region_local", (100000,)),
                "st-unlimited": ("obj_static", (None, 16))}


def stage_write(d):
    with pdcbb.init() as pdc:
        cont = pdc.create_container("stage")
        cont.tags["run"] = np.int32(7)
        for name, dtype, shape in STAGE:
            data = np.fromfile(os.path.join(d, name + ".bin"), dtype=dtype).reshape(shape)
            placement, dims = STAGE_CREATE[name]
            with cont.create_object(name, dims, dtype, placement=placement) as obj:
                if name == "st-local":
                    obj.write(data[1000:51000], offset=1000)  # only these were written by C
                else:
                    half = shape[0] // 2
                    obj.write(data[:half])
                    if obj.maxshape[0] is None:
                        obj.write(data[half:], offset=(half, 0))  # raises the extent
                    else:
                        obj[half:] = data[half:]
                if name == "st-objstatic":
                    obj.tags["units"] = "kelvin"
                check(obj.shape == shape, "python wrote %s" % name, str(obj.shape))


def c_tags_read():
    with pdcbb.init() as pdc:
        obj = pdc.open_object("ct")
        want = {"ti": (-12, "INT"), "tf": (0.5, "FLOAT"), "td": (3.25, "DOUBLE"),
                "tl": (-(2**40), "INT64"), "tu": (2**63 + 5, "UINT64"), "ts": ("hello", "STRING"),
                "tc": (b"raw\x00", "CHAR")}
        for name, (value, t) in want.items():
            got, gt = obj.tags.get_typed(name)
            check(got == value and gt == pdcbb.Type[t], "C's tag %s = %r" % (name, value),
                  "%r %s" % (got, gt))
        check(pdc.open_container("cc").tags["where"] == "container", "C's container tag")


def c_tags_write():
    with pdcbb.init() as pdc:
        obj = pdc.open_object("ct")
        obj.tags["p_s"] = "from python"
        obj.tags["p_i"] = 2**40 + 1
        obj.tags["p_f"] = 0.1
        obj.tags["p_i32"] = np.int32(-3)
        obj.tags["p_f32"] = np.float32(1.5)
        pdc.open_container("cc").tags["p_c"] = "on the container"


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "write-all" and len(argv) == 3:
        write_all(argv[2])
    elif cmd == "read-all" and len(argv) in (3, 4):
        read_all(argv[2], argv[3] if len(argv) == 4 else None)
    elif cmd == "readonly" and len(argv) == 4:
        readonly(argv[2], argv[3])
    elif cmd == "damaged" and len(argv) == 6:
        damaged(argv[2], argv[3], argv[4], argv[5])
    elif cmd == "errors":
        errors()
    elif cmd == "stage-read" and len(argv) == 3:
        stage_read(argv[2])
    elif cmd == "stage-write" and len(argv) == 3:
        stage_write(argv[2])
    elif cmd == "c-tags-read":
        c_tags_read()
    elif cmd == "c-tags-write":
        c_tags_write()
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print("%s %s: %d failure%s" % ("FAIL" if failures else "ok", cmd, failures,
                                   "" if failures == 1 else "s"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
