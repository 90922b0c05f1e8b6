"""The whole audit of a partitioned dataset on Dask: every audit, two reads of each partition.

:func:`run_partitioned_whole_audit` is what ``speedaudit audit all DATASET --dask`` and the benchmark's Dask
stage run. Each audit's module (:mod:`audits.engine.partitioned.discriminability`, ``.reliability``, ``.calibration``,
``.aggregation``, ``.simulation``) splits its work into a part computed from one partition's rows, a plan the
client derives from pass 1 and a combining step (the in-memory audit's own code). Run one by one, every audit
reads every partition twice (its pass 1, its pass 2): about ten reads per partition for the whole audit. Here
the passes are shared:

1. **pass 1**, one task per group of consecutive partitions (:data:`GROUP_ROWS`), reading each once: the run-summary partials and floor rows, the runs'
   repeat values (aggregation) and the simulation facts;
2. the **client** builds the run table, the floors and every audit's plan (as each audit would alone);
3. **pass 2**, one task per group, reading each partition once: every audit's per-problem part of that partition,
   split on its worker into one result per audit (and per calibration pair);
4. the **client**, one audit at a time, gathers that audit's parts, runs its combining step and drops them
   before the next (so it holds one audit's per-problem tables, never every audit's at once); reliability's
   exact contention medians add their refinement re-reads (typically one or two,
   :mod:`audits.engine.partitioned.reliability`).

The result is an :class:`audits.engine.whole_audit.WholeAudit`, so its JSON has the shape of the in-memory whole
audit's (:func:`audits.engine.whole_audit.run_whole_audit`) and equals it, every figure (to 1e-12; tests on a real
LocalCluster). What cannot run is skipped with the in-memory reason, never reported as passing: calibration
of a corpus without a named or default pair, the simulation when it cannot choose a run (unless one is named: then the error).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

import pandas as pd

from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.corpus.runs import Run

from audits.engine.partitioned._common import _concat, _summary_of, dask_client, partition_runs

__all__ = ["run_partitioned_audits", "run_partitioned_whole_audit"]


#: Rows one task reads at most (a group of consecutive partitions, whole problems each): the per-call costs of
#: the audits' per-problem functions are paid once per group, not once per file (measured at 10^6: a group of
#: five 10^5-row partitions in 2.9 s, the five one by one in 5.2 s); 10^6 rows is the in-memory audit of 10^6
#: (about 0.6 GB), far below the 6 GB per process of issue 17.
GROUP_ROWS = 1_000_000


def _groups(ds: CorpusDataset, n_workers: int) -> list[tuple[int, ...]]:
    """Consecutive partitions in groups of at most :data:`GROUP_ROWS` rows (on average), at least one group
    per worker when there are enough partitions."""
    import math

    n = ds.n_partitions
    per_part = max(1.0, ds.rows / max(n, 1))
    size = max(1, min(math.ceil(n / max(n_workers, 1)), int(GROUP_ROWS // per_part)))
    return [tuple(range(i, min(i + size, n))) for i in range(0, n, size)]


def _read(path: str, indices: tuple) -> pd.DataFrame:
    """The rows of some partitions (whole problems): one partition as read, several concatenated."""
    ds = open_dataset(path)
    parts = [ds.read_partition(i) for i in indices]
    return parts[0] if len(parts) == 1 else _concat(parts)


class DatasetContext:
    """The Dask engine's plan context (:mod:`audits.protocol.partition`): the run table, floor rows and every audit's
    facts from the first pass; ``map`` runs a function on every group of partitions (an extra read)."""

    def __init__(self, cl, ds: CorpusDataset, groups: list, runs, floor_rows: pd.DataFrame, facts: dict, *,
                 selection_limit: int = 1 << 20, clock: dict | None = None):
        self._cl, self._ds, self._groups = cl, ds, groups
        self.runs, self.floor_rows, self._facts = runs, floor_rows, facts
        #: the contention medians' exact selection gathers the keys of a bin of at most this many
        self.selection_limit = selection_limit
        self._clock = clock if clock is not None else {}

    @property
    def columns(self) -> pd.Index:
        return self.floor_rows.columns  # every partition's columns (pass 1 keeps the floor rows' frame, empty or not)

    @cached_property
    def floors(self) -> pd.DataFrame:
        """:func:`stats.discriminability.sandbox_floor` of the dataset's gathered floor rows."""
        from stats.discriminability import sandbox_floor

        return sandbox_floor(self.floor_rows)

    def facts(self, audit, options) -> list:
        return self._facts[audit.name]

    def map(self, function, *args) -> list:
        """``function(AuditContext of the group's rows, *args)`` of every group, in order; the task is named after the
        function (``function.__name__``), its time added to the ``rereads`` timing."""
        import uuid

        t0 = time.perf_counter()
        cl, path = self._cl, str(self._ds.path)
        futures = [cl.submit(_mapped, path, g, function, args, key=f"{function.__name__}-{uuid.uuid4().hex}",
                             pure=False) for g in self._groups]
        try:
            return cl.gather(futures)
        finally:
            futures.clear()
            self._clock["rereads"] = self._clock.get("rereads", 0.0) + time.perf_counter() - t0


