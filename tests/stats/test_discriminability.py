"""stats.discriminability: checked against numpy/scipy/pandas and planted truth."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from audits.corpus.synthetic import synthesize
from stats.discriminability import (
    grouped_quantile,
    near_floor,
    noise_aware_robust_cv,
    robust_cv,
    sandbox_floor,
    strong_weak_gap,
    test_discrimination as discrimination_per_test,  # renamed: pytest would collect a test_* import
    test_table as table_of_tests,
)
from stats.ranking import reference_pools, select_runs
from stats.reliability import grouped_icc, per_repeat_scores


def _run(synth, env="quiet"):
    run = select_runs(synth.corpus, environment=env, campaign="c0")
    return run.loc[(run["role"] != "floor").to_numpy()]


@pytest.mark.parametrize("q", [0.0, 0.25, 0.5, 0.75, 1.0])
def test_grouped_quantile_matches_numpy(q):
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 7, 300)
    values = rng.normal(size=300)
    got = grouped_quantile(codes, values, 8, q)
    for g in range(7):
        assert got[g] == pytest.approx(np.quantile(values[codes == g], q), rel=1e-12)
    assert math.isnan(got[7])


def test_test_table_medians_equal_the_reference_pool_medians():
    synth = synthesize(n_problems=5, seed=3)
    run = _run(synth)
    tests = table_of_tests(run).set_index(["problem", "test"])
    pools = reference_pools(run)
    opt = pools["test"].astype(str).str.startswith("opt")
    expected = pools.loc[opt].groupby(["problem", "test"], observed=True)["duration_s"].median()
    np.testing.assert_allclose(tests.loc[expected.index, "median_s"], expected, rtol=1e-12)
    assert len(tests) == 5 * 8  # optimization tests only
    reused = table_of_tests(run, pools=pools).set_index(["problem", "test"])
    pd.testing.assert_frame_equal(reused, tests)


def test_robust_cv_matches_numpy_and_scipy():
    rng = np.random.default_rng(1)
    tests = pd.DataFrame({"problem": np.repeat(["a", "b", "c"], [5, 8, 1]), "median_s": rng.lognormal(0, 1, 14)})
    iqr = robust_cv(tests).set_index("problem")
    mad = robust_cv(tests, method="mad").set_index("problem")
    for p, part in tests.groupby("problem"):
        x = part["median_s"].to_numpy()
        if len(x) < 2:
            assert math.isnan(iqr.loc[p, "robust_cv"]) and not iqr.loc[p, "filterable"]
            continue
        assert iqr.loc[p, "robust_cv"] == pytest.approx(sps.iqr(x) / np.median(x), rel=1e-12)
        assert mad.loc[p, "robust_cv"] == pytest.approx(2 * sps.median_abs_deviation(x) / np.median(x), rel=1e-12)
        assert iqr.loc[p, "filterable"] == (sps.iqr(x) / np.median(x) >= 0.3)
    with pytest.raises(ValueError, match="method"):
        robust_cv(tests, method="sd")


def test_robust_cv_recovers_the_planted_spans():
    synth = synthesize(n_problems=40, seed=4)
    got = robust_cv(table_of_tests(_run(synth)))
    truth = synth.problems.assign(problem=synth.problems["problem"].astype(str))
    merged = got.assign(problem=got["problem"].astype(str)).merge(truth, on="problem")
    wide = merged["true_robust_cv"] >= 0.3
    # Wide spans are recovered to 10 %; narrow ones (span <= 1.3) sit at the 5 % repeat-noise level.
    np.testing.assert_allclose(merged.loc[wide, "robust_cv"], merged.loc[wide, "true_robust_cv"], rtol=0.1)
    np.testing.assert_allclose(merged.loc[~wide, "robust_cv"], merged.loc[~wide, "true_robust_cv"], atol=0.05)
    assert (merged["filterable_x"] == merged["filterable_y"]).mean() >= 0.95


def test_noise_aware_keeps_noise_free_spread_and_removes_pure_noise():
    clean = table_of_tests(_run(synthesize(n_problems=10, noise_cv=0.0, noise_add_s=0.0, seed=5)))
    na = noise_aware_robust_cv(clean)
    np.testing.assert_allclose(na["noise_aware_robust_cv"], na["robust_cv"], rtol=1e-12)
    # Every test has the same workload (span 1): all across-test spread is repeat noise.
    flat = _run(synthesize(n_problems=10, filterable_share=0.0, narrow_span=(1.0, 1.0), noise_cv=0.3,
                           n_solutions=3, n_repeats=3, seed=6))
    na = noise_aware_robust_cv(table_of_tests(flat))
    assert (na["robust_cv"] > 0).all()
    assert na["noise_aware_robust_cv"].median() < 0.25 * na["robust_cv"].median()


def test_noise_aware_share_matches_a_hand_computation():
    tests = pd.DataFrame({"problem": "p", "median_s": np.exp([0.0, 0.5, 1.0, 1.5, 2.0]),
                          "log_noise_var": [0.1, 0.1, 0.2, 0.2, 0.15]})
    na = noise_aware_robust_cv(tests).iloc[0]
    s2 = (np.subtract(*np.quantile([0.0, 0.5, 1.0, 1.5, 2.0], [0.75, 0.25])) / sps.norm.ppf(0.75) / 2) ** 2
    assert na["noise_share"] == pytest.approx(0.15 / s2, rel=1e-9)
    assert na["noise_aware_robust_cv"] == pytest.approx(na["robust_cv"] * math.sqrt(1 - 0.15 / s2), rel=1e-9)


def test_sandbox_floor_and_near_floor_against_brute_force():
    synth = synthesize(n_problems=8, busy=True, seed=7)
    floors = sandbox_floor(synth.corpus).set_index(["environment", "campaign"])
    rows = synth.corpus[synth.corpus["role"] == "floor"]
    expected = rows.groupby(["environment", "campaign"], observed=True)["duration_s"].median()
    np.testing.assert_allclose(floors.loc[expected.index, "floor_s"], expected, rtol=1e-12)
    tests = table_of_tests(_run(synth))
    floor = float(expected.loc[("quiet", "c0")])
    got = near_floor(tests, floor).set_index("problem")
    brute = (tests["median_s"] <= 2 * floor).groupby(tests["problem"], observed=True).mean()
    np.testing.assert_allclose(got.loc[brute.index, "near_floor_share"], brute, rtol=1e-12)
    assert near_floor(tests, None)["near_floor_share"].isna().all()


def _gap_brute_force(scores: pd.DataFrame, quantile: float = 0.25) -> pd.Series:
    repeats = np.sort(scores["repeat"].unique())
    rank_reps = set(repeats[0::2])
    out = {}
    for p, part in scores.groupby("problem"):
        r = part[part["repeat"].isin(rank_reps)].groupby("solution")["q"].mean()
        s = part[~part["repeat"].isin(rank_reps)].groupby("solution")["q"].mean()
        order = r.sort_values(kind="stable").index
        k = max(1, int(np.floor(quantile * len(order))))
        out[p] = 100 * (s[order[-k:]].mean() - s[order[:k]].mean())
    return pd.Series(out)


def test_strong_weak_gap_matches_brute_force():
    rng = np.random.default_rng(8)
    P, S, R = 5, 9, 4
    q = rng.random((P, S, 1)) + rng.normal(0, 0.2, (P, S, R))
    scores = pd.DataFrame({"problem": np.repeat([f"p{i}" for i in range(P)], S * R),
                           "solution": np.tile(np.repeat([f"s{j}" for j in range(S)], R), P),
                           "repeat": np.tile(np.arange(R), P * S), "q": q.ravel()})
    gap = strong_weak_gap(scores, n_boot=100)
    brute = _gap_brute_force(scores)
    per = gap.per_problem.set_index("problem")["gap"]
    np.testing.assert_allclose(per.loc[brute.index], brute, rtol=1e-12)
    assert gap.gap.estimate == pytest.approx(brute.mean()) and gap.independent


def test_strong_weak_gap_planted_quiet_beats_busy_and_one_repeat_is_nan():
    synth = synthesize(n_problems=15, busy=True, seed=9)
    quiet = strong_weak_gap(per_repeat_scores(_run(synth), roles=("reference",)), n_boot=100)
    busy = strong_weak_gap(per_repeat_scores(_run(synth, "busy"), roles=("reference",)), n_boot=100)
    assert quiet.gap.estimate > 60 and busy.gap.estimate < quiet.gap.low
    one = strong_weak_gap(per_repeat_scores(_run(synthesize(n_problems=3, n_repeats=1, seed=1)),
                                            roles=("reference",)), n_boot=10)
    assert math.isnan(one.gap.estimate) and not one.independent


def test_per_test_discrimination_columns_agree_with_direct_computations():
    synth = synthesize(n_problems=4, seed=10)
    run = _run(synth)
    td = discrimination_per_test(run, floor_s=0.03).set_index(["problem", "test"])
    refs = run[(run["role"] == "reference") & run["correct"] & (run["test_kind"] == "optimization")]
    med = refs.groupby(["problem", "test", "solution"], observed=True)["duration_s"].median()
    spread = med.groupby(level=[0, 1], observed=True).apply(lambda x: sps.iqr(x) / np.median(x))
    np.testing.assert_allclose(td.loc[spread.index, "spread"], spread, rtol=1e-12)
    icc_tab = grouped_icc(refs.assign(y=np.log(refs["duration_s"])), targets="solution", raters="repeat",
                          ratings="y", groups=["problem", "test"]).set_index(["problem", "test"])
    np.testing.assert_allclose(td.loc[icc_tab.index, "icc"], icc_tab["ICC3"], rtol=1e-12)
    assert (td["near_floor"] == (td["median_s"] <= 0.06)).all()


def test_one_optimization_test_and_one_reference_are_defined():
    one_test = table_of_tests(_run(synthesize(n_problems=3, n_tests=1, seed=2)))
    rc = noise_aware_robust_cv(one_test)
    assert rc["robust_cv"].isna().all() and not rc["filterable"].any() and not rc["filterable_noise_aware"].any()
    one_ref = table_of_tests(_run(synthesize(n_problems=3, n_solutions=1, seed=2)))
    assert one_ref["spread"].isna().all() and (one_ref["n_refs"] == 1).all()
    assert np.isfinite(robust_cv(one_ref)["robust_cv"]).all()
