"""Repeat-count-aware reliability estimates (issue 16, item 5).

The same planted noise collected with 3, 5 and 10 repeats must give the same corrected repeat CV and
the same normalised rank drift, within the sampling error stated in each test; the raw figures must
not (that is what makes the test able to fail). The small-sample constants are computed, and checked
here against Monte Carlo simulation and the published table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from audits.corpus.synthetic import synthesize
from stats.reliability import (
    c4_constant,
    chi2_median_factor,
    d2_constant,
    per_repeat_scores,
    rank_drift,
    repeat_cv,
    summarize_repeat_cv,
)

PLANTED_CV = 0.05


def test_d2_and_c4_match_monte_carlo_and_the_published_table():
    rng = np.random.default_rng(0)
    published_d2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 8: 2.847, 10: 3.078}  # ASTM / Montgomery
    for n, value in published_d2.items():
        assert d2_constant(n) == pytest.approx(value, abs=6e-4)
        draws = rng.standard_normal((200_000, n))
        mc_range = np.ptp(draws, axis=1).mean()              # standard error about 0.002
        mc_sd = draws.std(axis=1, ddof=1).mean()
        assert d2_constant(n) == pytest.approx(mc_range, abs=0.01)
        assert c4_constant(n) == pytest.approx(mc_sd, abs=0.005)
    assert np.isnan(d2_constant(1)) and np.isnan(c4_constant(1))


def test_chi2_median_factor_is_the_median_of_s2_over_sigma2():
    rng = np.random.default_rng(1)
    for n in (3, 5, 10):
        s2 = rng.standard_normal((400_000, n)).var(axis=1, ddof=1)
        assert chi2_median_factor(n - 1) == pytest.approx(np.median(s2), rel=0.01)


def test_corrected_cell_cv_equals_a_plain_numpy_computation():
    rng = np.random.default_rng(3)
    rows = [dict(problem=f"p{p}", test="t", solution=f"s{s}", duration_s=float(d), status="ok")
            for p in range(3) for s in range(4) for d in rng.lognormal(-2, 0.1, rng.integers(2, 7))]
    cells = repeat_cv(pd.DataFrame(rows))
    for row in cells.itertuples():
        d = np.array([r["duration_s"] for r in rows if r["problem"] == row.problem and r["solution"] == row.solution])
        s2 = np.var(np.log(d), ddof=1)
        m = sps.chi2.median(len(d) - 1) / (len(d) - 1)
        assert row.log_var == pytest.approx(s2, rel=1e-10)
        assert row.cv_corrected == pytest.approx(np.sqrt(np.exp(s2 / m) - 1), rel=1e-10)
        assert row.cv == pytest.approx(np.std(d, ddof=1) / np.mean(d), rel=1e-10)


@pytest.fixture(scope="module")
def by_repeats():
    """One spec, purely multiplicative noise of CV 0.05 (log-sd 0.05), collected with 3, 5 and 10 repeats."""
    out = {}
    for r in (3, 5, 10):
        corpus = synthesize(n_problems=60, n_tests=6, n_correctness_tests=0, n_solutions=10, n_incorrect=0,
                            n_candidates=0, n_repeats=r, noise_cv=PLANTED_CV, noise_add_s=0.0, floor_rows=0,
                            seed=11).corpus
        cells = repeat_cv(corpus[corpus.role == "reference"], by=("campaign", "problem", "test", "solution"))
        out[r] = (summarize_repeat_cv(cells, n_boot=300), rank_drift(per_repeat_scores(corpus), n_boot=300))
    return out


def test_corrected_repeat_cv_does_not_depend_on_the_repeat_count(by_repeats):
    """Sampling error: the 95 % CI over problems (about +-3 % of 0.05 at 3 repeats, +-1.5 % at 10)."""
    for r, (summary, _) in by_repeats.items():
        for name in ("median_repeat_cv_corrected", "pooled_repeat_cv"):
            ci = summary[name]
            assert ci.low <= PLANTED_CV <= ci.high, (r, name, str(ci))
            assert ci.estimate == pytest.approx(PLANTED_CV, rel=0.04), (r, name)
    # The raw median of per-cell sample CVs is biased low by sqrt(m(n)): 17 % at 3 repeats, 4 % at 10.
    raw3, raw10 = by_repeats[3][0]["median_repeat_cv"], by_repeats[10][0]["median_repeat_cv"]
    assert raw3.high < PLANTED_CV and raw3.high < raw10.low
    assert raw3.estimate / PLANTED_CV == pytest.approx(np.sqrt(chi2_median_factor(2)), abs=0.03)


def test_normalised_rank_drift_does_not_depend_on_the_repeat_count(by_repeats):
    """Sampling error: 95 % CIs over 60 problems (about +-17 %); estimates must overlap and lie within 15 %."""
    for attr in ("mean_range_normalised", "mean_sd_corrected"):
        est = {r: getattr(drift, attr) for r, (_, drift) in by_repeats.items()}
        for a in est:
            for b in est:
                assert est[a].low <= est[b].high and est[b].low <= est[a].high, (attr, a, b)
                assert est[a].estimate == pytest.approx(est[b].estimate, rel=0.15), (attr, a, b)
    # The raw range grows with the repeat count like d2(R): 1.69 -> 3.08, so 3 and 10 repeats disagree.
    raw3, raw10 = by_repeats[3][1].mean_range, by_repeats[10][1].mean_range
    assert raw3.high < raw10.low
    assert raw10.estimate / raw3.estimate == pytest.approx(d2_constant(10) / d2_constant(3), rel=0.15)
