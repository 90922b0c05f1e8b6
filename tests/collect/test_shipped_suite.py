"""The shipped speedbench suite and the corpora collected from it.

* every problem has a reference pool like a leaderboard (issue 25): >= 20 accepted submissions, >= 4
  of them C++;
* EVERY accepted submission, Python and C++, is correct on EVERY test of its problem (sample,
  correctness and optimization; slow: one test per problem, so a failure names the problem, program
  and test);
* every accepted and time_limit_exceeded submission passes every correctness test (samples and
  ``data/secret/correctness``: all small, so the slow-but-correct programs finish quickly);
* every wrong_answer submission fails at least one of those tests;
* the suite loads with ``audits.collect.suite.load_suite`` with nothing skipped and has the promised shape;
* the seeded generators reproduce the shipped inputs byte for byte;
* each shipped corpus validates with ``audits.corpus.io.load_corpus`` and matches its manifest.

Programs run for real with the interpreter the corpora were collected with (Debian's
``/usr/bin/python3``, the default of ``speedaudit collect``); C++ programs are compiled once per
module through ``audits.collect.languages.prepare`` (the collector's build: ``g++ -O2``, the newest
standard, in the build sandbox). Outputs are checked with the suite's own checker.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import load_corpus
from audits.collect.languages import DEFAULT_PYTHON, prepare
from audits.collect.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "fixtures" / "suites" / "speedbench"
CORPORA = ROOT / "fixtures" / "corpora"
RUN_TIMEOUT_S = 20.0   # generous: the machine is shared; correctness tests take ~20 ms each, the largest
#                        optimization tests at most ~1 s for the slowest accepted program on a quiet machine
#: Issue 25: a reference pool like a leaderboard.
MIN_ACCEPTED, MIN_ACCEPTED_CPP = 20, 4
PROBLEM_IDS = sorted(p.parent.name for p in SUITE.glob("*/problem.yaml"))



def _load_script(path: Path, name: str):
    """Import a standalone script (not a package module) under a unique module name."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the suite's own, standard-library-only build script, and the docs' table snippet
suite_build = _load_script(SUITE / "build.py", "_speedbench_build")
summarize = _load_script(CORPORA / "summarize.py", "_speedbench_summarize")
robust_cv_by_problem, speed_spread = summarize.robust_cv_by_problem, summarize.speed_spread


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE)


@pytest.fixture(scope="module")
def commands(suite, tmp_path_factory):
    """{(problem, submission): argv}: Python run from its file, C++ compiled once (the collector's build)."""
    build = tmp_path_factory.mktemp("cxx-build")
    jobs = [(p.id, s) for p in suite.problems for s in p.submissions]

    def command(job):
        pid, sub = job
        if sub.language == "python":
            return (pid, sub.name), [DEFAULT_PYTHON, str(sub.path)]
        return (pid, sub.name), list(prepare(sub, build).argv)   # BuildError names the file and first error

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(command, jobs))


def _run(argv: list[str], test) -> tuple[bytes | None, str]:
    with open(test.input_path, "rb") as fin:
        try:
            proc = subprocess.run(argv, stdin=fin, capture_output=True, timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return None, "timeout"
    if proc.returncode != 0:
        return None, f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}"
    return proc.stdout, "ok"


def _judge(problem, sub, test, argv, work: Path) -> tuple[str, str, str, bool, str]:
    """Run one program on one test and judge its output with the problem's checker."""
    out, reason = _run(argv, test)
    if out is None:
        return problem.id, sub.name, test.name, False, reason
    out_path = work / f"{problem.id}-{sub.name.replace('/', '_')}-{test.name.replace('/', '_')}.out"
    out_path.write_bytes(out)
    ok, why = problem.checker_for(test).check(out_path, input_path=test.input_path,
                                              answer_path=test.answer_path, workdir=work)
    out_path.unlink()
    return problem.id, sub.name, test.name, ok, why


