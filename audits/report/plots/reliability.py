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

def _labelled(audit):
    """(label, result) per run of a reliability or discriminability audit, in run order."""
    return [(str(run), result) for run, result in audit.runs.items()]


__all__ = ["repeat_cv_distributions", "rank_drift_ranges", "robust_cv_per_problem", "variance_shares",
           "near_floor_shares"]


def _sample(values: np.ndarray, max_points: int, seed: int) -> np.ndarray:
    if len(values) <= max_points:
        return values
    return np.random.default_rng(seed).choice(values, size=max_points, replace=False)


def repeat_cv_distributions(audit, *, max_points: int = 200_000, seed: int = 0) -> Figure:
    """Distribution of the repeat CV of every cell, one line per environment (ECDF, log x).

    The warn / fail thresholds are drawn as vertical lines and each
    environment's median is marked in the legend.
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name, env in _labelled(audit):
        cv = env.cells["cv"].to_numpy(dtype=float)
        cv = _sample(np.sort(cv[np.isfinite(cv) & (cv > 0)]), max_points, seed)
        if len(cv) == 0:
            continue
        cv = np.sort(cv)
        ax.step(cv, np.arange(1, len(cv) + 1) / len(cv), where="post",
                label=f"{name} (median {np.median(cv):.1%}, {len(env.cells):,} cells)")
    t = audit.thresholds
    ax.axvline(t.repeat_cv_warn, color="orange", ls="--", lw=1, label=f"warn {t.repeat_cv_warn:.0%}")
    ax.axvline(t.repeat_cv_fail, color="red", ls="--", lw=1, label=f"fail {t.repeat_cv_fail:.0%}")
    ax.set_xscale("log")
    ax.set_xlabel("repeat CV of a (test, solution) cell (sd / mean of ok repeats)")
    ax.set_ylabel("share of cells")
    ax.set_title("Repeat noise per environment")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


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
