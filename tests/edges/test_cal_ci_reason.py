"""The calibration audit carries why a parameter's interval is n/a (bootstrap_params' ci_reason, c2d913f) to its
params table and its JSON, instead of a bare null interval.

Planted: five problems with one reference cell each, so each holds one source duration; most bootstrap resamples of
the problems keep <= 3 (poly2) or <= 4 (poly3) distinct durations, on which the curve is not determined.
"""

import json

import numpy as np
import pandas as pd

from audits.checks.calibration import run_calibration_audit


def _corpus() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = []
    for campaign in ("stored", "fresh"):
        for p in range(5):
            for r in range(3):
                x = 0.05 * (1 + p)
                d = x if campaign == "stored" else 0.63 * x + 0.053  # the study's affine drift
                rows.append({"environment": "e", "campaign": campaign, "problem": f"p{p}", "test": "t",
                             "solution": "s", "repeat": r, "status": "ok", "role": "reference", "correct": True,
                             "test_kind": "optimization", "duration_s": d * (1 + 0.01 * rng.random())})
    return pd.DataFrame(rows)


def test_a_poly_interval_that_is_na_says_why_in_the_table_and_the_json():
    audit = run_calibration_audit(_corpus(), source=("e", "stored"), target=("e", "fresh"))
    params = audit.params.set_index(["family", "param"])
    assert params.loc[("poly2", "c2"), ["ci_low", "ci_high"]].isna().all()  # the premise: no interval
    assert "distinct source durations" in params.loc[("poly2", "c2"), "ci_reason"]
    assert params.loc[("affine", "slope"), "ci_reason"] == "" and params.loc[("affine", "slope"), "n_resamples"] > 0
    fits = json.loads(json.dumps(audit.to_dict()))["fits"]
    assert set(fits["poly2"]["param_ci_reason"]) == {"c0", "c1", "c2"}
    assert fits["affine"]["param_ci_reason"] == {}
