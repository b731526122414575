"""Sessions, containers, objects and tags: the PDC API of libpdc as Python classes.

A :class:`Session` is one PDCinit ... PDCclose of this process (libpdc allows one at a time).
Containers, objects and KV objects are handles of the session that made them: each is a
context manager whose exit closes it, and closing the session closes all of them.  Handles
are not tied to a thread; libpdc serialises the calls.
"""

import atexit
import contextlib
import ctypes
import enum
import os
import sys
import threading
import weakref
from ctypes import byref, c_int, c_uint64, c_ulonglong, c_void_p

import numpy as np

from . import _lib, dtypes, errors
from ._lib import UNLIMITED, check, check_id, cname, u64_array

_PDC_CONT_CREATE, _PDC_OBJ_CREATE = 0, 1
_PDC_READ, _PDC_WRITE = 1, 2


class Placement(enum.IntEnum):
    """Where an object's region data goes (pdc_region_partition_t, plus pdcbb's STRIPED):
    OBJ_STATIC (the whole object on its home daemon), REGION_STATIC (equal stripes of the
    first dimension, one per daemon), REGION_DYNAMIC (each region where the home daemon
    chooses), REGION_LOCAL (on the writer's node), STRIPED (about 1 MiB stripes round robin
    over the daemons: objects larger than a node).  See pdc.h."""
    OBJ_STATIC = 0
    REGION_STATIC = 1
    REGION_DYNAMIC = 2
    REGION_LOCAL = 3
    STRIPED = 4

    def __str__(self):
        return self.name.lower()  # as pdcbb's --pdc placement= key spells it


def _placement(p):
    if isinstance(p, str):
        key = p.upper()
        for prefix in ("PDCBB_REGION_", "PDC_"):
            key = key[len(prefix):] if key.startswith(prefix) else key
        if key in Placement.__members__:
            return Placement[key]
        raise errors.invalid("unknown placement %r (obj_static, region_static, "
                             "region_dynamic, region_local or striped)" % p)
    try:
        return Placement(int(p))
    except (TypeError, ValueError):
        raise errors.invalid("unknown placement %r" % (p,)) from None


# ------------------------------------------------------------------------------------ sessions

_current = None  # the open Session of this process, if any
_env_lock = threading.Lock()


def init(name="pdc"):
    """Connect to the job's burst buffer: PDCinit.  Returns an open :class:`Session`.

    Inside a job (``pdcbb run``, or a Slurm job with ``--pdc``) the daemons are found through
    ``PDCBB_JOB_DIR``.  With ``PDCBB_DRAINED_DIR`` set in the environment, a drained job is
    opened read-only instead (see :func:`open_drained`).

    Raises :class:`Error` when libpdc cannot start (PDCBB_ERR_DISCOVERY outside a job,
    PDCBB_ERR_BUSY when this process already has a session open, ...).
    """
    return Session(name)


