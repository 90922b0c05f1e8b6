"""One process per cell (nested repeats, a ``run`` column): the n/a reason counts processes, not repeats.

A pyperf-like corpus of one process per benchmark with 4 values in it: the audit counts processes (the values of
one process share its state), so every repeat-based finding is n/a. Its reason said "1 repeat per cell ... collect
a campaign with --repeats 3 or more" beside a run line of "4 repeats", advice that more values (repeats) would
help, when only more processes do. Now it names the process and the values in it.
"""

from __future__ import annotations

import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize

METRICS = ("median_repeat_cv", "mean_rank_sd", "icc", "significant_share", "repeats_needed")


@pytest.fixture(scope="module")
def findings():
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=4, seed=1).corpus
    corpus["run"] = 0  # one process per cell, its 4 values the repeats
    audit = run_reliability_audit(corpus, n_boot=10)
    return {f.metric: f for f in audit.findings}


@pytest.mark.parametrize("metric", METRICS)
def test_one_process_is_said_in_processes(findings, metric):
    found = findings[metric]
    assert found.level == "n/a"
    assert "1 process per cell (4 values in it)" in found.message
    assert "--repeats" not in found.message and "1 repeat" not in found.message


def test_one_repeat_without_processes_still_says_repeats():
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=1, seed=1).corpus
    found = next(f for f in run_reliability_audit(corpus, n_boot=10).findings if f.metric == "median_repeat_cv")
    assert found.level == "n/a" and "1 repeat per cell" in found.message and "--repeats 3" in found.message
