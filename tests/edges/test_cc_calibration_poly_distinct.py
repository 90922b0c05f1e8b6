"""Polynomial calibration maps on too few distinct source durations are n/a with the reason, never judged or chosen.

poly2 has 3 coefficients and poly3 4. On a source whose paired durations take fewer distinct values than that
(a coarse clock, tests of a few sizes) least squares returns one of infinitely many curves (the smallest in norm):
before, the audit reported its coefficients (c2 = 2.6e8 at nanoseconds), judged its held-out error and could
choose it. With exactly as many distinct values it passes through the mean target duration at each value: no
residual could reject its curve, and it won the held-out comparison by that flexibility alone (poly2 was chosen
on 3 distinct values). Now a polynomial needs more distinct source durations than coefficients (poly2 4, poly3 5),
on all pairs and in every leave-one-problem-out fold, on nanosecond and ten-second timings alike.

Independent references: numpy's rank of the Vandermonde matrix (underdetermined), statsmodels' OLS fitted values
equal to the per-value means (saturated), and numpy.polyfit recovering a planted quadratic once there are enough
distinct values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import normalize
from audits.corpus.runs import Run
from stats.calibration import compare_families, fit_family, lopo_predictions

SCALES = [1e-8, 10.0]  # 10-40 ns benchmarks and 10-50 s tests
LEVELS = (1.0, 2.0, 3.5, 5.0, 7.0)
COEFFICIENTS = {"poly2": 3, "poly3": 4}


def _truth(x, scale):
    """A planted curved map: y = 0.1 s + 0.7 x + 0.05 x^2 / s (s the time scale)."""
    return 0.1 * scale + 0.7 * x + 0.05 * x * x / scale


def _pairs(scale, n_distinct, *, noise=0.03, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(8):
        for t in range(6):
            x = scale * LEVELS[(p + t) % n_distinct]
            rows.append((f"p{p}", f"t{t}", x, _truth(x, scale) * np.exp(rng.normal(0, noise))))
    return pd.DataFrame(rows, columns=["problem", "test", "x", "y"])


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize(("family", "n_distinct"), [("poly2", 2), ("poly2", 3), ("poly3", 2), ("poly3", 3),
                                                    ("poly3", 4)])
def test_too_few_distinct_values_is_not_available(scale, family, n_distinct):
    k = COEFFICIENTS[family]
    pairs = _pairs(scale, n_distinct)
    x, y = pairs["x"].to_numpy(), pairs["y"].to_numpy()
    u = (x - x.mean()) / x.std()
    design = np.vander(u, k, increasing=True)
    rank = np.linalg.matrix_rank(design)
    if n_distinct < k:  # numpy: the design has fewer independent columns than coefficients
        assert rank < k
    else:  # statsmodels: the fit is saturated, its fitted values are the mean y at each source value
        fitted = sm.OLS(y, design).fit().fittedvalues
        means = pairs.groupby("x")["y"].transform("mean").to_numpy()
        assert rank == k and np.allclose(fitted, means, rtol=1e-9)
    fit = fit_family(x, y, family)
    assert all(np.isnan(v) for v in fit.params.values()), fit.params
    assert np.isnan(lopo_predictions(x, y, pairs["problem"], family)).all()
    table = compare_families(pairs, n_boot=0).set_index("family")
    row = table.loc[family]
    assert not row["usable"] and not row["chosen"]
    assert f"{n_distinct} distinct" in row["na_reason"] and f"at least {k + 1}" in row["na_reason"]
    assert table["chosen"].sum() == 1  # a line or a factor is chosen instead


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("family", ["poly2", "poly3"])
def test_enough_distinct_values_recover_the_truth(scale, family):
    k = COEFFICIENTS[family]
    pairs = _pairs(scale, k + 1, noise=0.0)
    x, y = pairs["x"].to_numpy(), pairs["y"].to_numpy()
    fit = fit_family(x, y, family)
    grid = scale * np.linspace(1.0, LEVELS[k], 25)  # between and at the source values
    theirs = np.polyval(np.polyfit(x, y, k - 1), grid)  # numpy's least squares
    assert fit.predict(grid) == pytest.approx(theirs, rel=1e-6)
    assert fit.predict(grid) == pytest.approx(_truth(grid, scale), rel=1e-6)  # the planted curve
    row = compare_families(pairs, n_boot=0).set_index("family").loc[family]
    assert row["na_reason"] == "" and row["usable"]


def test_a_fold_that_loses_a_value_is_not_validated():
    """Five distinct values, one of them held by one problem only: poly3 (4 coefficients) fits on all pairs, but
    the fold without that problem has 4 values left: its held-out predictions are n/a, and so is poly3."""
    pairs = _pairs(1.0, 4)
    lone = pd.DataFrame([("p-lone", "t0", 7.0, _truth(7.0, 1.0))], columns=pairs.columns)
    pairs = pd.concat([pairs, lone], ignore_index=True)
    x, y = pairs["x"].to_numpy(), pairs["y"].to_numpy()
    assert all(np.isfinite(v) for v in fit_family(x, y, "poly3").params.values())
    pred = lopo_predictions(x, y, pairs["problem"], "poly3")
    assert np.isnan(pred[-1]) and np.isfinite(pred[:-1]).all()
    row = compare_families(pairs, n_boot=0).set_index("family").loc["poly3"]
    assert "holding out 1 of 9 problems" in row["na_reason"] and not row["usable"] and not row["chosen"]


def _corpus(scale: float, n_distinct: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for p in range(6):
        for t in range(4):
            for s in range(4):
                x = scale * LEVELS[(p + t + s) % n_distinct]
                for r in range(3):
                    for campaign in ("c0", "c1"):
                        d = x if campaign == "c0" else _truth(x, scale) * np.exp(rng.normal(0, 0.03))
                        rows.append({"environment": "e", "campaign": campaign, "problem": f"p{p}", "test": f"t{t}",
                                     "solution": f"s{s}", "repeat": r, "duration_s": d, "status": "ok",
                                     "role": "reference", "correct": True, "test_kind": "optimization"})
    return normalize(pd.DataFrame(rows))


@pytest.mark.parametrize("scale", SCALES)
def test_the_audit_says_why_and_never_chooses_them(scale):
    corpus = _corpus(scale, 3)
    audit = run_calibration_audit(corpus, source=Run("e", "c0"), target=Run("e", "c1"), n_boot=50, n_boot_rank=20)
    fits = audit.fits.set_index("name")
    for family in ("poly2", "poly3"):
        assert "3 distinct values" in fits.loc[family, "na_reason"]
        assert not fits.loc[family, "usable"]
    assert audit.best_family not in ("poly2", "poly3")
    found = {f.metric: f for f in audit.findings}
    message = found["unusable_families"].message
    assert "poly2: n/a, the paired source durations take 3 distinct values" in message
    # the other families predict usable durations here: none is said to predict non-finite ones
    assert "predict non-finite" not in message and "2 are n/a" in message, message
    assert "n/a" in audit.summary() and "needs at least 4" in audit.summary()
    # named by the user: no verdict on its held-out error
    named = run_calibration_audit(corpus, source=Run("e", "c0"), target=Run("e", "c1"), n_boot=50, n_boot_rank=20,
                                  calibration_family="poly2")
    head = {f.metric: f for f in named.findings}["best_lopo_log_rmse"]
    assert head.level == "n/a" and "3 distinct values" in head.message, head


@pytest.mark.parametrize("scale", SCALES)
def test_calibrate_refuses_them(scale):
    """``speedaudit calibrate --family poly3`` on 3 distinct source values wrote a smallest-norm curve; nothing is
    written from a map the values do not determine, whatever --force and --clip say."""
    from audits.checks.calibration import apply_calibration

    with pytest.raises(ValueError, match="3 distinct values"):
        apply_calibration(_corpus(scale, 3), source="c0", target="c1", family="poly3", force=True, clip=True)
    out, mapping = apply_calibration(_corpus(scale, 3), source="c0", target="c1")
    assert mapping["family"] not in ("poly2", "poly3")
