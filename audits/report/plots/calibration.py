"""Calibration figures: scatter with every fitted family, Bland-Altman (log scale), drift per campaign.

Each function takes a :class:`audits.checks.calibration.CalibrationAudit` and returns
a matplotlib Figure (Agg backend; never shown).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from audits.report.plots._layout import (  # noqa: E402
    log_duration_axis,
    loggable,
    names_as_text,
    note_not_drawn,
    thin_tick_labels,
)
from stats.calibration import lopo_predictions  # noqa: E402

__all__ = ["calibration_scatter", "bland_altman_plot", "drift_plot"]


def _sample(n: int, max_points: int, seed: int) -> np.ndarray:
    if n <= max_points:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=max_points, replace=False))


@names_as_text
def calibration_scatter(audit, *, max_points: int = 5000, seed: int = 0) -> Figure:
    """Target vs source medians (log-log) with the curve of every fitted family and the identity.

    One line per fitted family (labelled with its LOPO R^2) plus a dashed
    identity line; at most ``max_points`` pairs are drawn (seeded sample).
    Ticks carry short duration labels, none overlapping another, whatever the
    span of the data (a factor of 1.2 or six decades).
    """
    frame = audit.pairing.frame
    x = frame["x"].to_numpy(dtype=float)
    y = frame["y"].to_numpy(dtype=float)
    n_all = len(x)
    keep = loggable(x, y)  # log-log: only positive, finite pairs are drawn; the rest are counted in a note
    x, y = x[keep], y[keep]
    pick = _sample(len(x), max_points, seed)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    note_not_drawn(ax, n_all - len(x), n_all)
    if len(x) == 0:
        ax.set_title(f"calibration {audit.source} → {audit.target}")
        return fig
    ax.scatter(x[pick], y[pick], s=5, alpha=0.35, color="0.35", linewidths=0, label=f"pairs (n={n_all:,})")
    lo, hi = float(np.min(x)), float(np.max(x))
    lo, hi = (lo / 1.5, hi * 1.5) if lo == hi else (lo, hi)  # one point (or one value): a span to draw the maps on
    grid = np.geomspace(lo, hi, 200)
    for row in audit.fits.to_dict("records"):
        try:
            pred = np.asarray(audit.fit(row["name"]).predict(grid), dtype=float)
        except (ValueError, KeyError):  # a family the audit could not fit on this corpus has no curve
            continue
        shown = loggable(pred)
        ax.plot(grid[shown], pred[shown], linewidth=1.6, label=f"{row['name']} (LOPO R² {row['lopo_r2']:.3f})")
    ax.plot(grid, grid, linestyle="--", color="black", linewidth=1, label="identity")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{audit.source} median duration")
    ax.set_ylabel(f"{audit.target} median duration")
    ax.set_title(f"calibration {audit.source} → {audit.target}")
    ax.legend(fontsize=7, loc="upper left")
    # Short duration labels ("24 ms") at decades, 1-2-5 or nice linear steps by the span, and no two
    # touching: matplotlib's default labels the minor ticks as "2.4x10^-2" on a view under a decade.
    log_duration_axis(ax)
    fig.tight_layout()
    thin_tick_labels(fig)
    return fig


@names_as_text
def bland_altman_plot(audit, *, calibrated: bool = False, max_points: int = 5000, seed: int = 0) -> Figure:
    """Bland-Altman on the log scale: log(y/x) against the mean of the logs.

    Horizontal lines: the bias and the limits of agreement, each with its
    bootstrap CI as a shaded band. ``calibrated=True`` plots the target
    against the calibration family's out-of-fold predictions instead of the
    raw source.
    """
    frame = audit.pairing.frame
    x = frame["x"].to_numpy(dtype=float)
    y = frame["y"].to_numpy(dtype=float)
    ba = audit.bland_altman
    label = audit.source
    if calibrated:
        pred = lopo_predictions(x, y, frame["problem"].astype(str).to_numpy(), audit.calibration_family)
        keep = np.isfinite(pred) & (pred > 0)
        x, y = pred[keep], y[keep]
        ba = audit.bland_altman_calibrated
        label = f"{audit.calibration_family}({audit.source}), out of fold"
    n_all = len(x)
    keep = loggable(x, y)  # log ratios exist for positive pairs only; the rest are counted in a note
    x, y = x[keep], y[keep]
    d = np.log(y) - np.log(x)
    m = 0.5 * (np.log(y) + np.log(x))
    pick = _sample(len(d), max_points, seed)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    note_not_drawn(ax, n_all - len(x), n_all, why="zero, negative or NaN: no log ratio")
    ax.scatter(m[pick], d[pick], s=5, alpha=0.35, color="0.35", linewidths=0)
    for name, interval, color in (("bias", ba.bias, "C0"), ("lower LoA", ba.lower, "C3"), ("upper LoA", ba.upper, "C3")):
        if not np.isfinite(interval.estimate):  # not measured on this corpus (NaN): no line to draw
            continue
        ax.axhline(interval.estimate, color=color, linewidth=1.5,
                   label=f"{name} {interval.estimate:+.3f} (×{np.exp(interval.estimate):.3f})")
        if np.isfinite(interval.low) and np.isfinite(interval.high):
            ax.axhspan(interval.low, interval.high, color=color, alpha=0.15)
    ax.axhline(0.0, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel(f"mean of log durations (log s), {label} and {audit.target}")
    ax.set_ylabel(f"log({audit.target} / {'prediction' if calibrated else audit.source})")
    ax.set_title(f"Bland-Altman (log scale), n={ba.n:,} pairs, {ba.n_problems} problems")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


@names_as_text
def drift_plot(audit) -> Figure:
    """Per-campaign fit against the anchor: one panel per parameter, estimate and CI per campaign.

    The no-drift value (slope 1, intercept 0) is the dashed line; campaigns
    whose change from the previous campaign has a CI excluding 0 are drawn in red.
    """
    drift = audit.drift
    if drift is None or len(drift) == 0:
        raise ValueError("this audit has no drift table (the corpus holds a single campaign)")
    params = list(dict.fromkeys(drift["param"]))
    fig, axes = plt.subplots(1, len(params), figsize=(4.2 * len(params), 3.8), squeeze=False)
    for ax, param in zip(axes[0], params):
        sub = drift.loc[drift["param"] == param]
        for j, (env, rows) in enumerate(sub.groupby("environment", sort=True)):
            pos = np.arange(len(rows)) + 0.1 * j
            est = rows["estimate"].to_numpy(dtype=float)
            err = np.vstack([est - rows["ci_low"].to_numpy(dtype=float), rows["ci_high"].to_numpy(dtype=float) - est])
            colors = np.where(rows["changed"].eq(True).to_numpy(), "C3", f"C{j}")
            ax.errorbar(pos, est, yerr=err, fmt="none", ecolor="0.5", capsize=3)
            ax.scatter(pos, est, c=list(colors), zorder=3, label=str(env))
            ax.set_xticks(pos, rows["campaign"].astype(str).tolist())
        ax.axhline(float(sub["identity"].iloc[0]), color="black", linestyle="--", linewidth=1)
        ax.set_title(param)
        ax.set_xlabel("campaign")
    axes[0][0].legend(fontsize=7, title="environment")
    fig.suptitle("drift against the anchor campaign (red: changed from the previous campaign)", fontsize=9)
    fig.tight_layout()
    thin_tick_labels(fig)
    return fig
