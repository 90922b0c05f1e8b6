"""``speedaudit compare`` on a campaign where both sets timed out on every optimization test: n/a, not a warn.

A comparison of two timed-out cells has p = 1/2: no timing tells the two programs apart. When every comparison
is of that kind, the win rate was 0.5 [0.5, 0.5] and warned "the CI contains 1/2 ... more problems, or more
repeats to decide the undecided comparisons": a verdict from no timing, with advice that cannot help. It is
n/a, saying why and to raise the time limit. One set timing out and the other not is a speed outcome and stays
judged (the timed-out set loses every comparison).
"""

from __future__ import annotations

import numpy as np

from audits.checks.compare import run_compare_audit
from audits.corpus.io import normalize
from audits.corpus.synthetic_pairs import synthesize_pairs


def _win_rate(timed_out_prefixes):
    corpus = synthesize_pairs(n_problems=10, share_a=0.7, share_tie=0.2, seed=0).corpus
    out = corpus["solution"].astype(str).str.startswith(tuple(timed_out_prefixes)) & (
        corpus["test_kind"] == "optimization")
    corpus.loc[out.to_numpy(), "status"] = "timeout"
    audit = run_compare_audit(normalize(corpus), a="A", b="B", n_boot=200)
    return audit, {f.metric: f for f in audit.findings}["win_rate"]


def test_every_comparison_two_timeouts_is_not_available():
    audit, finding = _win_rate(["A/", "B/"])
    assert finding.level == "n/a", finding
    assert "timed-out" in finding.message and "time limit" in finding.message, finding.message
    result = audit.runs[0].result
    assert result.n_both_timed_out == result.n_comparisons > 0


def test_one_set_timing_out_is_judged():
    audit, finding = _win_rate(["B/"])
    assert finding.level == "pass", finding  # A faster wherever B timed out
    assert audit.runs[0].result.win_rate.estimate == 1.0
    assert audit.runs[0].result.n_both_timed_out == 0


def test_timings_unchanged():
    audit, finding = _win_rate([])
    result = audit.runs[0].result
    assert result.n_both_timed_out == 0 and finding.level in ("pass", "warn")
    assert np.isfinite(result.win_rate.estimate)
