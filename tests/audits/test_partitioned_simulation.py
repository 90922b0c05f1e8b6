"""The reward simulation audit on Dask (a real LocalCluster on loopback) equals the in-memory audit of the dataset."""

from __future__ import annotations

import json
import numpy as np
import pandas as pd
import pytest

from test_partitioned import _close  # the recursive JSON comparison (1e-12) of the discriminability test

from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import to_jsonable
from audits.engine.partitioned import run_partitioned_simulation
from audits.checks.simulation import run_simulation_audit
from audits.engine.whole_audit import _example_reward_environments
from stats.rewards import RewardEnvironment
from tests.audits.conftest import audit_all_dask

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

N_BOOT = 40


def _reward_environments():
    """The shipped examples (filters, limits, input length) and the schemes a partition could get wrong: a
    continuous reward (many distinct values), a seeded coin per rollout (multitask), an aggregator that reads the
    run's floor rows (floor_pct), a reward drawn from the noise model (noise_gate: each problem its own stream)."""
    extra = [{"name": "graded", "post": {"tau": 30}, "reward": {"scheme": "two_gate_graded"}},
             {"name": "coin", "post": {"tau": 30}, "reward": {"scheme": "multitask", "p_correctness": 0.4, "seed": 3}},
             {"name": "floor30", "post": {"aggregator": "floor_pct", "tau": 30}},
             {"name": "gate_p", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}}]
    return list(_example_reward_environments()) + [RewardEnvironment.from_dict(e) for e in extra]


