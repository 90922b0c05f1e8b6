"""The whole audit on Dask (a real LocalCluster on loopback) equals the in-memory whole audit
(:func:`audits.engine.whole_audit.run_whole_audit`) of the loaded dataset, every JSON figure to 1e-12, with a named
calibration pair and the simulator run; also after shuffling rows and regrouping problems into other files;
and it reads each partition once per shared pass (every audit's pass 1 in one task, every pass 2 in one); the client
gathers, combines and drops one audit's parts at a time (issue 26)."""

from __future__ import annotations

import collections
import json

import numpy as np
import pandas as pd
import pytest

from audits.corpus.dataset import save_dataset
from audits.corpus.runs import Run
from audits.engine.partitioned import run_partitioned_whole_audit
from audits.engine.whole_audit import run_whole_audit
from tests.audits.test_partitioned import _close
from tests.audits.test_partitioned_calibration import _corpus
from tests.audits.test_partitioned_reliability import _reads_of
from audits.protocol import registry

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

#: The registered audits the Dask engine runs (the others declare why not: registry.get(name).dask).
ON_DASK = tuple(n for n in registry.names() if registry.get(n).dask is None)

N_BOOT = 30
PAIR = (Run("quiet", "c0"), Run("quiet", "c1"))
OPTIONS = dict(pairs=[PAIR], simulation_run=Run("quiet", "c0"), n_boot=N_BOOT, n_boot_rank=N_BOOT,
               simulation_n_boot=N_BOOT)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return save_dataset(_corpus(), tmp_path_factory.mktemp("whole") / "d", problems_per_partition=3)


@pytest.fixture(scope="module")
def memory_audit(dataset):
    """The in-memory whole audit with OPTIONS: its JSON is ``memory``; test_a_saved_dask_audit saves it."""
    return run_whole_audit(dataset.load(), audits=ON_DASK, **OPTIONS)


@pytest.fixture(scope="module")
def memory(memory_audit):
    return json.loads(json.dumps(memory_audit.to_dict()))


@pytest.fixture(scope="module")
def dask_audit(dataset, client):
    """The Dask whole audit with OPTIONS, computed once for the two tests that read it (its JSON equals ``memory``;
    saved, it is the saved in-memory audit). The tests that count reads, spy on the combining steps or change the
    dataset or the options run their own."""
    return run_partitioned_whole_audit(dataset, client=client, **OPTIONS)


def _dask(dataset, client, **options) -> dict:
    return json.loads(json.dumps(run_partitioned_whole_audit(dataset, client=client, **{**OPTIONS, **options})
                                 .to_dict()))


def test_whole_audit_on_dask_equals_in_memory(dataset, dask_audit, memory):
    dask = json.loads(json.dumps(dask_audit.to_dict()))
    assert _close(dask, memory) == []
    # every audit ran and measured something, so the equality says something
    assert set(memory) == {"audit", "reliability", "discriminability", "calibration", "aggregation", "simulation",
                           "skipped", "worst"} and memory["skipped"] == {}
    assert memory["calibration"][0]["pairing"]["n_pairs"] > 100 and memory["simulation"]["findings"]
    assert dataset.n_partitions >= 4


def test_shuffled_and_regrouped_dataset_gives_the_same_whole_audit(dataset, client, memory, tmp_path):
    corpus = dataset.load()
    shuffled = corpus.iloc[np.random.default_rng(7).permutation(len(corpus))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=4)
    assert _close(_dask(other, client), memory) == []


def test_without_a_named_pair_both_paths_calibrate_the_default_pairs(dataset, client):
    """Two environments x two unordered campaigns: each environment against the quietest in its campaign
    (audits.corpus.selection.choose_pairs, quietness from the rows on both paths), every figure equal."""
    memory = run_whole_audit(dataset.load(), audits=ON_DASK, n_boot=0, simulation_n_boot=0,
                             simulation_run=Run("quiet", "c0")).to_dict()
    dask = run_partitioned_whole_audit(dataset, client=client, n_boot=0, simulation_n_boot=0,
                                       simulation_run=Run("quiet", "c0")).to_dict()
    assert _close(json.loads(json.dumps(dask)), json.loads(json.dumps(memory))) == []
    chosen = [(c["source"], c["target"], c["pair_rule"]) for c in dask["calibration"]]
    # busy is planted noisier (synthesize's busy=True), so quiet is the target of both pairs
    assert chosen == [("busy", "quiet", "vs-quietest")] * 2 and dask["skipped"] == {}


