"""pdcbb's errors as Python exceptions.

Every failed libpdc call raises an :class:`Error` (or one of its subclasses below) that carries
the calling thread's last error as libpdc keeps it: the numeric code
(``PDCbb_last_error()``), its symbolic name (``PDCbb_last_error_name()``) and the message
(``PDCbb_last_error_message()``), which names the call, the names and ids involved and the
daemon's cause.  The codes are pdcbb's error codes (docs/USER-GUIDE.md, "Error codes"); their
values never change.

Arguments this module refuses before it calls libpdc (a region outside an object, data that
cannot be converted to the object's type, ...) raise :class:`InvalidError` with code
``PDCBB_ERR_INVAL`` (or ``PDCBB_ERR_BAD_REGION``), named the same way.
"""

# The codes of common/pdcbb_error.h, in order: (value, name, meaning).  Append only.
CODES = (
    (0, "PDCBB_OK", "success"),
    (1, "PDCBB_ERR_INTERNAL", "internal error"),
    (2, "PDCBB_ERR_NOMEM", "out of memory"),
    (3, "PDCBB_ERR_INVAL", "invalid argument"),
    (4, "PDCBB_ERR_NOT_FOUND", "not found"),
    (5, "PDCBB_ERR_EXISTS", "already exists"),
    (6, "PDCBB_ERR_BAD_ID", "bad or stale id"),
    (7, "PDCBB_ERR_WRONG_TYPE", "id refers to an object of the wrong kind"),
    (8, "PDCBB_ERR_NOSPC", "no space left in the burst buffer"),
    (9, "PDCBB_ERR_IO", "I/O error"),
    (10, "PDCBB_ERR_PROTO", "malformed message"),
    (11, "PDCBB_ERR_VERSION", "unsupported protocol version"),
    (12, "PDCBB_ERR_BAD_OP", "unknown operation"),
    (13, "PDCBB_ERR_TRUNCATED", "message truncated"),
    (14, "PDCBB_ERR_TOO_BIG", "message or value too large"),
    (15, "PDCBB_ERR_AUTH", "authentication failed: the job's token was not proved"),
    (16, "PDCBB_ERR_TRANSPORT", "transport error"),
    (17, "PDCBB_ERR_TIMEOUT", "timed out"),
    (18, "PDCBB_ERR_UNREACHABLE", "burst-buffer daemon unreachable"),
    (19, "PDCBB_ERR_NOT_INIT", "PDC not initialised (call PDCinit first)"),
    (20, "PDCBB_ERR_CONFIG", "configuration error"),
    (21, "PDCBB_ERR_DISCOVERY", "cannot find the job's burst-buffer daemons"),
    (22, "PDCBB_ERR_BAD_REGION", "bad region"),
    (23, "PDCBB_ERR_NOT_EMPTY", "container is not empty"),
    (24, "PDCBB_ERR_PERM", "permission denied"),
    (25, "PDCBB_ERR_SHUTDOWN", "daemon is shutting down"),
    (26, "PDCBB_ERR_STORE", "metadata store error"),
    (27, "PDCBB_ERR_UNSUPPORTED", "operation not supported"),
    (28, "PDCBB_ERR_BUSY", "resource busy"),
    (29, "PDCBB_ERR_READ_ONLY", "read-only: a drained job's data cannot be changed"),
    (30, "PDCBB_ERR_BAD_NAME", "name is not valid UTF-8 or holds a control character"),
    (31, "PDCBB_ERR_CORRUPT", "data is damaged: its checksum does not match, or it is cut short"),
    (32, "PDCBB_ERR_META_FULL", "metadata store full (site key lmdb_map_size); deletes still work"),
    (33, "PDCBB_ERR_DISK_FULL", "disk full: its filesystem has no space left (ENOSPC)"),
)

_NAME_OF = {value: name for value, name, _ in CODES}
_CODE_OF = {name: value for value, name, _ in CODES}

# The codes as module constants: ERR_NOT_FOUND = 4, ... (re-exported by the package).
globals().update({name[len("PDCBB_"):]: value for value, name, _ in CODES if value})


