"""within_problem_spearman n/a on ties says so, not "too few solutions".

The within-(problem, test) Spearman needs >= 3 paired solutions and an order on both sides. A target that times
every solution of a test alike (a coarse clock: every program of a test took 3 ms) has no order, and the
finding was n/a with "no (problem, test) has >= 3 paired solutions" although each test had four. The reason
now names the ties; too few solutions keeps its own reason. Independent check: scipy's spearmanr is undefined
(NaN) on a constant input.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import normalize
from audits.corpus.runs import Run


def _corpus(n_solutions: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for campaign in ("c0", "c1"):
        for p in range(5):
            for t in range(3):
                for s in range(n_solutions):
                    for r in range(2):
                        work = 0.003 * (1 + t) * (1 + p)
                        d = (work if campaign == "c1" else
                             0.8 * work * (1 + 0.2 * s) * np.exp(rng.normal(0, 0.01)))
                        rows.append({"environment": "e", "campaign": campaign, "problem": f"p{p}", "test": f"t{t}",
                                     "solution": f"s{s}", "repeat": r, "duration_s": d, "status": "ok",
                                     "role": "reference", "correct": True, "test_kind": "optimization"})
    return normalize(pd.DataFrame(rows))


def _finding(corpus):
    audit = run_calibration_audit(corpus, source=Run("e", "c0"), target=Run("e", "c1"), n_boot=20, n_boot_rank=10)
    return {f.metric: f for f in audit.findings}["within_problem_spearman"]


def test_scipy_has_no_rank_correlation_with_a_constant():
    assert math.isnan(sps.spearmanr([1.0, 2.0, 3.0, 4.0], [3.0, 3.0, 3.0, 3.0]).statistic)


def test_ties_are_the_reason():
    finding = _finding(_corpus(4))
    assert finding.level == "n/a"
    assert "no (problem, test) has >= 3" not in finding.message, finding.message
    assert "alike" in finding.message, finding.message


def test_too_few_solutions_keeps_its_reason():
    finding = _finding(_corpus(2))
    assert finding.level == "n/a"
    assert "no (problem, test) has >= 3 paired solutions" in finding.message, finding.message
