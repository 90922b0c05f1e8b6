"""Reliability and discriminability figures.

Each function takes an audit result (:class:`audits.checks.reliability.ReliabilityAudit`
or :class:`audits.checks.discriminability.DiscriminabilityAudit`) and returns a
matplotlib Figure (Agg backend; never shown). Environments are drawn side by
side so a quiet and a busy one can be compared at a glance.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from audits.report.plots._layout import names_as_text, loggable, note_not_drawn  # noqa: E402


def _labelled(audit):
    """(label, result) per run of a reliability or discriminability audit, in run order."""
    return [(str(run), result) for run, result in audit.runs.items()]


__all__ = ["ecdf_steps", "repeat_cv_distributions", "rank_drift_ranges", "robust_cv_per_problem", "near_floor_shares"]


def ecdf_steps(values: np.ndarray, *, max_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, share)`` of the exact ECDF of ``values``, thinned to at most ``max_steps`` steps.

    With n <= ``max_steps`` values every step is kept. Above, the sorted values are taken at evenly spaced
    ranks (the first and the last always), so consecutive drawn steps are at most 1/``max_steps`` of the
    share apart and each drawn point lies on the full ECDF: no sampling error, only a resolution, chosen
    below a pixel of the figure (see :func:`repeat_cv_distributions`).

    >>> x, y = ecdf_steps(np.arange(10.0), max_steps=4)
    >>> x.tolist(), y.tolist()
    ([0.0, 3.0, 6.0, 9.0], [0.1, 0.4, 0.7, 1.0])
    """
    ordered = np.sort(values)
    n = len(ordered)
    ranks = np.arange(n) if n <= max_steps else np.unique(np.linspace(0, n - 1, max_steps).round().astype(int))
    return ordered[ranks], (ranks + 1) / n


#: Height of the ECDF axes in pixels at the reports' resolution (4.5 in at 100 dpi, less the margins).
_ECDF_AXES_PIXELS = 400


@names_as_text
def repeat_cv_distributions(audit, *, max_steps: int = 4 * _ECDF_AXES_PIXELS, seed: int = 0) -> Figure:
    """Distribution of the repeat CV of every cell, one line per environment (ECDF, log x).

    The warn / fail thresholds are drawn as vertical lines and each
    environment's median is marked in the legend. Above ``max_steps`` cells an environment's ECDF is drawn
    through ``max_steps`` of its exact points (:func:`ecdf_steps`): at 10^7 rows a run has millions of cells,
    and drawing each one costs seconds and megabytes of PNG for no visible difference; the default, four
    steps per pixel of the axes' height, keeps the drawn curve within a quarter of a pixel of the full one
    whatever the number of cells (the share is what the y axis shows). ``seed`` is unused (kept for callers).
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    n_all = n_drawn = 0
    for name, env in _labelled(audit):
        cv = env.cells["cv"].to_numpy(dtype=float)
        n_all += len(cv)
        cv = cv[loggable(cv)]  # a CV of 0 (a deterministic clock) or NaN (one repeat) has no place on a log axis
        n_drawn += len(cv)
        if len(cv) == 0:
            continue
        x, share = ecdf_steps(cv, max_steps=max_steps)
        ax.step(x, share, where="post",
                label=f"{name} (median {np.median(cv):.1%}, {len(env.cells):,} cells)")
    t = audit.thresholds
    ax.axvline(t.repeat_cv_warn, color="orange", ls="--", lw=1, label=f"warn {t.repeat_cv_warn:.0%}")
    ax.axvline(t.repeat_cv_fail, color="red", ls="--", lw=1, label=f"fail {t.repeat_cv_fail:.0%}")
    ax.set_xscale("log")
    note_not_drawn(ax, n_all - n_drawn, max(n_all, 1), why="CV zero or undefined (one repeat): not on a log axis")
    ax.set_xlabel("repeat CV of a (test, solution) cell (sd / mean of ok repeats)")
    ax.set_ylabel("share of cells")
    ax.set_title("Repeat noise per environment")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


@names_as_text
def rank_drift_ranges(audit, *, max_problems: int = 60, seed: int = 0) -> Figure:
    """Peak-to-peak range of 100*q across repeats: per problem (box of its solutions), per environment.

    Left: distribution of every (problem, solution) range per environment
    (box plot). Right: for up to ``max_problems`` problems (seeded sample,
    ordered by their mean range in the first environment), each
    environment's mean range per problem.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [1, 2]})
    names = [name for name, _ in _labelled(audit)]
    data = [env.drift.per_solution["range"].to_numpy(dtype=float) for _, env in _labelled(audit)]
    data = [d[np.isfinite(d)] for d in data]
    if any(len(d) for d in data):
        left.boxplot([d if len(d) else [np.nan] for d in data], showfliers=True, flierprops={"markersize": 2})
        left.set_xticks(range(1, len(names) + 1), names)
    left.axhline(audit.thresholds.rank_range_warn, color="orange", ls="--", lw=1)
    left.axhline(audit.thresholds.rank_range_fail, color="red", ls="--", lw=1)
    left.set_ylabel("range of 100*q across repeats (points)")
    left.set_title("Rank drift per (problem, solution)")
    per_problem = {}
    for name, env in _labelled(audit):
        frame = env.drift.per_solution
        if len(frame):
            per_problem[name] = frame.groupby(frame["problem"].astype(str), sort=False, observed=True)["range"].mean()
    if per_problem:
        first = next(iter(per_problem.values()))
        problems = first.index.to_numpy()
        if len(problems) > max_problems:
            problems = np.random.default_rng(seed).choice(problems, max_problems, replace=False)
        problems = first.reindex(problems).sort_values().index
        x = np.arange(len(problems))
        for name, series in per_problem.items():
            right.plot(x, series.reindex(problems).to_numpy(), marker="o", ms=3, lw=0.8, label=name)
        right.set_xticks(x, problems, rotation=90, fontsize=6)
        right.legend(fontsize=8)
    right.set_ylabel("mean range (points)")
    right.set_title("Mean rank drift per problem")
    fig.tight_layout()
    return fig


