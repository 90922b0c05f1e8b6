"""A ``.benchmarks`` folder in which some saved runs hold no rounds, written by the real pytest-benchmark.

``pytest --benchmark-autosave`` alone saves a run's statistics without its rounds (``stats.data``); only
``--benchmark-save-data`` keeps them. A storage folder where one old run was saved so was refused whole, naming
that file, although the other runs import. Found in a folder, such a run is now skipped with the reason (as the
pyperf import skips what is not a pyperf result); named on its own it is still refused; a folder of nothing else is
refused with what to do.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from audits.corpus.io import load_corpus
from tests.edges.test_import_pytest_benchmark_folder import BENCHMARKS, CLI, OWN_SESSION


def _save(project: Path, *flags: str) -> None:
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sum.py",
                    "--benchmark-autosave", *flags], check=True, capture_output=True, timeout=120, cwd=project,
                   env=OWN_SESSION)


@pytest.fixture(scope="module")
def storage(tmp_path_factory) -> Path:
    """Two runs saved with their rounds, one (the first) without."""
    project = tmp_path_factory.mktemp("project")
    (project / "test_sum.py").write_text(BENCHMARKS)
    _save(project)
    _save(project, "--benchmark-save-data")
    _save(project, "--benchmark-save-data")
    return project / ".benchmarks"


def _import(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "import", "pytest-benchmark", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_a_run_without_rounds_is_skipped_in_a_folder_and_named(storage, tmp_path):
    runs = sorted(storage.rglob("*.json"))
    assert len(runs) == 3
    out = tmp_path / "c.parquet"
    proc = _import(storage, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "from 2 saved run(s)" in proc.stdout
    assert "skipped 1 (benchmark " in proc.stdout and str(runs[0]) in proc.stdout
    assert sorted(load_corpus(out)["campaign"].astype(str).unique()) == [p.name.removesuffix(".json") for p in runs[1:]]


def test_named_on_its_own_it_is_refused(storage, tmp_path):
    first = sorted(storage.rglob("*.json"))[0]
    proc = _import(first, "--out", tmp_path / "c.parquet")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "no per-round data" in proc.stderr and "--benchmark-save-data" in proc.stderr
    assert not (tmp_path / "c.parquet").exists()


def test_a_folder_of_runs_without_rounds_is_refused_with_what_to_do(storage, tmp_path):
    only = tmp_path / "only"
    only.mkdir()
    first = sorted(storage.rglob("*.json"))[0]
    (only / first.name).write_bytes(first.read_bytes())
    proc = _import(only, "--out", tmp_path / "c.parquet")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "--benchmark-save-data" in proc.stderr and first.name in proc.stderr
