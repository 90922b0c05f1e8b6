"""Noise-aware scores (stats/noise.py) against scipy, independent integration, and resampling from planted truth.

The planted corpora follow the documented model exactly: per test a noise level
sigma_t, per cell sigma_c^2 = sigma_t^2 nu_0 / chi^2_nu_0 (planted per-cell
noise), log durations normal around the cell's true mu. Many independent
resamples of the same truth are laid side by side as separate problems of one
corpus (pooling never crosses problems), so one vectorised call scores them all.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy import special
from scipy.special import digamma
from scipy import stats as sps

from audits.corpus.io import normalize
from stats.noise import (adaptive_plan, expected_percentiles, faster_probabilities, fit_noise, noise_aware_p_tau,
                         noise_aware_scores,
                         sum_of_t_cdf)
from stats.ranking import percentile_table, problem_scores


def _frame(mu, sigma, n_repeats, rng, *, roles, problem_names, test_kind=None):
    """Executions: mu, sigma of shape (P, T, S); roles of length S; one row per repeat."""
    P, T, S = mu.shape
    y = mu[..., None] + sigma[..., None] * rng.standard_normal((P, T, S, n_repeats))
    p, t, s, r = np.meshgrid(np.arange(P), np.arange(T), np.arange(S), np.arange(n_repeats), indexing="ij")
    frame = pd.DataFrame({
        "problem": np.asarray(problem_names)[p.ravel()],
        "test": np.char.add("t", t.ravel().astype(str)),
        "solution": np.char.add("s", s.ravel().astype(str)),
        "repeat": r.ravel(),
        "duration_s": np.exp(y.ravel()),
        "status": "ok",
        "role": np.asarray(roles)[s.ravel()],
        "correct": True,
    })
    if test_kind is not None:
        frame["test_kind"] = np.asarray(test_kind)[t.ravel()]
    return frame


def _planted_sigma(rng, shape, sigma_t, nu0):
    """sigma_c^2 = sigma_t^2 nu0 / chi2(nu0): the model's prior on per-cell noise."""
    return sigma_t * np.sqrt(nu0 / rng.chisquare(nu0, size=shape))


def _binomial_band(p, n, k=4.0):
    return k * np.sqrt(p * (1 - p) / n)


# --------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------

def test_fit_matches_pandas_moments_and_the_shrinkage_formula():
    rng = np.random.default_rng(0)
    mu = rng.normal(0, 1, (3, 4, 5))
    runs = _frame(mu, np.full(mu.shape, 0.2), 4, rng, roles=["reference"] * 5, problem_names=["a", "b", "c"])
    runs = runs.iloc[rng.permutation(len(runs))[:-7]]  # uneven repeat counts
    model = fit_noise(runs, prior_df=3.0)
    logs = runs.assign(y=np.log(runs["duration_s"]))
    g = logs.groupby(["problem", "test", "solution"])["y"]
    ref = pd.DataFrame({"m": g.mean(), "v": g.var(ddof=1), "n": g.size()}).reset_index()
    cells = model.cells.merge(ref, on=["problem", "test", "solution"])
    assert len(cells) == len(ref) == len(model.cells)
    np.testing.assert_allclose(cells["log_mean"], cells["m"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(cells["log_var"], cells["v"], rtol=1e-10)
    # prior scale per test (limma's log-moment): log s_t^2 = mean[log s^2 - psi(d/2) + log(d/2)] + psi(nu0/2) - log(nu0/2)
    d = ref["n"] - 1
    ref["e"] = np.log(ref["v"]) - digamma(d / 2) + np.log(d / 2)
    pooled = ref.groupby(["problem", "test"])["e"].mean()
    pooled = np.exp(pooled + digamma(1.5) - np.log(1.5)).rename("st2").reset_index()
    cells = cells.merge(pooled, on=["problem", "test"])
    np.testing.assert_allclose(cells["pooled_var"], cells["st2"], rtol=1e-10)
    shrunk = (3.0 * cells["st2"] + (cells["n"] - 1) * cells["v"]) / (3.0 + cells["n"] - 1)
    np.testing.assert_allclose(cells["shrunk_var"], shrunk, rtol=1e-10)
    np.testing.assert_allclose(cells["se"], np.sqrt(shrunk / cells["n"]), rtol=1e-10)
    np.testing.assert_array_equal(cells["df"], 3.0 + cells["n"] - 1)
    assert (model.cells["pooled_from"] == "test").all()


def test_pooling_falls_back_to_problem_then_run_when_a_test_has_one_repeat_per_cell():
    rows = []
    for p, t, s, reps in [("p", "a", "x", [1.0, 1.2]), ("p", "a", "y", [2.0, 2.2]),
                          ("p", "b", "x", [1.0]), ("p", "b", "y", [3.0]),
                          ("q", "c", "x", [5.0]), ("q", "c", "y", [6.0])]:
        rows += [{"problem": p, "test": t, "solution": s, "repeat": i, "duration_s": d, "status": "ok"}
                 for i, d in enumerate(reps)]
    model = fit_noise(pd.DataFrame(rows), prior_df=np.inf)  # the classic pooled variance
    c = model.cells.set_index(["problem", "test", "solution"])
    var_a = (np.var(np.log([1.0, 1.2]), ddof=1) + np.var(np.log([2.0, 2.2]), ddof=1)) / 2
    assert c.loc[("p", "a", "x"), "pooled_from"] == "test"
    assert c.loc[("p", "b", "x"), "pooled_from"] == "problem"
    assert c.loc[("q", "c", "x"), "pooled_from"] == "run"
    for key in [("p", "a", "x"), ("p", "b", "y"), ("q", "c", "y")]:
        assert c.loc[key, "pooled_var"] == pytest.approx(var_a, rel=1e-12)


def test_one_repeat_everywhere_is_undefined_not_certain():
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "x"], "repeat": 0,
                         "duration_s": [1.0, 3.0, 2.0], "status": "ok",
                         "role": ["reference", "reference", "candidate"], "correct": True})
    out = noise_aware_scores(fit_noise(runs), tau=50, n_draws=50)
    assert np.isnan(out.scores["p_gate"].iloc[0]) and np.isnan(out.scores["q_expected"].iloc[0])
    plan = adaptive_plan(runs, tau=50, roles=["candidate"], n_draws=50)
    assert plan.units["decision"].tolist() == ["undefined"]
    assert plan.cells["reason"].eq("no variance yet").all() and len(plan.cells) == 1


