"""KV objects (pdc_kv.h, docs/KV.md): versioned key-value records in a container.

A record is (key, tag, value): the tag is a 64-bit version.  ``kv[key] = value`` sets the
unversioned record (tag NULLTAG, updated in place); :meth:`KV.put` sets a version.  A get at
tag T returns the newest visible version with a tag <= T; LATEST (PDC_KV_MAXTAG) means the
newest.  Keys are str, int or float, one type per KV object, ordered as their type.  Values
are bytes (str values are stored as UTF-8, NumPy arrays as their raw elements).
"""

import contextlib
import ctypes
from ctypes import byref, c_uint64, c_void_p

import numpy as np

from . import _lib, errors
from ._lib import Kv, KvInfo, KvKey, check, check_id, cname
from .core import _Handle

NULLTAG = 0                      # PDC_KV_NULLTAG: the unversioned record
MAXTAG = 0x0FFFFFFFFFFFFFFF      # PDC_KV_MAXTAG: in gets and listings, "the latest"
LATEST = MAXTAG

_KEY_TYPES = {str: 0, int: 1, float: 2}
_KEY_TYPE_NAMES = {0: str, 1: int, 2: float}
_SHARDING = {None: 0, "default": 0, "hash": 1, "range": 2}
_SHARDING_NAMES = {0: "default", 1: "hash", 2: "range"}
_PAGE = 4096                     # records per listing call
_FIRST_GET = 65536               # the buffer of a first get; larger values take a second call


