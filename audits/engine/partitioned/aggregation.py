"""The aggregation audit (the comparison of aggregators) of a partitioned dataset on Dask (see :mod:`audits.engine.partitioned`).

Every figure of :func:`audits.checks.aggregation.run_aggregation_audit` is a function of per-problem values
(:class:`stats.aggregation.AggregatorProblemValues`: per aggregator and problem, the stability and the dynamic
range, and a digest of the per-unit percentiles for ``same_as``) plus three figures of the whole run: its floor
(for ``floor_pct``), its repeat values (the smallest defines the quartiles; fewer than two skip the run) and its
run summary. So:

1. **workers**, pass 1: each partition's floor rows and run-summary partials
   (:func:`audits.engine.partitioned._common._summary_partial`) and its runs' repeat values (:func:`_repeat_values`);
2. **client**: the run table, each run's floor (the in-memory rule, ``floors_by_language`` or the median of the
   run's floor rows, applied to the gathered floor rows) and repeat values;
3. **workers**, pass 2: each partition's :func:`stats.aggregation.aggregator_problem_values` per run, with the run's
   floor and quartile repeat (the very function :func:`stats.aggregation.compare_aggregators` calls);
4. **client**: :meth:`AggregatorProblemValues.concat` (columns in problem-name order, the order of the problem
   codes of the loaded dataset), then the in-memory combining code: :func:`stats.aggregation.combine_aggregator_values`
   (means, paired bootstrap over problems, Pareto front) and :func:`audits.checks.aggregation.combine_run_comparisons`
   (findings, table, primary run).

The client holds a few numbers per (aggregator, problem), never executions. Custom aggregators
(:func:`stats.aggregation.register_aggregator`) must be registered in the worker processes too (e.g. by a module
the workers import); the built-ins always are.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

import numpy as np

from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.engine.partitioned._common import RUN_COLUMNS, _concat, _summary_partial, dask_client, partition_runs

__all__ = ["run_partitioned_aggregation"]


def _repeat_values(path: str, index: int) -> dict:
    """``{(environment, campaign): sorted repeat values}`` of one partition's non-floor rows."""
    return _repeat_values_of(open_dataset(path).read_partition(index))


def _repeat_values_of(part) -> dict:
    from stats._groups import group_codes, label_mask

    if "role" in part.columns:
        part = part.loc[~label_mask(part["role"], "floor")]
    if len(part) == 0:
        return {}
    run_code, n_runs = group_codes(part, list(RUN_COLUMNS))
    repeat = part["repeat"].to_numpy()
    envs, camps = part["environment"].astype(str).to_numpy(), part["campaign"].astype(str).to_numpy()
    out = {}
    for k in range(n_runs):
        mine = np.flatnonzero(run_code == k)
        out[(envs[mine[0]], camps[mine[0]])] = np.unique(repeat[mine])
    return out


def _run_floor(floor_rows, run, floor_s):
    """The floor :func:`stats.aggregation.compare_aggregators` takes for ``run`` from its executions: ``floor_s`` when
    given, else each language's floor, else the median of the run's ``ok`` floor rows, else 0 (the same functions
    on the run's floor rows, the only rows they read)."""
    from stats.aggregation import floor_from_rows, floors_by_language

    if floor_s is not None:
        return floor_s
    rows = floor_rows.loc[run.mask(floor_rows)] if len(floor_rows) else floor_rows
    return floors_by_language(rows) or floor_from_rows(rows) or 0.0


def _aggregation_partial(path: str, index: int, plan: list, names: list) -> dict:
    """``{(environment, campaign): AggregatorProblemValues}`` of one partition's problems, per planned run."""
    return _aggregation_part(open_dataset(path).read_partition(index), plan, names)


def _aggregation_part(part, plan: list, names: list) -> dict:
    from audits.corpus.runs import Run
    from stats._groups import label_mask
    from stats.aggregation import aggregator_problem_values
    from stats.ranking import reference_pools

    out = {}
    for (env, camp), floor_s, quartile_repeat in plan:
        mask = Run(env, camp).mask(part)
        if "role" in part.columns:
            mask &= ~label_mask(part["role"], "floor")
        if not mask.any():
            continue
        rows = part.loc[mask]
        out[(env, camp)] = aggregator_problem_values(rows, names=names, pools=reference_pools(rows),
                                                     floor_s=floor_s, quartile_repeat=quartile_repeat)
    return out


