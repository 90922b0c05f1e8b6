"""The offline simulator (stats/simulator.py).

Group statistics are checked against the closed form p^G + (1-p)^G and brute
enumeration of all G-tuples, the table Spearman against scipy, and the
simulation against synthetic corpora whose noise is planted.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from audits.corpus.synthetic import synthesize
from stats.ranking import select_runs
from stats.rewards import Environment
from stats.simulator import (
    classify,
    curve_diagnostics,
    fallback_exposure,
    group_statistics,
    quality_weights,
    rank_environments,
    repeat_quality,
    sample_group_statistics,
    simulate,
    simulate_grid,
    spearman_from_table,
    table_monotonicity,
    within_group_rank,
)


def test_within_group_rank_matches_scipy_rankdata():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 7, 300)
    values = rng.integers(0, 10, 300).astype(float)  # many ties
    values[::37] = np.nan
    got = within_group_rank(groups, values)
    for g in range(7):
        sel = (groups == g) & np.isfinite(values)
        ranks = sps.rankdata(values[sel])  # average ranks, 1-based
        expected = (ranks - 1) / (sel.sum() - 1)
        assert np.allclose(got[sel], expected)
    assert np.isnan(got[~np.isfinite(values)]).all()
    assert within_group_rank(np.array([5]), np.array([1.0])).tolist() == [0.5]


def test_spearman_from_table_equals_scipy_on_the_expanded_samples():
    rng = np.random.default_rng(1)
    table = rng.integers(0, 9, size=(6, 4))
    x = np.repeat(np.repeat(np.arange(6), 4), table.ravel())
    y = np.repeat(np.tile(np.arange(4), 6), table.ravel())
    assert spearman_from_table(table) == pytest.approx(sps.spearmanr(x, y).statistic)


def test_table_monotonicity_one_when_ideal_lower_when_shuffled():
    rng = np.random.default_rng(2)
    u = rng.random(5000)
    bins = np.minimum((u * 10).astype(int), 9)
    ideal = np.where(u < 0.3, 1, -1)       # a perfect top-30 % gate
    noisy = np.where(u + rng.normal(0, 0.2, u.size) < 0.3, 1, -1)
    unrelated = rng.permutation(ideal)

    def table(r):
        return np.histogram2d(bins, r, bins=[np.arange(11) - 0.5, [-1.5, 0, 1.5]])[0]

    assert table_monotonicity(table(ideal)) == pytest.approx(1.0)
    assert 0.3 < table_monotonicity(table(noisy)) < 0.9
    assert abs(table_monotonicity(table(unrelated))) < 0.1
    assert table_monotonicity(table(-ideal)) == pytest.approx(-1.0, abs=0.01)  # bins of unequal size: about -1
    # The normalisation: the raw Spearman of a perfect step is far from 1.
    assert abs(sps.spearmanr(bins, ideal).statistic) < 0.85


def test_curve_diagnostics_of_the_diagonal_and_of_a_step():
    u = (np.arange(10) + 0.5) / 10
    d = curve_diagnostics(1 - u, u)
    assert d["auc"] == pytest.approx(0.5) and d["steepness"] == pytest.approx(1.0)
    assert d["diagonal_deviation"] == pytest.approx(0.0) and d["curve_monotonicity"] == pytest.approx(1.0)
    step = (u < 0.3).astype(float)          # pays the fastest 30 % only
    d = curve_diagnostics(step, u)
    assert d["auc"] == pytest.approx(0.3)
    # |1 - (1-u)| = u on the first 3 bins, |0 - (1-u)| on the other 7, by hand:
    assert d["diagonal_deviation"] == pytest.approx((0.05 + 0.15 + 0.25 + 0.65 + 0.55 + 0.45 + 0.35 + 0.25 + 0.15
                                                     + 0.05) / 10)
    assert d["steepness"] == pytest.approx(-np.polyfit(u, step, 1)[0])
    flat = curve_diagnostics(np.full(10, 0.7), u)
    assert flat["curve_monotonicity"] == 0.0 and flat["steepness"] == 0.0


@pytest.mark.parametrize("group_size", (1, 2, 4, 8, 16))
def test_zero_advantage_rate_binary_matches_closed_form(group_size):
    # 40 problems, success probability p_i = m_i / 20 each.
    m = np.arange(40) % 21
    problems = np.repeat(np.arange(40), 20)
    rewards = np.where(np.tile(np.arange(20), 40) < np.repeat(m, 20), 1.0, -1.0)
    p = m / 20
    got = group_statistics(problems, rewards, group_sizes=(group_size,)).iloc[0]
    assert got["zero_advantage_rate"] == pytest.approx(np.mean(p ** group_size + (1 - p) ** group_size))
    assert got["all_positive"] == pytest.approx(np.mean(p ** group_size))
    assert got["all_negative"] == pytest.approx(np.mean((1 - p) ** group_size))
    sampled = sample_group_statistics(problems, rewards, group_sizes=(group_size,), n_groups=4000, seed=3).iloc[0]
    se = np.sqrt(0.25 / (4000 * 40))
    assert abs(sampled["zero_advantage_rate"] - got["zero_advantage_rate"]) < 6 * se


def test_weighted_group_statistics_match_enumeration_of_all_groups():
    # One problem, three reward levels, unequal sampling weights.
    rewards = np.array([1.0, 0.0, 0.0, -1.0, -1.0])
    weights = np.array([0.5, 1.0, 2.0, 1.0, 0.5])
    prob = weights / weights.sum()
    for g in (2, 3, 4):
        equal = neg = pos = 0.0
        for combo in itertools.product(range(5), repeat=g):
            w = np.prod(prob[list(combo)])
            r = rewards[list(combo)]
            equal += w * (r == r[0]).all()
            neg += w * (r < 0).all()
            pos += w * (r > 0).all()
        got = group_statistics(np.zeros(5), rewards, weights=weights, group_sizes=(g,)).iloc[0]
        assert got["zero_advantage_rate"] == pytest.approx(equal)
        assert got["all_negative"] == pytest.approx(neg)
        assert got["all_positive"] == pytest.approx(pos)


def test_quality_weights():
    u = np.array([0.1, 0.5, 0.9])
    assert np.array_equal(quality_weights(u), np.ones(3))
    w = quality_weights(u, ("beta", 1, 3))
    assert np.allclose(w, sps.beta.pdf(u, 1, 3)) and w[0] > w[2]
    with pytest.raises(ValueError):
        quality_weights(u, "gaussian")


def test_fallback_exposure_against_enumeration():
    f, n = 0.2, 3
    brute = sum(f ** sum(o) * (1 - f) ** (n - sum(o)) for o in itertools.product((0, 1), repeat=n) if any(o))
    assert fallback_exposure(f, n) == pytest.approx(brute)
    assert np.allclose(fallback_exposure([0, 1], [5, 5]), [0, 1])
    with pytest.raises(ValueError):
        fallback_exposure(1.5, 2)


def test_classify_levels_at_documented_thresholds():
    diag = {"auc": 0.5, "monotonicity": 0.95, "diagonal_deviation": 0.2, "zero_advantage_rate": 0.1,
            "curve_noise": 0.02}
    assert all(level == "pass" for *_, level, _ in classify(diag))
    levels = {label: level for label, _, _, level, _ in classify({**diag, "auc": 0.04})}
    assert levels["sparse"] == "fail" and levels["saturated"] == "pass"
    levels = {label: level for label, _, _, level, _ in classify({**diag, "auc": 0.9, "monotonicity": 0.7})}
    assert levels["saturated"] == "warn" and levels["non-monotone"] == "warn"
    levels = {label: level for label, _, _, level, _ in classify({**diag, "auc": 0.9}, {"auc_saturated_warn": 0.95})}
    assert levels["saturated"] == "pass"
    with pytest.raises(ValueError, match="unknown threshold"):
        classify(diag, {"auc_max": 1})


# ------------------------------------------------------------------ simulations on planted truth

def _runs(environment="quiet", **spec):
    base = dict(n_problems=12, n_tests=5, n_correctness_tests=1, n_solutions=10, n_incorrect=1, n_candidates=0,
                n_repeats=3, seed=11)
    base.update(spec)
    synth = synthesize(**base)
    return select_runs(synth.corpus, environment=environment, campaign="c0")


def test_noise_free_corpus_gives_a_perfectly_ordered_reward():
    runs = _runs(noise_cv=0.0, noise_add_s=0.0)
    env = Environment.from_dict({"name": "top30", "post": {"tau": 30}})
    res = simulate(runs, env, n_boot=50)
    d = res.diagnostics
    # Not exactly 1: the gate is on q, so the u where it switches differs a little between problems.
    assert d["monotonicity"] > 0.95
    curve = res.curve["curve"].dropna().to_numpy()
    assert np.all(np.diff(curve) <= 1e-12)          # never pays a slower bin more
    assert res.curve["curve"].iloc[0] == pytest.approx(1.0) and res.curve["curve"].iloc[-1] == pytest.approx(0.0)
    assert d["curve_noise"] == pytest.approx(0.0)    # repeats are identical without noise
    assert d["n_pairs"] == 3 and d["n_problems"] == 12 and d["n_solutions"] == 120
    assert d["auc_ci_low"] <= d["auc"] <= d["auc_ci_high"]


def test_curve_points_are_mean_rewards_of_their_bins():
    runs = _runs()
    env = Environment.from_dict({"name": "two", "post": {"tau": 50}, "reward": {"scheme": "two_gate"}})
    res = simulate(runs, env, n_boot=0)
    # The pooled curve is the count-weighted mean of the per-pair curves.
    pc = res.pair_curves.dropna()
    pooled = pc.assign(w=pc["curve"] * pc["n"]).groupby("bin")[["w", "n"]].sum()
    assert np.allclose((pooled["w"] / pooled["n"]).to_numpy(), res.curve.set_index("bin").loc[pooled.index, "curve"])
    assert res.curve["n"].sum() == res.diagnostics["n_samples"] == 3 * 120
    assert ((res.curve["curve"] >= 0) & (res.curve["curve"] <= 1)).all()


def test_single_repeat_uses_the_same_repeat_and_reports_no_noise():
    runs = _runs(n_repeats=1)
    res = simulate(runs, Environment.from_dict({"name": "e", "post": {"tau": 30}}), n_boot=20)
    assert res.diagnostics["n_pairs"] == 1 and np.isnan(res.diagnostics["curve_noise"])


def test_busy_worker_lowers_monotonicity():
    synth = synthesize(n_problems=16, n_tests=6, n_correctness_tests=1, n_solutions=12, n_incorrect=0,
                       n_candidates=0, n_repeats=3, busy=True, seed=5)
    env = Environment.from_dict({"name": "top50", "post": {"tau": 50}})
    quiet = simulate(select_runs(synth.corpus, environment="quiet", campaign="c0"), env, n_boot=100).diagnostics
    busy = simulate(select_runs(synth.corpus, environment="busy", campaign="c0"), env, n_boot=100).diagnostics
    assert quiet["monotonicity"] > 0.85
    assert busy["monotonicity"] < quiet["monotonicity"] - 0.15
    assert busy["monotonicity_ci_high"] < quiet["monotonicity_ci_low"]


def test_grid_ranks_good_environments_first_and_rejects_duplicates():
    runs = _runs()
    envs = [Environment.from_dict({"name": n, "post": {"tau": t}}) for n, t in
            (("saturated", 100), ("top40", 40), ("sparse", 0.5))]
    ranking, results = simulate_grid(runs, envs, n_boot=20)
    assert ranking["environment"].iloc[0] == "top40"
    assert ranking.set_index("environment").loc["saturated", "verdict"].startswith("fail")
    assert [r.environment.name for r in results] == ["saturated", "top40", "sparse"]
    assert list(ranking["rank"]) == [1, 2, 3]
    with pytest.raises(ValueError, match="unique"):
        simulate_grid(runs, envs + [envs[0]])
    q = repeat_quality(runs)
    assert set(q.columns) == {"problem", "solution", "repeat", "q"} and len(q) == 3 * 120
    assert rank_environments([]).empty


def test_incorrect_references_as_rollouts_are_paid_by_correctness():
    runs = _runs()  # 10 correct + 1 incorrect reference per problem, 12 problems, 3 repeats
    env = Environment.from_dict({"name": "tau100", "post": {"tau": 100}})
    only_correct = simulate(runs, env, n_boot=0).diagnostics
    assert only_correct["mean_reward"] == 1.0 and only_correct["n_solutions"] == 120
    both = simulate(runs, env, n_boot=0, include_incorrect=True).diagnostics
    assert both["n_solutions"] == 132
    # Every correct rollout gets +1, every incorrect one -1 (it fails a test in every repeat).
    assert both["mean_reward"] == pytest.approx((120 - 12) / 132)


def test_batch_curve_diagnostics_equal_scipy_per_curve():
    """The bootstrap's vectorised diagnostics equal scipy's spearmanr and numpy's polyfit on every curve
    (random curves, tied values, flat curves, empty bins in several patterns, an all-empty curve)."""
    from stats.simulator import _curve_diagnostics_batch

    rng = np.random.default_rng(5)
    u = (np.arange(10) + 0.5) / 10
    curves = rng.random((300, 10))
    curves[::7, 3] = np.nan
    curves[::13, [0, 9]] = np.nan
    curves[::11] = 0.4                                   # flat: no order
    curves[20:40] = np.round(curves[20:40] * 3) / 3      # ties
    curves[5] = np.nan
    curves[9] = np.nan
    curves[9, 2] = 0.3                                   # one finite bin
    batch = _curve_diagnostics_batch(curves, u)
    for i, c in enumerate(curves):
        ok = np.isfinite(c)
        if not ok.any():
            assert all(np.isnan(batch[k][i]) for k in batch)
            continue
        if ok.sum() < 2:  # one quality bin: only the AUC is defined (tests/edges/test_sim_ties.py)
            assert batch["auc"][i] == pytest.approx(c[ok].mean(), rel=1e-12)
            assert all(np.isnan(batch[k][i]) for k in ("curve_monotonicity", "steepness", "diagonal_deviation"))
            continue
        flat = np.ptp(c[ok]) == 0
        rho = 0.0 if flat else sps.spearmanr(u[ok], c[ok]).statistic
        slope = 0.0 if flat else np.polyfit(u[ok], c[ok], 1)[0]
        expected = {"auc": c[ok].mean(), "curve_monotonicity": -rho, "steepness": -slope,
                    "diagonal_deviation": np.abs(c[ok] - (1 - u[ok])).mean()}
        for key, value in expected.items():
            assert batch[key][i] == pytest.approx(value, rel=1e-12, abs=1e-12), (i, key)
