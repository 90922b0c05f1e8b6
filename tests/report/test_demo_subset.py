"""The programs ``make demo`` times (audits/report/demo.py, issue 25: the demo keeps its length).

On the shipped stored campaign and suite, and on a tmp copy of the suite with more programs than the
demo times: the subset comes from the stored run, keeps every non-accepted program and the fastest and
slowest accepted ones (checked against a computation by hand over the stored rows), never names a
program that is no longer in the suite, and the file handed to ``speedaudit collect --submissions-from``
selects exactly those programs through the real loader.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from audits.collect.suite import load_suite, read_patterns
from audits.report import demo
from audits.report.inputs import load_corpora

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "fixtures" / "suites" / "speedbench"


def _stored_rows():
    shipped = demo.shipped_corpora()
    env, campaign = demo.stored_run(shipped)
    corpus = load_corpora(shipped)
    return corpus[(corpus["environment"].astype(str) == env) & (corpus["campaign"].astype(str) == campaign)]


def _by_hand(rows, problem):
    """Stored solutions of a problem, and its accepted ones from fastest to slowest on its largest test."""
    solutions, durations = set(), {}
    biggest = max(int(b) for p, b in zip(rows["problem"].astype(str), rows["input_bytes"]) if p == problem)
    for p, sol, role, size, d in zip(rows["problem"].astype(str), rows["solution"].astype(str),
                                     rows["role"].astype(str), rows["input_bytes"], rows["duration_s"]):
        if p != problem or role != "reference":
            continue
        solutions.add(sol)
        if int(size) == biggest:
            durations.setdefault(sol, []).append(float(d))

    def median(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    accepted = sorted((s for s in solutions if s.startswith("accepted/")), key=lambda s: (median(durations[s]), s))
    return solutions, accepted


def test_the_demo_times_the_stored_programs_at_most_its_cap():
    rows = _stored_rows()
    selection = demo.demo_submissions(rows, SUITE, demo.DEMO_PROBLEMS)
    assert list(selection.ids) == list(demo.DEMO_PROBLEMS)
    for problem, ids in selection.ids.items():
        stored, _ = _by_hand(rows, problem)
        assert len(ids) <= demo.DEMO_PROGRAMS_PER_PROBLEM
        assert {i.split("/", 1)[1] for i in ids} <= stored
        if len(stored) <= demo.DEMO_PROGRAMS_PER_PROBLEM:
            assert {i.split("/", 1)[1] for i in ids} == stored
    text = selection.describe({p: 6 for p in demo.DEMO_PROBLEMS})
    assert text.startswith(f"4 problems (lis, sortdedup, twosum, unionfind), {len(selection.patterns)} programs")
    assert text.endswith("24 optimization tests")


def test_a_smaller_cap_keeps_the_incorrect_and_the_fastest_and_slowest_accepted():
    rows = _stored_rows()
    selection = demo.demo_submissions(rows, SUITE, ["lis", "twosum"], per_problem=4)
    for problem, ids in selection.ids.items():
        stored, accepted = _by_hand(rows, problem)
        others = sorted(s for s in stored if not s.startswith("accepted/"))
        expected = sorted(others + [accepted[0], accepted[-1]])   # 4 - 3 others < 2: fastest and slowest
        assert [i.split("/", 1)[1] for i in ids] == expected, problem
        on_disk = [f for f in (SUITE / problem / "submissions").glob("*/*") if not f.name.startswith(".")]
        assert selection.available[problem] == len(on_disk) >= len(stored)


def test_a_program_gone_from_the_suite_is_not_named_and_the_file_selects_the_subset(tmp_path):
    suite = tmp_path / "suite"
    for problem in ("lis", "twosum"):
        shutil.copytree(SUITE / problem, suite / problem, ignore=shutil.ignore_patterns("__pycache__"))
    (suite / "lis" / "submissions" / "accepted" / "bisect_tails.py").unlink()
    rows = _stored_rows()
    selection = demo.demo_submissions(rows, suite, ["lis", "twosum", "knapsack"], per_problem=5)
    assert "lis/accepted/bisect_tails.py" not in selection.patterns
    assert "knapsack" not in selection.ids                        # not in this suite: nothing to time
    path = tmp_path / "subset.txt"
    path.write_text("# comment\n" + "".join(f"{i}\n" for i in selection.patterns))
    loaded = load_suite(suite, submissions=read_patterns(path), sandbox="local")
    assert sorted(f"{s.problem}/{s.name}" for s in loaded.submissions) == sorted(selection.patterns)
    assert demo.demo_submissions(rows, tmp_path / "nothing", ["lis"]) is None
