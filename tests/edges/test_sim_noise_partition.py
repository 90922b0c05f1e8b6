"""A problem's noise-aware reward depends on its own rows only: partitions of problems give the in-memory audit.

The noise_aware reward's E[q] came from a noise model fitted on every problem of the table it was given, and a
test without a variance estimate borrowed the whole table's (docs/noise.md: test, then problem, then run). A
problem with no cell of two ok repeats (every execution of it timed out in two of the run's three repeats) got an E[q] that depended on which other problems shared
its table: the whole run in memory, two problems in a Dask partition (E[q] 0.484 vs 0.4805 for the same rollout),
itself alone (NaN). The noise_gate reward fitted each problem alone already, so the two rewards disagreed on the
same problem too. Now both fit every problem from its own rows (fit_noise(widest="problem")).

Checked with the audit's own partition steps (facts_part, plan_run, partition_part, combine_parts: what the Dask
engine runs on each partition) over partitions of two problems, against one partition holding the whole run.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audits.checks.simulation import combine_parts, fact_columns, facts_part, partition_part, plan_run
from audits.corpus.synthetic import synthesize
from audits.protocol.context import AuditContext
from audits.protocol.findings import to_jsonable
from stats.noise import fit_noise
from stats.ranking import STATUSES
from stats.rewards import RewardEnvironment, apply_environment

ENVIRONMENTS = [RewardEnvironment.from_dict(spec) for spec in (
    {"name": "noise_aware", "post": {"tau": 30}, "reward": {"scheme": "noise_aware"}},
    {"name": "noise_gate", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}},
)]
ONE_REPEAT = "p0001"


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=6, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=0, seed=2).corpus
    whole = whole[whole["environment"] == "quiet"]
    problem = whole["problem"].astype(str)
    # one problem whose every execution timed out in repeats 1 and 2 (a loaded machine): no cell of it has two
    # ok repeats, yet its repeat-0 rewards are paired with the qualities of repeat 2
    late = ((problem == ONE_REPEAT) & (whole["repeat"] > 0) & (whole["role"].astype(str) != "floor")).to_numpy()
    whole = whole.reset_index(drop=True)
    whole["status"] = whole["status"].astype(object)
    whole.loc[late, "status"] = "timeout"
    whole["status"] = whole["status"].astype(pd.CategoricalDtype(list(STATUSES)))
    return whole


def _audit(corpus, groups):
    """The audit through its partition steps, one partition per group of problems."""
    problem = corpus["problem"].astype(str)
    floor = corpus["role"].astype(str) == "floor"
    parts = [AuditContext(corpus.loc[(problem.isin(g) | floor).to_numpy()].reset_index(drop=True)) for g in groups]
    columns = fact_columns(ENVIRONMENTS)
    whole = AuditContext(corpus)
    plan = plan_run(whole, [facts_part(p, columns, False) for p in parts], ENVIRONMENTS, environment="quiet",
                    campaign=None, group_sizes=(2, 4, 8, 16), n_bins=10, quality_distribution="uniform",
                    include_incorrect=False)
    return to_jsonable(combine_parts([partition_part(p, plan) for p in parts], plan, thresholds=None, n_boot=30,
                                     seed=0).to_dict())


def test_partitions_of_problems_give_the_in_memory_audit(corpus):
    names = sorted(corpus.loc[corpus["role"].astype(str) != "floor", "problem"].astype(str).unique())
    whole = _audit(corpus, [names])
    paired = _audit(corpus, [names[i:i + 2] for i in range(0, len(names), 2)])
    assert json.dumps(whole, sort_keys=True) == json.dumps(paired, sort_keys=True)


def test_a_problem_reward_is_a_function_of_its_own_rows(corpus):
    env = ENVIRONMENTS[0]
    problem = corpus["problem"].astype(str)
    runs = corpus[(corpus["role"].astype(str) != "floor").to_numpy()]
    mine = (runs["problem"].astype(str) == ONE_REPEAT).to_numpy()
    tables = [runs, runs[(problem[runs.index].isin([ONE_REPEAT, "p0002"])).to_numpy()], runs[mine]]
    values = []
    for table in tables:
        scores = apply_environment(table, env).scores
        values.append(scores.loc[scores["problem"].astype(str) == ONE_REPEAT, "q_expected"].to_numpy())
    for other in values[1:]:
        np.testing.assert_array_equal(values[0], other)
    # and it is what the problem's own noise model says: no cell of it has two ok repeats, so no variance
    alone = fit_noise(runs[mine])
    assert not np.isfinite(alone.cells["pooled_var"].to_numpy(dtype=float)).any()
    passed = scores["c"].to_numpy(dtype=bool)  # the correct references' repeat-0 executions, all ok
    assert passed.any() and np.isnan(values[0][passed]).all()
