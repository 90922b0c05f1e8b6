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
from dataclasses import replace
from collections.abc import Callable, Mapping, Sequence

from audits.corpus.dataset import CorpusDataset, open_dataset
import pandas as pd

from audits.engine.partitioned._common import _concat, _summary_of, dask_client, partition_runs

__all__ = ["run_partitioned_whole_audit"]


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


def _first_pass(path: str, indices: tuple, fact_columns: list, include_incorrect: bool) -> dict:
    """Pass 1 of every audit on some partitions, each read once."""
    from audits.engine.partitioned.aggregation import _repeat_values_of
    from audits.engine.partitioned.simulation import _simulation_facts_of

    from audits.corpus.counts import corpus_counts

    part = _read(path, indices)
    return {"summary": _summary_of(part), "repeats": _repeat_values_of(part),
            "facts": _simulation_facts_of(part, fact_columns, include_incorrect), "counts": corpus_counts(part)}


def _second_pass(path: str, indices: tuple, spec: dict) -> dict:
    """Every audit's per-problem part of some partitions, each read once (``spec``: each audit's plan)."""
    from audits.engine.partitioned.aggregation import _aggregation_part
    from audits.engine.partitioned.calibration import _calibration_part
    from audits.engine.partitioned.discriminability import _discriminability_part
    from audits.engine.partitioned.reliability import _reliability_part
    from audits.engine.partitioned.simulation import _simulation_part

    part = _read(path, indices)
    return {"discriminability": _discriminability_part(part, *spec["discriminability"]),
            "reliability": _reliability_part(part, spec["reliability"]),
            "aggregation": _aggregation_part(part, *spec["aggregation"]),
            "calibration": [_calibration_part(part, *pair) for pair in spec["calibration"]],
            "simulation": None if spec["simulation"] is None else _simulation_part(part, *spec["simulation"])}


def _cell_cvs_pass(path: str, indices: tuple) -> dict:
    """The repeat CVs of every run's reference cells in some partitions (a cell lies in one problem, so in one
    file): what :func:`audits.corpus.selection.quietness_of` reads, as the in-memory default pairs do."""
    from audits.corpus.selection import cell_cvs

    return cell_cvs(_read(path, indices))


def _calibration_choices(cl, path: str, groups: list, runs, named: list) -> tuple:
    """The calibration pairs by the one rule (:func:`audits.corpus.selection.choose_pairs`): the named ones, else
    the default pairs, the quietness (where they need it) from one more read of each group's partitions."""
    from audits.corpus.selection import choose_pairs, needs_quietness, quietness_of

    if named or not needs_quietness(runs):
        return choose_pairs(None, named=named, runs=runs, figure={})
    merged: dict = {}
    for part in cl.gather([cl.submit(_cell_cvs_pass, path, g, pure=False) for g in groups]):
        for run, values in part.items():
            merged.setdefault(run, []).append(values)
    return choose_pairs(None, runs=runs, figure=quietness_of(merged, runs))


def _piece(result: dict, name: str, index: int | None = None):
    """One audit's part of a :func:`_second_pass` result (``index``: one calibration pair's)."""
    return result[name] if index is None else result[name][index]


def _second_pass_pieces(cl, futures: list, *, n_pairs: int, simulated: bool) -> dict:
    """Split every group's :func:`_second_pass` result, on its worker, into one future per audit (calibration:
    per pair), and wait for them: ``{"reliability": [futures, one per group], ..., ("calibration", j): ...}``.

    The whole results are released once split, so each audit's parts can be gathered and dropped on their own
    (:func:`_take`): the client holds one audit's per-problem tables at a time, not every audit's at once
    (issue 26: gathering them all peaked the client at 8.7 GB at 10^8 executions)."""
    from distributed import wait

    names = ["reliability", "discriminability", "aggregation"] + (["simulation"] if simulated else [])
    pieces = {name: [cl.submit(_piece, f, name, pure=False) for f in futures] for name in names}
    for j in range(n_pairs):
        pieces[("calibration", j)] = [cl.submit(_piece, f, "calibration", j, pure=False) for f in futures]
    futures.clear()  # the split pieces keep what they need; the whole results go once split
    wait([f for fs in pieces.values() for f in fs])
    return pieces


def _take(cl, pieces: dict, name) -> list:
    """Gather one audit's parts (one per group, in group order) and release them on the workers."""
    futures = pieces.pop(name)
    try:
        return cl.gather(futures)
    finally:
        futures.clear()


