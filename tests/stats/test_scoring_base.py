"""A ScoringBase shared by many environments gives what each environment gives on its own.

``apply_environment(..., base=ScoringBase(...))`` reuses the test table, the scored rows and the units
across environments (the simulation audit applies seven to one run). Each environment here acts
differently on them (a filter that drops tests, three kinds of limit, a non-default aggregator), and the
environments are applied in one order and then again in reverse: if one environment changed what the base
holds, a later one would score differently from a fresh call.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from audits.corpus.synthetic import synthesize
from stats.ranking import reference_pools, select_runs
from stats.rewards import Environment, ScoringBase, apply_environment
from stats.simulator import simulate_grid

ENVIRONMENTS = [
    {"name": "plain", "post": {"tau": 30}},
    {"name": "uniform", "limit": {"kind": "uniform", "seconds": 0.08}, "post": {"tau": 40}},
    {"name": "pct", "limit": {"kind": "reference_percentile", "percentile": 70, "factor": 1.5}, "post": {"tau": 50}},
    {"name": "worst", "limit": {"kind": "ranked_worst", "fastest_percent": 50}, "post": {"tau": 30}},
    {"name": "filtered", "pre": {"keep_slowest_fraction": 0.5}, "post": {"tau": 30}},
    {"name": "median", "post": {"tau": 30, "aggregator": "median_pct"}},
]


@pytest.fixture(scope="module")
def runs():
    synth = synthesize(n_problems=6, n_tests=5, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                       n_candidates=2, n_repeats=3, seed=4)
    run = select_runs(synth.corpus, environment="quiet", campaign="c0")
    return run.loc[(run["role"] != "floor").to_numpy()].reset_index(drop=True)


def _same(a, b):
    pd.testing.assert_frame_equal(a.scores, b.scores)
    pd.testing.assert_frame_equal(a.tests, b.tests)
    pd.testing.assert_frame_equal(a.scored, b.scored)
    assert (a.n_executions, a.n_limited) == (b.n_executions, b.n_limited)


@pytest.mark.parametrize("roles,per_repeat", [(("reference",), True), (("reference", "candidate"), False)])
def test_a_shared_base_scores_every_environment_as_a_fresh_call(runs, roles, per_repeat):
    pools = reference_pools(runs)
    envs = [Environment.from_dict(e) for e in ENVIRONMENTS]
    fresh = {e.name: apply_environment(runs, e, roles=roles, per_repeat=per_repeat, pools=pools) for e in envs}
    assert len({out.n_executions for out in fresh.values()}) > 1   # the filter acts: the environments differ
    assert any(out.n_limited for out in fresh.values())            # and a limit does
    base = ScoringBase(runs, pools=pools, roles=roles, per_repeat=per_repeat)
    shared = [(env, apply_environment(runs, env, roles=roles, per_repeat=per_repeat, pools=pools, base=base))
              for env in envs + envs[::-1]]
    for env, out in shared:  # compared after every environment ran: a later one must not change an earlier result
        _same(out, fresh[env.name])


def test_a_base_of_other_runs_or_options_is_refused(runs):
    pools = reference_pools(runs)
    env = Environment.from_dict(ENVIRONMENTS[0])
    base = ScoringBase(runs, pools=pools, roles=("reference",))
    with pytest.raises(ValueError, match="base was built from other"):
        apply_environment(runs.copy(), env, roles=("reference",), pools=pools, base=base)
    with pytest.raises(ValueError, match="base was built from other"):
        apply_environment(runs, env, roles=("reference", "candidate"), pools=pools, base=base)
    with_floor = pd.concat([runs, runs.iloc[:1].assign(role="floor")], ignore_index=True)
    with pytest.raises(ValueError, match="without their floor rows"):
        ScoringBase(with_floor, pools=pools)


def test_simulate_grid_with_its_shared_base_equals_one_environment_at_a_time(runs):
    envs = [Environment.from_dict(e) for e in ENVIRONMENTS[:4]]
    _, together = simulate_grid(runs, envs, n_boot=20)
    for env, result in zip(envs, together):
        _, alone = simulate_grid(runs, [env], n_boot=20)
        # as JSON text: NaN figures are equal there, not in a dict comparison
        assert json.dumps(alone[0].to_dict(), sort_keys=True, default=str) == json.dumps(
            result.to_dict(), sort_keys=True, default=str)