def test_bad_input_is_named():
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b"], "duration_s": [0.0, 1.0],
                         "status": "ok"})
    with pytest.raises(ValueError, match=r"duration_s <= 0 .*problem 'p', test 't', solution 'a'"):
        fit_noise(runs)
    good = runs.assign(duration_s=[1.0, 2.0])
    with pytest.raises(ValueError, match="prior_df"):
        fit_noise(good, prior_df=0)
    with pytest.raises(ValueError, match="lack column"):
        fit_noise(good, measure="cpu_s")
    with pytest.raises(ValueError, match="several campaign values"):
        fit_noise(good.assign(campaign=["monday", "tuesday"]))
    with pytest.raises(ValueError, match="tau"):
        noise_aware_scores(fit_noise(good), tau=130)
    with pytest.raises(ValueError, match="confidence"):
        adaptive_plan(good, confidence=0.4)


# --------------------------------------------------------------------------------------------
# Closed forms against scipy
# --------------------------------------------------------------------------------------------

def _two_roles(rng, n_ref=6, n_cand=3, n_repeats=3, n_tests=3, sigma=0.15):
    S = n_ref + n_cand
    mu = rng.normal(0, 0.3, (1, n_tests, S))
    sig = _planted_sigma(rng, mu.shape, sigma, 4)
    return _frame(mu, sig, n_repeats, rng, roles=["reference"] * n_ref + ["candidate"] * n_cand,
                  problem_names=["p"])


def _scipy_sum_of_t(x, se_a, df_a, se_b, df_b):
    """P(se_a T_a + se_b T_b < x) by scipy.integrate.quad over the density of T_a (independent of stats/noise.py)."""
    return integrate.quad(lambda t: sps.t.pdf(t, df_a) * special.stdtr(df_b, (x - se_a * t) / se_b) if np.isfinite(df_b)
                          else sps.t.pdf(t, df_a) * special.ndtr((x - se_a * t) / se_b),
                          -np.inf, np.inf, epsabs=1e-12)[0]


@pytest.mark.parametrize("prior_df", [np.inf, 4.0])
def test_faster_probability_equals_scipy(prior_df):
    rng = np.random.default_rng(3)
    runs = _two_roles(rng, n_tests=2)
    model = fit_noise(runs, prior_df=prior_df)
    pairs = faster_probabilities(model)
    cells = model.cells.set_index(["test", "solution"])
    assert len(pairs) == 2 * 3 * 6
    for row in pairs.itertuples():
        c, r = cells.loc[(row.test, row.solution)], cells.loc[(row.test, row.reference)]
        a, b = np.sqrt(c["shrunk_var"] / c["n_ok"]), np.sqrt(r["shrunk_var"] / r["n_ok"])
        gap = r["log_mean"] - c["log_mean"]
        if np.isinf(prior_df):
            expected = sps.norm.cdf(gap / np.hypot(a, b))  # a difference of normals
            assert row.p_faster == pytest.approx(expected, abs=1e-12)
        else:
            assert c["df"] == 4.0 + c["n_ok"] - 1
            expected = _scipy_sum_of_t(gap, a, c["df"], b, r["df"])
            assert row.p_faster == pytest.approx(expected, abs=2e-4)


def test_closed_form_t_cdf_equals_scipy():
    from stats.noise import _t_cdf

    x = np.concatenate([np.linspace(-40, 40, 2001), [-1e6, 1e6, 0.0]])
    for nu in list(range(1, 61)) + [2.5, 75.0, np.inf]:
        expected = special.ndtr(x) if np.isinf(nu) else special.stdtr(nu, x)
        np.testing.assert_allclose(_t_cdf(x, np.full(len(x), nu)), expected, rtol=0, atol=1e-13, err_msg=str(nu))


