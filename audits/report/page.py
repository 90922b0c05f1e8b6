"""The first cell of every report page: display settings, the page's results, the corpus header.

Every template in ``notebooks/`` opened with the same dozen lines (warning filter, pandas display
options, reading the results, showing the corpus description, the verdict profile and the run table);
they live here once, so a template holds only what is particular to its page. A template still stands
alone for papermill: it calls :func:`open_page` with its own parameter values.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import pandas as pd

from audits.report import narrative
from audits.report.results import page_results

__all__ = ["open_page"]


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
