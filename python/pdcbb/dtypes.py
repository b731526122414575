"""PDC element types (pdc_var_type_t) and how they map to NumPy dtypes and Python tag values.

Objects: every PDC type but PDC_STRING has a NumPy dtype (table below); an object created from
a NumPy dtype gets the PDC type in the right-hand column.

=============  =====  ================  ==========================================
PDC type       value  read as (NumPy)   created from (NumPy dtype)
=============  =====  ================  ==========================================
PDC_INT        0      int32             int32 (C int)
PDC_FLOAT      1      float32           float32
PDC_DOUBLE     2      float64           float64
PDC_CHAR       3      S1 (one byte)     S1
PDC_STRING     4      -                 - (tags only)
PDC_BOOLEAN    5      bool              bool
PDC_SHORT      6      int16             - (int16 gives PDC_INT16)
PDC_UINT       7      uint32            uint32
PDC_INT64      8      int64             int64
PDC_UINT64     9      uint64            uint64
PDC_INT16      10     int16             int16
PDC_INT8       11     int8              int8
PDC_UINT8      12     uint8             uint8
PDC_UINT16     13     uint16            uint16
PDC_INT32      14     int32             - (int32 gives PDC_INT)
PDC_UINT32     15     uint32            - (uint32 gives PDC_UINT)
PDC_LONG       16     int64             -
PDC_VOID_PTR   17     uint64            -
PDC_SIZE_T     18     uint64            -
=============  =====  ================  ==========================================

A :class:`Type` member may be given wherever a dtype is, to get exactly that PDC type
(``dtype=pdcbb.Type.INT32``).

Tag values (put_tag / tags[...] = value, then get_tag / tags[...]):

=========================  =============================  ================================
Python value put           stored as                      read back as
=========================  =============================  ================================
str                        PDC_STRING, UTF-8 + NUL        str
bytes, bytearray           PDC_CHAR, the bytes            bytes
bool                       PDC_BOOLEAN, 1 byte            numpy.bool_
int                        PDC_INT64 (PDC_UINT64 above    numpy.int64 (numpy.uint64)
                           2**63 - 1)
float                      PDC_DOUBLE                     numpy.float64 (a float)
NumPy scalar               its dtype's type, one element  a NumPy scalar of that dtype
NumPy array, list, tuple   its dtype's type, every        a 1-D NumPy array (a NumPy
                           element (C order)              scalar when it has one element)
=========================  =============================  ================================

Tags that C programs put are read the same way, by their PDC type: PDC_STRING as str,
PDC_CHAR and PDC_VOID_PTR as bytes, the numeric types as NumPy scalars or 1-D arrays.
"""

import enum
import sys

import numpy as np

from . import errors


class Type(enum.IntEnum):
    """PDC's element types, pdc_var_type_t of pdc.h, with their values."""
    UNKNOWN = -1
    INT = 0
    FLOAT = 1
    DOUBLE = 2
    CHAR = 3
    STRING = 4
    BOOLEAN = 5
    SHORT = 6
    UINT = 7
    INT64 = 8
    UINT64 = 9
    INT16 = 10
    INT8 = 11
    UINT8 = 12
    UINT16 = 13
    INT32 = 14
    UINT32 = 15
    LONG = 16
    VOID_PTR = 17
    SIZE_T = 18

    @property
    def pdc_name(self):
        """The enumerator's name in pdc.h ("PDC_INT")."""
        return "PDC_" + self.name

    def __str__(self):
        return self.pdc_name


_DTYPE_OF = {
    Type.INT: np.dtype(np.intc),
    Type.FLOAT: np.dtype(np.float32),
    Type.DOUBLE: np.dtype(np.float64),
    Type.CHAR: np.dtype("S1"),
    Type.BOOLEAN: np.dtype(np.bool_),
    Type.SHORT: np.dtype(np.short),
    Type.UINT: np.dtype(np.uintc),
    Type.INT64: np.dtype(np.int64),
    Type.UINT64: np.dtype(np.uint64),
    Type.INT16: np.dtype(np.int16),
    Type.INT8: np.dtype(np.int8),
    Type.UINT8: np.dtype(np.uint8),
    Type.UINT16: np.dtype(np.uint16),
    Type.INT32: np.dtype(np.int32),
    Type.UINT32: np.dtype(np.uint32),
    Type.LONG: np.dtype(np.int_),
    Type.VOID_PTR: np.dtype(np.uintp),
    Type.SIZE_T: np.dtype(np.uintp),
}

