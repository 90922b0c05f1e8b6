"""A problem whose quartile repeat (or whose other repeats) timed none of its correct references has no dynamic
range (NaN), not 0.

The dynamic range takes the quartiles of a problem's references from one repeat (the run's smallest) and their
scores from the others. Found on a corpus where every reference execution of one problem timed out in repeat 0
only (a transient: the other repeats are timed): all references scored the failure penalty there, tied, so
the "fastest" and "slowest" quartiles were the same tie-averaged set and the problem added a range of exactly 0
to most aggregators' means (and to their bootstrap), as if the aggregators could not separate its references.
Every reference execution of the other repeats timed out gave the same 0 (every later score the penalty). It is
the run-level rule of audits.corpus.coverage (no ok timing of a correct reference: not measured) applied to the
repeats the range reads.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize

PROBLEM = "p0001"


@pytest.fixture(scope="module", params=["quartile repeat timed out", "other repeats timed out"])
def corpora(request):
    corpus = synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5).corpus
    repeats = (corpus["repeat"] == 0) if request.param.startswith("quartile") else (corpus["repeat"] > 0)
    hit = ((corpus["problem"].astype(str) == PROBLEM) & repeats
           & (corpus["role"].astype(str) == "reference")).to_numpy()
    planted = corpus.copy()
    planted["status"] = pd.Categorical(planted["status"].astype(str).where(~hit, "timeout"),
                                       categories=corpus["status"].cat.categories)
    planted.loc[hit, "duration_s"] = planted.loc[hit, "timeout_s"]
    return corpus, planted


def test_the_problem_has_no_range_and_the_others_keep_theirs(corpora):
    corpus, planted = corpora
    base = run_aggregation_audit(corpus, n_boot=40).comparison()
    comp = run_aggregation_audit(planted, n_boot=40).comparison()
    assert comp.n_problems == 8  # the problem is measured: its other repeats are timed
    mine = comp.per_problem.loc[comp.per_problem["problem"] == PROBLEM]
    assert mine["dynamic_range"].isna().all() and np.isfinite(mine["stability"]).all()
    others = base.per_problem.loc[base.per_problem["problem"] != PROBLEM]
    want = others.groupby("aggregator", sort=False)["dynamic_range"].mean()
    got = comp.table.set_index("aggregator")["dynamic_range"]
    assert got.to_dict() == pytest.approx(want.reindex(got.index).to_dict(), rel=1e-12, nan_ok=True)
    assert (comp.table["n_problems_range"] <= 7).all()
