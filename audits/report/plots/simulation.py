"""Offline-simulator figures: reward-vs-quality curves and zero-advantage rate vs group size.

Each function takes an :class:`audits.simulation.SimulationAudit` and returns a
matplotlib Figure (Agg backend; never shown).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["reward_curves", "zero_advantage_by_group_size"]

_LEVEL_STYLE = {"pass": "-", "warn": "--", "fail": ":"}


def _chosen(audit, reward_environments, max_environments):
    have = list(audit.diagnostics["reward_environment"])
    names = have if reward_environments is None else list(reward_environments)
    unknown = [n for n in names if n not in set(have)]
    if unknown:
        raise ValueError(f"unknown reward environment(s) {unknown}; the audit has {have}")
    return names[:max_environments]


def reward_curves(audit, *, reward_environments=None, max_environments: int = 8) -> Figure:
    """Reward (rescaled to [0, 1]) per quality bin, one line per reward environment, against the ideal diagonal 1 - u.

    Line style encodes the verdict (solid pass, dashed warn, dotted fail); the
    shaded band is +-1 sd of the curve across repeat pairs. Reward environments are
    taken in rank order (at most ``max_environments``).
    """
    names = _chosen(audit, reward_environments, max_environments)
    diag = audit.diagnostics.set_index("reward_environment")
    fig, ax = plt.subplots(figsize=(7, 4.8))
    ax.plot([0, 1], [1, 0], color="black", lw=1, alpha=0.6, label="ideal: 1 - u")
    for name in names:
        c = audit.curves[audit.curves["reward_environment"] == name]
        level = diag.loc[name, "level"]
        line, = ax.plot(c["u_mid"], c["curve"], marker="o", ms=3, ls=_LEVEL_STYLE.get(level, "-"),
                        label=f"{name}: {diag.loc[name, 'verdict']} (AUC {diag.loc[name, 'auc']:.2f})")
        sd = c["sd_pairs"].to_numpy(dtype=float)
        if np.isfinite(sd).any():
            ax.fill_between(c["u_mid"], c["curve"] - np.nan_to_num(sd), c["curve"] + np.nan_to_num(sd),
                            color=line.get_color(), alpha=0.15, lw=0)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("measured quality u (0 = fastest reference, 1 = slowest; from another repeat)")
    ax.set_ylabel("mean reward, rescaled to [0, 1]")
    ax.set_title(f"Reward vs quality ({audit.environment} · {audit.campaign})")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    return fig


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
    ax.set_xscale("log", base=2)
    sizes = sorted(set(audit.groups["group_size"]))
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("group size G (rollouts per prompt)")
    ax.set_ylabel("zero-advantage rate (all rewards equal)")
    ax.set_title("GRPO groups without signal")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