def _aggregator_names(options) -> list:
    from stats.aggregation import AGGREGATORS

    return list(AGGREGATORS) if options.names is None else list(options.names)


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
    """:func:`audits.engine.whole_audit.run_whole_audit` of a partitioned dataset, on Dask (see the module docstring).

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
        Filled with wall seconds (``time.perf_counter``) of ``cluster``, ``pass1``, ``pass2``, ``contention``
        (the refinement re-reads) and each audit's combining step (with the gathering of its parts).

    Returns
    -------
    audits.engine.whole_audit.WholeAudit

    Examples
    --------
    >>> whole = run_partitioned_whole_audit("corpus.dataset", pairs=[(("quiet", "c0"), ("quiet", "c1"))])  # doctest: +SKIP
    >>> whole.to_dict()["calibration"][0]["best_family"]                                            # doctest: +SKIP
    """
    from audits.checks.calibration import _check_options
    from audits.corpus.runs import Run
    from audits.errors import UserError
    from audits.engine.partitioned import aggregation as agg, calibration as cal, discriminability as dis
    from audits.engine.partitioned import reliability as rel, simulation as sim
    from audits.checks.registered import example_reward_environments
    from audits.corpus.counts import CorpusCounts
    from audits.corpus.selection import no_pair_reason
    from audits.checks.simulation import _reward_environment_list
    from audits.engine.whole_audit import WholeAudit, _run_names, legacy_options
    from audits.protocol import registry
    from stats.bootstrap import check_n_boot

    # every option and default from the registry's declarations (audits.checks.declared), as in memory
    audit_names = [n for n in registry.names() if registry.get(n).dask is None]
    if options is None:
        opts = legacy_options(names=audit_names, environment=environment, campaign=campaign, simulation_run=None,
                              reward_environments=reward_environments, floor_s=floor_s, n_boot=n_boot,
                              n_boot_rank=n_boot_rank, simulation_n_boot=simulation_n_boot, seed=seed)
    else:
        opts = {n: registry.get(n).options(dict(options).get(n)) for n in audit_names}
        if simulation_run is None and (opts["simulation"].environment is not None
                                       or opts["simulation"].campaign is not None):
            simulation_run = (opts["simulation"].environment, opts["simulation"].campaign)
        if not pairs and opts["calibration"].pairs:
            pairs = opts["calibration"].pairs
    o_rel, o_dis, o_cal, o_agg, o_sim = (opts[n] for n in ("reliability", "discriminability", "calibration",
                                                           "aggregation", "simulation"))
    environment, campaign, floor_s, seed = o_rel.environment, o_rel.campaign, o_dis.floor_s, o_rel.seed
    th = {n: registry.get(n).thresholds(dict(thresholds or {}).get(n), profile=profile) for n in audit_names}
    t_rel, t_dis, t_cal = th["reliability"], th["discriminability"], th["calibration"]
    clock = timings if timings is not None else {}
    n_boot = check_n_boot(o_rel.n_boot)
    reward_environments = _reward_environment_list(
        example_reward_environments() if o_sim.reward_environments is None else o_sim.reward_environments, None)
    fact_columns = sim._fact_columns(reward_environments)
    families, robust, cal_n_boot, cal_n_boot_rank = _check_options(list(o_cal.families), o_cal.calibration_family,
                                                                   o_cal.robust or False, o_cal.n_boot,
                                                                   o_cal.n_boot_rank)
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    path, n = str(ds.path), ds.n_partitions
    skipped: dict[str, str] = {}
    t0 = time.perf_counter()
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        t1 = time.perf_counter()
        clock["cluster"] = t1 - t0
        groups = _groups(ds, len(getattr(cl, "scheduler_info", dict)().get("workers", {})) or n_workers)
        first = cl.gather([cl.submit(_first_pass, path, g, fact_columns, False, pure=False) for g in groups])
        t2 = time.perf_counter()
        clock["pass1"] = t2 - t1
        runs = partition_runs([f["summary"] for f in first])
        counts = sum((f["counts"] for f in first), CorpusCounts())
        floor_rows = _concat([f["summary"]["floor_rows"] for f in first])
        chosen = runs.select(environment=environment, campaign=campaign)
        names = [(r.environment, r.campaign) for r in chosen]
        floors = dis._floors(ds, floor_rows)
        agg_chosen, agg_plan, repeats = agg._aggregation_plan(runs, floor_rows, [f["repeats"] for f in first],
                                                              environment=environment, campaign=campaign,
                                                              floor_s=floor_s)
        named_pairs = [(Run.coerce(s), Run.coerce(t)) for s, t in (pairs(runs) if callable(pairs) else pairs)]
        choices = _calibration_choices(cl, path, groups, runs, named_pairs)
        cal_plans = [cal._calibration_plan(runs, c.source, c.target) for c in choices]
        if not cal_plans:
            skipped["calibration"] = no_pair_reason(runs)
        sim_plan = None
        where = ({} if simulation_run is None else
                 _run_names(simulation_run))
        try:
            sim_plan = sim._simulation_plan(runs, floor_rows, [f["facts"] for f in first], reward_environments,
                                            environment=where.get("environment"),
                                            campaign=where.get("campaign"),
                                            group_sizes=tuple(o_sim.group_sizes), n_bins=o_sim.n_bins,
                                            quality_distribution=o_sim.quality_distribution,
                                            include_incorrect=o_sim.include_incorrect)
        except UserError as exc:
            if simulation_run is not None:
                raise
            skipped["simulation"] = f"{exc}".splitlines()[0]
        spec = {"discriminability": (names, floors, floor_s, t_dis, o_dis.method), "reliability": names,
                "aggregation": (agg_plan, _aggregator_names(o_agg)),
                "calibration": [((s.environment, s.campaign), (t.environment, t.campaign), key,
                                 cal.drift_campaigns(runs, s, t, key)) for s, t, key in cal_plans],
                "simulation": None if sim_plan is None else sim_plan["task"]}
        t3 = time.perf_counter()
        pieces = _second_pass_pieces(cl, [cl.submit(_second_pass, path, g, spec, pure=False) for g in groups],
                                     n_pairs=len(cal_plans), simulated=sim_plan is not None)
        t4 = time.perf_counter()
        clock["pass2"] = t4 - t3
        # one audit at a time: gather its pieces, combine, drop them (client and workers) before the next
        rel_tables = _take(cl, pieces, "reliability")
        contention = rel._contention(cl, path, n, {key: [t[key]["contention"] for t in rel_tables if key in t]
                                                   for key in names}, t_rel, limit=1 << 20)
        t5 = time.perf_counter()
        clock["contention"] = t5 - t4
        reliability = rel._combine_reliability(rel_tables, runs, chosen, contention, thresholds=t_rel,
                                               n_boot=n_boot, seed=seed, target_reliability=o_rel.target_reliability,
                                               target_precision=o_rel.target_precision, max_pairs=o_rel.max_pairs)
        del rel_tables
        t6 = time.perf_counter()
        clock["combine_reliability"] = t6 - t5
        discriminability = dis._combine_discriminability(_take(cl, pieces, "discriminability"), runs, chosen,
                                                         floors, floor_s=floor_s, thresholds=t_dis,
                                                         method=o_dis.method, n_boot=o_dis.n_boot, seed=o_dis.seed)
        t7 = time.perf_counter()
        clock["combine_discriminability"] = t7 - t6
        calibration = tuple(
            replace(cal._combine_calibration(_take(cl, pieces, ("calibration", j)), src, tgt, key, families=families,
                                     robust=robust, calibration_family=o_cal.calibration_family,
                                     variance_ratio=o_cal.variance_ratio, taus=tuple(o_cal.taus),
                                     n_boot=cal_n_boot, n_boot_rank=cal_n_boot_rank, level=o_cal.level,
                                     seed=o_cal.seed, limits=t_cal), pair_rule=choices[j].rule)
            for j, (src, tgt, key) in enumerate(cal_plans))
        t8 = time.perf_counter()
        clock["combine_calibration"] = t8 - t7
        aggregation = agg._combine_aggregation(_take(cl, pieces, "aggregation"), agg_chosen, agg_plan, repeats,
                                               thresholds=th["aggregation"], n_boot=o_agg.n_boot, seed=o_agg.seed)
        t9 = time.perf_counter()
        clock["combine_aggregation"] = t9 - t8
        simulation = None
        if sim_plan is not None:
            simulation = sim._combine_simulation(_take(cl, pieces, "simulation"), sim_plan,
                                                 thresholds=th["simulation"], n_boot=o_sim.n_boot, seed=o_sim.seed,
                                                 include_incorrect=o_sim.include_incorrect)
        clock["combine_simulation"] = time.perf_counter() - t9
    return WholeAudit(reliability=reliability, discriminability=discriminability, calibration=calibration,
                      aggregation=aggregation, simulation=simulation, skipped=skipped, corpus_facts=(runs, counts))
