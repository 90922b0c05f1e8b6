"""The clocks audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.clocks` (its statistics) registered as ``AUDITS["clocks"]`` of
:mod:`audits.checks.registered`; this module is what the command line's ``--help``, the registry and every
orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Interval, NoneOk, Options, Sequence, StrOptions,  # noqa: F401
                                    Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401

__all__ = ["CONTENTION_MIN_CPU_S", "CONTENTION_WARN", "CONTENTION_FAIL", "ClocksThresholds", "ClocksOptions"]

#: Executions with less CPU time than this are left out of the wall/CPU ratio: every execution pays a
#: start-up cost that is wall time without CPU time (exec, the sandbox's namespaces, page faults). It was about
#: 7 ms per execution when this limit was set, before the CPU time came from the run's cgroup (issue 22); on the
#: shipped quiet corpora collected since (idle, pinned; cgroup CPU) wall - CPU is 0.2 ms at 5-10 ms of CPU and
#: 1.1-1.4 ms from 50 ms on, and the median ratio is 1.04 at 10-20 ms, 1.01 at 0.1-0.2 s. The limit keeps the
#: older margin: from 0.1 s of CPU on even 7 ms of start-up is a ratio of at most 1.07 (the warn limit is
#: 1.3), so what remains is waiting. It is a property of process start-up, not of the corpus's durations: a
#: corpus of shorter programs gets contention n/a with this reason, never another verdict
#: (tests/audits/test_time_unit_invariance.py).
CONTENTION_MIN_CPU_S = 0.1


#: Median wall/CPU ratio of single-threaded ok executions that warns / fails. A sandboxed program
#: that has its core to itself waits only for its own I/O and start-up (about 1.0-1.2); 1.3 means
#: it waited for a core about a quarter of the time, 2.0 half of it (real jury archives under load:
#: 2.31, issue 18).
CONTENTION_WARN = 1.3
CONTENTION_FAIL = 2.0



@dataclass(frozen=True)
class ClocksThresholds(Thresholds):
    """Limits of the clocks audit's recommendation (:func:`audits.checks.clocks.clock_findings`).

    agreement_warn, agreement_fail : 0.8, 0.5
        Mean Kendall tau-b over problems of another clock's within-problem order of the solutions against
        the base clock's (wall time) on the quietest run (lower is worse). tau-b 0.8 is about 90 % of the
        solution pairs in the same order, 0.5 about 75 %: below it the other clock measures something else
        (waiting, I/O, threads), so one of the two is not the program's speed.
    """

    agreement_warn: float = 0.8
    agreement_fail: float = 0.5

    audit: ClassVar[str] = "clocks"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"agreement"})


@dataclass(frozen=True)
class ClocksOptions(Options):
    """Options of :func:`audits.checks.clocks.run_clocks_audit` (constraints as data)."""

    audit: ClassVar[str] = "clocks"

    environment: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                     help="only the runs of this environment (the corpus column; default: every run)")
    campaign: str | None = option(None, Text(), NoneOk(), shared=True, metavar="NAME",
                                  help="only the runs of this campaign (default: every run)")
    measures: tuple | None = option(None, Sequence(Text(), unique=True), NoneOk(), cli=False, flag="--measure",
                                    help="the measures to compare (the first is the base)")
    n_boot: int = n_boot_option(200, shared=False, what="behind the figures")
    seed: int = seed_option()
    reference_environment: str | None = option(
        None, Text(), NoneOk(), shared=False, metavar="NAME",
        help="environment of the reference run for faithfulness (a long quiet campaign; with --reference-campaign)")
    reference_campaign: str | None = option(None, Text(), NoneOk(), shared=False, metavar="NAME",
                                            help="campaign of the reference run for faithfulness")
    reference_measure: str = option("cpu_s", Text(), shared=False, metavar="COLUMN",
                                    help="the reference run's clock whose within-problem order is the truth")
    source: str = option("the corpus", Text(), cli=False, help="how error messages name the corpus (its file)")

    @classmethod
    def keyword_forms(cls, values: dict) -> dict:
        """:func:`audits.checks.clocks.run_clocks_audit`'s ``measures=[]``: no measure named, as None (every
        available one)."""
        if isinstance(values.get("measures"), (list, tuple)) and not values["measures"]:
            values["measures"] = None
        return values