def test_sum_of_t_quadrature_against_scipy_and_simulation_at_small_df():
    rng = np.random.default_rng(4)
    draws = 4_000_000
    for se_a, se_b, df_a, df_b, x in [(0.1, 0.1, 3, 3, 0.1), (0.05, 0.2, 5, 9, 0.15), (0.2, 0.05, 4, 4, -0.1),
                                      (0.1, 0.001, 3, 6, 0.05), (0.3, 0.3, 3, np.inf, 0.9)]:
        ours = float(sum_of_t_cdf(x, se_a, df_a, se_b, df_b))
        assert ours == pytest.approx(_scipy_sum_of_t(x, se_a, df_a, se_b, df_b), abs=1e-4)
        t_a = rng.standard_t(df_a, draws) if np.isfinite(df_a) else rng.standard_normal(draws)
        t_b = rng.standard_t(df_b, draws) if np.isfinite(df_b) else rng.standard_normal(draws)
        simulated = np.mean(se_a * t_a + se_b * t_b < x)
        assert abs(ours - simulated) <= _binomial_band(simulated, draws) + 1e-4
    assert float(sum_of_t_cdf(0.2, 0.1, np.inf, 0.2, np.inf)) == pytest.approx(sps.norm.cdf(0.2 / np.hypot(0.1, 0.2)))
    assert float(sum_of_t_cdf(0.2, 0.0, 5, 0.1, 7)) == pytest.approx(sps.t.cdf(2.0, 7))
    assert sum_of_t_cdf(np.array([-1.0, 0.0, 1.0]), 0.0, 3, 0.0, 3).tolist() == [0.0, 0.5, 1.0]


# --------------------------------------------------------------------------------------------
# The simulation against the closed form and independent integration
# --------------------------------------------------------------------------------------------

def test_simulated_mean_percentile_equals_the_closed_form():
    rng = np.random.default_rng(5)
    runs = _two_roles(rng, n_tests=4)
    model = fit_noise(runs)  # t posteriors (df 6): closed form by quadrature, simulation by t draws
    n_draws = 20000
    out = noise_aware_scores(model, tau=30, n_draws=n_draws, seed=1)
    tests = out.tests
    # the simulated mean of r*_t, within 4 Monte Carlo standard errors (sd / sqrt(n_draws))
    sim = noise_aware_scores(model, tau=30, n_draws=n_draws, seed=2, keep_draws=True)
    q_mean = sim.draws.mean(axis=0)
    q_se = sim.draws.std(axis=0) / np.sqrt(n_draws)
    np.testing.assert_array_less(np.abs(q_mean - sim.scores["q_expected"].to_numpy()), 4 * q_se + 1e-12)
    assert (tests["percentile_ci_low"] <= tests["expected_percentile"] + 1e-9).all()
    assert (tests["expected_percentile"] <= tests["percentile_ci_high"] + 1e-9).all()


def _count_distribution(m_c, se_c, m_r, se_r):
    """P(#{mu_r < mu_c} = k), k = 0..n, by quadrature over mu_c of the Poisson-binomial (scipy.integrate)."""
    n = len(m_r)

    def pb(x):
        p = sps.norm.cdf((x - m_r) / se_r)  # P(mu_r < x)
        dist = np.array([1.0])
        for pi in p:  # the Poisson-binomial by convolution, written independently of stats/noise.py
            dist = np.convolve(dist, [1 - pi, pi])
        return dist

    lo, hi = m_c - 9 * se_c, m_c + 9 * se_c
    return np.array([integrate.quad(lambda x, k=k: sps.norm.pdf(x, m_c, se_c) * pb(x)[k], lo, hi, limit=200,
                                    points=list(m_r[(m_r > lo) & (m_r < hi)]))[0] for k in range(n + 1)])


def test_p_q_le_tau_matches_independent_integration():
    """Two optimization tests, five references each: the law of q* = (C_1/5 + C_2/5)/2 by quadrature."""
    rng = np.random.default_rng(6)
    runs = _two_roles(rng, n_ref=5, n_cand=1, n_tests=2, n_repeats=3, sigma=0.25)
    model = fit_noise(runs, prior_df=np.inf)
    cells = model.cells.set_index(["test", "solution"])
    dists = []
    for t in ("t0", "t1"):
        refs = cells.loc[t].loc[[f"s{i}" for i in range(5)]]
        cand = cells.loc[(t, "s5")]
        dists.append(_count_distribution(cand["log_mean"], cand["se"], refs["log_mean"].to_numpy(),
                                         refs["se"].to_numpy()))
    for d in dists:
        assert d.sum() == pytest.approx(1.0, abs=1e-6)
    joint = np.outer(*dists)  # independent tests
    q_values = (np.arange(6)[:, None] / 5 + np.arange(6)[None, :] / 5) / 2
    n_draws = 40000
    for tau in (10, 30, 50, 70):
        exact = joint[q_values <= tau / 100 + 1e-12].sum()
        out = noise_aware_scores(model, tau=tau, n_draws=n_draws, seed=tau)
        p = float(out.scores["p_q_le_tau"].iloc[0])
        assert abs(p - exact) <= _binomial_band(exact, n_draws) + 1e-9, (tau, p, exact)
        assert float(out.scores["p_gate_se"].iloc[0]) == pytest.approx(np.sqrt(p * (1 - p) / n_draws))
    expected_q = (joint * q_values).sum()
    assert float(out.scores["q_expected"].iloc[0]) == pytest.approx(expected_q, abs=1e-6)


