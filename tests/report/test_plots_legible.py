"""Legibility of the report figures, measured with matplotlib's own renderer on real audits.

Each check reads what the PNG shows: the display-space bounding boxes of the visible tick labels and
point labels (``Text.get_window_extent`` after a draw), and the filled bands (``PolyCollection``s)
per axes. The audits are real runs on synthetic corpora whose duration span is chosen to provoke the
old failures (a view under a decade made matplotlib label minor ticks "2.4x10^-2" side by side).
"""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from audits.checks.aggregation import run_aggregation_audit  # noqa: E402
from audits.corpus.synthetic import synthesize  # noqa: E402
from audits.report.plots._layout import format_duration  # noqa: E402
from audits.report.plots.aggregation import stability_range_figure  # noqa: E402
from audits.report.plots.calibration import calibration_scatter  # noqa: E402
from audits.report.inputs import calibrate_runs  # noqa: E402

def _corpus(seed=3):
    return synthesize(n_problems=8, n_tests=4, n_correctness_tests=0, n_solutions=8, n_incorrect=0,
                      n_candidates=0, n_repeats=3, busy=True, seed=seed).corpus


def _boxes(fig, texts):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]


def _overlaps(boxes):
    return [(a, b) for (a, ba), (b, bb) in itertools.combinations(boxes, 2) if ba.overlaps(bb)]


def _tick_labels(ax, axis):
    return list((ax.xaxis if axis == "x" else ax.yaxis).get_ticklabels(which="both"))


@pytest.mark.parametrize("power", [0.02, 0.1, 0.5, 1.0, 2.0])
def test_calibration_scatter_tick_labels_never_overlap(power):
    """Spans from a factor ~1.1 to several decades: >= 2 labels per axis, none touching another."""
    corpus = _corpus()
    d = corpus["duration_s"].to_numpy(dtype=float)
    corpus["duration_s"] = 0.02 * (d / d.min()) ** power
    audit = calibrate_runs(corpus, "quiet/c0", "busy/c0", n_boot=20, n_boot_rank=5)
    fig = calibration_scatter(audit)
    try:
        ax = fig.axes[0]
        for axis in ("x", "y"):
            boxes = _boxes(fig, _tick_labels(ax, axis))
            assert len(boxes) >= 2, (power, axis, [b[0] for b in boxes])
            assert _overlaps(boxes) == [], (power, axis)
            # the labels are durations that sit inside the view (no "10^{-2}" mathtext, no stray edge label)
            lo, hi = sorted((ax.get_xlim if axis == "x" else ax.get_ylim)())
            for text, _ in boxes:
                assert text.endswith(("s", "ms", "µs")), text
            ticks = (ax.get_xticks if axis == "x" else ax.get_yticks)()
            assert all(lo <= t <= hi for t in ticks if format_duration(t) in {b[0] for b in boxes})
    finally:
        plt.close(fig)


def test_format_duration_against_hand_worked_values():
    assert [format_duration(v) for v in (0.0245, 2.5, 7.5e-5, 1e-3, 0.1)] == ["24.5 ms", "2.5 s", "75 µs",
                                                                            "1 ms", "100 ms"]
    assert format_duration(0.0) == "" and format_duration(float("nan")) == ""


@pytest.fixture(scope="module")
def aggregation_audit():
    corpus = synthesize(n_problems=10, n_tests=4, n_correctness_tests=0, n_solutions=8, n_incorrect=0,
                        n_candidates=0, n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.7, 0.05)),
                        seed=5).corpus
    return run_aggregation_audit(corpus, n_boot=30)


def test_pareto_point_labels_do_not_overlap_and_name_the_front(aggregation_audit):
    table = aggregation_audit.table
    fig = stability_range_figure(table)
    try:
        runs = table[["environment", "campaign"]].drop_duplicates()
        scatter_axes = fig.axes[:len(runs)]
        assert len(scatter_axes) == len(runs) >= 2
        renderer = fig.canvas.get_renderer()
        for ax in scatter_axes:
            labels = [t for t in ax.texts if t.get_visible()]
            boxes = _boxes(fig, labels)
            assert len(boxes) >= 3
            assert _overlaps(boxes) == []
            legend = ax.get_legend().get_window_extent(renderer)
            frame = ax.get_window_extent(renderer)
            for text, box in boxes:
                assert not box.overlaps(legend), text
                assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            # the recommended aggregator (lowest ratio on the front) is one of the labels
            env, camp = ax.get_title().split(" · ")
            t = table[(table["environment"] == env) & (table["campaign"] == camp) & table["pareto"]]
            assert str(t.sort_values(["ratio", "aggregator"]).iloc[0]["aggregator"]) in {b[0] for b in boxes}
    finally:
        plt.close(fig)


def test_pareto_figure_does_not_depend_on_row_order(aggregation_audit):
    table = aggregation_audit.table
    shuffled = table.sample(frac=1.0, random_state=1).reset_index(drop=True)

    def layout(frame):
        fig = stability_range_figure(frame)
        try:
            fig.canvas.draw()
            r = fig.canvas.get_renderer()
            return [(ax.get_title(), sorted((t.get_text(), tuple(np.round(t.get_window_extent(r).bounds, 3)))
                                            for t in ax.texts)) for ax in fig.axes]
        finally:
            plt.close(fig)

    assert layout(table) == layout(shuffled)


#: problem names that matplotlib would read as mathtext: one that is not valid math, one that is
MATH_LIKE = ("cost $\\frac$ here", "$5 or $10")


def test_names_with_dollar_signs_are_drawn_as_written():
    """A name with two ``$`` is text, not math: the figures that label problems draw, and show the names as written
    (before, ``cost $\\frac$ here`` raised ValueError when the figure was drawn, failing the page)."""
    from audits.checks.reliability import run_reliability_audit
    from audits.report.narrative.common import figure_png
    from audits.report.plots.reliability import rank_drift_ranges

    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=0, seed=2).corpus
    corpus["problem"] = corpus["problem"].astype(str).replace({"p0000": MATH_LIKE[0], "p0001": MATH_LIKE[1]})
    audit = run_reliability_audit(corpus, n_boot=20)
    fig = rank_drift_ranges(audit)  # its right panel: one tick per problem, labelled with the problem's name
    try:
        assert figure_png(fig).startswith(b"\x89PNG")
        shown = {t.get_text() for ax in fig.axes for t in ax.get_xticklabels()}
        assert set(MATH_LIKE) <= shown, shown
    finally:
        plt.close(fig)
