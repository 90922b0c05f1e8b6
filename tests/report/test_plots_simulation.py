"""Legibility of the reward-vs-quality figure: small multiples, one band per panel, one legend.

Measured with matplotlib's renderer on a real simulation audit (six shipped reward environments, three of
which have equal curves on this corpus: on one axes they hid each other).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import PolyCollection  # noqa: E402

from audits.corpus.synthetic import synthesize  # noqa: E402
from audits.report.plots.simulation import reward_curves  # noqa: E402
from audits.report.inputs import resolve_files  # noqa: E402
from audits.checks.reward_environments import load_environments  # noqa: E402
from audits.checks.simulation import run_simulation_audit  # noqa: E402
from tests.report.test_plots_legible import _boxes, _overlaps  # noqa: E402

SHIPPED = ["top30", "uniform_timeout", "ranked_worst_p80", "duration_filter_2s", "duration_filter_0.5s",
           "duration_filter_0.1s"]


def test_reward_curves_one_band_per_panel_and_every_reward_environment_shown():
    corpus = synthesize(n_problems=8, n_tests=4, n_correctness_tests=0, n_solutions=8, n_incorrect=0,
                        n_candidates=0, n_repeats=3, busy=True, seed=3).corpus
    envs = load_environments(resolve_files([f"fixtures/environments/{n}.yaml" for n in SHIPPED]))
    audit = run_simulation_audit(corpus, reward_environments=envs, environment="quiet", n_boot=20)
    fig = reward_curves(audit)
    try:
        panels = [ax for ax in fig.axes if ax.get_visible()]
        assert len(panels) == len(envs)
        first_lines = [ax.get_title().split("\n")[0] for ax in panels]
        ranking = list(audit.diagnostics["reward_environment"])
        assert first_lines == [f"{i}. {name}" for i, name in enumerate(ranking, start=1)]
        for ax in panels:
            assert sum(isinstance(c, PolyCollection) for c in ax.collections) <= 1
            assert len([line for line in ax.get_lines() if len(line.get_xdata()) > 2]) == 1  # one curve
        legend_texts = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        assert "ideal: 1 - u" in legend_texts and any("sd" in t for t in legend_texts)
        assert {"verdict pass", "verdict warn", "verdict fail"} <= set(legend_texts)
        # titles of neighbouring panels, the legend and the tick labels do not collide
        legend_box = fig.legends[0].get_window_extent(fig.canvas.get_renderer())
        titles = _boxes(fig, [ax.title for ax in panels])
        assert _overlaps(titles) == []
        for ax in panels:
            assert not ax.get_window_extent(fig.canvas.get_renderer()).overlaps(legend_box)
            for axis in (ax.xaxis, ax.yaxis):
                assert _overlaps(_boxes(fig, axis.get_ticklabels(which="both"))) == []
    finally:
        plt.close(fig)