def test_no_noise_reduces_to_todays_point_values_with_ties():
    """Identical repeats: zero variance, so E[r_t], the interval and the gate are the point rule exactly."""
    rng = np.random.default_rng(7)
    rows = []
    for t in range(3):
        for s in range(7):
            d = 0.01 * rng.integers(1, 5)  # coarse grid: many ties
            rows += [{"problem": "p", "test": f"t{t}", "solution": f"s{s}", "repeat": r, "duration_s": d,
                      "status": "ok", "role": "candidate" if s >= 5 else "reference", "correct": True}
                     for r in range(3)]
    runs = normalize(pd.DataFrame(rows))
    model = fit_noise(runs)
    out = noise_aware_scores(model, tau=50, roles=None, n_draws=30)
    point = percentile_table(runs)
    merged = out.tests.merge(point[["test", "solution", "percentile"]], on=["test", "solution"])
    np.testing.assert_array_equal(merged["expected_percentile"], merged["percentile"])
    np.testing.assert_array_equal(merged["percentile_ci_low"], merged["percentile"])
    np.testing.assert_array_equal(merged["percentile_ci_high"], merged["percentile"])
    q = problem_scores(point.drop(columns="repeat", errors="ignore"), tau=50, by=["problem", "solution"])
    merged = out.scores.merge(q[["solution", "q", "g"]], on="solution")
    np.testing.assert_allclose(merged["q_expected"], merged["q"], atol=1e-12)
    np.testing.assert_array_equal(merged["p_gate"], merged["g"].astype(float))


def test_failed_cells_count_100_and_fail_the_gate():
    runs = pd.DataFrame({"problem": "p", "test": ["a"] * 6 + ["b"] * 6,
                         "solution": ["r1", "r1", "r2", "r2", "x", "x"] * 2, "repeat": [0, 1] * 6,
                         "duration_s": [1.0, 1.1, 2.0, 2.1, 0.5, 0.55, 1.0, 1.1, 2.0, 2.1, 9.0, 9.0],
                         "status": ["ok"] * 10 + ["timeout"] * 2,
                         "role": ["reference"] * 4 + ["candidate"] * 2 + ["reference"] * 4 + ["candidate"] * 2,
                         "correct": True})
    out = noise_aware_scores(fit_noise(runs), tau=60, n_draws=200)
    tests = out.tests.set_index("test")
    assert tests.loc["b", "expected_percentile"] == 100.0
    assert tests.loc["b", "percentile_ci_low"] == 100.0
    s = out.scores.iloc[0]
    assert s["hard_fail"] and s["p_gate"] == 0.0
    assert s["q_expected"] == pytest.approx((tests.loc["a", "expected_percentile"] + 100) / 200)


def test_single_executions_use_the_pooled_sd():
    rng = np.random.default_rng(8)
    runs = _two_roles(rng, n_ref=4, n_cand=1, n_tests=1, n_repeats=3)
    model = fit_noise(runs, prior_df=np.inf)
    execs = runs.loc[runs["role"] == "candidate"]
    out = expected_percentiles(model, executions=execs)
    assert len(out) == 3
    pool = model.cells.loc[model.cells["in_pool"]]
    st2 = float(model.tests["pooled_var"].iloc[0])
    for row in out.itertuples():
        y = np.log(row.duration_s)
        p_slower = sps.norm.cdf((y - pool["log_mean"]) / np.sqrt(st2 + pool["se"] ** 2))
        assert row.expected_percentile == pytest.approx(100 * p_slower.mean(), abs=1e-10)
        assert row.se == pytest.approx(np.sqrt(st2))


def test_results_do_not_depend_on_row_order():
    rng = np.random.default_rng(9)
    runs = _two_roles(rng, n_tests=3)
    a = noise_aware_scores(fit_noise(runs), tau=30, n_draws=300, seed=3)
    shuffled = runs.iloc[rng.permutation(len(runs))].reset_index(drop=True)
    b = noise_aware_scores(fit_noise(shuffled), tau=30, n_draws=300, seed=3)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    pd.testing.assert_frame_equal(a.tests.drop(columns=["repeat"], errors="ignore"),
                                  b.tests.drop(columns=["repeat"], errors="ignore"))
    pa = adaptive_plan(runs, tau=30, n_draws=300, seed=3)
    pb = adaptive_plan(shuffled, tau=30, n_draws=300, seed=3)
    pd.testing.assert_frame_equal(pa.units, pb.units)
    pd.testing.assert_frame_equal(pa.cells, pb.cells)


# --------------------------------------------------------------------------------------------
# Resampling from planted truth
# --------------------------------------------------------------------------------------------

