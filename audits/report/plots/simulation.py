"""Offline-simulator figures: reward-vs-quality curves and zero-advantage rate vs group size.

Each function takes an :class:`audits.checks.simulation.SimulationAudit` and returns a
matplotlib Figure (Agg backend; never shown).
"""

from __future__ import annotations

import textwrap

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from audits.report.plots._layout import names_as_text, thin_tick_labels  # noqa: E402

__all__ = ["reward_curves", "zero_advantage_by_group_size"]

_LEVEL_STYLE = {"pass": "-", "warn": "--", "fail": ":"}


def _chosen(audit, reward_environments, max_environments):
    have = list(audit.diagnostics["reward_environment"])
    names = have if reward_environments is None else list(reward_environments)
    unknown = [n for n in names if n not in set(have)]
    if unknown:
        raise ValueError(f"unknown reward environment(s) {unknown}; the audit has {have}")
    return names[:max_environments]


_LEVEL_COLOR = {"pass": "tab:green", "warn": "tab:orange", "fail": "tab:red"}


@names_as_text
def reward_curves(audit, *, reward_environments=None, max_environments: int = 8, ncols: int = 4) -> Figure:
    """Reward (rescaled to [0, 1]) per quality bin, one small panel per reward environment, against 1 - u.

    Small multiples rather than one crowded axes: every environment gets its own
    panel (shared axes, in rank order, at most ``max_environments``) with its
    curve, its +-1 sd band across repeat pairs (the only filled band in the
    panel) and the ideal diagonal, so environments with equal curves or wide
    bands cannot hide each other. The colour and line style encode the verdict
    (green solid pass, orange dashed warn, red dotted fail); each panel's title
    names the environment, its rank, verdict and AUC; one legend for the figure.
    """
    names = _chosen(audit, reward_environments, max_environments)
    diag = audit.diagnostics.set_index("reward_environment")
    n = max(len(names), 1)
    ncols = max(1, min(ncols, n))
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.9 * ncols + 0.4, 2.6 * nrows + 1.1), sharex=True,
                             sharey=True, squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names):
        c = audit.curves[audit.curves["reward_environment"] == name].sort_values("u_mid")
        level = str(diag.loc[name, "level"])
        color = _LEVEL_COLOR.get(level, "tab:blue")
        ax.plot([0, 1], [1, 0], color="black", lw=0.8, alpha=0.6)
        sd = c["sd_pairs"].to_numpy(dtype=float)
        if np.isfinite(sd).any():
            ax.fill_between(c["u_mid"], c["curve"] - np.nan_to_num(sd), c["curve"] + np.nan_to_num(sd),
                            color=color, alpha=0.2, lw=0)
        ax.plot(c["u_mid"], c["curve"], marker="o", ms=3, color=color, ls=_LEVEL_STYLE.get(level, "-"))
        # the verdict is wrapped to the panel's width (display only: the name itself is never cut)
        auc = float(diag.loc[name, "auc"])
        verdict = textwrap.fill(f"{diag.loc[name, 'verdict']} (AUC {'n/a' if not np.isfinite(auc) else f'{auc:.2f}'})",
                                38)
        ax.set_title(f"{int(diag.loc[name, 'rank'])}. {name}\n{verdict}", fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("measured quality u")
    for ax in axes[:, 0]:
        ax.set_ylabel("mean reward [0, 1]")
    handles = [Line2D([], [], color="black", lw=0.8, alpha=0.6, label="ideal: 1 - u"),
               Patch(color="0.5", alpha=0.3, lw=0, label="±1 sd across repeat pairs")]
    handles += [Line2D([], [], color=_LEVEL_COLOR[lv], ls=_LEVEL_STYLE[lv], marker="o", ms=3, label=f"verdict {lv}")
                for lv in ("pass", "warn", "fail")]
    fig.suptitle(f"Reward vs quality ({audit.environment} · {audit.campaign}); u: 0 = fastest "
                 "reference, 1 = slowest, measured on another repeat", fontsize=9)
    fig.tight_layout(rect=(0, 0.08 if nrows == 1 else 0.05, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    thin_tick_labels(fig)
    return fig


@names_as_text
def zero_advantage_by_group_size(audit, *, reward_environments=None, max_environments: int = 8) -> Figure:
    """Share of GRPO groups whose rewards are all equal, against the group size G (log2 axis)."""
    names = _chosen(audit, reward_environments, max_environments)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name in names:
        g = audit.groups[audit.groups["reward_environment"] == name].sort_values("group_size")
        ax.plot(g["group_size"], g["zero_advantage_rate"], marker="o", label=name)
    t = audit.thresholds
    ax.axhline(t.zero_advantage_warn, color="orange", ls="--", lw=1, label=f"warn {t.zero_advantage_warn:g}")
    ax.axhline(t.zero_advantage_fail, color="red", ls="--", lw=1, label=f"fail {t.zero_advantage_fail:g}")
    sizes = sorted(set(audit.groups["group_size"]))
    # the limits are the group sizes' own (always >= 1), so the log axis never depends on the rates, which may
    # all be NaN (nothing measured): then the axes say so instead of failing to log-scale
    ax.set_xscale("log", base=2)
    ax.set_xlim(min(sizes) / 1.3, max(sizes) * 1.3)
    rates = audit.groups.loc[audit.groups["reward_environment"].isin(names), "zero_advantage_rate"]
    if not np.isfinite(rates.to_numpy(dtype=float)).any():
        ax.text(0.5, 0.5, "zero-advantage rate not measured (no rollout scored)", transform=ax.transAxes,
                ha="center", va="center", fontsize=9, color="0.3")
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("group size G (rollouts per prompt)")
    ax.set_ylabel("zero-advantage rate (all rewards equal)")
    ax.set_title("GRPO groups without signal")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
