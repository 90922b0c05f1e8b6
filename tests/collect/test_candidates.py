"""``collect --candidates A=DIR --candidates B=DIR``: two candidate sets timed in one campaign with the
references, shuffled together, then compared by ``speedaudit compare`` (real programs in a real sandbox).

Set A adds the two numbers at once; set B spins ~0.1 s of CPU first (truly slower on every test), and
B also holds a wrong program and a link (skipped with the reason, never followed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from audits.cli import main as cli_main
from audits.collect.candidates import load_candidates, parse_candidate_option
from audits.corpus.io import load_corpus
from audits.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
SLOW_ADD = "s = 0\nfor i in range(2_000_000):\n    s += i\n" + ADD
WRONG = "a, b = map(int, input().split())\nprint(a - b)\n"


def _suite(root: Path, n_secret: int = 2) -> Path:
    pkg = root / "suite" / "add"
    for folder in ("sample", "secret"):
        (pkg / "data" / folder).mkdir(parents=True)
    (pkg / "problem.yaml").write_text("name: Add\n")
    for i in range(1, n_secret + 1):
        (pkg / "data" / "secret" / f"{i:02d}.in").write_text(f"{i} {10 ** i}\n")
        (pkg / "data" / "secret" / f"{i:02d}.ans").write_text(f"{i + 10 ** i}\n")
    (pkg / "submissions" / "accepted").mkdir(parents=True)
    (pkg / "submissions" / "accepted" / "ref.py").write_text(ADD)
    return root / "suite"


def _sets(root: Path) -> tuple[Path, Path]:
    a, b = root / "cand-a" / "add", root / "cand-b" / "add"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    (a / "fast.py").write_text(ADD)
    (b / "slow.py").write_text(SLOW_ADD)
    (b / "wrong.py").write_text(WRONG)
    os.symlink(b / "slow.py", b / "link.py")
    (root / "cand-b" / "nosuch").mkdir()
    (root / "cand-b" / "nosuch" / "x.py").write_text(ADD)
    return a.parent, b.parent


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    root = tmp_path_factory.mktemp("candidates")
    suite = _suite(root)
    a, b = _sets(root)
    out = root / "both.parquet"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "audits.cli", "collect", str(suite), "--out", str(out),
                           "--candidates", f"A={a}", "--candidates", f"B={b}", "--repeats", "3", "--timeout", "10",
                           "--tests", "optimization", "--no-progress", "--no-probe", "--seed", "3"],
                          capture_output=True, text=True, env=env, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out, done


def test_the_candidates_are_timed_in_the_same_shuffled_campaign(collected):
    out, done = collected
    corpus = load_corpus(out)
    real = corpus.loc[(corpus["role"] != "floor").to_numpy()]
    by_solution = real.groupby("solution", observed=True)
    assert set(by_solution.groups) == {"accepted/ref.py", "A/fast.py", "B/slow.py", "B/wrong.py"}
    roles = by_solution["role"].first().astype(str).to_dict()
    assert roles == {"accepted/ref.py": "reference", "A/fast.py": "candidate", "B/slow.py": "candidate",
                     "B/wrong.py": "candidate"}
    assert (by_solution.size() == 2 * 3).all()  # 2 optimization tests x 3 repeats each
    assert set(corpus["campaign"].astype(str)) == {"c0"}
    # Shuffled together: the candidates' executions are spread over the campaign's order, not in a block.
    order = real.sort_values("order")["solution"].astype(str).to_numpy()
    assert len({tuple(order[i:i + 4]) for i in range(0, len(order), 4)}) > 1
    a_pos = np.flatnonzero(order == "A/fast.py")
    b_pos = np.flatnonzero(order == "B/slow.py")
    assert a_pos.min() < b_pos.max() and b_pos.min() < a_pos.max()
    statuses = real.groupby("solution", observed=True)["status"].agg(lambda s: set(s.astype(str))).to_dict()
    assert statuses["B/wrong.py"] == {"wrong_answer"} and statuses["A/fast.py"] == {"ok"}
    # The link and the folder of an unknown problem were skipped with their reasons.
    assert "link.py" in done.stdout + done.stderr and "symbolic link" in done.stdout + done.stderr
    assert "no such problem in this campaign" in done.stdout + done.stderr


def test_compare_on_the_collected_campaign(collected, tmp_path):
    out, _ = collected
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "audits.cli", "compare", str(out), "--a", "A", "--b", "B",
                           "--n-boot", "100", "--json", str(tmp_path / "c.json")],
                          capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "c.json").read_text())
    (run,) = result["runs"]
    assert run["pass_rate_a"]["estimate"] == 1.0 and run["pass_rate_b"]["estimate"] == 0.5  # B/wrong.py fails
    # One problem: the win rate is A's share of 2 comparisons (fast vs slow on 2 tests); spinning 2e6
    # iterations costs ~0.1 s against a ~20 ms program, so both comparisons go to A.
    assert run["n_comparisons"] == 2 and run["win_rate"]["estimate"] == 1.0
    shared = next(f for f in result["findings"] if f["metric"] == "shared_execution")
    assert shared["level"] in ("pass", "warn") and 0 < shared["value"] < 1  # interleaved, not one after the other


def test_bad_candidate_options_are_named(tmp_path, capsys):
    suite = _suite(tmp_path)
    for option, message in (("A", "write NAME=DIR"), ("a/b=x", "without '/'"), (f"A={tmp_path / 'none'}",
                                                                                 "not a folder")):
        code = cli_main(["collect", str(suite), "--out", str(tmp_path / "o.parquet"), "--no-progress",
                         "--candidates", option])
        assert code == 1 and message in capsys.readouterr().err
    (tmp_path / "empty" / "other").mkdir(parents=True)
    with pytest.raises(UserError, match="no program for any problem"):
        load_candidates([parse_candidate_option(f"A={tmp_path / 'empty'}")], ["add"])
    with pytest.raises(UserError, match="verdict folder"):
        load_candidates([parse_candidate_option(f"accepted={tmp_path / 'empty'}")], ["add"])
    with pytest.raises(UserError, match="given twice"):
        load_candidates([("A", tmp_path), ("A", tmp_path)], ["add"])
