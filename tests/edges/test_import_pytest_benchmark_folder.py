"""``speedaudit import pytest-benchmark .benchmarks``: pytest-benchmark's own storage folder, written by the real tool.

Before the fix the folder was refused ("is a directory, not a pytest-benchmark JSON file"): the saved runs had to be
listed one by one, though ``pytest --benchmark-autosave`` keeps them as ``.benchmarks/<machine-id>/NNNN_*.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from audits.corpus.io import load_corpus

#: the inner pytest run's environment without this session's PYTEST_* variables (under xdist workers
#: pytest-benchmark would see a worker, disable itself and write no file)
OWN_SESSION = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
CLI = [sys.executable, "-m", "audits.cli"]
BENCHMARKS = """
import pytest

@pytest.mark.parametrize("n", [10, 1000])
def test_sum(benchmark, n):
    benchmark.pedantic(sum, args=(range(n),), rounds=7, iterations=20)
"""


@pytest.fixture(scope="module")
def storage(tmp_path_factory) -> Path:
    """A project whose benchmarks ran three times with --benchmark-autosave: three saved runs in .benchmarks."""
    project = tmp_path_factory.mktemp("project")
    (project / "test_sum.py").write_text(BENCHMARKS)
    for _ in range(3):
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_sum.py",
                        "--benchmark-autosave", "--benchmark-save-data"], check=True, capture_output=True,
                       timeout=120, cwd=project, env=OWN_SESSION)
    return project / ".benchmarks"


def _import(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "import", "pytest-benchmark", *args], capture_output=True, text=True, timeout=120)


def test_the_storage_folder_imports_every_saved_run_as_its_campaign(storage, tmp_path):
    runs = sorted(storage.rglob("*.json"))
    assert len(runs) == 3 and all(p.parent.parent == storage for p in runs)  # the premise: <machine-id>/NNNN_*.json
    out = tmp_path / "corpus.parquet"
    proc = _import(str(storage), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "from 3 saved run(s) (campaigns)" in proc.stdout
    corpus = load_corpus(out)
    assert sorted(corpus["campaign"].unique()) == [p.name.removesuffix(".json") for p in runs]
    for path in runs:
        data = json.loads(path.read_text())
        for bench in data["benchmarks"]:
            rows = corpus.loc[(corpus.campaign == path.name.removesuffix(".json"))
                              & (corpus.problem == bench["fullname"])].sort_values("repeat")
            assert rows["duration_s"].tolist() == bench["stats"]["data"]  # every round, exactly
    assert len(corpus) == 3 * 2 * 7
    # the same corpus as the files named one by one
    named = tmp_path / "named.parquet"
    assert _import(*map(str, runs), "--out", str(named)).returncode == 0
    pd.testing.assert_frame_equal(load_corpus(out), load_corpus(named))


def test_one_campaign_for_a_folder_of_several_runs_is_refused(storage, tmp_path):
    proc = _import(str(storage), "--campaign", "x", "--out", str(tmp_path / "c.parquet"))
    assert proc.returncode == 1 and "--campaign gives every file (saved run) one campaign" in proc.stderr
    assert not (tmp_path / "c.parquet").exists()


def test_a_run_given_beside_its_folder_is_given_twice(storage, tmp_path):
    one = sorted(storage.rglob("*.json"))[0]
    proc = _import(str(storage), str(one), "--out", str(tmp_path / "c.parquet"))
    assert proc.returncode == 1 and "the same file is given twice" in proc.stderr


def test_a_folder_without_saved_runs_says_what_to_pass(tmp_path):
    (tmp_path / "empty" / "Linux-CPython-3.11-64bit").mkdir(parents=True)
    proc = _import(str(tmp_path / "empty"), "--out", str(tmp_path / "c.parquet"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "a folder without .json files" in proc.stderr and "--benchmark-autosave" in proc.stderr
