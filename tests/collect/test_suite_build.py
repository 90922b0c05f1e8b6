"""fixtures/suites/speedbench/build.py with C++ accepted solutions, run for real on tiny problems.

Each test writes a one-problem suite in a temporary folder (a generator, two tests, a Python and a C++
accepted solution) and runs ``build.py --root`` on it as a separate process with Debian's Python and
g++, as a suite author would: the answers are written where the two agree, the build stops (exit 1)
naming both solutions where the C++ one disagrees, and a compile error is reported with the file and
the compiler's first error line. ``TMPDIR`` points at a folder of the test, so that the temporary build
folder can be seen to be removed.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from audits.collect.languages import DEFAULT_PYTHON

BUILD = Path(__file__).resolve().parents[2] / "fixtures" / "suites" / "speedbench" / "build.py"

GEN = """import sys
kind, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
print(size)
print(" ".join(str((i * 7 + seed) % 13) for i in range(size)))
"""
TESTS = """# data path  kind size seed
sample/1                       list 3  1
secret/optimization/opt-1-n50  list 50 2
"""
SUM_PY = "n = int(input())\nprint(sum(map(int, input().split())))\n"
SUM_CPP = """#include <cstdio>
int main() { long n, x, s = 0; if (std::scanf("%ld", &n) != 1) return 1;
  for (long i = 0; i < n; ++i) { std::scanf("%ld", &x); s += x; } std::printf("%ld\\n", s); }
"""


def _problem(root: Path, cpp_name: str, cpp_source: str) -> Path:
    prob = root / "suite" / "tiny"
    (prob / "generators").mkdir(parents=True)
    (prob / "submissions" / "accepted").mkdir(parents=True)
    (prob / "problem.yaml").write_text("name: tiny\nlimits:\n  time_limit: 3\n")
    (prob / "generators" / "gen.py").write_text(GEN)
    (prob / "generators" / "tests.txt").write_text(TESTS)
    (prob / "submissions" / "accepted" / "sum.py").write_text(SUM_PY)
    (prob / "submissions" / "accepted" / cpp_name).write_text(cpp_source)
    return prob


def _build(root: Path) -> subprocess.CompletedProcess:
    tmp = root / "tmpdir"
    tmp.mkdir()
    return subprocess.run([DEFAULT_PYTHON, str(BUILD), "--root", str(root / "suite"), "--python", DEFAULT_PYTHON,
                           "tiny"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TMPDIR": str(tmp)})


def test_cpp_and_python_solutions_that_agree_give_the_answers(tmp_path):
    prob = _problem(tmp_path, "sum.cpp", SUM_CPP)
    done = _build(tmp_path)
    assert done.returncode == 0, done.stderr
    for path, size, seed in (("sample/1", 3, 1), ("secret/optimization/opt-1-n50", 50, 2)):
        expected = sum((i * 7 + seed) % 13 for i in range(size))  # independent of both programs
        assert (prob / "data" / f"{path}.ans").read_text().split() == [str(expected)], path
    assert "2 agree" in done.stdout
    assert list((tmp_path / "tmpdir").iterdir()) == [], "the temporary build folder was not removed"


def test_a_disagreeing_cpp_solution_aborts_the_build_naming_both(tmp_path):
    wrong = SUM_CPP.replace('s += x; }', 's += x; } s += 1;')   # off by one
    prob = _problem(tmp_path, "off_by_one.cc", wrong)
    done = _build(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "tiny/sample/1: accepted solutions disagree: off_by_one.cc vs sum.py" in done.stderr
    assert not list((prob / "data").rglob("*.ans"))
    assert list((tmp_path / "tmpdir").iterdir()) == []


def test_a_compile_error_aborts_the_build_naming_the_file_and_the_first_error(tmp_path):
    broken = SUM_CPP.replace("long n, x, s = 0;", "long n, x;")   # s undeclared
    _problem(tmp_path, "broken.cxx", broken)
    done = _build(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith("error: tiny/submissions/accepted/broken.cxx: does not compile (g++ -O2 -std=gnu++")
    assert "broken.cxx:3:" in message and "error:" in message.split("broken.cxx:3:")[1]
    assert "was not declared" in message    # the compiler's own words (its quotes follow the locale)
    assert list((tmp_path / "tmpdir").iterdir()) == []
