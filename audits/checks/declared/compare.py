"""The paired comparison's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.compare` (its statistics) registered in :mod:`audits.checks.registered`;
this module is what ``speedaudit compare --help``, ``audit all``, the report and the registry read (one
declaration of each option and default: the report's ``compare_*`` parameters are these options).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import Interval, NoneOk, Options, Text, n_boot_option, option, seed_option
from audits.protocol.thresholds import Thresholds

__all__ = ["CompareThresholds", "CompareOptions"]


@dataclass(frozen=True)
class CompareThresholds(Thresholds):
    """Limits of the comparison's findings (:func:`audits.checks.compare.run_compare_audit`).

    interleaving_gap_warn, interleaving_gap_fail : 0.25, 0.5
        |AUC - 1/2|, AUC = P(an A execution ran before a B one) (Mann-Whitney, by timestamp or order): 0 when the
        two sets were interleaved, 1/2 when one ran wholly before the other. 0.25 is halfway: nearer sequential
        than interleaved, so the machine's drift between the two periods is part of the difference. Two sets
        whose time ranges do not overlap fail whatever the figure. The win rate itself has no limit: it passes
        when its CI excludes 1/2 (the campaign tells which set is faster) and warns otherwise.
    """

    interleaving_gap_warn: float = 0.25
    interleaving_gap_fail: float = 0.5

    audit: ClassVar[str] = "compare"


@dataclass(frozen=True)
class CompareOptions(Options):
    """Options of :func:`audits.checks.compare.run_compare_audit` (constraints as data).

    The default sets are those of a judge archive's verdict folders (its accepted submissions against its
    time-limit-exceeded ones, by solution prefix); a corpus without them is skipped with the prefixes it has.
    """

    audit: ClassVar[str] = "compare"

    a: str = option("accepted", Text(), shared=False, metavar="SET",
                    help="set A: a value of --by, or @FILE (solution ids, one per line)")
    b: str = option("time_limit_exceeded", Text(), shared=False, metavar="SET", help="set B, as --a")
    by: str = option("prefix", Text(), shared=False, metavar="COLUMN",
                     help="the column whose values name the sets (prefix: the solution id up to its first '/')")
    confidence: float = option(0.95, Interval(float, 0.5, 1, closed="neither"), shared=False, metavar="C",
                               help="a comparison is decided when P(A faster) >= C or <= 1 - C")
    environment: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                     help="only the runs of this environment (default: every run with both sets)")
    campaign: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                  help="only the runs of this campaign (default: every run with both sets)")
    n_boot: int = n_boot_option(1000)
    seed: int = seed_option()
    source: str = option("the corpus", Text(), cli=False, help="how error messages name the corpus (its file)")

    @classmethod
    def keyword_forms(cls, values: dict) -> dict:
        """:func:`audits.checks.compare.run_compare_audit` also takes a set as a list of solution ids (``a=[...]``):
        not an option value, resolved with the corpus (:func:`audits.checks.compare.resolve_sides`)."""
        return {k: v for k, v in values.items() if not (k in ("a", "b") and isinstance(v, (list, tuple)))}
