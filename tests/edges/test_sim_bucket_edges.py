"""optimization_bucketed counts the thresholds below q as the gate does: q <= tau / 100, never 100 q in floats.

The bucket was j = #{thresholds < 100 q} computed as 100.0 * q, which is not the percentile points in floating point
for 8 of the 99 whole percentages (100 * 0.07 = 7.000000000000001, 100 * 0.14, 0.28, 0.29, 0.55 ... 0.58): a
rollout exactly at the 7th percentile was paid the level above a threshold of 7, while the gate at tau = 7 (and
every other scheme, c and q <= tau / 100) counts it as within. Checked against exact rational arithmetic.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from stats.rewards import RewardEnvironment, apply_environment, environment_rewards, reward

THRESHOLDS = [7, 14, 28, 29, 55, 56, 57, 58]


def _exact_bucket(q: Fraction) -> int:
    return sum(1 for t in THRESHOLDS if Fraction(t) < 100 * q)


@pytest.mark.parametrize("points", list(range(0, 101)))
def test_the_bucket_of_every_whole_percentile_is_exact(points):
    q = points / 100.0                     # the float a q of exactly `points` % is stored as
    levels = np.linspace(1.0, -1.0, len(THRESHOLDS) + 1)
    got = reward([True], [False], [q], scheme="optimization_bucketed", thresholds=THRESHOLDS)
    assert got[0] == levels[_exact_bucket(Fraction(points, 100))]


def test_a_unit_at_the_threshold_is_paid_as_the_gate_passes_it():
    # 101 references with distinct durations on one test: s007 is slower than 7 of the 100 others (leave-self-out),
    # so its percentile is 7 and q = 0.07
    n = 101
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": [f"s{i:03d}" for i in range(n)], "repeat": 0,
                         "duration_s": np.arange(1, n + 1) / 1000.0, "status": "ok", "correct": True,
                         "role": "reference"})
    env = RewardEnvironment.from_dict({"name": "b", "post": {"tau": 7},
                                       "reward": {"scheme": "optimization_bucketed", "thresholds": [7, 50]}})
    scores = apply_environment(runs, env).scores
    at = scores.loc[scores["solution"] == "s007"]
    assert at["q"].iloc[0] == 0.07 and bool(at["g"].iloc[0])  # the gate passes it
    assert environment_rewards(at, env.reward)[0] == 1.0          # and the bucketed reward pays the top level
