"""Real archives, complete and honest: small real packages in tmp dirs, real compilers, real sandboxed runs.

Each test builds the case the issue names (a validator that fails to link, a missing .in, a Python 2
submission, a mixed/ submission with @EXPECTED_RESULTS@, same-size inputs with different workloads, a
C++ and a Python solution in one problem, the 2023-07 layout) and checks what `speedaudit suite` and
`speedaudit collect` list, label, choose and measure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from audits.cli import main
from audits.collect.suite import load_suite, probe_optimization_tests
from audits.corpus.io import load_corpus
from audits.checks.discriminability import run_discriminability_audit
from stats.ranking import percentile_table, select_runs
from tests.collect.package_files import write

CLI = [sys.executable, "-c", "import sys; from audits.cli import main; sys.exit(main())"]
ECHO_PY = "import sys\nsys.stdout.write(sys.stdin.read())\n"
ECHO_CPP = "#include <iostream>\nint main(){std::cout<<std::cin.rdbuf();}\n"
# sum of 0..n-1: the input's number is the workload
LOOP_PY = "n = int(input())\ns = 0\nfor i in range(n):\n    s += i\nprint(s)\n"
LOOP_CPP = ("#include <cstdio>\nint main(){long long n,s=0;if(scanf(\"%lld\",&n)!=1)return 1;"
            "for(volatile long long i=0;i<n;i++)s+=i;printf(\"%lld\\n\",s);}\n")
VALIDATOR_MAIN = ("#include <fstream>\n#include <iostream>\n#include <string>\nint main(int c,char**v){"
                  "std::ifstream a(v[2]);std::string x,y;a>>x;std::cin>>y;return x==y?42:43;}\n")


def echo_problem(root: Path, **extra) -> Path:
    files = {"problem.yaml": "name: Echo\n",
             "data/sample/1.in": "hello\n", "data/sample/1.ans": "hello\n",
             "data/secret/1.in": "abc\n", "data/secret/1.ans": "abc\n",
             "submissions/accepted/echo.py": ECHO_PY}
    files.update(extra)
    return write(root, files)


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


# ---------------------------------------------------------------- build failures are skips, never crashes


def test_validator_that_fails_to_link_is_a_skip_in_suite_and_collect(tmp_path):
    suite_dir = tmp_path / "contest"
    echo_problem(suite_dir / "good")
    # two .cpp files that each define main: compiles, fails to link (ld removes its output file)
    echo_problem(suite_dir / "twomains", **{
        "problem.yaml": "name: Two mains\nvalidation: custom\n",
        "output_validators/check/a.cpp": VALIDATOR_MAIN, "output_validators/check/b.cpp": VALIDATOR_MAIN})
    # a submission that fails to link: declared, never defined
    echo_problem(suite_dir / "good", **{"submissions/accepted/nolink.cpp": "int f();\nint main(){return f();}\n"})
    proc = run_cli("suite", str(suite_dir), "--build-dir", str(tmp_path / "build"), "--no-probe")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "twomains: 1 validator" in proc.stdout
    line = next(line for line in proc.stdout.splitlines() if "twomains/output_validators/check:" in line)
    assert "custom output validator cannot be built" in line and "multiple definition of `main'" in line
    assert "\n" not in line and "first defined here" in line  # the linker's first error line, on one line

    out = tmp_path / "corpus.parquet"
    proc = run_cli("collect", str(suite_dir), "--out", str(out), "--repeats", "1", "--timeout", "5",
                   "--no-progress")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    assert "twomains/output_validators/check: custom output validator cannot be built" in proc.stdout
    skip = next(line for line in proc.stdout.splitlines() if "good/accepted/nolink.cpp" in line)
    assert "build failed" in skip and "undefined reference to `f()'" in skip
    corpus = load_corpus(out)
    body = corpus.loc[corpus["role"] != "floor"]
    assert set(body["problem"].astype(str)) == {"good"} and set(body["solution"].astype(str)) == {"accepted/echo.py"}
    assert (body["status"] == "ok").all()


def test_tests_without_an_input_or_answer_are_listed_per_problem_with_a_count(tmp_path):
    files = {f"data/secret/{i:02d}.ans": f"{i}\n" for i in range(1, 8)}   # 7 answers ...
    files.update({f"data/secret/{i:02d}.in": f"{i}\n" for i in (1, 2, 3)})  # ... only 3 inputs
    files.update({"data/secret/extra.in": "x\n"})                            # an input without answer
    echo_problem(tmp_path / "s" / "p", **files)
    suite = load_suite(tmp_path / "s")
    (problem,) = suite.problems
    assert problem.unusable_tests == 5
    assert sorted(t.name for t in problem.tests) == ["sample/1", "secret/01", "secret/02", "secret/03", "secret/1"]
    listed = sorted((s.path.name, s.what, s.problem) for s in suite.skipped)
    assert listed == [*[(f"{i:02d}.ans", "test", "p") for i in range(4, 8)],
                      ("extra.in", "test", "p")]
    assert all("no input file" in s.reason for s in suite.skipped if s.path.suffix == ".ans")
    text = suite.summary()
    assert "5 unusable (listed below)" in text and "p: 5 tests" in text and "(5 unusable)" in text
    assert suite.to_frame().loc[0, "unusable_tests"] == 5


def test_python2_and_non_compiling_submissions_are_skipped_with_the_reason(tmp_path):
    echo_problem(tmp_path / "s" / "p", **{
        "submissions/accepted/raw.py": "s = raw_input()\nprint(s)\n",
        "submissions/accepted/stmt.py": "import sys\nprint sys.stdin.read()\n",
        "submissions/accepted/shebang.py": "#!/usr/bin/python2\nimport sys\nsys.stdout.write(sys.stdin.read())\n",
        "submissions/accepted/old.py2": "print 'x'\n",
        "submissions/accepted/broken.py": "def f(:\n    pass\n",
        # Python 3 programs that mention Python 2 names safely still load
        "submissions/accepted/compat.py": "try:\n    input = raw_input\nexcept NameError:\n    pass\n" + ECHO_PY,
        "submissions/accepted/own_xrange.py": "def xrange(n):\n    return range(n)\n" + ECHO_PY,
    })
    suite = load_suite(tmp_path / "s")
    names = {s.name for s in suite.problems[0].submissions}
    assert names == {"accepted/echo.py", "accepted/compat.py", "accepted/own_xrange.py"}
    reasons = {s.path.name: s.reason for s in suite.skipped}
    assert reasons["raw.py"].startswith("Python 2 program (line 1 uses raw_input")
    assert reasons["stmt.py"].startswith("Python 2 program (line 2: Missing parentheses in call to 'print'")
    assert reasons["shebang.py"].startswith("Python 2 program (its first line asks for Python 2")
    assert reasons["old.py2"].startswith("Python 2 program (.py2)")
    assert reasons["broken.py"].startswith("does not compile under /usr/bin/python3: line 1")
    # the chosen interpreter compiles, and the skipped Python 2 program would indeed fail under Python 3
    proc = subprocess.run(["/usr/bin/python3", str(tmp_path / "s/p/submissions/accepted/raw.py")], input="a\n",
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "NameError" in proc.stderr


def test_expected_results_headers_decide_correctness_in_any_folder(tmp_path):
    echo_problem(tmp_path / "s" / "p", **{
        "submissions/mixed/slow_ok.py": "# @EXPECTED_RESULTS@: ACCEPTED, TIME_LIMIT_EXCEEDED\n" + ECHO_PY,
        "submissions/mixed/wrong.cpp": "// @EXPECTED_RESULTS@: WRONG-ANSWER, CORRECT\nint main(){}\n",
        "submissions/mixed/unlabelled.py": ECHO_PY,
        "submissions/accepted/not_really.cpp": "/* @EXPECTED_RESULTS@: CORRECT, NO-OUTPUT */\nint main(){}\n",
        "submissions/wrong_answer/actually_fine.py": "# @EXPECTED_RESULTS@: CORRECT\n" + ECHO_PY,
        "submissions/mixed/typo.py": "# @EXPECTED_RESULTS@: ACCEPTED, SLOWISH\n" + ECHO_PY,
    })
    suite = load_suite(tmp_path / "s")
    subs = {s.name: s for s in suite.problems[0].submissions}
    assert {n: s.correct for n, s in subs.items()} == {
        "accepted/echo.py": True, "accepted/not_really.cpp": False, "mixed/slow_ok.py": True,
        "mixed/wrong.cpp": False, "wrong_answer/actually_fine.py": True}
    assert subs["mixed/slow_ok.py"].expected_results == ("ACCEPTED", "TIME_LIMIT_EXCEEDED")
    assert subs["accepted/not_really.cpp"].expected_results == ("ACCEPTED", "NO_OUTPUT")
    reasons = {s.path.name: s.reason for s in suite.skipped}
    assert reasons["unlabelled.py"].startswith("in submissions/mixed/ without an @EXPECTED_RESULTS@ header")
    assert "unknown result 'SLOWISH'" in reasons["typo.py"]
    assert "mixed                       1  (correct, 1 by @EXPECTED_RESULTS@)" in suite.summary()

    # collected, the mixed correct one is a correct reference in the pool
    out = tmp_path / "c.parquet"
    assert main(["collect", str(tmp_path / "s"), "--out", str(out), "--repeats", "1", "--no-progress",
                 "--timeout", "5"]) == 0
    corpus = load_corpus(out)
    labels = corpus.loc[corpus["role"] != "floor"].groupby("solution", observed=True)["correct"].first().to_dict()
    assert labels["mixed/slow_ok.py"] and not labels["accepted/not_really.cpp"] and labels["accepted/echo.py"]


# ---------------------------------------------------------------- optimization tests by workload, not by name


def workload_problem(root: Path, heavy: set[int], n_tests: int = 8) -> Path:
    files = {"problem.yaml": "name: Loop\n", "submissions/accepted/loop.py": LOOP_PY,
             "submissions/accepted/loop.cpp": LOOP_CPP}
    for i in range(1, n_tests + 1):
        n = 2_000_000 if i in heavy else 10
        files[f"data/secret/{i:02d}.in"] = f"{n:010d}\n"  # every input is 11 bytes
        files[f"data/secret/{i:02d}.ans"] = f"{n * (n - 1) // 2}\n"
    return write(root, files)


def test_same_size_inputs_a_probe_picks_the_heavy_ones_and_says_so(tmp_path):
    workload_problem(tmp_path / "s" / "loop", heavy={3, 6, 7})
    suite = load_suite(tmp_path / "s", n_largest_optimization=3)
    (problem,) = suite.problems
    by_name = {t.name for t in problem.tests_of_kind("optimization")}
    assert by_name == {"secret/01", "secret/02", "secret/03"}  # without a probe: by name, and it says so
    assert "chosen BY NAME" in problem.optimization_choice and len(problem.probe_candidates) == 8

    record = tmp_path / "probe.json"
    probed = probe_optimization_tests(suite, record=record)
    (problem,) = probed.problems
    assert {t.name for t in problem.tests_of_kind("optimization")} == {"secret/03", "secret/06", "secret/07"}
    assert "picked by a probe run (2 reference(s) x 8 tests" in problem.optimization_choice
    seconds = dict(problem.probe_seconds)
    assert min(seconds[f"secret/0{i}"] for i in (3, 6, 7)) > max(seconds[f"secret/0{i}"] for i in (1, 2, 4, 5, 8))
    # the record is reused as it is (a resumed collect times the same tests), even when the probe would differ
    kept = json.loads(record.read_text())
    kept["loop"]["seconds"] = [[name, 1.0 if name == "secret/08" else 0.0] for name, _ in kept["loop"]["seconds"]]
    record.write_text(json.dumps(kept))
    again = probe_optimization_tests(suite, record=record).problems[0]
    assert {t.name for t in again.tests_of_kind("optimization")} == {"secret/08", "secret/01", "secret/02"}

    proc = run_cli("suite", str(tmp_path / "s"), "--n-largest", "3")
    assert proc.returncode == 0 and "picked by a probe run" in proc.stdout
    assert "chosen secret/03, secret/06, secret/07" in proc.stdout or \
        all(f"secret/0{i}" in proc.stdout for i in (3, 6, 7))


# ---------------------------------------------------------------- languages: floors and pools


def test_cpp_and_python_in_one_problem_per_language_floors_and_pools(tmp_path):
    # a trivial problem: every reference finishes at its language's start-up time
    echo_problem(tmp_path / "s" / "echo", **{
        "submissions/accepted/echo2.py": "import sys\nprint(sys.stdin.read(), end='')\n",
        "submissions/accepted/echo.cpp": ECHO_CPP,
        "submissions/accepted/echo2.cpp": "#include <cstdio>\nint main(){int c;while((c=getchar())!=EOF)putchar(c);}\n",
    })
    out = tmp_path / "c.parquet"
    assert main(["collect", str(tmp_path / "s"), "--out", str(out), "--repeats", "3", "--no-progress",
                 "--timeout", "5"]) == 0
    corpus = load_corpus(out)
    assert "language" in corpus.columns
    floor_rows = corpus.loc[corpus["role"] == "floor"]
    assert set(floor_rows["language"].astype(str)) == {"python", "cpp"}
    assert dict(zip(floor_rows["solution"].astype(str), floor_rows["language"].astype(str))) == \
        {"python": "python", "cpp": "cpp"}
    floors = floor_rows.groupby(floor_rows["language"].astype(str))["duration_s"].median()  # by hand
    assert floors["python"] > floors["cpp"]  # an interpreter start-up against an exec of a static program

    audit = run_discriminability_audit(corpus, n_boot=20)
    (env,) = audit.runs.values()
    assert env.floors == {"python": floors["python"], "cpp": floors["cpp"]}
    assert "python" in env.floor_source and "cpp" in env.floor_source
    # each test is judged by its own language: the median of that language's references vs its floor
    body = corpus.loc[(corpus["role"] == "reference") & (corpus["test_kind"] == "optimization")]
    cells = body.groupby([body["test"].astype(str), body["solution"].astype(str)])["duration_s"].median()
    language = body.groupby(body["solution"].astype(str))["language"].first().astype(str)
    for row in env.tests.itertuples():
        per_lang = cells.xs(row.test, level=0).groupby(language).median()
        expect = sorted(lang for lang, med in per_lang.items() if med <= 2 * floors[lang])
        assert row.near_floor == bool(expect) and row.near_floor_languages == ", ".join(expect)
    # echo on 4 bytes: the Python references run at Python start-up, so the test is flagged for Python
    assert "python" in env.tests["near_floor_languages"].iloc[0]

    # pools per language: a Python solution is ranked among the Python references only
    run = select_runs(corpus.loc[corpus["role"] != "floor"], environment="default", campaign="c0")
    pct = percentile_table(run)
    one = percentile_table(run, by_language=False)
    med = run.groupby([run["test"].astype(str), run["solution"].astype(str)])["duration_s"].median()
    for row in pct.itertuples():
        mine = language[str(row.solution)]
        same = [s for s in language.index if language[s] == mine and s != str(row.solution)]
        pool = np.array([med[(str(row.test), s)] for s in same])
        d = med[(str(row.test), str(row.solution))]
        assert row.percentile == 100 * (np.sum(pool < d) + 0.5 * np.sum(pool == d)) / len(pool)
        everyone = np.array([med[(str(row.test), s)] for s in language.index if s != str(row.solution)])
        other = one.loc[(one["solution"] == row.solution) & (one["test"] == row.test), "percentile"].item()
        assert other == 100 * (np.sum(everyone < d) + 0.5 * np.sum(everyone == d)) / len(everyone)


# ---------------------------------------------------------------- the 2023-07 draft layout


def test_2023_07_layout_loads_and_collects(tmp_path):
    write(tmp_path / "s" / "p", {
        "problem.yaml": "problem_format_version: 2023-07-draft\ntype: pass-fail\nname:\n  en: Echo 2023\n"
                        "  de: Echo\nlimits:\n  time_limit: 2.0\n",
        "output_validator/validate.cpp": VALIDATOR_MAIN,  # singular folder, no 'validation: custom' key
        "data/sample/1.in": "a\n", "data/sample/1.ans": "a\n",
        "data/sample/1.in.statement": "shown\n", "data/sample/1.ans.statement": "shown\n",
        "data/secret/testdata.yaml": "output_validator_args: ignored\n",
        "data/secret/g1/testdata.yaml": "output_validator_args: [case_sensitive]\n",
        "data/secret/g1/1.in": "bb\n", "data/secret/g1/1.ans": "bb\n",
        "data/invalid_input/bad.in": "oops\n",
        "submissions/accepted/echo.py": ECHO_PY,
        "submissions/rejected/shout.py": "print(input().upper())\n",
    })
    suite = load_suite(tmp_path / "s", build_dir=tmp_path / "build")
    assert not suite.skipped
    (problem,) = suite.problems
    assert problem.name == "Echo 2023" and problem.time_limit_s == 2.0 and problem.checker.kind == "custom"
    assert [t.name for t in problem.tests] == ["sample/1", "secret/g1/1"]
    assert problem.tests[1].validator_flags == ("case_sensitive",)
    assert {s.name: s.correct for s in problem.submissions} == {"accepted/echo.py": True,
                                                                "rejected/shout.py": False}
    out = tmp_path / "c.parquet"
    assert main(["collect", str(tmp_path / "s"), "--out", str(out), "--repeats", "1", "--no-progress",
                 "--timeout", "5"]) == 0
    corpus = load_corpus(out)
    status = corpus.loc[corpus["role"] != "floor"].groupby("solution", observed=True)["status"].agg(
        lambda s: sorted(set(map(str, s))))
    assert status.to_dict() == {"accepted/echo.py": ["ok"], "rejected/shout.py": ["wrong_answer"]}
    assert os.path.exists(out)
