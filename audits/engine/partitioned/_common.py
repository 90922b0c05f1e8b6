"""Shared parts of the Dask path (:mod:`audits.engine.partitioned`): the client, pass 1 (floors and run
summaries of every partition) and the concatenation of per-partition tables."""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from stats.coverage import unmeasured_by_run
from audits.corpus.dataset import open_dataset
from audits.corpus.runs import Run, Runs, RunSummary, timestamps
from audits.dask_connection import CONNECT_TIMEOUT_S, connect
from stats._groups import group_codes, label_mask

__all__ = ["LOCAL_CLUSTER_CONFIG", "dask_client", "partition_runs"]

RUN_COLUMNS = ("environment", "campaign")

#: Dask settings of every loopback cluster this project starts (here, and the tests' TLS cluster):
#:
#: * the statistical profiler samples the task thread's stack every 10 ms; on the audits' pandas-heavy
#:   per-problem code it made the workers 2.5-3x slower (measured: the whole audit's two passes at 10^6 took
#:   40.6 s with it, 15.6 s without, under load 3-5);
#: * the event loop's health tick (20 ms by default; it only measures how long the loop was blocked, for a
#:   warning) and the system monitor (500 ms; CPU and memory figures for the dashboard's plots) are what an
#:   idle cluster spends its CPU on: scheduler and two workers used 7.3 % of a core doing nothing, 2.8 % with
#:   these two at 500 ms and 5 s (2026-12-07, 30 s idle each, under load; benchmarks/bench_dask_idle.py).
#:   The memory monitors (what pauses and restarts a worker near its memory limit) keep their defaults.
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False,
                        "distributed.admin.tick.interval": "500ms",
                        "distributed.admin.system-monitor.interval": "5s"}


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, *, n_workers: int = 2, memory_limit: str = "4GB", security=None,
                connect_timeout_s: float = CONNECT_TIMEOUT_S):
    """A :class:`distributed.Client` of ``scheduler`` (reached through :func:`audits.dask_connection.connect`, with
    ``security`` for a ``tls://`` one), or of a new loopback LocalCluster (closed on exit).

    The client process's freed large arrays are given back to the system from here on
    (:func:`return_freed_arrays`): the combines hold one audit's tables after another."""
    return_freed_arrays()

    if scheduler:
        client = connect(scheduler, security=security, timeout_s=connect_timeout_s,
                         advice="start one with 'dask scheduler' (and workers), or leave --scheduler out for a "
                                "local cluster")
        try:
            yield client
        finally:
            client.close()
        return
    # deferred: distributed, the optional Dask engine's library (in memory, the audits never load it)
    from distributed import Client, LocalCluster

    # deferred: dask, the optional Dask engine's library (in memory, the audits never load it)
    import dask

    # set while the cluster lives: its nannies read the config when they spawn, not when they are created
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                               dashboard_address="127.0.0.1:0", memory_limit=memory_limit, silence_logs=40)
        client = Client(cluster)
        try:
            yield client
        finally:
            _close_quietly(client, cluster)


def _quiet_dask_logging() -> int:
    """Turn Dask's own log messages off in this process; returns the level they had."""
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    return level


def _close_quietly(client, cluster) -> None:
    """Close ``client`` and the local ``cluster`` this module started, with Dask's log messages off in every one
    of its processes while they go down.

    A worker whose heartbeat is under way when the scheduler closes logs the broken connection with a traceback
    (distributed's ``Worker.heartbeat``: "Failed to communicate with scheduler during heartbeat"), a race seen
    once in a full parallel CI run. By then every result is in the client, so those messages are noise on the
    command's stderr, which promises no traceback; an error while the audit runs still reaches the user (as the
    task's exception, and in the workers' log at ERROR until this point)."""
    with contextlib.suppress(Exception):  # a worker already gone cannot be quietened, nor needs to be
        client.run(_quiet_dask_logging)
    level = _quiet_dask_logging()  # the nannies and the scheduler live in this process
    try:
        client.close()
        cluster.close()
    finally:
        logging.getLogger("distributed").setLevel(level)


