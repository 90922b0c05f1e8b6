"""stats.reliability: checked against independent computations and planted truth."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import statsmodels.formula.api as smf
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from audits.corpus.synthetic import synthesize
from stats.ranking import select_runs
from stats.reliability import (
    grouped_icc,
    icc,
    pairwise_significance,
    per_repeat_scores,
    rank_drift,
    repeat_cv,
    repeats_for_precision,
    repeats_for_reliability,
    summarize_repeat_cv,
    variance_components,
)


def _refs(frame: pd.DataFrame) -> pd.DataFrame:
    mask = (frame["role"] == "reference") & frame["correct"] & (frame["test_kind"] == "optimization")
    return frame.loc[mask.to_numpy()]


@pytest.fixture(scope="module")
def quiet_run():
    return select_runs(synthesize(n_problems=20, seed=11).corpus, environment="quiet", campaign="c0")


# ----------------------------------------------------------------------------- repeat CV


def test_repeat_cv_matches_pandas_groupby():
    rng = np.random.default_rng(0)
    n = 400
    runs = pd.DataFrame({
        "problem": rng.choice(["p1", "p2", "p3"], n), "test": rng.choice(["a", "b"], n),
        "solution": rng.choice(["x", "y", "z", "w"], n), "duration_s": rng.lognormal(-2, 0.5, n),
        "status": rng.choice(["ok", "ok", "ok", "timeout"], n)})
    got = repeat_cv(runs).set_index(["problem", "test", "solution"]).sort_index()
    ok = runs[runs["status"] == "ok"]
    g = ok.groupby(["problem", "test", "solution"])["duration_s"]
    expected = (g.std(ddof=1) / g.mean()).sort_index()
    np.testing.assert_allclose(got.loc[expected.index, "cv"].to_numpy(), expected.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(got.loc[expected.index, "sd_ms"].to_numpy(), 1000 * g.std(ddof=1).sort_index(),
                               rtol=1e-12)
    assert (got["n_runs"].sum(), got["n_ok"].sum()) == (n, len(ok))


def test_repeat_cv_recovers_planted_noise():
    synth = synthesize(n_problems=30, seed=5)
    cells = repeat_cv(_refs(synth.corpus))
    summary = summarize_repeat_cv(cells, n_boot=200)
    truth = synth.truth["noise"]
    assert summary["median_repeat_cv"].estimate == pytest.approx(truth["median_cell_cv"], rel=0.10)
    assert summary["median_abs_sd_ms"].estimate == pytest.approx(truth["median_cell_sd_ms"], rel=0.15)
    ci = summary["median_repeat_cv"]
    assert ci.low <= ci.estimate <= ci.high and ci.n == 30


def test_repeat_cv_single_repeat_and_constant_cells_are_defined():
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "b", "c", "c"],
                         "duration_s": [1.0, 2.0, 2.0, 3.0, 4.0], "status": ["ok", "ok", "ok", "ok", "timeout"]})
    cv = repeat_cv(runs).set_index("solution")
    assert math.isnan(cv.loc["a", "cv"]) and cv.loc["b", "cv"] == 0.0 and math.isnan(cv.loc["c", "cv"])
    assert cv.loc["c", "n_ok"] == 1 and cv.loc["c", "n_runs"] == 2


# ----------------------------------------------------------------------------- rank drift


def test_per_repeat_scores_against_a_hand_worked_pool():
    # Pool of test t = medians over repeats: a -> 1.0, b -> 3.0, c -> 5.0.
    runs = pd.DataFrame({
        "problem": "p", "test": "t", "solution": np.repeat(["a", "b", "c"], 2), "repeat": [0, 1] * 3,
        "duration_s": [0.5, 1.5, 4.0, 2.0, 5.0, 5.0], "status": "ok", "role": "reference", "correct": True,
        "test_kind": "optimization"})
    s = per_repeat_scores(runs).set_index(["solution", "repeat"])["q"]
    # a, repeat 0: 0.5 vs {3, 5} -> 0; repeat 1: 1.5 vs {3, 5} -> 0.
    # b, repeat 0: 4.0 vs {1, 5} -> 1/2; repeat 1: 2.0 vs {1, 5} -> 1/2.
    # c, repeat 0/1: 5.0 vs {1, 3} -> 1.
    assert s.to_dict() == {("a", 0): 0.0, ("a", 1): 0.0, ("b", 0): 0.5, ("b", 1): 0.5, ("c", 0): 1.0, ("c", 1): 1.0}


def test_rank_drift_matches_brute_force():
    rng = np.random.default_rng(3)
    scores = pd.DataFrame({"problem": np.repeat([f"p{i}" for i in range(6)], 20),
                           "solution": np.tile(np.repeat([f"s{j}" for j in range(4)], 5), 6),
                           "repeat": np.tile(np.arange(5), 24), "q": rng.random(120)})
    drift = rank_drift(scores, n_boot=100)
    per = drift.per_solution.set_index(["problem", "solution"])
    g = (100 * scores["q"]).groupby([scores["problem"], scores["solution"]])
    np.testing.assert_allclose(per.loc[g.max().index, "range"], g.max() - g.min(), rtol=1e-12)
    np.testing.assert_allclose(per.loc[g.std().index, "sd"], g.std(ddof=1), rtol=1e-12)
    assert drift.mean_range.estimate == pytest.approx((g.max() - g.min()).mean())
    assert drift.worst_range == pytest.approx((g.max() - g.min()).max())


def test_rank_drift_is_zero_without_noise():
    run = select_runs(synthesize(n_problems=8, noise_cv=0.0, noise_add_s=0.0, seed=2).corpus, environment="quiet")
    drift = rank_drift(per_repeat_scores(run), n_boot=50)
    assert drift.mean_range.estimate == 0.0 and drift.worst_range == 0.0 and drift.mean_sd.estimate == 0.0


def test_rank_drift_grows_with_noise():
    synth = synthesize(n_problems=15, busy=True, seed=4)
    q = rank_drift(per_repeat_scores(select_runs(synth.corpus, environment="quiet")), n_boot=50)
    b = rank_drift(per_repeat_scores(select_runs(synth.corpus, environment="busy")), n_boot=50)
    assert b.mean_sd.low > q.mean_sd.high


# ----------------------------------------------------------------------------- ICC


def test_icc_equals_pingouin_on_balanced_data():
    rng = np.random.default_rng(7)
    frames = []
    for g, (n, k) in enumerate([(8, 3), (5, 4), (12, 2)]):
        truth = rng.normal(0, 1, n)
        rater = rng.normal(0, 0.3, k)
        y = truth[:, None] + rater[None, :] + rng.normal(0, 0.5, (n, k))
        frames.append(pd.DataFrame({"g": g, "s": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n),
                                    "y": y.ravel()}))
    data = pd.concat(frames, ignore_index=True)
    got = grouped_icc(data, targets="s", raters="r", ratings="y", groups=["g"]).set_index("g")
    names = ["ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"]
    for g, part in data.groupby("g"):
        ref = pg.intraclass_corr(part, targets="s", raters="r", ratings="y")
        np.testing.assert_allclose(got.loc[g, names].to_numpy(dtype=float), ref["ICC"].to_numpy(), atol=1e-9)
    one = icc(frames[0], targets="s", raters="r", ratings="y")
    ref = pg.intraclass_corr(frames[0], targets="s", raters="r", ratings="y")
    np.testing.assert_allclose(one["ICC"], ref["ICC"], atol=1e-9)
    np.testing.assert_allclose(one["F"], ref["F"], rtol=1e-9)
    np.testing.assert_allclose(one["pval"], ref["pval"], rtol=1e-7)


def test_icc_drops_incomplete_targets_like_pingouin():
    rng = np.random.default_rng(8)
    data = pd.DataFrame({"s": np.repeat(np.arange(6), 3), "r": np.tile(np.arange(3), 6), "y": rng.normal(size=18)})
    data = data.drop(index=[4])  # target 1 misses rater 1
    ref = pg.intraclass_corr(data, targets="s", raters="r", ratings="y", nan_policy="omit")
    got = icc(data, targets="s", raters="r", ratings="y")
    np.testing.assert_allclose(got["ICC"], ref["ICC"], atol=1e-9)


def test_icc_degenerate_tables_are_nan():
    const = pd.DataFrame({"s": np.repeat([0, 1, 2], 2), "r": [0, 1] * 3, "y": 1.0})
    assert np.isnan(icc(const, targets="s", raters="r", ratings="y")["ICC"]).all()
    single = pd.DataFrame({"s": [0, 1, 2], "r": 0, "y": [1.0, 2.0, 3.0]})
    assert np.isnan(icc(single, targets="s", raters="r", ratings="y")["ICC"]).all()
    # Constant across repeats but different between targets: perfect agreement.
    stable = pd.DataFrame({"s": np.repeat([0, 1, 2], 2), "r": [0, 1] * 3, "y": np.repeat([1.0, 2.0, 3.0], 2)})
    assert np.allclose(icc(stable, targets="s", raters="r", ratings="y")["ICC"], 1.0)


# ----------------------------------------------------------------------------- variance components


def _nested_design(rng, P, T, S, C, R, sd):
    idx = np.indices((P, T, S, C, R)).reshape(5, -1)
    p, t, s, c, r = idx
    y = (rng.normal(0, sd["problem"], P)[p] + rng.normal(0, sd["test"], (P, T))[p, t]
         + rng.normal(0, sd["solution"], (P, S))[p, s] + rng.normal(0, sd["test:solution"], (P, T, S))[p, t, s]
         + rng.normal(0, sd["campaign"], (P, T, S, C))[p, t, s, c] + rng.normal(0, sd["repeat"], p.size))
    return pd.DataFrame({"problem": p.astype(str), "test": t.astype(str), "solution": s.astype(str),
                         "campaign": c.astype(str), "repeat": r, "duration_s": np.exp(y - 2), "status": "ok"})


@pytest.mark.parametrize("campaigns", [1, 2])
def test_variance_components_agree_with_statsmodels_mixedlm(campaigns):
    # Balanced designs: the ANOVA (method-of-moments) estimators equal REML whenever no component is
    # truncated at 0, so the two differ only by MixedLM's optimiser tolerance (~1e-4 relative here).
    rng = np.random.default_rng(1 if campaigns == 1 else 3)
    sd = {"problem": 1.0, "test": 0.6, "solution": 0.4, "test:solution": 0.2,
          "campaign": 0.0 if campaigns == 1 else 0.2, "repeat": 0.1}
    data = _nested_design(rng, 10 if campaigns == 1 else 8, 4 if campaigns == 1 else 3, 5 if campaigns == 1 else 4,
                          campaigns, 3 if campaigns == 1 else 2, sd)
    vc = variance_components(data)
    data["y"] = np.log(data["duration_s"])
    data["ts"] = data["test"] + "_" + data["solution"]
    formula = {"test": "0 + C(test)", "solution": "0 + C(solution)", "ts": "0 + C(ts)"}
    if campaigns > 1:
        data["cc"] = data["ts"] + "_" + data["campaign"]
        formula["cc"] = "0 + C(cc)"
    model = smf.mixedlm("y ~ 1", data, groups="problem", re_formula="1", vc_formula=formula)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = model.fit(reml=True, method="lbfgs")
    mixed = dict(zip(model.exog_vc.names, fit.vcomp))
    assert vc.variance("problem") == pytest.approx(fit.cov_re.iloc[0, 0], rel=2e-3)
    assert vc.variance("test") == pytest.approx(mixed["test"], rel=2e-3)
    assert vc.variance("solution") == pytest.approx(mixed["solution"], rel=2e-3)
    assert vc.variance("test:solution") == pytest.approx(mixed["ts"], rel=2e-3)
    assert vc.variance("repeat") == pytest.approx(fit.scale, rel=2e-3)
    if campaigns == 1:
        assert math.isnan(vc.variance("campaign"))
    else:
        assert vc.variance("campaign") == pytest.approx(mixed["cc"], rel=2e-3)


def test_variance_components_recover_planted_shares():
    rng = np.random.default_rng(2)
    sd = {"problem": 0.8, "test": 0.6, "solution": 0.5, "test:solution": 0.3, "campaign": 0.2, "repeat": 0.25}
    data = _nested_design(rng, 150, 6, 8, 2, 3, sd)
    vc = variance_components(data)
    planted = {k: v**2 for k, v in sd.items()}
    total = sum(planted.values())
    for component, var in planted.items():
        assert vc.share(component) == pytest.approx(var / total, abs=0.03), component
    # Repeats: unbiased, thousands of df -> tight.
    assert vc.variance("repeat") == pytest.approx(planted["repeat"], rel=0.03)


def test_variance_components_of_a_synthetic_corpus_find_the_planted_repeat_noise():
    synth = synthesize(n_problems=20, noise_add_s=0.0, noise_cv=0.05, seed=9)
    vc = variance_components(_refs(synth.corpus))
    # log(1 + e), e ~ N(0, 0.05): variance ~ 0.05^2 (delta method).
    assert vc.variance("repeat") == pytest.approx(0.05**2, rel=0.08)


def test_repeats_for_reliability_is_spearman_brown():
    rng = np.random.default_rng(4)
    sd = {"problem": 0.5, "test": 0.5, "solution": 0.1, "test:solution": 0.1, "campaign": 0.0, "repeat": 0.4}
    vc = variance_components(_nested_design(rng, 60, 5, 6, 1, 3, sd))
    T = vc.mean_tests
    sig = vc.variance("solution") + vc.variance("test:solution") / T
    err = vc.variance("repeat") / T
    r1 = sig / (sig + err)
    n = repeats_for_reliability(vc, target=0.9)

    def spearman_brown(k):
        return k * r1 / (1 + (k - 1) * r1)

    assert spearman_brown(n) >= 0.9 - 1e-12
    assert n == 1 or spearman_brown(n - 1) < 0.9


def test_repeats_for_precision_is_the_smallest_n():
    z = sps.norm.ppf(0.975)
    for cv, w in [(0.082, 0.05), (0.3, 0.1), (0.01, 0.05)]:
        n = repeats_for_precision(cv, width=w)
        assert 2 * z * cv / math.sqrt(n) <= w + 1e-12
        assert n == 1 or 2 * z * cv / math.sqrt(n - 1) > w
    assert math.isnan(repeats_for_precision(math.nan))
    with pytest.raises(ValueError, match="width"):
        repeats_for_precision(0.1, width=0)


# ----------------------------------------------------------------------------- significance


def test_pairwise_significance_matches_scipy_and_statsmodels():
    rng = np.random.default_rng(5)
    P, S, R = 4, 5, 6
    q = rng.random((P, S, 1)) * 0.5 + rng.normal(0, 0.1, (P, S, R))
    scores = pd.DataFrame({"problem": np.repeat([f"p{i}" for i in range(P)], S * R),
                           "solution": np.tile(np.repeat([f"s{j}" for j in range(S)], R), P),
                           "repeat": np.tile(np.arange(R), P * S), "q": q.ravel()})
    res = pairwise_significance(scores, n_boot=50)
    assert res.n_tested == P * S * (S - 1) // 2
    grouped = {k: v.to_numpy() for k, v in scores.groupby(["problem", "solution"])["q"]}
    expected = []
    for row in res.pairs.itertuples():
        x, y = grouped[(row.problem, row.faster)], grouped[(row.problem, row.slower)]
        assert np.median(x) < np.median(y)
        expected.append(sps.mannwhitneyu(x, y, alternative="less", method="exact").pvalue)
    np.testing.assert_allclose(res.pairs["pvalue"], expected, rtol=1e-12)
    np.testing.assert_allclose(res.pairs["qvalue"], multipletests(expected, method="fdr_bh")[1], rtol=1e-12)
    assert res.share.estimate == pytest.approx(np.mean(multipletests(expected, alpha=0.05, method="fdr_bh")[0]))


def test_pairwise_significance_separates_quiet_from_busy_and_caps_pairs():
    synth = synthesize(n_problems=12, busy=True, seed=6)
    quiet = pairwise_significance(per_repeat_scores(select_runs(synth.corpus, environment="quiet")), n_boot=50)
    busy = pairwise_significance(per_repeat_scores(select_runs(synth.corpus, environment="busy")), n_boot=50)
    assert quiet.share.estimate > 0.8 and busy.share.estimate < quiet.share.low
    capped = pairwise_significance(per_repeat_scores(select_runs(synth.corpus, environment="quiet")), max_pairs=100,
                                   n_boot=50)
    assert capped.n_tested <= 100 and capped.n_pairs == pytest.approx(quiet.n_pairs, rel=0.15)


def test_pairwise_significance_needs_two_repeats():
    scores = pd.DataFrame({"problem": "p", "solution": ["a", "b", "c"], "repeat": 0, "q": [0.1, 0.5, 0.9]})
    res = pairwise_significance(scores, n_boot=10)
    assert res.n_tested == 0 and math.isnan(res.share.estimate)


# ----------------------------------------------------------------------------- edge cases


@pytest.mark.parametrize("case", ["one_repeat", "constant", "all_failures", "one_reference", "one_opt_test"])
def test_edge_cases_give_defined_answers(case):
    spec = dict(n_problems=3, n_tests=4, n_solutions=5, n_incorrect=0, n_candidates=0, n_repeats=3, seed=1)
    if case == "one_repeat":
        spec["n_repeats"] = 1
    if case == "one_reference":
        spec["n_solutions"] = 1
    if case == "one_opt_test":
        spec["n_tests"] = 1
    run = select_runs(synthesize(**spec).corpus, environment="quiet")
    run = run.loc[(run["role"] != "floor").to_numpy()].copy()
    if case == "constant":
        run["duration_s"] = 0.25
    if case == "all_failures":
        run["status"] = pd.Categorical(np.full(len(run), "runtime_error"), categories=run["status"].cat.categories)
    refs = _refs(run)
    cells = repeat_cv(refs)
    scores = per_repeat_scores(run)
    drift = rank_drift(scores, n_boot=20)
    vc = variance_components(refs)
    sig = pairwise_significance(scores, n_boot=20)
    logs = refs.assign(y=np.log(refs["duration_s"]))
    table = grouped_icc(logs, targets="solution", raters="repeat", ratings="y", groups=["problem", "test"])
    if case == "one_repeat":
        assert cells["cv"].isna().all() and drift.worst_range == 0.0 and math.isnan(vc.variance("repeat"))
        assert table["ICC2"].isna().all() and sig.n_tested == 0
    elif case == "constant":
        assert (cells["cv"] == 0).all() and drift.worst_range == 0.0 and table["ICC2"].isna().all()
        assert vc.variance("repeat") == 0.0 and repeats_for_reliability(vc) == 1.0
    elif case == "all_failures":
        # Every execution failed: percentile 100 everywhere (DESIGN), so q = 1 in every repeat, nothing
        # drifts, every pair ties (no "faster" pair to test), and no ok row feeds the variance components.
        assert cells["cv"].isna().all() and len(vc.table) == 6 and vc.n_problems == 0
        assert (scores["q"] == 1.0).all() and drift.worst_range == 0.0
        assert sig.n_tested == 0 and math.isnan(sig.share.estimate)
    elif case == "one_reference":
        # A lone reference has no pool (leave-self-out): q undefined, nothing drifts, no pairs.
        assert scores["q"].isna().all() and len(drift.per_solution) == 0 and sig.n_tested == 0
        assert math.isnan(vc.variance("solution"))
    elif case == "one_opt_test":
        assert np.isfinite(cells["cv"]).all() and math.isnan(vc.variance("test"))
        assert np.isfinite(vc.variance("solution"))
