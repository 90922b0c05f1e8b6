"""With one repeat the repeat-noise model has no variance: the noise-aware rewards are n/a, never a verdict.

The noise_aware reward pays 1 - E[q] and the noise_gate reward 2 P(q <= tau) - 1 (docs/noise.md); both come from
the per-cell variance of repeats, which a one-repeat run cannot estimate (fit_noise: NaN). Before the fix, every
correct rollout's E[q] and P were NaN and the reward formula turned them into a constant (0 for noise_aware, -1 for
noise_gate): `speedaudit simulate` judged the same corpus's noise_aware environment "fail: non-monotone, dead
groups" and noise_gate "fail: sparse, non-monotone, off-diagonal, dead groups", a property of the corpus (one
repeat) read as the reward environment's; and `speedaudit score` printed a noise-aware p50 of 0.0 % [0.0, 0.0].
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.checks.simulation import run_simulation_audit, score_candidates
from audits.corpus.synthetic import synthesize
from stats.rewards import RewardEnvironment

ENVIRONMENTS = [RewardEnvironment.from_dict(spec) for spec in (
    {"name": "top30", "post": {"tau": 30}},
    {"name": "noise_aware", "post": {"tau": 30}, "reward": {"scheme": "noise_aware"}},
    {"name": "noise_gate", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}},
)]


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=6, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=2, n_incorrect=1,
                       seed=2).corpus
    return whole[whole["environment"] == "quiet"].reset_index(drop=True)


def _levels(audit) -> dict:
    return dict(zip(audit.diagnostics["reward_environment"], audit.diagnostics["level"]))


@pytest.mark.parametrize("include_incorrect", [False, True])
def test_one_repeat_leaves_the_noise_rewards_unjudged(corpus, include_incorrect):
    one = corpus[corpus["repeat"] == 0]
    audit = run_simulation_audit(one, reward_environments=ENVIRONMENTS, n_boot=20, include_incorrect=include_incorrect)
    levels = _levels(audit)
    assert levels["top30"] in ("pass", "warn", "fail")  # the point-value reward is measured on the same rows
    for name in ("noise_aware", "noise_gate"):
        assert levels[name] == "n/a", levels
        mine = [f for f in audit.findings if f.subject == name]
        assert mine and all(f.level == "n/a" for f in mine), [(f.metric, f.level) for f in mine]
        verdict = next(f for f in mine if f.metric == "verdict")
        assert "repeat-noise model" in verdict.reason and "collect >= 2 repeats" in verdict.reason


def test_with_repeats_the_noise_rewards_are_judged(corpus):
    levels = _levels(run_simulation_audit(corpus, reward_environments=ENVIRONMENTS, n_boot=20))
    assert all(levels[name] in ("pass", "warn", "fail") for name in ("noise_aware", "noise_gate")), levels


def test_score_says_why_the_noise_aware_p_tau_is_missing(corpus):
    one = corpus[corpus["repeat"] == 0]
    result = score_candidates(one, env=ENVIRONMENTS[0], n_boot=50, n_draws=200)
    assert result.noise_reason is not None and "one repeat" in result.noise_reason
    assert result.table["noise_aware"].isna().all()
    assert "noise-aware values: n/a" in result.summary()
    # the point p_tau is still the share of candidates correct and within tau (one candidate set per problem)
    samples = result.samples
    expected = 100 * np.mean([((g["c"]) & (g["q"] <= 0.5)).mean() for _, g in samples.groupby("problem", observed=True)])
    assert result.table.set_index("tau").loc[50.0, "estimate"] == pytest.approx(expected)
    with_repeats = score_candidates(corpus, env=ENVIRONMENTS[0], n_boot=50, n_draws=200)
    assert with_repeats.noise_reason is None and with_repeats.table["noise_aware"].notna().all()
