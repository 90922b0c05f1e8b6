"""Problems a run cannot measure leave every figure of the simulation audit unchanged, as in the other audits.

Found on a corpus plus timed-out copies of three of its problems (every reference execution at its limit:
``stats.coverage`` calls them not measured). The reliability, discriminability and aggregation audits leave such
problems out, and the ``unmeasured_problems`` finding every audit adds says "every estimator of this run leaves
them out"; the simulation did not: each copy's rollouts were all paid alike, so every reward environment's AUC,
monotonicity, diagonal deviation and dead-group rate moved (top30's AUC from fail 0.96 to warn 0.88), and a
campaign whose every execution timed out was judged "fail: sparse, non-monotone, dead groups" instead of n/a.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from audits.checks.registered import EXAMPLE_REWARD_ENVIRONMENTS
from audits.checks.reward_environments import RewardEnvironment, load_reward_environments
from audits.checks.simulation import run_simulation_audit
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned import run_partitioned_simulation
from audits.engine.whole_audit import run_audits
from tests.edges.test_audits_aggregation_unmeasured import COPIED, with_timed_out_copies

N_BOOT = 20


def _environments():
    """The shipped examples (relative duration filters among them) and a multitask reward (a seeded coin per rollout,
    whose stream position of each problem depends on the problems before it)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "fixtures" / "environments"
    shipped = load_reward_environments([root / f"{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS])
    multitask = RewardEnvironment.from_dict({"name": "mt", "post": {"tau": 30}, "reward": {"scheme": "multitask"}})
    return [*shipped, multitask]


def figures(audit) -> dict:
    """Every figure of the audit's JSON but its run (whose problem count and unmeasured list name the copies) and
    the finding that names the copies."""
    out = json.loads(json.dumps(audit.to_dict()))
    out.pop("run")
    out["findings"] = [f for f in out["findings"] if f["metric"] != "unmeasured_problems"]
    return out


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5).corpus


@pytest.fixture(scope="module")
def base(corpus):
    return run_simulation_audit(corpus, reward_environments=_environments(), n_boot=N_BOOT)


@pytest.mark.parametrize("everything", [False, True], ids=["references-timed-out", "everything-timed-out"])
def test_timed_out_problems_change_no_figure(corpus, base, everything):
    planted = with_timed_out_copies(corpus, COPIED, everything=everything)
    audit = run_simulation_audit(planted, reward_environments=_environments(), n_boot=N_BOOT)
    named = [f for f in audit.findings if f.metric == "unmeasured_problems"]
    assert len(named) == 1 and "3 of 11 problems" in named[0].reason
    assert figures(audit) == figures(base)
    # the figures compared are real ones: judged diagnostics with bootstrap intervals
    assert {f.level for f in base.findings} - {"n/a"} and np.isfinite(base.diagnostics["auc"]).all()


def test_a_run_with_no_measured_problem_is_not_judged(corpus):
    planted = with_timed_out_copies(corpus, COPIED, everything=True)
    only = planted.loc[(planted["problem"].astype(str).str.contains("timed out")
                        | (planted["role"].astype(str) == "floor")).to_numpy()].reset_index(drop=True)
    audit = run_audits(only, ["simulation"]).results["simulation"]
    judged = [(f.subject, f.metric, f.level) for f in audit.findings if f.level != "n/a"]
    assert judged == []
    verdicts = [f for f in audit.findings if f.metric == "verdict"]
    assert len(verdicts) == len(_environments()) - 1  # the shipped examples, one verdict each (mt is not shipped)
    assert all("all 3 problems of the run are not measured" in f.reason for f in verdicts)


def test_dask_leaves_them_out_too(corpus, base, tmp_path):
    import dask
    from distributed import Client, LocalCluster

    from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG

    planted = with_timed_out_copies(corpus, COPIED)
    dataset = save_dataset(planted, tmp_path / "d", problems_per_partition=1)  # a partition of one copy only
    with dask.config.set(LOCAL_CLUSTER_CONFIG), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                         dashboard_address=None) as cluster, Client(cluster) as client:
        on_dask = run_partitioned_simulation(dataset, client=client, reward_environments=_environments(),
                                             n_boot=N_BOOT)
    assert figures(on_dask) == figures(base)
