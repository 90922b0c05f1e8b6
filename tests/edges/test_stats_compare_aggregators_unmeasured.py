"""A direct call of ``stats.aggregation.compare_aggregators`` leaves out the problems a run cannot measure, as the
aggregation audit does (one rule: :mod:`stats.coverage`).

Found (session 21, not changed then): the audit passed ``leave_out`` to the per-problem values, the public function
did not, so a user calling it on a corpus with timed-out problems got each such problem's references at 100 in every
repeat: a stability and a range of 0 added to every aggregator's means, and one more problem in ``n_problems``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.corpus.synthetic import synthesize
from stats.aggregation import compare_aggregators
from tests.edges.test_audits_aggregation_unmeasured import COPIED, with_timed_out_copies

N_BOOT = 30


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5).corpus


def runs_of(corpus: pd.DataFrame) -> pd.DataFrame:
    return corpus.loc[(corpus["role"].astype(str) != "floor").to_numpy()]


@pytest.fixture(scope="module")
def base(corpus):
    return compare_aggregators(runs_of(corpus), n_boot=N_BOOT)


@pytest.mark.parametrize("everything", [False, True], ids=["references-timed-out", "everything-timed-out"])
def test_direct_call_leaves_unmeasured_problems_out(corpus, base, everything):
    planted = runs_of(with_timed_out_copies(corpus, COPIED, everything=everything))
    found = compare_aggregators(planted, n_boot=N_BOOT)
    assert found.n_problems == base.n_problems == 8
    pd.testing.assert_frame_equal(found.table, base.table)
    assert sorted(found.per_problem["problem"].astype(str).unique()) == sorted(base.per_problem["problem"].astype(str).unique())


def test_leave_out_empty_keeps_every_problem(corpus, base):
    """``leave_out=()`` is the old behaviour: the copies count, each with a stability of 0 (all at 100)."""
    planted = runs_of(with_timed_out_copies(corpus, COPIED))
    kept = compare_aggregators(planted, n_boot=N_BOOT, leave_out=())
    assert kept.n_problems == 11
    copies = kept.per_problem.loc[kept.per_problem["problem"].astype(str).str.contains("timed out")]
    defined = copies["stability"].dropna()  # some aggregators leave a problem undefined; the rest read 0
    assert len(defined) >= 3 * 2 and np.allclose(defined, 0.0)  # at least mean_pct and floor_pct of each copy
    row = kept.table.set_index("aggregator").loc["mean_pct"]
    assert row["stability"] < base.table.set_index("aggregator").loc["mean_pct", "stability"]
