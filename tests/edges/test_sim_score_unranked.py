"""p_tau below 100 leaves out the problems with no reference to rank their candidates against, naming them.

`speedaudit score` ranks each candidate against the correct references of its problem (q). A problem none of whose
optimization tests has a correct reference timed has no q for any candidate; before, its candidates counted as
failures at every tau < 100, so a corpus whose references were all labelled wrong printed "p50 0.0 % [0.0, 0.0]"
(and the noise-aware 0.0 %), and one such problem among twenty pulled every p_tau down by its share. Now it is
left out below 100 (n/a, named in the summary and the JSON's unranked_problems); p100, correctness alone, keeps
it. Checked against a hand count on the JSON's own samples.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from audits.checks.simulation import score_candidates
from audits.corpus.synthetic import synthesize
from stats.rewards import RewardEnvironment

ENV = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
TAUS = (100, 50, 30)


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=6, n_tests=3, n_solutions=5, n_repeats=3, n_candidates=3, seed=4).corpus
    return whole[whole["environment"] == "quiet"].reset_index(drop=True)


def _without_references(corpus: pd.DataFrame, problems) -> pd.DataFrame:
    out = corpus.copy()
    mask = (out["problem"].astype(str).isin(problems) & (out["role"].astype(str) == "reference")).to_numpy()
    out.loc[mask, "correct"] = False
    return out


def _hand(samples: pd.DataFrame, tau: float, problems) -> float:
    """Mean over ``problems`` of the share of candidates with c and q <= tau / 100 (pass@1)."""
    shares = []
    for p in problems:
        mine = samples[samples["problem"].astype(str) == p]
        ok = mine["c"].to_numpy(bool) & ((tau >= 100) | (mine["q"].to_numpy(float) <= tau / 100))
        shares.append(ok.mean())
    return 100 * float(np.mean(shares))


def test_a_problem_without_references_is_left_out_below_100(corpus):
    result = score_candidates(_without_references(corpus, ["p0002"]), env=ENV, taus=TAUS, n_boot=50, n_draws=100)
    assert result.unranked == ("p0002",) and result.to_dict()["unranked_problems"] == ["p0002"]
    problems = sorted(result.samples["problem"].astype(str).unique())
    ranked = [p for p in problems if p != "p0002"]
    table = result.table.set_index("tau")
    assert table.loc[100.0, "n_problems"] == 6 and table.loc[100.0, "estimate"] == pytest.approx(
        _hand(result.samples, 100, problems))
    for tau in (50.0, 30.0):
        assert table.loc[tau, "n_problems"] == 5
        assert table.loc[tau, "estimate"] == pytest.approx(_hand(result.samples, tau, ranked))
    assert "left out of p_tau below 100 (n/a): 1 problem(s)" in result.summary() and "p0002" in result.summary()


def test_no_reference_anywhere_is_na_not_zero(corpus):
    result = score_candidates(_without_references(corpus, [f"p{i:04d}" for i in range(6)]), env=ENV, taus=TAUS,
                              n_boot=50, n_draws=100)
    table = result.table.set_index("tau")
    assert table.loc[100.0, "estimate"] == pytest.approx(_hand(result.samples, 100, sorted(result.unranked)))
    assert table.loc[[50.0, 30.0], "estimate"].isna().all() and table.loc[[50.0, 30.0], "noise_aware"].isna().all()
    text = result.summary()
    assert not re.search(r"(?<![\d.])0\.0 %", text) and text.count("n/a    (no problem has a correct reference") == 2


def test_every_problem_ranked_changes_nothing(corpus):
    result = score_candidates(corpus, env=ENV, taus=TAUS, n_boot=50, n_draws=100)
    assert result.unranked == ()
    problems = sorted(result.samples["problem"].astype(str).unique())
    for tau in TAUS:
        assert result.table.set_index("tau").loc[float(tau), "estimate"] == pytest.approx(
            _hand(result.samples, tau, problems))
