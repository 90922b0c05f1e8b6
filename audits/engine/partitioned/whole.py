"""The Dask engine: any list of registered audits over a partitioned dataset, two reads of each partition.

Every audit the engine runs (``dask is None``) declares its partition steps (:mod:`audits.protocol.partition`):
the same plan, part and combine the in-memory engine runs with the corpus as one partition, so a fix in either
step reaches both paths. This module only runs them (:func:`run_partitioned_audits`; ``speedaudit audit all
DATASET --dask`` and the benchmark's Dask stage through :func:`run_partitioned_whole_audit`):

1. **pass 1**, one task per group of consecutive partitions (:data:`GROUP_ROWS`), reading each once: the
   run-summary partials and floor rows, the corpus counts and every audit's
   :meth:`~audits.protocol.audit.Audit.facts_part`;
2. the **client** builds the run table and the floor rows into a plan context (:class:`DatasetContext`) and runs
   every audit's :meth:`~audits.protocol.audit.Audit.plan` on it (its ``map`` is an extra read of the partitions:
   the quietness of the runs for default calibration pairs);
3. **pass 2**, one task per group, reading each partition once: every audit's
   :meth:`~audits.protocol.audit.Audit.partition_part` of each of its pieces, on one
   :class:`~audits.protocol.context.AuditContext` of the group's rows (their pools and scores built once for every
   audit), split on its worker into one result per audit piece (calibration: per pair);
4. the **client**, one piece at a time, gathers its parts, runs the audit's
   :meth:`~audits.protocol.audit.Audit.combine` and drops them before the next (so it holds one audit's per-problem
   tables, never every audit's at once); reliability's exact contention medians add their refinement re-reads
   (typically one or two, :mod:`audits.checks.median_selection`).

The result is an :class:`audits.engine.whole_audit.WholeAudit`, so its JSON has the shape of the in-memory whole
audit's (:func:`audits.engine.whole_audit.run_whole_audit`) and equals it, every figure (to 1e-12; tests on a real
LocalCluster). What cannot run is skipped with the in-memory reason, never reported as passing: calibration
of a corpus without a named or default pair, the simulation when it cannot choose a run (unless one is named: then the error).
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property

import pandas as pd

from audits.corpus.counts import CorpusCounts, corpus_counts
from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run
from audits.dask_connection import CONNECT_TIMEOUT_S
from audits.engine.partitioned._common import dask_client, partition_runs, summary_of
from audits.engine.whole_audit import WholeAudit, legacy_options, run_names
from audits.errors import UserError
from audits.protocol import registry
from audits.protocol.audit import Skip
from audits.protocol.context import AuditContext
from audits.protocol.partition import concat_tables
from stats.discriminability import sandbox_floor

__all__ = ["run_partitioned_audits", "run_partitioned_whole_audit", "audit_dataset_on_dask"]


#: Rows one task reads at most (a group of consecutive partitions, whole problems each): the per-call costs of
#: the audits' per-problem functions are paid once per group, not once per file (measured at 10^6: a group of
#: five 10^5-row partitions in 2.9 s, the five one by one in 5.2 s); 10^6 rows is the in-memory audit of 10^6
#: (about 0.6 GB), far below the 6 GB per process of issue 17.
GROUP_ROWS = 1_000_000


def _groups(ds: CorpusDataset, n_workers: int) -> list[tuple[int, ...]]:
    """Consecutive partitions in groups of at most :data:`GROUP_ROWS` rows (on average), at least one group
    per worker when there are enough partitions."""
    n = ds.n_partitions
    per_part = max(1.0, ds.rows / max(n, 1))
    size = max(1, min(math.ceil(n / max(n_workers, 1)), int(GROUP_ROWS // per_part)))
    return [tuple(range(i, min(i + size, n))) for i in range(0, n, size)]


def _read(path: str, indices: tuple) -> pd.DataFrame:
    """The rows of some partitions (whole problems): one partition as read, several concatenated."""
    ds = open_dataset(path)
    parts = [ds.read_partition(i) for i in indices]
    return parts[0] if len(parts) == 1 else concat_tables(parts)


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
        return sandbox_floor(self.floor_rows)

    def facts(self, audit, options) -> list:
        return self._facts[audit.name]

    def map(self, function, *args) -> list:
        """``function(AuditContext of the group's rows, *args)`` of every group, in order; the task is named after the
        function (``function.__name__``), its time added to the ``rereads`` timing."""
        t0 = time.perf_counter()
        cl, path = self._cl, str(self._ds.path)
        futures = [cl.submit(_mapped, path, g, function, args, key=f"{function.__name__}-{uuid.uuid4().hex}",
                             pure=False) for g in self._groups]
        try:
            return cl.gather(futures)
        finally:
            futures.clear()
            self._clock["rereads"] = self._clock.get("rereads", 0.0) + time.perf_counter() - t0


@small_pages()
def _mapped(path: str, indices: tuple, function, args: tuple):
    return function(AuditContext(_read(path, indices)), *args)


@small_pages()
def _first_pass(path: str, indices: tuple, facts: dict) -> dict:
    """Pass 1 of every audit on some partitions, each read once: the run-summary partials and floor rows, the
    corpus counts and each audit's :meth:`~audits.protocol.audit.Audit.facts_part` (``facts``: name -> options)."""
    part = _read(path, indices)
    ctx = AuditContext(part)
    return {"summary": summary_of(part), "counts": corpus_counts(part),
            "facts": {name: registry.get(name).facts_part(ctx, options) for name, options in facts.items()}}


@small_pages()
def _second_pass(path: str, indices: tuple, spec: dict) -> dict:
    """Every audit's per-problem part of some partitions, each read once (``spec``: name -> (pieces, options,
    thresholds)): ``{name: [part of each piece]}``, the partitions' rows shared by every audit's part (one
    :class:`~audits.protocol.context.AuditContext`: its run contexts' pools and scores built once)."""
    part = AuditContext(_read(path, indices))
    return {name: [registry.get(name).partition_part(part, piece, options, thresholds) for piece in pieces]
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
    # deferred: distributed, the optional Dask engine's library (in memory, the audits never load it)
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


# The client keeps glibc's way of returning freed memory (keep_freed=False): it combines gathered tables rather than
# computing on rows, and at 10^8 rows its peak (5.8 GB) is what the 6 GB target of issue 26 item 3 is measured on;
# memory kept in its heap could only add to that peak. The workers' tasks keep freed memory (audits.corpus.memory).
@small_pages(keep_freed=False)
def run_partitioned_audits(dataset: str | os.PathLike | CorpusDataset, names: Sequence[str] | None = None, *,
                           options: Mapping[str, object] | None = None,
                           thresholds: Mapping[str, object] | None = None, profile: str | None = None,
                           client=None, scheduler: str | None = None, n_workers: int = 2,
                           timings: dict | None = None, one_partition_per_task: bool = False,
                           selection_limit: int = 1 << 20, adjust: Callable | None = None,
                           raise_skips: bool = False):
    """The registered audits ``names`` (default every one the Dask engine runs, ``dask is None``) of a partitioned
    dataset, on Dask, through their partition steps (:mod:`audits.protocol.partition`; see the module docstring).

    ``options``: name -> Options or mapping (validated by each audit); ``adjust(runs, options)``: the options
    again once the run table is known (the command line resolves named runs against it).
    ``one_partition_per_task``: a task per partition instead of per group of :data:`GROUP_ROWS` rows.
    Returns an :class:`audits.engine.whole_audit.WholeAudit`; an audit whose plan skips is listed with the reason
    (``raise_skips``: the :class:`~audits.protocol.audit.Skip` is raised instead).
    """
    chosen = [n for n in registry.names() if (names is None or n in set(names))]
    for n in chosen:
        if registry.get(n).dask is not None:
            raise ValueError(f"audit {n!r} does not run on Dask: {registry.get(n).dask}")
    audits = {n: registry.get(n) for n in chosen}
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
        floor_rows = concat_tables([f["summary"]["floor_rows"] for f in first])
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
                if raise_skips:
                    raise
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
    return WholeAudit(results, skipped, corpus_facts=(runs, counts), options={n: opts[n] for n in chosen})


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
    # every option and default from the registry's declarations (audits.checks.declared), as in memory
    audit_names = [n for n in registry.names() if registry.get(n).dask is None]
    if options is None:
        opts = legacy_options(names=audit_names, environment=environment, campaign=campaign, simulation_run=None,
                              reward_environments=reward_environments, floor_s=floor_s, n_boot=n_boot,
                              n_boot_rank=n_boot_rank, simulation_n_boot=simulation_n_boot, seed=seed)
    else:
        opts = {n: registry.get(n).options(dict(options).get(n)) for n in audit_names}
    if simulation_run is not None:
        opts["simulation"] = registry.get("simulation").options(opts["simulation"], **run_names(simulation_run))

    def adjust(runs, given):
        named = pairs(runs) if callable(pairs) else pairs
        if not named:
            return given
        return {**given, "calibration": registry.get("calibration").options(
            given["calibration"], pairs=tuple((Run.coerce(s), Run.coerce(t)) for s, t in named))}

    return run_partitioned_audits(dataset, audit_names, options=opts, thresholds=thresholds, profile=profile,
                                  client=client, scheduler=scheduler, n_workers=n_workers, timings=timings,
                                  adjust=adjust)


def not_run_on_dask() -> dict[str, str]:
    """``{audit name: why it is skipped}`` of every registered audit the Dask engine does not run."""
    return {n: f"not run on Dask: {registry.get(n).dask}" for n in registry.names() if registry.get(n).dask is not None}


def audit_dataset_on_dask(dataset: str | os.PathLike, *, scheduler: str | None = None, n_workers: int = 2,
                          security=None, connect_timeout_s: float = CONNECT_TIMEOUT_S, **keywords) -> WholeAudit:
    """:func:`run_partitioned_whole_audit` of ``dataset`` on the client of :func:`dask_client` (a running
    ``scheduler``, reached with ``security`` within ``connect_timeout_s``; else a loopback cluster of ``n_workers``
    processes, closed after): the one Dask entry of ``speedaudit audit all`` and :func:`speedaudit.run_all`.

    A keyword :func:`run_partitioned_whole_audit` does not take, and a dataset the engine refuses
    (``ValueError``), are :class:`~audits.errors.UserError` naming the dataset. The audits the engine does not run
    are in the result's ``skipped``, each with its reason (:func:`not_run_on_dask`)."""
    taken = set(inspect.signature(run_partitioned_whole_audit).parameters) - {"dataset", "client", "scheduler",
                                                                             "n_workers"}
    other = sorted(set(keywords) - taken)
    if other:
        raise UserError(f"{dataset}: {', '.join(other)} not taken on Dask (a partitioned dataset); the options "
                        f"there: {', '.join(sorted(taken))}")
    with dask_client(scheduler, n_workers=n_workers, security=security, connect_timeout_s=connect_timeout_s) as client:
        try:
            whole = run_partitioned_whole_audit(dataset, client=client, **keywords)
        except ValueError as exc:
            raise UserError(f"{dataset}: {exc}") from exc
    # the whole audit a user asked for: the registered audits the Dask engine does not run are skipped with the
    # registry's reason, so the summary, the saved JSON (meta.skipped) and a report of it say so, as for any skip
    # (never silently absent); run_partitioned_whole_audit itself returns the audits it ran (the engine's part)
    whole.skipped.update(not_run_on_dask())
    return whole
