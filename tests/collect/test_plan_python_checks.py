"""A campaign's plan byte-compiles a problem's Python copies in one box run (issue 26 item 6).

``audits.collect.languages.check_python_copies`` does for many programs what ``prepare`` does for one (copy,
check the copy in the build box, a marker on success); ``prepare`` then finds them checked. Real programs and
real box runs; ``check_python`` is only wrapped to count its calls (each is one box run).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from audits.collect import languages
from audits.collect.campaign import CampaignSpec, plan_campaign
from audits.collect.languages import BuildError, check_python_copies, prepare
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite
from tests.collect.test_campaign import ADD, ADD_CPP, make_suite

OFF_BY_ONE = "a, b = map(int, input().split())\nprint(a + b + 1)\n"


@pytest.fixture
def box_runs(monkeypatch):
    """The files of every check_python call (one box run each), in order."""
    calls: list[list[Path]] = []
    real = languages.check_python

    def counted(files, **kwargs):
        files = [Path(f) for f in files]
        calls.append(files)
        return real(files, **kwargs)

    monkeypatch.setattr(languages, "check_python", counted)
    return calls


def test_the_plan_checks_a_problems_python_programs_in_one_box_run(tmp_path, box_runs):
    accepted = {f"add{i}.py": f"{ADD}# {i}\n" for i in range(5)}
    accepted["add.cpp"] = ADD_CPP
    suite = load_suite(make_suite(tmp_path / "suite", accepted=accepted, wrong_answer={"off.py": OFF_BY_ONE},
                                  n_secret=1, n_sample=0), sandbox="local")
    box_runs.clear()  # the load's own check of the originals (one run for the problem) is not the plan's
    spec = CampaignSpec(environment="e", campaign="c", sandbox="local", repeats=1, workers=1,
                        limits=Limits(wall_s=2))
    plan = plan_campaign(suite, spec, work_dir=tmp_path / "work")
    # the problem's six Python programs in one run, then the Python floor program (prepared on its own)
    assert [len(files) for files in box_runs] == [6, 1]
    assert sorted({j.unit.solution for j in plan.jobs if j.unit.role == "reference"}) == [
        "accepted/add.cpp", *(f"accepted/add{i}.py" for i in range(5)), "wrong_answer/off.py"]
    assert plan.skipped == ()


def test_checked_copies_are_not_checked_again_and_failures_keep_prepares_message(tmp_path, box_runs):
    src = tmp_path / "src"
    (src / "multi").mkdir(parents=True)
    (src / "multi" / "main.py").write_text("from helper import f\nprint(f())\n")
    (src / "multi" / "helper.py").write_text("def f():\n    return 1\n")
    (src / "bad_multi").mkdir()
    (src / "bad_multi" / "main.py").write_text("print(1)\n")
    (src / "bad_multi" / "helper.py").write_text("print 'python 2'\n")
    (src / "good.py").write_text(ADD)
    (src / "py2.py").write_text("n = int(raw_input())\nprint n\n")
    (src / "broken.py").write_text("def f(:\n")
    (src / "add.cpp").write_text(ADD_CPP)
    (src / "link.py").symlink_to(src / "good.py")
    sources = [src / name for name in ("good.py", "py2.py", "broken.py", "multi", "bad_multi", "add.cpp", "link.py",
                                       "missing.py")]
    build = tmp_path / "build"
    check_python_copies(sources, build, sandbox="local")
    # one run for the five Python programs that could be copied (7 files); C++, the link, the missing file: none
    assert [sorted(f.name for f in files) for files in box_runs] == [
        ["broken.py", "good.py", "helper.py", "helper.py", "main.py", "main.py", "py2.py"]]
    box_runs.clear()
    for name in ("good.py", "multi"):  # checked: prepare runs no check, and gives the program it always gave
        program = prepare(src / name, build, sandbox="local")
        fresh = prepare(src / name, tmp_path / f"fresh-{name}", sandbox="local")
        assert program.argv[0] == fresh.argv[0] and Path(program.argv[1]).is_file()
        assert Path(program.argv[1]).relative_to(build.resolve()) == \
            Path(fresh.argv[1]).relative_to((tmp_path / f"fresh-{name}").resolve())
    assert [len(files) for files in box_runs] == [1, 2]  # the fresh builds only (multi: its two files)
    for name in ("py2.py", "broken.py", "bad_multi", "link.py", "missing.py"):
        with pytest.raises(BuildError) as after_batch:
            prepare(src / name, build, sandbox="local")
        with pytest.raises(BuildError) as alone:
            prepare(src / name, tmp_path / f"fresh-{name}", sandbox="local")
        assert str(after_batch.value) == str(alone.value), name
