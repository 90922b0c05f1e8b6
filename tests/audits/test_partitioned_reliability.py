"""The reliability audit on Dask (a real LocalCluster on loopback) equals the in-memory audit of the same
dataset, every JSON figure to 1e-12, and no task reads more than one partition."""

from __future__ import annotations

import collections
import json

import numpy as np
import pandas as pd
import pytest

from audits.checks.clocks import CONTENTION_MIN_CPU_S
from audits.corpus.dataset import CorpusDataset, open_dataset, save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned import run_partitioned_reliability
from audits.checks.reliability import run_reliability_audit
from tests.audits.test_partitioned import _close
from tests.audits.conftest import audit_all_dask

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

N_BOOT = 60


def _corpus(seed: int, clocks: bool = True, **extra):
    corpus = synthesize(n_problems=9, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                        n_candidates=2, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                        seed=seed, **extra).corpus
    # names are data: a problem name with a slash and an '=' is never put in a path
    corpus["problem"] = corpus["problem"].cat.rename_categories(lambda n: "a/b=1" if n == "p0003" else n)
    if clocks:  # CPU time (some executions multi-threaded: wall/CPU < 1) and a load average with ties
        rng = np.random.default_rng(seed)
        corpus["cpu_s"] = corpus["duration_s"].to_numpy() / rng.uniform(0.8, 2.5, len(corpus))
        corpus["load_1m"] = np.round(rng.gamma(2.0, 1.0, len(corpus)), 1)
    return corpus


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return save_dataset(_corpus(21, n_repeats=3), tmp_path_factory.mktemp("ds") / "d", problems_per_partition=2)


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    """Nested repeats (pyperf-like): 3 processes x 2 values per cell, the process in the ``run`` column."""
    corpus = _corpus(5, clocks=False, n_repeats=6)  # and no cpu_s: contention is n/a
    corpus["run"] = corpus["repeat"].to_numpy() // 2
    return save_dataset(corpus, tmp_path_factory.mktemp("nested") / "d", problems_per_partition=3)


def _json(audit) -> dict:
    return json.loads(json.dumps(audit.to_dict()))


# Each audit below is computed once for the tests that compare with it (they only read the JSON).
@pytest.fixture(scope="module")
def memory(dataset):
    """The in-memory audit of ``dataset`` (n_boot N_BOOT, every run)."""
    return _json(run_reliability_audit(dataset.load(), n_boot=N_BOOT))


@pytest.fixture(scope="module")
def on_dask(dataset, client):
    """The Dask audit of ``dataset`` with the same options."""
    return _json(run_partitioned_reliability(dataset, client=client, n_boot=N_BOOT))


@pytest.fixture(scope="module")
def nested_memory(nested):
    return _json(run_reliability_audit(nested.load(), n_boot=N_BOOT))


@pytest.fixture(scope="module")
def nested_dask(nested, client):
    return _json(run_partitioned_reliability(nested, client=client, n_boot=N_BOOT))


def test_reliability_on_dask_equals_in_memory(memory, on_dask):
    dask = on_dask
    assert _close(dask, memory) == []
    assert len(memory["runs"]) == 4  # two environments x two campaigns, each on its own
    # the figures are measured (not all NaN), so the equality says something
    run = memory["runs"][0]
    for figure in ("median_repeat_cv", "mean_rank_sd", "icc", "significant_share"):
        assert isinstance(run[figure], float), figure
    assert isinstance(run["variance_components"]["components"]["test:solution"]["variance"], float)
    assert run["significance"]["n_tested"] > 10


def test_nested_repeats_on_dask_equal_in_memory(nested_memory, nested_dask):
    memory, dask = nested_memory, nested_dask
    assert _close(dask, memory) == []
    components = memory["runs"][0]["variance_components"]["components"]
    assert {"run", "repeat"} <= set(components) and isinstance(components["run"]["variance"], float)
    assert memory["runs"][0]["n_repeats"] == 3  # processes, not values


def test_significance_sample_under_max_pairs_is_the_same(dataset, client):
    """With fewer pairs allowed than exist, the seeded sample of pairs is drawn from the same enumeration."""
    memory = _json(run_reliability_audit(dataset.load(), n_boot=N_BOOT, max_pairs=25, environment="busy"))
    dask = _json(run_partitioned_reliability(dataset, client=client, n_boot=N_BOOT, max_pairs=25,
                                             environment="busy"))
    assert _close(dask, memory) == []
    assert {r["environment"] for r in memory["runs"]} == {"busy"}
    assert all(r["significance"]["n_tested"] <= 25 < r["significance"]["n_pairs"] for r in memory["runs"])