def open_drained(path, owner=None):
    """Open a drained job read-only, without daemons: PDCinit with ``PDCBB_DRAINED_DIR=path``
    (and ``PDCBB_DRAINED_OWNER=owner`` to read another user's drain on purpose).

    path is a drained job directory (``DEST/pdcbb.<jobid>``) or a destination holding exactly
    one.  Reads work as in the job, every extent checked against its CRC-32C
    (:class:`CorruptError` when one does not match); anything that would change the data
    raises :class:`ReadOnlyError`.  Returns an open :class:`Session`.
    """
    overrides = {"PDCBB_DRAINED_DIR": os.fspath(path)}
    if owner is not None:
        overrides["PDCBB_DRAINED_OWNER"] = str(owner)
    with _env_lock:  # libpdc reads the environment in PDCinit only
        saved = {k: os.environ.get(k) for k in ("PDCBB_DRAINED_DIR", "PDCBB_DRAINED_OWNER")}
        try:
            os.environ.update(overrides)
            if owner is None:
                os.environ.pop("PDCBB_DRAINED_OWNER", None)
            return Session("pdc")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class Session:
    """One connection of this process to the burst buffer (PDCinit ... PDCclose).

    Make it with :func:`pdcbb.init` or :func:`pdcbb.open_drained`; use it in a ``with``
    statement or call :meth:`close` (an open session is closed at interpreter exit).
    """

    def __init__(self, name="pdc"):
        global _current
        lib = _lib.lib()
        self._id = check_id(lib.PDCinit(cname(name)))
        self._handles = weakref.WeakSet()
        self._cont_prop = 0
        _current = self

    # -- state
    @property
    def id(self):
        """The PDC id PDCinit returned."""
        return self._id

    @property
    def closed(self):
        return self._id == 0

    @property
    def discovery_method(self):
        """How libpdc found the daemons (PDCbb_discovery_method): "jobdir" (all on this
        node), "jobtable" (the job's table file), "daemon" (asked a daemon of this node) or
        "drained" (a drain, read-only)."""
        return _lib.text(_lib.lib().PDCbb_discovery_method())

    @property
    def read_only(self):
        """True for a drained job (open_drained, PDCBB_DRAINED_DIR)."""
        return self.discovery_method == "drained"

    @property
    def nservers(self):
        """The number of daemons of the job (1 for a drained job)."""
        return _lib.lib().PDCbb_nservers()

    def _live(self):
        if self._id == 0:
            raise errors.Error(errors.ERR_NOT_INIT, "the pdcbb session is closed")
        return _lib.lib()

    # -- containers and objects
    def create_container(self, name):
        """Create a container, or open it if the job already has one of that name (PDC's
        PDCcont_create).  Returns a :class:`Container`."""
        lib = self._live()
        if not self._cont_prop:
            self._cont_prop = check_id(lib.PDCprop_create(_PDC_CONT_CREATE, self._id))
        return Container(self, check_id(lib.PDCcont_create(cname(name), self._cont_prop)),
                         name)

    def open_container(self, name):
        """Open an existing container (NotFoundError if the job has none of that name)."""
        lib = self._live()
        return Container(self, check_id(lib.PDCcont_open(cname(name), self._id)), name)

    def open_object(self, name):
        """Open an existing object by name (object names are unique within a job).
        NotFoundError names the object if there is none.  Returns an :class:`Object`."""
        lib = self._live()
        return Object(self, check_id(lib.PDCobj_open(cname(name), self._id)))

    def close(self):
        """Close every handle of the session and disconnect (PDCclose).  Idempotent."""
        global _current
        if self._id == 0:
            return
        for h in list(self._handles):
            h._id = 0  # PDCclose closes them all
        lib = _lib.lib()
        ident, self._id = self._id, 0
        if _current is self:
            _current = None
        check(lib.PDCclose(ident))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        if self.closed:
            return "<pdcbb.Session closed>"
        return "<pdcbb.Session %s, %d daemon(s)%s>" % (
            self.discovery_method, self.nservers, ", read-only" if self.read_only else "")


@atexit.register
def _close_at_exit():
    s = _current
    if s is not None and not s.closed:
        with contextlib.suppress(Exception):
            s.close()


class _Handle:
    """What containers, objects and KV objects share: an id of a session, closed once."""

    _close_fn = None  # the name of the libpdc function that closes this kind of id

    def __init__(self, session, ident):
        self._session = session
        self._id = ident
        session._handles.add(self)

    @property
    def id(self):
        """This process's libpdc id of the handle (0 once closed)."""
        return self._id

    @property
    def closed(self):
        return self._id == 0

    @property
    def session(self):
        return self._session

    def _live(self):
        if self._id == 0:
            raise errors.Error(errors.ERR_BAD_ID, "%s is closed" % self._what())
        return _lib.lib()

    def _what(self):
        return "%s '%s'" % (type(self).__name__.lower(), self.name)

    def close(self):
        """Close the handle (the data stays).  Idempotent."""
        if self._id == 0:
            return
        ident, self._id = self._id, 0
        self._session._handles.discard(self)
        check(getattr(_lib.lib(), self._close_fn)(ident))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if self._id and not self._session.closed and not sys.is_finalizing():
            with contextlib.suppress(Exception):
                self.close()


# ----------------------------------------------------------------------------------------- tags