@pytest.fixture(scope="module")
def judged(commands, tmp_path_factory):
    """``judge(jobs)``: [(problem, submission, test, passed, reason)] for [(problem, submission, test)], each
    (problem, submission, test) run and judged once per module, two at a time.

    The programs are deterministic and a run's verdict is a pure function of program and test, so the
    accepted programs' correctness runs of :func:`test_every_accepted_submission_is_correct_on_every_test`
    (1,500 of the module's 3,511 runs) are not run a second time for :func:`verdicts`: both read the one run's
    verdict, and each test still runs whatever it needs that no test before it ran (alone, it runs all of it).
    """
    work = tmp_path_factory.mktemp("runs")
    done: dict = {}

    def one(job):
        problem, sub, test = job
        return _judge(problem, sub, test, commands[(problem.id, sub.name)], work)

    def judge(jobs):
        keys = [(problem.id, sub.name, test.name) for problem, sub, test in jobs]
        todo = {key: job for key, job in zip(keys, jobs) if key not in done}
        with ThreadPoolExecutor(max_workers=2) as pool:
            done.update(zip(todo, pool.map(one, todo.values())))
        return [done[key] for key in keys]

    return judge


@pytest.fixture(scope="module")
def verdicts(suite, judged):
    """{(problem, submission): [(test, passed, reason), ...]} over every correctness test."""
    results = judged([(p, s, t) for p in suite.problems for s in p.submissions for t in p.tests_of_kind("correctness")])
    table: dict = {}
    for pid, sub, test, ok, why in results:
        table.setdefault((pid, sub), []).append((test, ok, why))
    return table


def test_suite_loads_completely_with_the_promised_shape(suite):
    assert suite.skipped == ()
    assert len(suite.problems) >= 12
    assert [p.id for p in suite.problems] == PROBLEM_IDS
    for p in suite.problems:
        by_verdict = {}
        for s in p.submissions:
            by_verdict.setdefault(s.expected, []).append(s)
            assert s.language in ("python", "cpp"), s.name
        accepted = by_verdict.get("accepted", [])
        assert len(accepted) >= MIN_ACCEPTED, f"{p.id}: {len(accepted)} accepted, issue 25 wants {MIN_ACCEPTED}"
        n_cpp = sum(s.language == "cpp" for s in accepted)
        assert n_cpp >= MIN_ACCEPTED_CPP, f"{p.id}: {n_cpp} accepted C++ programs, issue 25 wants {MIN_ACCEPTED_CPP}"
        assert len(by_verdict.get("wrong_answer", [])) >= 2, p.id
        assert len(by_verdict.get("time_limit_exceeded", [])) >= 1, p.id
        opt = p.tests_of_kind("optimization")
        assert len(opt) >= 6, p.id
        assert all(t.group == "secret/optimization" for t in opt), p.id
        assert any(t.group == "sample" for t in p.tests), p.id
        assert any(t.group == "secret/correctness" for t in p.tests), p.id
        assert p.time_limit_s == 3 and p.memory_limit_mb == 1024, p.id


# 32 MB (was 20): issue 25 asks for larger optimization tests (the median accepted Python solution at >= 100 ms
# of CPU on the largest test), so each problem gained a test of up to ~1.5 MB (the pool helpers' cap) with its
# answer: 12 x ~1.5 MB on top of the ~10 MB before, with room for the 20+ programs per problem.
SUITE_CAP_MB = 32


def test_suite_stays_small():
    total = sum(f.stat().st_size for f in SUITE.rglob("*") if f.is_file())
    assert total < SUITE_CAP_MB * 2**20, f"suite is {total / 2**20:.1f} MB; the cap is {SUITE_CAP_MB} MB"


@pytest.mark.slow
@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_every_accepted_submission_is_correct_on_every_test(problem_id, suite, judged):
    """Issue 25: every accepted program, Python and C++, on every test (sample, correctness, optimization)."""
    problem = suite.problem(problem_id)
    accepted = [s for s in problem.submissions if s.expected == "accepted"]
    assert accepted and {t.kind for t in problem.tests} == {"correctness", "optimization"}
    results = judged([(problem, s, t) for s in accepted for t in problem.tests])
    failures = [f"{problem_id}/{sub} on {test}: {why}" for _pid, sub, test, ok, why in results if not ok]
    assert not failures, f"{len(failures)} of {len(results)} runs wrong:\n" + "\n".join(failures)
    assert len(results) == len(accepted) * len(problem.tests) >= MIN_ACCEPTED * 10


