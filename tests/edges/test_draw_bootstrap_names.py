"""The simulation's bootstrap CIs over problems do not depend on the problems' names.

stats.simulator.combine_simulation resampled the problems (rows of their per-problem sums) in the order of their
names (SimulationProblems.concat sorts them so), so the same rows with the problems renamed into another sort
order drew other replicates: top30's AUC interval read [0.249, 0.398] or [0.266, 0.397], its monotonicity's
[0.859, 0.975] or [0.828, 0.975] (200 replicates, synthesize(seed=7) below).
The problems are now taken in the order of a key of their own figures, and the sums over problems too, so a
renamed and shuffled copy gives the same figures. Plain rank rewards (no noise-model draws) through the public
audit (run_audits), and the per-environment simulator.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from audits.engine.whole_audit import run_audits
from stats.ranking import select_runs
from stats.rewards import RewardEnvironment
from stats.simulator import simulate
from tests.edges.test_draw_names import _figures
from tests.edges.named_corpora import quiet_run

ENVS = (RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}}),
        RewardEnvironment.from_dict({"name": "graded", "post": {"tau": 30}, "reward": {"scheme": "two_gate_graded"}}))
NAMES = ["zz", "Ωx", "🙂 p", "ق-مسألة", "p\x00nul", " ", "e\u0301", "AAA", "0", "~"]


@pytest.fixture(scope="module")
def corpus():
    return quiet_run(n_problems=8, n_tests=3, n_solutions=6, n_repeats=3, noise_cv=0.15, seed=7)


def _renamed(frame, seed=0):
    names = sorted(frame["problem"].unique())
    mapping = dict(zip(names, NAMES[:len(names)]))  # another sort order: 'zz' first
    assert sorted(mapping.values()) != [mapping[n] for n in names]
    out = frame.assign(problem=frame["problem"].map(mapping))
    return out.iloc[np.random.default_rng(seed).permutation(len(out))].reset_index(drop=True)


def test_simulation_audit_cis_do_not_depend_on_problem_names(corpus):
    options = {"simulation": {"reward_environments": ENVS, "n_boot": 50}}
    audits = [run_audits(frame, ["simulation"], options=options).results["simulation"]
              for frame in (corpus, _renamed(corpus))]
    a, b = (_figures(x, ci=True) for x in audits)
    values = [v for _, v in a if isinstance(v, float)]
    # the intervals are there, and not all one point
    assert len(values) >= 20 and sum(1 for _, v in a if isinstance(v, float) and math.isfinite(v)) >= 20
    lows = dict((p, v) for p, v in a if p.endswith("auc_ci_low"))
    highs = dict((p, v) for p, v in a if p.endswith("auc_ci_high"))
    assert any(highs[p.replace("low", "high")] - v > 0.005 for p, v in lows.items())
    assert a == b


@pytest.mark.parametrize("seed", [0, 1])
def test_simulator_cis_do_not_depend_on_problem_names(corpus, seed):
    runs = select_runs(corpus, environment="quiet", campaign="c0")
    renamed = select_runs(_renamed(corpus, seed), environment="quiet", campaign="c0")
    for env in ENVS:
        x, y = (simulate(frame, env, n_boot=100, seed=seed).diagnostics for frame in (runs, renamed))
        cis = [k for k in x if k.endswith(("_ci_low", "_ci_high"))]
        assert len(cis) >= 10
        for key in x:
            if isinstance(x[key], float) and isinstance(y[key], float):
                assert (math.isnan(x[key]) and math.isnan(y[key])) or x[key] == y[key], (env.name, key)