# NumPy (kind, itemsize) -> the PDC type an object or tag of that dtype gets.
_TYPE_OF = {
    ("b", 1): Type.BOOLEAN,
    ("i", 1): Type.INT8, ("u", 1): Type.UINT8,
    ("i", 2): Type.INT16, ("u", 2): Type.UINT16,
    ("i", 4): Type.INT, ("u", 4): Type.UINT,
    ("i", 8): Type.INT64, ("u", 8): Type.UINT64,
    ("f", 4): Type.FLOAT, ("f", 8): Type.DOUBLE,
    ("S", 1): Type.CHAR,
}


def to_type(t):
    """A Type from a Type, its value, or its name ("INT", "PDC_INT", case-insensitive)."""
    if isinstance(t, Type):
        return t
    if isinstance(t, str):
        key = t.upper()
        key = key[4:] if key.startswith("PDC_") else key
        if key in Type.__members__:
            return Type[key]
        raise errors.invalid("unknown PDC type %r" % t)
    try:
        return Type(int(t))
    except (ValueError, TypeError):
        raise errors.invalid("unknown PDC type %r" % (t,)) from None


def dtype_of(t):
    """The NumPy dtype of PDC type t; InvalidError for PDC_STRING and unknown types."""
    t = to_type(t)
    if t not in _DTYPE_OF:
        raise errors.invalid("%s has no NumPy dtype (its elements are %s)" % (
            t.pdc_name, "C string pointers" if t == Type.STRING else "not a type"))
    return _DTYPE_OF[t]


def type_of(dtype):
    """The PDC type of an element type given as a Type or anything numpy.dtype() takes."""
    if isinstance(dtype, Type):
        dtype_of(dtype)  # refuses PDC_STRING
        return dtype
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise errors.invalid("not a NumPy dtype or pdcbb.Type: %r" % (dtype,)) from None
    t = _TYPE_OF.get((d.kind, d.itemsize))
    if t is None:
        raise errors.invalid("NumPy dtype %s has no PDC type (PDC has booleans, 8- to "
                             "64-bit integers, float32, float64 and S1)" % d)
    return t


# ---------------------------------------------------------------------------------- tag values

def encode_tag(value, pdc_type=None):
    """(bytes, Type) to store for a tag value (see the table in this module's doc)."""
    if pdc_type is not None:
        t = to_type(pdc_type)
        if t == Type.STRING:
            return _encode_str(value)
        if t in (Type.CHAR, Type.VOID_PTR) and isinstance(value, (bytes, bytearray, memoryview)):
            return _nonempty(bytes(value)), t
        a = np.ascontiguousarray(value, dtype=dtype_of(t))
        return _nonempty(a.tobytes()), t
    if isinstance(value, (str, np.str_)):
        return _encode_str(value)
    if isinstance(value, (bytes, bytearray, memoryview, np.bytes_)):
        return _nonempty(bytes(value)), Type.CHAR
    if isinstance(value, bool):
        return b"\x01" if value else b"\x00", Type.BOOLEAN
    if isinstance(value, int):
        if -2**63 <= value < 2**63:
            return int(value).to_bytes(8, sys.byteorder, signed=True), Type.INT64
        if 0 <= value < 2**64:
            return int(value).to_bytes(8, sys.byteorder), Type.UINT64
        raise errors.invalid("tag value %d does not fit in 64 bits" % value)
    if isinstance(value, float):
        return np.float64(value).tobytes(), Type.DOUBLE
    a = np.asarray(value)
    if a.dtype.kind in "OUV" or a.ndim == 0 and a.dtype.kind == "S":
        raise errors.invalid("a tag value must be str, bytes, a number or an array of "
                             "numbers, not %s" % type_name(value))
    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    return _nonempty(a.tobytes()), type_of(a.dtype)


def _encode_str(value):
    return str(value).encode("utf-8", "surrogatepass") + b"\0", Type.STRING


def _nonempty(b):
    # A value of 0 bytes reads back as PDC's "no such tag" (value NULL, size 0).
    if not b:
        raise errors.invalid("a tag value of 0 bytes cannot be stored: PDC reads it back as "
                             "a tag that does not exist")
    return b


def decode_tag(raw, t):
    """The Python value of tag bytes raw of PDC type t (an int from libpdc)."""
    try:
        t = Type(t)
    except ValueError:
        return raw
    if t == Type.STRING:
        end = raw.find(b"\0")
        return (raw if end < 0 else raw[:end]).decode("utf-8", "surrogateescape")
    if t in (Type.CHAR, Type.VOID_PTR) or t not in _DTYPE_OF:
        return raw
    d = _DTYPE_OF[t]
    if len(raw) == 0 or len(raw) % d.itemsize:
        return raw  # not a whole number of elements: give the bytes as they are
    a = np.frombuffer(raw, dtype=d)
    return a[0] if a.size == 1 else a.copy()


def type_name(value):
    return type(value).__name__
