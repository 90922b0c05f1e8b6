"""hyperfine import on files the real hyperfine (Debian's package, scripts/system-deps.sh) writes here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from audits.corpus.importers.hyperfine import import_hyperfine
from audits.corpus.io import CorpusError, load_corpus

HYPERFINE = shutil.which("hyperfine")  # Debian's package; `make test` installs it (scripts/system-deps.sh)
CLI = [sys.executable, "-m", "audits.cli"]


def _hyperfine(out, *args):
    assert HYPERFINE, "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    subprocess.run([HYPERFINE, "--style", "none", "-N", "--runs", "5", "--warmup", "1", *args, "--export-json",
                    str(out)], check=True, capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("hyperfine")
    # a parameter scan: two commands x two values of n; the command texts change with n
    scan = _hyperfine(root / "scan.json", "-L", "n", "2000,50000", "seq {n}", "seq -s , {n}")
    # named commands, one of which fails (-i: hyperfine keeps timing it and records the exit code)
    named = _hyperfine(root / "named.json", "-i", "-n", "fast", "-n", "slow", "-n", "fails",
                       "true", "seq 200000", "false")
    return scan, named


def test_every_command_a_solution_every_time_a_repeat_parameters_as_tests(files):
    scan, named = files
    result = import_hyperfine([scan, named])
    corpus = result.corpus
    for path in (scan, named):
        data = json.loads(path.read_text())
        rows = corpus.loc[corpus.campaign == path.name]
        assert len(rows) == sum(len(r["times"]) for r in data["results"])  # every 'times' value is a row
        for r in data["results"]:
            mine = rows.loc[rows.command == r["command"]].sort_values("repeat")
            if path == scan:
                mine = mine.loc[mine.test == f"n={r['parameters']['n']}"]
            np.testing.assert_array_equal(mine["duration_s"].to_numpy(), np.array(r["times"]))
            expected = ["ok" if c == 0 else "runtime_error" for c in r["exit_codes"]]
            assert mine["status"].astype(str).tolist() == expected
    scan_rows = corpus.loc[corpus.problem == "scan"]
    assert set(scan_rows["test"]) == {"n=2000", "n=50000"}
    # the k-th command of each combination is one solution across the tests
    assert set(scan_rows["solution"]) == {"command 1", "command 2"}
    for solution, command in (("command 1", "seq {n}"), ("command 2", "seq -s , {n}")):
        part = scan_rows.loc[scan_rows.solution == solution]
        assert {(t, c) for t, c in zip(part["test"], part["command"])} == {
            (f"n={n}", command.replace("{n}", n)) for n in ("2000", "50000")}
    named_rows = corpus.loc[corpus.problem == "named"]
    assert set(named_rows["test"]) == {"default"} and set(named_rows["solution"]) == {"fast", "slow", "fails"}
    assert (named_rows.loc[named_rows.solution == "fails", "status"] == "runtime_error").all()
    assert not named_rows.loc[named_rows.solution == "fails", "correct"].any()
    assert "solution 'command 1': seq 2000, seq 50000" in result.summary()


def test_one_problem_over_files_makes_campaigns(files):
    scan, _ = files
    again = scan.with_name("scan-again.json")
    _hyperfine(again, "-L", "n", "2000,50000", "seq {n}", "seq -s , {n}")
    corpus = import_hyperfine([scan, again], problem="seq").corpus
    assert set(corpus["problem"]) == {"seq"} and set(corpus["campaign"]) == {"scan.json", "scan-again.json"}
    with pytest.raises(CorpusError, match="drop --campaign"):
        import_hyperfine([scan, again], problem="seq", campaign="x")


def test_cli_import_and_reliability_audit(files, tmp_path, check_reliability_audit):
    scan, named = files
    out = tmp_path / "hyperfine.parquet"
    proc = subprocess.run(CLI + ["import", "hyperfine", str(scan), str(named), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(load_corpus(out)) == 35  # 4 x 5 + 3 x 5 executions
    check_reliability_audit(out)


def test_not_a_hyperfine_file(tmp_path):
    other = tmp_path / "x.json"
    other.write_text(json.dumps({"benchmarks": []}))
    with pytest.raises(CorpusError, match="x.json: no 'results' list"):
        import_hyperfine([other])
