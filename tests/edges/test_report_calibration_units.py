"""The calibration page states the affine map's intercept in any unit of time.

The narrative printed the intercept in ms with one decimal: the issue's planted drift (53 ms) on a corpus of
microsecond benchmarks (every duration times 1e-4: 5.3 µs) read "+ 0.0 ms [0.0, 0.0]", an intercept of none.
"""

from __future__ import annotations

import re

import pytest

from audits.checks.calibration import run_calibration_audit
from audits.corpus.synthetic import synthesize
from audits.report.narrative import describe_calibration


@pytest.mark.parametrize("factor", [1.0, 1e-4, 100.0])
def test_the_intercept_reads_as_measured_at_every_scale(factor):
    corpus = synthesize(n_problems=8, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=2).corpus
    for column in ("duration_s", "timeout_s"):
        corpus[column] = corpus[column] * factor
    audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=50, n_boot_rank=0,
                                  families=("multiplicative", "affine"))
    text = describe_calibration(audit)
    (stated,) = re.findall(r"Affine map: .*? \+ (\S+) \[(\S+), (\S+)\] ms", text)
    values = [float(v.rstrip(",]")) for v in stated]
    estimate = float(audit.params.set_index(["family", "param"]).loc[("affine", "intercept_s"), "estimate"]) * 1000
    assert values[0] == pytest.approx(estimate, rel=5e-3) and values[0] == pytest.approx(53 * factor, rel=0.05)
    assert values[1] < values[0] < values[2]
