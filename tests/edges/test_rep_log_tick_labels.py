"""Log axes label their ticks as plain numbers, never as the mathtext string.

Every figure is drawn with ``text.parse_math`` off (names with two ``$`` are shown as written:
audits.report.narrative.common.PLAIN_TEXT), and a log axis's tick labels are matplotlib's mathtext
(``$\\mathdefault{10^{-1}}$``): the repeat-CV figure of the reliability page, the calibration scatter and the
simulation's group-size figure showed that string under every tick (seen in headless Chromium on a report of a
real archive, oj-lab/problem-packages). ``figure_png`` now gives such axes plain labels ("0.1", "1"; base 2:
"2", "4", ...), the same ticks labelled as before.
"""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from audits.checks.calibration import run_calibration_audit  # noqa: E402
from audits.checks.reliability import run_reliability_audit  # noqa: E402
from audits.corpus.synthetic import synthesize  # noqa: E402
from audits.report.narrative.common import figure_png  # noqa: E402
from audits.report.plots.calibration import calibration_scatter  # noqa: E402
from audits.report.plots.reliability import repeat_cv_distributions  # noqa: E402

NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[-+]\d+)?$")


def _tick_labels(fig) -> list[str]:
    """Every non-empty tick label of every log axis of ``fig``, as drawn by figure_png."""
    figure_png(fig)
    labels = []
    for ax in fig.get_axes():
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                labels += [t.get_text() for t in axis.get_majorticklabels() + axis.get_minorticklabels()
                           if t.get_text()]
    plt.close(fig)
    return labels


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=5, n_tests=3, n_solutions=5, n_repeats=3, seed=2,
                      campaigns=(("stored", 1.0, 0.0), ("fresh", 0.7, 0.02))).corpus


def test_the_repeat_cv_and_calibration_figures_label_log_ticks_without_mathtext(corpus):
    labels = _tick_labels(repeat_cv_distributions(run_reliability_audit(corpus, n_boot=10)))
    assert labels and all(NUMBER.match(text) for text in labels), labels
    # durations: the axis's own labels ("20 ms"), no mathtext either
    labels = _tick_labels(calibration_scatter(run_calibration_audit(corpus, source="stored", target="fresh",
                                                                    n_boot=10, n_boot_rank=10)))
    assert labels and not any("$" in text or "mathdefault" in text for text in labels), labels


def test_a_base_two_axis_and_a_narrow_range_keep_their_labelled_ticks():
    fig, ax = plt.subplots()
    ax.plot([1, 64], [0, 1])
    ax.set_xscale("log", base=2)
    assert _tick_labels(fig) == ["0.5", "1", "2", "4", "8", "16", "32", "64", "128"]
    fig, ax = plt.subplots()
    ax.plot([0.03, 0.09], [0, 1])  # less than a decade: matplotlib labels minor ticks too
    ax.set_xscale("log")
    labels = _tick_labels(fig)
    assert {"0.03", "0.04"} <= set(labels) and all(NUMBER.match(text) for text in labels), labels
