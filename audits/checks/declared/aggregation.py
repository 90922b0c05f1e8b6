"""The aggregation audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.aggregation` (its statistics) registered as ``AUDITS["aggregation"]`` of
:mod:`audits.checks.registered`; this module is what the command line's ``--help``, the registry and every
orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Interval, NoneOk, Options, Sequence, StrOptions,  # noqa: F401
                                    Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401
from audits.checks.declared.discriminability import floor_option

__all__ = ["AggregationThresholds", "AggregationOptions"]


def _aggregators():
    # deferred: numpy, pandas stay out of `speedaudit --help`, which reads this module (registry.declared)
    from stats.aggregation import AGGREGATORS

    return tuple(AGGREGATORS)


@dataclass(frozen=True)
class AggregationThresholds(Thresholds):
    """Limits of the aggregation audit (percentile points among references).

    Attributes
    ----------
    stability_warn, stability_fail : float
        Mean |score(i) - score(j)| of the recommended aggregator at or above which
        it warns / fails (default 5 and 10 points; the study's mean of per-test
        percentiles moved 3.0 +- 1.0 points on a good sandbox, 41 on a bad one).
    range_warn, range_fail : float
        Dynamic range at or below which it warns / fails (default 30 and 15; the
        study's fast and slow quartiles were 47 points apart).
    default_margin : float
        Warn about the default when its ratio exceeds the recommended one's by
        more than this fraction (default 0.25) *and* the paired bootstrap puts
        the recommendation ahead in >= ``default_confidence`` of the resamples.
    default_confidence : float
        Default 0.95.
    min_problems : int
        Warn below this many problems (default 10): the CIs are then wide.
    """

    stability_warn: float = 5.0
    stability_fail: float = 10.0
    range_warn: float = 30.0
    range_fail: float = 15.0
    default_margin: float = 0.25
    default_confidence: float = 0.95
    min_problems: int = 10

    audit: ClassVar[str] = "aggregation"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"range"})
    #: Which aggregation a reward should use: not a benchmark machine's question.
    reward_gates: ClassVar[frozenset[str]] = frozenset({"*"})

    def __post_init__(self):
        super().__post_init__()
        if not 0 <= self.stability_warn:
            raise ThresholdError("thresholds: need 0 <= stability_warn <= stability_fail")
        if not 0 <= self.range_fail <= self.range_warn <= 100:
            raise ThresholdError("thresholds: need 0 <= range_fail <= range_warn <= 100")
        if self.default_margin < 0 or not 0 < self.default_confidence <= 1:
            raise ThresholdError("thresholds: default_margin >= 0 and 0 < default_confidence <= 1")



@dataclass(frozen=True)
class AggregationOptions(Options):
    """Options of :func:`audits.checks.aggregation.run_aggregation_audit` (constraints as data)."""

    audit: ClassVar[str] = "aggregation"

    environment: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                     help="only the runs of this environment (the corpus column; default: every run)")
    campaign: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                  help="only the runs of this campaign (default: every run)")
    names: tuple | None = option(None, Sequence(Choices(_aggregators, "the registered aggregators"), unique=True),
                                 NoneOk(), flag="--aggregators", metavar="A",
                                 help="compare only these aggregators (automatic: every registered one)")
    floor_s: float | None = floor_option()
    n_boot: int = n_boot_option(1000)
    seed: int = seed_option()
