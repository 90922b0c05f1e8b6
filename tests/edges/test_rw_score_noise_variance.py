"""`speedaudit score`: a problem without a repeat variance of its own gets n/a noise-aware values, never the run's.

score fitted the repeat-noise model over the whole run (fit_noise(widest="run")), so a problem with no cell of two
ok repeats (timed once) borrowed the other problems' variance: its candidates got an E[q] with a 95 % interval
(e.g. 0.299 [0.111, 0.500]) and a P(gate) that no timing of that problem supports, and that moved with which other
problems shared the corpus. The simulation's noise_aware and noise_gate rewards already fit each problem from its
own rows and leave such a problem unmeasured (commits 11084e8, 98b82d6). Decision, the same for score: the problem's
noise-aware values are n/a with the reason, named in the text and the JSON, and the problem is left out of the
noise-aware p_tau below 100 (an undefined q* is not a failure). A problem whose repeats are all equal has a variance
of its own, zero (no noise measured): its noise-aware values are its point values, not borrowed (checked below as
planted truth; that part held before too).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audits.checks.simulation import score_candidates
from audits.corpus.synthetic import synthesize
from stats.rewards import RewardEnvironment
from tests.cli_process import speedaudit

ENV = RewardEnvironment.from_dict({"name": "t50", "post": {"tau": 50}})
ONE = "p0001"


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=5, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=3, seed=2).corpus
    return whole[whole["environment"] == "quiet"].reset_index(drop=True)


def _one_repeat(corpus, problem=ONE):
    """The corpus with ``problem`` timed once (its repeats 1 and 2 dropped)."""
    return corpus[~((corpus["problem"].astype(str) == problem) & (corpus["repeat"] > 0))].reset_index(drop=True)


def _rows(result, problem):
    s = result.samples
    return s[s["problem"].astype(str) == problem].sort_values("solution")


def test_a_one_repeat_problem_is_na_and_named(corpus):
    result = score_candidates(_one_repeat(corpus), env=ENV, environment="quiet", n_boot=0, n_draws=400)
    assert result.noise_reason is None  # the other problems are measured
    assert result.noise_unmeasured == (ONE,)
    mine = _rows(result, ONE)
    assert len(mine) == 3 and mine["q"].notna().all()  # the point values stand
    for column in ("q_expected", "q_ci_low", "q_ci_high", "p_q_le_tau", "p_gate"):
        assert mine[column].isna().all(), column
    text = result.summary()
    assert f"noise-aware values n/a for 1 problem(s): {ONE}" in text and "two ok repeats" in text
    assert result.to_dict()["noise_aware"]["unmeasured_problems"]["problems"] == [ONE]


def test_the_other_problems_keep_their_values_and_the_p_tau_leaves_it_out(corpus):
    with_one = score_candidates(_one_repeat(corpus), env=ENV, environment="quiet", n_boot=0, n_draws=4000)
    without = score_candidates(corpus[corpus["problem"].astype(str) != ONE].reset_index(drop=True), env=ENV,
                               environment="quiet", n_boot=0, n_draws=4000)
    others = sorted(set(with_one.samples["problem"].astype(str)) - {ONE})
    for problem in others:  # E[q] is closed form: exactly the problem's own, whoever shares the corpus
        np.testing.assert_array_equal(_rows(with_one, problem)["q_expected"].to_numpy(),
                                      _rows(without, problem)["q_expected"].to_numpy())
    # the noise-aware p_tau below 100 is over the other problems only: the corpus without ONE gives it up to
    # Monte Carlo error (4,000 draws: a share's se <= 0.8 points); counting ONE's candidates as failures would
    # move p50 by a fifth of the problems' mean
    a, b = with_one.table.set_index("tau"), without.table.set_index("tau")
    for tau in (50.0, 30.0, 10.0):
        assert a.loc[tau, "noise_aware"] == pytest.approx(b.loc[tau, "noise_aware"], abs=3.0)
    assert a.loc[100.0, "noise_aware"] == pytest.approx(100 * with_one.samples.groupby("problem", observed=True)[
        "c"].mean().mean())


def test_equal_repeats_are_their_own_zero_variance(corpus):
    equal = corpus.copy()
    mine = (equal["problem"].astype(str) == ONE).to_numpy()
    first = equal.loc[mine].sort_values("repeat").groupby(["test", "solution"], observed=True)["duration_s"]
    equal.loc[mine, "duration_s"] = equal.loc[mine].set_index(["test", "solution"]).index.map(
        first.first().to_dict()).to_numpy(dtype=float)
    result = score_candidates(equal, env=ENV, environment="quiet", n_boot=0, n_draws=400)
    assert result.noise_unmeasured == () and result.noise_reason is None
    rows = _rows(result, ONE)
    q = rows["q"].to_numpy()
    np.testing.assert_allclose(rows["q_expected"], q, atol=1e-12)
    np.testing.assert_allclose(rows["q_ci_low"], q, atol=1e-12)
    np.testing.assert_allclose(rows["q_ci_high"], q, atol=1e-12)
    np.testing.assert_array_equal(rows["p_gate"].to_numpy(), (rows["g"] & rows["c"]).to_numpy(dtype=float))


def test_the_command_line_says_it(corpus, tmp_path):
    path = tmp_path / "c.parquet"
    _one_repeat(corpus).to_parquet(path)
    out = tmp_path / "s.json"
    done = speedaudit("score", path, "--reward-env", "fixtures/environments/top30.yaml", "--environment", "quiet",
                      "--n-boot", "20", "--n-draws", "200", "--json", out)
    assert done.returncode == 0, done.stderr
    assert f"noise-aware values n/a for 1 problem(s): {ONE}" in done.stdout
    saved = json.loads(out.read_text())
    assert saved["noise_aware"]["unmeasured_problems"]["problems"] == [ONE]
    cands = pd.DataFrame(saved["noise_aware"]["candidates"])
    assert cands.loc[cands["problem"] == ONE, "q_expected"].isna().all()
