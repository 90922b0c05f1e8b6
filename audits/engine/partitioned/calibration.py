"""The calibration audit of a partitioned dataset on Dask (see :mod:`audits.engine.partitioned`).

A calibration pairs two runs at (problem, test, solution) cells. Every figure after the pairing is a
function of the two sides' cell medians (:func:`stats.ranking.solution_cells`), the source's reference
pool and the target's candidate cells, all per problem: the workers compute them partition by partition
with the in-memory functions (:func:`stats.calibration.side_cells`, :func:`stats.calibration.ptau_sides`),
the client concatenates them in problem order, pairs them (:func:`stats.calibration.pair_cells`) and runs
the in-memory audit's own combining step (:func:`audits.checks.calibration.combine_pairing`: fits,
leave-one-problem-out, bootstraps over problems, rank agreement, p_tau sensitivity, drift, findings).

Memory: a worker holds one partition; the client one row per cell of the two runs (the pairs the
leave-one-problem-out needs anyway), never an execution.

The campaign-drift table of an environment with three or more campaigns pairs every campaign with the
anchor: the workers compute those campaigns' cells too (:func:`drift_campaigns`), and the client pairs them as
:func:`stats.calibration.campaign_drift` does in memory (:func:`stats.calibration.drift_from_pairings`).
Not on this path (yet): calibrations named by column values instead of two runs (a message).
"""

from __future__ import annotations

import contextlib
import os


from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.errors import UserError
from audits.engine.partitioned._common import _concat, _summary_partial, dask_client, partition_runs
from audits.engine.partitioned.reliability import _in_problem_order

__all__ = ["run_partitioned_calibration"]


def _calibration_partial(path: str, index: int, source: tuple, target: tuple, key: str,
                         drift_campaigns: tuple = ()) -> dict:
    """One partition's cells of both runs, the source pool and the target's candidate cells."""
    return _calibration_part(open_dataset(path).read_partition(index), source, target, key, drift_campaigns)


def _calibration_part(part, source: tuple, target: tuple, key: str, drift_campaigns: tuple = ()) -> dict:
    """``drift_campaigns``: the environment's other campaigns when it has three or more (the drift table pairs
    each with the source campaign, the anchor): their cells and the problems of the environment, per partition."""
    from audits.corpus.runs import Run
    from stats.calibration import ptau_sides, side_cells

    src_mask, tgt_mask = Run(*source).mask(part), Run(*target).mask(part)
    frame = part.loc[src_mask | tgt_mask]  # the rows calibration_pair gives the in-memory audit, here
    names = {"campaign": (source[1], target[1]), "environment": (source[0], target[0])}[key]
    src, tgt, within, n_excluded = side_cells(frame, source=names[0], target=names[1], key=key)
    out = {"source_cells": src, "target_cells": tgt, "within": within, "n_role_excluded": n_excluded,
           "pool": None, "candidates": None, "has_candidates": False, "campaigns": set()}
    if src_mask.any() or tgt_mask.any():
        out["pool"], out["candidates"] = ptau_sides(part.loc[src_mask], part.loc[tgt_mask])
    if "role" in part.columns:
        out["has_candidates"] = bool((tgt_mask & (part["role"] == "candidate").to_numpy()).any())
    if key == "campaign":  # the drift rows: every row of the environment
        env = part.loc[(part["environment"] == source[0]).to_numpy()]
        out["campaigns"] = set(env["campaign"].astype(str).unique())
        out["drift"] = {camp: side_cells(env, source=source[1], target=camp, key="campaign")
                        for camp in drift_campaigns}
        out["drift_problems"] = set(env["problem"].astype(str).unique())
    return out


def drift_campaigns(runs, src, tgt, key: str) -> tuple:
    """The campaigns of the drift table the Dask parts compute cells for: the source environment's other
    campaigns than the anchor (the source's), when it has three or more; () otherwise (two campaigns: the
    table is the pair's own fit)."""
    if key != "campaign":
        return ()
    own = sorted(s.campaign for s in runs.of_environment(src.environment))
    return tuple(c for c in own if c != src.campaign) if len(own) > 2 else ()