class Tags:
    """The key-value tags of a container or an object, as a mapping: ``tags[name]``,
    ``tags[name] = value``, ``del tags[name]``, ``name in tags``, ``tags.get(name)``.

    Values are converted as the table of :mod:`pdcbb.dtypes` says (str <-> PDC_STRING,
    bytes <-> PDC_CHAR, int -> PDC_INT64, float -> PDC_DOUBLE, NumPy scalars and arrays by
    their dtype).  A tag that does not exist raises :class:`NotFoundError` (a KeyError) with
    libpdc's message naming it.  Deleting a tag that does not exist succeeds, as in PDC.
    PDC has no call that lists the tags of an object, so neither has this mapping.
    """

    def __init__(self, owner, put, get, delete):
        self._owner, self._put, self._get, self._del = owner, put, get, delete

    def put(self, name, value, type=None):
        """Set tag name to value; type (a :class:`Type` or its name) stores the value as
        that PDC type instead of the one its Python type gives."""
        raw, t = dtypes.encode_tag(value, type)
        buf = ctypes.create_string_buffer(raw, len(raw))
        lib = self._owner._live()
        check(getattr(lib, self._put)(self._owner._id, cname(name, "tag name"), buf, int(t),
                                      len(raw)))

    def get_typed(self, name):
        """(value, Type) of tag name; NotFoundError if it does not exist."""
        lib = self._owner._live()
        val, t, size = c_void_p(), c_int(-1), c_ulonglong(0)
        check(getattr(lib, self._get)(self._owner._id, cname(name, "tag name"), byref(val),
                                      byref(t), byref(size)))
        if not val.value:
            # PDC's answer for a missing tag: SUCCEED, NULL, size 0; the cause is kept.
            raise _lib.last_error() if lib.PDCbb_last_error() else errors.NotFoundError(
                errors.ERR_NOT_FOUND, "no tag '%s' on %s" % (name, self._owner._what()))
        try:
            raw = ctypes.string_at(val.value, size.value)
        finally:
            _lib.free(val.value)
        return dtypes.decode_tag(raw, t.value), dtypes.to_type(t.value)

    def delete(self, name):
        """Delete tag name (no error if it does not exist, as in PDC)."""
        lib = self._owner._live()
        check(getattr(lib, self._del)(self._owner._id, cname(name, "tag name")))

    def __getitem__(self, name):
        return self.get_typed(name)[0]

    def __setitem__(self, name, value):
        self.put(name, value)

    def __delitem__(self, name):
        self.delete(name)

    def __contains__(self, name):
        try:
            self.get_typed(name)
        except errors.NotFoundError:
            return False
        return True

    def get(self, name, default=None):
        """The value of tag name, or default if it does not exist."""
        try:
            return self.get_typed(name)[0]
        except errors.NotFoundError:
            return default


class _NoDefault:
    def __repr__(self):
        return "<no default: raise NotFoundError>"


_MISSING = _NoDefault()


class _Tagged(_Handle):
    _tag_fns = None  # (put, get, del) libpdc function names

    @property
    def tags(self):
        """The handle's tags as a mapping (:class:`Tags`)."""
        return Tags(self, *self._tag_fns)

    def put_tag(self, name, value, type=None):
        """Set a tag (see :meth:`Tags.put`)."""
        self.tags.put(name, value, type)

    def get_tag(self, name, default=_MISSING):
        """The value of a tag; NotFoundError if it does not exist and no default is given."""
        if default is _MISSING:
            return self.tags[name]
        return self.tags.get(name, default)

    def del_tag(self, name):
        """Delete a tag (no error if it does not exist, as in PDC)."""
        self.tags.delete(name)


# ------------------------------------------------------------------------------------ containers

class Container(_Tagged):
    """A container of the job: a named group of objects and KV objects, with tags.

    Made by :meth:`Session.create_container` / :meth:`Session.open_container`.
    """

    _close_fn = "PDCcont_close"
    _tag_fns = ("PDCcont_put_tag", "PDCcont_get_tag", "PDCcont_del_tag")

    def __init__(self, session, ident, name):
        super().__init__(session, ident)
        self.name = name if isinstance(name, str) else _lib.text(name)
        self._cname = cname(name)

    @property
    def meta_id(self):
        """The job-wide id of the container (PDCcont_get_info)."""
        lib = self._live()
        info = lib.PDCcont_get_info(self._cname)
        if not info:
            raise _lib.last_error()
        return info.contents.meta_id

    def create_object(self, name, shape, dtype, placement=None):
        """Create an object in this container and return it open (:class:`Object`).

        name:      unique within the job (ExistsError otherwise).
        shape:     the dimensions (1 or more); the first may be None (or pdcbb.UNLIMITED):
                   a growing object whose rows are added by writes and :meth:`Object.extend`.
        dtype:     a NumPy dtype (or anything numpy.dtype() takes) or a :class:`Type`.
        placement: a :class:`Placement` or its name ("region_static"); None: the job's
                   default (``--pdc placement=``, else OBJ_STATIC).
        """
        lib = self._live()
        t = dtypes.type_of(dtype)
        shape = _shape_arg(shape, "create_object: shape")
        dims = [UNLIMITED if d is None else int(d) for d in shape]
        prop = check_id(lib.PDCprop_create(_PDC_OBJ_CREATE, self._session._id))
        try:
            check(lib.PDCprop_set_obj_type(prop, int(t)))
            check(lib.PDCprop_set_obj_dims(prop, len(dims), u64_array(dims)))
            if placement is not None:
                check(lib.PDCprop_set_obj_transfer_region_type(prop, int(_placement(placement))))
            ident = check_id(lib.PDCobj_create(self._id, cname(name), prop))
        finally:
            lib.PDCprop_close(prop)
        return Object(self._session, ident)

    def open_object(self, name):
        """Open an object by name (as :meth:`Session.open_object`: names are job-wide)."""
        return self._session.open_object(name)

    def create_kv(self, name, key_type=str, sharding=None, nshards=0, max_key_len=0,
                  max_value_len=0):
        """Create a KV object in this container (PDCkv_create) and return it open.

        key_type: str, int or float (PDC_KV_STRING, PDC_KV_INT, PDC_KV_FLOAT).
        sharding: None (the default: hash), "hash" or "range" (docs/KV.md, "Sharding").
        nshards:  0: every daemon of the job; else 1 to the number of daemons.
        max_key_len, max_value_len: 0 for the defaults (1024 bytes; no limit).
        """
        from .kv import KV
        return KV._create(self, name, key_type, sharding, nshards, max_key_len, max_value_len)

    def open_kv(self, name):
        """Open a KV object of this container (NotFoundError if it has none of that name)."""
        from .kv import KV
        return KV._open(self, name)

    def delete(self):
        """Delete the container from the burst buffer (PDCcont_del: it will not be drained)
        and close it."""
        lib = self._live()
        check(lib.PDCcont_del(self._id))
        self.close()

    def __repr__(self):
        return "<pdcbb.Container '%s'%s>" % (self.name, " closed" if self.closed else "")


# --------------------------------------------------------------------------------------- objects

def _shape_arg(shape, what):
    if isinstance(shape, (int, np.integer)) or shape is None:
        shape = (shape,)
    shape = tuple(None if d is None else int(d) for d in shape)
    if not shape:
        raise errors.invalid("%s: an object has at least one dimension" % what)
    return shape


