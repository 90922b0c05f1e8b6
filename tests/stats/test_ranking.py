"""Percentile engine against scipy.stats.percentileofscore and hand-worked examples."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import percentileofscore

from audits.corpus.io import normalize
from stats.ranking import percentile_table, problem_scores, reference_pools, solution_cells, test_percentiles


def _random_runs(rng, n_problems=7, n_tests=5, n_solutions=9, n_repeats=3, grid=0.01):
    """Durations on a coarse grid so that ties are frequent."""
    rows = []
    for p in range(n_problems):
        for t in range(n_tests):
            for s in range(n_solutions):
                for r in range(n_repeats):
                    rows.append((f"p{p}", f"t{t}", f"s{s}", r, grid * rng.integers(1, 12)))
    frame = pd.DataFrame(rows, columns=["problem", "test", "solution", "repeat", "duration_s"])
    frame["status"] = "ok"
    return normalize(frame)


def test_percentiles_equal_scipy_mean_kind_with_many_ties():
    rng = np.random.default_rng(0)
    runs = _random_runs(rng)
    pools = reference_pools(runs)
    queries = runs.sample(200, random_state=1).reset_index(drop=True)
    ours = test_percentiles(queries, pools, leave_self_out=False)
    for i, row in queries.iterrows():
        pool = pools.loc[(pools.problem == row.problem) & (pools.test == row.test), "duration_s"].to_numpy()
        assert ours[i] == pytest.approx(percentileofscore(pool, row.duration_s, kind="mean"), abs=1e-9)


def test_leave_self_out_matches_scipy_on_the_pool_without_self():
    rng = np.random.default_rng(1)
    runs = _random_runs(rng)
    pools = reference_pools(runs)
    queries = runs.sample(150, random_state=2).reset_index(drop=True)
    ours = test_percentiles(queries, pools, leave_self_out=True)
    for i, row in queries.iterrows():
        in_test = (pools.problem == row.problem) & (pools.test == row.test)
        pool = pools.loc[in_test & (pools.solution != row.solution), "duration_s"].to_numpy()
        assert ours[i] == pytest.approx(percentileofscore(pool, row.duration_s, kind="mean"), abs=1e-9)


def test_hand_worked_example_and_failures_count_100():
    pools = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "c", "d"],
                          "duration_s": [1.0, 2.0, 2.0, 4.0]})
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["x", "y", "z", "w", "v"],
                         "duration_s": [0.5, 2.0, 5.0, 2.0, np.nan],
                         "status": ["ok", "ok", "ok", "timeout", "runtime_error"]})
    # x faster than all: 0; y: (1 + 0.5*2)/4 = 50; z: slower than all: 100; failures: 100
    assert test_percentiles(runs, pools).tolist() == [0.0, 50.0, 100.0, 100.0, 100.0]


def test_single_reference_problem():
    pools = pd.DataFrame({"problem": "p", "test": "t", "solution": ["only"], "duration_s": [1.0]})
    runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["only", "cand", "cand2"],
                         "duration_s": [1.0, 1.0, 3.0], "status": "ok"})
    pct = test_percentiles(runs, pools)
    assert np.isnan(pct[0])  # its own pool is empty once it is left out: undefined, not a number
    assert pct[1:].tolist() == [50.0, 100.0]


def test_test_without_pool_is_nan_and_other_problems_unaffected():
    pools = pd.DataFrame({"problem": ["p"], "test": ["t"], "solution": ["a"], "duration_s": [1.0]})
    runs = pd.DataFrame({"problem": ["p", "q"], "test": ["t", "t"], "solution": ["x", "x"],
                         "duration_s": [2.0, 2.0], "status": "ok"})
    pct = test_percentiles(runs, pools)
    assert pct[0] == 100.0 and np.isnan(pct[1])


def test_pool_uses_median_of_ok_repeats_of_correct_references_only():
    frame = pd.DataFrame({
        "problem": "p", "test": "t",
        "solution": ["a", "a", "a", "b", "c", "d"],
        "repeat": [0, 1, 2, 0, 0, 0],
        "duration_s": [1.0, 9.0, 3.0, 2.0, 0.1, 0.2],
        "status": ["ok", "ok", "timeout", "ok", "ok", "ok"],
        "correct": [True, True, True, True, False, True],
        "role": ["reference"] * 5 + ["candidate"],
    })
    pools = reference_pools(normalize(frame))
    got = dict(zip(pools.solution.astype(str), pools.duration_s))
    assert got == {"a": 5.0, "b": 2.0}  # median of ok repeats {1, 9}; c incorrect; d a candidate


def test_pool_rejects_mixed_campaigns():
    frame = normalize(pd.DataFrame({"problem": "p", "test": "t", "solution": "a", "duration_s": [1.0, 2.0],
                                    "status": "ok", "campaign": ["c0", "c1"]}))
    with pytest.raises(ValueError, match="several campaign values"):
        reference_pools(frame)


def test_solution_cells_status_by_majority():
    frame = normalize(pd.DataFrame({"problem": "p", "test": "t", "solution": ["a"] * 3 + ["b"] * 3,
                                    "repeat": [0, 1, 2] * 2, "duration_s": [1.0, 2.0, 10.0, 1.0, 10.0, 10.0],
                                    "status": ["ok", "ok", "timeout", "ok", "timeout", "timeout"]}))
    cells = solution_cells(frame).set_index("solution")
    assert cells.loc["a", "status"] == "ok" and cells.loc["a", "duration_s"] == 1.5
    assert cells.loc["b", "status"] == "timeout" and cells.loc["b", "duration_s"] == 1.0


def test_q_c_g_against_a_loop_over_problems():
    rng = np.random.default_rng(3)
    runs = _random_runs(rng, n_problems=5, n_tests=4, n_solutions=6, n_repeats=2)
    runs["test_kind"] = pd.Categorical(np.where(runs["test"].astype(str) == "t0", "correctness", "optimization"),
                                       categories=["correctness", "optimization"])
    flip = rng.random(len(runs)) < 0.05
    runs.loc[flip, "status"] = "wrong_answer"
    table = percentile_table(runs)
    scores = problem_scores(table, tau=40).set_index(["problem", "solution"])
    for (p, s), group in table.groupby(["problem", "solution"], observed=True):
        opt = group[group.test_kind == "optimization"]
        q = opt.percentile.mean() / 100
        c = (group.status == "ok").all()
        g = opt.percentile.mean() <= 40 + 1e-9 and (opt.status == "ok").all()
        row = scores.loc[(p, s)]
        assert row.q == pytest.approx(q) and row.c == c and row.g == g


def test_per_repeat_ranks_each_repeat_against_the_fixed_pool():
    frame = normalize(pd.DataFrame({
        "problem": "p", "test": "t", "solution": ["a", "a", "b", "b", "c", "c"], "repeat": [0, 1] * 3,
        "duration_s": [1.0, 3.0, 2.0, 2.0, 4.0, 4.0], "status": "ok"}))
    table = percentile_table(frame, per_repeat=True)
    a = table[table.solution == "a"].sort_values("repeat").percentile.tolist()
    # pool (medians): a=2, b=2, c=4; a left out -> {2, 4}: repeat 0 (1.0) -> 0, repeat 1 (3.0) -> 50
    assert a == [0.0, 50.0]
    scores = problem_scores(table)
    assert set(scores.columns) >= {"repeat", "q"} and len(scores) == 6


def test_tau_is_validated():
    table = pd.DataFrame({"problem": "p", "solution": "s", "test": "t", "status": "ok", "percentile": [1.0]})
    with pytest.raises(ValueError, match="tau"):
        problem_scores(table, tau=130)
