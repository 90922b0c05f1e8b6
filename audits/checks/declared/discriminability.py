"""The discriminability audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.discriminability` (its statistics) registered as
``AUDITS["discriminability"]`` of :mod:`audits.checks.registered`; this module is what the command line's
``--help``, the registry and every orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Interval, NoneOk, Options, Sequence, StrOptions,  # noqa: F401
                                    Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401

__all__ = ["DiscriminabilityThresholds", "DiscriminabilityOptions", "floor_option"]


@dataclass(frozen=True)
class DiscriminabilityThresholds(Thresholds):
    """Limits of the discriminability audit (all overridable; :mod:`audits.protocol.thresholds`).

    robust_cv : 0.3
        A problem is duration-filterable when its robust CV >= this
        (DESIGN.md; the published study's filter).
    filterable_share_warn, filterable_share_fail : 0.25, 0.1
        Share of filterable problems (lower is worse): the published isolated
        service found 48.2 % of problems filterable.
    noise_inflation_warn, noise_inflation_fail : 0.1, 0.25
        Filterable share minus its noise-aware version: how much of the
        "span" is repeat noise. The published local sandbox called 81.1 %
        filterable against 48.2 % on the service (33 points of noise).
    gap_warn, gap_fail : 50, 30
        Strong-vs-weak gap in points (lower is worse). A perfect ordering of
        12 references gives 75, pure noise 0.
    near_floor_factor : 2
        A test is near the floor when its reference median <= factor x floor.
    near_floor_share_warn, near_floor_share_fail : 0.1, 0.3
        Share of all optimization tests near the floor.
    near_floor_problem_share : 0.5
        A problem is flagged when at least this share of its tests is near
        the floor (its ranks are mostly start-up noise).
    """

    robust_cv: float = 0.3
    filterable_share_warn: float = 0.25
    filterable_share_fail: float = 0.1
    noise_inflation_warn: float = 0.1
    noise_inflation_fail: float = 0.25
    gap_warn: float = 50.0
    gap_fail: float = 30.0
    near_floor_factor: float = 2.0
    near_floor_share_warn: float = 0.1
    near_floor_share_fail: float = 0.3
    near_floor_problem_share: float = 0.5

    audit: ClassVar[str] = "discriminability"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"filterable_share", "gap"})
    #: Whether tests separate fast from slow programs gates a reward; a benchmark machine is judged on its
    #: floor only.
    reward_gates: ClassVar[frozenset[str]] = frozenset({"filterable_share", "noise_inflated_filterable_share",
                                                        "strong_weak_gap"})

    def __post_init__(self):
        super().__post_init__()
        if self.near_floor_factor <= 0 or not 0 < self.near_floor_problem_share <= 1:
            raise ThresholdError("DiscriminabilityThresholds: near_floor_factor > 0 and near_floor_problem_share "
                                 "in (0, 1]")



def floor_option():
    """The one declaration of the sandbox floor (seconds; ``--floor-ms`` is still read, deprecated)."""
    return option(None, Interval(float, 0, None, closed="neither"), NoneOk(), metavar="SECONDS",
                  help="sandbox floor in seconds (default: from each run's floor rows)",
                  deprecated={"--floor-ms": ("give the floor in seconds with --floor-s (the corpus' unit)",
                                             lambda ms: None if ms is None else ms / 1000.0)})


@dataclass(frozen=True)
class DiscriminabilityOptions(Options):
    """Options of :func:`audits.checks.discriminability.run_discriminability_audit` (constraints as data)."""

    audit: ClassVar[str] = "discriminability"

    environment: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                     help="only the runs of this environment (the corpus column; default: every run)")
    campaign: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                  help="only the runs of this campaign (default: every run)")
    floor_s: float | None = floor_option()
    method: str = option("iqr", StrOptions("iqr", "mad"), help="robust CV variant")
    n_boot: int = n_boot_option(1000)
    seed: int = seed_option()