def _value_bytes(value):
    """A record value as bytes: bytes-like as is, str as UTF-8, NumPy data as raw elements."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, (np.ndarray, np.generic)):
        return np.ascontiguousarray(value).tobytes()
    raise errors.invalid("a KV value must be bytes, str or NumPy data, not %s"
                         % type(value).__name__)


class KV(_Handle):
    """A KV object: made by :meth:`Container.create_kv` / :meth:`Container.open_kv`.

    Mapping view of the latest state: ``kv[key]`` (bytes; NotFoundError, a KeyError, when no
    version is visible), ``kv[key] = value`` (the NULLTAG record), ``del kv[key]`` (every
    version of the key), ``key in kv``, ``len(kv)``, ``iter(kv)`` (keys in order).  Versions:
    :meth:`put`, :meth:`get`, :meth:`get_version`, :meth:`records`, :meth:`unlink`,
    :meth:`transaction`.
    """

    _close_fn = "PDCkv_close"

    def __init__(self, container, ident, name):
        super().__init__(container.session, ident)
        self.name = name if isinstance(name, str) else _lib.text(name)
        self.container = container
        info = self.info
        self.key_type = info["key_type"]

    @classmethod
    def _create(cls, container, name, key_type, sharding, nshards, max_key_len, max_value_len):
        if key_type not in _KEY_TYPES:
            raise errors.invalid("create_kv: key_type must be str, int or float, not %r"
                                 % (key_type,))
        if sharding not in _SHARDING:
            raise errors.invalid("create_kv: sharding must be None, 'hash' or 'range', not %r"
                                 % (sharding,))
        lib = container._live()
        info = KvInfo(_KEY_TYPES[key_type], _SHARDING[sharding], nshards, max_key_len,
                      max_value_len)
        return cls(container, check_id(lib.PDCkv_create(container.id, cname(name), byref(info))),
                   name)

    @classmethod
    def _open(cls, container, name):
        lib = container._live()
        return cls(container, check_id(lib.PDCkv_open(container.id, cname(name))), name)

    def _what(self):
        return "KV object '%s'" % self.name

    @property
    def info(self):
        """The layout decided at creation: key_type, sharding, nshards, max_key_len,
        max_value_len (PDCkv_get_info)."""
        info = KvInfo()
        check(self._live().PDCkv_get_info(self._id, byref(info)))
        return {"key_type": _KEY_TYPE_NAMES.get(info.key_type, info.key_type),
                "sharding": _SHARDING_NAMES.get(info.sharding, info.sharding),
                "nshards": info.nshards, "max_key_len": info.max_key_len,
                "max_value_len": info.max_value_len}

    # -- keys
    def _key(self, key, keep):
        """A pdc_kv_key_t for key; keep holds the bytes a string key points to."""
        kt = self.key_type
        if kt is str:
            if not isinstance(key, (str, bytes)):
                raise errors.invalid("KV object '%s' has str keys, not %s"
                                     % (self.name, type(key).__name__))
            b = cname(key, "key")
            keep.append(b)
            return KvKey(0, b, 0, 0.0)
        if kt is int:
            if not isinstance(key, (int, np.integer)) or isinstance(key, bool):
                raise errors.invalid("KV object '%s' has int keys, not %s"
                                     % (self.name, type(key).__name__))
            return KvKey(1, None, int(key), 0.0)
        if not isinstance(key, (int, float, np.integer, np.floating)) or isinstance(key, bool):
            raise errors.invalid("KV object '%s' has float keys, not %s"
                                 % (self.name, type(key).__name__))
        return KvKey(2, None, 0, float(key))

    def _key_value(self, k):
        """The Python key of a pdc_kv_key_t from a listing."""
        if k.type == 0:
            return _lib.text(k.str) if self.key_type is str else k.str
        return k.i if k.type == 1 else k.f

    # -- writing
    def put(self, key, value, tag=NULLTAG):
        """Set the record (key, tag) to value (PDCkv_set).  tag: NULLTAG (0, updated in
        place) up to MAXTAG - 1; an open transaction's tag keeps it invisible until commit."""
        keep = []
        k = self._key(key, keep)
        v = _value_bytes(value)
        buf = ctypes.create_string_buffer(v, len(v)) if v else None
        check(self._live().PDCkv_set(self._id, tag, byref(k), buf, len(v), None))

    def put_many(self, items, tag=NULLTAG):
        """Set many records with one tag in one call (PDCkv_set_list, batched per shard):
        items is a mapping or an iterable of (key, value) pairs.  Nothing is stored if one
        of them is refused before sending."""
        pairs = list(items.items() if hasattr(items, "items") else items)
        if not pairs:
            return
        keep = []
        recs = (Kv * len(pairs))()
        for i, (key, value) in enumerate(pairs):
            v = _value_bytes(value)
            buf = ctypes.create_string_buffer(v, max(len(v), 1))
            keep.append(buf)
            recs[i].key = self._key(key, keep)
            recs[i].value = ctypes.cast(buf, c_void_p)
            recs[i].value_len = len(v)
        check(self._live().PDCkv_set_list(self._id, tag, len(pairs), recs, None))

    def unlink(self, keys, tag=MAXTAG):
        """Unlink keys (one key or a list) at tag: 0 < tag < MAXTAG writes a deletion marker
        (gets at tag or later find nothing, earlier tags still see the old versions);
        NULLTAG deletes the NULLTAG versions; MAXTAG (the default) deletes every version.
        Keys without such a version are not an error."""
        if isinstance(keys, (str, bytes, int, float, np.generic)):
            keys = [keys]
        keys = list(keys)
        if not keys:
            return
        keep = []
        arr = (KvKey * len(keys))(*[self._key(k, keep) for k in keys])
        check(self._live().PDCkv_unlink_keys(self._id, tag, len(keys), arr, None))

    # -- reading
    def get_version(self, key, tag=LATEST):
        """(value, found_tag): the newest version of key visible at tag (PDCkv_get_value).
        NotFoundError names the key when there is none."""
        lib = self._live()
        keep = []
        k = self._key(key, keep)
        cap = _FIRST_GET
        while True:
            buf = ctypes.create_string_buffer(cap)
            length, found = c_uint64(cap), c_uint64(0)
            rc = lib.PDCkv_get_value(self._id, tag, byref(k), buf, byref(length), byref(found),
                                     None)
            if rc == 0:
                return buf.raw[:length.value], found.value
            if lib.PDCbb_last_error() == errors.ERR_TOO_BIG and length.value > cap:
                cap = length.value  # a larger value: read it again with room for it
                continue
            raise _lib.last_error()

    def get(self, key, tag=LATEST, default=None):
        """The value (bytes) of key visible at tag, or default when there is none."""
        try:
            return self.get_version(key, tag)[0]
        except errors.NotFoundError:
            return default

    def count(self, tag=LATEST):
        """The number of keys with a visible, not deleted version at tag (PDCkv_get_num)."""
        n = c_uint64(0)
        check(self._live().PDCkv_get_num(self._id, tag, byref(n), None))
        return n.value

    def records(self, tag=LATEST, values=True, offset=0, count=None):
        """The records visible at tag in key order, from offset (0-based), at most count:
        a list of (key, found_tag, value) tuples, or of (key, found_tag) with values=False
        (PDCkv_get_list / PDCkv_list_key, in pages)."""
        lib = self._live()
        fn = lib.PDCkv_get_list if values else lib.PDCkv_list_key
        out = []
        while count is None or len(out) < count:
            want = _PAGE if count is None else min(_PAGE, count - len(out))
            recs, n = ctypes.POINTER(Kv)(), c_uint64(0)
            check(fn(self._id, tag, offset, want, byref(recs), byref(n), None))
            try:
                for i in range(n.value):
                    r = recs[i]
                    key = self._key_value(r.key)
                    if values:
                        v = ctypes.string_at(r.value, r.value_len) if r.value_len else b""
                        out.append((key, r.tag, v))
                    else:
                        out.append((key, r.tag))
            finally:
                lib.PDCkv_list_free(recs)
            offset += n.value
            if n.value < want:
                break
        return out

    def keys(self, tag=LATEST):
        """The keys visible at tag, in key order."""
        return [r[0] for r in self.records(tag, values=False)]

    def items(self, tag=LATEST):
        """(key, value) of every key visible at tag, in key order."""
        return [(k, v) for k, _, v in self.records(tag)]

    # -- transactions
    def start(self, tag):
        """Open transaction tag on every shard (PDCkv_trans_start): records put with tag stay
        invisible to every reader until :meth:`commit`."""
        check(self._live().PDCkv_trans_start(self._id, tag))

    def commit(self, tag):
        """Make transaction tag's records visible together (PDCkv_trans_commit)."""
        check(self._live().PDCkv_trans_commit(self._id, tag))

    def abort(self, tag):
        """Remove every record written with transaction tag (PDCkv_trans_abort)."""
        check(self._live().PDCkv_trans_abort(self._id, tag))

    @contextlib.contextmanager
    def transaction(self, tag):
        """``with kv.transaction(T):`` starts T, commits it when the block ends, aborts it
        when the block raises."""
        self.start(tag)
        try:
            yield self
        except BaseException:
            with contextlib.suppress(errors.Error):
                self.abort(tag)
            raise
        self.commit(tag)

    def migrate(self, tag):
        """Drain the records with a tag below tag to the job's drain destination now
        (PDCkv_migrate; docs/KV.md)."""
        check(self._live().PDCkv_migrate(self._id, tag))

    def delete(self):
        """Delete the KV object, every record on every shard, and close it."""
        lib = self._live()
        ident, self._id = self._id, 0
        self._session._handles.discard(self)
        check(lib.PDCkv_delete(ident))

    # -- mapping of the latest state
    def __getitem__(self, key):
        return self.get_version(key)[0]

    def __setitem__(self, key, value):
        self.put(key, value)

    def __delitem__(self, key):
        self.unlink(key, MAXTAG)

    def __contains__(self, key):
        return self.get(key, default=None) is not None

    def __len__(self):
        return self.count()

    def __iter__(self):
        return iter(self.keys())

    def __repr__(self):
        return "<pdcbb.KV '%s' (%s keys)%s>" % (
            self.name, getattr(self.key_type, "__name__", "?"), " closed" if self.closed else "")

