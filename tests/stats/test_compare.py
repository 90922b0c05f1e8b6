"""The paired comparison (stats.compare) against planted truth and against an independent computation.

The corpora come from audits.corpus.synthetic_pairs: problems where every A candidate is truly faster than
every B candidate, the reverse, or a true tie, in planted proportions; the planted win rate is
share(a) + share(tie)/2. The independent computation re-derives the noise model's posterior of every cell
with pandas group-bys (prior_df = inf: one pooled variance per test, normal posteriors, scipy's normal cdf)
and, for the default prior, P(faster) by scipy's own numerical integration of the Behrens-Fisher law.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats as sps

from audits.corpus.io import normalize
from audits.corpus.synthetic_pairs import synthesize_pairs
from stats.compare import paired_comparison
from stats.noise import fit_noise


def _corpus(**options) -> tuple[pd.DataFrame, object]:
    synth = synthesize_pairs(**options)
    corpus = normalize(synth.corpus)
    corpus["side"] = corpus["solution"].astype(str).str.split("/").str[0].str.lower()
    return corpus, synth


@pytest.fixture(scope="module")
def planted():
    return _corpus(n_problems=40, share_a=0.65, share_tie=0.2, n_a=2, n_b=2, seed=11)


def test_the_planted_win_rate_of_075_is_recovered_within_its_ci(planted):
    corpus, synth = planted
    assert synth.planted_win_rate == 0.75
    out = paired_comparison(corpus, n_boot=2000, seed=0)
    for iv in (out.win_rate, out.expected_win_rate):
        assert iv.n == 40 and iv.low <= 0.75 <= iv.high
        assert iv.low > 0.5  # the test can fail: the CI resolves A over B
    assert abs(out.win_rate.estimate - 0.75) < 0.05
    # Problems of kind a and b are decided in every comparison (gap 0.4 in log against noise 0.03).
    kinds = synth.truth.set_index("problem")["kind"]
    table = out.problems.set_index("problem")
    assert (table.loc[kinds.index[kinds == "a"], "win_rate"] == 1).all()
    assert (table.loc[kinds.index[kinds == "b"], "win_rate"] == 0).all()
    ties = table.loc[kinds.index[kinds == "tie"]]
    # At a true tie P(faster) is uniform: a comparison is decided (wrongly) about 2 (1 - c) = 10 % of the time.
    assert 0.75 < ties["n_undecided"].sum() / ties["n_comparisons"].sum() <= 1.0
    assert out.pass_rate_a.estimate == out.pass_rate_b.estimate == 1.0


def test_a_planted_even_comparison_is_not_resolved():
    corpus, synth = _corpus(n_problems=40, share_a=0.4, share_tie=0.2, seed=5)
    assert synth.planted_win_rate == 0.5
    out = paired_comparison(corpus, n_boot=2000, seed=0)
    assert out.win_rate.low <= 0.5 <= out.win_rate.high


def test_shuffled_rows_give_the_same_result(planted):
    corpus, _ = planted
    a = paired_comparison(corpus, n_boot=300, seed=4)
    b = paired_comparison(corpus.sample(frac=1.0, random_state=9).reset_index(drop=True), n_boot=300, seed=4)
    pd.testing.assert_frame_equal(a.problems, b.problems)
    pd.testing.assert_frame_equal(a.comparisons, b.comparisons)
    assert a.win_rate == b.win_rate and a.decided_win_rate == b.decided_win_rate
    assert (a.n_comparisons, a.n_undecided) == (b.n_comparisons, b.n_undecided)


def _independent_cells(corpus: pd.DataFrame) -> pd.DataFrame:
    """Per (problem, test, solution): mean log duration of the ok repeats, n, and the test's pooled variance
    sum (n - 1) s^2 / sum (n - 1) over every cell of the test (prior_df = inf)."""
    rows = corpus.loc[(corpus["status"] == "ok").to_numpy()].assign(
        y=lambda f: np.log(f["duration_s"].to_numpy(dtype=float)),
        problem=lambda f: f["problem"].astype(str), test=lambda f: f["test"].astype(str),
        solution=lambda f: f["solution"].astype(str))
    cells = rows.groupby(["problem", "test", "solution"]).agg(m=("y", "mean"), v=("y", "var"), n=("y", "size"))
    cells["ss"] = cells["v"].fillna(0) * (cells["n"] - 1)
    cells["dof"] = cells["n"] - 1
    per_test = cells.groupby(["problem", "test"])[["ss", "dof"]].sum()
    pooled = (per_test["ss"] / per_test["dof"]).rename("pooled")
    cells = cells.join(pooled, on=["problem", "test"]).reset_index()
    cells["se"] = np.sqrt(cells["pooled"] / cells["n"])
    return cells


def test_ties_and_undecided_pairs_match_an_independent_computation(planted):
    corpus, synth = planted
    c = 0.9
    out = paired_comparison(corpus, confidence=c, prior_df=np.inf, n_boot=0)
    cells = _independent_cells(corpus)
    opt = cells.loc[cells["test"].str.startswith("o")]
    a = opt.loc[opt["solution"].str.startswith("A/")]
    b = opt.loc[opt["solution"].str.startswith("B/")]
    pairs = a.merge(b, on=["problem", "test"], suffixes=("_a", "_b"))
    pairs["p"] = sps.norm.cdf((pairs["m_b"] - pairs["m_a"]) / np.hypot(pairs["se_a"], pairs["se_b"]))
    pairs["decision"] = np.select([pairs["p"] >= c, pairs["p"] <= 1 - c], ["a", "b"], "undecided")
    pairs["outcome"] = pairs["decision"].map({"a": 1.0, "b": 0.0, "undecided": 0.5})
    mine = out.comparisons.merge(pairs, on=["problem", "test", "solution_a", "solution_b"], validate="1:1")
    assert len(mine) == len(pairs) == out.n_comparisons == 40 * 3 * 2 * 2
    np.testing.assert_allclose(mine["p_faster"], mine["p"], rtol=0, atol=1e-9)
    assert (mine["decision_x"] == mine["decision_y"]).all()
    assert out.n_undecided == int((pairs["decision"] == "undecided").sum()) > 0
    per_problem = pairs.groupby("problem").agg(w=("outcome", "mean"),
                                               u=("decision", lambda d: float(np.mean(d == "undecided"))))
    table = out.problems.set_index("problem")
    np.testing.assert_allclose(table.loc[per_problem.index, "win_rate"], per_problem["w"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(table.loc[per_problem.index, "undecided_share"], per_problem["u"], atol=1e-12)
    assert out.win_rate.estimate == pytest.approx(per_problem["w"].mean(), abs=1e-12)


def test_default_prior_p_faster_matches_scipy_integration(planted):
    corpus, _ = planted
    out = paired_comparison(corpus, n_boot=0)
    model = fit_noise(corpus, by_language=False)
    cells = model.cells.assign(solution=model.cells["solution"].astype(str), problem=model.cells["problem"].astype(str),
                               test=model.cells["test"].astype(str)).set_index(["problem", "test", "solution"])
    sample = out.comparisons.iloc[np.linspace(0, len(out.comparisons) - 1, 25).astype(int)]
    for row in sample.itertuples(index=False):
        ca, cb = cells.loc[(row.problem, row.test, row.solution_a)], cells.loc[(row.problem, row.test, row.solution_b)]
        # P(se_a T_a + se_b T_b < gap) = E over T_a of F_b((gap - se_a T_a) / se_b)
        def integrand(x, gap=cb["log_mean"] - ca["log_mean"], a=ca, b=cb):
            return sps.t.pdf(x, a["df"]) * sps.t.cdf((gap - a["se"] * x) / b["se"], b["df"])

        value, _ = integrate.quad(integrand, -np.inf, np.inf, limit=200)
        assert row.p_faster == pytest.approx(value, abs=2e-4)


def test_wrong_answers_leave_the_pairs_and_timeouts_lose():
    corpus, synth = _corpus(n_problems=12, share_a=0.5, share_tie=0.0, n_a=3, n_b=2, n_fail_a=1, seed=2)
    assert synth.planted_pass_rate_a == pytest.approx(2 / 3)
    # B/s1.py times out on test o0 of every problem (every repeat): it loses that comparison, decided.
    hit = (corpus["solution"] == "B/s1.py").to_numpy() & (corpus["test"] == "o0").to_numpy()
    corpus.loc[hit, "status"] = "timeout"
    corpus.loc[hit, "duration_s"] = 10.0
    out = paired_comparison(corpus, n_boot=0)
    assert out.pass_rate_a.estimate == pytest.approx(2 / 3) and out.pass_rate_b.estimate == pytest.approx(1 / 2)
    assert not out.comparisons["solution_a"].eq("A/s0.py").any()  # the wrong one is in no pair
    assert len(out.comparisons) == 12 * 3 * 2 * 2
    timed_out = out.comparisons.loc[(out.comparisons["solution_b"] == "B/s1.py") & (out.comparisons["test"] == "o0")]
    assert len(timed_out) == 24 and (timed_out["p_faster"] == 1.0).all() and (timed_out["decision"] == "a").all()


def test_one_repeat_leaves_every_comparison_undefined():
    corpus, _ = _corpus(n_problems=5, n_repeats=1, seed=0)
    out = paired_comparison(corpus, n_boot=50)
    assert out.n_comparisons == 0 and out.n_undefined == 5 * 3 * 4
    assert out.win_rate.n == 0 and np.isnan(out.win_rate.estimate)
    assert (out.comparisons["decision"] == "undefined").all()


def test_bad_input_is_named():
    corpus, _ = _corpus(n_problems=3, seed=0)
    with pytest.raises(ValueError, match="column 'side'"):
        paired_comparison(corpus.drop(columns="side"))
    mixed = corpus.copy()
    mixed.loc[mixed.index[0], "side"] = "b"  # one row of a reference put in set b: its solution is in two
    with pytest.raises(ValueError, match="more than one set"):
        paired_comparison(mixed)
    with pytest.raises(ValueError, match="confidence"):
        paired_comparison(corpus, confidence=0.4)
