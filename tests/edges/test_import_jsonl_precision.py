"""``--out X.jsonl`` (import, convert) keeps every duration exactly, on nanosecond and ten-second timings.

Before the fix, JSON lines were written by pandas' to_json, which keeps 10 decimal places: pyperf's value of a
6.29 ns statement was written 6.3e-09 (two digits left), and a hyperfine time 0.0026613236200000003 s as 0.0026613236.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pyperf
import pytest

from audits.corpus.io import load_corpus

CLI = [sys.executable, "-m", "audits.cli"]


@pytest.fixture(scope="module")
def pyperf_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pyperf") / "ns.json"
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-p", "2", "-n", "3", "-w", "1", "-o", str(path),
                    "pass"], check=True, capture_output=True, timeout=120)
    # a ten-second benchmark beside it (written with pyperf's API: timing one would take a minute)
    suite = pyperf.BenchmarkSuite.load(str(path))
    slow = pyperf.Run([10.000123456789012, 9.87654321098765], metadata={"name": "ten seconds", "loops": 1},
                      collect_metadata=False)
    suite.add_benchmark(pyperf.Benchmark([slow]))
    suite.dump(str(path), replace=True)
    return path


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz", "corpus.ndjson"])
def test_json_lines_keep_every_duration_exactly(pyperf_file, tmp_path, name):
    expected = {b.get_name(): b.get_values() for b in pyperf.BenchmarkSuite.load(str(pyperf_file)).get_benchmarks()}
    assert min(expected["timeit"]) < 1e-7  # nanoseconds, as pyperf measured them (the premise)
    out = tmp_path / name
    proc = subprocess.run([*CLI, "import", "pyperf", str(pyperf_file), "--out", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    corpus = load_corpus(out)
    for benchmark, values in expected.items():
        rows = corpus.loc[corpus.problem == benchmark].sort_values(["run", "repeat"])
        assert rows["duration_s"].tolist() == list(values)
    # convert writes the same, and back to Parquet nothing changes
    again = tmp_path / "again.parquet"
    assert subprocess.run([*CLI, "convert", str(out), "--out", str(again)], capture_output=True).returncode == 0
    assert load_corpus(again)["duration_s"].tolist() == corpus["duration_s"].tolist()


def test_missing_values_are_null(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("problem,test,solution,duration_s,status,cpu_s\np,t,a,1.5,ok,\np,t,b,2.5e-9,ok,1e-9\n")
    out = tmp_path / "runs.jsonl"
    assert subprocess.run([*CLI, "convert", str(runs), "--out", str(out)], capture_output=True).returncode == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["duration_s"], r["cpu_s"]) for r in lines] == [(1.5, None), (2.5e-9, 1e-9)]
