"""Real archives whole (issue 22 items 6, 7; issue 24 item 9): a package tree laid out as BAPCtools and
Kattis archives are (problem.yaml with limits and the 2023-07 validation mapping, data/sample,
data/secret groups, submissions/<verdict>/, output_validators/<name>/), loaded and built by the real
`speedaudit suite` and timed by the real `speedaudit collect` in the sandbox."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from audits.collect.campaign import CHECKER_ERROR_NOTE
from audits.collect.languages import newest_cxx_std
from audits.corpus.io import load_corpus
from stats.ranking import solution_cells
from audits.collect.suite import load_suite
from tests.collect.package_files import write

CLI = [sys.executable, "-c", "import sys; from audits.cli import main; sys.exit(main())"]
ECHO_PY = "import sys\nsys.stdout.write(sys.stdin.read())\n"
# C++20 only: designated initialisers, std::ranges, <span>
CXX20 = ("#include <algorithm>\n#include <iostream>\n#include <ranges>\n#include <span>\n#include <vector>\n"
         "struct P { int a; int b; };\n"
         "int main(){ std::vector<long long> v; long long x; while (std::cin >> x) v.push_back(x);\n"
         "  P p{.a = 1, .b = 2}; std::ranges::sort(v); std::span<long long> s(v);\n"
         "  long long t = 0; for (auto y : s) t += y; std::cout << t + p.a - 1 + p.b - 2 << '\\n'; }\n")
BROKEN_CPP = "int main() { return undeclared_name; }\n"
SUM_PY = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def sum_problem(root: Path, yaml: str, **extra: str) -> Path:
    files = {"problem.yaml": yaml, "data/sample/1.in": "1 2\n", "data/sample/1.ans": "3\n",
             "data/secret/group1/1.in": "4 5 6\n", "data/secret/group1/1.ans": "15\n",
             "data/secret/group1/2.in": "7 8\n", "data/secret/group1/2.ans": "15\n",
             "submissions/accepted/sum.py": SUM_PY}
    files.update(extra)
    return write(root, files)


def make_tree(base: Path) -> Path:
    suite = base / "contest"
    sum_problem(suite / "alpha", "name: Alpha\nlimits:\n  time_limit: 4\nvalidation:\n  scoring: false\n"
                                 "  interactive: false\n",
                **{"submissions/accepted/modern.cpp": CXX20, "submissions/accepted/broken.cpp": BROKEN_CPP})
    linked = sum_problem(suite / "bravo", "name: Bravo\n")
    os.symlink("../../../alpha/data/secret/group1", linked / "data" / "secret" / "shared")
    sum_problem(suite / "charlie", "name: Charlie\nvalidation: {interactive: true}\n")
    sum_problem(suite / "delta", "name: Delta\n", **{"submissions/accepted/sum.py": "", })
    (suite / "delta" / "submissions" / "accepted" / "sum.py").unlink()
    write(suite / "delta", {"submissions/wrong_answer/zero.py": "print(0)\n"})
    return suite


def test_suite_lists_every_other_problem_names_the_link_and_builds_cxx20(tmp_path):
    suite = make_tree(tmp_path)
    done = subprocess.run([*CLI, "suite", str(suite), "--no-probe", "--build-dir", str(tmp_path / "build"),
                           "--n-largest", "0"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "problems: 2" in out  # alpha and delta; bravo (link) and charlie (interactive) skipped
    assert "bravo/data/secret/shared: data/secret/shared is a symbolic link (to ../../../alpha/data/secret/group1" \
           in out
    assert "charlie" in out and "interactive problem" in out
    loaded = load_suite(suite, build_dir=tmp_path / "build", build_submissions=True)
    alpha = loaded.problem("alpha")
    assert {s.name for s in alpha.submissions} == {"accepted/modern.cpp", "accepted/sum.py"}  # C++20 built
    broken = next(s for s in loaded.skipped if s.path.name == "broken.cpp")
    assert broken.what == "submission" and f"-std={newest_cxx_std()}" in broken.reason
    assert "broken.cpp:1:21: error:" in broken.reason and "undeclared_name" in broken.reason
    assert f"alpha/submissions/accepted/broken.cpp: does not build (-std={newest_cxx_std()})" in out
    # what cannot be measured is said (issue 24 item 9)
    assert "alpha: no optimization tests" in out and "delta: no accepted (correct) submission" in out
    # gnu++17 (the old fixed standard) does not build it: the standard matters
    old = load_suite(suite, build_dir=tmp_path / "build17", build_submissions=True, cxx_std="gnu++17",
                     problems=["alpha"])
    assert {s.name for s in old.problem("alpha").submissions} == {"accepted/sum.py"}
    assert any(s.path.name == "modern.cpp" for s in old.skipped)


def test_collect_times_the_cxx20_solution_and_warns_about_the_time_limit(tmp_path):
    suite = make_tree(tmp_path)
    out = tmp_path / "corpus.parquet"
    done = subprocess.run([*CLI, "collect", str(suite), "--problems", "alpha", "--repeats", "1", "--timeout", "2",
                           "--sandbox", "local", "--out", str(out), "--no-probe"],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    assert "alpha: --timeout 2 s is below the problem's own time limit 4 s" in done.stderr
    assert "load: 100%" in done.stderr and "build: 100%" in done.stderr  # the bars, with counts
    corpus = pd.read_parquet(out)
    modern = corpus[corpus["solution"].astype(str) == "accepted/modern.cpp"]
    assert len(modern) and (modern["status"].astype(str) == "ok").all()


def test_a_validator_that_always_fails_still_writes_the_corpus_and_says_it_is_not_transient(tmp_path):
    suite = tmp_path / "s"
    sum_problem(suite / "p", "name: P\nvalidation: custom\n",
                **{"output_validators/bad/validate.py": "import sys\nsys.exit(7)\n"})
    out = tmp_path / "c.parquet"
    done = subprocess.run([*CLI, "collect", str(suite), "--repeats", "1", "--timeout", "2", "--sandbox", "local",
                           "--out", str(out), "--no-probe", "--no-progress"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "checker errors 3 (status checker_error" in done.stdout and "NOT transient" in done.stdout
    assert "checker_error 3" in done.stdout
    corpus = load_corpus(out)  # validates: checker_error is a status of the schema
    rows = corpus[corpus["problem"].astype(str) == "p"]
    assert len(rows) == 3 and set(rows["status"].astype(str)) == {"checker_error"}
    reasons = pd.read_parquet(out).query("problem == 'p'")["reason"].astype(str)
    assert reasons.str.startswith(CHECKER_ERROR_NOTE).all() and reasons.str.contains("exited with 7").all()
    # the estimators take no timing from them
    cells = solution_cells(corpus, by=["problem", "test", "solution"])
    p_cells = cells[cells["problem"].astype(str) == "p"]
    assert (p_cells["n_ok"] == 0).all() and set(p_cells["status"].astype(str)) == {"checker_error"}
    assert p_cells["duration_s"].isna().all()
    assert (corpus.loc[corpus["problem"].astype(str) != "p", "status"].astype(str) == "ok").all()  # the floor rows


def test_a_probe_whose_every_run_times_out_says_so_instead_of_figures(tmp_path):
    files = {f"data/secret/{i:02d}.in": f"{i:04d}\n" for i in range(1, 9)}  # 8 inputs of one size
    files.update({f"data/secret/{i:02d}.ans": f"{i}\n" for i in range(1, 9)})
    write(tmp_path / "s" / "slow", {"problem.yaml": "name: Slow\n",
                                    "submissions/accepted/slow.py": "import time\ntime.sleep(30)\n", **files})
    from audits.collect.suite import probe_optimization_tests

    suite = load_suite(tmp_path / "s", n_largest_optimization=2)
    assert suite.problems[0].probe_candidates
    probed = probe_optimization_tests(suite, sandbox="local", wall_s=0.3)
    choice = probed.problems[0].optimization_choice
    assert "probe inconclusive: every probe run (8) hit the probe's 0.3 s limit" in choice, choice
    assert "ms CPU" not in choice
