"""Fixtures shared by test modules of several layers: corpora, real pyperf files, a loopback Dask cluster.

Each fixture is module-scoped, as the per-module fixtures it replaces were: every module gets its own
copy, so a test that modifies a corpus cannot leak into another module.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def drifted():
    """The issue's drifted corpus: the default spec (20 problems, seed 0) in two campaigns, c1 = 0.63·c0 + 53 ms.

    Used by the estimator tests (tests/stats/test_calibration.py) and the audit tests
    (tests/audits/test_audit_calibration.py) alike.
    """
    return synthesize(campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053))).corpus


def _timeit(path, stmt, *extra):
    cmd = [sys.executable, "-m", "pyperf", "timeit", "--quiet", "-p", "3", "-n", "3", "-w", "1", *extra,
           "-o", str(path), stmt]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


@pytest.fixture(scope="module")
def pyperf_files(tmp_path_factory):
    """Files the real pyperf writes: two timeit runs (fixed loops; calibrated) and a Runner-API suite.

    Returns ``(folder, main.json, patched.json, suite.json)``; used by the pyperf importer's tests
    (tests/corpus/test_pyperf_import.py) and the README's example (tests/cli/test_examples.py).
    """
    root = tmp_path_factory.mktemp("pyperf")
    fixed = _timeit(root / "main.json", "sum(range(50))", "-l", "20")        # fixed loops: no calibration
    calibrated = _timeit(root / "patched.json", "sum(range(200))")           # pyperf calibrates the loop count
    # The Runner API (what pyperformance uses) writing a suite with two benchmarks.
    script = root / "bench.py"
    script.write_text(
        "import pyperf\n"
        "runner = pyperf.Runner()\n"
        "runner.timeit('sort', stmt='sorted(x)', setup='x=list(range(300,0,-1))')\n"
        "runner.timeit('join', stmt=\"','.join(x)\", setup='x=[str(i) for i in range(300)]')\n")
    suite = root / "suite.json"
    subprocess.run([sys.executable, str(script), "--quiet", "-p", "2", "-n", "2", "-w", "1", "-l", "5",
                    "-o", str(suite)], check=True, capture_output=True, timeout=120)
    return root, fixed, calibrated, suite


@pytest.fixture(scope="module")
def cluster():
    """``(address, security)`` of a real dask.distributed LocalCluster over TLS on loopback.

    Certificates made for it (``Security.temporary()``, which needs the ``cryptography`` package).
    processes=False keeps it quick (workers are threads of this process) while the client still talks
    to the scheduler over a real TLS socket. Used by tests/collect/test_dask_campaign.py and the
    ``collect --help`` example (tests/cli/test_examples.py).
    """
    from distributed import LocalCluster
    from distributed.security import Security

    security = Security.temporary()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tls", host="127.0.0.1",
                      dashboard_address=None, security=security) as c:
        assert c.scheduler_address.startswith("tls://127.0.0.1:")
        yield c.scheduler_address, security
