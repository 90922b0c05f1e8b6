"""The reliability audit of a partitioned dataset on Dask (see :mod:`audits.engine.partitioned`).

Every figure of :func:`audits.checks.reliability.run_reliability_audit` is a function of per-problem tables
(:func:`audits.checks.reliability.per_problem_tables`): the repeat CV of every reference cell, the per-repeat
scores, the ICCs of every optimization test, the per-problem sufficient statistics of the variance
components (:func:`stats.reliability.variance_partials`; the components are sums of within-problem
terms and of per-problem means, so they decompose exactly) and the histogram of processes per cell
(nested repeats). The workers compute them partition by partition (whole problems), the client
concatenates them in problem order and runs the in-memory audit's own combining step
(:func:`audits.checks.reliability.combine_problem_tables`): bootstrap over problems, rank drift, the
significance pairs (enumerated by problem from the concatenated scores in the same order as in memory, so
the seeded sample under ``max_pairs`` is the same), findings.

Memory: a worker holds one partition; the client holds one row per (problem, test, solution) cell, one
per (problem, solution, repeat) score and one per test or problem, never an execution.
"""

from __future__ import annotations

import contextlib
import math
import os

import numpy as np
import pandas as pd

from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.engine.partitioned._common import _concat, _summary_partial, dask_client, partition_runs

__all__ = ["run_partitioned_reliability"]

#: The tables of :func:`audits.checks.reliability.per_problem_tables` that are concatenated across partitions.
_TABLES = ("cells", "scores", "test_icc", "variance")


def _run_rows(part: pd.DataFrame, env: str, camp: str) -> pd.DataFrame | None:
    """The non-floor rows of one run in one partition (None when it has none)."""
    from audits.corpus.runs import Run
    from stats._groups import label_mask

    mask = Run(env, camp).mask(part)
    if "role" in part.columns:
        mask &= ~label_mask(part["role"], "floor")
    return part.loc[mask] if mask.any() else None


def _reliability_partial(path: str, index: int, runs: list) -> dict:
    """:func:`audits.checks.reliability.per_problem_tables` of every run's rows in partition ``index``."""
    return _reliability_part(open_dataset(path).read_partition(index), runs)


def _reliability_part(part: pd.DataFrame, runs: list) -> dict:
    """:func:`audits.checks.reliability.per_problem_tables` and the contention partials of every run in one partition."""
    from audits.checks.reliability import per_problem_tables

    out = {}
    for env, camp in runs:
        rows = _run_rows(part, env, camp)
        if rows is not None:
            out[(env, camp)] = {**per_problem_tables(rows), "contention": _contention_partial(rows)}
    return out


def _in_problem_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by problem (stable): the order of the in-memory tables, whatever the partitions' order."""
    from stats._groups import group_codes

    if not len(frame):
        return frame
    codes = group_codes(frame, ["problem"])[0]
    if (codes[1:] >= codes[:-1]).all():  # the partitions came in problem order: no second copy of the table
        return frame.reset_index(drop=True)
    return frame.iloc[np.argsort(codes, kind="stable")].reset_index(drop=True)


def _combined_tables(parts: list[dict]) -> dict:
    """One run's tables of every partition, concatenated in problem order; each partition's table is taken out of
    ``parts`` as it is joined, so that the client holds one copy of it, not two."""
    tables = {name: _in_problem_order(_concat([p.pop(name) for p in parts])) for name in _TABLES}
    tables["process_tally"] = [p["process_tally"] for p in parts]
    nested = [p["process_cells"] for p in parts if p.get("process_cells") is not None]
    tables["process_cells"] = _in_problem_order(_concat(nested)) if nested else None
    return tables


