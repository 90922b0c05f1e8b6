"""``Environment.describe()`` (the one-line description in the simulation's tables and the report) says when a
reward environment's timeouts do not fail correctness (``limit.timeout_fails_c: false``). Before, two environments
that score c differently read the same, with a limit and without one."""

from __future__ import annotations

import pytest

from stats.rewards import Environment

LIMITS = [{"kind": "uniform", "seconds": 2.0}, {"kind": "reference_percentile", "percentile": 90, "factor": 2},
          {"kind": "ranked_worst", "fastest_percent": 30, "factor": 1.5}, {}]


@pytest.mark.parametrize("limit", LIMITS)
def test_timeouts_that_keep_c_are_described(limit):
    base = {"post": {"tau": 30}, "reward": {"scheme": "collapsed"}}
    failing = Environment.from_dict({**base, "limit": dict(limit)}, name="a")
    keeping = Environment.from_dict({**base, "limit": {**limit, "timeout_fails_c": False}}, name="a")
    assert failing.limit.timeout_fails_c and not keeping.limit.timeout_fails_c
    assert failing.describe() != keeping.describe()
    assert "timeouts keep c" in keeping.describe() and "timeouts keep c" not in failing.describe()
    # the rest of the line is the same: only the rule on c differs
    assert keeping.describe().replace(", timeouts keep c", "") == failing.describe()
