"""Corpora for the coarse-clock tests: six problems of three tests and six reference solutions, five repeats each,
lognormal noise around a mean the test chooses, and the same durations read on a clock of a given tick."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd


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
