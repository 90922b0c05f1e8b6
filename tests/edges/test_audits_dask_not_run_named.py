"""The audits the Dask engine does not run are skipped with their reason everywhere a whole audit is read.

Found running ``speedaudit audit all DATASET --dask --json OUT`` on small datasets: the terminal named clocks and
compare as "not run on Dask" (a line the command printed itself), but the whole audit did not: its ``skipped``
(``speedaudit.run_all`` on Dask, the saved JSON's ``meta.skipped``) held only calibration, so the two audits were
silently absent, and a report rendered from the saved results said "clocks is not in the saved results
(speedaudit audit all does not compute it)", which is false: it does, in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize
from audits.engine.partitioned.whole import audit_dataset_on_dask
from audits.protocol import registry
from audits.report.results import page_results

REPO = Path(__file__).resolve().parents[2]
N_BOOT = 20


def _not_on_dask() -> dict[str, str]:
    """What the registry declares (independently of the engine's helper): name -> its reason."""
    return {n: registry.get(n).dask for n in registry.names() if registry.get(n).dask is not None}


@pytest.fixture(scope="module")
def cluster():
    """A real Dask cluster on loopback, its workers threads of this process (quick to start)."""
    import dask
    from distributed import Client, LocalCluster

    from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG

    with dask.config.set(LOCAL_CLUSTER_CONFIG), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                         dashboard_address=None) as c, Client(c) as client:
        yield c.scheduler_address, client


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    corpus = synthesize(n_problems=4, n_tests=3, n_repeats=3, seed=11).corpus
    return save_dataset(corpus, tmp_path_factory.mktemp("ds") / "data", problems_per_partition=2)


def test_the_premise_some_audit_does_not_run_on_dask():
    assert {"clocks", "compare"} <= set(_not_on_dask())


def test_the_whole_audit_on_dask_names_them_skipped(cluster, dataset):
    """The entry of ``speedaudit audit all DATASET --dask`` and ``speedaudit.run_all`` on Dask."""
    whole = audit_dataset_on_dask(dataset.path, scheduler=cluster[0], n_boot=N_BOOT)
    for name, reason in _not_on_dask().items():
        assert name not in whole.results
        assert reason in whole.skipped[name] and "Dask" in whole.skipped[name]


def test_the_command_line_saves_them_skipped_and_a_report_says_why(cluster, dataset, tmp_path):
    out = tmp_path / "all.json"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "all", str(dataset.path),
                           "--scheduler", cluster[0], "--n-boot", str(N_BOOT), "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads(out.read_text())
    for name, reason in _not_on_dask().items():
        assert reason in saved["meta"]["skipped"][name]
        assert proc.stdout.count(reason) == 1, proc.stdout  # said once, in the summary
    clocks = page_results(out, None).get("clocks")
    assert "skipped it" in clocks.reason and _not_on_dask()["clocks"] in clocks.reason
    assert "does not compute it" not in clocks.reason
