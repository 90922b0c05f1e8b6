"""The calibration audit on Dask (a real LocalCluster on loopback) equals the in-memory audit of the same
dataset, every JSON figure to 1e-12, for campaign-against-campaign and environment-against-environment pairs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from audits.checks.calibration import run_calibration_audit
from audits.corpus.dataset import save_dataset
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned import run_partitioned_calibration
from tests.audits.test_partitioned import _close
from tests.audits.test_partitioned_reliability import _assert_one_partition_per_task
from tests.audits.conftest import audit_all_dask

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

N_BOOT = 40
STORED, FRESH, BUSY = Run("quiet", "c0"), Run("quiet", "c1"), Run("busy", "c0")


def _corpus(campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053))):
    corpus = synthesize(n_problems=10, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                        n_candidates=3, n_repeats=3, busy=True, campaigns=campaigns, seed=8).corpus
    # names are data: a problem name with a slash and an '=' is never put in a path
    corpus["problem"] = corpus["problem"].cat.rename_categories(lambda n: "a/b=1" if n == "p0004" else n)
    return corpus


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return save_dataset(_corpus(), tmp_path_factory.mktemp("cal") / "d", problems_per_partition=3)


def _json(audit) -> dict:
    return json.loads(json.dumps(audit.to_dict()))


@pytest.fixture(scope="module")
def on_dask(dataset, client):
    """The Dask audit of ``dataset`` for a pair (source, target), n_boot and n_boot_rank N_BOOT: computed once per
    pair for the tests that compare with it (they only read the JSON)."""
    done = {}

    def audit(source, target) -> dict:
        if (source, target) not in done:
            done[source, target] = _json(run_partitioned_calibration(dataset, client=client, source=source,
                                                                     target=target, n_boot=N_BOOT, n_boot_rank=N_BOOT))
        return done[source, target]

    return audit


@pytest.mark.parametrize("source, target", [(STORED, FRESH), (STORED, BUSY), (FRESH, STORED)])
def test_calibration_on_dask_equals_in_memory(dataset, on_dask, source, target):
    memory = _json(run_calibration_audit(dataset.load(), source=source, target=target, n_boot=N_BOOT,
                                         n_boot_rank=N_BOOT))
    dask = on_dask(source, target)
    assert _close(dask, memory) == []
    # the figures are measured, so the equality says something
    assert memory["pairing"]["n_pairs"] > 100 and memory["spearman_raw"]["estimate"] is not None
    assert memory["sensitivity"] and memory["fits"]["affine"]["lopo_r2"] is not None
    if source.environment == target.environment:
        assert memory["drift"]  # the drift table of the environment's two campaigns


def test_shuffled_partitions_give_the_same_calibration(dataset, client, on_dask, tmp_path):
    corpus = dataset.load()
    shuffled = corpus.iloc[np.random.default_rng(4).permutation(len(corpus))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=4)
    a = _json(run_partitioned_calibration(other, client=client, source=STORED, target=FRESH, n_boot=N_BOOT,
                                          n_boot_rank=N_BOOT))
    assert _close(a, on_dask(STORED, FRESH)) == []


def test_every_task_reads_one_partition(dataset, client, monkeypatch):
    _assert_one_partition_per_task(client, monkeypatch, dataset, lambda: run_partitioned_calibration(
        dataset, client=client, source=STORED, target=FRESH, n_boot=N_BOOT, n_boot_rank=N_BOOT))


@pytest.mark.parametrize("source, target", [(STORED, FRESH), (FRESH, STORED)])
def test_three_campaigns_drift_on_dask_equals_in_memory(client, tmp_path, source, target):
    """Two environments, three campaigns: the drift table (each campaign of the source's environment against
    the source campaign, the anchor) from the workers' cells equals the in-memory table from the rows."""
    corpus = _corpus((("c0", 1.0, 0.0), ("c1", 0.63, 0.053), ("c2", 0.7, 0.01)))
    ds = save_dataset(corpus, tmp_path / "three", problems_per_partition=4)
    memory = _json(run_calibration_audit(ds.load(), source=source, target=target, n_boot=N_BOOT,
                                         n_boot_rank=N_BOOT))
    dask = _json(run_partitioned_calibration(ds, client=client, source=source, target=target, n_boot=N_BOOT,
                                             n_boot_rank=N_BOOT))
    anchor = source.campaign
    assert {row["campaign"] for row in memory["drift"]} == {"c0", "c1", "c2"} - {anchor}
    assert any(row["change"] is not None for row in memory["drift"])  # the second campaign's change: measured
    assert _close(dask, memory) == []