def test_p_faster_is_uniform_at_a_true_tie_under_resampling():
    """Candidate and reference truly equal: P(faster) must be uniform over fresh repeats, so a
    'faster with probability > c' call happens a share 1 - c of the time."""
    rng = np.random.default_rng(10)
    R, T, S, nu0 = 300, 20, 12, 4.0
    mu = np.broadcast_to(rng.normal(0, 0.5, (1, T, S)), (R, T, S)).copy()
    mu[:, :, -1] = mu[:, :, 0]  # the candidate (last) ties with reference s0 in truth on every test
    sigma = _planted_sigma(rng, (R, T, S), 0.1, nu0)
    runs = _frame(mu, sigma, 3, rng, roles=["reference"] * (S - 1) + ["candidate"],
                  problem_names=[f"r{i:03d}" for i in range(R)])
    pairs = faster_probabilities(fit_noise(runs, prior_df=nu0))
    p = pairs.loc[pairs["reference"] == "s0", "p_faster"].to_numpy()
    assert len(p) == R * T
    for c in (0.5, 0.8, 0.9, 0.95, 0.99):
        for freq in (np.mean(p > c), np.mean(p < 1 - c)):
            assert abs(freq - (1 - c)) <= _binomial_band(1 - c, len(p)) + 0.005, (c, freq)
    assert sps.kstest(p, "uniform").statistic < 0.02


def _planted_campaign(seed, R=400, T=4, n_ref=7, n_repeats=3, sigma_t=0.12, nu0=4.0):
    """R resamples (problems) of one fixed truth: n_ref references and 3 candidates on T tests."""
    rng = np.random.default_rng(seed)
    S = n_ref + 3
    truth = rng.normal(0, 0.25, (1, T, S))
    mu = np.broadcast_to(truth, (R, T, S)).copy()
    sigma = np.broadcast_to(_planted_sigma(rng, (1, T, S), sigma_t, nu0), (R, T, S)).copy()
    runs = _frame(mu, sigma, n_repeats, rng, roles=["reference"] * n_ref + ["candidate"] * 3,
                  problem_names=[f"r{i:03d}" for i in range(R)])
    # the true r*_t and q* of each candidate (noise-free ranks among the references)
    true_r = 100 * (truth[0, :, :n_ref, None] < truth[0, :, None, n_ref:]).sum(axis=1) / n_ref  # (T, 3)
    true_q = true_r.mean(axis=0) / 100
    return runs, true_r, true_q


def test_intervals_cover_the_planted_truth_at_their_level():
    """Posterior intervals of r*_t and q* cover the planted truth at their level on average over cells.

    Not cell by cell: a cell whose truth sits in a cluster of near-ties with several references
    is covered less often (rank intervals are not exact confidence intervals; measured down to
    0.835 at level 0.9 over 400 resamples, docs/noise.md)."""
    R = 300
    runs, true_r, true_q = _planted_campaign(11, R=R)
    level = 0.9
    out = noise_aware_scores(fit_noise(runs), tau=30, level=level, n_draws=500, seed=0)
    tests = out.tests.copy()
    tests["truth"] = true_r[tests["test"].str[1:].astype(int), tests["solution"].str[1:].astype(int) - 7]
    covered = (tests["percentile_ci_low"] <= tests["truth"] + 1e-9) & (tests["truth"] <= tests["percentile_ci_high"] + 1e-9)
    rate = covered.groupby([tests["test"], tests["solution"]]).mean()
    assert covered.mean() >= level - _binomial_band(level, len(covered)), rate.to_dict()
    assert rate.min() >= 0.75, rate.to_dict()
    scores = out.scores.copy()
    scores["truth"] = true_q[scores["solution"].str[1:].astype(int) - 7]
    covered_q = (scores["q_ci_low"] <= scores["truth"] + 1e-9) & (scores["truth"] <= scores["q_ci_high"] + 1e-9)
    assert covered_q.mean() >= level - _binomial_band(level, len(covered_q))
    # and the intervals are not trivially wide: the percentile interval excludes 0 or 100 most of the time
    assert ((tests["percentile_ci_high"] - tests["percentile_ci_low"]) < 100).mean() > 0.95


@pytest.mark.parametrize("seed", [12, 13])
def test_gate_decisions_are_wrong_at_most_one_minus_c_of_the_time(seed):
    # seeds 12 and 13 put candidates on both sides of tau = 30 (true q* from 0.25 to 0.61)
    """Fresh repeats of a fixed truth: a unit whose true gate is closed is decided 'pass' at
    confidence c at most a share 1 - c of the time (and symmetrically for 'fail')."""
    runs, true_r, true_q = _planted_campaign(seed, R=300)
    c = 0.9
    out = noise_aware_scores(fit_noise(runs), tau=30, n_draws=1000, seed=1)
    s = out.scores.copy()
    s["true_g"] = true_q[s["solution"].str[1:].astype(int) - 7] <= 0.30 + 1e-12
    s["wrong"] = np.where(s["true_g"], s["p_gate"] <= 1 - c, s["p_gate"] >= c)
    rate = s.groupby("solution")["wrong"].mean()
    assert (rate <= (1 - c) + _binomial_band(1 - c, 300)).all(), rate.to_dict()


