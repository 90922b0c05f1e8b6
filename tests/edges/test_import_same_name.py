"""Result files with one name in two folders, and one file given twice, written by the real tools.

Before the fix, two files named alike (``machine1/run.json``, ``machine2/run.json``) got one campaign and the import
failed with "duplicate (environment, campaign, ...) keys ... each execution needs its own repeat index" over rows
of the corpus it was building; one file given twice failed the same way, without saying so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pyperf
import pytest

from audits.corpus.importers.hyperfine import import_hyperfine
from audits.corpus.importers.pyperf_json import import_pyperf
from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark
from audits.corpus.io import CorpusError

#: the inner pytest run's environment without this session's PYTEST_* variables: under `make test`'s xdist workers
#: pytest-benchmark would otherwise see a worker and disable itself (no file written)
OWN_SESSION = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

CLI = [sys.executable, "-m", "audits.cli"]
BENCH = """
def test_sum(benchmark):
    benchmark(sum, range(100))
"""


def pytest_benchmark_json(root, out):
    """``out``: the --benchmark-json file the real pytest-benchmark writes for :data:`BENCH`, run in ``root``."""
    (root / "test_b.py").write_text(BENCH)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(root / "test_b.py"),
                    "--benchmark-max-time=0.01", "--benchmark-min-rounds=3", f"--benchmark-json={out}"],
                   check=True, capture_output=True, timeout=120, cwd=root, env=OWN_SESSION)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two sessions of each tool, each written to a file of the same name in its own folder."""
    root = tmp_path_factory.mktemp("same-name")
    files = {"hyperfine": [], "pyperf": [], "pytest-benchmark": []}
    assert shutil.which("hyperfine"), "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    for machine in ("m1", "m2"):
        folder = root / machine
        folder.mkdir()
        subprocess.run(["hyperfine", "--style", "none", "-N", "--runs", "3", "-L", "n", "10,20", "seq {n}",
                        "--export-json", str(folder / "run.json")], check=True, capture_output=True, timeout=120)
        subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-p", "2", "-n", "2", "-w", "1", "--loops", "10",
                        "-o", str(folder / "bench.json"), "sum(range(50))"], check=True, capture_output=True,
                       timeout=120)
        pytest_benchmark_json(root, folder / "out.json")
        files["hyperfine"].append(folder / "run.json")
        files["pyperf"].append(folder / "bench.json")
        files["pytest-benchmark"].append(folder / "out.json")
    return files


def test_hyperfine_files_of_one_name_are_two_campaigns_each_value_exact(runs):
    corpus = import_hyperfine(runs["hyperfine"]).corpus
    assert set(corpus["campaign"].astype(str)) == {str(p) for p in runs["hyperfine"]}
    assert set(corpus["problem"].astype(str)) == {"run"}
    for path in runs["hyperfine"]:
        for result in json.loads(path.read_text())["results"]:
            rows = corpus.loc[(corpus.campaign == str(path)) & (corpus.command == result["command"])]
            assert rows.sort_values("repeat")["duration_s"].tolist() == result["times"]


def test_pytest_benchmark_files_of_one_name_are_two_campaigns_each_value_exact(runs):
    corpus = import_pytest_benchmark(runs["pytest-benchmark"]).corpus
    assert set(corpus["campaign"].astype(str)) == {str(p).removesuffix(".json") for p in runs["pytest-benchmark"]}
    for path in runs["pytest-benchmark"]:
        (bench,) = json.loads(path.read_text())["benchmarks"]
        rows = corpus.loc[corpus.campaign == str(path).removesuffix(".json")].sort_values("repeat")
        assert rows["duration_s"].tolist() == bench["stats"]["data"]


def test_pyperf_files_of_one_name_are_two_sessions_each_value_exact(runs):
    result = import_pyperf(runs["pyperf"])
    corpus = result.corpus
    assert corpus["campaign"].nunique() == 2
    for path in runs["pyperf"]:
        rows = corpus.loc[corpus.file == str(path)].sort_values(["run", "repeat"])
        assert rows["campaign"].astype(str).str.endswith(f" ({path})").all()
        (bench,) = pyperf.BenchmarkSuite.load(str(path)).get_benchmarks()
        np.testing.assert_array_equal(rows["duration_s"].to_numpy(), np.array(bench.get_values()))


@pytest.mark.parametrize("fmt", ["hyperfine", "pyperf", "pytest-benchmark"])
def test_one_file_given_twice_is_said_so(runs, fmt, tmp_path):
    path = runs[fmt][0]
    out = tmp_path / "out.parquet"
    proc = subprocess.run([*CLI, "import", fmt, str(path), str(path), "--out", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}: the same file is given twice" in proc.stderr and "pass each" in proc.stderr
    assert not out.exists()


def test_a_file_named_and_inside_a_folder_given_is_given_twice(runs):
    folder = runs["pyperf"][0].parent
    with pytest.raises(CorpusError, match="the same file is given twice"):
        import_pyperf([folder, runs["pyperf"][0]])


def test_pytest_benchmark_files_of_one_name_on_two_machines_keep_the_name(runs, tmp_path):
    # one session name on two machines is one campaign name in two environments (as for pyperf): only two files of
    # one machine that share a name need their paths. The second machine is the first file with another node.
    first = runs["pytest-benchmark"][0]
    data = json.loads(first.read_text())
    data["machine_info"]["node"] = "other-host"
    other = tmp_path / "other" / "out.json"
    other.parent.mkdir()
    other.write_text(json.dumps(data))
    corpus = import_pytest_benchmark([first, other]).corpus
    assert set(corpus["campaign"].astype(str)) == {"out"} and corpus["environment"].nunique() == 2
    for _, rows in corpus.groupby("environment", observed=True):
        assert rows.sort_values("repeat")["duration_s"].tolist() == data["benchmarks"][0]["stats"]["data"]