#: glibc's ``mallopt`` parameter of the size from which an allocation is its own memory map (``M_MMAP_THRESHOLD``
#: in malloc.h), and the size it is fixed at: glibc's own starting value.
_M_MMAP_THRESHOLD, _MMAP_FROM_BYTES = -3, 128 * 1024


def return_freed_arrays() -> None:
    """Fix glibc's mmap threshold at 128 KiB in this process, so that a freed array larger than that goes back to
    the system at once.

    By default glibc raises the threshold to the size of each large block freed (up to 32 MiB), after which arrays
    of up to that size come from the heap and stay resident once freed, fragmenting it; on the Dask client, whose
    combines build and drop tables of 10^7 rows one after another, that is part of the peak RSS (measured, the
    whole audit at 10^7 on Dask: client peak 1223 MB by default, 938 MB with the threshold fixed at 128 KiB).
    A no-op where the C library is not glibc (no ``mallopt``)."""
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, _MMAP_FROM_BYTES)
    except (OSError, AttributeError):
        return


# ----------------------------------------------------------------------------------------------
# pass 1: floors and run summaries
# ----------------------------------------------------------------------------------------------

def summary_partial(path: str, index: int) -> dict:
    """Floor rows and run-summary partials of one partition (what :func:`audits.corpus.runs.runs_of` sums)."""
    return summary_of(open_dataset(path).read_partition(index))


