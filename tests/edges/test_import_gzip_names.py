"""A gzipped result file is named without ``.json.gz``, as the same file uncompressed is named without ``.json``.

Every importer reads ``.json.gz`` files, but hyperfine's problem and pytest-benchmark's campaign kept the ``.gz``
(``.json`` alone was cut): the same run gzipped became another problem or campaign, ``bench.json.gz`` beside
``bench``. Files written by the real tools, then gzipped.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys

import pytest

from audits.corpus.importers.hyperfine import import_hyperfine
from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark
from tests.edges.test_import_hyperfine_edges import _hyperfine
from tests.edges.test_import_pytest_benchmark_folder import BENCHMARKS, OWN_SESSION


def _gzipped(path):
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target


def test_a_gzipped_hyperfine_file_is_the_same_problem(tmp_path):
    plain = _hyperfine(tmp_path / "bench.json", "--runs", "3", "--shell=none", "sleep 0.001")
    packed = _gzipped(plain)
    assert set(import_hyperfine([plain]).corpus["problem"].astype(str)) == {"bench"}
    assert set(import_hyperfine([packed]).corpus["problem"].astype(str)) == {"bench"}


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory):
    project = tmp_path_factory.mktemp("project")
    (project / "test_sum.py").write_text(BENCHMARKS)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sum.py",
                    "--benchmark-json", "run.json"], check=True, capture_output=True, timeout=120, cwd=project,
                   env=OWN_SESSION)
    return project / "run.json"


def test_a_gzipped_pytest_benchmark_run_is_the_same_campaign(saved_run):
    packed = _gzipped(saved_run)
    assert set(import_pytest_benchmark([saved_run]).corpus["campaign"].astype(str)) == {"run"}
    assert set(import_pytest_benchmark([packed]).corpus["campaign"].astype(str)) == {"run"}
