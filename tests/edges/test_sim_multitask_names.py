"""The multitask reward's coin follows each rollout's data, not the problems' names.

stats.rewards.reward drew one uniform per rollout from default_rng(seed) in table order (problems in name order),
and the simulator mirrored that stream (stats.simulator._multitask_draws, each problem at its name-order offset):
renaming the problems of the same rows into another sort order handed the rollouts other coins, so every
multitask figure moved. The coin is now keyed by the rollout's own scores and its problem's (a multiset of its
rollouts'), so renamed and shuffled copies give the same rewards and figures; the coins are still a fair coin of
probability p_correctness (scipy's binomial test) and the seed still matters.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from scipy import stats as sps

from audits.checks.simulation import run_simulation_audit
from audits.corpus.synthetic import synthesize
from stats.rewards import RewardEnvironment, apply_environment, environment_rewards

COIN = RewardEnvironment.from_dict({"name": "coin", "post": {"tau": 30},
                                    "reward": {"scheme": "multitask", "p_correctness": 0.4, "seed": 3}})
RENAME = {f"p{i:04d}": name for i, name in enumerate(["zz", "a", "Ω", "m", "b0", "é", "00", "q", "x y", "c"])}


def _corpus():
    return synthesize(n_problems=10, n_tests=3, n_correctness_tests=1, n_solutions=6, n_incorrect=2, n_repeats=3,
                      noise_cv=0.1, seed=11).corpus


def _renamed(corpus: pd.DataFrame) -> pd.DataFrame:
    other = corpus.sample(frac=1.0, random_state=4).reset_index(drop=True)
    other["problem"] = other["problem"].astype(str).map(lambda n: RENAME.get(n, n))
    other["solution"] = "s-" + other["solution"].astype(str).str[::-1]
    return other


def _rewards(corpus: pd.DataFrame, env=COIN) -> pd.DataFrame:
    scores = apply_environment(corpus, env, per_repeat=True, roles=("reference",)).scores
    return scores.assign(reward=environment_rewards(scores, env.reward))


def test_renamed_problems_get_the_same_coins():
    corpus = _corpus()
    a, b = _rewards(corpus), _rewards(_renamed(corpus))
    a["problem"] = a["problem"].astype(str).map(lambda n: RENAME.get(n, n))
    a["solution"] = "s-" + a["solution"].astype(str).str[::-1]
    key = ["problem", "solution", "repeat"]
    cols = key + ["c", "g", "reward"]
    a = a[cols].astype({"problem": str, "solution": str}).sort_values(key).reset_index(drop=True)
    b = b[cols].astype({"problem": str, "solution": str}).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert (a["c"] != a["g"]).sum() >= 20  # rollouts where the coin decides the reward


def test_the_simulation_audit_is_the_same_under_other_names():
    corpus = _corpus()
    figures = [json.loads(json.dumps(run_simulation_audit(c, reward_environments=[COIN], n_boot=50,
                                                          include_incorrect=True).to_dict()))
               for c in (corpus, _renamed(corpus))]
    assert figures[0]["reward_environments"] == figures[1]["reward_environments"]
    assert figures[0]["curves"] == figures[1]["curves"]


def test_the_coin_is_a_fair_coin_and_the_seed_matters():
    corpus = synthesize(n_problems=30, n_tests=3, n_correctness_tests=1, n_solutions=8, n_incorrect=4,
                        n_repeats=3, noise_cv=0.1, seed=2).corpus
    out = _rewards(corpus)
    informative = (out["c"] != out["g"]).to_numpy()
    took_c = out["reward"].to_numpy()[informative] == 2.0 * out["c"].to_numpy()[informative] - 1
    assert informative.sum() >= 300
    assert sps.binomtest(int(took_c.sum()), int(informative.sum()), 0.4).pvalue > 1e-3
    other = RewardEnvironment.from_dict({"name": "coin", "post": {"tau": 30},
                                         "reward": {"scheme": "multitask", "p_correctness": 0.4, "seed": 4}})
    assert not np.array_equal(_rewards(corpus, other)["reward"].to_numpy(), out["reward"].to_numpy())
