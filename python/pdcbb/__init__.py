"""pdcbb: the job's burst buffer from Python, through libpdc's PDC API, with NumPy arrays.

Inside a job (``pdcbb run --nodes 2 -- /usr/bin/python3 prog.py``, or a Slurm job with
``--pdc``)::

    import numpy as np
    import pdcbb

    with pdcbb.init() as pdc:                              # PDCinit: the job's daemons
        with pdc.create_container("run1") as cont:         # PDCcont_create
            obj = cont.create_object("temperature", shape=(8, 10), dtype=np.float64)
            obj.write(np.ones((4, 10)), offset=(2, 0))      # a region transfer
            print(obj.read()[2:6].sum())                    # the whole object: 40.0
            obj.tags["units"] = "kelvin"                    # PDCobj_put_tag (PDC_STRING)
            kv = cont.create_kv("index")                    # a KV object (pdc_kv.h)
            kv.put("step", b"42", tag=7)

After the job, the same reads from its drain, read-only (every extent's CRC-32C checked)::

    with pdcbb.open_drained("/scratch/me/pdcbb.1234") as pdc:
        t = pdc.open_object("temperature").read()

The pieces:

- :func:`init`, :func:`open_drained` -> :class:`Session` (PDCinit ... PDCclose)
- :class:`Container`: objects, KV objects and tags of a container
- :class:`Object`: ``read``, ``write``, NumPy-style indexing, ``tags``, shape and dtype
- :class:`KV`: versioned key-value records (``kv[key]``, ``put``/``get`` by tag, listings,
  transactions)
- :class:`Type`, :class:`Placement`: PDC's element types and data placements;
  :mod:`pdcbb.dtypes` has the NumPy dtype and tag value tables
- :class:`Error` and its subclasses: every failure, with libpdc's code, name and message

Finding libpdc: ``PDCBB_LIBPDC`` (a path), else the path recorded by the build or by
``cmake --install`` (``pdcbb/_config.py``), else ``libpdc.so.0`` on the loader's path;
:func:`libpdc_path` tells which.  docs/PYTHON.md is the full guide.
"""

from . import dtypes, errors
from ._lib import UNLIMITED, libpdc_path
from .core import Container, Object, Placement, Session, Tags, init, open_drained
from .dtypes import Type
from .errors import (CorruptError, Error, ExistsError, InvalidError, NoSpaceError,
                     NotFoundError, ReadOnlyError, UnreachableError, UnsupportedError)
from .kv import KV, LATEST, MAXTAG, NULLTAG

# pdcbb's error codes: ERR_NOT_FOUND, ERR_READ_ONLY, ... (errors.CODES lists them all).
globals().update({k: v for k, v in vars(errors).items() if k.startswith("ERR_")})

try:
    from ._config import VERSION as __version__
except ImportError:
    __version__ = "unknown (source tree)"

__all__ = [
    "init", "open_drained", "libpdc_path",
    "Session", "Container", "Object", "Tags", "KV",
    "Type", "Placement", "UNLIMITED", "NULLTAG", "MAXTAG", "LATEST",
    "Error", "NotFoundError", "ExistsError", "InvalidError", "ReadOnlyError", "CorruptError",
    "NoSpaceError", "UnreachableError", "UnsupportedError",
    "dtypes", "errors",
] + sorted(k for k in vars(errors) if k.startswith("ERR_"))
