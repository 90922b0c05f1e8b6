"""A problem the run cannot measure drops out of the rank drift and the strong-weak gap.

Found on a corpus where one campaign's executions of half the problems all timed out (a ``--timeout`` below the
problems' limit): with no timed correct reference, every execution of those problems scored 100 in every
repeat, so each added a drift of 0 and a gap of 0 to the run's means. The mean rank sd halved (``fail`` judged
``warn``), the strong-weak gap halved (``warn`` judged ``fail``), and a run where every problem timed out
passed its rank-drift findings with 0 points. ``audits.protocol.findings.unmeasured_finding`` promises that
such problems drop out of every estimator.
"""

from __future__ import annotations

import pytest

from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits
from audits.protocol.findings import NA
from tests.edges.test_audits_unmeasured_gap import _timed_out  # every execution of those problems timed out

FIGURES = {"reliability": ("mean_rank_sd", "mean_rank_range", "p95_rank_range"),
           "discriminability": ("strong_weak_gap",)}
OPTIONS = {"reliability": {"n_boot": 20}, "discriminability": {"n_boot": 20}}


def _found(corpus):
    result = run_audits(corpus, list(FIGURES), options=OPTIONS)
    return {(audit, f.metric): f for audit in FIGURES for f in result.results[audit].findings
            if f.metric in FIGURES[audit]}


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_repeats=3, noise_cv=0.2, seed=5).corpus


def test_timed_out_problems_do_not_dilute_the_drift_and_the_gap(corpus):
    planted, bad = _timed_out(corpus, ["p0000", "p0001", "p0002", "p0003"])
    with_them, without = _found(planted), _found(corpus.loc[~bad].reset_index(drop=True))
    for key, f in without.items():
        assert with_them[key].value == pytest.approx(f.value, rel=1e-12), key
        assert with_them[key].level == f.level, key
    assert without[("reliability", "mean_rank_sd")].value > 4  # a figure that is judged, not 0


def test_a_run_whose_every_problem_timed_out_is_not_measured(corpus):
    planted, _ = _timed_out(corpus, corpus["problem"].astype(str).unique())
    for key, f in _found(planted).items():
        assert f.level == NA, (key, f.level, f.value)