@names_as_text
def robust_cv_per_problem(audit, *, noise_aware: bool = True) -> Figure:
    """Robust CV of every problem (sorted), per environment, with the 0.3 filterable line.

    Solid: robust CV; dotted (``noise_aware``): the noise-aware version.
    """
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for i, (name, env) in enumerate(_labelled(audit)):
        color = f"C{i}"
        rcv = np.sort(env.problems["robust_cv"].to_numpy(dtype=float))
        rcv = rcv[np.isfinite(rcv)]
        ax.plot(np.arange(len(rcv)) / max(len(rcv) - 1, 1), rcv, color=color,
                label=f"{name}: {np.mean(rcv >= audit.thresholds.robust_cv):.0%} filterable" if len(rcv) else name)
        if noise_aware:
            na = np.sort(env.problems["noise_aware_robust_cv"].to_numpy(dtype=float))
            na = na[np.isfinite(na)]
            ax.plot(np.arange(len(na)) / max(len(na) - 1, 1), na, color=color, ls=":",
                    label=f"{name}, noise-aware")
    ax.axhline(audit.thresholds.robust_cv, color="k", ls="--", lw=1, label=f"filterable >= {audit.thresholds.robust_cv}")
    ax.set_yscale("symlog", linthresh=0.05)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("problems (sorted by robust CV, share)")
    ax.set_ylabel("robust CV across optimization tests")
    ax.set_title("Workload span per problem")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


@names_as_text
def variance_shares(audit) -> Figure:
    """Stacked bars: share of log-duration variance by level, one bar per environment."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    names = [name for name, _ in _labelled(audit)]
    bottom = np.zeros(len(names))
    components = None
    for _, env in _labelled(audit):
        components = env.variance.table["component"].tolist()
        break
    for j, comp in enumerate(components or []):
        shares = np.array([np.nan_to_num(env.variance.share(comp)) for _, env in _labelled(audit)])
        ax.bar(names, shares, bottom=bottom, label=comp, color=f"C{j}")
        bottom += shares
    ax.set_ylabel("share of variance of log duration")
    ax.set_ylim(0, 1)
    ax.set_title("Variance components")
    ax.legend(fontsize=8, bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


@names_as_text
def near_floor_shares(audit) -> Figure:
    """Histogram of the per-problem share of optimization tests near the floor, per environment."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    bins = np.linspace(0, 1, 11)
    for name, env in _labelled(audit):
        share = env.problems["near_floor_share"].to_numpy(dtype=float)
        share = share[np.isfinite(share)]
        if len(share):
            ax.hist(share, bins=bins, alpha=0.5, label=f"{name} (floor {env.floor_s * 1000:.3g} ms)")
    ax.axvline(audit.thresholds.near_floor_problem_share, color="red", ls="--", lw=1, label="flag")
    ax.set_xlabel(f"share of a problem's tests with reference median <= {audit.thresholds.near_floor_factor:g}x floor")
    ax.set_ylabel("problems")
    ax.set_title("Tests dominated by start-up time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