def _mapped(path: str, indices: tuple, function, args: tuple):
    from audits.protocol.context import AuditContext

    return function(AuditContext(_read(path, indices)), *args)


def _first_pass(path: str, indices: tuple, facts: dict) -> dict:
    """Pass 1 of every audit on some partitions, each read once: the run-summary partials and floor rows, the
    corpus counts and each audit's :meth:`~audits.protocol.audit.Audit.facts_part` (``facts``: name -> options)."""
    from audits.corpus.counts import corpus_counts
    from audits.protocol.context import AuditContext

    part = _read(path, indices)
    ctx = AuditContext(part)
    return {"summary": _summary_of(part), "counts": corpus_counts(part),
            "facts": {name: _audit(name).facts_part(ctx, options) for name, options in facts.items()}}


def _audit(name: str):
    from audits.protocol import registry

    return _LEGACY.get(name) or registry.get(name)


def _second_pass(path: str, indices: tuple, spec: dict) -> dict:
    """Every audit's per-problem part of some partitions, each read once (``spec``: name -> (pieces, options,
    thresholds)): ``{name: [part of each piece]}``, the partitions' rows shared by every audit's part (one
    :class:`~audits.protocol.context.AuditContext`: its run contexts' pools and scores built once)."""
    from audits.protocol.context import AuditContext

    part = AuditContext(_read(path, indices))
    return {name: [_audit(name).partition_part(part, piece, options, thresholds) for piece in pieces]
            for name, (pieces, options, thresholds) in spec.items()}


def _piece(result: dict, name: str, index: int):
    """One audit's part of one piece of a :func:`_second_pass` result."""
    return result[name][index]


def _second_pass_pieces(cl, futures: list, counts: dict) -> dict:
    """Split every group's :func:`_second_pass` result, on its worker, into one future per (audit, piece), and wait
    for them: ``{(name, j): [futures, one per group]}`` (``counts``: name -> number of pieces).

    The whole results are released once split, so each audit's parts can be gathered and dropped on their own
    (:func:`_take`): the client holds one audit's per-problem tables at a time, not every audit's at once
    (issue 26: gathering them all peaked the client at 8.7 GB at 10^8 executions)."""
    from distributed import wait

    pieces = {(name, j): [cl.submit(_piece, f, name, j, pure=False) for f in futures]
              for name, n in counts.items() for j in range(n)}
    futures.clear()  # the split pieces keep what they need; the whole results go once split
    wait([f for fs in pieces.values() for f in fs])
    return pieces


def _take(cl, pieces: dict, key) -> list:
    """Gather one audit piece's parts (one per group, in group order) and release them on the workers."""
    futures = pieces.pop(key)
    try:
        return cl.gather(futures)
    finally:
        futures.clear()


