"""``speedaudit compare --n-boot 0``: the win rate is n/a for want of resamples, and says so.

The win rate is judged by whether its bootstrap CI over problems excludes 1/2. With ``n_boot = 0`` there is
no CI, and the finding said "10 problem with a comparison: no interval over problems", the reason of a
single problem, on a comparison of ten: a user would add problems, which changes nothing. The reason now
names n_boot (as the calibration audit's intercept and slope do); one problem keeps its own reason.
"""

from __future__ import annotations

from audits.checks.compare import run_compare_audit
from audits.corpus.io import normalize
from audits.corpus.synthetic_pairs import synthesize_pairs


def _win_rate(n_problems: int, n_boot: int):
    corpus = normalize(synthesize_pairs(n_problems=n_problems, share_a=0.7, share_tie=0.2, seed=0).corpus)
    audit = run_compare_audit(corpus, a="A", b="B", n_boot=n_boot)
    return {f.metric: f for f in audit.findings}["win_rate"]


def test_no_resamples_names_n_boot():
    finding = _win_rate(10, 0)
    assert finding.level == "n/a"
    assert "n_boot" in finding.message, finding
    assert "10 problem with a comparison" not in finding.message, finding


def test_one_problem_keeps_its_reason():
    finding = _win_rate(1, 200)
    assert finding.level == "n/a"
    assert "1 problem with a comparison" in finding.message, finding


def test_resamples_judge():
    assert _win_rate(10, 200).level in ("pass", "warn")
