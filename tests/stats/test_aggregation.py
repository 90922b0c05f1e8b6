"""Tests for stats.aggregation: every aggregator against hand-worked numbers and an
independent brute-force implementation (scipy / plain Python loops), the registry,
reference percentiles, and the stability / dynamic-range comparison on corpora with
planted truth."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from scipy.stats import mstats

import stats.aggregation as agg_mod
from audits.corpus.synthetic import synthesize
from stats.aggregation import (
    AGGREGATORS,
    aggregate,
    aggregation_context,
    compare_aggregators,
    get_aggregator,
    list_aggregators,
    mean_pairwise_abs_diff,
    reference_percentile,
    register_aggregator,
)
from stats.ranking import percentile_table, problem_scores, reference_pools, select_runs

REQUIRED = {
    "mean_pct", "median_pct", "trim10_pct", "trim25_pct", "winsor20_pct", "clip_pct", "worst_pct", "heaviest_pct",
    "heavy_half_pct", "weighted_pct", "total_pct", "geo_ratio", "log_ratio", "robust_z", "loss_rate", "slope",
    "floor_pct",
}


# ---------------------------------------------------------------------------
# A hand-worked example
# ---------------------------------------------------------------------------

def _hand_example():
    """Three references and one candidate x on four optimization tests (+1 correctness test).

    test      a    b    c    d
    r1       1.0  2.0  4.0  8.0
    r2       2.0  4.0  8.0 16.0
    r3       3.0  6.0 12.0 24.0
    x        2.0  1.0 10.0 30.0
    """
    ref = {"r1": [1.0, 2.0, 4.0, 8.0], "r2": [2.0, 4.0, 8.0, 16.0], "r3": [3.0, 6.0, 12.0, 24.0]}
    rows = []
    for sol, durations in list(ref.items()) + [("x", [2.0, 1.0, 10.0, 30.0])]:
        role = "candidate" if sol == "x" else "reference"
        for test, d in zip("abcd", durations):
            rows.append(dict(problem="p", test=test, solution=sol, repeat=0, duration_s=d, status="ok", role=role,
                             correct=True, test_kind="optimization"))
        rows.append(dict(problem="p", test="k", solution=sol, repeat=0, duration_s=0.1, status="ok", role=role,
                         correct=True, test_kind="correctness"))
    runs = pd.DataFrame(rows)
    pools = reference_pools(runs)
    cells = percentile_table(runs, pools=pools)
    return cells, pools


# x: percentiles a 50 (1 below, 1 tie of 3), b 0, c 200/3, d 100; reference medians m = 2, 4, 8, 16.
HAND = {
    "mean_pct": (50 + 0 + 200 / 3 + 100) / 4,
    "median_pct": (50 + 200 / 3) / 2,
    "trim10_pct": (50 + 0 + 200 / 3 + 100) / 4,          # int(0.4) = 0 cut
    "trim25_pct": (50 + 200 / 3) / 2,                    # int(1.0) = 1 cut at each end
    "winsor20_pct": (50 + 0 + 200 / 3 + 100) / 4,        # int(0.8) = 0 replaced
    "clip_pct": (50 + 10 + 200 / 3 + 90) / 4,
    "worst_pct": 100.0,
    "heaviest_pct": 100.0,                               # test d, m = 16
    "heavy_half_pct": (200 / 3 + 100) / 2,               # tests c, d
    "weighted_pct": (2 * 50 + 4 * 0 + 8 * 200 / 3 + 16 * 100) / 30,
    "total_pct": 100 * 2 / 3,                            # 43 vs totals 15, 30, 45
    "geo_ratio": (1.0 * 0.25 * 1.25 * 1.875) ** 0.25,
    "log_ratio": (0 - 2 + math.log2(1.25) + math.log2(1.875)) / 4,
    "mean_ratio": (1.0 + 0.25 + 1.25 + 1.875) / 4,
    # MAD of the pools: 1, 2, 4, 8
    "robust_z": (0 + (1 - 4) / (2 * 1.482602218505602) + (10 - 8) / (4 * 1.482602218505602)
                 + (30 - 16) / (8 * 1.482602218505602)) / 4,
    # x vs r1: wins b only (1/4) -> loss; vs r2: tie a + b (1.5/4) -> loss; vs r3: a, b, c (3/4) -> win
    "loss_rate": 100 * (1 - 1 / 3),
    "slope": st.linregress(np.log([2, 4, 8, 16]), np.log([2.0, 1.0, 10.0, 30.0])).slope,
    "floor_pct": (200 / 3 + 100) / 2,                    # floor 2.5 s: keeps m >= 5 (tests c, d)
}


@pytest.mark.parametrize("name", sorted(HAND))
def test_hand_worked_example(name):
    cells, pools = _hand_example()
    scores = aggregate(cells, pools, name=name, floor_s=2.5)
    x = scores.loc[scores["solution"] == "x"]
    assert len(x) == 1
    assert x["n_tests"].item() == 4  # the correctness test is not used
    assert x["score"].item() == pytest.approx(HAND[name], rel=1e-12, abs=1e-12)


def test_registry_holds_the_required_aggregators():
    assert REQUIRED <= set(AGGREGATORS)
    table = list_aggregators()
    assert list(table.columns) == ["name", "description", "formula", "builtin"]
    assert table["description"].str.len().gt(10).all() and table["formula"].str.len().gt(3).all()
    assert get_aggregator("mean_pct").name == "mean_pct"
    with pytest.raises(ValueError, match="known: mean_pct"):
        get_aggregator("no_such_thing")


def test_default_aggregator_equals_100_q_of_problem_scores():
    synth = synthesize(n_problems=4, n_tests=5, n_solutions=6, n_repeats=2, seed=11)
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0", roles=["reference", "candidate"])
    cells = percentile_table(runs, per_repeat=True)
    pools = reference_pools(runs)
    ours = aggregate(cells, pools).sort_values(["problem", "solution", "repeat"]).reset_index(drop=True)
    q = problem_scores(cells).sort_values(["problem", "solution", "repeat"]).reset_index(drop=True)
    np.testing.assert_allclose(ours["score"], 100 * q["q"], rtol=1e-12)


# ---------------------------------------------------------------------------
# Brute force on a random corpus with ties, failures, repeats and incorrect solutions
# ---------------------------------------------------------------------------

def _random_runs(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in ("p0", "p1"):
        work = np.exp(rng.uniform(0, 3, size=6))
        # p1 has one reference fewer: the padded (problem, reference, test) layout of loss_rate has gaps
        sols = [f"r{i}" for i in range(6 if p == "p0" else 5)] + ["bad", "x0", "x1", "x2"]
        for s in sols:
            role = "candidate" if s.startswith("x") else "reference"
            speed = rng.uniform(0.5, 2.0)
            for r in range(3):
                for t in range(6):
                    d = round(float(speed * work[t] * rng.uniform(0.8, 1.2)), 1)  # rounding makes ties
                    status = "ok"
                    if s == "bad" and t == 2:
                        status = "wrong_answer"
                    if s == "x1" and t == 4 and r == 1:
                        status, d = "timeout", 5.0
                    if s == "x2" and t == 0:
                        status, d = "runtime_error", 0.05
                    rows.append(dict(problem=p, test=f"t{t}", solution=s, repeat=r, duration_s=d, status=status,
                                     role=role, correct=s != "bad", test_kind="optimization", timeout_s=5.0))
                rows.append(dict(problem=p, test="k", solution=s, repeat=r, duration_s=0.01, status="ok", role=role,
                                 correct=s != "bad", test_kind="correctness", timeout_s=5.0))
    rows += [dict(problem="_floor", test="empty", solution="py", repeat=r, duration_s=1.3 + 0.1 * r, status="ok",
                  role="floor", correct=True, test_kind="optimization", timeout_s=5.0) for r in range(3)]
    return pd.DataFrame(rows)


def _brute_force(runs, floor_s):
    """Every aggregator for every (problem, solution, repeat), with loops and scipy."""
    work = runs[runs["role"] != "floor"]
    pool = {}
    for (p, t, s), g in work[(work.role == "reference") & work.correct & (work.status == "ok")].groupby(
            ["problem", "test", "solution"]):
        pool.setdefault((p, t), {})[s] = float(np.median(g["duration_s"]))
    out = {}
    opt = work[work.test_kind == "optimization"]
    for (p, s, r), g in opt.groupby(["problem", "solution", "repeat"]):
        tests = list(g["test"])
        d = g["duration_s"].to_numpy(float)
        ok = (g["status"] == "ok").to_numpy()
        others = [{k: v for k, v in pool[(p, t)].items() if k != s} for t in tests]
        full = [np.array(list(pool[(p, t)].values())) for t in tests]
        m = np.array([np.median(f) for f in full])
        mad = np.array([st.median_abs_deviation(f, scale="normal") for f in full])
        pen = np.where(ok, d, np.maximum.reduce([d, np.full(len(d), 5.0), 2 * np.array([f.max() for f in full])]))
        r_t = np.array([st.percentileofscore(list(o.values()), x, kind="mean") if k else 100.0
                        for o, x, k in zip(others, d, ok)])
        heavy = np.argsort(-m, kind="stable")
        res = {
            "mean_pct": r_t.mean(),
            "median_pct": np.median(r_t),
            "trim10_pct": st.trim_mean(r_t, 0.10),
            "trim25_pct": st.trim_mean(r_t, 0.25),
            "winsor20_pct": float(mstats.winsorize(r_t, limits=(0.2, 0.2)).mean()),
            "clip_pct": np.clip(r_t, 10, 90).mean(),
            "worst_pct": r_t.max(),
            "heaviest_pct": r_t[heavy[0]],
            "heavy_half_pct": r_t[heavy[: math.ceil(len(r_t) / 2)]].mean(),
            "weighted_pct": np.average(r_t, weights=m),
            "geo_ratio": st.gmean(pen / m),
            "log_ratio": np.mean(np.log2(pen / m)),
            "mean_ratio": np.mean(pen / m),
            "robust_z": np.mean((pen - m) / np.maximum(mad, 0.01 * m)),
            "slope": st.linregress(np.log(m), np.log(pen)).slope,
        }
        keep = m >= 2 * floor_s
        res["floor_pct"] = r_t[keep].mean() if keep.any() else r_t.mean()
        refs = set().union(*[set(o) for o in others])
        # in exact decimal arithmetic (every duration here is a decimal): equal totals tie, whatever the order in
        # which floating point would have summed them (33.3 + ... came out as 33.300000000000004 beside 33.3)
        exact = lambda values: sum(Fraction(repr(float(v))) for v in values)  # noqa: E731
        totals = [exact(pool[(p, t)][j] for t in tests) for j in refs if all(j in pool[(p, t)] for t in tests)]
        total = exact(pen)
        res["total_pct"] = 100 * (sum(r < total for r in totals) + 0.5 * sum(r == total for r in totals)) / len(totals)
        beats = []
        for j in sorted(refs):
            w = [1.0 if x < pool[(p, t)][j] else 0.5 if x == pool[(p, t)][j] else 0.0
                 for t, x in zip(tests, pen) if j in pool[(p, t)]]
            share = np.mean(w)
            beats.append(1.0 if share > 0.5 else 0.5 if share == 0.5 else 0.0)
        res["loss_rate"] = 100 * (1 - np.mean(beats))
        out[(p, s, r)] = res
    return out


@pytest.fixture(scope="module")
def random_case():
    runs = _random_runs(seed=3)
    work = runs[runs["role"] != "floor"]
    pools = reference_pools(work)
    cells = percentile_table(runs, per_repeat=True, pools=pools)
    cells["timeout_s"] = 5.0  # percentile_table keeps the key columns only; the penalty reads the limit
    floor_s = float(np.median(runs.loc[runs.role == "floor", "duration_s"]))
    return runs, cells, pools, floor_s, _brute_force(runs, floor_s)


@pytest.mark.parametrize("name", sorted(REQUIRED | {"mean_ratio"}))
def test_every_aggregator_matches_brute_force(random_case, name):
    runs, cells, pools, floor_s, expected = random_case
    # floor_s left to default: it must come from the floor rows
    scores = aggregate(cells, pools, name=name)
    assert len(scores) == len(expected) == (10 + 9) * 3
    got = {(str(p), str(s), int(r)): v for p, s, r, v in
           zip(scores["problem"], scores["solution"], scores["repeat"], scores["score"])}
    for key, res in expected.items():
        assert got[key] == pytest.approx(res[name], rel=1e-9, abs=1e-9), (name, key)


def test_loss_rate_chunking_and_both_code_paths_agree(random_case, monkeypatch):
    _, cells, pools, _, _ = random_case
    whole = aggregate(cells, pools, name="loss_rate")["score"].to_numpy()      # dense (unit x test) path
    monkeypatch.setattr(agg_mod, "_PAIR_CHUNK", 7)  # forces one unit per chunk
    chunked = aggregate(cells, pools, name="loss_rate")["score"].to_numpy()
    np.testing.assert_array_equal(whole, chunked)
    monkeypatch.setattr(agg_mod, "_win_rate_dense", lambda *a, **k: None)    # the general pair path
    general = aggregate(cells, pools, name="loss_rate")["score"].to_numpy()
    np.testing.assert_array_equal(whole, general)


def test_loss_rate_with_several_rows_per_test(random_case):
    """Units over all repeats (by problem, solution): every row is one comparison with each reference."""
    runs, cells, pools, _, _ = random_case
    got = aggregate(cells, pools, name="loss_rate", by=["problem", "solution"]).set_index(["problem", "solution"])
    opt = cells[(cells.test_kind == "optimization") & (cells.role != "floor")]
    assert len(got) == 19
    for (p, s), g in opt.groupby(["problem", "solution"]):
        refs = pools[(pools.problem == p) & (pools.solution != s)]
        beats = []
        for _, pj in refs.groupby("solution"):
            ref_d = dict(zip(pj["test"], pj["duration_s"]))
            w = []
            for t, d, status in zip(g["test"], g["duration_s"], g["status"]):
                mine = d if status == "ok" else max(d, 5.0, 2 * pools[(pools.problem == p) & (pools.test == t)]
                                                    ["duration_s"].max())
                w.append(1.0 if mine < ref_d[t] else 0.5 if mine == ref_d[t] else 0.0)
            beats.append(1.0 if np.mean(w) > 0.5 else 0.5 if np.mean(w) == 0.5 else 0.0)
        assert got.loc[(p, s), "score"] == pytest.approx(100 * (1 - np.mean(beats)))


def test_failure_penalty_without_a_timeout_column(random_case):
    _, cells, pools, _, _ = random_case
    # x2 fails test t0 with a 0.05 s runtime error: without timeout_s its duration counts as 2x the
    # slowest reference on t0, i.e. log2-ratio = log2(2 max / median) on that test
    cells = cells.drop(columns="timeout_s")
    one = cells[(cells.problem == "p0") & (cells.solution == "x2") & (cells.repeat == 0)]
    ours = aggregate(one, pools, name="log_ratio")["score"].item()
    opt = one[one.test_kind == "optimization"]
    expected = []
    for t, d, status in zip(opt["test"], opt["duration_s"], opt["status"]):
        ref = pools[(pools.problem == "p0") & (pools.test == t)]["duration_s"]
        expected.append(math.log2((d if status == "ok" else 2 * ref.max()) / ref.median()))
    assert ours == pytest.approx(np.mean(expected))


def test_bad_input_messages():
    cells, pools = _hand_example()
    with pytest.raises(ValueError, match="must include 'problem'"):
        aggregate(cells, pools, by=["solution"])
    with pytest.raises(ValueError, match="lack column"):
        aggregate(cells.drop(columns="duration_s"), pools)
    with pytest.raises(ValueError, match="pools lack"):
        aggregate(cells, pools.drop(columns="solution"))
    with pytest.raises(ValueError, match="floor_s"):
        aggregate(cells, pools, floor_s=-1.0)


# ---------------------------------------------------------------------------
# Registering a custom aggregator
# ---------------------------------------------------------------------------

def test_register_custom_aggregator(random_case):
    _, cells, pools, _, expected = random_case
    name = "test_p75_pct"
    agg = register_aggregator(name, lambda ctx: ctx.quantile(ctx.percentile, 0.75),
                              description="75th percentile of the per-test percentiles",
                              formula="quantile_0.75(r_t)", overwrite=True)
    try:
        assert AGGREGATORS[name] is agg and not agg.builtin
        assert name in set(list_aggregators()["name"])
        scores = aggregate(cells, pools, name=name)
        # independent: numpy's quantile of the brute-force percentiles of one unit
        row = cells[(cells.problem == "p0") & (cells.solution == "x0") & (cells.repeat == 0)
                    & (cells.test_kind == "optimization")]
        got = scores[(scores.problem == "p0") & (scores.solution == "x0") & (scores.repeat == 0)]["score"].item()
        assert got == pytest.approx(np.quantile(row["percentile"], 0.75))
        with pytest.raises(ValueError, match="already exists"):
            register_aggregator(name, lambda ctx: ctx.mean(ctx.percentile), description="d", formula="f")
        with pytest.raises(ValueError, match="built-in"):
            register_aggregator("mean_pct", lambda ctx: ctx.mean(ctx.percentile), description="d", formula="f",
                                overwrite=True)
        register_aggregator(name, lambda ctx: np.zeros(3), description="d", formula="f", overwrite=True)
        with pytest.raises(ValueError, match="returned shape"):
            aggregate(cells, pools, name=name)
    finally:
        agg_mod._REGISTRY.pop(name, None)
    with pytest.raises(ValueError, match="identifier"):
        register_aggregator("bad name", lambda ctx: None, description="d", formula="f")


# ---------------------------------------------------------------------------
# Reference percentiles
# ---------------------------------------------------------------------------

def test_reference_percentile_matches_percentileofscore():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({
        "problem": np.repeat(["a", "b"], 12),
        "solution": np.tile([f"s{i}" for i in range(12)], 2),
        "score": rng.integers(0, 6, 24).astype(float),   # many ties
        "role": np.tile(["reference"] * 8 + ["candidate"] * 4, 2),
        "correct": True,
    })
    frame.loc[3, "correct"] = False                       # an incorrect reference is not in the pool
    got = reference_percentile(frame)
    for i, row in frame.iterrows():
        pool = frame[(frame.problem == row.problem) & (frame.role == "reference") & frame.correct
                     & (frame.solution != row.solution)]["score"]
        assert got[i] == pytest.approx(st.percentileofscore(pool, row.score, kind="mean"))


def test_reference_percentile_with_a_separate_pool_leaves_the_solution_out():
    scores = pd.DataFrame({"problem": "p", "solution": ["a", "a", "b", "x"], "repeat": [0, 1, 0, 0],
                           "score": [1.0, 5.0, 2.0, 2.5]})
    pool = pd.DataFrame({"problem": "p", "solution": ["a", "b", "c"], "score": [1.5, 2.0, 3.0],
                         "role": "reference", "correct": True})
    got = reference_percentile(scores, pool=pool)
    # a@0 vs {2, 3}: 0; a@1 vs {2, 3}: 100; b vs {1.5, 3}: 50; x vs all three: 2/3
    np.testing.assert_allclose(got, [0.0, 100.0, 50.0, 200 / 3])
    assert np.isnan(reference_percentile(scores.assign(problem="q"), pool=pool)).all()


# ---------------------------------------------------------------------------
# Comparison machinery
# ---------------------------------------------------------------------------

def test_mean_pairwise_abs_diff_brute_force():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 6, 60)
    values = rng.normal(size=60)
    values[::11] = np.nan
    got = mean_pairwise_abs_diff(codes, values, 7)
    for g in range(7):
        v = values[(codes == g) & np.isfinite(values)]
        if len(v) < 2:
            assert np.isnan(got[g])
        else:
            assert got[g] == pytest.approx(np.mean([abs(a - b) for a, b in itertools.combinations(v, 2)]))


def test_pareto_front_by_hand():
    front, dominated_by = agg_mod._pareto(np.array([1.0, 2.0, 1.0, 3.0, np.nan]), np.array([50, 60, 40, 55, 90.0]))
    assert front.tolist() == [True, True, False, False, False]
    assert dominated_by[2] == [0] and dominated_by[3] == [1] and dominated_by[0] == []


def _brute_force_mean_pct_comparison(runs):
    """Stability and dynamic range of mean_pct per problem, via stats.ranking.problem_scores and loops."""
    pools = reference_pools(runs)
    rep = problem_scores(percentile_table(runs, per_repeat=True, pools=pools))
    col = problem_scores(percentile_table(runs, pools=pools), by=["problem", "solution"])
    col = col[(col.role == "reference") & col.correct]
    pct = []
    for row in rep.itertuples():
        pool = col[(col.problem == row.problem) & (col.solution != row.solution)]["q"]
        pct.append(st.percentileofscore(100 * pool, 100 * row.q, kind="mean"))
    rep = rep.assign(pct=pct)
    stab, rng_ = {}, {}
    for p, g in rep[rep.correct].groupby("problem", observed=True):
        per_sol = [np.mean([abs(a - b) for a, b in itertools.combinations(h.sort_values("repeat")["pct"], 2)])
                   for _, h in g.groupby("solution", observed=True)]
        stab[p] = np.mean(per_sol)
        refs = g[g.role == "reference"]
        first = refs[refs.repeat == 0].sort_values("pct", kind="stable")
        later = refs[refs.repeat != 0].groupby("solution", observed=True)["pct"].mean()
        k = len(first) // 4
        # Ties across a quartile cut: the range averaged over every order of the tied references
        # (each tie-breaking equally likely), i.e. never the input order.
        blocks = [list(b["solution"]) for _, b in first.groupby("pct", sort=True)]
        ranges = []
        for orders in itertools.product(*(itertools.permutations(b) for b in blocks)):
            ranked = [s for block in orders for s in block]
            ranges.append(later[ranked[-k:]].mean() - later[ranked[:k]].mean())
        rng_[p] = np.mean(ranges)
    return stab, rng_


def test_comparison_matches_brute_force_for_mean_pct():
    synth = synthesize(n_problems=5, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                       n_candidates=2, n_repeats=3, seed=2, noise_cv=0.2)
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    comp = compare_aggregators(runs, names=["mean_pct"], n_boot=50)
    stab, rng_ = _brute_force_mean_pct_comparison(runs[runs.role != "floor"])
    per = comp.per_problem.set_index("problem")
    for p in stab:
        assert per.loc[p, "stability"] == pytest.approx(stab[p])
        assert per.loc[p, "dynamic_range"] == pytest.approx(rng_[p])
    row = comp.table.iloc[0]
    assert row["stability"] == pytest.approx(np.mean(list(stab.values())))
    assert row["stability_sd"] == pytest.approx(np.std(list(stab.values()), ddof=1))
    assert row["dynamic_range"] == pytest.approx(np.mean(list(rng_.values())))
    assert row["ratio"] == pytest.approx(row["stability"] / row["dynamic_range"])
    assert row["stability_low"] <= row["stability"] <= row["stability_high"]
    assert row["n_problems"] == 5


@pytest.fixture(scope="module")
def planted():
    """Per-execution noise well above the sandbox floor (every test carries information), so averaging over
    tests must beat any single test; plus a busy environment with heavier, state-dependent noise."""
    synth = synthesize(n_problems=40, n_tests=8, n_correctness_tests=0, n_solutions=12, n_incorrect=0,
                       n_candidates=0, n_repeats=3, floor_s=0.0005, filterable_share=0.0, noise_cv=0.1,
                       noise_add_s=0.0, busy=True, seed=5)
    quiet = compare_aggregators(select_runs(synth.corpus, environment="quiet", campaign="c0"), n_boot=200)
    busy = compare_aggregators(select_runs(synth.corpus, environment="busy", campaign="c0"), n_boot=200)
    return synth, quiet, busy


def test_planted_noise_single_test_aggregators_are_less_stable(planted):
    _, quiet, _ = planted
    t = quiet.table.set_index("aggregator")
    mean_pct = t.loc["mean_pct"]
    for single in ("heaviest_pct", "worst_pct"):
        # less stable, beyond the bootstrap noise, and a worse stability / range trade-off
        assert t.loc[single, "stability_low"] > mean_pct["stability_high"] or \
            t.loc[single, "stability"] > 1.3 * mean_pct["stability"], single
        assert t.loc[single, "ratio"] > mean_pct["ratio"], single
    assert t.loc["worst_pct", "dynamic_range"] < mean_pct["dynamic_range"]   # saturates at 100
    # quartiles from an independent repeat: every aggregator still separates fast from slow references
    assert (t["dynamic_range"] > 10).all()
    assert t.loc["log_ratio", "same_as"] == "geo_ratio"
    assert quiet.recommended in set(t.index[t["pareto"]])


def test_planted_busy_environment_is_less_stable(planted):
    _, quiet, busy = planted
    q = quiet.table.set_index("aggregator")
    b = busy.table.set_index("aggregator")
    # slope is excluded: on these narrow-span problems the reference medians hardly vary, so its score is
    # noise in both environments (see test_slope_tracks_the_planted_exponent for where it carries signal)
    informative = q.index != "slope"
    assert (b["stability"][informative] > q["stability"][informative]).all()
    assert q.loc["slope", "stability"] > 5 * q.loc["mean_pct", "stability"]
    assert b.loc["mean_pct", "stability_low"] > q.loc["mean_pct", "stability_high"]


def test_every_aggregator_orders_solutions_by_planted_quality(planted):
    """Lower score = faster, for every aggregator: reference percentiles follow true_q."""
    synth, _, _ = planted
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    runs = runs[runs.role != "floor"]
    pools = reference_pools(runs)
    cells = percentile_table(runs, pools=pools)
    truth = synth.solutions.set_index(["problem", "solution"])["true_q"]
    for name in AGGREGATORS:
        if not AGGREGATORS[name].builtin or name == "slope":  # slope measures scaling: next test
            continue
        scores = aggregate(cells, pools, name=name)
        pct = reference_percentile(scores)
        true_q = truth.loc[list(zip(scores["problem"].astype(str), scores["solution"].astype(str)))].to_numpy()
        rho = st.spearmanr(pct, true_q, nan_policy="omit").statistic
        assert rho > 0.5, (name, rho)


def test_slope_tracks_the_planted_exponent():
    synth = synthesize(n_problems=15, n_tests=8, n_correctness_tests=0, n_solutions=10, n_incorrect=0,
                       n_candidates=0, n_repeats=1, floor_s=0.0, noise_add_s=0.0, filterable_share=1.0,
                       wide_span=(100.0, 200.0), seed=9)
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    runs = runs[runs.role != "floor"]
    pools = reference_pools(runs)
    scores = aggregate(percentile_table(runs, pools=pools), pools, name="slope")
    truth = synth.solutions.set_index(["problem", "solution"])["exponent"]
    exponent = truth.loc[list(zip(scores["problem"].astype(str), scores["solution"].astype(str)))].to_numpy()
    # the references' medians grow like w^a_typ for a typical exponent of the problem, so the fitted
    # slope is about a / a_typ: it orders solutions by their planted exponent within each problem
    frame = scores.assign(exponent=exponent)
    rhos = [st.spearmanr(g["score"], g["exponent"]).statistic for _, g in frame.groupby("problem", observed=True)]
    assert np.mean(rhos) > 0.9
    ratio = frame["score"] / frame["exponent"]
    assert 1 / 1.6 < np.median(ratio) < 1.0   # a_typ lies inside the planted range (1.0, 1.6)


def test_comparison_input_checks():
    synth = synthesize(n_problems=3, n_tests=3, n_solutions=5, n_repeats=1, seed=1)
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    with pytest.raises(ValueError, match=">= 2 repeats"):
        compare_aggregators(runs)
    with pytest.raises(ValueError, match="repeat"):
        compare_aggregators(runs.drop(columns="repeat"))
    with pytest.raises(ValueError, match="unknown aggregator"):
        compare_aggregators(runs, names=["nope"])
    two = synthesize(n_problems=3, n_tests=3, n_solutions=5, n_repeats=2, seed=1, busy=True).corpus
    with pytest.raises(ValueError, match="environment"):
        compare_aggregators(two)


def test_unit_table_sorts_as_the_two_key_sort(random_case, monkeypatch):
    """The per-unit sort through the (units x widest unit) table equals the (unit, key) two-key sort: every
    aggregator's scores, and the raw rows / ranks / counts for a masked key with NaN and ties, rows shuffled."""
    _, cells, pools, _, _ = random_case
    shuffled = cells.sample(frac=1.0, random_state=4).reset_index(drop=True)
    ctx, _ = aggregation_context(shuffled, pools)
    assert ctx._unit_table is not None                      # the table path is the one under test
    key = np.round(ctx.percentile, -1)                      # ties
    key[::7] = np.nan
    mask = np.arange(len(key)) % 5 != 0
    with_table = ctx.sorted_within_units(key, mask)
    with_table_scores = {name: aggregate(shuffled, pools, name=name)["score"].to_numpy() for name in REQUIRED}
    monkeypatch.setattr(agg_mod.AggregationContext, "_unit_table", property(lambda self: None))
    plain, _ = aggregation_context(shuffled, pools)
    for got, want in zip(with_table, plain.sorted_within_units(key, mask)):
        np.testing.assert_array_equal(got, want)
    for name in REQUIRED:
        np.testing.assert_array_equal(with_table_scores[name], aggregate(shuffled, pools, name=name)["score"].to_numpy())