def run_partitioned_aggregation(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    environment: str | None = None,
    campaign: str | None = None,
    names: Sequence[str] | None = None,
    floor_s: float | None = None,
    n_boot: int = 1000,
    seed: int | None = 0,
    thresholds=None,
    n_workers: int = 2,
):
    """:func:`audits.checks.aggregation.run_aggregation_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()`` with the same options:
    the workers compute each partition's per-problem values with the in-memory audit's own function, the client
    combines them with its own combining code (see the module docstring).

    Parameters
    ----------
    dataset : path or CorpusDataset
        A dataset folder (``speedaudit convert --partition-by problem``).
    scheduler : str, optional
        ``tcp://HOST:PORT`` of a running Dask scheduler; default a loopback LocalCluster of ``n_workers``.
    client : distributed.Client, optional
        An existing client (then ``scheduler`` and ``n_workers`` are not used).
    environment, campaign, names, floor_s, n_boot, seed, thresholds
        As :func:`audits.checks.aggregation.run_aggregation_audit`.

    Returns
    -------
    audits.checks.aggregation.AggregationAudit

    Examples
    --------
    >>> from audits.corpus.dataset import save_dataset
    >>> from audits.corpus.synthetic import synthesize
    >>> ds = save_dataset(synthesize(n_problems=4, n_repeats=3, seed=1).corpus, "/tmp/agg.dataset")  # doctest: +SKIP
    >>> run_partitioned_aggregation(ds, n_boot=50).recommended                                     # doctest: +SKIP
    'mean_pct'
    """
    from audits.checks.aggregation import AggregationThresholds
    from stats.aggregation import AGGREGATORS, get_aggregator

    th = AggregationThresholds.coerce(thresholds)
    from stats.bootstrap import check_n_boot

    n_boot = check_n_boot(n_boot)  # 0: no intervals, as in memory
    names = list(AGGREGATORS) if names is None else [get_aggregator(n).name for n in names]
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        path = str(ds.path)
        first = [cl.submit(_summary_partial, path, i, pure=False) for i in range(ds.n_partitions)]
        repeats_f = [cl.submit(_repeat_values, path, i, pure=False) for i in range(ds.n_partitions)]
        partials, repeat_parts = cl.gather(first), cl.gather(repeats_f)
        runs = partition_runs(partials)
        chosen, plan, repeats = _aggregation_plan(runs, _concat([p["floor_rows"] for p in partials]), repeat_parts,
                                                  environment=environment, campaign=campaign, floor_s=floor_s)
        futures = [cl.submit(_aggregation_partial, path, i, plan, names, pure=False) for i in range(ds.n_partitions)]
        tables = cl.gather(futures)
    return _combine_aggregation(tables, chosen, plan, repeats, thresholds=th, n_boot=n_boot, seed=seed)


def _aggregation_plan(runs, floor_rows, repeat_parts: list, *, environment, campaign, floor_s):
    """``(chosen run summaries, plan of pass 2, repeat values per run)`` from pass 1 (run table, floor rows and
    :func:`_repeat_values` of every partition)."""
    chosen = [runs.get(r) for r in runs.select(environment=environment, campaign=campaign)]
    repeats = {}
    for part in repeat_parts:
        for key, values in part.items():
            repeats[key] = np.union1d(repeats[key], values) if key in repeats else values
    plan = [((s.environment, s.campaign), _run_floor(floor_rows, s.run, floor_s),
             repeats[(s.environment, s.campaign)][0])
            for s in chosen if len(repeats.get((s.environment, s.campaign), ())) >= 2]
    return chosen, plan, repeats


def _combine_aggregation(tables: list, chosen, plan, repeats, *, thresholds, n_boot, seed):
    """The in-memory combining code on the partitions' :func:`_aggregation_part` values."""
    from audits.checks.aggregation import combine_run_comparisons
    from stats.aggregation import AggregatorProblemValues, combine_aggregator_values

    planned = {key for key, _, _ in plan}
    items = []
    for s in chosen:
        key = (s.environment, s.campaign)
        if key not in planned:
            items.append((s, None))  # one repeat only: an n/a finding, as in memory
            continue
        values = AggregatorProblemValues.concat([t[key] for t in tables if key in t])
        items.append((s, combine_aggregator_values(values, n_repeats=len(repeats[key]),
                                                   quartile_repeat=repeats[key][0], n_boot=n_boot, seed=seed)))
    return combine_run_comparisons(items, thresholds=thresholds, n_boot=n_boot)
