"""The report's fits table of a calibration pair shows n/a and the reason for a family the source values do not
determine, not its NaN parameters as a formula ("y = nan + nan x ...").

A corpus whose source campaign takes 3 distinct durations (tests of three sizes on a coarse clock): poly2 and poly3
are n/a (stats.calibration, 0c6b7f2). Checked on the audit object and on the same audit read back from its saved
JSON, the way ``speedaudit report`` renders pages (audits.report reads results, it does not recompute them).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import normalize
from audits.corpus.runs import Run
from audits.report import narrative


def _corpus(n_distinct: int) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    levels = (0.01, 0.02, 0.035, 0.05, 0.07)
    rows = []
    for p in range(6):
        for t in range(4):
            for s in range(4):
                x = levels[(p + t + s) % n_distinct]
                for r in range(3):
                    for campaign, d in (("c0", x), ("c1", (0.002 + 0.7 * x) * np.exp(rng.normal(0, 0.03)))):
                        rows.append({"environment": "e", "campaign": campaign, "problem": f"p{p}", "test": f"t{t}",
                                     "solution": f"s{s}", "repeat": r, "duration_s": d, "status": "ok",
                                     "role": "reference", "correct": True, "test_kind": "optimization"})
    return normalize(pd.DataFrame(rows))


def _table(audit):
    return narrative.calibration_fit_table(audit)


def test_undetermined_families_say_why_in_the_report_table():
    audit = run_calibration_audit(_corpus(3), source=Run("e", "c0"), target=Run("e", "c1"), n_boot=30,
                                  n_boot_rank=10)
    table = _table(audit)
    reasons = audit.fits.set_index("name")["na_reason"]
    for family in ("poly2", "poly3"):
        assert reasons[family], family  # the planted corpus makes them n/a
        assert table.loc[family, "formula"] == f"n/a: {reasons[family]}"
        assert "nan" not in table.loc[family, "formula"].replace(reasons[family], "")
    for family in table.index.difference(["poly2", "poly3"]):  # the determined ones keep their formula
        assert table.loc[family, "formula"] == audit.fits.set_index("name").loc[family, "formula"]
        assert "nan" not in table.loc[family, "formula"]


def test_enough_values_show_every_formula():
    audit = run_calibration_audit(_corpus(5), source=Run("e", "c0"), target=Run("e", "c1"), n_boot=30,
                                  n_boot_rank=10)
    table = _table(audit)
    assert not any(text.startswith("n/a") for text in table["formula"])
    assert list(table.sort_index()["formula"]) == list(audit.fits.set_index("name").sort_index()["formula"])


def test_a_saved_result_without_na_reason_still_renders():
    """A result saved before na_reason existed (the fits records without the key) renders its formulas."""
    audit = run_calibration_audit(_corpus(5), source=Run("e", "c0"), target=Run("e", "c1"), n_boot=30,
                                  n_boot_rank=10)
    old = audit.fits.drop(columns="na_reason")
    record = json.loads(old.to_json(orient="records"))
    table = _table(dataclasses.replace(audit, fits=pd.DataFrame(record)))
    assert list(table.sort_index()["formula"]) == list(old.set_index("name").sort_index()["formula"])
