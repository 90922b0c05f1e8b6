"""The first cell of every report page: display settings, the page's results, the corpus header; and what a
kernel is put back to between two pages.

Every template in ``notebooks/`` opened with the same dozen lines (warning filter, pandas display
options, reading the results, showing the corpus description, the verdict profile and the run table);
they live here once, so a template holds only what is particular to its page. A template still stands
alone for papermill: it calls :func:`open_page` with its own parameter values.

The pages of one report render one after the other in one kernel per render slot (:mod:`audits.report.render`):
:func:`fresh_kernel` notes what a kernel holds before its first page, :func:`next_page` puts it back between two
pages (docs/reports.md, "How pages are rendered").
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from audits.report import narrative
from audits.report.results import page_results

__all__ = ["fresh_kernel", "next_page", "open_page"]


def open_page(results_path, corpora, namespace: Mapping[str, object], *, header: bool = True,
              profile: str | None = None):
    """Set the page's display options, read its results and show the corpus header.

    Parameters
    ----------
    results_path : str or None
        The results file ``speedaudit report`` wrote (None: the page computes its results).
    corpora : list of str
        The page's corpus files (read only for a result that is not stored).
    namespace : mapping
        The page's ``globals()``: its parameter values (see :func:`audits.report.results.page_results`).
    header : bool, keyword-only
        Show the corpus description and run table (the overview page lays out its own).
    profile : str or None, keyword-only
        The verdict profile, described under the corpus description when given.

    Returns
    -------
    audits.report.results.ReportResults

    Examples
    --------
    In a template's first code cell::

        results = open_page(results_path, corpora, globals(), profile=profile)
    """
    # deferred: IPython (notebook pages): open_page runs in a page's kernel; importing this module needs neither
    from IPython.display import display

    warnings.filterwarnings("ignore", category=FutureWarning)
    pd.set_option("display.precision", 4)
    pd.set_option("display.max_colwidth", None)
    results = page_results(results_path, corpora, namespace)  # reads the corpus only for a result not stored
    if header:
        display(narrative.Markdown(results.corpus_summary.description))
        if profile is not None:
            display(narrative.Markdown(narrative.describe_profile(profile)))
        display(results.corpus_summary.overview)
    return results


#: What the kernel held before its first page (:func:`fresh_kernel`), put back by :func:`next_page`.
_FRESH: dict = {}


def fresh_kernel() -> None:
    """Note the state :func:`next_page` puts back: run once in a new kernel, before its first page.

    The renderer starts each kernel with ``--IPKernelApp.exec_lines`` calling this (so this module and what it
    imports, pandas and numpy, are loaded before the first page, as they are for every later page).
    """
    _FRESH.update(warnings=list(warnings.filters), path=list(sys.path), environ=dict(os.environ), cwd=os.getcwd(),
                  printoptions=np.get_printoptions(), errstate=np.geterr())


def next_page() -> None:
    """Put the kernel back as :func:`fresh_kernel` found it, but for the modules the pages imported (the point of
    reusing it): the next page's output is then the same as in a kernel of its own.

    Reset: the user namespace, the output cache and the execution count (IPython's ``reset``, as ``%reset -f``,
    with a new history session so the next page's cells count from 1); the warning filters (as
    :func:`open_page` sets them) and which warnings were already shown (so a warning a page triggers is shown on
    every page, not only the first); the working directory, ``sys.path`` and the environment variables; numpy's
    print options and floating-point error handling; every pandas option (:func:`open_page` sets two) to its
    default; matplotlib's open figures (closed) and its rcParams (to those of its matplotlibrc, as when it was
    imported; the backend the plot modules select at import stays). Not reset: the global random generators
    of ``random`` and ``numpy.random`` (a fresh kernel seeds them at random; the pages pass seeds), and state a
    page leaves inside a module it imported.
    """
    # deferred: IPython (notebook pages): only in a page's kernel, between two pages
    from IPython import get_ipython

    get_ipython().reset(new_session=True)
    warnings.resetwarnings()  # also invalidates the modules' registries of warnings already shown
    warnings.filters[:] = _FRESH["warnings"]
    warnings.onceregistry.clear()
    os.chdir(_FRESH["cwd"])
    sys.path[:] = _FRESH["path"]
    for key in set(os.environ) - set(_FRESH["environ"]):
        del os.environ[key]
    os.environ.update({k: v for k, v in _FRESH["environ"].items() if os.environ.get(k) != v})
    np.set_printoptions(**_FRESH["printoptions"])
    np.seterr(**_FRESH["errstate"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns on resetting its deprecated options (to their defaults)
        pd.reset_option("all")
    pyplot, matplotlib = sys.modules.get("matplotlib.pyplot"), sys.modules.get("matplotlib")
    if pyplot is not None:
        pyplot.close("all")
    if matplotlib is not None:
        matplotlib.rc_file_defaults()  # keeps the backend (matplotlib leaves it out of this reset)