class Object(_Tagged):
    """An N-dimensional array of one element type in the burst buffer, with tags.

    Made by :meth:`Container.create_object` or :meth:`Session.open_object`.  Read and write
    whole objects or boxes with :meth:`read` / :meth:`write`, or index it like a NumPy array
    (``obj[2:6, :]``, ``obj[::2] = 0``: steps use pdcbb's strided regions).  Elements never
    written read as zero.
    """

    _close_fn = "PDCobj_close"
    _tag_fns = ("PDCobj_put_tag", "PDCobj_get_tag", "PDCobj_del_tag")

    def __init__(self, session, ident):
        super().__init__(session, ident)
        self._load_info()

    def _load_info(self):
        lib = self._live()
        p = lib.PDCobj_get_info(self._id)
        if not p:
            raise _lib.last_error()
        info = p.contents
        prop = info.obj_pt.contents
        self.name = _lib.text(info.name)
        self.meta_id = info.meta_id
        self._dims = tuple(prop.dims[i] for i in range(prop.ndim))
        self.type = dtypes.to_type(prop.type)
        self.placement = Placement(prop.region_partition) \
            if prop.region_partition in Placement._value2member_map_ else prop.region_partition

    # -- what it is
    @property
    def dtype(self):
        """The NumPy dtype of the elements (see :mod:`pdcbb.dtypes`)."""
        return dtypes.dtype_of(self.type)

    @property
    def ndim(self):
        return len(self._dims)

    @property
    def maxshape(self):
        """The dimensions as created: None for an unlimited first dimension."""
        return tuple(None if d == UNLIMITED else d for d in self._dims)

    @property
    def shape(self):
        """The current dimensions: for an unlimited first dimension its current extent (the
        rows written or made room for, PDCbb_obj_get_extent)."""
        if UNLIMITED not in self._dims:
            return self._dims
        lib = self._live()
        out = (c_uint64 * self.ndim)()
        check(lib.PDCbb_obj_get_extent(self._id, out))
        return tuple(out)

    @property
    def size(self):
        """The number of elements of :attr:`shape`."""
        return int(np.prod(self.shape, dtype=np.uint64))

    def __len__(self):
        return self.shape[0]

    # -- data
    def write(self, data, offset=None):
        """Write an array into the object at offset (default: the origin).

        data (anything numpy.asarray() takes) is converted to the object's dtype: integers
        and bools into an integer object when every value fits, integers and floats into a
        float object, bools into a bool object; anything else (floats into an integer object)
        raises InvalidError.  An array with fewer dimensions than the object gets leading
        dimensions of 1 (a row).  bytes go into a PDC_CHAR, PDC_INT8 or PDC_UINT8 object as
        they are.  The box offset + shape
        must lie inside the object (BAD_REGION), except along an unlimited first dimension,
        whose extent the write raises.  Returns when the data is stored (durable in the
        burst buffer, visible to every process of the job).
        """
        lib = self._live()
        a = self._as_elements(data)
        if a.ndim > self.ndim:
            raise errors.invalid("Object.write: %d-dimensional data for the %d-dimensional "
                                 "object '%s'" % (a.ndim, self.ndim, self.name),
                                 errors.ERR_BAD_REGION)
        a = a.reshape((1,) * (self.ndim - a.ndim) + a.shape)
        off = self._offset_arg(offset, "write")
        if a.size:
            _transfer(lib, self._id, _PDC_WRITE, a, off, a.shape)

    def read(self, offset=None, shape=None):
        """Read a box of the object as a new NumPy array of the object's dtype.

        offset: the box's first element (default: the origin); shape: its extents (default:
        from offset to the end of :attr:`shape`).  Reading a drained job checks every
        extent it reads against its CRC-32C (CorruptError)."""
        lib = self._live()
        off = self._offset_arg(offset, "read")
        if shape is None:
            shape = tuple(max(n - o, 0) for n, o in zip(self.shape, off))
        shape = _shape_arg(shape, "Object.read: shape")
        if len(shape) != self.ndim or any(d is None or d < 0 for d in shape):
            raise errors.invalid("Object.read: shape %s for the %d-dimensional object '%s'"
                                 % (shape, self.ndim, self.name), errors.ERR_BAD_REGION)
        out = np.empty(shape, dtype=self.dtype)
        if out.size:
            _transfer(lib, self._id, _PDC_READ, out, off, shape)
        return out

    def __getitem__(self, key):
        off, count, step, squeeze = self._select(key)
        out = np.empty(count, dtype=self.dtype)
        if out.size:
            _transfer(self._live(), self._id, _PDC_READ, out, off, count, step)
        return out.reshape([c for d, c in enumerate(count) if d not in squeeze])

    def __setitem__(self, key, value):
        off, count, step, squeeze = self._select(key)
        kept = [c for d, c in enumerate(count) if d not in squeeze]
        a = np.broadcast_to(self._as_elements(value), kept).reshape(count)
        a = np.ascontiguousarray(a)
        if a.size:
            _transfer(self._live(), self._id, _PDC_WRITE, a, off, count, step)

    def _as_elements(self, data):
        """data as a C-contiguous array of the object's dtype, or InvalidError.

        Integers (and booleans) go into integer objects when every value fits; integers and
        floats into float objects; bools only into bool objects; bytes and one-byte integers
        into PDC_CHAR objects.  Anything else (floats into an integer object, ...) is refused
        rather than silently truncated."""
        dt = self.dtype
        if isinstance(data, (bytes, bytearray, memoryview)) and dt.kind in "iuS" and \
                dt.itemsize == 1:
            return np.frombuffer(bytes(data), dtype=dt)
        a = np.asarray(data)
        src = a.dtype.kind
        if a.dtype == dt:
            pass
        elif dt.kind == "S" and src in "iuS" and a.dtype.itemsize == 1:
            a = a.view(dt)
        elif dt.kind in "iu" and src in "biu":
            info = np.iinfo(dt)
            if a.size and src != "b" and (a.min() < info.min or a.max() > info.max):
                raise errors.invalid("values %d..%d do not fit object '%s' of type %s (%s)"
                                     % (a.min(), a.max(), self.name, self.type.pdc_name, dt))
        elif not (dt.kind == "f" and src in "biuf"):
            raise errors.invalid(
                "cannot write %s data into object '%s' of type %s (%s) without changing its "
                "kind; convert it first (array.astype)" % (a.dtype, self.name,
                                                           self.type.pdc_name, dt))
        return np.asarray(a, dtype=dt, order="C")  # (ascontiguousarray makes 0-d arrays 1-d)

    def _offset_arg(self, offset, what):
        if offset is None:
            return (0,) * self.ndim
        off = _shape_arg(offset, "Object.%s: offset" % what)
        if len(off) != self.ndim or any(o is None or o < 0 for o in off):
            raise errors.invalid("Object.%s: offset %s for the %d-dimensional object '%s'"
                                 % (what, offset, self.ndim, self.name), errors.ERR_BAD_REGION)
        return off

    def _select(self, key):
        """(offset, count, step, squeezed dims) of a NumPy-style index of the object."""
        key = key if isinstance(key, tuple) else (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if Ellipsis in [k for k in key if k is Ellipsis]:
            i = next(j for j, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1:]
        if len(key) > self.ndim:
            raise IndexError("too many indices for the %d-dimensional object '%s'"
                             % (self.ndim, self.name))
        key = key + (slice(None),) * (self.ndim - len(key))
        shape = self.shape
        off, count, step, squeeze = [], [], [], set()
        for d, k in enumerate(key):
            if isinstance(k, (int, np.integer)):
                i = int(k) + (shape[d] if k < 0 else 0)
                if not 0 <= i < shape[d]:
                    raise IndexError("index %d is out of bounds for dimension %d of object "
                                     "'%s' with size %d" % (int(k), d, self.name, shape[d]))
                off.append(i), count.append(1), step.append(1)
                squeeze.add(d)
            elif isinstance(k, slice):
                start, stop, st = k.indices(shape[d])
                if st < 1:
                    raise IndexError("object '%s': negative steps are not supported" % self.name)
                off.append(start), count.append(len(range(start, stop, st))), step.append(st)
            else:
                raise TypeError("object indices must be integers, slices or '...', not %s"
                                % type(k).__name__)
        return tuple(off), tuple(count), tuple(step), squeeze

    # -- changing the object
    def extend(self, rows):
        """Make room for rows rows in an object whose first dimension is unlimited
        (PDCbb_obj_extend); its extent never shrinks."""
        check(self._live().PDCbb_obj_extend(self._id, int(rows)))

    def resize(self, shape):
        """Change the object's dimensions (PDCobj_set_dims): data outside the new shape is
        no longer readable, new elements read as zero."""
        lib = self._live()
        dims = _shape_arg(shape, "Object.resize: shape")
        dims = [UNLIMITED if d is None else d for d in dims]
        check(lib.PDCobj_set_dims(self._id, len(dims), u64_array(dims)))
        self._load_info()

    def flush(self):
        """Ask the daemons to flush their cached data of the object (PDCobj_flush_start)."""
        check(self._live().PDCobj_flush_start(self._id))

    def delete(self):
        """Delete the object and its data from the burst buffer, and close it."""
        check(self._live().PDCobj_del(self._id))
        self.close()

    def __repr__(self):
        if self.closed:
            return "<pdcbb.Object '%s' closed>" % self.name
        return "<pdcbb.Object '%s' shape %s %s>" % (self.name, self.shape, self.type.pdc_name)


def _transfer(lib, obj, access, buf, offset, count, step=None):
    """One region transfer between buf (C-contiguous, count elements per dimension) and the
    object box at offset (every step-th element when step is given), waited for."""
    n = len(count)
    local = check_id(lib.PDCregion_create(n, u64_array([0] * n), u64_array(count)))
    remote = req = 0
    failure = None
    try:
        if step is not None and any(s != 1 for s in step):
            remote = check_id(lib.PDCbb_region_create_strided(
                n, u64_array(offset), u64_array(step), u64_array(count), None))
        else:
            remote = check_id(lib.PDCregion_create(n, u64_array(offset), u64_array(count)))
        req = check_id(lib.PDCregion_transfer_create(buf.ctypes.data, access, obj, local,
                                                     remote))
        check(lib.PDCregion_transfer_start(req))
        check(lib.PDCregion_transfer_wait(req))
    except errors.Error as e:
        failure = e  # the closes below reset libpdc's last error: keep this one
    finally:
        if req:
            lib.PDCregion_transfer_close(req)
        if remote:
            lib.PDCregion_close(remote)
        lib.PDCregion_close(local)
    if failure is not None:
        raise failure
