"""Problems a run cannot measure in the discriminability audit (every execution of them timed out).

Found on a corpus where one campaign's executions of some problems all timed out (a ``--timeout`` below their
limit): with no timed correct reference, every reference scored 100 in every repeat, so each such problem
added a strong-weak gap of 0 to the run's mean: half the problems timed out halved the gap (a ``warn`` judged
``fail``), and a run where every problem timed out failed with a gap of 0. The same run's filterable share was
``n/a`` for "one optimization test per problem" though each problem had four. ``unmeasured_finding`` promises
that such problems drop out of every estimator.
"""

from __future__ import annotations

import pandas as pd
import pytest

from audits.checks.discriminability import run_discriminability_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA


def _timed_out(corpus: pd.DataFrame, problems) -> tuple[pd.DataFrame, pd.Series]:
    bad = corpus["problem"].astype(str).isin(problems) & (corpus["role"].astype(str) != "floor")
    out = corpus.copy()
    out["status"] = pd.Categorical(out["status"].astype(str).where(~bad, "timeout"),
                                   categories=corpus["status"].cat.categories)
    out["duration_s"] = out["duration_s"].where(~bad, out["timeout_s"])
    return out, bad


def _found(corpus):
    return {f.metric: f for f in run_discriminability_audit(corpus, n_boot=20).findings}


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5).corpus


def test_timed_out_problems_do_not_dilute_the_gap(corpus):
    planted, bad = _timed_out(corpus, ["p0000", "p0001", "p0002", "p0003"])
    with_them = _found(planted)["strong_weak_gap"]
    without = _found(corpus.loc[~bad].reset_index(drop=True))["strong_weak_gap"]
    assert with_them.value == pytest.approx(without.value, rel=1e-12)
    assert with_them.level == without.level


def test_a_run_whose_every_problem_timed_out_is_not_measured(corpus):
    planted, _ = _timed_out(corpus, corpus["problem"].astype(str).unique())
    found = _found(planted)
    assert found["strong_weak_gap"].level == NA, found["strong_weak_gap"].message
    for metric in ("filterable_share", "noise_inflated_filterable_share"):
        assert found[metric].level == NA and "no problem of the run can be measured" in found[metric].reason
