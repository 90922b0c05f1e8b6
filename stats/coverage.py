"""What a run cannot measure: the problems whose timings no ranking can use, and why (issue 24 item 9).

A problem of a run is **not measured** when the run's rows (floor rows left
out) give it

* no optimization test: no row with ``test_kind == "optimization"`` (nothing
  to rank its programs on);
* no correct reference: no row of a ``reference`` whose ``correct`` is true
  (no pool to score against);
* no timing of a correct reference: every execution of every correct
  reference ended other than ``ok`` (for a campaign cut at ``timeout_s`` below
  the problem's own time limit: every run timed out).

The rule reads the rows only, so it is the same for a corpus collected here,
an imported one and every partition of a dataset (a partition holds whole
problems, so partitions' lists concatenate). ``suite`` and ``collect`` warn
about the same causes before anything runs
(:meth:`audits.collect.suite.Suite.warnings`); the audits report them as an
``n/a`` finding with the reason (:func:`audits.protocol.findings.unmeasured_finding`).

Examples
--------
>>> import pandas as pd
>>> rows = pd.DataFrame({"problem": ["a", "a", "b", "b"], "test": ["t", "t", "t", "t"],
...                      "solution": ["r1", "r2", "r1", "r2"], "role": "reference",
...                      "correct": [True, False, False, False], "test_kind": "optimization",
...                      "status": ["ok", "ok", "ok", "ok"]})
>>> unmeasured_problems(rows)
(('b', 'no correct reference'),)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from stats._groups import first_rows, group_codes, label_mask

__all__ = ["unmeasured_by_run"]

#: The causes, in the order they are checked (a problem is named with its first cause only).
NO_OPTIMIZATION = "no optimization test"
NO_REFERENCE = "no correct reference"
NO_TIMING = "every execution of its correct references ended other than ok (timed out: is --timeout below its time limit?)"


def _column_is(rows: pd.DataFrame, column: str, value: str, *, absent: bool) -> np.ndarray:
    if column not in rows.columns:
        return np.full(len(rows), absent, dtype=bool)
    return label_mask(rows[column], value)


def unmeasured_by_run(rows: pd.DataFrame, run_code: np.ndarray, n_runs: int) -> list[tuple[tuple[str, str], ...]]:
    """Per run code (``0 .. n_runs - 1``), its not-measured problems as ``(problem, cause)``, sorted by problem.

    ``rows`` are the runs' rows without floor rows, ``run_code`` their run of each row. Columns the schema
    defaults (``role``, ``test_kind``) count as their default when absent; without ``correct`` every
    solution counts as correct.
    """
    if "problem" not in rows.columns or len(rows) == 0:
        return [() for _ in range(n_runs)]
    prob, n_prob = group_codes(rows, ["problem"])
    unit = run_code.astype(np.int64) * n_prob + prob
    size = n_runs * n_prob
    present = np.bincount(unit, minlength=size) > 0
    optimization = _column_is(rows, "test_kind", "optimization", absent=True)
    reference = _column_is(rows, "role", "reference", absent=True)
    if "correct" in rows.columns:
        reference &= rows["correct"].to_numpy(dtype=bool)
    timed = reference & _column_is(rows, "status", "ok", absent=True)
    has_opt = np.bincount(unit[optimization], minlength=size) > 0
    has_ref = np.bincount(unit[reference & optimization], minlength=size) > 0
    has_timing = np.bincount(unit[timed & optimization], minlength=size) > 0
    first = first_rows(prob, n_prob)
    names = rows["problem"].iloc[first].astype(str).to_numpy()  # one name per problem code
    # One cause per (run, problem) unit, vectorised; only the flagged units are visited in Python.
    cause = np.select([~has_opt, ~has_ref, ~has_timing], [1, 2, 3], default=0)
    causes = (None, NO_OPTIMIZATION, NO_REFERENCE, NO_TIMING)
    out: list[list[tuple[str, str]]] = [[] for _ in range(n_runs)]
    for u in np.flatnonzero(present & (cause > 0)):
        out[u // n_prob].append((str(names[u % n_prob]), causes[cause[u]]))
    return [tuple(sorted(found)) for found in out]


def unmeasured_problems(rows: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """The not-measured problems of one run's rows (floor rows left out) as ``(problem, cause)``."""
    return unmeasured_by_run(rows, np.zeros(len(rows), dtype=np.int64), 1)[0]