def test_shuffled_partitions_give_the_same_audit(dataset, client, on_dask, tmp_path):
    """The same rows written in another row order and another grouping of problems: same JSON."""
    corpus = dataset.load()
    shuffled = corpus.iloc[np.random.default_rng(3).permutation(len(corpus))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=4)
    a = _json(run_partitioned_reliability(other, client=client, n_boot=N_BOOT))
    b = on_dask
    assert _close(a, b) == []


def _read_counter():
    """``(install, collect)`` to run on every worker (``client.run``): install wraps
    CorpusDataset.read_partition there to log (task key, partition) and makes CorpusDataset.load raise;
    collect restores both and returns the log. Nested functions, so that they are pickled by value."""

    def install():
        import audits.corpus.dataset as d
        from distributed import get_worker

        if not hasattr(d, "_original_read"):
            d._original_read, d._original_load = d.CorpusDataset.read_partition, d.CorpusDataset.load
        d._read_log = []

        def read_partition(self, index, **kw):
            d._read_log.append((str(get_worker().get_current_task()), index))
            return d._original_read(self, index, **kw)

        def load(self):
            raise AssertionError("a worker loaded the whole dataset")

        d.CorpusDataset.read_partition, d.CorpusDataset.load = read_partition, load

    def collect():
        import audits.corpus.dataset as d

        log = d._read_log
        d.CorpusDataset.read_partition, d.CorpusDataset.load = d._original_read, d._original_load
        return log

    return install, collect


def _reads_of(client, monkeypatch, audit) -> list:
    """Run ``audit()`` with the reads counted on the workers and none allowed on the client (this process):
    the ``(task key, partition)`` of every read."""
    install, collect = _read_counter()
    client.run(install)

    def refuse(*args, **kwargs):
        raise AssertionError("the client read executions")

    monkeypatch.setattr(CorpusDataset, "load", refuse)
    monkeypatch.setattr(CorpusDataset, "read_partition", refuse)
    try:
        audit()
    finally:
        logs = client.run(collect)
        monkeypatch.undo()
    return [entry for log in logs.values() for entry in log]


def _assert_one_partition_per_task(client, monkeypatch, dataset, audit) -> None:
    """Every task of ``audit()`` read exactly one partition, every partition was read, the client none."""
    reads = _reads_of(client, monkeypatch, audit)
    per_task = collections.defaultdict(list)
    for task, index in reads:
        per_task[task].append(index)
    assert per_task and all(len(indices) == 1 for indices in per_task.values())
    assert set(index for _, index in reads) == set(range(dataset.n_partitions)) and dataset.n_partitions >= 4


def test_every_task_reads_one_partition_and_nothing_loads_the_dataset(dataset, client, monkeypatch):
    """Each task on the workers reads exactly one partition (counted in the worker processes by wrapping
    CorpusDataset.read_partition there), every partition is read, no worker loads the whole dataset
    (CorpusDataset.load raises there) and the client reads no partition at all (both raise here)."""
    _assert_one_partition_per_task(client, monkeypatch, dataset, lambda: run_partitioned_reliability(
        open_dataset(dataset.path), client=client, n_boot=N_BOOT))


