"""Fixtures shared by the audit tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def client():
    """A real Dask LocalCluster on loopback (2 worker processes), one per pytest process (per xdist worker).

    Session-scoped: starting one (two spawned processes importing pandas) was paid by each of the six
    tests/audits/test_partitioned*.py modules. Its users submit tasks on their own temporary datasets (the
    CLI tests from a subprocess too: ``audit_all_dask(..., scheduler=client.scheduler.address)``, whose client
    closes with the command, releasing its results); the one test that patches the workers
    (test_partitioned_reliability._read_counter) restores them.
    """
    from audits.engine.partitioned import dask_client

    with dask_client(n_workers=2) as c:
        yield c


def audit_all_dask(dataset_path, tmp_path, *options: str, scheduler: str | None = None):
    """Run ``speedaudit audit all DATASET --dask OPTIONS --json OUT`` as a real subprocess (its own
    LocalCluster); assert it succeeded and return (the finished process, the JSON it wrote).

    With ``scheduler`` (the address of the session's cluster, ``client.scheduler.address``) it runs
    ``--scheduler SCHEDULER`` instead of ``--dask``: the same real CLI in a real subprocess, on the real
    loopback cluster the in-process tests use, without starting a two-worker cluster of its own (starting and
    closing one took 7.3 s of CPU in a fresh process, measured 2026-12-07). The local cluster that ``--dask``
    starts is still run by test_partitioned.py::test_audit_all_on_a_dataset_with_dask_cli."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "all.json"
    engine = ["--scheduler", scheduler] if scheduler else ["--dask"]
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "all", str(dataset_path), *engine, *options,
                           "--json", str(out)], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(out.read_text())
