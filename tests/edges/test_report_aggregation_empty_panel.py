"""The aggregation figure of a run with no finite stability and range says so instead of printing a warning.

Found rendering ``speedaudit report`` on corpora a user can bring: one problem with two references (every
aggregator's dynamic range needs four), and a campaign whose every execution timed out (no problem measured). The
aggregation page printed matplotlib's ``UserWarning: No artists with labels found to put in legend`` into the
report, under an empty panel that did not say why it was empty.
"""

from __future__ import annotations

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from audits.report.plots.aggregation import stability_range_figure


def _one_problem_two_references():
    return synthesize(n_problems=1, n_tests=1, n_solutions=2, n_incorrect=0, n_candidates=0, n_repeats=2,
                      seed=1).corpus


def _every_execution_timed_out():
    corpus = synthesize(n_problems=4, n_tests=2, n_repeats=3, seed=7).corpus
    timed = (corpus["role"].astype(str) != "floor").to_numpy()
    corpus.loc[timed, "status"] = "timeout"
    corpus.loc[timed, "duration_s"] = corpus.loc[timed, "timeout_s"]
    return corpus


def _texts(fig) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


@pytest.mark.parametrize("make", [_one_problem_two_references, _every_execution_timed_out],
                         ids=["one-problem", "all-timed-out"])
def test_an_empty_panel_says_why_and_warns_nothing(make):
    audit = run_aggregation_audit(make(), n_boot=20)
    table = audit.table
    assert not (np.isfinite(table["stability"]) & np.isfinite(table["dynamic_range"])).any()  # the premise
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = stability_range_figure(audit)
    try:
        assert [str(w.message) for w in caught] == []
        assert "no aggregator has both" in _texts(fig)
        assert all(ax.get_legend() is None for ax in fig.axes)
    finally:
        plt.close(fig)


def test_a_measured_panel_keeps_its_legend():
    audit = run_aggregation_audit(synthesize(n_problems=6, n_tests=3, n_repeats=3, seed=2).corpus, n_boot=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = stability_range_figure(audit)
    try:
        assert [str(w.message) for w in caught] == []
        labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
        assert "Pareto front" in labels and "no aggregator has both" not in _texts(fig)
    finally:
        plt.close(fig)