def test_audit_all_on_a_dataset_with_dask_cli_runs_reliability(dataset, client, memory, tmp_path):
    """`speedaudit audit all DATASET --scheduler ADDRESS` (a subprocess on the session's real LocalCluster): its
    reliability part equals the in-memory audit and reliability is no longer listed as skipped."""
    proc, whole = audit_all_dask(dataset.path, tmp_path, "--n-boot", str(N_BOOT), scheduler=client.scheduler.address)
    assert _close(whole["reliability"], memory) == []
    assert "reliability" not in whole["skipped"] and "Reliability audit" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_contention_is_the_exact_median_over_all_executions(dataset, client, memory):
    """The contention figures (order statistics over every execution of a run) on Dask equal the in-memory
    ones and a direct numpy median over the loaded rows, both with the default selection (the keys of one bin
    gathered) and with selection_limit=1 (refined bit by bit down to the value: the 10^8-row path)."""
    corpus = dataset.load()
    refined = _json(run_partitioned_reliability(dataset, client=client, n_boot=N_BOOT, selection_limit=1))
    assert _close(refined, memory) == []
    for run in memory["runs"]:
        rows = corpus.loc[(corpus["environment"] == run["environment"]).to_numpy()
                          & (corpus["campaign"] == run["campaign"]).to_numpy()
                          & (corpus["role"] != "floor").to_numpy() & (corpus["status"] == "ok").to_numpy()]
        long = rows["cpu_s"].to_numpy() >= CONTENTION_MIN_CPU_S  # shorter ones measure start-up cost
        ratio = rows["duration_s"].to_numpy()[long] / rows["cpu_s"].to_numpy()[long]
        single = ratio[ratio >= 1]
        c = run["contention"]
        assert c["median_wall_cpu"] == np.median(single) and c["n_single"] == len(single)
        assert c["n_multi"] == int((ratio < 1).sum()) > 0
        load = corpus.loc[(corpus["environment"] == run["environment"]).to_numpy()
                          & (corpus["campaign"] == run["campaign"]).to_numpy()
                          & (corpus["role"] != "floor").to_numpy(), "load_1m"].to_numpy()
        assert c["median_load_1m"] == np.median(load) and c["max_load_1m"] == load.max()


def test_contention_median_of_an_even_and_an_odd_count(dataset, client, memory, tmp_path):
    """One single-threaded execution fewer flips the parity of that run's count: np.median is then the mean
    of the two middle values (or the middle one); both datasets equal the in-memory audit."""
    corpus = dataset.load()
    ratio = corpus["duration_s"].to_numpy() / corpus["cpu_s"].to_numpy()
    usable = ((ratio >= 1) & (corpus["cpu_s"].to_numpy() >= CONTENTION_MIN_CPU_S)
              & (corpus["status"] == "ok").to_numpy() & (corpus["role"] != "floor").to_numpy())
    one = np.flatnonzero(usable)[0]
    fewer = save_dataset(corpus.drop(index=corpus.index[one]).reset_index(drop=True), tmp_path / "fewer",
                         problems_per_partition=3)
    parities = set()
    for ds, in_memory in ((dataset, memory), (fewer, _json(run_reliability_audit(fewer.load(), n_boot=N_BOOT)))):
        assert _close(_json(run_partitioned_reliability(ds, client=client, n_boot=N_BOOT, selection_limit=4)),
                      in_memory) == []
        parities |= {r["contention"]["n_single"] % 2 for r in in_memory["runs"]}
    assert parities == {0, 1}


def test_contention_without_cpu_time_is_not_available_on_dask_too(nested_memory, nested_dask):
    memory, dask = nested_memory, nested_dask
    assert _close(dask, memory) == []
    levels = {f["level"] for f in memory["findings"] if f["metric"] == "contention"}
    assert levels == {"n/a"}


def test_language_pools_on_dask_equal_in_memory(client, tmp_path):
    """A problem whose references mix languages is one unit per language pool for the ICCs and the variance
    components (tests/edges/test_pool_language_reliability.py); partitions with and without such a problem join
    to the in-memory audit."""
    corpus = _corpus(8, clocks=False, n_repeats=3)
    mixed = corpus["problem"].astype(str).isin(["p0000", "p0001", "p0004"]).to_numpy()
    odd = {name: name.startswith("ref-") and int(name[4:]) % 2 == 1 for name in corpus["solution"].astype(str).unique()}
    python = (mixed & (corpus["role"] == "reference").to_numpy()
              & corpus["solution"].astype(str).map(odd).to_numpy(bool))
    corpus["language"] = pd.Categorical(np.where(python, "python", "cpp"))
    corpus.loc[python, "duration_s"] = corpus.loc[python, "duration_s"] * 30.0
    data = save_dataset(corpus, tmp_path / "d", problems_per_partition=2)
    in_memory = run_reliability_audit(data.load(), n_boot=N_BOOT)
    on_dask = run_partitioned_reliability(data, client=client, n_boot=N_BOOT)
    memory = _json(in_memory)
    assert _close(_json(on_dask), memory) == []
    for run, env in in_memory.runs.items():  # the saved tables too: a partition without a split problem has ""
        pd.testing.assert_frame_equal(on_dask.runs[run].test_icc, env.test_icc, check_exact=False, rtol=1e-12)
    merged = _json(run_reliability_audit(data.load().drop(columns="language"), n_boot=N_BOOT))
    assert memory["runs"][0]["icc"] != merged["runs"][0]["icc"]  # the pools split: the figures moved