def test_without_any_pair_calibration_is_skipped_with_the_in_memory_reason(dataset, client, tmp_path):
    """One environment, two campaigns without timestamps: no default pair (which campaign is stored would be a
    fact of row order), so both paths skip calibration with the same reason, naming the runs."""
    corpus = dataset.load()
    one = save_dataset(corpus.loc[(corpus["environment"] == "quiet").to_numpy()].reset_index(drop=True),
                       tmp_path / "one", problems_per_partition=3)
    memory = run_whole_audit(one.load(), audits=ON_DASK, n_boot=0, simulation_n_boot=0).to_dict()
    dask = run_partitioned_whole_audit(one, client=client, n_boot=0, simulation_n_boot=0).to_dict()
    assert "calibration" not in dask and dask["skipped"] == memory["skipped"]
    assert "does not order the campaigns of 'quiet'" in dask["skipped"]["calibration"]
    assert _close(json.loads(json.dumps(dask)), json.loads(json.dumps(memory))) == []


def test_each_shared_pass_reads_each_partition_once(dataset, client, monkeypatch):
    """Counted in the worker processes (CorpusDataset.read_partition wrapped there): the pass-1 task and the
    pass-2 task of each partition each read it exactly once; the client reads no partition."""
    reads = _reads_of(client, monkeypatch, lambda: run_partitioned_whole_audit(dataset, client=client, **OPTIONS))
    for name in ("_first_pass", "_second_pass"):
        count = collections.Counter(index for task, index in reads if name in task)
        assert count == {i: 1 for i in range(dataset.n_partitions)}, (name, count)
    others = {task.split("-")[0].strip("('") for task, _ in reads} - {"_first_pass", "_second_pass"}
    assert others <= {"_selection_partial"}, others  # only the contention medians' refinement re-reads


def _pieces_on_cluster(client) -> int:
    """The number of pass-2 results (whole, or split per audit) held in the workers' memory."""
    return client.run_on_scheduler(lambda dask_scheduler: sum(
        1 for key, task in dask_scheduler.tasks.items()
        if task.state == "memory" and str(key).strip("('").startswith(("_piece", "_second_pass"))))


def _settled(client, expected: int, *, tries: int = 100) -> int:
    """The count once the client's releases reached the scheduler (they travel apart from run_on_scheduler)."""
    import time

    count = _pieces_on_cluster(client)
    for _ in range(tries):
        if count == expected:
            break
        time.sleep(0.05)
        count = _pieces_on_cluster(client)
    return count


def test_the_client_gathers_and_drops_one_audit_at_a_time(dataset, client, monkeypatch):
    """Issue 26: each audit's parts are gathered just before its combining step and released before the next
    audit's are gathered (counted on the scheduler when each combining step starts); the whole pass-2 results
    are released once split, so nothing holds every audit's tables at once."""
    from audits.engine.partitioned.whole import _groups

    groups = len(_groups(dataset, len(client.scheduler_info()["workers"])))
    order = ["reliability", "discriminability", "calibration", "aggregation", "simulation"]
    seen = []
    for name in order:  # each audit's combine (the engine calls the audit's, as in memory)
        module = registry.get(name)
        original = module.combine

        def spy(parts, *args, _original=original, _name=name, **kwargs):
            # only the pieces of the audits after this one are still on the cluster
            left = (len(order) - 1 - len(seen)) * groups
            seen.append((_name, len(parts), left, _settled(client, left)))
            return _original(parts, *args, **kwargs)

        monkeypatch.setattr(module, "combine", spy)
    assert _settled(client, 0) == 0  # nothing left over from another test
    _dask(dataset, client)
    assert [name for name, _, _, _ in seen] == order
    assert all(n_parts == groups for _, n_parts, _, _ in seen)  # each combining step gets one part per group
    assert all(held == left for _, _, left, held in seen), seen
    assert _settled(client, 0) == 0  # and none once the audit is done


