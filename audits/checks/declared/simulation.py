"""The simulation audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.simulation` (its statistics) registered as ``AUDITS["simulation"]`` of
:mod:`audits.checks.registered`; this module is what the command line's ``--help``, the registry and every
orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Instances, Interval, NoneOk, Options, Sequence,  # noqa: F401
                                    StrOptions, Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401
import dataclasses

from stats.declarations import DegeneracyThresholds

__all__ = ["SimulationThresholds", "SimulationOptions"]

#: The limits of the simulation audit, on the common base (:mod:`audits.protocol.thresholds`); the fields and
#: defaults are those of :class:`stats.simulator.DegeneracyThresholds`, which judges them.
SimulationThresholds = dataclasses.make_dataclass(
    "SimulationThresholds", [(f.name, f.type, f.default) for f in dataclasses.fields(DegeneracyThresholds)],
    bases=(Thresholds,), frozen=True, namespace={
        "audit": "simulation",
        "lower_is_worse": frozenset({"auc_sparse", "monotonicity"}),
        "reward_gates": frozenset({"*"}),  # a reward environment's learnability: not a benchmark's question
        "__doc__": DegeneracyThresholds.__doc__,
        "__module__": __name__,
        "__annotations__": {"audit": ClassVar[str], "lower_is_worse": ClassVar[frozenset],
                            "reward_gates": ClassVar[frozenset]}})


def _reward_environment() -> type:
    # deferred: numpy, pandas stay out of `speedaudit --help`, which reads this module (registry.declared)
    from stats.rewards import RewardEnvironment

    return RewardEnvironment


@dataclass(frozen=True)
class SimulationOptions(Options):
    """Options of :func:`audits.checks.simulation.run_simulation_audit` (constraints as data).

    ``environment``/``campaign`` name the one run whose timings stand in for rollouts (not a filter: in
    ``speedaudit audit all`` they are ``--simulation-environment``/``--simulation-campaign``).
    ``reward_environments``: the :class:`stats.rewards.RewardEnvironment` list (the command line reads it
    from ``--reward-env``/``--grid``); None: the shipped examples.
    """

    audit: ClassVar[str] = "simulation"

    environment: str | None = option(None, Text(), NoneOk(), shared=False, metavar="NAME",
                                     help="environment of the run whose timings stand in for rollouts")
    campaign: str | None = option(None, Text(), NoneOk(), shared=False, metavar="NAME",
                                  help="campaign of that run (automatic: the only or the earliest)")
    reward_environments: tuple | None = option(
        None, Sequence(Instances(_reward_environment, "stats.rewards.RewardEnvironment")), NoneOk(), cli=False,
        flag="--reward-env", help="the reward environments to simulate")
    group_sizes: tuple = option((2, 4, 8, 16), Sequence(Interval(int, 1, None)), metavar="G",
                                help="GRPO group sizes (the headline zero-advantage rate is at the largest)")
    n_bins: int = option(10, Interval(int, 2, None), flag="--bins", metavar="N", help="quality bins of the curves")
    quality_distribution: object = option("uniform", cli=False,
                                          help="quality distribution of a GRPO group's rollouts")
    include_incorrect: bool = option(False, Boolean(),
                                     help="also use incorrect reference solutions as rollouts")
    n_boot: int = n_boot_option(200, shared=False)
    seed: int = seed_option()