# --------------------------------------------------------------------------------------------
# The adaptive rule
# --------------------------------------------------------------------------------------------

def test_clear_units_are_decided_and_the_boundary_one_is_not():
    rng = np.random.default_rng(14)
    # references at 0..9 (log), candidates: far fastest, far slowest, and on top of reference 3 (q* ~ 0.3)
    mu = np.zeros((1, 2, 13))
    mu[0, :, :10] = np.arange(10.0)
    mu[0, :, 10], mu[0, :, 11], mu[0, :, 12] = -5.0, 20.0, 3.0
    runs = _frame(mu, np.full(mu.shape, 0.05), 3, rng, roles=["reference"] * 10 + ["candidate"] * 3,
                  problem_names=["p"])
    plan = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], n_draws=2000)
    decisions = dict(zip(plan.units["solution"], plan.units["decision"]))
    assert decisions == {"s10": "pass", "s11": "fail", "s12": "ambiguous"}
    proposed = set(plan.cells["solution"])
    assert "s12" in proposed and "s3" in proposed  # the boundary cell and the reference it sits on
    assert not proposed & {"s10", "s11"}
    assert plan.cells["priority"].is_monotonic_decreasing
    capped = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], max_repeats=3, n_draws=2000)
    assert capped.done and set(capped.at_max["solution"]) == proposed


def test_futility_marks_the_hand_worked_units():
    """c = 0.95, N = 5, n = 2: |Phi^-1(p)| sqrt(5/2) against Phi^-1(0.95) = 1.645, by hand:
    p = 0.6: 0.253 * 1.581 = 0.40 (futile); 0.85: 1.036 * 1.581 = 1.639 (futile, just);
    0.86: 1.080 * 1.581 = 1.708 (worth repeating); 0.1: 1.282 * 1.581 = 2.03 (worth repeating);
    0.02 is decided (fail) and stays so; a unit with n = 4 at p = 0.85: 1.036 * 1.118 = 1.16 (futile)."""
    from stats.noise import _futile

    units = pd.DataFrame({"problem": ["p"] * 6, "solution": ["a", "b", "c", "d", "e", "f"],
                          "p_gate": [0.6, 0.85, 0.86, 0.1, 0.02, 0.85],
                          "decision": ["ambiguous"] * 4 + ["fail", "ambiguous"]})
    tests = pd.DataFrame({"problem": ["p"] * 12, "test": ["t0", "t1"] * 6,
                          "solution": np.repeat(["a", "b", "c", "d", "e", "f"], 2),
                          "n_ok": [2] * 10 + [3, 5]})
    got = _futile(units, tests, confidence=0.95, max_repeats=5)
    assert got.tolist() == ["futile", "futile", "ambiguous", "ambiguous", "fail", "futile"]
    late = _futile(units, tests, confidence=0.95, max_repeats=5, min_n=3)  # only f has n >= 3 (mean of 3 and 5)
    assert late.tolist() == ["ambiguous", "ambiguous", "ambiguous", "ambiguous", "fail", "futile"]


def test_futility_stops_the_boundary_unit_only():
    rng = np.random.default_rng(14)
    mu = np.zeros((1, 2, 13))
    mu[0, :, :10] = np.arange(10.0)
    mu[0, :, 10], mu[0, :, 11], mu[0, :, 12] = -5.0, 20.0, 3.0
    runs = _frame(mu, np.full(mu.shape, 0.05), 3, rng, roles=["reference"] * 10 + ["candidate"] * 3,
                  problem_names=["p"])
    plain = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], max_repeats=4, n_draws=2000)
    stop = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], max_repeats=4, n_draws=2000,
                         futility_from=3)
    p12 = float(plain.units.set_index("solution").loc["s12", "p_gate"])
    reach = abs(sps.norm.ppf(p12)) * np.sqrt(4 / 3)  # independent of the implementation's ndtri
    assert reach < sps.norm.ppf(0.95)
    assert dict(zip(stop.units["solution"], stop.units["decision"])) == {"s10": "pass", "s11": "fail",
                                                                         "s12": "futile"}
    assert not plain.done and stop.done  # nothing proposed for a unit 4 repeats cannot decide
    late = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], max_repeats=4, n_draws=2000,
                         futility_from=4)  # 3 repeats so far: too early to stop it
    assert late.units.set_index("solution").loc["s12", "decision"] == "ambiguous" and not late.done
    far = adaptive_plan(runs, tau=30, confidence=0.95, roles=["candidate"], max_repeats=10**6, n_draws=2000,
                        futility_from=3)
    expect = "futile" if abs(sps.norm.ppf(p12)) * np.sqrt(10**6 / 3) < sps.norm.ppf(0.95) else "ambiguous"
    assert far.units.set_index("solution").loc["s12", "decision"] == expect


