"""When every problem's references tie in quality, whether a reward follows quality is n/a, not "non-monotone".

A clock coarser than the programs' differences (every execution of a problem read as the same duration) ties every
reference of a problem at q = 0.5, so every sample of the simulation falls in one quality bin. Before, the
monotonicity of that one-bin table was 0 and the diagonal deviation the distance of one point from the diagonal:
top30 read "fail: sparse, non-monotone, dead groups" with the advice that measurement noise shuffles the reward
between repeats, and the graded/saturating rewards "non-monotone, off-diagonal" -- a verdict on something the
corpus cannot measure. Now monotonicity, steepness and diagonal deviation are undefined with fewer than two quality
bins (n/a with the reason); the AUC, what the reward pays, is still judged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from audits.checks.simulation import run_simulation_audit
from audits.corpus.synthetic import synthesize
from stats.rewards import RewardEnvironment
from stats.simulator import table_monotonicity

ENVIRONMENTS = [RewardEnvironment.from_dict(spec) for spec in (
    {"name": "top30", "post": {"tau": 30}},
    {"name": "graded", "post": {"tau": 30}, "reward": {"scheme": "two_gate_graded"}},
)]


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=5, n_tests=3, n_solutions=5, n_repeats=3, n_candidates=0, seed=2).corpus
    return whole[whole["environment"] == "quiet"].reset_index(drop=True)


def _coarse(corpus: pd.DataFrame) -> pd.DataFrame:
    """Every execution of a problem read as the problem's median duration (a clock too coarse to tell them apart)."""
    out = corpus.copy()
    scored = (out["role"].astype(str) != "floor").to_numpy()
    median = out[scored].groupby("problem", observed=True)["duration_s"].median()
    out.loc[scored, "duration_s"] = out.loc[scored, "problem"].map(median).astype(float).to_numpy()
    return out


def test_tied_quality_leaves_the_order_unmeasured(corpus):
    audit = run_simulation_audit(_coarse(corpus), reward_environments=ENVIRONMENTS, n_boot=20)
    d = audit.diagnostics.set_index("reward_environment")
    for name in ("top30", "graded"):
        assert d.loc[name, "n_quality_bins"] == 1 and d.loc[name, "n_samples"] > 0
        assert np.isnan(d.loc[name, "monotonicity"]) and np.isnan(d.loc[name, "diagonal_deviation"])
        mine = {f.metric: f for f in audit.findings if f.subject == name}
        for metric in ("monotonicity", "diagonal_deviation"):
            assert mine[metric].level == "n/a" and "tied in q" in mine[metric].reason
        assert "non-monotone" not in d.loc[name, "verdict"] and "off-diagonal" not in d.loc[name, "verdict"]
    # what the rewards pay is still measured: top30 pays no one at q = 0.5, graded pays every correct one 0.5
    assert d.loc["top30", "auc"] == 0.0 and d.loc["graded", "auc"] == pytest.approx(0.75)
    assert "sparse" in d.loc["top30", "verdict"]


def test_untied_corpus_is_judged(corpus):
    d = run_simulation_audit(corpus, reward_environments=ENVIRONMENTS, n_boot=20).diagnostics
    assert (d["n_quality_bins"] > 1).all() and np.isfinite(d["monotonicity"]).all()


def test_the_table_statistic_against_scipy():
    rng = np.random.default_rng(4)
    bins = rng.integers(0, 4, 200)
    rewards = np.where(rng.random(200) < 0.3 + 0.15 * bins, -1.0, 1.0)
    table = np.zeros((4, 2))
    np.add.at(table, (bins, (rewards > 0).astype(int)), 1)
    ideal = np.sort(rewards)[::-1][np.argsort(np.argsort(bins, kind="stable"), kind="stable")]
    expected = sps.spearmanr(bins, rewards).statistic / sps.spearmanr(bins, ideal).statistic
    assert table_monotonicity(table) == pytest.approx(expected)
    assert np.isnan(table_monotonicity(table * np.array([[0], [1], [0], [0]])))  # one bin: undefined
    assert table_monotonicity(np.array([[4.0, 0.0], [3.0, 0.0]])) == 0.0         # constant reward: 0


def test_a_run_without_optimization_tests_says_so(corpus):
    """Before: 'a problem needs >= 2 correct references ...; collect more accepted solutions per problem', with five
    correct references per problem: the cause was that every test was a correctness test."""
    only = corpus.copy()
    only["test_kind"] = pd.Categorical(["correctness"] * len(only), categories=["correctness", "optimization"])
    audit = run_simulation_audit(only, reward_environments=ENVIRONMENTS[:1], n_boot=20)
    verdict = next(f for f in audit.findings if f.subject == "top30" and f.metric == "verdict")
    assert verdict.level == "n/a" and "no optimization test" in verdict.reason
    assert "collect more accepted solutions" not in verdict.reason
