"""Benchmark: per-test percentiles, vectorised engine vs a straightforward baseline.

The baseline is what one would write first: pandas groupby over (problem, test),
and for every execution ``scipy.stats.percentileofscore(pool, d, kind="mean")``
against its test's pool without itself. Both run on the same subsample in the
same process (the baseline is too slow for 10^7 rows), and the engine also on the
full corpus. Results are checked to agree before any time is reported.

Run: ``.venv/bin/python -m benchmarks.bench_percentiles [--rows 1e7] [--baseline-rows 2e4]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.stats import percentileofscore

from audits.corpus.synthetic import synthesize
from stats.ranking import percentile_table, reference_pools


def corpus_of(rows: int, seed: int = 0) -> pd.DataFrame:
    """A 20-test, 100-solution, 5-repeat synthetic corpus of about ``rows`` executions."""
    n_problems = max(1, int(round(rows / (20 * 100 * 5))))
    return synthesize(n_problems=n_problems, n_tests=20, n_correctness_tests=0, n_solutions=100, n_incorrect=0,
                      n_candidates=0, n_repeats=5, floor_rows=0, seed=seed).corpus


def baseline_percentiles(runs: pd.DataFrame, pools: pd.DataFrame) -> np.ndarray:
    """Straightforward: loop over (problem, test) groups and rows, scipy per row."""
    out = np.empty(len(runs))
    pool_groups = {key: g for key, g in pools.groupby(["problem", "test"], observed=True)}
    for key, group in runs.groupby(["problem", "test"], observed=True):
        pool = pool_groups[key]
        for index, row in zip(group.index, group.itertuples()):
            others = pool.loc[pool.solution != row.solution, "duration_s"].to_numpy()
            out[runs.index.get_loc(index)] = percentileofscore(others, row.duration_s, kind="mean")
    return out


def engine_percentiles(runs: pd.DataFrame) -> tuple[np.ndarray, pd.DataFrame]:
    pools = reference_pools(runs)
    table = percentile_table(runs, per_repeat=True, pools=pools)
    return table["percentile"].to_numpy(), pools


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - start, result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7, help="executions for the engine run (default 1e7)")
    parser.add_argument("--baseline-rows", type=float, default=2e4,
                        help="executions for the engine-vs-baseline comparison (default 2e4)")
    args = parser.parse_args(argv)

    small = corpus_of(int(args.baseline_rows)).reset_index(drop=True)
    t_engine_small, (ours, pools) = timed(engine_percentiles, small)
    t_base_small, theirs = timed(baseline_percentiles, small, pools)
    if not np.allclose(ours, theirs, equal_nan=True):
        raise SystemExit("engine and baseline disagree: benchmark aborted")
    big = corpus_of(int(args.rows))
    t_engine_big, _ = timed(engine_percentiles, big)
    result = {
        "subsample_rows": len(small),
        "baseline_s": t_base_small,
        "engine_s_on_subsample": t_engine_small,
        "speedup_on_subsample": t_base_small / t_engine_small,
        "baseline_us_per_row": 1e6 * t_base_small / len(small),
        "engine_rows": len(big),
        "engine_s": t_engine_big,
        "engine_us_per_row": 1e6 * t_engine_big / len(big),
        "per_row_ratio": (t_base_small / len(small)) / (t_engine_big / len(big)),
    }
    print(f"per-test percentiles (engine and baseline agree on {len(small):,} rows)")
    print(f"  baseline (groupby + scipy.percentileofscore loop): {t_base_small:8.2f} s on {len(small):>12,} rows"
          f"  = {result['baseline_us_per_row']:9.2f} us/row")
    print(f"  engine on the same rows:                          {t_engine_small:8.3f} s"
          f"  -> {result['speedup_on_subsample']:.0f}x faster")
    print(f"  engine on the full corpus:                        {t_engine_big:8.2f} s on {len(big):>12,} rows"
          f"  = {result['engine_us_per_row']:9.3f} us/row  -> {result['per_row_ratio']:.0f}x per row")
    return result


if __name__ == "__main__":
    main()
