"""Corpora for the coarse-clock tests: six problems of three tests and six reference solutions, five repeats each,
lognormal noise around a mean the test chooses, and the same durations read on a clock of a given tick."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from audits.checks.reliability import combine_parts, partition_tables, plan_runs
from audits.protocol.context import AuditContext


def reference_grid(mean: Callable[[int, int], float], *, seed: int = 0, sigma: float = 0.01) -> pd.DataFrame:
    """Rows of 6 problems x 3 tests x 6 solutions x 5 repeats; ``mean(solution, test)`` is the cell's mean."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(6):
        for t in range(3):
            for s in range(6):
                mu = mean(s, t)
                for r in range(5):
                    rows.append(dict(problem=f"p{p}", test=f"t{t}", solution=f"s{s}", repeat=r, role="reference",
                                     test_kind="optimization", correct=True, status="ok",
                                     duration_s=mu * float(np.exp(rng.normal(0, sigma)))))
    return pd.DataFrame(rows)


def on_clock(frame: pd.DataFrame, tick: float) -> pd.DataFrame:
    """The durations as a clock of resolution ``tick`` reads them (at least one tick)."""
    out = frame.copy()
    out["duration_s"] = np.maximum(np.round(out["duration_s"] / tick), 1) * tick
    return out


def reliability_in_partitions(corpus: pd.DataFrame, *, n_parts: int = 3, **options):
    """The reliability audit of ``corpus`` through its partition steps (what the Dask engine runs on each
    partition, here in memory) over ``n_parts`` groups of whole problems, combined on the whole corpus's plan."""
    whole = AuditContext(corpus)
    plan = plan_runs(whole)
    problem = corpus["problem"].astype(str)
    groups = np.array_split(np.array(sorted(problem.unique())), n_parts)
    parts = [partition_tables(AuditContext(corpus.loc[problem.isin(g).to_numpy()].reset_index(drop=True)), plan)
             for g in groups]
    return combine_parts(parts, plan, whole, **options)
