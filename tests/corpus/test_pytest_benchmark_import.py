"""pytest-benchmark import on files the real pytest-benchmark (PyPI) writes here: saved runs and --benchmark-json."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark
from audits.corpus.io import CorpusError

CLI = [sys.executable, "-m", "audits.cli"]
BENCH = '''
import pytest

@pytest.mark.parametrize("n", [200, 4000])
def test_sort(benchmark, n):
    benchmark(sorted, list(range(n, 0, -1)))

def test_join(benchmark):
    benchmark(",".join, [str(i) for i in range(500)])
'''


def _git(root, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=root,
                   check=True, capture_output=True)


def _pytest(root, *args):
    # A session of its own: without this run's PYTEST_* variables (under pytest-xdist, PYTEST_XDIST_WORKER
    # makes pytest-benchmark disable itself, and then it writes no file).
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_bench.py",
                           "--benchmark-storage", f"file://{root / 'store'}", "--benchmark-min-rounds", "6",
                           "--benchmark-max-time", "0.02", "--benchmark-warmup", "off", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pytest_benchmark")
    (root / "test_bench.py").write_text(BENCH)
    _git(root, "init", "-q")
    _git(root, "add", "test_bench.py")
    _git(root, "commit", "-q", "-m", "benchmarks")
    _pytest(root, "--benchmark-save", "before", "--benchmark-save-data", "--benchmark-json", str(root / "out.json"))
    (root / "test_bench.py").write_text(BENCH + "\n# changed\n")  # the second run is on a dirty tree
    _pytest(root, "--benchmark-save", "after", "--benchmark-save-data")
    _pytest(root, "--benchmark-save", "nodata")
    saved = sorted((root / "store").rglob("*.json"))
    return root, saved


def test_each_test_a_problem_each_saved_run_a_campaign(runs):
    root, saved = runs
    before, after, nodata = saved
    assert [p.name.split("_", 1)[1] for p in saved] == ["before.json", "after.json", "nodata.json"]
    result = import_pytest_benchmark([before, after])
    corpus = result.corpus
    assert set(corpus["campaign"]) == {before.stem, after.stem}
    assert set(corpus["problem"]) == {"test_bench.py::test_sort[200]", "test_bench.py::test_sort[4000]",
                                      "test_bench.py::test_join"}
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()
    assert set(corpus.loc[corpus.campaign == before.stem, "solution"]) == {commit}
    assert set(corpus.loc[corpus.campaign == after.stem, "solution"]) == {f"{commit} (dirty)"}
    (environment,) = set(corpus["environment"])
    assert environment.startswith(f"{platform.node()} / {platform.system()} / {platform.machine()}")
    for path in (before, after):
        for bench in json.loads(path.read_text())["benchmarks"]:
            rows = corpus.loc[(corpus.campaign == path.stem) & (corpus.problem == bench["fullname"])]
            np.testing.assert_array_equal(rows.sort_values("repeat")["duration_s"].to_numpy(),
                                          np.array(bench["stats"]["data"]))  # every round, in order
            assert set(rows["loops"]) == {bench["stats"]["iterations"]}
    assert "3 test(s) (problems), 2 commit(s) (solutions), 1 machine(s)" in result.summary()


def test_benchmark_json_output_imports(runs):
    root, _ = runs
    corpus = import_pytest_benchmark([root / "out.json"]).corpus
    assert set(corpus["campaign"]) == {"out"} and corpus["problem"].nunique() == 3


def test_saved_run_without_data_says_what_to_do(runs):
    _, saved = runs
    with pytest.raises(CorpusError, match=r"(?s)nodata.json: benchmark .* has no per-round data.*--benchmark-save-data"):
        import_pytest_benchmark([saved[2]])


def test_cli_import_and_reliability_audit(runs, tmp_path, check_reliability_audit):
    _, saved = runs
    out = tmp_path / "pb.parquet"
    proc = subprocess.run(CLI + ["import", "pytest-benchmark", str(saved[0]), str(saved[1]), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    check_reliability_audit(out)
