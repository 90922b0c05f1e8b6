"""An ICC of constant ratings is undefined (NaN, so the audits say n/a), whatever the constant.

Found (helper session, 2026-12-07): ``grouped_icc`` promises NaN ICCs for constant ratings (MSR = MSE = 0), but its
row and column means of a constant are the constant only up to rounding, so the mean squares were dust of order
1e-33 and their ratio an arbitrary number: 12 equal ratings of log(0.1) s gave ICC(1,1) 0.10, ICC(A,1) 0.18 and
ICC(3,1) 0.25 (the reliability audit then failed ``icc`` on a deterministic clock), while log(0.09) gave NaN
(n/a): the verdict depended on the unit of time and the value of the constant.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize
from stats.reliability import grouped_icc

VALUES = [0.1, 0.09, 0.3, 1e-5, 10.0, 7.7, 123.456]


@pytest.mark.parametrize("value", VALUES)
def test_constant_ratings_have_no_icc(value):
    table = pd.DataFrame({"s": np.repeat(np.arange(4), 3), "r": np.tile(np.arange(3), 4), "y": np.log(value)})
    out = grouped_icc(table, targets="s", raters="r", ratings="y")
    assert out[["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]].isna().all(axis=None)


def test_a_varying_table_still_equals_pingouin():
    """The shift that makes constant groups exact leaves every ICC equal to pingouin's (ICCs are shift-invariant)."""
    rng = np.random.default_rng(4)
    table = pd.DataFrame({"s": np.repeat(np.arange(6), 3), "r": np.tile(np.arange(3), 6),
                          "y": np.log(1e4 + np.repeat(rng.uniform(0, 50, 6), 3) + rng.normal(0, 2, 18))})
    ours = grouped_icc(table, targets="s", raters="r", ratings="y").iloc[0]
    theirs = pg.intraclass_corr(table, targets="s", raters="r", ratings="y").set_index("Type")["ICC"]
    names = {"ICC1": "ICC(1,1)", "ICC2": "ICC(A,1)", "ICC3": "ICC(C,1)", "ICC1k": "ICC(1,k)", "ICC2k": "ICC(A,k)",
             "ICC3k": "ICC(C,k)"}
    assert 0.5 < theirs["ICC(A,1)"] < 1  # a table with real between-target variance
    for ours_name, their_name in names.items():
        assert ours[ours_name] == pytest.approx(theirs[their_name], rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("value", [0.1, 0.09, 1e-5, 10.0])
def test_a_deterministic_clock_is_not_judged_on_its_icc(value):
    corpus = synthesize(n_problems=4, n_tests=2, n_repeats=3, seed=3).corpus
    timed = (corpus["role"].astype(str) == "reference").to_numpy()
    corpus.loc[timed, "duration_s"] = value  # every reference execution the same duration: no ranking signal
    audit = run_reliability_audit(corpus, n_boot=20)
    icc = [f for f in audit.findings if f.metric == "icc"]
    assert icc and all(f.level == "n/a" for f in icc), [(f.level, f.value) for f in icc]