def test_correct_submissions_pass_every_correctness_test(suite, verdicts):
    failures = [f"{pid}/{sub} on {test}: {why}"
                for (pid, sub), rows in verdicts.items()
                if sub.split("/")[0] in ("accepted", "time_limit_exceeded")
                for test, ok, why in rows if not ok]
    assert not failures, "\n".join(failures)
    # every correct submission was actually judged on every correctness test
    for p in suite.problems:
        n = len(p.tests_of_kind("correctness"))
        for s in p.submissions:
            assert len(verdicts[(p.id, s.name)]) == n >= 4


def test_wrong_answer_submissions_fail_a_correctness_test(suite, verdicts):
    never_fail = [f"{pid}/{sub}" for (pid, sub), rows in verdicts.items()
                  if sub.startswith("wrong_answer/") and all(ok for _test, ok, _why in rows)]
    assert not never_fail, f"these wrong answers pass every correctness test: {never_fail}"
    # and they fail as wrong answers (the checker rejects the output), not by crashing
    crashes = [f"{pid}/{sub} on {test}: {why}" for (pid, sub), rows in verdicts.items()
               if sub.startswith("wrong_answer/") for test, ok, why in rows
               if not ok and (why.startswith("exit ") or why == "timeout")]
    assert not crashes, "\n".join(crashes)


def test_generators_reproduce_the_shipped_inputs(suite):
    """The seeded generators (run as build.py runs them) give back every shipped .in file."""
    for p in suite.problems:
        specs = suite_build.read_tests(p.root)
        shipped = {t.name for t in p.tests}
        assert {path for path, *_ in specs} == shipped, p.id
        for path, kind, size, seed in specs:
            gen = subprocess.run([DEFAULT_PYTHON, str(p.root / "generators" / "gen.py"), kind, str(size),
                                  str(seed)], capture_output=True, check=True, timeout=RUN_TIMEOUT_S)
            assert gen.stdout == (p.root / "data" / f"{path}.in").read_bytes(), f"{p.id}/{path}"


def test_build_answer_agreement_uses_the_float_tolerance():
    # hand-worked: 1e-6 tolerance is absolute OR relative, like the Kattis default validator
    assert suite_build.outputs_agree("2.5000004\n7", "2.5 7", 1e-6)
    assert not suite_build.outputs_agree("0.500002 7", "0.5 7", 1e-6)      # 2e-6 abs, 4e-6 rel
    assert suite_build.outputs_agree("1000000.5", "1000000.0", 1e-6)       # relative
    assert not suite_build.outputs_agree("3", "3 4", 1e-6)
    assert not suite_build.outputs_agree("3.0000001", "3", None)           # exact without tolerance
    assert suite_build.float_tolerance(SUITE / "rangeavg") == 1e-6
    assert suite_build.float_tolerance(SUITE / "lis") is None


def _manifest():
    path = CORPORA / "MANIFEST.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_shipped_corpora_validate_and_match_the_manifest(suite):
    manifest = _manifest()
    assert manifest is not None, "fixtures/corpora/MANIFEST.json is missing"
    files = sorted(CORPORA.glob("*.parquet"))
    assert {f.name for f in files} == set(manifest["corpora"]), "manifest and parquet files differ"
    assert sum(f.stat().st_size for f in files) < 10 * 2**20
    environments = set()
    for f in files:
        entry = manifest["corpora"][f.name]
        corpus = load_corpus(f)
        assert len(corpus) == entry["rows"], f.name
        assert entry["command"].startswith("speedaudit collect fixtures/suites/speedbench")
        env = corpus["environment"].astype(str).unique().tolist()
        campaign = corpus["campaign"].astype(str).unique().tolist()
        assert env == [entry["environment"]] and campaign == [entry["campaign"]], f.name
        environments.add(entry["environment"])
        ref = corpus[corpus["role"] == "reference"]
        assert set(ref["problem"].astype(str)) == {p.id for p in suite.problems}, f.name
        assert ref["repeat"].nunique() >= 5, f.name
        assert (corpus["role"] == "floor").any(), f.name
        # accepted programs should essentially always be ok; TLE programs must time out somewhere
        acc = ref[ref["solution"].astype(str).str.startswith("accepted/")]
        assert (acc["status"] == "ok").mean() > 0.99, f.name
        tle = ref[ref["solution"].astype(str).str.startswith("time_limit_exceeded/")]
        assert (tle["status"] == "timeout").any(), f.name
        wa = ref[ref["solution"].astype(str).str.startswith("wrong_answer/")]
        assert (wa["status"] == "wrong_answer").any(), f.name
    assert {"quiet", "busy"} <= environments