def test_unit_table_keeps_ties_in_row_order_in_wide_units():
    """Units of 40 tests with heavy ties (wider than the 16 rows numpy sorts by insertion): the rows come
    out as ``np.lexsort((key, unit))`` orders them, ties in input order."""
    rng = np.random.default_rng(9)
    n_units, width = 300, 40
    cells = pd.DataFrame({"problem": "p", "solution": np.repeat([f"s{i}" for i in range(n_units)], width),
                          "test": np.tile([f"t{j}" for j in range(width)], n_units), "repeat": 0,
                          "duration_s": 1.0, "status": "ok", "test_kind": "optimization",
                          "percentile": rng.integers(0, 4, n_units * width) * 25.0})
    cells = cells.sample(frac=1.0, random_state=1).reset_index(drop=True)
    pools = pd.DataFrame({"problem": "p", "test": [f"t{j}" for j in range(width)], "solution": "r",
                          "duration_s": 1.0})
    ctx, _ = aggregation_context(cells, pools, floor_s=0.0)
    assert ctx._unit_table is not None and ctx._unit_table.shape[1] == width
    key = ctx.percentile.copy()
    key[rng.random(len(key)) < 0.1] = np.nan
    rows, rank, count, start = ctx.sorted_within_units(key)
    use = np.flatnonzero(np.isfinite(key))
    want = use[np.lexsort((key[use], ctx.codes[use]))]
    np.testing.assert_array_equal(rows, want)
    np.testing.assert_array_equal(count, np.bincount(ctx.codes[use], minlength=ctx.n_groups))
    np.testing.assert_array_equal(rank, np.arange(len(rows)) - start[ctx.codes[rows]])
