"""`speedaudit compare` through the real CLI on corpus files written by the real writer, and its audit findings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.compare import run_compare_audit
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic_pairs import synthesize_pairs

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, code=0):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    return done


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    shared = synthesize_pairs(n_problems=30, share_a=0.65, share_tie=0.2, n_fail_b=1, seed=3)
    sequential = synthesize_pairs(n_problems=30, share_a=0.65, share_tie=0.2, sequential=True, seed=3)
    return (save_corpus(shared.corpus, root / "shared.parquet"), shared,
            save_corpus(sequential.corpus, root / "sequential.parquet"), root)


def test_compare_prints_and_writes_the_audit_values(files, tmp_path):
    path, synth, _, _ = files
    out = tmp_path / "compare.json"
    done = _cli("compare", path, "--a", "A", "--b", "B", "--n-boot", 500, "--json", out)
    assert "win rate of A over B" in done.stdout and "undecided" in done.stdout
    result = json.loads(out.read_text())
    audit = run_compare_audit(load_corpus(path), a="A", b="B", n_boot=500)
    (run,) = result["runs"]
    (mine,) = audit.runs
    assert run["win_rate"] == mine.result.win_rate.to_dict()
    assert run["win_rate"]["ci_low"] <= synth.planted_win_rate <= run["win_rate"]["ci_high"]
    assert run["pass_rate_a"]["estimate"] == 1.0 and run["pass_rate_b"]["estimate"] == pytest.approx(0.5)
    assert run["n_undecided"] == mine.result.n_undecided and run["n_comparisons"] == 30 * 3 * 2 * 1
    assert [(f["metric"], f["level"]) for f in result["findings"]] == [("win_rate", "pass"),
                                                                        ("shared_execution", "pass")]


def test_sets_from_files_of_ids_equal_sets_by_prefix(files, tmp_path):
    path, _, _, _ = files
    corpus = load_corpus(path)
    ids = sorted(set(corpus["solution"].astype(str)))
    (tmp_path / "a.txt").write_text("# set A\n" + "\n".join(i for i in ids if i.startswith("A/")) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(i for i in ids if i.startswith("B/")))
    _cli("compare", path, "--a", f"@{tmp_path / 'a.txt'}", "--b", f"@{tmp_path / 'b.txt'}", "--n-boot", 200,
         "--json", tmp_path / "f.json")
    by_file = json.loads((tmp_path / "f.json").read_text())
    by_prefix = run_compare_audit(corpus, a="A", b="B", n_boot=200).to_dict()
    assert by_file["runs"][0]["win_rate"] == by_prefix["runs"][0]["win_rate"]
    assert by_file["runs"][0]["problems"] == by_prefix["runs"][0]["problems"]


def test_sequential_sets_fail_the_shared_execution_finding(files):
    _, _, sequential, _ = files
    audit = run_compare_audit(load_corpus(sequential), a="A", b="B", n_boot=100)
    finding = next(f for f in audit.findings if f.metric == "shared_execution")
    assert finding.level == "fail" and finding.value == 1.0 and "one campaign" in finding.message
    done = _cli("compare", sequential, "--a", "A", "--b", "B", "--n-boot", 100, "--strict", code=1)
    assert "FAIL" in done.stdout


def test_one_repeat_is_na_with_the_reason(files):
    _, _, _, root = files
    path = save_corpus(synthesize_pairs(n_problems=5, n_repeats=1, seed=0).corpus, root / "once.parquet")
    audit = run_compare_audit(load_corpus(path), a="A", b="B", n_boot=50)
    finding = next(f for f in audit.findings if f.metric == "win_rate")
    assert finding.level == "n/a" and "2 repeats" in finding.reason
    assert "n/a" in _cli("compare", path, "--a", "A", "--b", "B", "--n-boot", 50).stdout


@pytest.mark.parametrize("args, message", [
    (("--a", "A", "--b", "C"), "set B (the solution prefix 'C') names no execution; prefix values: A, B, accepted"),
    (("--by", "model", "--a", "x", "--b", "y"), "--by model: no such column"),
    (("--a", "@missing.txt", "--b", "B"), "@missing.txt: no such file of solution ids"),
    # the registry's one validation format (audits.protocol.params), the flag named
    (("--a", "A", "--b", "B", "--confidence", "0.3"), "confidence must be a number in (0.5, 1) (--confidence), got"),
    (("--a", "A", "--b", "B", "--campaign", "other"), "no run has campaign 'other'"),
])
def test_bad_input_gets_a_clear_message(files, args, message):
    path = files[0]
    done = _cli("compare", path, *args, code=1)
    assert done.stderr.startswith("speedaudit: error: ") and message in done.stderr


def test_the_audit_covers_every_run_holding_both_sets(files):
    path, _, _, _ = files
    corpus = load_corpus(path)
    corpus = corpus.assign(campaign=corpus["campaign"].astype(str))
    two = pd.concat([corpus, corpus.assign(campaign="c1")], ignore_index=True)
    audit = run_compare_audit(two, a="A", b="B", n_boot=100)
    assert [str(r.run) for r in audit.runs] == ["synthetic · c0", "synthetic · c1"]
    w = [r.result.win_rate.estimate for r in audit.runs]
    assert np.isclose(w[0], w[1])  # the same rows in both campaigns
    assert len(audit.to_frame()) == 2
