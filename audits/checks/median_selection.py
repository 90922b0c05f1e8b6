"""The reliability audit's contention figures from partitions: exact medians of per-execution values without
gathering them (the median wall/CPU ratio and load average of a run are order statistics over every execution:
10^8 at the scale of the Dask engine, 800 MB per value on one client).

They are selected exactly by radix refinement on the order-preserving integer key of each float64: every partition
sends a sparse histogram of the keys' top 16 bits (in its part, :func:`contention_part`), the combine finds the bin
that holds the wanted rank, the partitions send the histogram of the next 16 bits inside that bin (an extra read,
the plan context's ``map``: :mod:`audits.protocol.partition`), and so on until the bin holds at most ``limit``
keys, which are then gathered and sorted (or until all 64 bits are known: the value itself). Typically one or two
refinements at 10^8 executions; the combine never holds more than ``limit`` values per rank. In memory the corpus
is the one partition: the same steps select the same values :func:`numpy.median` gives
(:func:`audits.checks.clocks.contention`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from audits.checks.clocks import judge_contention, load_values, wall_cpu_values
from audits.protocol.partition import run_rows

__all__ = ["contention_part", "run_contention"]

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
    ratio, n_multi = wall_cpu_values(rows)
    return {"ratio": _keys(ratio), "load": _keys(load_values(rows))}, n_multi


def _refine(keys: np.ndarray, bits: int, prefix: int, mode: str):
    """Keys whose top ``bits`` bits are ``prefix``: the histogram of their next 16 bits, or the keys sorted."""
    if bits:
        keys = keys[(keys >> np.uint64(64 - bits)) == np.uint64(prefix)]
    if mode == "keys":
        return np.sort(keys)
    return np.unique((keys >> np.uint64(48 - bits)) & np.uint64(0xFFFF), return_counts=True)


def contention_part(rows: pd.DataFrame) -> dict:
    """One partition's share of a run's contention figures (its non-floor rows): counts, the max load, top-level
    histograms of both streams."""
    streams, n_multi = _streams(rows)
    load = streams["load"]
    return {"n_multi": n_multi, "has_cpu": "cpu_s" in rows.columns,
            "max_load": _value(int(load.max())) if len(load) else math.nan,
            "histograms": {name: _refine(keys, 0, 0, "hist") for name, keys in streams.items()}}


def _selection_partial(part, summaries: dict, requests: list) -> list:
    """Refinement pass: the answer to every ``(run, stream, bits, prefix, mode)`` request on one partition (an
    AuditContext; ``summaries``: run -> its RunSummary)."""
    streams, out = {}, []
    for run, stream, bits, prefix, mode in requests:
        if run not in streams:
            run_ctx = run_rows(part, summaries[run])
            streams[run] = _streams(run_ctx.rows)[0] if run_ctx is not None else {name: np.zeros(0, np.uint64)
                                                                                   for name in _STREAMS}
        out.append(_refine(streams[run][stream], bits, prefix, mode))
    return out


def _summed(histograms: list) -> tuple[np.ndarray, np.ndarray]:
    bins = np.concatenate([b for b, _ in histograms]) if histograms else np.zeros(0, np.uint64)
    counts = np.concatenate([c for _, c in histograms]) if histograms else np.zeros(0, np.int64)
    unique, inverse = np.unique(bins, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def _exact_medians(ctx, summaries: dict, histograms: dict, *, limit: int) -> dict:
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
        answers = ctx.map(_selection_partial, summaries, requests)
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


def run_contention(ctx, summaries: dict, parts: dict, thresholds, *, limit: int) -> dict:
    """Every run's :class:`audits.checks.clocks.Contention` (``parts``: run -> its partitions'
    :func:`contention_part`; ``summaries``: run -> RunSummary), the medians selected exactly over ``ctx.map``."""
    histograms = {(run, stream): [p["histograms"][stream] for p in partials]
                  for run, partials in parts.items() for stream in _STREAMS}
    medians = _exact_medians(ctx, summaries, histograms, limit=limit)
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
