"""The clocks audit reads a run's load average from the rows the reliability audit reads: floor rows left out.

The quietest run (the run whose clocks are compared) is the one with the lowest median ``load_1m``; the
reliability audit's contention figure is the median over the run's executions without its floor rows (the empty
program timed between jobs), the clocks audit's was over every row, floor rows included. The same run got two
median load averages, and a run with many floor rows timed while the machine was busy could lose the quietest
place it holds by the reliability audit's figure. The two are now one figure (numpy's median of the same rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import speedaudit
from audits.checks.clocks import run_clocks_audit
from audits.corpus.io import normalize


def _run(campaign: str, load: float, floor_load: float, n_floor: int) -> pd.DataFrame:
    rng = np.random.default_rng(len(campaign))
    rows = []
    for p in ("p0", "p1"):
        for t in range(2):
            for s in range(4):
                for r in range(2):
                    d = 0.2 * (1 + t) * 1.3 ** s * np.exp(rng.normal(0, 0.01))
                    rows.append({"problem": p, "test": f"t{t}", "solution": f"s{s}", "repeat": r, "duration_s": d,
                                 "cpu_s": 0.97 * d, "role": "reference", "load_1m": load})
    for r in range(n_floor):
        rows.append({"problem": "_floor", "test": "_floor", "solution": "_floor", "repeat": r, "duration_s": 0.01,
                     "cpu_s": 0.009, "role": "floor", "load_1m": floor_load})
    return pd.DataFrame(rows).assign(environment="e", campaign=campaign, status="ok", correct=True,
                                     test_kind="optimization")


def test_median_load_is_the_reliability_audit_s():
    corpus = normalize(pd.concat([_run("a", 1.0, 9.0, 60), _run("b", 1.5, 1.5, 5)], ignore_index=True))
    clocks = run_clocks_audit(corpus, n_boot=10)
    rel = speedaudit.run_audit("reliability", corpus, n_boot=10)
    for run, result in rel.runs.items():
        rows = clocks.table.loc[(clocks.table["campaign"] == run.campaign) & (clocks.table["measure"] == "duration_s")]
        assert float(rows["median_load_1m"].iloc[0]) == pytest.approx(result.contention.median_load_1m)
        real = corpus.loc[(corpus["campaign"] == run.campaign) & (corpus["role"] != "floor"), "load_1m"]
        assert result.contention.median_load_1m == pytest.approx(float(np.median(real)))
    assert clocks.quietest == ("e", "a")  # load 1.0 while its programs ran, against 1.5
