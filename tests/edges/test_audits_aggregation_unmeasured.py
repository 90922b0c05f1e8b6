"""Problems a run cannot measure leave every figure of the aggregation audit unchanged.

Found on a corpus plus copies of three of its problems whose every reference execution timed out (a
``--timeout`` below their limit; audits.corpus.coverage calls them not measured): each copy's references scored
100 in every repeat, so each added a stability of 0 and a dynamic range of 0 to every aggregator's means, one
problem to ``n_problems`` and a column to the bootstrap over problems. mean_pct's stability fell from 14.3 to
10.4 points with three such copies beside eight problems, and the ``same_as`` of rank-identical aggregators
changed (on one optimization test per problem heavy_half_pct was no longer ``same_as`` mean_pct). A run whose
every problem timed out was judged ``warn`` "only 0 problems" once they were left out. The Dask path reads the
same per-problem values, so it must leave them out too (one partition holds only a timed-out copy).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned import run_partitioned_aggregation
from audits.protocol.findings import NA

N_BOOT = 40
COPIED = ["p0001", "p0003", "p0006"]


def with_timed_out_copies(corpus: pd.DataFrame, problems, *, everything: bool = False) -> pd.DataFrame:
    """``corpus`` plus a copy of each of ``problems`` (named with odd characters) whose every reference execution
    timed out at its limit (``everything``: every execution of the copy), categories re-sorted as a load does."""
    copy = corpus.loc[corpus["problem"].astype(str).isin(problems).to_numpy()
                      & (corpus["role"].astype(str) != "floor").to_numpy()].copy()
    out = pd.concat([corpus.astype({c: object for c in corpus.columns
                                    if isinstance(corpus[c].dtype, pd.CategoricalDtype)}),
                     copy.astype({c: object for c in copy.columns if isinstance(copy[c].dtype, pd.CategoricalDtype)})],
                    ignore_index=True)
    new = np.arange(len(out)) >= len(corpus)
    out.loc[new, "problem"] = [f"{p} · timed out/=é" for p in out.loc[new, "problem"]]
    hit = new & ((out["role"] == "reference").to_numpy() | everything)
    out.loc[hit, "status"] = "timeout"
    out.loc[hit, "duration_s"] = out.loc[hit, "timeout_s"]
    for c in corpus.columns:
        if isinstance(corpus[c].dtype, pd.CategoricalDtype):
            out[c] = pd.Categorical(out[c], categories=sorted(set(out[c].dropna())))
    return out


def figures(audit) -> dict:
    """Every figure of the audit's JSON but its run table (whose problem counts and unmeasured lists name the
    copies) and the finding that names the copies."""
    out = audit.to_dict()
    out.pop("runs")
    out["findings"] = [f for f in out["findings"] if f["metric"] != "unmeasured_problems"]
    return json.loads(json.dumps(out))


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5).corpus


@pytest.fixture(scope="module")
def base(corpus):
    return run_aggregation_audit(corpus, n_boot=N_BOOT)


@pytest.mark.parametrize("everything", [False, True], ids=["references-timed-out", "everything-timed-out"])
def test_timed_out_problems_change_no_figure(corpus, base, everything):
    planted = with_timed_out_copies(corpus, COPIED, everything=everything)
    audit = run_aggregation_audit(planted, n_boot=N_BOOT)
    named = [f for f in audit.findings if f.metric == "unmeasured_problems"]
    assert len(named) == 1 and named[0].level == NA and "3 of 11 problems" in named[0].reason
    assert figures(audit) == figures(base)
    assert audit.comparison().n_problems == 8
    assert sorted(audit.comparison().per_problem["problem"].unique()) == sorted(corpus.loc[corpus["role"] != "floor", "problem"].astype(str).unique())
    # the figures compared are real ones: a judged stability and a bootstrap interval
    assert np.isfinite(base.table["stability_low"]).all() and base.table["stability"].min() > 1


def test_rank_identical_aggregators_stay_so():
    """On one optimization test per problem many aggregators rank alike; the copies' units must not split them."""
    corpus = synthesize(n_problems=6, n_tests=1, n_repeats=3, noise_cv=0.2, seed=5).corpus
    base = run_aggregation_audit(corpus, n_boot=N_BOOT)
    audit = run_aggregation_audit(with_timed_out_copies(corpus, ["p0000", "p0001"]), n_boot=N_BOOT)
    assert base.table["same_as"].notna().sum() >= 10
    assert audit.table["same_as"].tolist() == base.table["same_as"].tolist()
    assert figures(audit) == figures(base)


def test_a_run_whose_every_problem_timed_out_is_not_judged(corpus):
    planted = with_timed_out_copies(corpus, ["p0000", "p0001", "p0002"])
    planted = planted.loc[(planted["problem"].astype(str).str.contains("timed out")
                           | (planted["role"].astype(str) == "floor")).to_numpy()].reset_index(drop=True)
    audit = run_aggregation_audit(planted, n_boot=N_BOOT)
    levels = {f.metric: f.level for f in audit.findings}
    assert set(levels.values()) == {NA}, levels
    assert {"unmeasured_problems", "n_problems", "recommended_aggregator"} <= set(levels)


@pytest.fixture(scope="module")
def client():
    """A real Dask cluster on loopback, its workers threads of this process (quick to start)."""
    import dask
    from distributed import Client, LocalCluster

    from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG

    with dask.config.set(LOCAL_CLUSTER_CONFIG), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                         dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


def test_dask_leaves_them_out_too(corpus, base, client, tmp_path):
    planted = with_timed_out_copies(corpus, COPIED)
    dataset = save_dataset(planted, tmp_path / "d", problems_per_partition=1)  # a partition of one copy only
    memory = run_aggregation_audit(dataset.load(), n_boot=N_BOOT)
    dask = run_partitioned_aggregation(dataset, client=client, n_boot=N_BOOT)
    assert json.loads(json.dumps(dask.to_dict())) == json.loads(json.dumps(memory.to_dict()))
    assert figures(dask) == figures(base)