def run_partitioned_audits(dataset: str | os.PathLike | CorpusDataset, names: Sequence[str] | None = None, *,
                           options: Mapping[str, object] | None = None,
                           thresholds: Mapping[str, object] | None = None, profile: str | None = None,
                           client=None, scheduler: str | None = None, n_workers: int = 2,
                           timings: dict | None = None, one_partition_per_task: bool = False,
                           selection_limit: int = 1 << 20, adjust: Callable | None = None):
    """The registered audits ``names`` (default every one the Dask engine runs, ``dask is None``) of a partitioned
    dataset, on Dask, through their partition steps (:mod:`audits.protocol.partition`; see the module docstring).

    ``options``: name -> Options or mapping (validated by each audit); ``adjust(runs, options)``: the options
    again once the run table is known (the command line resolves named runs against it).
    ``one_partition_per_task``: a task per partition instead of per group of :data:`GROUP_ROWS` rows.
    Returns an :class:`audits.engine.whole_audit.WholeAudit`; an audit whose plan skips is listed with the reason.
    """
    from audits.corpus.counts import CorpusCounts
    from audits.engine.whole_audit import WholeAudit
    from audits.protocol import registry
    from audits.protocol.audit import Skip

    chosen = [n for n in registry.names() if (names is None or n in set(names))]
    for n in chosen:
        if registry.get(n).dask is not None:
            raise ValueError(f"audit {n!r} does not run on Dask: {registry.get(n).dask}")
    audits = {n: _audit(n) for n in chosen}
    given = dict(options or {})
    opts = {n: registry.get(n).options(given.get(n)) for n in chosen}
    th = {n: registry.get(n).thresholds(dict(thresholds or {}).get(n), profile=profile) for n in chosen}
    clock = timings if timings is not None else {}
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    path = str(ds.path)
    skipped: dict[str, str] = {}
    results: dict[str, object] = {}
    t0 = time.perf_counter()
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        t1 = time.perf_counter()
        clock["cluster"] = t1 - t0
        groups = ([(i,) for i in range(ds.n_partitions)] if one_partition_per_task else
                  _groups(ds, len(getattr(cl, "scheduler_info", dict)().get("workers", {})) or n_workers))
        first = cl.gather([cl.submit(_first_pass, path, g, opts, pure=False) for g in groups])
        t2 = time.perf_counter()
        clock["pass1"] = t2 - t1
        runs = partition_runs([f["summary"] for f in first])
        counts = sum((f["counts"] for f in first), CorpusCounts())
        floor_rows = _concat([f["summary"]["floor_rows"] for f in first])
        if not len(floor_rows.columns):  # no partition: the dataset's columns from its first file
            floor_rows = ds.read_partition(0).iloc[:0]
        facts = {n: [f["facts"][n] for f in first] for n in chosen}
        del first
        ctx = DatasetContext(cl, ds, groups, runs, floor_rows, facts, selection_limit=selection_limit, clock=clock)
        if adjust is not None:
            opts = adjust(runs, opts)
        plans = {}
        for n in chosen:
            try:
                plans[n] = audits[n].plan(ctx, opts[n])
            except Skip as exc:
                skipped[n] = str(exc)
        spec = {n: (tuple(audits[n].pieces(plan)), opts[n], th[n]) for n, plan in plans.items()}
        t3 = time.perf_counter()
        clock["plan"] = t3 - t2
        pieces = _second_pass_pieces(cl, [cl.submit(_second_pass, path, g, spec, pure=False) for g in groups],
                                     {n: len(s[0]) for n, s in spec.items()})
        t4 = time.perf_counter()
        clock["pass2"] = t4 - t3
        # one audit piece at a time: gather its parts, combine, drop them (client and workers) before the next
        for n, (audit_pieces, o, t) in spec.items():
            t5 = time.perf_counter()
            done = [audits[n].combine(_take(cl, pieces, (n, j)), piece, o, t, ctx)
                    for j, piece in enumerate(audit_pieces)]
            results[n] = audits[n].assemble(done, plans[n])
            clock[f"combine_{n}"] = time.perf_counter() - t5
    return WholeAudit(results, skipped, corpus_facts=(runs, counts))


