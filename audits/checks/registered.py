"""The registered audits: each audit's declarations (:mod:`audits.checks.declared`) wired to its statistics.

One class per audit implements :class:`audits.protocol.audit.Audit`: its plan step chooses the runs or pairs it
covers by the one rule of :mod:`audits.corpus.runs` (:data:`audits.corpus.runs.RULES`); an audit the Dask engine
runs declares its partition steps (part and combine, :mod:`audits.protocol.partition`), functions of its own module
(:mod:`audits.checks.reliability`'s ``plan_runs``, ``partition_tables``, ``combine_parts``, ...) called with the
validated :class:`~audits.protocol.params.Options`, so both engines (in memory, the corpus as one partition; on
Dask, :mod:`audits.engine.partitioned.whole`) and every caller (the command line, ``audit all``, the report) run
the same steps with the same options and defaults; the others compute in memory and say why not on Dask. :data:`AUDITS` is what
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

from audits.checks import aggregation, calibration, clocks, compare, discriminability, reliability, simulation
from audits.checks.declared.aggregation import AggregationOptions, AggregationThresholds
from audits.checks.declared.calibration import CalibrationOptions, CalibrationThresholds
from audits.checks.declared.clocks import ClocksOptions, ClocksThresholds
from audits.checks.declared.compare import CompareOptions, CompareThresholds
from audits.checks.declared.discriminability import DiscriminabilityOptions, DiscriminabilityThresholds
from audits.checks.declared.reliability import ReliabilityOptions, ReliabilityThresholds
from audits.checks.declared.simulation import SimulationOptions, SimulationThresholds
from audits.checks.reward_environments import load_reward_environments, shipped_environments_dir
from audits.corpus.runs import RunError, covered_runs, rule_of, select_rows
from audits.corpus.selection import no_pair_reason
from audits.errors import UserError
from audits.protocol.audit import Audit, Skip
from audits.protocol.context import AuditContext

__all__ = ["AUDITS", "EXAMPLE_REWARD_ENVIRONMENTS"]

#: The example reward environments the simulation screens by default (the shipped fixtures/environments). The
#: duration filter and the uniform timeout are the relative forms of the study's designs (quantiles of the run's
#: reference medians): its constants in seconds judged the unit of time on other corpora (docs/rewards.md); its
#: files stay shipped for --reward-env and the grid.
EXAMPLE_REWARD_ENVIRONMENTS = ("top30", "uniform_timeout_2x", "ranked_worst_p80", "duration_filter_q90",
                               "duration_filter_q50", "duration_filter_q10", "length_filter_1k")


def example_reward_environments():
    """The shipped example reward environments (found in a checkout or an installed wheel)."""
    folder = shipped_environments_dir()
    return load_reward_environments([folder / f"{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS])


class _EveryRun(Audit):
    """An audit of every run the environment / campaign options denote (rule ``"every run"``) that does not run on
    Dask: it overrides :meth:`compute` (in memory, on the whole corpus) and says why in ``dask``."""

    def plan(self, ctx, options) -> tuple:
        return covered_runs(ctx.runs, environment=options.environment, campaign=options.campaign)


class Reliability(Audit):
    """Every run the environment / campaign options denote (rule ``"every run"``), through the partition steps
    of :mod:`audits.checks.reliability` (:func:`~audits.checks.reliability.plan_runs`,
    :func:`~audits.checks.reliability.partition_tables`, :func:`~audits.checks.reliability.combine_parts`)."""

    name: ClassVar[str] = "reliability"
    title: ClassVar[str] = "is the sandbox's timing repeatable?"
    Options = ReliabilityOptions
    Thresholds = ReliabilityThresholds
    report = ("reliability",)

    def plan(self, ctx, options):
        return reliability.plan_runs(ctx, environment=options.environment, campaign=options.campaign)

    def partition_part(self, part, piece, options, thresholds):
        return reliability.partition_tables(part, piece)

    def combine(self, parts, piece, options, thresholds, ctx):
        return reliability.combine_parts(parts, piece, ctx, thresholds=thresholds, n_boot=options.n_boot,
                                         seed=options.seed, target_reliability=options.target_reliability,
                                         target_precision=options.target_precision, max_pairs=options.max_pairs)


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
        return discriminability.plan_runs(ctx, environment=options.environment, campaign=options.campaign)

    def partition_part(self, part, piece, options, thresholds):
        return discriminability.partition_tables(part, piece, floor_s=options.floor_s, thresholds=thresholds,
                                                 method=options.method)

    def combine(self, parts, piece, options, thresholds, ctx):
        return discriminability.combine_parts(parts, piece, floor_s=options.floor_s, thresholds=thresholds,
                                              method=options.method, n_boot=options.n_boot, seed=options.seed)


class Calibration(Audit):
    """One calibration per pair of :func:`audits.corpus.selection.choose_pairs`: the pairs the user names (rule
    ``"named"``), else the documented default pairs; a corpus with neither is skipped with the reason. Each pair is
    a piece of the plan, through the partition steps of :mod:`audits.checks.calibration`
    (:func:`~audits.checks.calibration.plan_pairs`, :func:`~audits.checks.calibration.pair_part`,
    :func:`~audits.checks.calibration.combine_pair`). A pair named by two values of one column (``--source`` /
    ``--target`` with ``key``) instead of two runs is calibrated in memory only
    (:func:`~audits.checks.calibration.run_calibration_audit` on the whole corpus, its one partition): its sides may
    gather several runs, which the per-partition cells do not split."""

    name: ClassVar[str] = "calibration"
    title: ClassVar[str] = "can timings of one run be mapped onto another?"
    Options = CalibrationOptions
    Thresholds = CalibrationThresholds
    report = ("pairs",)

    def plan(self, ctx, options):
        if any(isinstance(side, str) for pair in options.pairs for side in pair):
            if not isinstance(ctx, AuditContext):
                raise UserError("a calibration on Dask names its two runs (environment and campaign each), not two "
                                "values of one column")
            return tuple(options.pairs)  # names of a column's values (--source/--target), resolved with ``key``
        pieces = calibration.plan_pairs(ctx, options.pairs)
        if not pieces:
            raise Skip(no_pair_reason(ctx.runs))
        return pieces

    def pieces(self, plan) -> tuple:
        return tuple(plan)

    def partition_part(self, part, piece, options, thresholds):
        if isinstance(piece, dict):
            return calibration.pair_part(part, piece)
        return self._by_values(part, piece, options, thresholds)  # in memory: ``part`` is the whole corpus

    def combine(self, parts, piece, options, thresholds, ctx):
        if not isinstance(piece, dict):
            (result,) = parts
            return result
        return calibration.combine_pair(parts, piece, families=options.families, robust=options.robust,
                                        calibration_family=options.calibration_family,
                                        variance_ratio=options.variance_ratio, taus=options.taus,
                                        n_boot=options.n_boot, n_boot_rank=options.n_boot_rank, level=options.level,
                                        seed=options.seed, thresholds=thresholds)

    def assemble(self, results, plan):
        return tuple(results)

    @staticmethod
    def _by_values(ctx, pair, options, thresholds):
        source, target = pair
        result = calibration.run_calibration_audit(ctx, source=source, target=target, key=options.key,
                                                   families=options.families, robust=options.robust,
                                                   calibration_family=options.calibration_family,
                                                   variance_ratio=options.variance_ratio, taus=options.taus,
                                                   n_boot=options.n_boot, n_boot_rank=options.n_boot_rank,
                                                   level=options.level, seed=options.seed, thresholds=thresholds)
        return replace(result, pair_rule="named")

    def findings(self, result) -> tuple:
        return tuple(f for one in result for f in one.findings)

    def results(self, result) -> tuple:
        return tuple(result)

    def to_json(self, result):
        return [one.to_dict() for one in result]


class Aggregation(Audit):
    """Every run the environment / campaign options denote (rule ``"every run"``), through the partition steps
    of :mod:`audits.checks.aggregation` (:func:`~audits.checks.aggregation.repeat_values_part` of each partition
    for the plan, :func:`~audits.checks.aggregation.plan_runs`, :func:`~audits.checks.aggregation.partition_values`,
    :func:`~audits.checks.aggregation.combine_parts`)."""

    name: ClassVar[str] = "aggregation"
    title: ClassVar[str] = "which aggregation of per-test timings is stable and discriminating?"
    Options = AggregationOptions
    Thresholds = AggregationThresholds
    report = ("aggregation",)

    def facts_part(self, part, options):
        return aggregation.repeat_values_part(part)

    def plan(self, ctx, options):
        return aggregation.plan_runs(ctx, ctx.facts(self, options), environment=options.environment,
                                     campaign=options.campaign, floor_s=options.floor_s)

    def partition_part(self, part, piece, options, thresholds):
        return aggregation.partition_values(part, piece, names=options.names)

    def combine(self, parts, piece, options, thresholds, ctx):
        return aggregation.combine_parts(parts, piece, thresholds=thresholds, n_boot=options.n_boot, seed=options.seed)


class Simulation(Audit):
    """The reward simulation on one run (rule ``"one run"``); skipped when it cannot choose one unless named.
    Through the partition steps of :mod:`audits.checks.simulation` (:func:`~audits.checks.simulation.facts_part` of
    each partition for the plan, :func:`~audits.checks.simulation.plan_run`,
    :func:`~audits.checks.simulation.partition_part`, :func:`~audits.checks.simulation.combine_parts`)."""

    name: ClassVar[str] = "simulation"
    title: ClassVar[str] = "is the reward learnable (neither saturated nor sparse)?"
    Options = SimulationOptions
    Thresholds = SimulationThresholds
    report = ("simulation",)

    @staticmethod
    def _environments(options) -> list:
        """The reward environments simulated: the options', else the shipped examples (checked)."""
        environments = options.reward_environments
        return simulation.reward_environment_list(
            example_reward_environments() if environments is None else environments, None)

    def facts_part(self, part, options):
        return simulation.facts_part(part, simulation.fact_columns(self._environments(options)),
                                     options.include_incorrect)

    def plan(self, ctx, options):
        try:
            return simulation.plan_run(ctx, ctx.facts(self, options), self._environments(options),
                                       environment=options.environment, campaign=options.campaign,
                                       group_sizes=tuple(options.group_sizes), n_bins=options.n_bins,
                                       quality_distribution=options.quality_distribution,
                                       include_incorrect=options.include_incorrect)
        except (RunError, simulation.NoReferences) as exc:  # a run the user did not name: the reason, as a skip
            if options.environment is not None or options.campaign is not None:
                raise
            raise Skip(f"{exc}".splitlines()[0]) from exc

    def partition_part(self, part, piece, options, thresholds):
        return simulation.partition_part(part, piece)

    def combine(self, parts, piece, options, thresholds, ctx):
        return simulation.combine_parts(parts, piece, thresholds=thresholds, n_boot=options.n_boot, seed=options.seed)


