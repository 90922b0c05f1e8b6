"""Calibration of a source whose paired durations are all one value: no line is determined.

Every source cell timed at the same duration (a coarse clock, a benchmark that only measures its start-up)
leaves the affine map y = a x + b without a slope: any line through the point (x0, mean y) fits as well. scipy
refuses to fit it. Before, the fit divided by the float dust of the standard deviation of equal numbers and
reported a slope of about 3e15 and an intercept of -3e17 ms, and the audit failed both ``affine_slope_change``
and ``affine_intercept_ms`` on them. They are ``n/a`` with the reason, on microsecond and second-long timings
alike; the multiplicative map (a ratio, defined) still validates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import normalize
from audits.corpus.runs import Run
from stats.calibration import bootstrap_params, fit_family, lopo_predictions


def _corpus(x0: float) -> pd.DataFrame:
    """Source c0: every duration x0; target c1: 4 problems x 3 tests x 4 references with real spread."""
    rng = np.random.default_rng(0)
    rows = []
    for campaign in ("c0", "c1"):
        for p in range(4):
            for t in range(3):
                for s in range(4):
                    for r in range(3):
                        d = x0 if campaign == "c0" else 0.8 * x0 * (1 + 0.2 * t + 0.1 * s) * np.exp(
                            rng.normal(0, 0.02))
                        rows.append({"environment": "e", "campaign": campaign, "problem": f"p{p}",
                                     "test": f"t{t}", "solution": f"s{s}", "repeat": r, "duration_s": d,
                                     "status": "ok", "role": "reference", "correct": True,
                                     "test_kind": "optimization"})
    return normalize(pd.DataFrame(rows))


def test_scipy_refuses_the_line():
    """The independent reference: a regression on identical x values is not defined."""
    with pytest.raises(ValueError):
        sps.linregress(np.full(5, 0.1), np.array([0.08, 0.09, 0.1, 0.11, 0.12]))


@pytest.mark.parametrize("family", ["affine", "power", "poly2"])
def test_fits_have_no_parameters(family):
    x = np.full(12, 0.1)
    y = np.linspace(0.08, 0.12, 12)
    fit = fit_family(x, y, family)
    assert all(np.isnan(v) for v in fit.params.values()), fit.params
    assert np.isnan(lopo_predictions(x, y, np.arange(12) // 3, family)).all()
    ci = bootstrap_params(x, y, np.arange(12) // 3, family, n_boot=50)
    assert ci[["estimate", "ci_low", "ci_high"]].isna().all().all(), ci
    # the ratio is defined: multiplicative is mean log(y / x)
    ratio = fit_family(x, y, "multiplicative").params["slope"]
    assert ratio == pytest.approx(np.exp(np.mean(np.log(y / x))))


@pytest.mark.parametrize("x0", [1e-5, 0.1, 10.0])
def test_affine_findings_are_not_available(x0):
    audit = run_calibration_audit(_corpus(x0), source=Run("e", "c0"), target=Run("e", "c1"), n_boot=50,
                                  n_boot_rank=20)
    found = {f.metric: f for f in audit.findings}
    for metric in ("affine_intercept_ms", "affine_slope_change"):
        assert found[metric].level == "n/a", found[metric]
        assert "same" in found[metric].message and "source" in found[metric].message, found[metric].message
    # the map that is defined still validates: the target is 0.8 x0 .. 1.36 x0 against a constant x0
    assert found["best_lopo_log_rmse"].level in ("pass", "warn", "fail")
    assert audit.calibration_family == "multiplicative"


@pytest.mark.parametrize("family", ["affine", "power", "deming"])
def test_calibrate_refuses_an_undetermined_map(family):
    """``speedaudit calibrate --family affine --force --clip`` wrote every source row at the floor (the NaN map
    clipped); nothing can be written from a map with no parameters, whatever --force and --clip say."""
    from audits.checks.calibration import apply_calibration

    with pytest.raises(ValueError, match="same"):
        apply_calibration(_corpus(0.1), source="c0", target="c1", family=family, force=True, clip=True)
    out, mapping = apply_calibration(_corpus(0.1), source="c0", target="c1", family="multiplicative")
    assert mapping["family"] == "multiplicative"
