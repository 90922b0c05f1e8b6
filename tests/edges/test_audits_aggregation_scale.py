"""The aggregation audit reads no absolute time: nanosecond- and ten-second-scale corpora get the same verdicts.

Every duration and every time limit multiplied by 1e-4 (programs of 5-50 microseconds, timed-out rows at
40 microseconds) or by 100 (5-50 s, limit 40 s) must give the same findings, levels and values, on a corpus with
timeouts (a sixth of the rows), wrong answers and a busy environment. Checked when this file was written: no
figure of the audit moved (each aggregator is a percentile, a ratio or a relative scale), so nothing was fixed;
it guards the property.
"""

from __future__ import annotations

import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize


def _found(corpus):
    return [(f.environment, f.campaign, f.metric, f.level, f.value, f.reason) for f in
            run_aggregation_audit(corpus, n_boot=40).findings]


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5, timeout_s=0.4, busy=True).corpus


@pytest.fixture(scope="module")
def base(corpus):
    return _found(corpus)


@pytest.mark.parametrize("factor", [1e-4, 100.0])
def test_scaled_times_give_the_same_findings(corpus, base, factor):
    assert (corpus["status"].astype(str) == "timeout").mean() > 0.1
    scaled = corpus.copy()
    scaled["duration_s"] = scaled["duration_s"] * factor
    scaled["timeout_s"] = scaled["timeout_s"] * factor
    found = _found(scaled)
    assert [f[:4] for f in found] == [f[:4] for f in base]
    for got, want in zip(found, base):
        assert got[4] == pytest.approx(want[4], rel=1e-9), got[2]