def run_partitioned_reliability(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    environment: str | None = None,
    campaign: str | None = None,
    thresholds=None,
    n_boot: int = 1000,
    seed: int = 0,
    target_reliability: float = 0.9,
    target_precision: float = 0.05,
    max_pairs: int = 200_000,
    n_workers: int = 2,
    selection_limit: int = 1 << 20,
):
    """:func:`audits.checks.reliability.run_reliability_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``.
    ``client``: an existing :class:`distributed.Client`; else ``scheduler`` or a loopback LocalCluster.
    """
    from audits.checks.reliability import ReliabilityThresholds, _check_targets

    thresholds = ReliabilityThresholds.coerce(thresholds)
    _check_targets(target_reliability, target_precision)
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        path = str(ds.path)
        partials = cl.gather([cl.submit(_summary_partial, path, i, pure=False) for i in range(ds.n_partitions)])
        runs = partition_runs(partials)
        chosen = runs.select(environment=environment, campaign=campaign)
        names = [(r.environment, r.campaign) for r in chosen]
        tables = cl.gather([cl.submit(_reliability_partial, path, i, names, pure=False)
                            for i in range(ds.n_partitions)])
        contention = _contention(cl, path, ds.n_partitions, {key: [t[key]["contention"] for t in tables if key in t]
                                                             for key in names}, thresholds, limit=selection_limit)
    return _combine_reliability(tables, runs, chosen, contention, thresholds=thresholds, n_boot=n_boot, seed=seed,
                                target_reliability=target_reliability, target_precision=target_precision,
                                max_pairs=max_pairs)


def _combine_reliability(tables: list, runs, chosen, contention: dict, *, thresholds, n_boot, seed,
                         target_reliability, target_precision, max_pairs):
    """The in-memory audit's combining step on the partitions' :func:`_reliability_part` tables (taken out of
    ``tables`` run by run as they are joined, so the client never holds a run's tables twice)."""
    from audits.checks.reliability import ReliabilityAudit, _findings, combine_problem_tables

    summaries = {s.run: s for s in runs}
    results, findings = {}, []
    for run in chosen:
        key = (run.environment, run.campaign)
        result = combine_problem_tables(_combined_tables([t.pop(key) for t in tables if key in t]), summaries[run],
                                        n_boot=n_boot, seed=seed, target_reliability=target_reliability,
                                        target_precision=target_precision, max_pairs=max_pairs,
                                        contention=contention[key])
        results[run] = result
        findings.extend(_findings(result, thresholds))
    return ReliabilityAudit(results, tuple(findings), thresholds)


# ----------------------------------------------------------------------------------------------
# contention: exact medians of per-execution values without gathering them
# ----------------------------------------------------------------------------------------------
# The median wall/CPU ratio and load average of a run are order statistics over every execution (10^8 at the
# scale this path is for: 800 MB per value on one client). They are selected exactly by radix refinement on the
# order-preserving integer key of each float64: every partition sends a sparse histogram of the keys' top 16
# bits (in pass 2), the client finds the bin that holds the wanted rank, the partitions send the histogram of
# the next 16 bits inside that bin, and so on until the bin holds at most ``selection_limit`` keys, which are
# then gathered and sorted (or until all 64 bits are known: the value itself). Each refinement re-reads the
# partitions (typically one or two passes at 10^8 executions); the client never holds more than
# ``selection_limit`` values per rank.

_STREAMS = ("ratio", "load")
_SIGN = np.uint64(1 << 63)