def run_partitioned_calibration(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    source,
    target,
    scheduler: str | None = None,
    client=None,
    families=None,
    robust: bool | str = False,
    calibration_family: str | None = None,
    variance_ratio: float = 1.0,
    taus=(10.0, 30.0),
    n_boot: int = 1000,
    n_boot_rank: int = 200,
    level: float = 0.95,
    seed: int | None = 0,
    thresholds=None,
    n_workers: int = 2,
):
    """:func:`audits.checks.calibration.run_calibration_audit` of two runs of a partitioned dataset, on Dask.

    ``source``, ``target``: two runs (:class:`audits.corpus.runs.Run` or ``(environment, campaign)``).
    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``.
    """
    from audits.checks.calibration import CalibrationThresholds, _check_options
    from audits.corpus.runs import Run
    from stats.calibration import FAMILIES

    if not all(isinstance(side, (Run, tuple, list)) for side in (source, target)):
        raise UserError("a calibration on Dask names its two runs (environment and campaign each)")
    limits = CalibrationThresholds.coerce(thresholds)
    families, robust, n_boot, n_boot_rank = _check_options(FAMILIES if families is None else families,
                                                           calibration_family, robust, n_boot, n_boot_rank)
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        path = str(ds.path)
        runs = partition_runs(cl.gather([cl.submit(_summary_partial, path, i, pure=False)
                                         for i in range(ds.n_partitions)]))
        src, tgt, key = _calibration_plan(runs, source, target)
        parts = cl.gather([cl.submit(_calibration_partial, path, i, (src.environment, src.campaign),
                                     (tgt.environment, tgt.campaign), key, drift_campaigns(runs, src, tgt, key),
                                     pure=False)
                           for i in range(ds.n_partitions)])
    return _combine_calibration(parts, src, tgt, key, families=families, robust=robust,
                                calibration_family=calibration_family, variance_ratio=variance_ratio, taus=taus,
                                n_boot=n_boot, n_boot_rank=n_boot_rank, level=level, seed=seed, limits=limits)


def _calibration_plan(runs, source, target):
    """``(source run summary, target run summary, key)`` of a pair of runs named in the run table."""
    from audits.corpus.runs import RunError

    src, tgt = runs.get(source), runs.get(target)
    if src.run == tgt.run:
        raise RunError(f"source and target are the same run {src.run}; name two different runs")
    return src, tgt, "campaign" if src.environment == tgt.environment else "environment"


def _combine_calibration(parts: list, src, tgt, key: str, *, families, robust, calibration_family,
                         variance_ratio, taus, n_boot, n_boot_rank, level, seed, limits):
    """The pairing of the partitions' :func:`_calibration_part` cells, then the in-memory combining step
    (``parts`` is emptied once its cells are joined)."""
    from audits.checks.calibration import CalibrationPair, combine_pairing
    from stats.calibration import pair_cells

    names = (src.campaign, tgt.campaign) if key == "campaign" else (src.environment, tgt.environment)
    drift_names = drift_pairings = None
    if key == "campaign":
        campaigns = sorted(set().union(*(p["campaigns"] for p in parts)))
        drift_names = (campaigns, [src.environment])
        if len(campaigns) > 2:
            drift_pairings = _drift_pairings(parts, src, [c for c in campaigns if c != src.campaign])
    pool = _in_problem_order(_concat([p["pool"] for p in parts]))
    if "pool_language" in pool.columns:  # a problem of one pool has "" (partitions without split problems: NaN)
        pool["pool_language"] = pool["pool_language"].fillna("")
    sides = (pool, _in_problem_order(_concat([p["candidates"] for p in parts])))
    has_candidates = any(p["has_candidates"] for p in parts)
    n_role_excluded = int(sum(p["n_role_excluded"] for p in parts))
    src_cells = _in_problem_order(_concat([p.pop("source_cells") for p in parts]))
    tgt_cells = _in_problem_order(_concat([p.pop("target_cells") for p in parts]))
    parts.clear()  # each partition's tables are in the concatenations now: not held twice through the combine
    pairing = pair_cells(src_cells, tgt_cells, source=names[0], target=names[1], key=key,
                         n_role_excluded=n_role_excluded)
    del src_cells, tgt_cells
    pair = CalibrationPair(None, names[0], names[1], key, (src,), (tgt,), None,
                           src.campaign if key == "campaign" else None)
    return combine_pairing(pair, pairing, corpus=None, drift_names=drift_names,
                           has_candidates=has_candidates, families=families,
                           robust=robust, calibration_family=calibration_family, variance_ratio=variance_ratio,
                           taus=taus, n_boot=n_boot, n_boot_rank=n_boot_rank, level=level, seed=seed,
                           limits=limits, ptau_sides=sides, drift_pairings=drift_pairings)


def _drift_pairings(parts: list, src, campaigns: list) -> dict:
    """:func:`stats.calibration.drift_from_pairings`'s ``sides`` of the source environment: each campaign's
    cells and the anchor's, concatenated in problem order and paired as :func:`stats.calibration.pair_medians`
    pairs them in memory."""
    from stats.calibration import pair_cells

    pairings = {}
    for camp in campaigns:
        sides = [p["drift"][camp] for p in parts]
        pairings[camp] = pair_cells(_in_problem_order(_concat([s[0] for s in sides])),
                                    _in_problem_order(_concat([s[1] for s in sides])), source=src.campaign,
                                    target=camp, key="campaign", n_role_excluded=int(sum(s[3] for s in sides)))
    problems = sorted(set().union(*(p["drift_problems"] for p in parts)))
    return {src.environment: (problems, pairings)}