def code_name(code):
    """The symbolic name of a pdcbb error code ("PDCBB_ERR_NOT_FOUND"), or "PDCBB_ERR_<n>"."""
    return _NAME_OF.get(code, "PDCBB_ERR_%d" % code)


class Error(Exception):
    """A failed pdcbb call.

    Attributes:
        code:    pdcbb's error code (an int, e.g. 4 = ``pdcbb.ERR_NOT_FOUND``).
        name:    its symbolic name ("PDCBB_ERR_NOT_FOUND").
        message: libpdc's message for the call, e.g.
                 "PDCobj_open: object 'o1' not found".

    ``str(error)`` is "NAME: message".  Catch a subclass for one kind of failure, or check
    ``error.code`` against the ``pdcbb.ERR_*`` constants.
    """

    def __init__(self, code, message):
        self.code = int(code)
        self.name = code_name(self.code)
        self.message = message
        super().__init__(code, message)

    def __str__(self):
        return "%s: %s" % (self.name, self.message)

    def __repr__(self):
        return "%s(%s, %r)" % (type(self).__name__, self.name, self.message)


class NotFoundError(Error, KeyError):
    """PDCBB_ERR_NOT_FOUND: no such container, object, KV object, tag or key.

    Also a KeyError, so ``obj.tags[...]`` and ``kv[...]`` behave as Python mappings do.
    """


class ExistsError(Error):
    """PDCBB_ERR_EXISTS: the job already has an object (or KV object) of that name."""


class InvalidError(Error, ValueError):
    """A bad argument: PDCBB_ERR_INVAL, PDCBB_ERR_BAD_REGION, PDCBB_ERR_BAD_NAME,
    PDCBB_ERR_TOO_BIG or PDCBB_ERR_WRONG_TYPE.  Also a ValueError."""


class ReadOnlyError(Error):
    """PDCBB_ERR_READ_ONLY: a drained job is opened read-only; nothing in it can change."""


class CorruptError(Error):
    """PDCBB_ERR_CORRUPT: stored or drained data failed its CRC-32C check, or is cut short.
    The message names the object, the extent and its bytes."""


class NoSpaceError(Error):
    """PDCBB_ERR_NOSPC, PDCBB_ERR_META_FULL or PDCBB_ERR_DISK_FULL: the burst buffer is full."""


class UnreachableError(Error):
    """A daemon of the job did not answer: PDCBB_ERR_UNREACHABLE, PDCBB_ERR_TIMEOUT,
    PDCBB_ERR_TRANSPORT or PDCBB_ERR_SHUTDOWN."""


class UnsupportedError(Error):
    """PDCBB_ERR_UNSUPPORTED: not available here (for example daemon statistics of a drain)."""


_CLASS_OF = {}
for _cls, _names in (
    (NotFoundError, ("PDCBB_ERR_NOT_FOUND",)),
    (ExistsError, ("PDCBB_ERR_EXISTS",)),
    (InvalidError, ("PDCBB_ERR_INVAL", "PDCBB_ERR_BAD_REGION", "PDCBB_ERR_BAD_NAME",
                    "PDCBB_ERR_TOO_BIG", "PDCBB_ERR_WRONG_TYPE")),
    (ReadOnlyError, ("PDCBB_ERR_READ_ONLY",)),
    (CorruptError, ("PDCBB_ERR_CORRUPT",)),
    (NoSpaceError, ("PDCBB_ERR_NOSPC", "PDCBB_ERR_META_FULL", "PDCBB_ERR_DISK_FULL")),
    (UnreachableError, ("PDCBB_ERR_UNREACHABLE", "PDCBB_ERR_TIMEOUT", "PDCBB_ERR_TRANSPORT",
                        "PDCBB_ERR_SHUTDOWN")),
    (UnsupportedError, ("PDCBB_ERR_UNSUPPORTED",)),
):
    for _name in _names:
        _CLASS_OF[_CODE_OF[_name]] = _cls


def make_error(code, message):
    """The exception for a pdcbb error code: the subclass that covers it, else Error."""
    return _CLASS_OF.get(int(code), Error)(code, message)


def invalid(message, code=_CODE_OF["PDCBB_ERR_INVAL"]):
    """An InvalidError raised by this module itself (before calling libpdc)."""
    return make_error(code, message)
