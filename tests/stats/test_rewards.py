"""Reward environments, reward schemes and p_tau (stats/rewards.py).

Reward formulas are checked on every (c, g, q) combination against hand-written
tables; pass@k against brute-force enumeration of all k-subsets; environments
against independent pandas computations of the filter, the limit and the ranking.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from audits.corpus.synthetic import synthesize
from stats.ranking import percentile_table, problem_scores, reference_pools, select_runs
from stats.rewards import (
    Environment,
    EnvironmentSpecError,
    apply_environment,
    environment_rewards,
    p_tau,
    p_tau_per_problem,
    pass_at_k,
    relative_gain,
    reward,
)

# ------------------------------------------------------------------ reward formulas

C_VALUES = (0, 1)
G_VALUES = (0, 1)
Q_VALUES = (0.0, 0.2, 0.5, 1.0, float("nan"))
COMBOS = list(itertools.product(C_VALUES, G_VALUES, Q_VALUES))

# Hand tables: the intended reward of each (c, g) (and q where it matters), written out, not derived.
EXPECTED_CG = {
    "correctness": {(1, 1): 1, (1, 0): 1, (0, 1): -1, (0, 0): -1},
    "optimization": {(1, 1): 1, (1, 0): -1, (0, 1): 1, (0, 0): -1},
    "collapsed": {(1, 1): 1, (1, 0): -1, (0, 1): -1, (0, 0): -1},
    "two_gate": {(1, 1): 1, (1, 0): 0, (0, 1): -1, (0, 0): -1},
    # lambda = 0.3: 0.3 c~ + 0.7 g~
    "additive": {(1, 1): 1.0, (1, 0): -0.4, (0, 1): 0.4, (0, 0): -1.0},
}
GRADED = {0.0: 1.0, 0.2: 0.8, 0.5: 0.5, 1.0: 0.0}          # correct programs: 1 - q
BUCKETED = {0.0: 1.0, 0.2: 1 / 3, 0.5: -1 / 3, 1.0: -1.0}   # thresholds 10, 30, 50; default levels


@pytest.mark.parametrize("scheme", sorted(EXPECTED_CG))
@pytest.mark.parametrize("c,g,q", COMBOS)
def test_binary_schemes_every_combination(scheme, c, g, q):
    got = reward([c], [g], [q], scheme=scheme, lam=0.3)[0]
    assert got == pytest.approx(EXPECTED_CG[scheme][(c, g)])
    assert -1 <= got <= 1


@pytest.mark.parametrize("c,g,q", COMBOS)
def test_two_gate_graded_every_combination(c, g, q):
    got = reward([c], [g], [q], scheme="two_gate_graded")[0]
    if c == 0:
        expected = -1.0
    else:
        expected = 0.0 if math.isnan(q) else GRADED[q]
    assert got == pytest.approx(expected)


NOISE_GATE = {0.0: -1.0, 0.2: -0.6, 0.5: 0.0, 1.0: 1.0}   # correct programs: 2 P(q <= tau) - 1


@pytest.mark.parametrize("c,g,q", COMBOS)
def test_noise_gate_every_combination(c, g, q):
    """q here is P(q <= tau): a certain pass pays +1 and a certain fail -1, as the binary gate; g plays no part."""
    got = reward([c], [g], [q], scheme="noise_gate")[0]
    expected = -1.0 if c == 0 or math.isnan(q) else NOISE_GATE[q]
    assert got == pytest.approx(expected)


@pytest.mark.parametrize("hard", (False, True))
@pytest.mark.parametrize("c,g,q", COMBOS)
def test_bucketed_every_combination(c, g, q, hard):
    got = reward([c], [g], [q], scheme="optimization_bucketed", thresholds=[10, 30, 50], hard_fail=[hard])[0]
    expected = -1.0 if hard or math.isnan(q) else BUCKETED[q]
    assert got == pytest.approx(expected)


def test_bucketed_custom_levels_and_boundaries():
    q = np.array([0.10, 0.1001, 0.30, 0.99])
    got = reward(np.ones(4), np.ones(4), q, scheme="optimization_bucketed", thresholds=[10, 30],
                 levels=[1.0, 0.25, -0.5])
    # q exactly at a threshold belongs to the faster bucket (q <= threshold).
    assert got.tolist() == [1.0, 0.25, 0.25, -0.5]


def test_collapsed_and_two_gate_match_their_published_formulas():
    c, g = np.meshgrid([0, 1], [0, 1])
    ct, gt = 2 * c.ravel() - 1, 2 * g.ravel() - 1
    assert np.allclose(reward(c.ravel(), g.ravel(), scheme="collapsed"), (1 + ct) * (1 + gt) / 2 - 1)
    assert np.allclose(reward(c.ravel(), g.ravel(), scheme="two_gate"), (1 + ct) * (1 + gt) / 4 - (1 - ct) / 2)


def test_multitask_draws_one_stream_per_rollout_seeded():
    rng = np.random.default_rng(3)
    c = rng.random(20000) < 0.6
    g = rng.random(20000) < 0.3
    assert np.array_equal(reward(c, g, scheme="multitask", p_correctness=1.0), 2.0 * c - 1)
    assert np.array_equal(reward(c, g, scheme="multitask", p_correctness=0.0), 2.0 * g - 1)
    r = reward(c, g, scheme="multitask", p_correctness=0.25, seed=5)
    assert np.array_equal(r, reward(c, g, scheme="multitask", p_correctness=0.25, seed=5))
    informative = c != g  # only there can the stream be told apart
    took_c = r[informative] == (2.0 * c[informative] - 1)
    assert np.all((r == 2.0 * c - 1) | (r == 2.0 * g - 1))
    se = math.sqrt(0.25 * 0.75 / informative.sum())
    assert abs(took_c.mean() - 0.25) < 5 * se


def test_reward_rejects_bad_options():
    with pytest.raises(ValueError, match="unknown reward scheme"):
        reward([1], [1], scheme="nope")
    with pytest.raises(ValueError, match="lam"):
        reward([1], [1], scheme="additive", lam=1.5)
    with pytest.raises(ValueError, match="needs q"):
        reward([1], [1], scheme="two_gate_graded")
    with pytest.raises(ValueError, match="strictly increasing"):
        reward([1], [1], [0.1], scheme="optimization_bucketed", thresholds=[30, 10])


# ------------------------------------------------------------------ pass@k and p_tau

def _brute_pass_at_k(n, m, k):
    items = [1] * m + [0] * (n - m)
    subsets = list(itertools.combinations(range(n), k))
    return Fraction(sum(any(items[i] for i in s) for s in subsets), len(subsets))


def test_pass_at_k_matches_enumeration_of_all_subsets():
    ns, ms, ks, expected = [], [], [], []
    for n in range(1, 9):
        for m in range(n + 1):
            for k in range(1, n + 1):
                ns.append(n), ms.append(m), ks.append(k)
                expected.append(float(_brute_pass_at_k(n, m, k)))
    ns, ms, ks, expected = map(np.array, (ns, ms, ks, expected))
    for k in np.unique(ks):
        sel = ks == k
        assert np.allclose(pass_at_k(ns[sel], ms[sel], int(k)), expected[sel], atol=1e-12)


def test_pass_at_k_is_stable_where_binomials_overflow_floats():
    n, m, k = 2000, 3, 700
    exact = 1 - Fraction(math.comb(n - m, k), math.comb(n, k))
    assert pass_at_k(n, m, k) == pytest.approx(float(exact), rel=1e-12)
    assert np.isnan(pass_at_k(3, 1, 5))
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)


def _samples():
    # problem a: 4 samples, b: 2 samples, c: 3 samples (hand-made).
    return pd.DataFrame({
        "problem": ["a"] * 4 + ["b"] * 2 + ["c"] * 3,
        "c": [1, 1, 0, 1, 1, 1, 0, 0, 1],
        "q": [0.05, 0.4, 0.0, 0.9, 0.25, 0.3, 0.1, 0.2, 0.5],
    })


def test_p_tau_counts_and_pass_at_1_by_hand():
    per = p_tau_per_problem(_samples(), taus=(100, 30, 10), k=1)
    m = per.pivot(index="problem", columns="tau", values="m")
    # a: correct {0.05, 0.4, 0.9}; b: correct {0.25, 0.3}; c: correct {0.5}
    assert m.loc["a"].tolist() == [1, 1, 3]        # tau 10, 30, 100 (columns sorted)
    assert m.loc["b"].tolist() == [0, 2, 2]
    assert m.loc["c"].tolist() == [0, 0, 1]
    table = p_tau(_samples(), taus=(100, 30, 10), k=1, n_boot=200).set_index("tau")
    assert table.loc[100, "estimate"] == pytest.approx(100 * np.mean([3 / 4, 1, 1 / 3]))
    assert table.loc[30, "estimate"] == pytest.approx(100 * np.mean([1 / 4, 1, 0]))
    assert table.loc[10, "estimate"] == pytest.approx(100 * np.mean([1 / 4, 0, 0]))
    assert (table["n_problems"] == 3).all()
    assert (table["ci_low"] <= table["estimate"]).all() and (table["estimate"] <= table["ci_high"]).all()


def test_p_tau_k2_uses_the_unbiased_estimator():
    table = p_tau(_samples(), taus=(30,), k=2, n_boot=10).set_index("tau")
    expected = np.mean([float(_brute_pass_at_k(4, 1, 2)), float(_brute_pass_at_k(2, 2, 2)),
                        float(_brute_pass_at_k(3, 0, 2))])
    assert table.loc[30, "estimate"] == pytest.approx(100 * expected)


def test_relative_gain_reproduces_the_published_arithmetic():
    # Qwen 2.5 7B: p50 18.0 -> 31.3 is a 73.9 % relative gain; build 1000 problems with those rates.
    n = 1000
    base = pd.DataFrame({"problem": np.arange(n), "c": np.arange(n) < 180, "q": 0.1})
    new = pd.DataFrame({"problem": np.arange(n), "c": np.arange(n) < 313, "q": 0.1})
    gain = relative_gain(base, new, taus=(50,), n_boot=300).iloc[0]
    assert gain["base"] == pytest.approx(18.0) and gain["new"] == pytest.approx(31.3)
    assert gain["gain_pct"] == pytest.approx(100 * (31.3 / 18.0 - 1))
    assert gain["ci_low"] < gain["gain_pct"] < gain["ci_high"]
    assert gain["n_problems"] == n


# ------------------------------------------------------------------ environment specs

def test_environment_round_trip_and_defaults():
    data = {"name": "e", "pre": {"max_reference_s": 2, "keep_slowest_fraction": 0.5},
            "limit": {"kind": "reference_percentile", "percentile": 90, "factor": 2},
            "post": {"aggregator": "mean_pct", "tau": 30}, "reward": {"scheme": "additive", "lambda": 0.25}}
    env = Environment.from_dict(data)
    assert env.limit.factor == 2 and env.reward.lam == 0.25 and env.pre.max_input_chars is None
    assert Environment.from_dict(env.to_dict()) == env


@pytest.mark.parametrize("data,key,words", [
    ({"name": "x"}, "post", "required"),
    ({"name": "x", "post": {"tau": 130}}, "post.tau", "[0, 100]"),
    ({"name": "x", "post": {"aggregator": "fastest_ever"}}, "post.aggregator", "mean_pct"),
    ({"name": "x", "post": {}, "limit": {"kind": "sometimes"}}, "limit.kind", "uniform"),
    ({"name": "x", "post": {}, "limit": {"kind": "ranked_worst"}}, "limit.fastest_percent", "required"),
    ({"name": "x", "post": {}, "limit": {"kind": "uniform", "seconds": 1, "percentile": 3}}, "limit.percentile",
     "not used"),
    ({"name": "x", "post": {}, "pre": {"keep_slowest_fraction": 0}}, "pre.keep_slowest_fraction", "(0, 1]"),
    ({"name": "x", "post": {}, "pre": {"max_seconds": 1}}, "pre.max_seconds", "max_reference_s"),
    ({"name": "x", "post": {}, "reward": {"scheme": "fast"}}, "reward.scheme", "collapsed"),
    ({"name": "x", "post": {}, "reward": {"scheme": "optimization_bucketed"}}, "reward.thresholds", "required"),
    ({"name": "x", "post": {}, "reward": {"scheme": "additive", "lambda": "a"}}, "reward.lambda", "number"),
    ({"name": "x", "post": {}, "speed": 1}, "speed", "allowed top-level keys"),
])
def test_environment_validation_names_the_key_and_the_allowed_values(data, key, words):
    with pytest.raises(EnvironmentSpecError) as info:
        Environment.from_dict(data)
    assert info.value.key == key
    assert words in str(info.value)


# ------------------------------------------------------------------ applying environments

@pytest.fixture(scope="module")
def runs():
    synth = synthesize(n_problems=6, n_tests=5, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                       n_candidates=2, n_repeats=3, seed=4)
    return select_runs(synth.corpus, environment="quiet", campaign="c0")


def _reference_medians(runs):
    pools = reference_pools(runs)
    return pools.groupby(["problem", "test"], observed=True)["duration_s"].median()


def _brute_scores(runs, limit_of_test, tau, kept=None):
    """Independent path: limit rows with pandas, then the ranking engine on the modified rows."""
    runs = runs[runs["role"] != "floor"]
    pools = reference_pools(runs)
    frame = runs[runs["role"].isin(["reference", "candidate"])].copy()
    frame["status"] = frame["status"].astype(object)
    if kept is not None:
        frame = frame[[(p, t) in kept for p, t in zip(frame["problem"], frame["test"])]]
    lim = np.array([limit_of_test.get((p, t), np.inf) for p, t in zip(frame["problem"], frame["test"])])
    hit = (frame["status"] == "ok").to_numpy() & (frame["duration_s"].to_numpy() > lim)
    frame.loc[hit, "status"] = "timeout"
    frame.loc[hit, "duration_s"] = lim[hit]
    table = percentile_table(frame, per_repeat=True, pools=pools)
    return problem_scores(table, tau=tau).set_index(["problem", "solution", "repeat"]).sort_index()


def _compare(out, brute):
    got = out.scores.set_index(["problem", "solution", "repeat"]).sort_index()
    assert len(got) == len(brute)
    assert np.allclose(got["q"].to_numpy(), brute["q"].to_numpy(), equal_nan=True)
    assert np.array_equal(got["c"].to_numpy(), brute["c"].to_numpy())
    assert np.array_equal(got["g"].to_numpy(), brute["g"].to_numpy())


def test_uniform_limit_matches_row_by_row_timeouts(runs):
    env = Environment.from_dict({"name": "u", "limit": {"kind": "uniform", "seconds": 0.08}, "post": {"tau": 40}})
    out = apply_environment(runs, env)
    opt_tests = runs.loc[runs["test_kind"] == "optimization", ["problem", "test"]].drop_duplicates()
    limits = {(p, t): 0.08 for p, t in opt_tests.itertuples(index=False)}
    _compare(out, _brute_scores(runs, limits, 40))
    assert 0 < out.n_limited < out.n_executions


def test_reference_percentile_limit_is_factor_times_pool_percentile(runs):
    env = Environment.from_dict({"name": "p", "limit": {"kind": "reference_percentile", "percentile": 70,
                                                        "factor": 1.5}, "post": {"tau": 50}})
    out = apply_environment(runs, env)
    pools = reference_pools(runs)
    expected = pools.groupby(["problem", "test"], observed=True)["duration_s"].apply(
        lambda d: 1.5 * np.percentile(d, 70))
    tests = out.tests.set_index(["problem", "test"])
    opt = tests["test_kind"] == "optimization"
    for key, value in expected.items():
        if opt.loc[key]:
            assert tests.loc[key, "limit_s"] == pytest.approx(value)
        else:
            assert np.isnan(tests.loc[key, "limit_s"])  # correctness tests run under the sandbox limit
    _compare(out, _brute_scores(runs, {k: v for k, v in expected.items() if opt.loc[k]}, 50))


def test_ranked_worst_limit_by_brute_force(runs):
    env = Environment.from_dict({"name": "rw", "limit": {"kind": "ranked_worst", "fastest_percent": 50,
                                                         "factor": 1.0}, "post": {"tau": 100}})
    out = apply_environment(runs, env)
    refs = runs[(runs["role"] == "reference") & runs["correct"]]
    pools = reference_pools(runs)
    ref_q = problem_scores(percentile_table(refs), by=["problem", "solution"])
    tests = out.tests.set_index(["problem", "test"])
    for problem, block in ref_q.groupby("problem", observed=True):
        block = block.sort_values("q", kind="stable")
        fastest = set(block["solution"].iloc[:math.ceil(0.5 * len(block))])
        pool = pools[(pools["problem"] == problem) & pools["solution"].isin(fastest)]
        for test, durations in pool.groupby("test", observed=True)["duration_s"]:
            if tests.loc[(problem, test), "test_kind"] == "optimization":
                assert tests.loc[(problem, test), "limit_s"] == pytest.approx(durations.max())


def test_duration_filter_and_slowest_fraction_by_hand(runs):
    medians = _reference_medians(runs)
    cut = float(np.quantile(medians.to_numpy(), 0.6))
    env = Environment.from_dict({"name": "f", "pre": {"max_reference_s": cut, "keep_slowest_fraction": 0.5},
                                 "post": {"tau": 30}})
    out = apply_environment(runs, env)
    tests = out.tests.set_index(["problem", "test"])
    kinds = runs[["problem", "test", "test_kind"]].drop_duplicates().set_index(["problem", "test"])["test_kind"]
    expected_kept = set()
    for problem in medians.index.get_level_values(0).unique():
        m = medians.loc[problem]
        opt = [t for t in m.index if kinds.loc[(problem, t)] == "optimization" and m[t] <= cut]
        opt = sorted(opt, key=lambda t: -m[t])[:math.ceil(0.5 * len(opt))]
        expected_kept |= {(problem, t) for t in opt}
        expected_kept |= {(problem, t) for t in m.index if kinds.loc[(problem, t)] == "correctness"}
    got_kept = {key for key, kept in tests["kept"].items() if kept}
    assert got_kept == expected_kept
    _compare(out, _brute_scores(runs, {}, 30, kept=expected_kept))
    got = out.scores.set_index(["problem", "solution", "repeat"])
    n_opt = {p: sum(1 for (pp, t) in expected_kept if pp == p and kinds.loc[(pp, t)] == "optimization")
             for p in medians.index.get_level_values(0).unique()}
    assert all(got.loc[(p, s, r), "n_opt_tests"] == n_opt[p] for p, s, r in got.index)


def test_input_size_filter_and_problems_left_without_tests(runs):
    env = Environment.from_dict({"name": "len", "pre": {"max_input_chars": 1000}, "post": {"tau": 30}})
    out = apply_environment(runs, env)
    # Every synthetic optimization input is >= 5000 bytes: nothing is left to prove speed.
    assert not out.tests.loc[out.tests["test_kind"] == "optimization", "kept"].any()
    assert out.scores["q"].isna().all() and not out.scores["g"].any()
    assert (out.scores["n_opt_tests"] == 0).all()
    with pytest.raises(ValueError, match="input_bytes"):
        apply_environment(runs.drop(columns=["input_bytes"]), env)


def test_timeouts_may_be_tolerated_for_c(runs):
    base = {"name": "t", "limit": {"kind": "uniform", "seconds": 0.08}, "post": {"tau": 100}}
    strict = apply_environment(runs, Environment.from_dict(base)).scores
    base["limit"]["timeout_fails_c"] = False
    lenient = apply_environment(runs, Environment.from_dict(base)).scores
    assert lenient["c"].sum() > strict["c"].sum()
    # A timeout is still a hard optimization failure: g is unchanged.
    assert np.array_equal(lenient["g"].to_numpy(), strict["g"].to_numpy())


def test_environment_rewards_per_unit(runs):
    env = Environment.from_dict({"name": "two", "post": {"tau": 30}, "reward": {"scheme": "two_gate"}})
    scores = apply_environment(runs, env, per_repeat=False).scores
    r = environment_rewards(scores, env.reward)
    c, g = scores["c"].to_numpy(), scores["g"].to_numpy()
    assert np.array_equal(r == 1, c & g) and np.array_equal(r == -1, ~c) and np.array_equal(r == 0, c & ~g)
    assert "repeat" not in scores.columns


def test_other_aggregator_q_is_the_reference_percentile_of_its_score(runs):
    """worst_pct by brute force: max per-test percentile, ranked among the correct references of
    the same problem and repeat (leave-self-out, tie-averaged)."""
    env = Environment.from_dict({"name": "w", "post": {"aggregator": "worst_pct", "tau": 40}})
    got = apply_environment(runs, env).scores.set_index(["problem", "solution", "repeat"]).sort_index()
    rows = runs[runs["role"] != "floor"]
    table = percentile_table(rows, per_repeat=True, pools=reference_pools(rows))
    table = table[table["test_kind"] == "optimization"]
    worst = table.groupby(["problem", "solution", "repeat"], observed=True)["percentile"].max()
    units = table.groupby(["problem", "solution", "repeat"], observed=True)[["role", "correct"]].first()
    for (problem, solution, repeat), score in worst.items():
        peers = [(s, v) for (p, s, r), v in worst.items() if p == problem and r == repeat and s != solution
                 and units.loc[(p, s, r), "role"] == "reference" and units.loc[(p, s, r), "correct"]]
        values = np.array([v for _, v in peers])
        expected = ((values < score).sum() + 0.5 * (values == score).sum()) / len(values)
        assert got.loc[(problem, solution, repeat), "q"] == pytest.approx(expected)
    hard = got["hard_fail"].to_numpy()
    assert np.array_equal(got["g"].to_numpy(), (got["q"].to_numpy() <= 0.4) & ~hard)


def test_units_keep_a_row_when_every_test_is_filtered_out():
    synth = synthesize(n_problems=3, n_tests=3, n_correctness_tests=0, n_solutions=4, n_incorrect=0,
                       n_candidates=0, n_repeats=2, seed=2)
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    env = Environment.from_dict({"name": "none_left", "pre": {"max_input_chars": 10}, "post": {"tau": 30}})
    scores = apply_environment(runs, env).scores
    assert len(scores) == 3 * 4 * 2
    assert scores["q"].isna().all() and scores["c"].all() and not scores["g"].any()
    assert scores["c"].dtype == bool and scores["g"].dtype == bool and (scores["n_opt_tests"] == 0).all()
    assert (environment_rewards(scores, env.reward) == -1).all()


def test_precomputed_base_percentiles_give_identical_scores_for_every_shipped_environment():
    """One ranking pass for all environments (base_percentiles) must change nothing: every
    environment of the shipped grid, per repeat and collapsed, on a busy (timeout-rich) corpus."""
    from audits.checks.reward_environments import load_grid
    from stats.rewards import apply_environment, base_percentiles

    synth = synthesize(n_problems=6, n_tests=5, n_solutions=6, n_repeats=3, busy=True, seed=5)
    runs = select_runs(synth.corpus, environment="busy", campaign="c0")
    pools = reference_pools(runs[runs["role"] != "floor"])
    environments = load_grid("fixtures/environments/grid.yaml")
    assert len(environments) > 10
    for per_repeat in (True, False):
        base = base_percentiles(runs, pools=pools, per_repeat=per_repeat)
        n_limited = 0
        for env in environments:
            slow = apply_environment(runs, env, pools=pools, per_repeat=per_repeat)
            fast = apply_environment(runs, env, pools=pools, per_repeat=per_repeat, percentiles=base)
            pd.testing.assert_frame_equal(slow.scores, fast.scores)
            n_limited += slow.n_limited
        assert n_limited > 0  # the limits really turned executions into timeouts somewhere
    with pytest.raises(ValueError, match="base_percentiles"):
        apply_environment(runs, environments[0], pools=pools, percentiles=base[:-1])


def test_floor_durations_given_with_floor_free_rows_equal_the_floor_rows_themselves(runs):
    """What simulate_grid does (the run stripped of its floor rows once, their durations passed): the same
    scores as apply_environment reading the floor rows, for a floor-relative aggregator; the floor's level
    matters (doubling it changes the scores), and floor rows together with floor_durations are refused."""
    env = Environment.from_dict({"name": "f", "post": {"aggregator": "floor_pct", "tau": 40}})
    is_floor = (runs["role"] == "floor").to_numpy()
    assert is_floor.sum() > 0
    floor_d = runs["duration_s"].to_numpy(dtype=float)[is_floor]
    whole = apply_environment(runs, env).scores
    split = apply_environment(runs.loc[~is_floor], env, floor_durations=floor_d).scores
    pd.testing.assert_frame_equal(whole.reset_index(drop=True), split.reset_index(drop=True))
    moved = apply_environment(runs.loc[~is_floor], env, floor_durations=floor_d * 50).scores
    assert not np.allclose(moved["q"].to_numpy(dtype=float), whole["q"].to_numpy(dtype=float), equal_nan=True)
    with pytest.raises(ValueError, match="without floor rows"):
        apply_environment(runs, env, floor_durations=floor_d)


# ------------------------------------------------------------------ the noise-aware gate (issue 25 item 5)

def _noise_gate_env(tau=30, aggregator="mean_pct"):
    return Environment.from_dict({"name": "ng", "post": {"aggregator": aggregator, "tau": tau},
                                  "reward": {"scheme": "noise_gate"}})


@pytest.mark.parametrize("per_repeat", (True, False))
def test_noise_gate_is_each_problems_noise_model_probability(runs, per_repeat):
    """p_gate equals stats.noise's P(q <= tau) computed problem by problem here (its own fit, and its seed from its
    own rows, stats.rewards.problem_data_seed: statuses and duration ranks, not its name; that the seed follows the
    data in any unit, order or names is tests/edges/test_sim_gate_draws_unit.py's), 0 after a hard failure; the
    reward is 2 p - 1 for a correct unit and -1 for a wrong one."""
    from stats.noise import fit_noise, noise_aware_scores
    from stats.rewards import problem_data_seed

    out = apply_environment(runs, _noise_gate_env(), per_repeat=per_repeat).scores
    by = ["problem", "solution"] + (["repeat"] if per_repeat else [])
    rows = runs[runs["role"] != "floor"]
    expected = []
    for _problem, block in rows.groupby("problem", observed=True):
        scored = block[block["role"].isin(["reference", "candidate"])]
        if not per_repeat:
            scored = scored.groupby(["problem", "test", "solution"], observed=True).agg(
                status=("status", lambda s: "ok" if (s == "ok").all() else "timeout"),
                role=("role", "first"), correct=("correct", "first"), test_kind=("test_kind", "first")).reset_index()
        seed = problem_data_seed(block)
        model = fit_noise(block)
        na = (noise_aware_scores(model, tau=30, roles=None, executions=scored, seed=seed) if per_repeat
              else noise_aware_scores(model, tau=30, roles=None, cells=scored, seed=seed))
        expected.append(na.scores[by + ["p_gate"]])
    expected = pd.concat(expected).astype({k: str for k in by if k != "repeat"})
    got = out.astype({k: str for k in by if k != "repeat"}).merge(expected, on=by, suffixes=("", "_here"))
    assert len(got) == len(out) > 0
    want = np.where(got["hard_fail"], 0.0, got["p_gate_here"])
    np.testing.assert_allclose(got["p_gate"].to_numpy(), want, rtol=0, atol=1e-12, equal_nan=True)
    r = environment_rewards(out, _noise_gate_env().reward)
    p = out["p_gate"].to_numpy()
    np.testing.assert_allclose(r, np.where(out["c"], np.where(np.isfinite(p), 2 * p - 1, -1.0), -1.0), atol=1e-12)


def test_noise_gate_recovers_the_point_gate_where_noise_cannot_move_it():
    """Planted truth: with 0.1 % repeat noise and speeds far apart (log sd 1), every correct unit's P(q <= tau) is 0 or 1
    and equals the point gate g, so the noise-aware reward is the binary one."""
    synth = synthesize(n_problems=3, n_tests=3, n_correctness_tests=0, n_solutions=10, n_incorrect=0,
                       n_candidates=0, n_repeats=4, seed=9, noise_cv=0.001, noise_add_s=0.0, constant_sd=1.0,
                       exponent_range=(1.0, 1.0))  # one exponent: solutions never cross, so no near-tie on a test
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0")
    out = apply_environment(runs, _noise_gate_env(tau=50)).scores
    binary = apply_environment(runs, Environment.from_dict({"name": "b", "post": {"tau": 50}})).scores
    assert np.array_equal(out["g"].to_numpy(), binary["g"].to_numpy())
    correct = out["c"].to_numpy()
    np.testing.assert_allclose(out.loc[correct, "p_gate"], binary.loc[correct, "g"].astype(float), atol=0.01)


def test_noise_gate_is_invariant_to_row_order_and_to_the_other_problems(runs):
    whole = apply_environment(runs, _noise_gate_env()).scores
    shuffled = apply_environment(runs.sample(frac=1.0, random_state=5).reset_index(drop=True), _noise_gate_env()).scores
    keys = ["problem", "solution", "repeat"]
    a = whole.sort_values(keys).reset_index(drop=True)
    b = shuffled.sort_values(keys).reset_index(drop=True)
    np.testing.assert_array_equal(a["p_gate"].to_numpy(), b["p_gate"].to_numpy())
    first = str(runs["problem"].iloc[0])
    alone = apply_environment(runs[runs["problem"].astype(str) == first].reset_index(drop=True),
                              _noise_gate_env()).scores
    mine = a[a["problem"].astype(str) == first].sort_values(keys)["p_gate"].to_numpy()
    np.testing.assert_array_equal(alone.sort_values(keys)["p_gate"].to_numpy(), mine)


def test_noise_gate_refuses_an_aggregator_it_cannot_gate():
    with pytest.raises(EnvironmentSpecError, match="post.aggregator.*mean_pct"):
        _noise_gate_env(aggregator="worst_pct")