POOL_CORPUS = CORPORA / "pool-a.parquet"   # the grown pools, collected on the quiet machine (issue 25)


def _documented_cpu(problem_root: Path) -> dict[str, float]:
    """``SOLUTIONS.md``'s table: accepted file name -> its documented CPU seconds on the largest test.

    The CPU column is found by its header (``CPU ms``, ``CPU (ms)`` or ``CPU (s)``) and read counting from the
    right, since a description may itself hold ``|`` (``O(|T|)``)."""
    lines = (problem_root / "SOLUTIONS.md").read_text().splitlines()
    header = [c.strip() for c in next(line for line in lines if line.startswith("| file")).strip("|").split("|")]
    at = next(i for i, c in enumerate(header) if c.startswith("CPU"))
    from_right = len(header) - at
    scale = 1e-3 if "ms" in header[at] else 1.0
    out = {}
    for line in lines:
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            out[cells[0].strip("`")] = float(cells[-from_right].split()[0]) * scale
    return out


@pytest.mark.parametrize("problem_id", PROBLEM_IDS)
def test_documented_speed_order_holds_on_the_quiet_pool_corpus(problem_id, suite):
    """Issue 25: the grading holds on the quiet corpus. Every accepted program is documented, and every pair
    documented at least 2x apart in CPU time is in the same order in pool-a's median CPU time on the problem's
    heaviest test (the documented figures are on the largest one). 2x: the documented figures were taken one program at a time on a machine shared with other
    sessions (load 1-8, which inflates CPU time 1.5-4x, not evenly), so only a gap well beyond that is a
    claim about the programs; and only where the faster one is at least twice its language's floor in the
    corpus, since below that the sandbox's own start-up is what is measured."""
    problem = suite.problem(problem_id)
    documented = _documented_cpu(problem.root)
    accepted = {s.name.split("/", 1)[1] for s in problem.submissions if s.expected == "accepted"}
    assert set(documented) == accepted, "SOLUTIONS.md and submissions/accepted/ differ"
    corpus = load_corpus(POOL_CORPUS)
    floors = corpus[(corpus["role"] == "floor") & (corpus["status"] == "ok")]
    floor_cpu = floors.groupby(floors["language"].astype(str))["cpu_s"].median().to_dict()
    rows = corpus[(corpus["problem"].astype(str) == problem_id) & (corpus["status"] == "ok")
                  & corpus["solution"].astype(str).str.startswith("accepted/")]
    # the heaviest test (highest median CPU of the accepted programs): input bytes cannot tell knapsack's or
    # primecount's tests apart (100 items, one number)
    heaviest = rows.groupby(rows["test"].astype(str))["cpu_s"].median().idxmax()
    largest = rows.loc[(rows["test"].astype(str) == heaviest).to_numpy()]
    measured = largest.groupby(largest["solution"].astype(str).str.split("/", n=1).str[1])["cpu_s"].median()
    language = largest.groupby(largest["solution"].astype(str).str.split("/", n=1).str[1])["language"].first()
    assert set(measured.index) == accepted, "a program has no ok run on the largest test"
    checked, wrong = 0, []
    for a, cpu_a in documented.items():
        for b, cpu_b in documented.items():
            if cpu_b >= 2 * cpu_a and cpu_a >= 2 * floor_cpu[str(language[a])]:
                checked += 1
                if not measured[a] < measured[b]:
                    wrong.append(f"{a} ({cpu_a * 1e3:.0f} ms documented, {measured[a] * 1e3:.1f} ms measured) vs "
                                 f"{b} ({cpu_b * 1e3:.0f} ms, {measured[b] * 1e3:.1f} ms)")
    assert checked > 0, "no documented pair is far enough apart to check"
    assert not wrong, f"{len(wrong)} of {checked} documented orders do not hold:\n" + "\n".join(wrong)