def run_partitioned_whole_audit(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    n_workers: int = 2,
    environment: str | None = None,
    campaign: str | None = None,
    pairs: Sequence[tuple] | Callable = (),
    simulation_run=None,
    reward_environments: Sequence | None = None,
    floor_s: float | None = None,
    n_boot: int | None = None,
    n_boot_rank: int | None = None,
    simulation_n_boot: int | None = None,
    seed: int | None = None,
    thresholds: Mapping[str, object] | None = None,
    timings: dict | None = None,
    options: Mapping[str, object] | None = None,
    profile: str | None = None,
):
    """:func:`audits.engine.whole_audit.run_whole_audit` of a partitioned dataset, on Dask (see the module docstring):
    :func:`run_partitioned_audits` of every audit the Dask engine runs, with the whole audit's keywords.

    Parameters
    ----------
    dataset : path or CorpusDataset
        A dataset folder (``speedaudit convert --partition-by problem``).
    scheduler, client, n_workers
        ``tcp://HOST:PORT`` of a running scheduler, or an existing :class:`distributed.Client`; default a
        loopback LocalCluster of ``n_workers`` single-threaded processes.
    environment, campaign, floor_s, n_boot, n_boot_rank, simulation_n_boot, seed, thresholds, reward_environments
        As :func:`audits.engine.whole_audit.run_whole_audit`.
    pairs : sequence of (source, target) runs, or a callable
        Calibration pairs (each run a :class:`~audits.corpus.runs.Run` or (environment, campaign)); a callable
        receives the dataset's run table (:class:`~audits.corpus.runs.Runs`, from pass 1) and returns them (the
        command line resolves its options against it). None named: the default pairs of
        :func:`audits.corpus.selection.choose_pairs`, as in memory (skipped with the in-memory reason when there
        are none).
    simulation_run : Run or (environment, campaign), optional
        The run whose timings stand in for rollouts; default the simulation audit's own choice (also within
        the given half of an (environment, None) or (None, campaign) pair, as ``--simulation-environment`` alone).
    options : mapping name -> Options, optional
        Each audit's options (:func:`audits.engine.whole_audit.resolve_options`; the command line's); instead of
        the keywords above (``pairs`` and ``simulation_run`` still name the pairs and the simulated run when
        given). Every option and default comes from the registry's declarations either way.
    profile : {"reward", "benchmark"}, optional
        The verdict profile of every audit's thresholds.
    timings : dict, optional
        Filled with wall seconds (``time.perf_counter``) of ``cluster``, ``pass1``, ``plan``, ``pass2``,
        ``rereads`` (the extra reads: quietness of default pairs, the contention medians' refinement) and each
        audit's combining step (with the gathering of its parts, ``combine_NAME``).

    Returns
    -------
    audits.engine.whole_audit.WholeAudit

    Examples
    --------
    >>> whole = run_partitioned_whole_audit("corpus.dataset", pairs=[(("quiet", "c0"), ("quiet", "c1"))])  # doctest: +SKIP
    >>> whole.to_dict()["calibration"][0]["best_family"]                                            # doctest: +SKIP
    """
    from audits.engine.whole_audit import _run_names, legacy_options
    from audits.protocol import registry

    # every option and default from the registry's declarations (audits.checks.declared), as in memory
    audit_names = [n for n in registry.names() if registry.get(n).dask is None]
    if options is None:
        opts = legacy_options(names=audit_names, environment=environment, campaign=campaign, simulation_run=None,
                              reward_environments=reward_environments, floor_s=floor_s, n_boot=n_boot,
                              n_boot_rank=n_boot_rank, simulation_n_boot=simulation_n_boot, seed=seed)
    else:
        opts = {n: registry.get(n).options(dict(options).get(n)) for n in audit_names}
    if simulation_run is not None:
        opts["simulation"] = registry.get("simulation").options(opts["simulation"], **_run_names(simulation_run))

    def adjust(runs, given):
        named = pairs(runs) if callable(pairs) else pairs
        if not named:
            return given
        return {**given, "calibration": registry.get("calibration").options(
            given["calibration"], pairs=tuple((Run.coerce(s), Run.coerce(t)) for s, t in named))}

    return run_partitioned_audits(dataset, audit_names, options=opts, thresholds=thresholds, profile=profile,
                                  client=client, scheduler=scheduler, n_workers=n_workers, timings=timings,
                                  adjust=adjust)


