"""A clock too coarse for the programs (every execution reads one tick) is said as such, not as too few references.

Found on a corpus whose ok executions all read 1 ms: every aggregator has a stability of 0 and a dynamic range of
0, so no stability / range ratio is defined and recommended_aggregator is rightly n/a, but its reason said "no
aggregator has a finite stability and dynamic range: the dynamic range needs a problem with >= 4 correct
references with ok runs in >= 2 repeats; add references or repeats" on a corpus with 12 references and 3 repeats
per problem: both figures were finite (0), and more references or repeats of the same tick change nothing.
"""

from __future__ import annotations

import numpy as np

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA


def test_one_tick_everywhere_says_the_clock_is_too_coarse():
    corpus = synthesize(n_problems=8, n_tests=4, n_repeats=3, seed=3).corpus
    ok = (corpus["status"].astype(str) == "ok").to_numpy()
    corpus.loc[ok, "duration_s"] = 0.001
    audit = run_aggregation_audit(corpus, n_boot=40)
    table = audit.comparison().table
    measured = table.loc[np.isfinite(table["stability"]) & np.isfinite(table["dynamic_range"])]
    assert len(measured) >= 10 and (measured["stability"] == 0).all() and (measured["dynamic_range"] == 0).all()
    found = {f.metric: f for f in audit.findings}
    rec = found["recommended_aggregator"]
    assert rec.level == NA
    assert "add references or repeats" not in rec.reason and "finite" not in rec.reason, rec.reason
    assert "0.00 points" in rec.reason and "clock" in rec.reason


def test_too_few_references_still_says_so():
    corpus = synthesize(n_problems=6, n_tests=3, n_solutions=3, n_incorrect=0, n_repeats=3, seed=3).corpus
    rec = {f.metric: f for f in run_aggregation_audit(corpus, n_boot=40).findings}["recommended_aggregator"]
    assert rec.level == NA and ">= 4 correct references" in rec.reason, rec.reason
