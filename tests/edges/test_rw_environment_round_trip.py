"""A reward environment's written definition (to_dict, in every JSON result) loads back into the same environment.

`limit: {timeout_fails_c: false}` without a limit (the corpus's own timeouts keep c) was written without its
`limit` section, since to_dict wrote one only for a limit of another kind than none: the simulation's and score's
JSON said the environment was one in which a timeout fails c, and loading that definition gave other rewards.
"""

from __future__ import annotations

import pandas as pd
import pytest

from audits.checks.reward_environments import load_grid, load_reward_environment, shipped_environment_files
from audits.corpus.synthetic import synthesize
from stats.ranking import STATUSES, select_runs
from stats.rewards import Environment, apply_environment

VARIANTS = [
    {"name": "keep_c", "post": {"tau": 30}, "limit": {"timeout_fails_c": False}},
    {"name": "keep_c_limited", "post": {"tau": 30}, "limit": {"seconds": 2.0, "timeout_fails_c": False,
                                                              "apply_to": "all"}},
    {"name": "mt", "post": {"tau": 20}, "reward": {"scheme": "multitask", "p_correctness": 0.2, "seed": 4}},
    {"name": "bk", "post": {"tau": 20}, "reward": {"scheme": "optimization_bucketed", "thresholds": [10, 20],
                                                    "levels": [1, 0, -1]}},
    {"name": "rel", "pre": {"max_reference_quantile": 0.5}, "limit": {"reference_quantile": 1.0, "factor": 2},
     "post": {"tau": 30}, "reward": {"scheme": "additive", "lambda": 0.25}},
]


def _shipped():
    out = []
    for path in shipped_environment_files():
        out.extend(load_grid(path) if "vary" in path.read_text() else [load_reward_environment(path)])
    return out


@pytest.mark.parametrize("env", _shipped() + [Environment.from_dict(v) for v in VARIANTS], ids=lambda e: e.name)
def test_the_definition_loads_back_into_the_same_environment(env):
    assert Environment.from_dict(env.to_dict()) == env


def test_the_written_definition_scores_as_the_environment():
    runs = select_runs(synthesize(n_problems=3, n_tests=3, n_solutions=5, n_repeats=2, n_candidates=2,
                                  seed=1).corpus, environment="quiet", campaign="c0")
    runs = runs[runs["role"].astype(str) != "floor"].reset_index(drop=True)
    # the corpus's own timeout: one candidate execution on an optimization test
    hit = ((runs["role"].astype(str) == "candidate") & (runs["test_kind"].astype(str) == "optimization")).to_numpy()
    first = hit.nonzero()[0][0]
    status = runs["status"].astype(str).to_numpy().copy()
    status[first] = "timeout"
    runs["status"] = pd.Categorical(status, categories=list(STATUSES))
    env = Environment.from_dict(VARIANTS[0])
    written = Environment.from_dict(env.to_dict())
    a = apply_environment(runs, env).scores
    b = apply_environment(runs, written).scores
    unit = (a["solution"].astype(str) == str(runs["solution"].iloc[first])) & \
           (a["problem"].astype(str) == str(runs["problem"].iloc[first])) & (a["repeat"] == runs["repeat"].iloc[first])
    assert a.loc[unit, "c"].all()  # the timeout keeps c here, as the environment says
    pd.testing.assert_series_equal(a["c"], b["c"])
