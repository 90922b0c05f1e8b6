"""The problem count the aggregation audit warns on is the count its recommendation rests on.

Found on a run of 24 problems of which only 3 have >= 4 correct references: the other 21 give every aggregator a
stability but no dynamic range, so the recommended aggregator's range, its ratio and their CIs came from 3
problems. n_problems compared the run's 24 with min_problems (10) and said nothing, and the recommendation read
"n = 24 problems". Now n_problems warns with the 3 and says of how many, and the recommendation says both counts.
"""

from __future__ import annotations

import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def audit():
    corpus = synthesize(n_problems=24, n_tests=3, n_repeats=3, seed=3, noise_cv=0.15, n_solutions=8,
                        n_candidates=1).corpus
    solution, problem = corpus["solution"].astype(str), corpus["problem"].astype(str)
    dropped = (~problem.isin(["p0000", "p0001", "p0002"]) & solution.str.startswith("ref-")
               & (solution.str[-3:] >= "003") & corpus["correct"])  # 21 problems keep 3 correct references
    return run_aggregation_audit(corpus.loc[~dropped.to_numpy()].reset_index(drop=True), n_boot=60)


def test_n_problems_counts_the_problems_with_a_range(audit):
    comp = audit.comparison()
    best = comp.table.set_index("aggregator").loc[audit.recommended]
    assert comp.n_problems == 24 and best["n_problems_range"] == 3 and best["n_problems"] == 24
    found = {f.metric: f for f in audit.findings}
    assert found["n_problems"].level == "warn" and found["n_problems"].value == 3
    assert "of the 24" in found["n_problems"].message
    assert "n = 24 problems, 3 with both figures" in found["recommended_aggregator"].message


def test_a_run_whose_problems_all_have_a_range_is_not_warned():
    audit = run_aggregation_audit(synthesize(n_problems=12, n_tests=3, n_repeats=3, seed=3).corpus, n_boot=40)
    assert "n_problems" not in {f.metric for f in audit.findings}
    assert "n = 12 problems)" in {f.metric: f for f in audit.findings}["recommended_aggregator"].message
