"""Reliability and calibration figures on zero, negative, NaN and single-point data (issue 24 item 4).

A corpus that validates can still give a figure durations of 0 (a coarse importer clock), negative or NaN
values (a foreign tool's subtraction), a single pair, or cells whose CV is 0 (a deterministic clock such as
instruction counts). Each figure must draw what a log axis can show and say, on the axes, how many points
it left out and why; none may raise. The figures are real matplotlib figures of real audits, with the
awkward values planted into the audit's own tables.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from audits.checks.calibration import run_calibration_audit
from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize
from audits.report.plots.calibration import bland_altman_plot, calibration_scatter
from audits.report.plots.reliability import repeat_cv_distributions


def _notes(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "not-drawn-note"]


def _drawn_points(fig) -> int:
    return sum(len(c.get_offsets()) for ax in fig.axes for c in ax.collections)


@pytest.fixture(scope="module")
def calibration():
    corpus = synthesize(n_problems=6, n_tests=3, n_solutions=6, n_repeats=2,
                        campaigns=(("stored", 1.0, 0.0), ("fresh", 0.7, 0.02)), seed=4).corpus
    return run_calibration_audit(corpus, source="stored", target="fresh", n_boot=20, n_boot_rank=20)


def _with_pairs(audit, x, y):
    frame = audit.pairing.frame.iloc[:len(x)].copy()
    frame["x"], frame["y"] = x, y
    return dataclasses.replace(audit, pairing=dataclasses.replace(audit.pairing, frame=frame))


def test_the_untouched_audit_draws_every_pair_without_a_note(calibration):
    n = len(calibration.pairing.frame)
    fig = calibration_scatter(calibration)
    assert _notes(fig) == [] and _drawn_points(fig) == n
    assert fig.axes[0].get_xscale() == "log"


@pytest.mark.parametrize("plot", [calibration_scatter, bland_altman_plot])
def test_zero_negative_and_nan_pairs_are_left_out_and_counted(calibration, plot):
    frame = calibration.pairing.frame
    x = frame["x"].to_numpy(dtype=float).copy()
    y = frame["y"].to_numpy(dtype=float).copy()
    x[0], y[1], x[2], y[3] = 0.0, -0.004, np.nan, np.inf
    fig = plot(_with_pairs(calibration, x, y))
    (note,) = _notes(fig)
    assert note.startswith(f"4 of {len(x):,} points not drawn")
    assert _drawn_points(fig) == len(x) - 4


@pytest.mark.parametrize("plot", [calibration_scatter, bland_altman_plot])
def test_a_single_pair_is_drawn(calibration, plot):
    fig = plot(_with_pairs(calibration, np.array([0.02]), np.array([0.03])))
    assert _notes(fig) == [] and _drawn_points(fig) == 1


@pytest.mark.parametrize("plot", [calibration_scatter, bland_altman_plot])
def test_nothing_positive_says_so(calibration, plot):
    fig = plot(_with_pairs(calibration, np.array([0.0, -1.0]), np.array([0.0, np.nan])))
    (note,) = _notes(fig)
    assert note.startswith("nothing to draw") and _drawn_points(fig) == 0


def test_repeat_cv_of_a_deterministic_clock_is_not_drawn_on_a_log_axis():
    corpus = synthesize(n_problems=4, n_repeats=3, seed=2).corpus.copy()
    audit = run_reliability_audit(corpus, n_boot=10)
    (run,) = audit.runs.values()
    cells = run.cells.copy()
    cells["cv"] = 0.0  # instruction counts: every repeat equal
    cells.loc[cells.index[:3], "cv"] = [0.01, 0.02, np.nan]
    planted = dataclasses.replace(audit, runs={k: dataclasses.replace(v, cells=cells) for k, v in audit.runs.items()})
    fig = repeat_cv_distributions(planted)
    (note,) = _notes(fig)
    assert note.startswith(f"{len(cells) - 2:,} of {len(cells):,} points not drawn")
    steps = [line for line in fig.axes[0].lines if line.get_drawstyle().startswith("steps")]
    assert len(steps) == 1 and np.all(steps[0].get_xdata() > 0)
