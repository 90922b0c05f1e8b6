"""Benchmark what a loopback Dask cluster of this project costs while it waits (issue 26 item 6).

A cluster that :func:`audits.engine.partitioned.dask_client` starts (a scheduler in this process, two spawned
worker processes, their nannies) is measured idle: the CPU seconds of this process and all its descendants per
second of wall time, over ``--seconds``, once with the project's settings
(``audits.engine.partitioned._common.LOCAL_CLUSTER_CONFIG``) and once with Dask's own defaults for everything
but the statistical profiler (off in both: what the project ran before the settings). The two runs alternate
``--rounds`` times, so that a change in the machine's load hits both alike. The figure to read is the ratio;
the test session keeps such clusters open for its whole length (one per pytest worker).

Usage::

    .venv/bin/python -m benchmarks.bench_dask_idle               # ~2 minutes
    .venv/bin/python -m benchmarks.bench_dask_idle --seconds 10 --rounds 1

Writes ``benchmarks/results/bench_dask_idle-<UTC time>.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import psutil

from audits.engine.partitioned import _common
from benchmarks.results_file import write_results

#: what the project ran before LOCAL_CLUSTER_CONFIG: Dask's defaults, the profiler off
BEFORE = {"distributed.worker.profile.enabled": False}


def _tree_cpu_s(process: psutil.Process) -> float:
    """User + system CPU seconds of ``process`` and its living descendants."""
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def idle_cpu_share(config: dict, *, seconds: float, settle_s: float = 3.0) -> float:
    """CPU seconds per wall second of a fresh two-worker local cluster doing nothing, under ``config``."""
    saved = _common.LOCAL_CLUSTER_CONFIG
    _common.LOCAL_CLUSTER_CONFIG = config
    try:
        with _common.dask_client(n_workers=2):
            time.sleep(settle_s)  # the workers' start-up is not idling
            me = psutil.Process()
            cpu0, t0 = _tree_cpu_s(me), time.monotonic()
            time.sleep(seconds)
            return (_tree_cpu_s(me) - cpu0) / (time.monotonic() - t0)
    finally:
        _common.LOCAL_CLUSTER_CONFIG = saved


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="idle seconds measured per cluster (20)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the two settings (2)")
    parser.add_argument("--out-dir", help="where the JSON goes (default benchmarks/results)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    shares: dict[str, list[float]] = {"dask defaults (profiler off)": [], "LOCAL_CLUSTER_CONFIG": []}
    for _ in range(args.rounds):
        shares["dask defaults (profiler off)"].append(idle_cpu_share(BEFORE, seconds=args.seconds))
        shares["LOCAL_CLUSTER_CONFIG"].append(idle_cpu_share(_common.LOCAL_CLUSTER_CONFIG, seconds=args.seconds))
    load_after = os.getloadavg()
    medians = {name: statistics.median(values) for name, values in shares.items()}
    before, now = medians.values()
    print(f"idle local cluster (2 workers), CPU share of one core, median of {args.rounds} x {args.seconds:g} s; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for name, value in medians.items():
        print(f"  {name:<30} {100 * value:5.1f} %   ({', '.join(f'{100 * v:.1f}' for v in shares[name])})")
    print(f"  ratio (project / before)       {now / before:5.2f}")
    write_results("bench_dask_idle", {"seconds": args.seconds, "rounds": args.rounds, "shares": shares,
                                       "medians": medians, "ratio": now / before, "config": _common.LOCAL_CLUSTER_CONFIG,
                                       "load_before": load_before, "load_after": load_after}, out_dir=args.out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