def test_audit_all_on_a_dataset_with_dask_cli_runs_calibration(dataset, client, tmp_path):
    """`speedaudit audit all DATASET --scheduler ADDRESS --pair-environment quiet --source-campaign c0
    --target-campaign c1` (a subprocess on the session's real LocalCluster): its calibration part equals the
    in-memory audit of the same pair (and of the in-memory whole audit)."""
    proc, whole = audit_all_dask(dataset.path, tmp_path, "--pair-environment", "quiet", "--source-campaign", "c0",
                                 "--target-campaign", "c1", "--n-boot", str(N_BOOT), scheduler=client.scheduler.address)
    memory = _json(run_calibration_audit(dataset.load(), source=STORED, target=FRESH, n_boot=N_BOOT))
    assert _close(whole["calibration"], [memory]) == []
    assert "calibration" not in whole["skipped"] and "Traceback" not in proc.stderr


@pytest.mark.parametrize("n_problems, n_repeats, n_boot", [(1, 3, N_BOOT), (2, 3, N_BOOT), (6, 1, N_BOOT),
                                                           (6, 3, 0)])
def test_na_cases_on_dask_equal_in_memory(client, tmp_path, n_problems, n_repeats, n_boot):
    """Too few problems, one repeat, no intervals (n_boot=0): the Dask audit has main's n/a findings, with
    the same reasons, and every other figure equal to the in-memory audit's."""
    corpus = synthesize(n_problems=n_problems, n_tests=4, n_solutions=8, n_candidates=2, n_repeats=n_repeats,
                        campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=1).corpus
    ds = save_dataset(corpus, tmp_path / "small", problems_per_partition=1)
    memory = _json(run_calibration_audit(ds.load(), source=STORED, target=FRESH, n_boot=n_boot,
                                         n_boot_rank=n_boot))
    dask = _json(run_partitioned_calibration(ds, client=client, source=STORED, target=FRESH, n_boot=n_boot,
                                             n_boot_rank=n_boot))
    assert _close(dask, memory) == []
    levels = {f["metric"]: f["level"] for f in memory["findings"]}
    if n_problems == 1:  # the in-memory audit's n/a (issue 16), which the Dask audit must repeat
        assert levels["best_lopo_r2"] == "n/a" and levels["pairs_lost_share"] != "n/a"
    if n_boot == 0:
        assert memory["n_boot"] == 0 and memory["fits"]["affine"]["lopo_r2_ci"] == [None, None]


def test_no_pair_on_dask_fits_nothing_like_in_memory(client, tmp_path):
    corpus = synthesize(n_problems=2, n_tests=4, n_solutions=8, n_repeats=3,
                        campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=3).corpus
    keep = ~(((corpus["campaign"] == "c0") & (corpus["problem"] == "p0000"))
             | ((corpus["campaign"] == "c1") & (corpus["problem"] == "p0001")))
    ds = save_dataset(corpus.loc[keep.to_numpy()], tmp_path / "none", problems_per_partition=1)
    memory = _json(run_calibration_audit(ds.load(), source=STORED, target=FRESH, n_boot=N_BOOT, n_boot_rank=10))
    dask = _json(run_partitioned_calibration(ds, client=client, source=STORED, target=FRESH, n_boot=N_BOOT,
                                             n_boot_rank=10))
    assert memory["pairing"]["n_pairs"] == 0 and memory["fits"] == {}
    assert _close(dask, memory) == []