def _keys(values: np.ndarray) -> np.ndarray:
    """uint64 keys in the order of the float64 values (sign flipped for positives, all bits for negatives)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def _value(key: int) -> float:
    k = np.array([key], dtype=np.uint64)
    bits = np.where(k & _SIGN, k ^ _SIGN, ~k)
    return float(bits.view(np.float64)[0])


def _streams(rows: pd.DataFrame) -> tuple[dict, int]:
    from audits.checks.clocks import load_values, wall_cpu_values

    ratio, n_multi = wall_cpu_values(rows)
    return {"ratio": _keys(ratio), "load": _keys(load_values(rows))}, n_multi


def _refine(keys: np.ndarray, bits: int, prefix: int, mode: str):
    """Keys whose top ``bits`` bits are ``prefix``: the histogram of their next 16 bits, or the keys sorted."""
    if bits:
        keys = keys[(keys >> np.uint64(64 - bits)) == np.uint64(prefix)]
    if mode == "keys":
        return np.sort(keys)
    return np.unique((keys >> np.uint64(48 - bits)) & np.uint64(0xFFFF), return_counts=True)


def _contention_partial(rows: pd.DataFrame) -> dict:
    """One partition's share of a run's contention figures: counts, the max load, top-level histograms."""
    streams, n_multi = _streams(rows)
    load = streams["load"]
    return {"n_multi": n_multi, "has_cpu": "cpu_s" in rows.columns,
            "max_load": _value(int(load.max())) if len(load) else math.nan,
            "histograms": {name: _refine(keys, 0, 0, "hist") for name, keys in streams.items()}}


def _selection_partial(path: str, index: int, requests: list) -> list:
    """Refinement pass: the answer to every ``(run, stream, bits, prefix, mode)`` request on partition ``index``."""
    part = open_dataset(path).read_partition(index)
    streams, out = {}, []
    for run, stream, bits, prefix, mode in requests:
        if run not in streams:
            rows = _run_rows(part, *run)
            streams[run] = _streams(rows)[0] if rows is not None else {name: np.zeros(0, np.uint64)
                                                                        for name in _STREAMS}
        out.append(_refine(streams[run][stream], bits, prefix, mode))
    return out


def _summed(histograms: list) -> tuple[np.ndarray, np.ndarray]:
    bins = np.concatenate([b for b, _ in histograms]) if histograms else np.zeros(0, np.uint64)
    counts = np.concatenate([c for _, c in histograms]) if histograms else np.zeros(0, np.int64)
    unique, inverse = np.unique(bins, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def _exact_medians(cl, path: str, n_partitions: int, histograms: dict, *, limit: int) -> dict:
    """``np.median`` of every stream (``{(run, stream): [per-partition top-level histograms]}``), exactly."""
    queries, medians = [], {}
    for name, hists in histograms.items():
        n = int(sum(int(c.sum()) for _, c in hists))
        medians[name] = [] if n else None
        for rank in sorted({(n - 1) // 2, n // 2}) if n else ():
            queries.append({"stream": name, "rank": rank, "bits": 0, "prefix": 0, "hist": hists, "key": None})
    while True:
        pending = []
        for q in queries:
            if q["key"] is not None:
                continue
            if q["hist"] is not None:  # descend into the bin that holds the rank
                bins, counts = _summed(q["hist"])
                cum = np.cumsum(counts)
                i = int(np.searchsorted(cum, q["rank"], side="right"))
                q["rank"] -= int(cum[i - 1]) if i else 0
                q["prefix"], q["bits"], q["count"], q["hist"] = (q["prefix"] << 16) | int(bins[i]), q["bits"] + 16, \
                    int(counts[i]), None
                if q["bits"] == 64:  # every bit known: all keys in the bin are this value
                    q["key"] = q["prefix"]
                    continue
            pending.append((q, "keys" if q["count"] <= limit else "hist"))
        if not pending:
            break
        requests = list(dict.fromkeys((q["stream"][0], q["stream"][1], q["bits"], q["prefix"], mode)
                                      for q, mode in pending))
        answers = cl.gather([cl.submit(_selection_partial, path, i, requests, pure=False)
                             for i in range(n_partitions)])
        for q, mode in pending:
            j = requests.index((q["stream"][0], q["stream"][1], q["bits"], q["prefix"], mode))
            parts = [a[j] for a in answers]
            if mode == "hist":
                q["hist"] = parts
            else:
                q["key"] = int(np.sort(np.concatenate(parts))[q["rank"]])
    for q in queries:
        medians[q["stream"]].append(_value(q["key"]))
    # np.median: the middle value, or the mean of the two middle values
    return {name: math.nan if v is None else float(v[0]) if len(v) == 1 else float(np.mean(np.array(v)))
            for name, v in medians.items()}


def _contention(cl, path: str, n_partitions: int, parts: dict, thresholds, *, limit: int) -> dict:
    """Every chosen run's :class:`audits.checks.clocks.Contention` from its partitions' :func:`_contention_partial`."""
    from audits.checks.clocks import judge_contention

    histograms = {(run, stream): [p["histograms"][stream] for p in partials]
                  for run, partials in parts.items() for stream in _STREAMS}
    medians = _exact_medians(cl, path, n_partitions, histograms, limit=limit)
    out = {}
    for run, partials in parts.items():
        n_single = int(sum(int(p["histograms"]["ratio"][1].sum()) for p in partials))
        loads = [p["max_load"] for p in partials if math.isfinite(p["max_load"])]
        ratio = medians[(run, "ratio")] if n_single else math.nan
        out[run] = judge_contention(ratio, n_single, int(sum(p["n_multi"] for p in partials)),
                                    medians[(run, "load")], max(loads) if loads else math.nan,
                                    has_cpu=any(p["has_cpu"] for p in partials), warn=thresholds.wall_cpu_warn,
                                    fail=thresholds.wall_cpu_fail)
    return out
