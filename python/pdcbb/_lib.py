"""Finding and loading libpdc, and the C declarations this package calls (ctypes).

Where libpdc comes from, first match wins:

1. ``PDCBB_LIBPDC``: the path of a libpdc.so given in the environment;
2. ``pdcbb._config.LIBPDC``: written by the build (``<build>/python/pdcbb/_config.py``,
   pointing into the build tree) and by ``cmake --install`` (pointing to the installed
   library);
3. ``libpdc.so.0`` through the dynamic loader's search (``LD_LIBRARY_PATH``, ld.so.cache).

The library is loaded at the first call that needs it (``import pdcbb`` and ``help(pdcbb)``
work without it); :func:`libpdc_path` tells which file was used.

Threads: ctypes releases the GIL around every call; libpdc serialises its calls and keeps the
last error per thread, which :func:`last_error` reads right after the failed call, on the
same thread.
"""

import ctypes
import os
import threading
from ctypes import (POINTER, Structure, c_char_p, c_double, c_int, c_int64, c_size_t,
                    c_uint32, c_uint64, c_ulonglong, c_void_p)

from . import errors

try:
    from . import _config
except ImportError:  # the source tree (python/pdcbb), used with PDCBB_LIBPDC
    _config = None

pdcid_t = c_uint64
perr_t = c_int
u64p = POINTER(c_uint64)

UNLIMITED = 2**64 - 1  # PDC_SIZE_UNLIMITED


class ObjProp(Structure):
    """struct pdc_obj_prop (pdc.h)."""
    _fields_ = [("obj_prop_id", pdcid_t), ("ndim", c_size_t), ("dims", u64p),
                ("type", c_int), ("region_partition", c_int), ("consistency", c_int)]


class ObjInfo(Structure):
    """struct pdc_obj_info (pdc.h)."""
    _fields_ = [("name", c_char_p), ("meta_id", pdcid_t), ("local_id", pdcid_t),
                ("server_id", c_int), ("metadata_server_id", c_uint32),
                ("obj_pt", POINTER(ObjProp))]


class ContInfo(Structure):
    """struct pdc_cont_info (pdc.h)."""
    _fields_ = [("name", c_char_p), ("local_id", pdcid_t), ("meta_id", c_uint64)]


class KvKey(Structure):
    """pdc_kv_key_t (pdc_kv.h)."""
    _fields_ = [("type", c_int), ("str", c_char_p), ("i", c_int64), ("f", c_double)]


class Kv(Structure):
    """pdc_kv_t (pdc_kv.h): one record."""
    _fields_ = [("key", KvKey), ("tag", c_uint64), ("value", c_void_p), ("value_len", c_uint64)]


class KvInfo(Structure):
    """pdc_kv_info_t (pdc_kv.h)."""
    _fields_ = [("key_type", c_int), ("sharding", c_int), ("nshards", c_uint32),
                ("max_key_len", c_uint32), ("max_value_len", c_uint64)]