def test_doc_helpers_against_hand_computation():
    rows = []
    # problem p: 2 reference solutions x 4 tests; per-test reference medians 0.01 .. 0.08
    for t, base in enumerate([0.01, 0.02, 0.04, 0.08]):
        for s, factor in (("accepted/a", 0.5), ("accepted/b", 1.5)):
            for r in range(3):
                rows.append(("e", "c", "p", f"t{t}", s, r, base * factor * (1 + 0.01 * r), "ok", "reference",
                             True, "optimization", 100 * (t + 1)))
    frame = pd.DataFrame(rows, columns=["environment", "campaign", "problem", "test", "solution", "repeat",
                                        "duration_s", "status", "role", "correct", "test_kind", "input_bytes"])
    cv = robust_cv_by_problem(frame)
    med = np.array([0.01, 0.02, 0.04, 0.08]) * 1.01    # mean of 0.5x and 1.5x, median repeat (+1%)
    expected = (np.percentile(med, 75) - np.percentile(med, 25)) / np.median(med)
    assert cv["robust_cv"].iloc[0] == pytest.approx(expected)
    assert cv["robust_cv"].iloc[0] == pytest.approx(0.0325 / 0.03)       # the docstring's example
    assert bool(cv["filterable"].iloc[0])
    spread = speed_spread(frame)
    assert spread["test"].iloc[0] == "t3"
    assert spread["ratio"].iloc[0] == pytest.approx(3.0)


def test_pool_sizing_against_hand_computation():
    """summarize.pool_sizing on a hand-made corpus: the largest test only, median over Python solutions of each
    one's median CPU, the fastest solution's CPU minus its own language's floor; no cpu_s: an empty table."""
    rows = []
    cpu_on_largest = {("accepted/a.py", "python"): 0.30, ("accepted/b.py", "python"): 0.10,
                      ("accepted/c.py", "python"): 0.20, ("accepted/d.cpp", "cpp"): 0.025,
                      ("wrong_answer/w.py", "python"): 0.001}  # not accepted: left out
    for (solution, language), cpu in cpu_on_largest.items():
        for test, size, scale in (("small", 10, 0.01), ("large", 1000, 1.0)):
            for r, jitter in enumerate((1.0, 1.1, 0.9)):
                rows.append(("e", "c", "p", test, solution, r, cpu * scale * jitter, "ok", "reference", True,
                             "optimization", size, language))
    for language, floor in (("python", 0.011), ("cpp", 0.001)):
        for r, jitter in enumerate((1.0, 2.0, 0.5)):
            rows.append(("e", "c", "floor", "floor", f"floor/{language}", r, floor * jitter, "ok", "floor", True,
                         "floor", 0, language))
    frame = pd.DataFrame(rows, columns=["environment", "campaign", "problem", "test", "solution", "repeat",
                                        "cpu_s", "status", "role", "correct", "test_kind", "input_bytes",
                                        "language"])
    frame["duration_s"] = frame["cpu_s"]
    sizing = summarize.pool_sizing(frame).set_index("problem")
    assert list(sizing.index) == ["p"] and sizing.loc["p", "test"] == "large"
    assert sizing.loc["p", "median_python_cpu_ms"] == pytest.approx(200.0)  # median of 300, 100, 200
    assert sizing.loc["p", "fastest"] == "d.cpp"
    assert sizing.loc["p", "fastest_above_floor_ms"] == pytest.approx(25.0 - 1.0)  # the C++ floor, not Python's
    assert summarize.pool_sizing(frame.drop(columns="cpu_s")).empty
