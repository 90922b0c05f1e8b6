"""The registered audits: each audit's declarations (:mod:`audits.checks.declared`) wired to its statistics.

One class per audit implements :class:`audits.protocol.audit.Audit`: its plan step chooses the runs or pairs it
covers by the one rule of :mod:`audits.corpus.runs` (:data:`audits.corpus.runs.RULES`), its compute step calls
the audit's own function (:func:`audits.checks.reliability.run_reliability_audit`, ...) with the validated
:class:`~audits.protocol.params.Options`, so every caller (the command line, ``audit all``, the report, the Dask
engine) passes the same options with the same defaults. :data:`AUDITS` is what
:func:`audits.protocol.registry.get` hands out.

Examples
--------
>>> from audits.corpus.synthetic import synthesize
>>> audit = AUDITS["reliability"]
>>> result = audit.run(synthesize(n_problems=6, seed=1).corpus, {"n_boot": 20})
>>> [str(r) for r in result.runs]
['quiet · c0']
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from audits.checks.declared.aggregation import AggregationOptions, AggregationThresholds
from audits.checks.declared.calibration import CalibrationOptions, CalibrationThresholds
from audits.checks.declared.clocks import ClocksOptions, ClocksThresholds
from audits.checks.declared.compare import CompareOptions, CompareThresholds
from audits.checks.declared.discriminability import DiscriminabilityOptions, DiscriminabilityThresholds
from audits.checks.declared.reliability import ReliabilityOptions, ReliabilityThresholds
from audits.checks.declared.simulation import SimulationOptions, SimulationThresholds
from audits.corpus.runs import RunError, covered_runs, one_run
from audits.protocol.audit import Audit, Skip

__all__ = ["AUDITS", "example_reward_environments", "EXAMPLE_REWARD_ENVIRONMENTS"]

#: The example reward environments the simulation screens by default (the shipped fixtures/environments).
EXAMPLE_REWARD_ENVIRONMENTS = ("top30", "uniform_timeout", "ranked_worst_p80", "duration_filter_2s",
                               "duration_filter_0.5s", "duration_filter_0.1s", "length_filter_1k")


def example_reward_environments():
    """The shipped example reward environments (found in a checkout or an installed wheel)."""
    from audits.checks.reward_environments import load_reward_environments, shipped_environments_dir

    folder = shipped_environments_dir()
    return load_reward_environments([folder / f"{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS])


class _EveryRun(Audit):
    """An audit of every run the environment / campaign options denote (rule ``"every run"``).

    Its compute step is data where the audit's own function takes the run context, the runs and the thresholds
    and options of the same names: ``function`` (``"module:name"``, imported when the audit runs) and
    ``passed`` (the options given to it by name); an audit that needs more overrides :meth:`compute`.
    """

    function: ClassVar[str | None] = None
    passed: ClassVar[tuple[str, ...]] = ()

    def plan(self, ctx, options) -> tuple:
        return covered_runs(ctx.runs, environment=options.environment, campaign=options.campaign)

    def compute(self, ctx, units, options, thresholds):
        import importlib

        module, _, name = self.function.partition(":")
        run = getattr(importlib.import_module(module), name)
        return run(ctx, runs=[u.run for u in units], thresholds=thresholds,
                   **{option: getattr(options, option) for option in self.passed})


class Reliability(_EveryRun):
    name: ClassVar[str] = "reliability"
    title: ClassVar[str] = "is the sandbox's timing repeatable?"
    Options = ReliabilityOptions
    Thresholds = ReliabilityThresholds
    report = ("reliability",)
    function = "audits.checks.reliability:run_reliability_audit"
    passed = ("n_boot", "seed", "target_reliability", "target_precision", "max_pairs")


class Discriminability(Audit):
    """Every run the environment / campaign options denote (rule ``"every run"``), through the partition steps
    of :mod:`audits.checks.discriminability` (:func:`~audits.checks.discriminability.plan_runs`,
    :func:`~audits.checks.discriminability.partition_tables`, :func:`~audits.checks.discriminability.combine_parts`)."""

    name: ClassVar[str] = "discriminability"
    title: ClassVar[str] = "do the tests separate fast from slow programs?"
    Options = DiscriminabilityOptions
    Thresholds = DiscriminabilityThresholds
    report = ("discriminability",)

    def plan(self, ctx, options):
        from audits.checks.discriminability import plan_runs

        return plan_runs(ctx, environment=options.environment, campaign=options.campaign)

    def partition_part(self, part, piece, options, thresholds):
        from audits.checks.discriminability import partition_tables

        return partition_tables(part, piece, floor_s=options.floor_s, thresholds=thresholds, method=options.method)

    def combine(self, parts, piece, options, thresholds, ctx):
        from audits.checks.discriminability import combine_parts

        return combine_parts(parts, piece, floor_s=options.floor_s, thresholds=thresholds, method=options.method,
                             n_boot=options.n_boot, seed=options.seed)


class Calibration(Audit):
    """One calibration per pair of :func:`audits.corpus.selection.choose_pairs`: the pairs the user names (rule
    ``"named"``), else the documented default pairs; a corpus with neither is skipped with the reason."""

    name: ClassVar[str] = "calibration"
    title: ClassVar[str] = "can timings of one run be mapped onto another?"
    Options = CalibrationOptions
    Thresholds = CalibrationThresholds
    report = ("stored", "across")

    def plan(self, ctx, options) -> tuple:
        from audits.corpus.selection import choose_pairs, no_pair_reason

        if any(isinstance(side, str) for pair in options.pairs for side in pair):
            return tuple(options.pairs)  # names of a column's values (--source/--target), resolved with ``key``
        choices = choose_pairs(ctx.corpus, named=options.pairs, runs=ctx.runs)
        if not choices:
            raise Skip(no_pair_reason(ctx.runs))
        return choices

    def part(self, ctx, unit, options, thresholds):
        from audits.checks.calibration import run_calibration_audit
        from audits.corpus.selection import PairChoice

        source, target, rule = (unit.source, unit.target, unit.rule) if isinstance(unit, PairChoice) else (*unit, "named")
        result = run_calibration_audit(ctx, source=source, target=target, key=options.key,
                                       families=list(options.families), robust=options.robust or False,
                                       calibration_family=options.calibration_family,
                                       variance_ratio=options.variance_ratio, taus=tuple(options.taus),
                                       n_boot=options.n_boot, n_boot_rank=options.n_boot_rank,
                                       level=options.level, seed=options.seed, thresholds=thresholds)
        return replace(result, pair_rule=rule)

    def compute(self, ctx, units, options, thresholds):
        return tuple(self.part(ctx, u, options, thresholds) for u in units)

    def findings(self, result) -> tuple:
        return tuple(f for one in result for f in one.findings)

    def results(self, result) -> tuple:
        return tuple(result)

    def to_json(self, result):
        return [one.to_dict() for one in result]


class Aggregation(_EveryRun):
    name: ClassVar[str] = "aggregation"
    title: ClassVar[str] = "which aggregation of per-test timings is stable and discriminating?"
    Options = AggregationOptions
    Thresholds = AggregationThresholds
    report = ("aggregation",)
    function = "audits.checks.aggregation:run_aggregation_audit"
    passed = ("names", "floor_s", "n_boot", "seed")


class Simulation(Audit):
    """The reward simulation on one run (rule ``"one run"``); skipped when it cannot choose one unless named."""

    name: ClassVar[str] = "simulation"
    title: ClassVar[str] = "is the reward learnable (neither saturated nor sparse)?"
    Options = SimulationOptions
    Thresholds = SimulationThresholds
    report = ("simulation",)

    def plan(self, ctx, options) -> tuple:
        try:
            return (one_run(ctx.runs, environment=options.environment, campaign=options.campaign),)
        except RunError as exc:
            if options.environment is not None or options.campaign is not None:
                raise
            raise Skip(f"{exc}".splitlines()[0]) from exc

    def compute(self, ctx, units, options, thresholds):
        from audits.checks.simulation import run_simulation_audit

        (summary,) = units
        environments = options.reward_environments
        if environments is None:
            environments = example_reward_environments()
        return run_simulation_audit(ctx, reward_environments=environments, environment=summary.environment,
                                    campaign=summary.campaign, group_sizes=tuple(options.group_sizes),
                                    seed=options.seed, thresholds=thresholds, n_bins=options.n_bins,
                                    quality_distribution=options.quality_distribution, n_boot=options.n_boot,
                                    include_incorrect=options.include_incorrect)


class Clocks(_EveryRun):
    name: ClassVar[str] = "clocks"
    title: ClassVar[str] = "which clock ranks programs: wall time, CPU time, ...?"
    Options = ClocksOptions
    Thresholds = ClocksThresholds
    report = ("clocks",)
    dask = "the clocks audit re-runs the figures once per measure column; on Dask it has no per-problem split yet"

    def compute(self, ctx, units, options, thresholds):
        from audits.checks.clocks import run_clocks_audit
        from audits.corpus.runs import select_rows

        corpus = ctx.corpus
        if len(units) != len(ctx.runs):
            corpus = select_rows(corpus, [u.run for u in units])
        reference = None
        if options.reference_environment is not None or options.reference_campaign is not None:
            from audits.corpus.runs import one_run

            reference = one_run(ctx.runs, environment=options.reference_environment,
                                campaign=options.reference_campaign).run
        return run_clocks_audit(corpus, measures=options.measures, n_boot=options.n_boot, seed=options.seed,
                                source=options.source, reference=reference,
                                reference_measure=options.reference_measure,
                                thresholds=thresholds, context=ctx if corpus is ctx.corpus else None)


class Compare(_EveryRun):
    """The paired comparison of two candidate sets in every run (of the environment / campaign options) that
    holds both; a corpus without the sets (e.g. no judge verdict folders for the default ones) is skipped
    with the reason, naming the values there are."""

    name: ClassVar[str] = "compare"
    title: ClassVar[str] = "which of two candidate sets is faster (paired, shared execution)?"
    Options = CompareOptions
    Thresholds = CompareThresholds
    report = ("compare",)
    dask = ("the comparison ranks every execution of both sets by when it ran (its shared-execution AUC); "
            "no per-problem split yet")

    def compute(self, ctx, units, options, thresholds):
        from audits.checks.compare import run_compare_audit
        from audits.corpus.runs import select_rows
        from audits.errors import UserError

        corpus = ctx.corpus if len(units) == len(ctx.runs) else select_rows(ctx.corpus, [u.run for u in units])
        try:
            return run_compare_audit(corpus, a=options.a, b=options.b, by=options.by,
                                     confidence=options.confidence, n_boot=options.n_boot, seed=options.seed,
                                     source=options.source, thresholds=thresholds)
        except UserError as exc:  # the sets name nothing here, or no run holds both: the reason, as a skip
            raise Skip(str(exc).replace("\n  -> ", "; ")) from exc


#: Every registered audit by name, in :data:`audits.protocol.registry.REGISTERED` order.
AUDITS = {a.name: a for a in (Reliability(), Discriminability(), Calibration(), Aggregation(), Simulation(),
                              Clocks(), Compare())}
