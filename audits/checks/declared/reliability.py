"""The reliability audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.reliability` (its statistics) registered as ``AUDITS["reliability"]`` of
:mod:`audits.checks.registered`; this module is what the command line's ``--help``, the registry and every
orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Interval, NoneOk, Options, Sequence, StrOptions,  # noqa: F401
                                    Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401

from audits.checks.declared.clocks import CONTENTION_FAIL, CONTENTION_WARN

__all__ = ["ReliabilityThresholds", "ReliabilityOptions"]


@dataclass(frozen=True)
class ReliabilityThresholds(Thresholds):
    """Warn / fail limits of the reliability audit (all overridable; :mod:`audits.protocol.thresholds`).

    Defaults are anchored on the published figures of an isolated code
    execution service (median repeat CV 8.2 %, median absolute sd 9.9 ms,
    per-problem score sd across repeats about 2.1 points) and of a busy
    training worker (mean peak-to-peak rank range 41.2 points):

    repeat_cv_warn, repeat_cv_fail : 0.12, 0.25
        Median repeat CV. The service's 8.2 % passes; 1.5x it warns, 3x fails.
    (The median absolute repeat sd in ms, the service's 9.9 ms, is reported but not judged: a constant in ms
    fails ten-second programs with a 0.5 % CV and can never fail microsecond benchmarks, while what the sd
    means relative to the durations is the repeat CV, and relative to the gaps between programs the rank
    drift, the ICC and the significant share, all judged.)
    rank_sd_warn, rank_sd_fail : 4, 6
        Mean within-problem sd of 100*q across repeats: about 2x and 3x the
        service's 2.1 points.
    rank_range_warn, rank_range_fail : 10, 15
        Mean peak-to-peak range: the sd limits times d2(5) = 2.33 (expected
        range of 5 normal draws in sd units), rounded; the busy worker's 41.2
        fails by far.
    p95_range_warn, p95_range_fail : 50, 75
        The 95th percentile of the (problem, solution) ranges as ranges of 5
        repeats: one score in twenty moving by half / three quarters of the
        scale. The tail, not the single worst range, which was judged until
        2026-12-07: a maximum grows with the number of units and repeats (on
        one quiet synthetic sandbox 26 points at 5 problems and 3 repeats, 53
        at 240 problems and 10), so it warned on large corpora of a sandbox
        that passed on small ones; the 95th percentile stays at 19-26 there.
        The worst range is reported beside it.
    icc_warn, icc_fail : 0.9, 0.75
        Median ICC(A,1) of log duration within tests (lower is worse; Koo &
        Li 2016: > 0.9 excellent, 0.75-0.9 good).
    significant_share_warn, significant_share_fail : 0.75, 0.5
        Share of faster reference pairs that are significantly faster (lower
        is worse).
    repeats_fail_factor : 4
        The repeats needed for the target reliability: pass when the corpus
        has at least that many, warn up to ``repeats_fail_factor`` times more,
        fail beyond.
    unstable_share_warn, unstable_share_fail : 0.01, 0.1
        Share of benchmarks (cells: problem, test, solution) whose CV of all ok
        values is >= ``benchmark_cv`` (``pyperf check``: "the standard deviation
        is >= 10 % of the mean"): pyperf warns about each such benchmark, so one
        in a hundred (a pyperformance suite has ~100) warns and a tenth fails.
        Judged under the ``benchmark`` profile only, like the two below.
    outlier_share_warn, outlier_share_fail : 0.01, 0.1
        Share of benchmarks whose minimum or maximum lies >= ``benchmark_spread``
        (pyperf: 50 %) of the mean away from it.
    too_few_processes_share_warn, too_few_processes_share_fail : 0.25, 1.0
        Share of the stable benchmarks for which pyperf's ``required_nprocesses``
        (processes for a 95 % CI of width ``benchmark_width`` = 1 % of the mean,
        from the sd of the process means) exceeds the processes measured.
        pyperf only warns about it (the mean is less precise than 1 %, not
        wrong), so it fails only when no stable benchmark reaches that precision.
    benchmark_cv, benchmark_spread, benchmark_width : 0.10, 0.5, 0.01
        pyperf's per-benchmark rules (``pyperf._cli.format_checks``, pyperf 2.x).
    wall_cpu_warn, wall_cpu_fail : 1.3, 2.0
        Median wall/CPU ratio of single-threaded ok executions (contention;
        :data:`audits.checks.clocks.CONTENTION_WARN`): a program with a core to itself
        stays near 1.0-1.2; 1.3 means it waited for a core about a quarter of
        its wall time, 2.0 half of it (real jury archives under load: 2.31).
    """

    repeat_cv_warn: float = 0.12
    repeat_cv_fail: float = 0.25
    rank_sd_warn: float = 4.0
    rank_sd_fail: float = 6.0
    rank_range_warn: float = 10.0
    rank_range_fail: float = 15.0
    p95_range_warn: float = 50.0
    p95_range_fail: float = 75.0
    icc_warn: float = 0.9
    icc_fail: float = 0.75
    significant_share_warn: float = 0.75
    significant_share_fail: float = 0.5
    repeats_fail_factor: float = 4.0
    wall_cpu_warn: float = CONTENTION_WARN
    wall_cpu_fail: float = CONTENTION_FAIL
    unstable_share_warn: float = 0.01
    unstable_share_fail: float = 0.1
    outlier_share_warn: float = 0.01
    outlier_share_fail: float = 0.1
    too_few_processes_share_warn: float = 0.25
    too_few_processes_share_fail: float = 1.0
    benchmark_cv: float = 0.10
    benchmark_spread: float = 0.5
    benchmark_width: float = 0.01

    audit: ClassVar[str] = "reliability"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"icc", "significant_share"})
    #: ``benchmark``: pyperf's practice (``pyperf check`` warns when the std dev exceeds 10 % of the mean;
    #: fail at twice that). Rank drift of q, ICC, significance of the solutions at hand, repeats needed for a
    #: reliable per-problem score gate a reward, not a benchmark machine.
    profiles: ClassVar[dict] = {"benchmark": {"repeat_cv_warn": 0.10, "repeat_cv_fail": 0.20}}
    reward_gates: ClassVar[frozenset[str]] = frozenset({
        "mean_rank_sd", "mean_rank_range", "p95_rank_range", "icc", "significant_share",
        "repeats_needed"})
    #: pyperf's per-benchmark checks (``pyperf check``): judged under the ``benchmark`` profile only (a reward
    #: sandbox's 3 repeats per cell would fail "too few processes" everywhere); their figures are in the JSON
    #: under both (``runs[].benchmark_checks``).
    benchmark_metrics: ClassVar[tuple[str, ...]] = ("unstable_share", "outlier_share", "too_few_processes_share")

    def __post_init__(self):
        super().__post_init__()
        if self.repeats_fail_factor < 1:
            raise ThresholdError("ReliabilityThresholds.repeats_fail_factor must be >= 1")


@dataclass(frozen=True)
class ReliabilityOptions(Options):
    """Options of :func:`audits.checks.reliability.run_reliability_audit` (constraints as data)."""

    audit: ClassVar[str] = "reliability"

    environment: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                     help="only the runs of this environment (the corpus column; default: every run)")
    campaign: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                  help="only the runs of this campaign (default: every run)")
    n_boot: int = n_boot_option(1000)
    seed: int = seed_option()
    target_reliability: float = option(0.9, Interval(float, 0, 1, closed="neither"), metavar="R",
                                       help="target reliability of the per-problem score for 'repeats needed'")
    target_precision: float = option(0.05, Interval(float, 0, None, closed="neither"), metavar="W",
                                     help="target relative 95% CI width of one timing's mean")
    max_pairs: int = option(200_000, Interval(int, 1, None), cli=False,
                            help="cap on the solution pairs tested for significance (a seeded sample)")