def summary_of(part: pd.DataFrame) -> dict:
    floor = label_mask(part["role"], "floor") if "role" in part.columns else np.zeros(len(part), dtype=bool)
    floor_rows = part.loc[floor].reset_index(drop=True)
    rows = part.loc[~floor]
    out: dict = {"floor_rows": floor_rows, "runs": {}}
    if len(rows) == 0:
        return out
    run_code, n_runs = group_codes(rows, list(RUN_COLUMNS))
    cell, n_cells = group_codes(rows, list(RUN_COLUMNS) + ["problem", "test", "solution"])
    cell_run = np.zeros(n_cells, dtype=np.int64)
    cell_run[cell] = run_code
    repeat = rows["repeat"].to_numpy(dtype=np.int64)
    radix = int(repeat.max()) + 1
    per_cell = np.bincount(np.unique(cell * radix + repeat) // radix, minlength=n_cells)
    prob, n_prob = group_codes(rows, ["problem"])
    run_problem = np.unique(run_code * n_prob + prob)
    stamps = None
    if "timestamp" in rows.columns:
        parsed = timestamps(rows["timestamp"])
        stamps = (parsed.notna().to_numpy(), parsed)
    envs = rows["environment"].astype(str).to_numpy()
    camps = rows["campaign"].astype(str).to_numpy()
    first = np.full(n_runs, -1)
    first[run_code[::-1]] = np.arange(len(rows))[::-1]
    nested = _nested_tallies(rows, cell, n_cells, cell_run)
    unmeasured = unmeasured_by_run(rows, run_code, n_runs)  # a partition holds whole problems: lists concatenate
    for k in range(n_runs):
        name = (envs[first[k]], camps[first[k]])
        tally = np.bincount(per_cell[cell_run == k])
        entry = {"rows": int((run_code == k).sum()), "cells": int((cell_run == k).sum()),
                 "problems": int((run_problem // n_prob == k).sum()), "tally": tally, "earliest": None,
                 "has_stamp": 0, "unmeasured": unmeasured[k]}
        if stamps is not None:
            ok, parsed = stamps
            mine = ok & (run_code == k)
            if mine.any():
                values = parsed[mine].dt.tz_localize(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
                entry["earliest"], entry["has_stamp"] = int(values.min()), 1
        if nested is not None:
            entry["process_tally"], entry["value_tally"] = nested(k)
        out["runs"][name] = entry
    return out


def _nested_tallies(rows: pd.DataFrame, cell: np.ndarray, n_cells: int, cell_run: np.ndarray):
    """Nested repeats (a ``run`` column): per run, the histogram of processes per cell and of values per
    (cell, process), as :func:`audits.corpus.runs.runs_of` counts them; a partition holds whole problems, so
    the histograms of partitions add up to the dataset's. None without a ``run`` column."""
    if "run" not in rows.columns or not rows["run"].notna().any():
        return None
    proc = pd.factorize(rows["run"], sort=True)[0].astype(np.int64)
    has = proc >= 0
    n_proc = int(proc.max()) + 1
    cp_code, cp_index = np.unique(cell[has] * n_proc + proc[has], return_inverse=True)
    procs_per_cell = np.bincount(cp_code // n_proc, minlength=n_cells)
    vals_per_cp = np.bincount(cp_index)
    cp_run = cell_run[cp_code // n_proc]
    return lambda k: (np.bincount(procs_per_cell[(cell_run == k) & (procs_per_cell > 0)]),
                      np.bincount(vals_per_cp[cp_run == k]))


def _add_tallies(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    size = max(len(a), len(b))
    return np.pad(a, (0, size - len(a))) + np.pad(b, (0, size - len(b)))


def _tally_mode(tally: np.ndarray | None) -> int | None:
    """The most common value of a summed histogram (ties to the smaller), None when it counts nothing."""
    return None if tally is None or tally.sum() == 0 else int(tally.argmax())


def partition_runs(partials: Sequence[dict]):
    """:class:`audits.corpus.runs.Runs` of the whole dataset from :func:`summary_partial` results (equal to
    :func:`audits.corpus.runs.runs_of` of the loaded dataset: sums, the mode of the summed repeat histogram
    (ties to the smaller), the earliest timestamp; runs in name order, or by timestamp when every run has one)."""
    total: dict = {}
    for partial in partials:
        for name, e in partial["runs"].items():
            t = total.setdefault(name, {"rows": 0, "cells": 0, "problems": 0, "tally": np.zeros(1, np.int64),
                                        "earliest": None, "unmeasured": ()})
            t["unmeasured"] += tuple(e.get("unmeasured", ()))
            t["rows"] += e["rows"]
            t["cells"] += e["cells"]
            t["problems"] += e["problems"]
            t["tally"] = _add_tallies(t["tally"], e["tally"])
            for key in ("process_tally", "value_tally"):
                if key in e:
                    t[key] = e[key] if t.get(key) is None else _add_tallies(t[key], e[key])
            if e["earliest"] is not None:
                t["earliest"] = e["earliest"] if t["earliest"] is None else min(t["earliest"], e["earliest"])
    names = sorted(total)  # the loaded dataset's categories are sorted, and runs_of numbers runs by them
    order_by = "corpus order"
    if names and all(total[n]["earliest"] is not None for n in names):
        order_by = "timestamp"
        names = sorted(names, key=lambda n: (total[n]["earliest"], n[0], n[1]))
    summaries = []
    for i, name in enumerate(names):
        t = total[name]
        stamp = None if t["earliest"] is None else pd.Timestamp(int(t["earliest"]), tz="UTC").isoformat()
        tally = t["tally"]
        summaries.append(RunSummary(run=Run(*name), rows=t["rows"], problems=t["problems"], cells=t["cells"],
                                    repeats=int(tally.argmax()), max_repeats=int(np.flatnonzero(tally)[-1]),
                                    first_timestamp=stamp, position=i,
                                    processes=_tally_mode(t.get("process_tally")),
                                    values_per_process=_tally_mode(t.get("value_tally")),
                                    unmeasured=tuple(sorted(t["unmeasured"]))))
    return Runs(tuple(summaries), order_by)
