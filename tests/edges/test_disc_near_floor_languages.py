"""Near-floor share with per-language floors: a test whose references' language has no floor rows is not checked.

With a ``language`` column every test is checked against the floor of its references' language (a C++ test is
not near a 30 ms Python start-up). A language without floor rows has no floor, so its tests cannot be checked;
they were counted as "not near": a corpus whose references are C++ and whose floor rows are Python passed with
"0.0 % of optimization tests ... near the floor" although none was checked, and with one Python problem of three
its near tests were diluted by the six unchecked C++ tests (1 of 9 = 11 %, warn, instead of 1 of 3, fail). The
share is now over the checked tests (n/a with the reason when there are none), a problem with no checked test
has no share, and the message names what was not checked.

Planted: references 12, 24 and 36 ms on tests t0, t1, t2 (4 references, 3 repeats, tiny noise); floor rows 10 ms.
Hand-worked: only t0 is within 2 x 10 ms, so a checked problem has 1 of 3 tests near the floor.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from audits.checks.discriminability import run_discriminability_audit
from audits.corpus.io import normalize


def _corpus(language_of) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    rows = []
    for p in ("p0", "p1", "p2"):
        for t in range(3):
            for s in range(4):
                for r in range(3):
                    rows.append({"problem": p, "test": f"t{t}", "solution": f"s{s}", "repeat": r, "role": "reference",
                                 "duration_s": 0.012 * (1 + t) * (1 + 0.01 * s) * np.exp(rng.normal(0, 0.001)),
                                 "language": language_of(p)})
    for r in range(7):
        rows.append({"problem": "_floor", "test": "_floor", "solution": "_floor", "repeat": r, "role": "floor",
                     "duration_s": 0.010, "language": "python"})
    frame = pd.DataFrame(rows).assign(environment="e", campaign="c", status="ok", correct=True,
                                      test_kind="optimization")
    return normalize(frame)


def _run(corpus):
    audit = run_discriminability_audit(corpus, n_boot=20)
    (result,) = audit.runs.values()
    return result, {f.metric: f for f in audit.findings}["near_floor_test_share"]


def test_no_test_checked_is_not_a_pass():
    result, finding = _run(_corpus(lambda p: "cpp"))
    assert finding.level == "n/a", finding
    assert "cpp" in finding.message, finding.message
    assert math.isnan(result.near_floor_test_share)
    assert result.problems["near_floor_share"].isna().all()


def test_share_is_over_the_checked_tests():
    result, finding = _run(_corpus(lambda p: "python" if p == "p0" else "cpp"))
    assert result.near_floor_test_share == pytest.approx(1 / 3)
    assert finding.level == "fail", finding  # >= 0.3
    assert "6" in finding.message and "cpp" in finding.message, finding.message
    shares = result.problems.set_index(result.problems["problem"].astype(str))["near_floor_share"]
    assert shares["p0"] == pytest.approx(1 / 3)
    assert math.isnan(shares["p1"]) and math.isnan(shares["p2"])
    # the same share as the corpus of the checked problem alone
    alone, _ = _run(_corpus(lambda p: "python" if p == "p0" else "cpp").query("problem in ['p0', '_floor']"))
    assert alone.near_floor_test_share == pytest.approx(result.near_floor_test_share)


def test_every_language_with_a_floor_is_unchanged():
    result, finding = _run(_corpus(lambda p: "python"))
    assert result.near_floor_test_share == pytest.approx(1 / 3)
    assert finding.level == "fail"
    assert result.problems["near_floor_share"].tolist() == pytest.approx([1 / 3] * 3)