def test_default_pairs_of_an_environment_with_three_campaigns_on_dask_equal_in_memory(client, tmp_path):
    """One environment, three campaigns ordered by timestamps: the default stored->fresh pairs are c0 -> c1 and
    c0 -> c2, each with the drift table of all three campaigns against c0, which the Dask parts compute from
    per-partition cells (stats.calibration.drift_from_pairings); every figure equals the in-memory audit's."""
    corpus = _corpus(campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053), ("c2", 0.7, 0.02)))
    corpus = corpus.loc[(corpus["environment"] == "quiet").to_numpy()].reset_index(drop=True)
    dates = {"c0": "2026-01-01", "c1": "2026-02-01", "c2": "2026-03-01"}
    corpus["timestamp"] = corpus["campaign"].map(dates).astype(object)
    ds = save_dataset(corpus, tmp_path / "three", problems_per_partition=3)
    memory = json.loads(json.dumps(run_whole_audit(ds.load(), audits=ON_DASK, n_boot=N_BOOT, n_boot_rank=N_BOOT,
                                                   simulation_n_boot=0).to_dict()))
    dask = json.loads(json.dumps(run_partitioned_whole_audit(ds, client=client, n_boot=N_BOOT, n_boot_rank=N_BOOT,
                                                             simulation_n_boot=0).to_dict()))
    assert [(c["source"], c["target"], c["pair_rule"]) for c in dask["calibration"]] == [
        ("c0", "c1", "stored->fresh"), ("c0", "c2", "stored->fresh")]
    # the drift table has both non-anchor campaigns, measured (an interval), so the equality says something
    drift = memory["calibration"][0]["drift"]
    assert {row["campaign"] for row in drift} == {"c1", "c2"} and all(row["ci_low"] is not None for row in drift)
    assert dask["skipped"] == memory["skipped"] == {}
    assert _close(dask, memory) == []


def test_a_saved_dask_audit_is_the_saved_in_memory_audit(dataset, memory_audit, dask_audit, tmp_path):
    """`audit all --dask --json` writes the results a report renders from, as in memory: the corpus summary
    (description and per-run overview) from the Dask run table and the files' counts equals the one from the
    loaded rows, and every saved result and its parameters are the same (issue 23 item 5 on Dask)."""
    from audits.protocol.saved import read_results
    from audits.report.results import save_whole_audit

    kept = dict(corpora=[str(dataset.path)], n_boot=N_BOOT, seed=0)
    loaded = dataset.load()
    in_memory = save_whole_audit(memory_audit, loaded, tmp_path / "m.json", **kept)
    on_dask = save_whole_audit(dask_audit, None, tmp_path / "d.json", **kept)
    m, d = read_results(in_memory), read_results(on_dask)
    assert m.names() == d.names() and "corpus_summary" in d.names()
    summary = d.value("corpus_summary")
    assert summary.description == m.value("corpus_summary").description
    assert f"{len(loaded):,} executions" in summary.description
    pd.testing.assert_frame_equal(summary.overview, m.value("corpus_summary").overview)
    assert summary.overview["solutions"].sum() > 0 and summary.overview["ok_share"].between(0, 1).all()
    for name in set(m.names()) - {"corpus_summary"}:  # each audit's JSON figures (the objects' internal
        assert d.parameters(name) == m.parameters(name), name  # frames may order categories differently)
        a, b = d.value(name), m.value(name)
        # the calibration pairs are saved as one result per pair (a tuple), every other audit as one result
        a, b = (a, b) if isinstance(b, tuple) else ((a,), (b,))
        assert len(a) == len(b), name
        for x, y in zip(a, b):
            if getattr(y, "skipped", False):  # the page's "not in the saved audit" note
                assert x == y, name
                continue
            assert _close(json.loads(json.dumps(x.to_dict())), json.loads(json.dumps(y.to_dict()))) == [], name
