"""A run of one process per cell states one process, not its values as repeats.

``RunSummary.repeats_text`` is the one way a run's repeats are stated (the audits' headers and JSON, the report's
paragraphs). With a ``run`` column (pyperf's worker processes) of one process per cell holding 4 values, it said
"4 repeats": four executions of their own, where the design's repeat is one; the values of one process share its
state, and the reliability audit itself says its repeat figures are n/a (1 process per cell, 4 values in it).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.io import save_corpus
from audits.corpus.runs import runs_of
from audits.corpus.synthetic import synthesize
from audits.report.narrative import describe_reliability


def _corpus(run=None):
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=4, seed=0).corpus
    if run == "one process":
        corpus["run"] = 0
    elif run == "a process per value":
        corpus["run"] = corpus["repeat"]
    return corpus


@pytest.mark.parametrize(("layout", "text"), [("one process", "1 process x 4 values"),
                                              ("a process per value", "4 processes x 1 value"),
                                              (None, "4 repeats")])
def test_repeats_text_says_what_was_measured(layout, text):
    corpus = _corpus(layout)
    (summary,) = list(runs_of(corpus))
    assert summary.repeats_text == text
    # every value of the cells is counted (4 per cell whatever the layout)
    assert summary.repeats == corpus.groupby(["problem", "test", "solution"], observed=True).size().mode()[0] == 4


def test_the_audit_and_the_report_state_one_process(tmp_path):
    corpus = _corpus("one process")
    audit = run_reliability_audit(corpus, n_boot=0)
    assert "quiet · c0 (1 process x 4 values)" in audit.summary() and "4 repeats" not in audit.summary()
    assert "(1 process x 4 values)" in describe_reliability(audit)
    path = save_corpus(corpus, tmp_path / "one.parquet")
    done = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "reliability", str(path), "--n-boot", "0"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "(1 process x 4 values)" in done.stdout and "4 repeats" not in done.stdout
