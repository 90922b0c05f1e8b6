"""The calibration's ptau_swing_pp without candidates says so, whatever n_boot is.

p_tau scores the target's candidates while the intercept moves across its bootstrap CI. A target run without
candidates has nothing to score; with ``n_boot = 0`` the finding gave the other reason, "n_boot = 0 draws no
resamples: run with --n-boot 1000", and rerunning as advised left it n/a. The reason is the missing candidates
whenever there are none; the resamples are named only when candidates exist.
"""

from __future__ import annotations

from audits.checks.calibration import run_calibration_audit
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize


def _ptau(n_candidates: int, n_boot: int):
    corpus = synthesize(n_problems=5, n_tests=3, n_solutions=5, n_candidates=n_candidates, n_repeats=2,
                        campaigns=(("stored", 1.0, 0.0), ("fresh", 1.1, 0.002)), seed=3).corpus
    audit = run_calibration_audit(corpus, source=Run("quiet", "stored"), target=Run("quiet", "fresh"),
                                  n_boot=n_boot, n_boot_rank=20)
    return {f.metric: f for f in audit.findings}["ptau_swing_pp"]


def test_no_candidates_is_the_reason_at_any_n_boot():
    for n_boot in (0, 50):
        finding = _ptau(0, n_boot)
        assert finding.level == "n/a"
        assert "no candidates" in finding.message and "--n-boot" not in finding.message, (n_boot, finding.message)


def test_candidates_without_resamples_name_n_boot():
    finding = _ptau(3, 0)
    assert finding.level == "n/a" and "--n-boot" in finding.message, finding.message
    assert _ptau(3, 50).level in ("pass", "warn", "fail")
