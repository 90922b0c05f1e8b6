"""How the process asks the kernel for the memory of large arrays while a corpus is loaded or audited.

numpy advises the kernel to back every array of 4 MB or more with transparent huge pages
(``madvise(MADV_HUGEPAGE)``). Where the kernel's THP ``defrag`` mode is ``madvise`` -- this project's machine, and
a common default -- a page fault in such an array may compact memory synchronously before it returns, and an audit
of 10^7 rows touches hundreds of fresh arrays of 10-80 MB. Measured on the 10^7-row benchmark corpus, 2026-12-07,
nothing else running, 5 alternating runs each in fresh processes: the whole audit (load included) took a median
**82.4 s with numpy's advice and 64.6 s without** (72.2-89.1 against 59.3-81.0 s), the load alone 7.3-8.8 against
3.1-5.7 s; at 10^6 rows the two were equal within the noise (medians 6.2 and 6.6 s of 4 runs each,
spreads 5.9-7.7 and 5.7-7.0 s; docs/performance.md). So :func:`small_pages` turns the
advice off while speedaudit loads or audits, and restores it after: a library must not change numpy for the rest
of its caller's process. A user who set numpy's own switch, ``NUMPY_MADVISE_HUGEPAGE``, keeps that choice.

The same blocks keep freed memory in the process (glibc only). glibc serves every allocation above its mmap threshold
(at most 32 MB) with a fresh ``mmap`` and unmaps it on ``free``; an array of 10^7 rows (80 MB) is above it, so every
temporary array of a 10^7-row audit was new memory that the kernel zero-filled page by page on first touch: 11.8
million page faults in one whole audit, against 0.8 million with glibc told (``mallopt``) to serve large blocks from
its heap (``M_MMAP_MAX`` 0) and not to return freed heap to the kernel (``M_TRIM_THRESHOLD`` 2 GiB) while the block
runs. Measured on the 10^7-row benchmark corpus (2026-12-07, the same session, one fresh process each): the whole
audit in 73.5 s with glibc's defaults, 54.1 s so, peak RSS 2774 and 2800 MB (the heap reuses what was freed instead of
growing). On leaving the last block the two settings go back to glibc's defaults (65,536 mappings; 128 KiB) and
``malloc_trim(0)`` returns the freed memory to the kernel. Setting them switches off glibc's dynamic mmap threshold for
the rest of the process: large allocations are then mapped from 128 KiB on, as glibc's documented static default (a
speed matter only, never a result). A user who set any glibc malloc tunable (``MALLOC_*_`` or ``GLIBC_TUNABLES``)
keeps that choice: nothing is changed.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading

import numpy as np

__all__ = ["small_pages", "return_freed_memory"]


def _setter():
    """numpy's switch of the advice (it returns the previous setting), or None where this numpy has none.
    It is private (``_set_madvise_hugepage``); numpy >= 2 keeps it in ``numpy._core``, 1.26 in ``numpy.core``."""
    for module in ("_core", "core"):
        multiarray = getattr(getattr(np, module, None), "multiarray", None)
        if multiarray is not None and hasattr(multiarray, "_set_madvise_hugepage"):
            return multiarray._set_madvise_hugepage
    return None


#: glibc's mallopt parameters (malloc.h) and their defaults, restored when the last block ends.
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4
_DEFAULT_TRIM_THRESHOLD, _DEFAULT_MMAP_MAX = 128 * 1024, 65536
#: While a block runs: no mmap for large blocks, and freed heap kept up to 2 GiB (mallopt takes a C int).
_KEPT_TRIM_THRESHOLD = 2**31 - 1


def _glibc():
    """The process's own C library where it is glibc (mallopt's parameters are glibc's), else None; None too where
    the user set any glibc malloc tunable, whose choice wins."""
    if any(k.startswith("MALLOC_") and k.endswith("_") for k in os.environ) \
            or "malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return None
    return _glibc_library()


def return_freed_memory() -> None:
    """Hand the heap's free memory back to the kernel now (glibc's ``malloc_trim(0)``; nothing elsewhere)."""
    libc = _glibc_library()
    if libc is not None:
        libc.malloc_trim(0)


def _glibc_library():
    """The process's C library where it is glibc, else None (whatever the user's tunables)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover - a Linux process always has its C library
        return None
    return libc if all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")) else None


def _keep_freed_memory(libc, keep: bool) -> None:
    """Serve large blocks from the heap and keep what is freed (``keep``), or glibc's defaults and return it."""
    if keep:
        libc.mallopt(_M_MMAP_MAX, 0)
        libc.mallopt(_M_TRIM_THRESHOLD, _KEPT_TRIM_THRESHOLD)
    else:
        libc.mallopt(_M_MMAP_MAX, _DEFAULT_MMAP_MAX)
        libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_TRIM_THRESHOLD)
        libc.malloc_trim(0)


#: Blocks inside :func:`small_pages` now, in any thread, and the setting the first of them found (restored by the
#: last to leave). A count, not each block's own "previous": with two threads, A entering (advice on), B entering
#: (off, as A left it), A leaving (on) and B leaving (off, what B found) would leave the advice off for the rest of
#: the process -- a CI run of 2026-12-07 found it off in a later test of the same process.
_LOCK = threading.Lock()
_OPEN = {"blocks": 0, "found": None, "setter": None, "libc": None}


@contextlib.contextmanager
def small_pages(*, keep_freed: bool = True):
    """Run the block without numpy's huge-page advice for new arrays and with freed memory kept in the process
    (glibc; unless ``keep_freed`` is False), then restore the previous setting and glibc's defaults (see the module
    docstring). The first of overlapping blocks decides both.

    Only speed changes, never a result. Blocks may nest and overlap across threads (a Dask worker's, the report's
    render slots): the advice is off from the first block's start to the last block's end, then restored to what
    the first one found.

    Examples
    --------
    >>> with small_pages():
    ...     x = np.zeros(10**6)
    """
    with _LOCK:
        if _OPEN["blocks"] == 0:  # the first block decides; the last one to leave undoes what it did
            setter = None if "NUMPY_MADVISE_HUGEPAGE" in os.environ else _setter()
            _OPEN.update(setter=setter, libc=_glibc() if keep_freed else None)
            _OPEN["found"] = setter(False) if setter is not None else None
            if _OPEN["libc"] is not None:
                _keep_freed_memory(_OPEN["libc"], True)
        _OPEN["blocks"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _OPEN["blocks"] -= 1
            if _OPEN["blocks"] == 0:
                if _OPEN["setter"] is not None:
                    _OPEN["setter"](_OPEN["found"])
                if _OPEN["libc"] is not None:
                    _keep_freed_memory(_OPEN["libc"], False)