def test_rank_target_flags_only_unordered_cells():
    rng = np.random.default_rng(15)
    mu = np.zeros((1, 1, 5))
    mu[0, 0] = [0.0, 1.0, 2.0, 1.01, 3.5]  # s3 sits on s1; s4 is clear of everyone
    runs = _frame(mu, np.full(mu.shape, 0.05), 3, rng, roles=["reference"] * 3 + ["candidate"] * 2,
                  problem_names=["p"])
    plan = adaptive_plan(runs, tau=50, target="rank", roles=["candidate"], n_draws=200)
    assert set(plan.cells["solution"]) == {"s3", "s1"}


def test_an_adaptive_loop_on_planted_truth_stops_early_on_clear_cells_and_decides_correctly():
    """Drive the rule as a campaign would: start at 3 repeats, run one more repeat of each proposed
    cell from the planted truth, until done or at max_repeats."""
    rng = np.random.default_rng(16)
    n_ref, n_cand, T = 8, 6, 3
    truth = rng.normal(0, 0.3, (1, T, n_ref + n_cand))
    sigma = np.full(truth.shape, 0.08)
    roles = ["reference"] * n_ref + ["candidate"] * n_cand
    runs = _frame(truth, sigma, 3, rng, roles=roles, problem_names=["p"])
    max_repeats = 12
    for _ in range(max_repeats):
        plan = adaptive_plan(runs, tau=30, confidence=0.9, max_repeats=max_repeats, roles=["candidate"],
                             n_draws=1000, seed=0)
        if plan.done:
            break
        new = []
        for row in plan.cells.itertuples():
            t, s = int(row.test[1:]), int(row.solution[1:])
            y = truth[0, t, s] + sigma[0, t, s] * rng.standard_normal()
            new.append({"problem": "p", "test": row.test, "solution": row.solution, "repeat": row.n_runs,
                        "duration_s": float(np.exp(y)), "status": "ok", "role": roles[s], "correct": True})
        runs = pd.concat([runs, pd.DataFrame(new)], ignore_index=True)
    assert plan.done
    counts = runs.groupby("solution").size() / T
    true_r = 100 * (truth[0, :, :n_ref, None] < truth[0, :, None, n_ref:]).sum(axis=1) / n_ref
    true_q = true_r.mean(axis=0) / 100
    final = plan.units.set_index("solution")
    for k, name in enumerate(f"s{n_ref + i}" for i in range(n_cand)):
        if final.loc[name, "decision"] in ("pass", "fail"):
            assert (final.loc[name, "decision"] == "pass") == (true_q[k] <= 0.3 + 1e-12), name
    decided_first = final["decision"].isin(["pass", "fail"])
    # clear candidates kept their 3 repeats; more was spent only where it was needed
    clear = [f"s{n_ref + k}" for k in range(n_cand) if abs(true_q[k] - 0.3) > 0.2]
    assert all(counts[name] == 3 for name in clear)
    assert runs.shape[0] < (n_ref + n_cand) * T * max_repeats
    assert decided_first.any()


# --------------------------------------------------------------------------------------------
# Scoring subsets, p_tau, and the noise-aware reward
# --------------------------------------------------------------------------------------------

def test_cells_subset_keeps_only_those_cells_and_their_status():
    rng = np.random.default_rng(17)
    runs = _two_roles(rng, n_tests=3)
    model = fit_noise(runs)
    full = expected_percentiles(model)
    subset = full.loc[full["test"] != "t2", ["problem", "test", "solution"]].copy()
    subset["status"] = np.where((subset["test"] == "t1") & (subset["solution"] == "s6"), "timeout", "ok")
    part = expected_percentiles(model, cells=subset)
    assert len(part) == len(subset) and set(part["test"]) == {"t0", "t1"}
    merged = part.merge(full, on=["problem", "test", "solution"], suffixes=("", "_full"))
    limited = (merged["test"] == "t1") & (merged["solution"] == "s6")
    assert (merged.loc[limited, "expected_percentile"] == 100.0).all()
    np.testing.assert_array_equal(merged.loc[~limited, "expected_percentile"],
                                  merged.loc[~limited, "expected_percentile_full"])
    closed = noise_aware_scores(model, cells=subset, n_draws=0)
    gate = closed.scores.set_index("solution")["p_gate"]
    assert gate.loc["s6"] == 0.0 and gate.drop("s6").isna().all()  # a failure is certain; the rest needs draws
    assert closed.tests["percentile_ci_low"].isna().sum() > 0
    e = part.loc[part["solution"] == "s7", "expected_percentile"].mean() / 100
    assert closed.scores.set_index("solution").loc["s7", "q_expected"] == pytest.approx(e)