# ----------------------------------------------------------------------------------------------
# audits whose partition steps still live in this package (moved into their Audit one by one)
# ----------------------------------------------------------------------------------------------

class _LegacyReliability:
    name = "reliability"

    def facts_part(self, part, options):
        return None

    def plan(self, ctx, options):
        return [(r.environment, r.campaign) for r in ctx.runs.select(environment=options.environment,
                                                                     campaign=options.campaign)]

    def pieces(self, plan):
        return (plan,)

    def partition_part(self, part, piece, options, thresholds):
        from audits.engine.partitioned.reliability import _reliability_part

        return _reliability_part(part.corpus, piece)

    def combine(self, parts, piece, options, thresholds, ctx):
        from audits.engine.partitioned import reliability as rel
        from stats.bootstrap import check_n_boot

        contention = rel._contention(ctx._cl, str(ctx._ds.path), ctx._ds.n_partitions,
                                     {key: [t[key]["contention"] for t in parts if key in t] for key in piece},
                                     thresholds, limit=ctx.selection_limit)
        chosen = [Run(*key) for key in piece]
        return rel._combine_reliability(parts, ctx.runs, chosen, contention, thresholds=thresholds,
                                        n_boot=check_n_boot(options.n_boot), seed=options.seed,
                                        target_reliability=options.target_reliability,
                                        target_precision=options.target_precision, max_pairs=options.max_pairs)

    def assemble(self, results, plan):
        return results[0]


class _LegacyCalibration:
    name = "calibration"

    def facts_part(self, part, options):
        return None

    def plan(self, ctx, options):
        from audits.corpus.selection import no_pair_reason
        from audits.engine.partitioned import calibration as cal
        from audits.protocol.audit import Skip

        named = [(Run.coerce(s), Run.coerce(t)) for s, t in options.pairs]
        choices = _calibration_choices(ctx, named)
        plans = [(c, cal._calibration_plan(ctx.runs, c.source, c.target)) for c in choices]
        if not plans:
            raise Skip(no_pair_reason(ctx.runs))
        return [(c.rule, src, tgt, key, ((src.environment, src.campaign), (tgt.environment, tgt.campaign), key,
                                         cal.drift_campaigns(ctx.runs, src, tgt, key))) for c, (src, tgt, key) in plans]

    def pieces(self, plan):
        return tuple(plan)

    def partition_part(self, part, piece, options, thresholds):
        from audits.engine.partitioned.calibration import _calibration_part

        return _calibration_part(part.corpus, *piece[4])

    def combine(self, parts, piece, options, thresholds, ctx):
        from dataclasses import replace

        from audits.checks.calibration import _check_options
        from audits.engine.partitioned import calibration as cal

        families, robust, n_boot, n_boot_rank = _check_options(list(options.families), options.calibration_family,
                                                               options.robust or False, options.n_boot,
                                                               options.n_boot_rank)
        rule, src, tgt, key, _ = piece
        return replace(cal._combine_calibration(parts, src, tgt, key, families=families, robust=robust,
                                                calibration_family=options.calibration_family,
                                                variance_ratio=options.variance_ratio, taus=tuple(options.taus),
                                                n_boot=n_boot, n_boot_rank=n_boot_rank, level=options.level,
                                                seed=options.seed, limits=thresholds), pair_rule=rule)

    def assemble(self, results, plan):
        return tuple(results)