def _corpus():
    corpus = synthesize(n_problems=11, n_tests=4, n_correctness_tests=1, n_solutions=9, n_incorrect=1,
                        n_candidates=2, n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                        seed=23).corpus
    corpus["problem"] = corpus["problem"].cat.rename_categories(lambda n: "a/b=1" if n == "p0003" else n)
    problem = corpus["problem"].astype(str)
    # input sizes known for some problems only: a partition without any still filters as the whole run does
    corpus.loc[problem.isin(["p0004", "p0005", "p0006", "p0007"]).to_numpy(), "input_bytes"] = np.nan
    # a problem of every run lacks repeat 1: the repeat pairs are the run's, not the partition's
    drop = (problem == "p0008") & (corpus["repeat"] == 1) & (corpus["role"].astype(str) != "floor")
    return corpus.loc[~drop.to_numpy()].reset_index(drop=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return save_dataset(_corpus(), tmp_path_factory.mktemp("ds") / "d", problems_per_partition=2)


@pytest.fixture(scope="module")
def loaded(dataset):
    return dataset.load()


@pytest.fixture(scope="module")
def quiet_memory(loaded):
    """The in-memory audit of the quiet environment (its default campaign), with every reward environment of
    _reward_environments(): computed once for the two tests that compare a Dask audit with it."""
    return run_simulation_audit(loaded, environment="quiet", reward_environments=_reward_environments(),
                                n_boot=N_BOOT).to_dict()


def _both(dataset, client, loaded, **options):
    options = {"reward_environments": _reward_environments(), "n_boot": N_BOOT, **options}
    memory = run_simulation_audit(loaded, **options).to_dict()
    dask = run_partitioned_simulation(dataset, client=client, **options).to_dict()
    return memory, dask


def test_simulation_on_dask_equals_in_memory(dataset, client, quiet_memory):
    memory = quiet_memory
    dask = run_partitioned_simulation(dataset, client=client, environment="quiet",
                                      reward_environments=_reward_environments(), n_boot=N_BOOT).to_dict()
    assert _close(dask, memory) == []
    assert len(memory["ranking"]) == 11 and memory["left_out"] == []
    assert memory["campaign"] == "c0"
    # the coin is a draw per rollout, not a function of q: the seed matters (the comparison can fail)
    other = run_partitioned_simulation(dataset, client=client, environment="quiet", n_boot=N_BOOT,
                                       reward_environments=[RewardEnvironment.from_dict(
                                           {"name": "coin", "post": {"tau": 30},
                                            "reward": {"scheme": "multitask", "p_correctness": 0.4, "seed": 4}})])
    assert _close(other.to_dict()["reward_environments"]["coin"], memory["reward_environments"]["coin"]) != []


def test_another_run_incorrect_rollouts_and_options(dataset, client, loaded):
    memory, dask = _both(dataset, client, loaded, environment="busy", campaign="c1", include_incorrect=True,
                         group_sizes=(3, 5), n_bins=7, quality_distribution=("beta", 1, 3), seed=5,
                         thresholds={"auc_sparse.fail": 0.1})
    assert _close(dask, memory) == []
    assert memory["include_incorrect"] and memory["run"]["campaign"] == "c1"


def test_shuffled_rows_one_problem_per_partition_give_the_same_audit(dataset, client, loaded, quiet_memory,
                                                                     tmp_path):
    shuffled = loaded.iloc[np.random.default_rng(5).permutation(len(loaded))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=1)
    assert other.n_partitions > dataset.n_partitions
    dask = run_partitioned_simulation(other, client=client, environment="quiet",
                                      reward_environments=_reward_environments(), n_boot=N_BOOT).to_dict()
    assert _close(dask, quiet_memory) == []


def test_a_column_no_row_holds_leaves_the_environment_out_on_both_paths(client, loaded, tmp_path):
    corpus = loaded.copy()
    corpus["input_bytes"] = np.nan
    ds = save_dataset(corpus, tmp_path / "no_sizes", problems_per_partition=3)
    memory = run_simulation_audit(ds.load(), environment="quiet", reward_environments=_reward_environments(),
                                  n_boot=N_BOOT).to_dict()
    dask = run_partitioned_simulation(ds, client=client, environment="quiet", reward_environments=_reward_environments(),
                                      n_boot=N_BOOT).to_dict()
    assert _close(dask, memory) == []
    assert [r["reward_environment"] for r in memory["left_out"]] == ["length_filter_1k"]


def test_several_environments_need_a_choice_on_both_paths(dataset, client, loaded):
    from audits.corpus.runs import RunError

    with pytest.raises(RunError, match="several environments"):
        run_simulation_audit(loaded, reward_environments=_reward_environments())
    with pytest.raises(RunError, match="several environments"):
        run_partitioned_simulation(dataset, client=client, reward_environments=_reward_environments())


def test_parts_of_disjoint_problem_sets_combine_to_simulate(loaded):
    """Without Dask: simulate_problems on two interleaved halves of the problems (each with the run's floor rows),
    concatenated in the wrong order, gives simulate()'s result; the coin too, with nothing from the whole run (each
    rollout's coin is keyed by its own data), while another seed draws other coins."""
    from stats.rewards import base_percentiles
    from stats.simulator import _pools, combine_simulation, repeat_quality, simulate, simulate_problems

    run = loaded.loc[((loaded["environment"] == "quiet") & (loaded["campaign"] == "c1")).to_numpy()]
    floor = run.loc[(run["role"] == "floor").to_numpy()]
    rows = run.loc[(run["role"] != "floor").to_numpy()]
    problems = sorted(rows["problem"].astype(str).unique())
    repeats = np.array([0, 1, 2])
    # by name: appending gate_p to _reward_environments() had shifted a [-3:] from graded, coin, floor30 to coin,
    # floor30, gate_p (3136d48), leaving graded's continuous reward out
    for env in [e for e in _reward_environments() if e.name in ("graded", "coin", "floor30", "gate_p")]:
        whole = simulate(run, env, n_boot=N_BOOT)
        parts = []
        for chunk in (problems[1::2], problems[::2]):
            sub = pd.concat([rows.loc[rows["problem"].astype(str).isin(chunk).to_numpy()], floor])
            pools = _pools(sub)
            parts.append(simulate_problems(sub, env, repeats=repeats, quality=repeat_quality(sub, pools=pools),
                                           pools=pools, percentiles=base_percentiles(sub, pools=pools,
                                                                                     roles=("reference",))))
        combined = combine_simulation(parts, env, group_sizes=(2, 4, 8, 16), headline_group_size=16, n_boot=N_BOOT)
        assert _close(to_jsonable(combined.to_dict()), to_jsonable(whole.to_dict())) == [], env.name
        if env.name == "coin":  # the seed decides the coins (the comparison above can fail)
            import dataclasses

            reseeded = dataclasses.replace(env, reward=dataclasses.replace(env.reward, seed=env.reward.seed + 1))
            other = simulate(run, reseeded, n_boot=N_BOOT)
            assert _close(to_jsonable(other.to_dict())["diagnostics"], to_jsonable(whole.to_dict())["diagnostics"]) != []


def test_audit_all_dask_cli_has_the_simulation_audit(dataset, client, loaded, tmp_path):
    """`speedaudit audit all DATASET --scheduler ADDRESS --simulation-environment quiet` (a subprocess on the
    session's real LocalCluster): its simulation part is the in-memory whole audit's (the shipped example reward
    environments, n_boot 200)."""
    proc, whole = audit_all_dask(dataset.path, tmp_path, "--n-boot", "30", "--simulation-environment", "quiet",
                                 scheduler=client.scheduler.address)
    memory = run_simulation_audit(loaded, environment="quiet", reward_environments=_example_reward_environments())
    assert _close(whole["simulation"], json.loads(json.dumps(memory.to_dict()))) == []
    # every audit is on Dask, none skipped; without a named pair both paths calibrate the same default pairs
    from audits.engine.whole_audit import run_whole_audit

    from audits.protocol import registry

    on_dask = [n for n in registry.names() if registry.get(n).dask is None]  # the others declare why not
    memory_whole = run_whole_audit(loaded, audits=on_dask, n_boot=0, simulation_n_boot=0,
                                   simulation_run=("quiet", None)).to_dict()
    # none skipped but the audits the Dask engine does not run (each with its declared reason)
    assert memory_whole["skipped"] == {}
    assert set(whole["skipped"]) == {n for n in registry.names() if registry.get(n).dask is not None}
    assert all(registry.get(n).dask in why for n, why in whole["skipped"].items())
    chosen = [[(c["source"], c["target"], c["pair_rule"]) for c in w["calibration"]] for w in (whole, memory_whole)]
    assert chosen[0] == chosen[1] and {rule for *_, rule in chosen[0]} == {"vs-quietest"}
    assert "Traceback" not in proc.stderr