# name: (restype, argtypes)
_PROTOTYPES = {
    "PDCinit": (pdcid_t, [c_char_p]),
    "PDCclose": (perr_t, [pdcid_t]),
    "PDCbb_last_error": (c_int, []),
    "PDCbb_last_error_name": (c_char_p, []),
    "PDCbb_last_error_message": (c_char_p, []),
    "PDCbb_discovery_method": (c_char_p, []),
    "PDCbb_nservers": (c_int, []),
    "PDCprop_create": (pdcid_t, [c_int, pdcid_t]),
    "PDCprop_close": (perr_t, [pdcid_t]),
    "PDCprop_set_obj_dims": (perr_t, [pdcid_t, c_int, u64p]),
    "PDCprop_set_obj_type": (perr_t, [pdcid_t, c_int]),
    "PDCprop_set_obj_transfer_region_type": (perr_t, [pdcid_t, c_int]),
    "PDCcont_create": (pdcid_t, [c_char_p, pdcid_t]),
    "PDCcont_open": (pdcid_t, [c_char_p, pdcid_t]),
    "PDCcont_close": (perr_t, [pdcid_t]),
    "PDCcont_del": (perr_t, [pdcid_t]),
    "PDCcont_get_info": (POINTER(ContInfo), [c_char_p]),
    "PDCcont_get_objids": (perr_t, [pdcid_t, POINTER(c_int), POINTER(u64p)]),
    "PDCcont_put_tag": (perr_t, [pdcid_t, c_char_p, c_void_p, c_int, c_ulonglong]),
    "PDCcont_get_tag": (perr_t, [pdcid_t, c_char_p, POINTER(c_void_p), POINTER(c_int),
                                 POINTER(c_ulonglong)]),
    "PDCcont_del_tag": (perr_t, [pdcid_t, c_char_p]),
    "PDCobj_create": (pdcid_t, [pdcid_t, c_char_p, pdcid_t]),
    "PDCobj_open": (pdcid_t, [c_char_p, pdcid_t]),
    "PDCobj_close": (perr_t, [pdcid_t]),
    "PDCobj_del": (perr_t, [pdcid_t]),
    "PDCobj_get_info": (POINTER(ObjInfo), [pdcid_t]),
    "PDCobj_set_dims": (perr_t, [pdcid_t, c_int, u64p]),
    "PDCobj_flush_start": (perr_t, [pdcid_t]),
    "PDCobj_put_tag": (perr_t, [pdcid_t, c_char_p, c_void_p, c_int, c_ulonglong]),
    "PDCobj_get_tag": (perr_t, [pdcid_t, c_char_p, POINTER(c_void_p), POINTER(c_int),
                                POINTER(c_ulonglong)]),
    "PDCobj_del_tag": (perr_t, [pdcid_t, c_char_p]),
    "PDCbb_obj_get_extent": (perr_t, [pdcid_t, u64p]),
    "PDCbb_obj_extend": (perr_t, [pdcid_t, c_uint64]),
    "PDCregion_create": (pdcid_t, [c_ulonglong, u64p, u64p]),
    "PDCbb_region_create_strided": (pdcid_t, [c_ulonglong, u64p, u64p, u64p, u64p]),
    "PDCregion_close": (perr_t, [pdcid_t]),
    "PDCregion_transfer_create": (pdcid_t, [c_void_p, c_int, pdcid_t, pdcid_t, pdcid_t]),
    "PDCregion_transfer_start": (perr_t, [pdcid_t]),
    "PDCregion_transfer_wait": (perr_t, [pdcid_t]),
    "PDCregion_transfer_close": (perr_t, [pdcid_t]),
    "PDCkv_create": (pdcid_t, [pdcid_t, c_char_p, POINTER(KvInfo)]),
    "PDCkv_open": (pdcid_t, [pdcid_t, c_char_p]),
    "PDCkv_close": (perr_t, [pdcid_t]),
    "PDCkv_delete": (perr_t, [pdcid_t]),
    "PDCkv_get_info": (perr_t, [pdcid_t, POINTER(KvInfo)]),
    "PDCkv_set": (perr_t, [pdcid_t, c_uint64, POINTER(KvKey), c_void_p, c_uint64, c_void_p]),
    "PDCkv_set_list": (perr_t, [pdcid_t, c_uint64, c_uint64, POINTER(Kv), c_void_p]),
    "PDCkv_get_value": (perr_t, [pdcid_t, c_uint64, POINTER(KvKey), c_void_p, u64p, u64p,
                                 c_void_p]),
    "PDCkv_get_num": (perr_t, [pdcid_t, c_uint64, u64p, c_void_p]),
    "PDCkv_get_list": (perr_t, [pdcid_t, c_uint64, c_uint64, c_uint64, POINTER(POINTER(Kv)),
                                u64p, c_void_p]),
    "PDCkv_list_key": (perr_t, [pdcid_t, c_uint64, c_uint64, c_uint64, POINTER(POINTER(Kv)),
                                u64p, c_void_p]),
    "PDCkv_list_free": (None, [POINTER(Kv)]),
    "PDCkv_unlink_keys": (perr_t, [pdcid_t, c_uint64, c_uint64, POINTER(KvKey), c_void_p]),
    "PDCkv_trans_start": (perr_t, [pdcid_t, c_uint64]),
    "PDCkv_trans_commit": (perr_t, [pdcid_t, c_uint64]),
    "PDCkv_trans_abort": (perr_t, [pdcid_t, c_uint64]),
    "PDCkv_migrate": (perr_t, [pdcid_t, c_uint64]),
}

