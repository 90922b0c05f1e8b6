"""The replay driver of benchmarks/bench_adaptive.py: a cell's k-th request gets its k-th repeat."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.bench_adaptive import replay_rule


def test_replay_takes_each_cells_first_repeats_and_spends_only_on_the_tie():
    rng = np.random.default_rng(3)
    mu = {f"s{i}": float(i) for i in range(10)} | {"s10": 3.0}  # s10 sits on s3; the rest are far apart
    rows = [{"problem": "p", "test": "t", "solution": s, "repeat": r, "status": "ok", "correct": True,
             "role": "reference", "duration_s": float(np.exp(m + rng.normal(0, 0.05)))}
            for s, m in mu.items() for r in range(6)]
    pool = pd.DataFrame(rows).sample(frac=1, random_state=1).reset_index(drop=True)  # row order is not repeat order
    pool["_k"] = pool["repeat"]
    taken = replay_rule(pool, start=2, max_repeats=6, confidence=0.95)
    got = taken.groupby("solution")["repeat"].apply(sorted)
    for s, reps in got.items():
        assert reps == list(range(len(reps))), s  # a prefix of the cell's repeats, no gap, no duplicate
    n = got.map(len)
    assert n["s10"] > 2 and n["s3"] > 2  # the tie is re-executed
    assert n[["s0", "s1", "s7", "s8", "s9"]].eq(2).all()  # clear cells keep the first round
