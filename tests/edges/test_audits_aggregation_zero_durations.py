"""A coarse timer reads a program shorter than its resolution as 0 s: a 0 must count as fast, never be skipped.

Found with durations rounded to 1 ms: d_t / m_t = 0 has log -inf, and geo_ratio and log_ratio averaged the
logs over the unit's *finite* values, so the test where a solution read 0 s was left out of its score. A
solution 0 s on test a and equal to another on b and c scored geo_ratio 1.0 against the other's 0.79: being
faster made it slower. The unit's mean now takes the limit (-inf; geo_ratio 0). A test whose reference median
is 0 stays out of every unit's ratio alike (no ratio to take).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stats.aggregation import AGGREGATORS, aggregate
from stats.ranking import percentile_table, reference_pools

# slope is the growth of log d_t with log m_t, not a speed: a faster test can raise or lower it
SPEEDS = sorted(set(AGGREGATORS) - {"slope"})


def _scores(durations: dict, name: str) -> dict:
    rows = pd.DataFrame([dict(problem="p", test=t, solution=s, repeat=0, duration_s=d[i], status="ok",
                              role="candidate" if s.startswith("x") else "reference", correct=True,
                              test_kind="optimization", timeout_s=10.0)
                         for s, d in durations.items() for i, t in enumerate("abc")])
    pools = reference_pools(rows)
    out = aggregate(percentile_table(rows, per_repeat=True, pools=pools), pools, name=name)
    return dict(zip(out["solution"].astype(str), out["score"]))


REFERENCES = {"r1": (0.001, 0.002, 0.003), "r2": (0.002, 0.003, 0.004), "r3": (0.003, 0.004, 0.005)}


@pytest.mark.parametrize("name", SPEEDS)
def test_a_zero_duration_is_never_slower(name):
    # x0 is x1 but 0 s (below the timer's 1 ms) on test a: at least as fast on every test
    scores = _scores({**REFERENCES, "x0": (0.0, 0.003, 0.004), "x1": (0.001, 0.003, 0.004)}, name)
    assert scores["x0"] <= scores["x1"], scores


@pytest.mark.parametrize("name", ["geo_ratio", "log_ratio"])
def test_the_ratio_of_a_zero_is_its_limit(name):
    scores = _scores({**REFERENCES, "x0": (0.0, 0.003, 0.004)}, name)
    assert scores["x0"] == {"geo_ratio": 0.0, "log_ratio": -np.inf}[name]
    assert np.isfinite(scores["r2"])


@pytest.mark.parametrize("name", ["geo_ratio", "log_ratio", "mean_ratio"])
def test_a_test_whose_reference_median_is_zero_is_left_out_alike(name):
    # test a: every reference reads 0 s (m_a = 0): no unit has a ratio there, whatever it read
    refs = {"r1": (0.0, 0.002, 0.003), "r2": (0.0, 0.003, 0.004), "r3": (0.0, 0.004, 0.005)}
    with_a = _scores({**refs, "x0": (0.0, 0.003, 0.004), "x1": (0.001, 0.003, 0.004)}, name)
    assert with_a["x0"] == with_a["x1"] and np.isfinite(with_a["x0"])
