"""The aggregation audit on Dask (a real LocalCluster on loopback) equals the in-memory audit of the same dataset."""

from __future__ import annotations

import json
import numpy as np
import pytest

from test_partitioned import _close  # the recursive JSON comparison (1e-12) of the discriminability test

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned import run_partitioned_aggregation
from tests.audits.conftest import audit_all_dask

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

N_BOOT = 60


def _corpus():
    corpus = synthesize(n_problems=9, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                        n_candidates=2, n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                        seed=21).corpus
    # names are data: a problem name with a slash and an '=' is never put in a path
    corpus["problem"] = corpus["problem"].cat.rename_categories(lambda n: "a/b=1" if n == "p0003" else n)
    env, camp = corpus["environment"].astype(str), corpus["campaign"].astype(str)
    problem, repeat = corpus["problem"].astype(str), corpus["repeat"]
    # run busy · c1 keeps one repeat: the audit says n/a for it, on both paths
    drop = (env == "busy") & (camp == "c1") & (repeat > 0)
    # two problems of quiet · c0 lack the run's smallest repeat: a partition holding only them must still take its
    # quartiles from repeat 0 (the run's), not from its own smallest repeat
    drop |= (env == "quiet") & (camp == "c0") & problem.isin(["p0001", "p0002"]) & (repeat == 0) & \
        (corpus["role"].astype(str) != "floor")
    return corpus.loc[~drop.to_numpy()].reset_index(drop=True)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return save_dataset(_corpus(), tmp_path_factory.mktemp("ds") / "d", problems_per_partition=2)


@pytest.fixture(scope="module")
def memory(dataset):
    return run_aggregation_audit(dataset.load(), n_boot=N_BOOT).to_dict()


def test_aggregation_on_dask_equals_in_memory(dataset, client, memory):
    dask = run_partitioned_aggregation(dataset, client=client, n_boot=N_BOOT).to_dict()
    assert _close(dask, memory) == []
    # the comparison is not trivial: three runs compared, one n/a, rank-identical aggregators found
    assert sum(len(c) for c in memory["environments"].values()) == 3
    assert [f["level"] for f in memory["findings"] if f["metric"] == "repeats"] == ["n/a"]
    assert memory["aggregators"]["log_ratio"]["same_as"] == "geo_ratio"
    quiet = memory["environments"]["quiet"]["c0"]
    assert quiet["quartile_repeat"] == 0 and quiet["n_problems"] == 9


def test_shuffled_rows_one_problem_per_partition_give_the_same_audit(dataset, client, memory, tmp_path):
    """The same rows in another row order, one problem per partition (p0001 and p0002 alone lack repeat 0)."""
    corpus = dataset.load()
    shuffled = corpus.iloc[np.random.default_rng(3).permutation(len(corpus))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=1)
    assert other.n_partitions > dataset.n_partitions
    dask = run_partitioned_aggregation(other, client=client, n_boot=N_BOOT).to_dict()
    assert _close(dask, memory) == []


def test_selection_names_floor_and_thresholds(dataset, client):
    options = dict(environment="quiet", names=["mean_pct", "floor_pct", "loss_rate", "total_pct"], floor_s=0.05,
                   seed=7, thresholds={"stability.warn": 1.0})
    memory = run_aggregation_audit(dataset.load(), n_boot=N_BOOT, **options).to_dict()
    dask = run_partitioned_aggregation(dataset, client=client, n_boot=N_BOOT, **options).to_dict()
    assert _close(dask, memory) == []
    assert set(memory["environments"]) == {"quiet"} and set(memory["aggregators"]) == set(options["names"])


def test_a_changed_figure_is_caught(dataset, client, memory):
    """The comparison can fail: another seed moves the bootstrap bounds."""
    dask = run_partitioned_aggregation(dataset, client=client, n_boot=N_BOOT, seed=1).to_dict()
    assert any("stability_low" in d for d in _close(dask, memory))


def test_audit_all_dask_cli_has_the_aggregation_audit(dataset, client, memory, tmp_path):
    """`speedaudit audit all DATASET --scheduler ADDRESS` (a subprocess on the session's real LocalCluster): its
    aggregation part is the in-memory audit's JSON, and it is no longer among the skipped audits."""
    proc, whole = audit_all_dask(dataset.path, tmp_path, "--n-boot", str(N_BOOT), scheduler=client.scheduler.address)
    assert _close(whole["aggregation"], json.loads(json.dumps(memory))) == []
    assert "aggregation" not in whole["skipped"] and "Traceback" not in proc.stderr


def test_values_of_disjoint_problem_sets_combine_to_the_comparison(dataset):
    """Without Dask: the per-problem values of two interleaved halves of the problems, concatenated in the wrong
    order, give compare_aggregators' comparison (nothing in a problem's values depends on another problem)."""
    from audits.protocol.findings import to_jsonable
    from stats.aggregation import (AGGREGATORS, AggregatorProblemValues, aggregator_problem_values,
                                   combine_aggregator_values, compare_aggregators, floor_from_rows,
                                   floors_by_language)
    from stats.ranking import reference_pools

    corpus = dataset.load()
    run = corpus.loc[((corpus["environment"] == "busy") & (corpus["campaign"] == "c0")).to_numpy()]
    whole = compare_aggregators(run, n_boot=N_BOOT)
    floor = floors_by_language(run) or floor_from_rows(run) or 0.0
    rows = run.loc[(run["role"] != "floor").to_numpy()]
    problems = sorted(rows["problem"].astype(str).unique())
    parts = []
    for chunk in (problems[1::2], problems[::2]):
        sub = rows.loc[rows["problem"].astype(str).isin(chunk).to_numpy()]
        parts.append(aggregator_problem_values(sub, names=list(AGGREGATORS), pools=reference_pools(sub),
                                               floor_s=floor, quartile_repeat=0))
    combined = combine_aggregator_values(AggregatorProblemValues.concat(parts), n_repeats=3, quartile_repeat=0,
                                         n_boot=N_BOOT)
    assert _close(to_jsonable(combined.to_dict()), to_jsonable(whole.to_dict())) == []
    assert list(AggregatorProblemValues.concat(parts).problems) == problems
