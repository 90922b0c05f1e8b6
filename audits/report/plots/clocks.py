"""Figures of the clocks audit (:func:`audits.checks.clocks.run_clocks_audit`): the same figures under each clock.

:func:`clock_figures` draws, per run and per measure, the five figures side by side (one panel per
figure, one bar per measure within each run); :func:`rank_agreement_figure` the within-problem rank
agreement (Kendall tau-b of the solutions' scores) of each measure with the first on the quietest run.
Both take a :class:`audits.checks.clocks.ClocksAudit` and return a matplotlib Figure (Agg backend; never
shown). Runs and problems are drawn in name order, so a figure is a function of the data as a set.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from audits.report.narrative import CLOCK_AGREEMENT, CLOCK_FIGURES  # noqa: E402
from audits.report.plots._layout import names_as_text, thin_tick_labels  # noqa: E402

__all__ = ["clock_figures", "rank_agreement_figure"]

#: Problems above which the agreement figure leaves out the per-problem tick labels (the dots remain).
MAX_LABELLED_PROBLEMS = 40


def _runs(table) -> list[tuple[str, str]]:
    return sorted({(str(e), str(c)) for e, c in zip(table["environment"], table["campaign"])})


@names_as_text
def clock_figures(audit) -> Figure:
    """Repeat CV, rank sd, ICC, strong-weak gap and filterable share per run, one bar per measure.

    One panel per figure (:data:`audits.report.narrative.CLOCK_FIGURES`, each titled with which way
    is better); in each panel one group of horizontal bars per run (name order, top to bottom), one
    bar per measure in the audit's order (a ``BarContainer`` labelled with the measure, its bars in
    run order). A figure that is not measurable (NaN) leaves its bar out.

    Examples
    --------
    >>> from audits.checks.clocks import run_clocks_audit
    >>> from audits.corpus.synthetic import synthesize
    >>> corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=2, seed=0).corpus
    >>> corpus["cpu_s"] = corpus["duration_s"] * 0.5
    >>> fig = clock_figures(run_clocks_audit(corpus, n_boot=10))
    >>> [c.get_label() for c in fig.axes[0].containers]
    ['duration_s', 'cpu_s']
    """
    table = audit.table
    if not len(table):
        raise ValueError("clock_figures: the clocks audit has no run")
    runs = _runs(table)
    measures = list(audit.measures)
    height = 0.8 / len(measures)
    fig, axes = plt.subplots(1, len(CLOCK_FIGURES), figsize=(3.1 * len(CLOCK_FIGURES), min(16.0, 1.6 + 0.5 * len(runs) * len(measures))),
                             sharey=True, squeeze=False)
    y = np.arange(len(runs))[::-1].astype(float)  # first run on top
    for ax, (column, label, better) in zip(axes[0], CLOCK_FIGURES):
        for j, measure in enumerate(measures):
            values = []
            for env, camp in runs:
                row = table[(table["environment"].astype(str) == env) & (table["campaign"].astype(str) == camp)
                            & (table["measure"] == measure)]
                values.append(float(row[column].iloc[0]) if len(row) else np.nan)
            ax.barh(y + (len(measures) - 1) / 2 * height - j * height, values, height=height * 0.95,
                    color=f"C{j}", label=measure)
        ax.set_title(f"{label}\n({better})", fontsize=8)
        ax.grid(axis="x", alpha=0.3)
        ax.tick_params(axis="x", labelsize=7)
    axes[0][0].set_yticks(y, [f"{env} · {camp}" for env, camp in runs], fontsize=8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(measures), fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.suptitle("The same figures under each clock, per run", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    thin_tick_labels(fig)
    return fig


@names_as_text
def rank_agreement_figure(audit) -> Figure:
    """Kendall tau-b of the solutions' scores under each measure against the first, per problem, on the
    quietest run: one panel per compared measure, one dot per problem (sorted by tau, then name), the
    mean over problems and the agreement line (:data:`audits.report.narrative.CLOCK_AGREEMENT`).

    Problem names label the dots up to :data:`MAX_LABELLED_PROBLEMS` problems.
    """
    agreement = audit.agreement
    compared = [m for m in audit.measures[1:] if (agreement["measure"] == m).any()]
    if audit.quietest is None or not compared:
        raise ValueError("rank_agreement_figure: no rank agreement was computed (one measure, or no run)")
    base = audit.measures[0]
    means = audit.mean_agreement()
    n_problems = max(int((agreement["measure"] == m).sum()) for m in compared)
    labelled = n_problems <= MAX_LABELLED_PROBLEMS
    fig, axes = plt.subplots(1, len(compared), figsize=(5.5 * len(compared), 1.8 + (0.18 * n_problems if labelled else 3)),
                             squeeze=False)
    for ax, measure in zip(axes[0], compared):
        part = agreement[(agreement["measure"] == measure).to_numpy()]
        rows = sorted(((float(t), str(p)) for t, p in zip(part["kendall_tau"], part["problem"]) if np.isfinite(t)))
        tau = np.array([r[0] for r in rows], dtype=float)
        y = np.arange(len(rows), dtype=float)
        ax.scatter(tau, y, s=18 if labelled else 6, color="C1", zorder=2, label="a problem")
        mean = means.get(measure, np.nan)
        if np.isfinite(mean):
            ax.axvline(mean, color="C1", lw=1.2, label=f"mean {mean:.3f}")
        ax.axvline(CLOCK_AGREEMENT, color="k", ls="--", lw=1, label=f"agree >= {CLOCK_AGREEMENT:g}")
        ax.set_xlim(-1.05, 1.05)
        if labelled:
            ax.set_yticks(y, [r[1] for r in rows], fontsize=7)
        else:
            ax.set_yticks([])
            ax.set_ylabel(f"{len(rows)} problems (sorted by tau)")
        ax.set_xlabel(f"Kendall tau-b of the solutions' scores, {measure} vs {base}")
        ax.set_title(f"{measure} vs {base}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    env, camp = audit.quietest
    fig.suptitle(f"Within-problem rank agreement on the quietest run, {env} · {camp} ({audit.quietest_by})",
                 fontsize=10)
    fig.tight_layout()
    thin_tick_labels(fig)
    return fig
