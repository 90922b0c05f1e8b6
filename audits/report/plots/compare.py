"""Figure of the paired comparison (:func:`audits.checks.compare.run_compare_audit`).

:func:`win_rate_figure` draws, per run (one panel each, in the audit's run order), every problem's win
rate of A over B (one dot per problem, problems sorted by win rate then name, so the figure is a function
of the data as a set), the headline win rate as a line with its bootstrap CI as a band, and 1/2 (no
difference) dashed. Returns a matplotlib Figure (Agg backend; never shown).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from audits.report.plots._layout import names_as_text  # noqa: E402

__all__ = ["win_rate_figure"]


def problem_order(problems) -> tuple[np.ndarray, list[str]]:
    """(win rates, problem names) of the problems with a win rate, by win rate then name."""
    rows = sorted((float(w), str(p)) for w, p in zip(problems["win_rate"], problems["problem"]) if np.isfinite(w))
    return np.array([w for w, _ in rows], dtype=float), [p for _, p in rows]


@names_as_text
def win_rate_figure(audit) -> Figure:
    """Per run: each problem's win rate (dots), the headline win rate and its CI (line and band), and 1/2.

    Examples
    --------
    >>> from audits.checks.compare import run_compare_audit
    >>> from audits.corpus.io import normalize
    >>> from audits.corpus.synthetic_pairs import synthesize_pairs
    >>> audit = run_compare_audit(normalize(synthesize_pairs(n_problems=6, seed=0).corpus), a="A", b="B", n_boot=50)
    >>> fig = win_rate_figure(audit)
    >>> len(fig.axes), len(fig.axes[0].collections[0].get_offsets())
    (1, 6)
    """
    runs = audit.runs
    if not runs:
        raise ValueError("win_rate_figure: the comparison has no run")
    fig, axes = plt.subplots(len(runs), 1, figsize=(7.5, 2.6 * len(runs)), squeeze=False)
    for ax, r in zip(axes[:, 0], runs):
        values, names = problem_order(r.result.problems)
        x = np.arange(len(values))
        ax.scatter(x, values, s=22, color="#1f4e79", zorder=3, label="problem")
        iv = r.result.win_rate
        if np.isfinite(iv.estimate):
            ax.axhline(iv.estimate, color="#c0392b", lw=1.5, label=f"win rate {iv.estimate:.3f}")
        if np.isfinite(iv.low):
            ax.axhspan(iv.low, iv.high, color="#c0392b", alpha=0.15, label=f"{100 * iv.level:g} % CI")
        ax.axhline(0.5, color="0.4", lw=1, ls="--", label="1/2: no difference")
        ax.set_ylim(-0.05, 1.05)
        ax.set_xticks(x, names if len(names) <= 30 else [""] * len(names), rotation=90, fontsize=7)
        ax.set_ylabel("win rate of A")
        ax.set_title(f"{r.run}: {audit.subject}", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig
