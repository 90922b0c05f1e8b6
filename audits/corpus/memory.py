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
"""

from __future__ import annotations

import contextlib
import os
import threading

import numpy as np

__all__ = ["small_pages"]


def _setter():
    """numpy's switch of the advice (it returns the previous setting), or None where this numpy has none.
    It is private (``_set_madvise_hugepage``); numpy >= 2 keeps it in ``numpy._core``, 1.26 in ``numpy.core``."""
    for module in ("_core", "core"):
        multiarray = getattr(getattr(np, module, None), "multiarray", None)
        if multiarray is not None and hasattr(multiarray, "_set_madvise_hugepage"):
            return multiarray._set_madvise_hugepage
    return None


#: Blocks inside :func:`small_pages` now, in any thread, and the setting the first of them found (restored by the
#: last to leave). A count, not each block's own "previous": with two threads, A entering (advice on), B entering
#: (off, as A left it), A leaving (on) and B leaving (off, what B found) would leave the advice off for the rest of
#: the process -- a CI run of 2026-12-07 found it off in a later test of the same process.
_LOCK = threading.Lock()
_OPEN = {"blocks": 0, "found": None}


@contextlib.contextmanager
def small_pages():
    """Run the block without numpy's huge-page advice for new arrays, then restore the previous setting.

    Only speed changes, never a result. Blocks may nest and overlap across threads (a Dask worker's, the report's
    render slots): the advice is off from the first block's start to the last block's end, then restored to what
    the first one found.

    Examples
    --------
    >>> with small_pages():
    ...     x = np.zeros(10**6)
    """
    setter = _setter()
    if setter is None or "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        yield
        return
    with _LOCK:
        if _OPEN["blocks"] == 0:
            _OPEN["found"] = setter(False)
        _OPEN["blocks"] += 1
    try:
        yield
    finally:
        with _LOCK:
            _OPEN["blocks"] -= 1
            if _OPEN["blocks"] == 0:
                setter(_OPEN["found"])
