"""The rank-range verdict is a property of the sandbox, not of the corpus's size or repeat count.

The reliability audit judged the single worst (problem, solution) range of 100 q across repeats. A maximum over
units grows with their number and with the repeats per unit: the same quiet synthetic sandbox gave 26 points at
5 problems and 3 repeats and 53 at 240 problems and 10, so it passed on the small corpus and warned on the large
one. The tail of the ranges (95th percentile, each range as the range of 5 repeats) is judged now; the worst is
reported beside it.
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize

#: Tabulated expected ranges of n standard normal draws (ASTM / Montgomery's control-chart tables).
D2 = {3: 1.693, 5: 2.326, 10: 3.078}


def _audit(n_problems: int, n_repeats: int):
    corpus = synthesize(n_problems=n_problems, n_repeats=n_repeats, seed=1).corpus
    return run_reliability_audit(corpus, n_boot=0)


@pytest.fixture(scope="module")
def small_and_large():
    return _audit(5, 3), _audit(240, 10)


def _range_findings(audit) -> dict:
    return {f.metric: f for f in audit.findings if "rank_range" in f.metric}


def test_the_same_sandbox_gets_the_same_range_verdict_at_any_size(small_and_large):
    small, large = (_range_findings(a) for a in small_and_large)
    assert small.keys() == large.keys() and len(small) >= 2
    assert {m: f.level for m, f in small.items()} == {m: f.level for m, f in large.items()}
    (env,) = small_and_large[1].runs.values()
    assert env.drift.worst_range > 50  # the maximum crossed the limit that the tail stays far below


@pytest.mark.parametrize("which", [0, 1])
def test_the_tail_is_the_95th_percentile_of_five_repeat_ranges(small_and_large, which):
    audit = small_and_large[which]
    (env,) = audit.runs.values()
    per = env.drift.per_solution
    repeats = per["n_repeats"].to_numpy()
    by_hand = per["range"].to_numpy() * D2[5] / np.array([D2[r] for r in repeats])
    assert env.drift.p95_range_5 == pytest.approx(np.percentile(by_hand, 95), rel=2e-3)
    finding = _range_findings(audit)["p95_rank_range"]
    assert finding.value == env.drift.p95_range_5 and "the worst moves" in finding.message