class Clocks(_EveryRun):
    name: ClassVar[str] = "clocks"
    title: ClassVar[str] = "which clock ranks programs: wall time, CPU time, ...?"
    Options = ClocksOptions
    Thresholds = ClocksThresholds
    report = ("clocks",)
    dask = "the clocks audit re-runs the figures once per measure column; on Dask it has no per-problem split yet"

    def compute(self, ctx, units, options, thresholds):
        corpus = ctx.corpus
        if len(units) != len(ctx.runs):
            corpus = select_rows(corpus, [u.run for u in units])
        reference, note = clocks.reference_run(ctx.runs, environment=options.reference_environment,
                                               campaign=options.reference_campaign, source=options.source)
        result = clocks.run_clocks_audit(corpus, measures=options.measures, n_boot=options.n_boot, seed=options.seed,
                                         source=options.source, reference=reference,
                                         reference_measure=options.reference_measure, reference_corpus=ctx.corpus,
                                         reference_note=note, thresholds=thresholds,
                                         context=ctx if corpus is ctx.corpus else None)
        return replace(result, run_rule=rule_of(units))


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
        corpus = ctx.corpus if len(units) == len(ctx.runs) else select_rows(ctx.corpus, [u.run for u in units])
        try:
            result = compare.run_compare_audit(corpus, a=options.a, b=options.b, by=options.by,
                                               confidence=options.confidence, n_boot=options.n_boot,
                                               seed=options.seed, source=options.source, thresholds=thresholds)
        except UserError as exc:  # the sets name nothing here, or no run holds both: the reason, as a skip
            raise Skip(str(exc).replace("\n  -> ", "; ")) from exc
        return replace(result, run_rule=rule_of(units))


#: Every registered audit by name, in :data:`audits.protocol.registry.REGISTERED` order.
AUDITS = {a.name: a for a in (Reliability(), Discriminability(), Calibration(), Aggregation(), Simulation(),
                              Clocks(), Compare())}