def _cell_cvs_part(part) -> dict:
    """The repeat CVs of every run's reference cells in some partitions (a cell lies in one problem, so in one
    file): what :func:`audits.corpus.selection.quietness_of` reads, as the in-memory default pairs do."""
    from audits.corpus.selection import cell_cvs

    return cell_cvs(part.corpus)


def _calibration_choices(ctx, named: list) -> tuple:
    from audits.corpus.selection import choose_pairs, needs_quietness, quietness_of

    if named or not needs_quietness(ctx.runs):
        return choose_pairs(None, named=named, runs=ctx.runs, figure={})
    merged: dict = {}
    for part in ctx.map(_cell_cvs_part):
        for run, values in part.items():
            merged.setdefault(run, []).append(values)
    return choose_pairs(None, runs=ctx.runs, figure=quietness_of(merged, ctx.runs))


def _aggregator_names(options) -> list:
    from stats.aggregation import AGGREGATORS

    return list(AGGREGATORS) if options.names is None else list(options.names)


class _LegacyAggregation:
    name = "aggregation"

    def facts_part(self, part, options):
        from audits.engine.partitioned.aggregation import _repeat_values_of

        return _repeat_values_of(part.corpus)

    def plan(self, ctx, options):
        from audits.engine.partitioned import aggregation as agg

        chosen, plan, repeats = agg._aggregation_plan(ctx.runs, ctx.floor_rows, ctx.facts(self, options),
                                                      environment=options.environment, campaign=options.campaign,
                                                      floor_s=options.floor_s)
        return {"chosen": chosen, "plan": plan, "repeats": repeats}

    def pieces(self, plan):
        return (plan,)

    def partition_part(self, part, piece, options, thresholds):
        from audits.engine.partitioned.aggregation import _aggregation_part

        return _aggregation_part(part.corpus, piece["plan"], _aggregator_names(options))

    def combine(self, parts, piece, options, thresholds, ctx):
        from audits.engine.partitioned import aggregation as agg

        return agg._combine_aggregation(parts, piece["chosen"], piece["plan"], piece["repeats"],
                                        thresholds=thresholds, n_boot=options.n_boot, seed=options.seed)

    def assemble(self, results, plan):
        return results[0]


class _LegacySimulation:
    name = "simulation"

    @staticmethod
    def _environments(options):
        from audits.checks.registered import example_reward_environments
        from audits.checks.simulation import _reward_environment_list

        return _reward_environment_list(example_reward_environments() if options.reward_environments is None
                                        else options.reward_environments, None)

    def facts_part(self, part, options):
        from audits.engine.partitioned import simulation as sim

        return sim._simulation_facts_of(part.corpus, sim._fact_columns(self._environments(options)), False)

    def plan(self, ctx, options):
        from audits.engine.partitioned import simulation as sim
        from audits.errors import UserError
        from audits.protocol.audit import Skip

        try:
            return sim._simulation_plan(ctx.runs, ctx.floor_rows, ctx.facts(self, options),
                                        self._environments(options), environment=options.environment,
                                        campaign=options.campaign, group_sizes=tuple(options.group_sizes),
                                        n_bins=options.n_bins, quality_distribution=options.quality_distribution,
                                        include_incorrect=options.include_incorrect)
        except UserError as exc:
            if options.environment is not None or options.campaign is not None:
                raise
            raise Skip(f"{exc}".splitlines()[0]) from exc

    def pieces(self, plan):
        return (plan,)

    def partition_part(self, part, piece, options, thresholds):
        from audits.engine.partitioned.simulation import _simulation_part

        return _simulation_part(part.corpus, *piece["task"])

    def combine(self, parts, piece, options, thresholds, ctx):
        from audits.engine.partitioned import simulation as sim

        return sim._combine_simulation(parts, piece, thresholds=thresholds, n_boot=options.n_boot,
                                       seed=options.seed, include_incorrect=options.include_incorrect)

    def assemble(self, results, plan):
        return results[0]


_LEGACY = {a.name: a for a in (_LegacyReliability(), _LegacyCalibration(), _LegacyAggregation(),
                               _LegacySimulation())}
