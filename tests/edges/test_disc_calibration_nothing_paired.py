"""Calibration onto a run whose every execution timed out: pairs_lost_share says that no cell pairs up.

Every cell of the target lost (no ok repeat), the finding failed with "the pairs that remain may not represent
the corpus", about pairs that do not exist. It now says no cell pairs up and nothing can be calibrated; a partial
loss keeps its message.
"""

from __future__ import annotations

from audits.checks.calibration import run_calibration_audit
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize


def _lost(share_timed_out: float):
    corpus = synthesize(n_problems=5, n_tests=3, n_solutions=4, n_repeats=2,
                        campaigns=(("stored", 1.0, 0.0), ("fresh", 1.1, 0.002)), seed=3).corpus
    fresh = (corpus["campaign"] == "fresh").to_numpy() & (corpus["role"] != "floor").to_numpy()
    problems = sorted(corpus["problem"].astype(str).unique())
    out = corpus["problem"].astype(str).isin(problems[: round(share_timed_out * len(problems))]).to_numpy()
    corpus.loc[fresh & out, "status"] = "timeout"
    audit = run_calibration_audit(corpus, source=Run("quiet", "stored"), target=Run("quiet", "fresh"), n_boot=20,
                                  n_boot_rank=10)
    return {f.metric: f for f in audit.findings}["pairs_lost_share"]


def test_nothing_paired():
    finding = _lost(1.0)
    assert finding.level == "fail" and finding.value == 1.0
    assert "no cell pairs up" in finding.message and "pairs that remain" not in finding.message, finding.message


def test_partial_loss_keeps_its_message():
    finding = _lost(0.6)
    assert finding.level == "fail" and "pairs that remain" in finding.message, finding.message