def test_noise_aware_p_tau_equals_linearity_at_k1_and_a_direct_loop_at_k2():
    rng = np.random.default_rng(18)
    mu = rng.normal(0, 0.3, (4, 3, 9))
    runs = _frame(mu, np.full(mu.shape, 0.1), 3, rng, roles=["reference"] * 5 + ["candidate"] * 4,
                  problem_names=["a", "b", "c", "d"])
    out = noise_aware_scores(fit_noise(runs), tau=30, n_draws=400, seed=2, keep_draws=True)
    samples = out.scores.assign(c=[True, True, False, True] * 4)
    table = noise_aware_p_tau(samples, out.draws, taus=(100, 30), k=1).set_index("tau")
    # k = 1: E[p_30] = mean over problems of mean over samples of c * P(q* <= 0.3) (the same draws)
    per = samples.assign(x=samples["c"] * samples["p_q_le_tau"]).groupby("problem")["x"].mean()
    assert table.loc[30.0, "expected"] == pytest.approx(100 * per.mean(), abs=1e-9)
    assert table.loc[100.0, "expected"] == pytest.approx(75.0)
    assert table.loc[100.0, "noise_ci_low"] == table.loc[100.0, "noise_ci_high"] == 75.0
    k2 = noise_aware_p_tau(samples, out.draws, taus=(30,), k=2).iloc[0]
    direct = []
    for s in range(out.draws.shape[0]):
        vals = []
        for _, block in samples.assign(q=out.draws[s]).groupby("problem"):
            n, m = len(block), int((block["c"] & (block["q"] <= 0.3 + 1e-11)).sum())
            vals.append(1 - (n - m) * (n - m - 1) / (n * (n - 1)))
        direct.append(100 * np.mean(vals))
    assert k2["expected"] == pytest.approx(np.mean(direct), abs=1e-9)
    assert k2["noise_ci_low"] == pytest.approx(np.quantile(direct, 0.025))


def test_noise_aware_reward_pays_one_minus_expected_q():
    from stats.rewards import Environment, apply_environment, environment_rewards, reward

    assert reward([1, 1, 0], [0, 1, 1], [0.25, np.nan, 0.1], scheme="noise_aware").tolist() == [0.75, 0.0, -1.0]
    rng = np.random.default_rng(19)
    runs = _two_roles(rng, n_tests=3)
    runs["test_kind"] = "optimization"
    env = Environment.from_dict({"name": "na", "post": {"tau": 30}, "reward": {"scheme": "noise_aware"}})
    model = fit_noise(runs)
    # collapsed cells: E[q] of the model's cells
    out = apply_environment(runs, env, per_repeat=False, roles=("candidate",))
    ref = noise_aware_scores(model, n_draws=0).scores
    merged = out.scores.merge(ref, on=["problem", "solution"])
    np.testing.assert_allclose(merged["q_expected_x"], merged["q_expected_y"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(environment_rewards(out.scores, env.reward), 1 - out.scores["q_expected"])
    # per repeat: each execution scored alone against the pool
    per = apply_environment(runs, env, per_repeat=True, roles=("candidate",))
    single = expected_percentiles(model, executions=runs.loc[runs["role"] == "candidate"])
    q = single.groupby(["solution", "repeat"])["expected_percentile"].mean() / 100
    got = per.scores.set_index(["solution", "repeat"])["q_expected"]
    np.testing.assert_allclose(got.loc[q.index], q, atol=1e-12)
    # a limit turns executions into timeouts: percentile 100 in E[q] too
    lim = Environment.from_dict({"name": "lim", "limit": {"seconds": 1e-9}, "post": {"tau": 30},
                                 "reward": {"scheme": "noise_aware"}})
    limited = apply_environment(runs, lim, per_repeat=True, roles=("candidate",))
    assert (limited.scores["q_expected"] == 1.0).all()


@pytest.mark.parametrize("by_language", [None, False])
def test_per_language_pools_as_stats_ranking(by_language):
    """Zero noise: E[r_t] equals stats.ranking's percentile with its per-language pools (or one pool)."""
    rng = np.random.default_rng(20)
    rows = []
    for p, langs in (("mixed", ["python", "cpp"]), ("plain", ["python"])):
        for t in range(2):
            for s in range(8):
                lang = langs[s % len(langs)]
                d = 0.01 * rng.integers(1, 9) * (10 if lang == "python" else 1)
                rows += [{"problem": p, "test": f"t{t}", "solution": f"s{s}", "repeat": r, "duration_s": d,
                          "status": "ok", "language": lang, "correct": True,
                          "role": "candidate" if s >= 6 else "reference"} for r in range(2)]
    runs = normalize(pd.DataFrame(rows))
    model = fit_noise(runs, by_language=by_language)
    assert (model.cells.loc[model.cells["problem"] == "plain", "pool_language"] == "").all()
    assert (model.cells.loc[model.cells["problem"] == "mixed", "pool_language"] != "").all() == (by_language is None)
    out = expected_percentiles(model, roles=None)
    from stats.ranking import reference_pools, test_percentiles
    cells = percentile_table(runs, pools=reference_pools(runs, by_language=by_language))
    merged = out.merge(cells[["problem", "test", "solution", "percentile"]], on=["problem", "test", "solution"])
    assert len(merged) == len(out) == 32
    np.testing.assert_array_equal(merged["expected_percentile"], merged["percentile"])
    execs = runs.loc[runs["role"] == "candidate"]
    single = expected_percentiles(model, executions=execs)
    point = test_percentiles(single.assign(duration_s=single["duration_s"]),
                             reference_pools(runs, by_language=by_language))
    np.testing.assert_array_equal(single["expected_percentile"], point)
