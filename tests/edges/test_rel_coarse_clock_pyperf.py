"""pyperf's checks (the ``benchmark`` profile) on a coarse clock: ties do not read as "enough processes".

Planted truth: programs of about 20 ms with a repeat CV of 5 % (sd of log 0.05), 5 processes per benchmark: a
95 % CI of 1 % of the mean needs ceil(4 x 1.96^2 x 0.05^2 / 0.01^2) = 385 processes, so nearly every stable
benchmark has too few and ``too_few_processes_share`` warns (pyperf fails it only when none reaches the precision).
Timed by a clock of 10 ms, the benchmarks whose five values tie read a CV of 0, "stable, 1 process needed", and
were the only stable ones: the share read 0 % "pass". With the tied cells one clock step apart (CV step / mean,
:func:`audits.checks.reliability._tie_bound_cells`) no stable benchmark is left, so the share cannot be judged:
n/a with the step. The same at programs of 20 ns and of 10 s (each with its clock scaled alike).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audits.checks.declared.reliability import ReliabilityThresholds
from audits.checks.reliability import run_reliability_audit
from audits.corpus.table import normalize
from tests.edges import test_rel_coarse_clock_ties as planted
from tests.edges.coarse_clock_corpora import on_clock

TICK = 0.01


@pytest.fixture(scope="module")
def quiet():
    return planted._corpus(sigma=0.05)


def _finding(frame):
    audit = run_reliability_audit(normalize(frame), n_boot=10,
                                  thresholds=ReliabilityThresholds.for_profile("benchmark"))
    return next(f for f in audit.findings if f.metric == "too_few_processes_share")


def test_the_fine_clock_warns_as_planted(quiet):
    assert math.ceil(4 * 1.959964 ** 2 * 0.05 ** 2 / 0.01 ** 2) == 385
    assert _finding(quiet).level == "warn"


@pytest.mark.parametrize("scale", [1.0, 1e-6, 500.0])
def test_ties_are_not_enough_processes(quiet, scale):
    frame = quiet.copy()
    frame["duration_s"] *= scale
    ticked = on_clock(frame, TICK * scale)
    cells = planted._cells(ticked)
    cv = cells["sd"] / cells["mean"]
    stable = cv < 0.10
    assert stable.any() and (cells.loc[stable, "sd"] == 0).all()  # every stable benchmark is a tie
    found = _finding(ticked)
    assert found.level == "n/a", (found.level, found.value, found.message)
    step = cells["step"].min()
    assert np.isclose(step, TICK * scale, rtol=1e-6) and f"{step:.3g} s" in found.message
