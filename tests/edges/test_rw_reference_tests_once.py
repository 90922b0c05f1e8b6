"""The simulation builds a run's test table of reference medians once per run context, not twice.

With a reward environment relative to the run (the default screen's duration_filter_q* and uniform_timeout_2x),
facts_part built the run's test table (stats.rewards._test_table, via reference_medians) for the quantile, and
partition_part built the same table again for the scoring base of the reward environments (about 0.05 s at 10^6
rows). Now both read one table per run context (audits.protocol.context.RunContext.reward_tests). Counted here, not timed; and
the audit is the same as through contexts that share nothing (each step on its own context builds its own table),
with and without problems the run cannot measure (whose tests are left out of the shared table's rows).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

import speedaudit
import stats.rewards as rewards
from audits.checks.registered import example_reward_environments
from audits.checks.simulation import combine_parts, fact_columns, facts_part, partition_part, plan_run
from audits.corpus.synthetic import synthesize
from audits.protocol.context import AuditContext
from tests.edges.test_audits_aggregation_unmeasured import with_timed_out_copies


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=6, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=2, seed=2).corpus


@pytest.fixture(scope="module")
def with_unmeasured(corpus):
    return with_timed_out_copies(corpus, ["p0001", "p0003"])


@pytest.fixture()
def builds(monkeypatch):
    calls = []
    original = rewards._test_table

    def counting(runs, pools):
        calls.append(len(runs))
        return original(runs, pools)

    monkeypatch.setattr(rewards, "_test_table", counting)
    return calls


def _simulation(contexts, environments):
    """The simulation's partition steps in memory, facts on contexts[0], the plan on contexts[1], the part on
    contexts[2] (the same object three times: the audit's one shared context)."""
    facts = [facts_part(contexts[0], fact_columns(environments), False)]
    plan = plan_run(contexts[1], facts, environments, environment="quiet", campaign=None, group_sizes=(2, 4, 8, 16),
                    n_bins=10, quality_distribution="uniform", include_incorrect=False)
    audit = combine_parts([partition_part(contexts[2], plan)], plan, thresholds=None, n_boot=30, seed=0)
    return json.dumps(audit.to_dict(), sort_keys=True, default=str)


@pytest.mark.parametrize("which", ["corpus", "with_unmeasured"])
def test_audit_all_builds_the_table_once(request, builds, which):
    data = request.getfixturevalue(which)
    simulation = speedaudit.run_all(data, n_boot=10).results["simulation"]  # every audit, as `audit all`
    relative = [n for n in simulation.diagnostics["reward_environment"] if "_q" in n or n == "uniform_timeout_2x"]
    assert relative  # the default screen holds environments relative to the run: the facts need the medians
    assert len(builds) == 1, builds


@pytest.mark.parametrize("which", ["corpus", "with_unmeasured"])
def test_the_audit_is_that_of_contexts_that_share_nothing(request, builds, which):
    data = request.getfixturevalue(which)
    environments = example_reward_environments()
    one = AuditContext(data)
    shared = _simulation([one, one, one], environments)
    assert len(builds) == 1
    apart = _simulation([AuditContext(data) for _ in range(3)], environments)
    assert len(builds) == 3  # the facts' context and the part's context each build their own
    assert shared == apart


def test_the_shared_rows_of_measured_problems_are_their_own_table(with_unmeasured):
    """What partition_part passes when problems are left out equals the table built from the rows kept alone."""
    context = AuditContext(with_unmeasured)
    summary = context.runs.get(("quiet", "c0"))
    run = context.run(summary)
    dropped = [p for p, _ in summary.unmeasured]
    assert len(dropped) == 2
    keep = ~run.rows["problem"].isin(dropped).to_numpy()
    fresh = rewards.ScoringBase(run.rows.loc[keep], pools=run.pools, roles=("reference",)).tests
    table = run.reward_tests
    shared = table.loc[~table["problem"].isin(dropped).to_numpy()].reset_index(drop=True)
    pd.testing.assert_frame_equal(shared, fresh)
