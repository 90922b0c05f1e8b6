"""The discriminability audit of a partitioned dataset on Dask (see :mod:`audits.engine.partitioned`)."""

from __future__ import annotations

import contextlib
import os

import pandas as pd

from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.engine.partitioned._common import _concat, _summary_partial, dask_client, partition_runs

__all__ = ["run_partitioned_discriminability"]


def _discriminability_partial(path: str, index: int, runs: list, floors: pd.DataFrame, floor_s, thresholds,
                              method: str) -> dict:
    return _discriminability_part(open_dataset(path).read_partition(index), runs, floors, floor_s, thresholds,
                                  method)


def _discriminability_part(part: pd.DataFrame, runs: list, floors: pd.DataFrame, floor_s, thresholds,
                           method: str) -> dict:
    """:func:`audits.checks.discriminability.per_problem_tables` of every run's non-floor rows of one partition."""
    from audits.corpus.runs import Run
    from audits.checks.discriminability import per_problem_tables

    out = {}
    for env, camp in runs:
        run = Run(env, camp)
        mask = run.mask(part)
        if "role" in part.columns:
            from stats._groups import label_mask

            mask &= ~label_mask(part["role"], "floor")
        if not mask.any():
            continue
        out[(env, camp)] = per_problem_tables(part.loc[mask], floors, run, floor_s=floor_s, t=thresholds,
                                              method=method)
    return out


def run_partitioned_discriminability(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    floor_s: float | None = None,
    environment: str | None = None,
    campaign: str | None = None,
    thresholds=None,
    method: str = "iqr",
    n_boot: int = 1000,
    seed: int = 0,
    n_workers: int = 2,
):
    """:func:`audits.checks.discriminability.run_discriminability_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``.
    ``client``: an existing :class:`distributed.Client`; else ``scheduler`` or a loopback LocalCluster.
    """
    from audits.checks.discriminability import DiscriminabilityThresholds

    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    thresholds = thresholds or DiscriminabilityThresholds()
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        path = str(ds.path)
        partials = cl.gather([cl.submit(_summary_partial, path, i, pure=False) for i in range(ds.n_partitions)])
        runs = partition_runs(partials)
        chosen = runs.select(environment=environment, campaign=campaign)
        floors = _floors(ds, _concat([p["floor_rows"] for p in partials]))
        names = [(r.environment, r.campaign) for r in chosen]
        futures = [cl.submit(_discriminability_partial, path, i, names, floors, floor_s, thresholds, method,
                             pure=False) for i in range(ds.n_partitions)]
        tables = cl.gather(futures)
    return _combine_discriminability(tables, runs, chosen, floors, floor_s=floor_s, thresholds=thresholds,
                                     method=method, n_boot=n_boot, seed=seed)


def _floors(ds: CorpusDataset, floor_rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`stats.discriminability.sandbox_floor` of the dataset's gathered floor rows."""
    from stats.discriminability import sandbox_floor

    return sandbox_floor(floor_rows) if len(floor_rows) else sandbox_floor(ds.read_partition(0).iloc[:0])


def _combine_discriminability(tables: list, runs, chosen, floors, *, floor_s, thresholds, method, n_boot, seed):
    """The in-memory audit's combining step on the partitions' :func:`_discriminability_part` tables."""
    from audits.checks.discriminability import combine_problem_tables

    summaries = {s.run: s for s in runs}
    per_run = {}
    for run in chosen:
        key = (run.environment, run.campaign)
        parts = [t[key] for t in tables if key in t]
        per_run[run] = {name: _concat([p[name] for p in parts]) if isinstance(parts[0][name], pd.DataFrame)
                        else [p[name] for p in parts] for name in parts[0]}
    # per-language floors exactly when the corpus has a language column (the in-memory audit's rule); the floor
    # table is built from the partitions' own columns, so it has one then
    return combine_problem_tables(per_run, summaries, floors, floor_s=floor_s, t=thresholds, method=method,
                                  n_boot=n_boot, seed=seed, has_language="language" in floors.columns)