_lock = threading.Lock()
_lib = None
_path = None
_libc = None


def _candidates():
    """Where to look for libpdc, in order: (path, where it came from)."""
    env = os.environ.get("PDCBB_LIBPDC")
    if env:
        yield env, "PDCBB_LIBPDC"
    if _config is not None and getattr(_config, "LIBPDC", None):
        yield _config.LIBPDC, "pdcbb/_config.py"
    yield "libpdc.so.0", "the dynamic loader's search path"


def lib():
    """The loaded libpdc (a ctypes.CDLL with its prototypes set), loaded on first use.

    Raises OSError naming every place that was tried when it cannot be loaded.
    """
    global _lib, _path, _libc
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path, origin in _candidates():
            try:
                handle = ctypes.CDLL(path)
            except OSError as e:
                tried.append("%s (%s): %s" % (path, origin, e))
                if origin == "PDCBB_LIBPDC":
                    break  # an explicit choice that fails is an error, not a hint
                continue
            for name, (restype, argtypes) in _PROTOTYPES.items():
                fn = getattr(handle, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _libc = ctypes.CDLL(None)
            _libc.free.argtypes = [c_void_p]
            _libc.free.restype = None
            _path = path
            _lib = handle
            return _lib
        raise OSError("pdcbb: cannot load libpdc; tried " + "; ".join(tried) +
                      ". Set PDCBB_LIBPDC to the path of libpdc.so.0 (docs/PYTHON.md)")


def libpdc_path():
    """The path libpdc was loaded from (loading it now if needed)."""
    lib()
    return _path


def free(ptr):
    """free() memory that libpdc allocated for the caller (tag values, id lists)."""
    if ptr:
        _libc.free(ptr)


def text(b):
    """A C string from libpdc as str (bytes that are not UTF-8 shown as \\xNN)."""
    return b.decode("utf-8", "backslashreplace") if b is not None else ""


def cname(name, what="name"):
    """A name to pass to libpdc: str (encoded as UTF-8) or bytes (passed as they are)."""
    if isinstance(name, bytes):
        return name
    if isinstance(name, str):
        # Lone surrogates become bytes that are not UTF-8: libpdc refuses them with
        # PDCBB_ERR_BAD_NAME, naming the byte, as it does for a C program.
        return name.encode("utf-8", "surrogatepass")
    raise errors.invalid("%s must be str or bytes, not %s" % (what, type(name).__name__))


def last_error():
    """The calling thread's last libpdc error as an exception (not raised)."""
    lp = lib()
    code = lp.PDCbb_last_error()
    message = text(lp.PDCbb_last_error_message())
    if code == 0:  # never expected after a failure; say so rather than claim success
        return errors.Error(1, message or "libpdc call failed without an error code")
    return errors.make_error(code, message)


def check(rc):
    """Raise the last error if a perr_t call failed (FAIL, -1)."""
    if rc != 0:
        raise last_error()


def check_id(ident):
    """Raise the last error if a call returning an id returned 0; else return the id."""
    if not ident:
        raise last_error()
    return ident


def u64_array(values):
    """A C array of uint64_t holding values."""
    values = [int(v) for v in values]
    return (c_uint64 * max(len(values), 1))(*values)
