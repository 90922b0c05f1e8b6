"""The reward environments the simulation screens by default judge a corpus the same in any unit of time.

`speedaudit audit all` and `speedaudit report` screen the shipped examples when no --reward-env is given. They were
the study's designs in seconds: on quiet-a (programs of 5-250 ms) at x 100 duration_filter_2s, _0.5s and _0.1s
dropped every test and failed "sparse, non-monotone, off-diagonal, dead groups" and uniform_timeout failed sparse,
while at x 1e-4 the filters passed as top30 does and the timeout failed saturated: the default verdicts read the
unit of time. The defaults are now the relative forms (duration_filter_q90/q50/q10, uniform_timeout_2x;
tests/edges/test_sim_scale.py); the study's files stay shipped for --reward-env and the grid.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from audits.checks.registered import AUDITS
from audits.report.inputs import load_corpora

ROOT = Path(__file__).resolve().parents[2]


def _levels(corpus, factor: float) -> list:
    scaled = corpus.copy()
    for column in ("duration_s", "cpu_s", "timeout_s"):
        if column in scaled.columns:
            scaled[column] = scaled[column] * factor
    result = AUDITS["simulation"].run(scaled, {"n_boot": 20})
    findings = [f for one in (result if isinstance(result, tuple) else (result,)) for f in one.findings]
    return sorted((f.subject, f.metric, f.level) for f in findings)


@pytest.fixture(scope="module")
def quiet_a():
    return load_corpora([str(ROOT / "fixtures" / "corpora" / "quiet-a.parquet")])


@pytest.mark.parametrize("factor", [1e-4, 100.0])
def test_the_default_screen_judges_the_same_in_any_unit_of_time(quiet_a, factor):
    base = _levels(quiet_a, 1.0)
    assert len({subject for subject, _, _ in base}) == 7  # the seven shipped examples, each judged
    assert _levels(quiet_a, factor) == base
