"""Loading Kattis problem packages: real packages built in tmp_path, real validators run as processes."""

from __future__ import annotations

import fnmatch
import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from audits.cli import main
from audits.collect.suite import CORRECT_VERDICTS, SuiteError, load_problem, load_suite
from audits.corpus.table import id_defect

ADD_PY = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def numbers(n: int) -> str:
    return " ".join(["1"] * n) + "\n"


def basic_package(root: Path, **extra) -> Path:
    """A default-validator problem: samples, nested secret groups, one input without .ans, mixed submissions."""
    files = {
        "problem.yaml": "name: Sum It Up\nvalidator_flags: float_tolerance 1e-6\nlimits:\n  memory: 512\n",
        "data/sample/1.in": "1 2\n", "data/sample/1.ans": "3\n",
        "data/sample/2.in": "5\n", "data/sample/2.ans": "5\n",
        "data/secret/01-small.in": numbers(3), "data/secret/01-small.ans": "3\n",
        "data/secret/group1/02.in": numbers(50), "data/secret/group1/02.ans": "50\n",
        "data/secret/group1/10.in": numbers(400), "data/secret/group1/10.ans": "400\n",
        "data/secret/group1/deeper/03.in": numbers(200), "data/secret/group1/deeper/03.ans": "200\n",
        "data/secret/group2/04.in": numbers(100), "data/secret/group2/04.ans": "100\n",
        "data/secret/group2/05-noans.in": numbers(1000),
        "submissions/accepted/sum.py": ADD_PY,
        "submissions/accepted/sum.cpp": "int main(){}\n",
        "submissions/time_limit_exceeded/slow.py3": ADD_PY,
        "submissions/wrong_answer/off_by_one.cc": "int main(){}\n",
        "submissions/run_time_error/crash.py": "raise SystemExit(1)\n",
        "submissions/accepted/Sum.java": "class Sum {}\n",
        "submissions/accepted/.gitkeep": "",
    }
    files.update(extra)
    return write(root, files)


# ---------------------------------------------------------------- tests, groups, kinds


def test_tests_groups_and_largest_inputs_as_optimization(tmp_path):
    basic_package(tmp_path / "suite" / "sum")
    suite = load_suite(tmp_path / "suite", n_largest_optimization=2)
    (problem,) = suite.problems
    assert problem.id == "sum" and problem.name == "Sum It Up" and problem.memory_limit_mb == 512
    by_name = {t.name: t for t in problem.tests}
    assert list(by_name) == ["sample/1", "sample/2", "secret/01-small", "secret/group1/02", "secret/group1/10",
                             "secret/group1/deeper/03", "secret/group2/04"]
    assert by_name["secret/group1/deeper/03"].group == "secret/group1/deeper"
    assert by_name["sample/2"].group == "sample" and by_name["secret/01-small"].group == "secret"
    for t in problem.tests:
        assert t.problem == "sum" and t.input_path.read_bytes() and t.answer_path.suffix == ".ans"
        assert t.input_bytes == os.path.getsize(t.input_path)
    # the two largest secret inputs with an answer (the 1000-number one has none) are the optimization tests
    secret = [t for t in problem.tests if t.group.startswith("secret")]
    largest = sorted(secret, key=lambda t: -t.input_bytes)[:2]
    assert {t.name for t in problem.tests_of_kind("optimization")} == {t.name for t in largest} \
        == {"secret/group1/10", "secret/group1/deeper/03"}
    assert all(t.kind == "correctness" for t in problem.tests if t not in largest)
    # the missing answer is listed with its reason
    (skip,) = [s for s in suite.skipped if s.path.suffix == ".in"]
    assert skip.path.name == "05-noans.in" and "no answer file 05-noans.ans" in skip.reason


@pytest.mark.parametrize("n", [0, 1, 3, 10])
def test_n_largest_is_an_option(tmp_path, n):
    basic_package(tmp_path / "sum")
    (problem,) = load_suite(tmp_path, n_largest_optimization=n).problems
    secret = sorted((t for t in problem.tests if t.group != "sample"), key=lambda t: -t.input_bytes)
    assert [t.name for t in problem.tests if t.kind == "optimization"] == \
        sorted((t.name for t in secret[:n]), key=[t.name for t in problem.tests].index)


def test_optimization_folder_wins_over_sizes(tmp_path):
    basic_package(tmp_path / "sum", **{
        "data/secret/optimization/a.in": numbers(5), "data/secret/optimization/a.ans": "5\n",
        "data/secret/optimization/big/b.in": numbers(7), "data/secret/optimization/big/b.ans": "7\n",
    })
    (problem,) = load_suite(tmp_path).problems
    assert {t.name for t in problem.tests_of_kind("optimization")} == \
        {"secret/optimization/a", "secret/optimization/big/b"}
    assert len(problem.tests_of_kind("correctness")) == 7  # the larger inputs elsewhere stay correctness tests


def test_samples_can_be_left_out_and_problems_selected(tmp_path):
    basic_package(tmp_path / "a")
    basic_package(tmp_path / "b")
    suite = load_suite(tmp_path, include_samples=False, problems=["b"])
    assert [p.id for p in suite.problems] == ["b"]
    assert not [t for t in suite.problems[0].tests if t.group == "sample"]
    with pytest.raises(SuiteError, match="no problem 'zzz'.*problems here: a, b"):
        load_suite(tmp_path, problems=["zzz"])
    with pytest.raises(SuiteError, match="n_largest_optimization"):
        load_suite(tmp_path, n_largest_optimization=-1)


# ---------------------------------------------------------------- submissions


def test_submissions_verdicts_languages_and_skips(tmp_path):
    basic_package(tmp_path / "sum", **{
        "submissions/accepted/multi/main.py": "from helper import f\n", "submissions/accepted/multi/helper.py": "",
        "submissions/wrong_answer/Main.kt": "fun main() {}\n",
    })
    suite = load_suite(tmp_path)
    subs = {s.name: s for s in suite.problems[0].submissions}
    assert subs.keys() == {"accepted/multi", "accepted/sum.cpp", "accepted/sum.py", "time_limit_exceeded/slow.py3",
                           "wrong_answer/off_by_one.cc", "run_time_error/crash.py"}
    for s in subs.values():
        assert s.correct == (s.expected in CORRECT_VERDICTS) and s.expected == s.name.split("/")[0]
        assert s.path.exists() and s.problem == "sum"
    assert subs["time_limit_exceeded/slow.py3"].correct and not subs["run_time_error/crash.py"].correct
    assert subs["accepted/sum.cpp"].language == "cpp" and subs["accepted/multi"].language == "python"
    skipped = {s.path.name: s.reason for s in suite.skipped}
    assert skipped["Sum.java"].startswith("language not supported (.java)")
    assert skipped["Main.kt"].startswith("language not supported (.kt)")
    assert ".gitkeep" not in skipped


def test_python_bytecode_caches_are_not_packages_submissions_or_tests(tmp_path):
    """``__pycache__`` (what Python writes beside an imported module: a suite's build script imported by a tool, a
    folder submission's module) is skipped silently wherever it is, as dot-files are; before, one at the suite's
    root was listed as a skipped package."""
    basic_package(tmp_path / "sum", **{
        "submissions/accepted/multi/main.py": "import helper\n", "submissions/accepted/multi/helper.py": "",
        "submissions/accepted/multi/__pycache__/helper.cpython-311.pyc": b"\x00planted",
        "submissions/accepted/__pycache__/sum.cpython-311.pyc": b"\x00planted",
        "data/secret/__pycache__/x.in": numbers(5),
    })
    write(tmp_path, {"build.py": "", "__pycache__/build.cpython-311.pyc": b"\x00planted"})
    suite = load_suite(tmp_path)
    assert [p.id for p in suite.problems] == ["sum"]
    assert not any("__pycache__" in str(s.path) for s in suite.skipped), suite.skipped  # (the package's own skips stay)
    problem = suite.problems[0]
    assert not any("__pycache__" in s.name for s in problem.submissions)
    assert "accepted/multi" in {s.name for s in problem.submissions}
    assert not any("__pycache__" in t.name for t in problem.tests)


def test_names_a_corpus_would_refuse_are_skipped_with_the_reason_and_printed_escaped(tmp_path):
    """A package, submission or test whose name cannot be an id (control characters, surrounding spaces: the
    corpus's own rule, audits.corpus.table.id_defect) is skipped at load, its name escaped in the listing. Before,
    `collect` ran such a package for the whole campaign and then could not write its corpus (the id refused), and
    `suite` printed the folder's escape sequence to the terminal."""
    basic_package(tmp_path / "two\x1b[31mRED", **{"submissions/accepted/x.py": ADD_PY})
    basic_package(tmp_path / "sum", **{"submissions/accepted/tab\tname.py": ADD_PY,
                                        "submissions/accepted/multi /main.py": ADD_PY,
                                        "data/secret/new\nline.in": "1 2\n", "data/secret/new\nline.ans": "3\n"})
    suite = load_suite(tmp_path)
    assert [p.id for p in suite.problems] == ["sum"]
    problem = suite.problems[0]
    assert {s.name for s in problem.submissions} >= {"accepted/sum.py"}
    assert not any(id_defect(s.name) for s in problem.submissions) and not any(id_defect(t.name) for t in problem.tests)
    refused = {(s.what, s.path.name) for s in suite.skipped if "cannot be a" in s.reason}
    assert refused == {("package", "two\x1b[31mRED"), ("submission", "tab\tname.py"), ("submission", "multi "),
                       ("test", "new\nline.in")}
    text = suite.summary()
    assert "\x1b" not in text and "\t" not in text.replace("    ", "") and "two\\x1b[31mRED" in text


# ---------------------------------------------------------------- problem.yaml, skipping whole packages


def test_broken_packages_are_listed_not_fatal(tmp_path):
    basic_package(tmp_path / "good")
    write(tmp_path / "badyaml", {"problem.yaml": "name: [unclosed\nvalidation: default\n", "data/sample/1.in": "1"})
    write(tmp_path / "listyaml", {"problem.yaml": "- name\n- other\n", "data/sample/1.in": "1"})
    write(tmp_path / "noyaml", {"data/secret/1.in": "1", "data/secret/1.ans": "1"})
    write(tmp_path / "badlimits", {"problem.yaml": "limits:\n  memory: lots\n", "data/secret/1.in": "1"})
    write(tmp_path / "interactive", {"problem.yaml": "validation: custom interactive\n",
                                     "output_validators/interactor/interactor.py": "", "data/sample/1.interaction": ""})
    write(tmp_path / "interactive2023", {"problem.yaml": "problem_format_version: 2023-07-draft\ntype: interactive\n",
                                         "data/sample/1.in": "1"})
    write(tmp_path / "boolfind", {"problem.yaml": "problem_format_version: 2023-07-draft\ntype:\n  - pass-fail\n"
                                                  "  - interactive\n", "data/sample/1.in": "1"})
    write(tmp_path / "multipass", {"problem.yaml": "problem_format_version: 2025-09\ntype: multi-pass\n",
                                   "data/sample/1.in": "1"})
    write(tmp_path / "badtestdata", {"problem.yaml": "name: x\n", "data/secret/testdata.yaml": "a: [\n",
                                     "data/secret/1.in": "1", "data/secret/1.ans": "1"})
    write(tmp_path / "weird", {"problem.yaml": "validation: fancy\n", "data/sample/1.in": "1"})
    write(tmp_path / "nodata", {"problem.yaml": "name: x\n"})
    write(tmp_path / "badflags", {"problem.yaml": "validator_flags: float_tolerance\n", "data/sample/1.in": "1"})
    write(tmp_path / "scripts", {"make_pdf.sh": "#!/bin/sh\n"})
    suite = load_suite(tmp_path)
    assert [p.id for p in suite.problems] == ["good"]
    reasons = {s.path.name: s.reason for s in suite.skipped if s.path.parent == tmp_path.resolve()}
    assert reasons["badyaml"].startswith("problem.yaml is not valid YAML at line 2")
    assert "must be a YAML mapping" in reasons["listyaml"]
    assert reasons["noyaml"].startswith("missing problem.yaml")
    assert "limits.memory (MB) must be a number, got 'lots'" in reasons["badlimits"]
    assert reasons["interactive"].startswith("interactive problem")
    assert reasons["interactive2023"].startswith("interactive problem")
    assert reasons["boolfind"].startswith("interactive problem")
    assert reasons["multipass"] == "problem type multi-pass is not supported (only pass-fail and scoring batch problems)"
    assert reasons["badtestdata"].startswith("data/secret/testdata.yaml is not valid YAML")
    assert "unknown validation 'fancy'" in reasons["weird"]
    assert reasons["nodata"].startswith("no data/ folder")
    assert "validator_flags" in reasons["badflags"] and "needs a number" in reasons["badflags"]
    assert reasons["scripts"].startswith("not a problem package")
    # every skip is printed by the summary with its reason
    text = suite.summary()
    for name, reason in reasons.items():
        assert f"{name}: {reason}" in text


def test_symlinked_groups_skip_their_package_and_problems_without_tests(tmp_path):
    basic_package(tmp_path / "suite" / "sum")
    # no link is followed, even one inside the package (issue 22): the package is skipped, naming the link
    shared = write(tmp_path / "suite" / "sum" / "shared", {"big.in": "9 9 9\n", "big.ans": "27\n"})
    os.symlink(shared, tmp_path / "suite" / "sum" / "data" / "secret" / "linked")
    write(tmp_path / "suite" / "empty", {"problem.yaml": "name: e\n", "data/sample/1.in": "1"})
    write(tmp_path / "suite" / "onlysamples", {"problem.yaml": "", "data/sample/1.in": "1", "data/sample/1.ans": "1"})
    basic_package(tmp_path / "suite" / "zz")
    suite = load_suite(tmp_path / "suite", include_samples=False)
    assert [p.id for p in suite.problems] == ["zz"]
    reasons = {s.path.name: s.reason for s in suite.skipped}
    assert reasons["linked"].startswith(f"data/secret/linked is a symbolic link (to {shared}, not followed)")
    assert reasons["empty"] == "no tests: no NAME.in with NAME.ans under data/secret"
    assert reasons["onlysamples"] == "no tests: no NAME.in with NAME.ans under data/secret"
    (tmp_path / "suite" / "sum" / "data" / "secret" / "linked").unlink()
    assert [p.id for p in load_suite(tmp_path / "suite").problems] == ["onlysamples", "sum", "zz"]


def test_single_package_path_and_not_a_suite(tmp_path):
    root = basic_package(tmp_path / "sum")
    suite = load_suite(root)
    assert [p.id for p in suite.problems] == ["sum"] and suite.root == root.resolve()
    problem, skips = load_problem(root)
    assert problem == suite.problems[0] and skips == suite.skipped
    (tmp_path / "empty").mkdir()
    with pytest.raises(SuiteError, match="not a suite"):
        load_suite(tmp_path / "empty")
    with pytest.raises(SuiteError, match="no such folder"):
        load_suite(tmp_path / "missing")
    with pytest.raises(SuiteError, match="not a folder"):
        load_suite(root / "problem.yaml")
    (root / "problem.yaml").unlink()
    with pytest.raises(SuiteError, match="looks like a problem package .* but has no problem.yaml"):
        load_suite(root)


ONE_TEST = {"data/secret/1.in": "1\n", "data/secret/1.ans": "1\n"}


def test_limits_from_every_known_place(tmp_path):
    write(tmp_path / "a", {"problem.yaml": "limits:\n  time_limit: 2.5\n  memory: 2048\n", **ONE_TEST})
    write(tmp_path / "b", {"problem.yaml": "name: b\n", ".timelimit": "3\n", **ONE_TEST})
    write(tmp_path / "c", {"problem.yaml": "", "domjudge-problem.ini": "timelimit='1.5'\n", **ONE_TEST})
    write(tmp_path / "d", {"problem.yaml": "limits:\n  time_multiplier: 5\n", **ONE_TEST})
    problems = {p.id: p for p in load_suite(tmp_path).problems}
    assert (problems["a"].time_limit_s, problems["a"].memory_limit_mb) == (2.5, 2048)
    assert problems["b"].time_limit_s == 3.0 and problems["c"].time_limit_s == 1.5
    assert problems["d"].time_limit_s is None and problems["d"].memory_limit_mb is None
    assert problems["c"].name == "c"  # no name anywhere: the folder name


def test_name_from_latex_statement_and_language_map(tmp_path):
    write(tmp_path / "a", {"problem.yaml": "source: NCPC\n", **ONE_TEST,
                           "problem_statement/problem.en.tex": "\\problemname{Alpha Centauri}\nText.\n"})
    write(tmp_path / "b", {"problem.yaml": "name:\n  en: Bravo\n  sv: Brava\n", **ONE_TEST})
    names = {p.id: p.name for p in load_suite(tmp_path).problems}
    assert names == {"a": "Alpha Centauri", "b": "Bravo"}


# ---------------------------------------------------------------- output checking as loaded


def test_validator_flags_from_problem_yaml_and_testdata_yaml(tmp_path):
    basic_package(tmp_path / "sum", **{
        "problem.yaml": "name: s\nvalidator_flags: case_sensitive\n",
        "data/testdata.yaml": "output_validator_flags: float_absolute_tolerance 0.5\n",
        "data/secret/group2/testdata.yaml": "output_validator_flags: float_absolute_tolerance 10\n",
    })
    (problem,) = load_suite(tmp_path).problems
    assert problem.checker.kind == "default"
    assert problem.checker.flags == ("case_sensitive", "float_absolute_tolerance", "0.5")
    tests = {t.name: t for t in problem.tests}
    assert tests["secret/group1/02"].validator_flags is None
    assert problem.checker_for(tests["secret/group1/02"]) is problem.checker
    assert tests["secret/group2/04"].validator_flags == ("case_sensitive", "float_absolute_tolerance", "10")
    out = tmp_path / "out"
    out.write_text("96\n")  # the answer is 100
    t04, t02 = tests["secret/group2/04"], tests["secret/group1/02"]
    assert problem.checker_for(t04).check(out, input_path=t04.input_path, answer_path=t04.answer_path,
                                          workdir=tmp_path)[0]
    out.write_text("50.4")  # the answer is 50
    assert problem.checker_for(t02).check(out, input_path=t02.input_path, answer_path=t02.answer_path,
                                          workdir=tmp_path)[0]
    out.write_text("50.6")
    assert not problem.checker_for(t02).check(out, input_path=t02.input_path, answer_path=t02.answer_path,
                                              workdir=tmp_path)[0]


def test_newer_formats_output_validator_args_and_test_group_yaml(tmp_path):
    """BAPCtools / 2025-09 spell the flags output_validator_args and the group file test_group.yaml."""
    write(tmp_path / "fltcmp", {
        "problem.yaml": "problem_format_version: 2025-09\ntype: pass-fail\nname: {en: Float compare}\n",
        "data/testdata.yaml": "output_validator_args: float_tolerance 1E-6\n",
        "data/secret/strict/test_group.yaml": "output_validator_args: [float_absolute_tolerance, '1e-9', "
                                              "float_relative_tolerance, '0']\n",
        "data/secret/1.in": "", "data/secret/1.ans": "1.5\n",
        "data/secret/strict/2.in": "", "data/secret/strict/2.ans": "1.5\n"})
    (problem,) = load_suite(tmp_path).problems
    assert problem.name == "Float compare" and problem.checker.flags == ("float_tolerance", "1E-6")
    assert _check(problem, "secret/1", "1.5000001", tmp_path)[0]
    assert not _check(problem, "secret/strict/2", "1.5000001", tmp_path)[0]
    assert _check(problem, "secret/strict/2", "1.5000000000001", tmp_path)[0]


PY_VALIDATOR = """import sys
want = open(sys.argv[2]).read().split()
got = sys.stdin.read().split()
# accepts any permutation of the answer's tokens
if sorted(want) == sorted(got):
    sys.exit(42)
open(sys.argv[3] + "judgemessage.txt", "w").write("not a permutation")
sys.exit(43)
"""

CPP_VALIDATOR = """#include <fstream>
#include <iostream>
#include "validate.h"
int main(int argc, char** argv) {
    std::ifstream ans(argv[2]);
    long long want, got;
    ans >> want;
    if (!(std::cin >> got)) return WRONG;
    return (got % MODULUS == want % MODULUS) ? ACCEPTED : WRONG;
}
"""


def _check(problem, test_name: str, output: str, tmp_path: Path):
    test = next(t for t in problem.tests if t.name == test_name)
    out = tmp_path / "output.txt"
    out.write_text(output)
    return problem.checker_for(test).check(out, input_path=test.input_path, answer_path=test.answer_path,
                                           workdir=tmp_path / "work")


def test_custom_validators_python_folder_cpp_with_header_and_unsupported(tmp_path):
    build = tmp_path / "build"
    write(tmp_path / "suite" / "perm", {
        "problem.yaml": "name: Perm\nvalidation: custom\n",
        "output_validators/perm_check/perm_check.py": PY_VALIDATOR,
        "data/secret/1.in": "3\n", "data/secret/1.ans": "1 2 3\n",
        "submissions/accepted/p.py": "print(3, 2, 1)\n"})
    write(tmp_path / "suite" / "mod", {
        "problem.yaml": "validation: custom\nvalidator_flags: ignored_by_this_validator\n",
        "output_validators/modcheck/check.cpp": CPP_VALIDATOR,
        "output_validators/modcheck/validate.h": "#define ACCEPTED 42\n#define WRONG 43\n#define MODULUS 7\n",
        "data/secret/1.in": "x\n", "data/secret/1.ans": "3\n"})
    write(tmp_path / "suite" / "java_validator", {
        "problem.yaml": "validation: custom\n", "output_validators/v/Validator.java": "class Validator {}\n",
        "data/secret/1.in": "1", "data/secret/1.ans": "1"})
    write(tmp_path / "suite" / "broken_cpp", {
        "problem.yaml": "validation: custom\n", "output_validators/v/v.cpp": "int main( { }\n",
        "data/secret/1.in": "1", "data/secret/1.ans": "1"})
    write(tmp_path / "suite" / "missing_validator", {
        "problem.yaml": "validation: custom\n", "data/secret/1.in": "1", "data/secret/1.ans": "1"})
    suite = load_suite(tmp_path / "suite", build_dir=build)
    problems = {p.id: p for p in suite.problems}
    assert problems.keys() == {"perm", "mod"}
    perm, mod = problems["perm"], problems["mod"]
    assert perm.checker.kind == "custom" and perm.checker.program.language == "python"
    assert perm.checker.source.name == "perm_check"
    assert _check(perm, "secret/1", "3 1 2\n", tmp_path) == (True, "accepted")
    assert _check(perm, "secret/1", "1 2\n", tmp_path) == (False, "validator: not a permutation")
    assert mod.checker.program.language == "cpp" and Path(mod.checker.program.argv[0]).is_relative_to(build)
    assert mod.checker.flags == ("ignored_by_this_validator",)
    assert _check(mod, "secret/1", "10", tmp_path) == (True, "accepted")
    assert _check(mod, "secret/1", "11", tmp_path) == (False, "validator: wrong answer")
    reasons = {s.problem: s.reason for s in suite.skipped}
    assert {s.problem: s.what for s in suite.skipped} == {"java_validator": "validator", "broken_cpp": "validator",
                                                           "missing_validator": "package"}
    assert "neither Python, C++ nor C" in reasons["java_validator"] and ".java" in reasons["java_validator"]
    assert "cannot be built" in reasons["broken_cpp"] and "g++ failed" in reasons["broken_cpp"] \
        and "v.cpp" in reasons["broken_cpp"]
    assert "no output_validators/<name>/" in reasons["missing_validator"]


def test_2023_07_layout_output_validator_folder(tmp_path):
    write(tmp_path / "p", {
        "problem.yaml": "problem_format_version: 2023-07-draft\nname:\n  en: New\ntype: pass-fail\n"
                        "limits:\n  time_limit: 1.0\n",
        "output_validator/validator.py": PY_VALIDATOR,
        "data/secret/1.in": "", "data/secret/1.ans": "a b\n"})
    (problem,) = load_suite(tmp_path, build_dir=tmp_path / "build").problems
    assert problem.checker.kind == "custom" and problem.time_limit_s == 1.0
    assert _check(problem, "secret/1", "b a", tmp_path)[0]


# ---------------------------------------------------------------- a real archive loads unchanged


def _tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def bapc_archive(root: Path) -> Path:
    """A contest folder laid out like a BAPCtools / ICPC archive (with the clutter real ones carry)."""
    write(root, {
        "contest.yaml": "name: Mock Contest 2026\n", "problems.yaml": "- id: hello\n- id: floaty\n",
        ".gitignore": "build/\n", "solve_stats/activity/hello.pdf": b"%PDF-1.4\n",
    })
    for pid, answer in (("hello", "Hello World!\n"), ("floaty", "0.333333333\n")):
        flags = "" if pid == "hello" else "validator_flags: float_tolerance 1e-6\n"
        write(root / pid, {
            "problem.yaml": f"name: {pid.title()}\nauthor: Jury\nsource: Mock 2026\nlicense: cc by-sa\n"
                            f"rights_owner: Jury\nuuid: 1234\n{flags}limits:\n  time_multipliers:\n"
                            f"    ac_to_time_limit: 2\n  memory: 1024\n",
            ".timelimit": "1.0\n",
            "problem_statement/problem.en.tex": "\\problemname{%s}\nStatement.\n" % pid.title(),
            "problem_statement/sample.png": b"\x89PNG\r\n",
            "generators/generators.yaml": "solution: /submissions/accepted/sol.py\ndata:\n  secret: {}\n",
            "generators/gen.py": "print(1)\n",
            "input_validators/validate/validate.cpp": "int main(){return 42;}\n",
            "input_validators/validate/validation.h": "// header\n",
            "input_format_validators/old.ctd": "INT(1,10) NEWLINE\n",
            "data/sample/1.in": "", "data/sample/1.ans": answer, "data/sample/1.png": b"\x89PNG\r\n",
            "data/secret/testdata.yaml": "on_reject: continue\n",
            "data/secret/group1/01.in": "", "data/secret/group1/01.ans": answer,
            "data/secret/group1/01.desc": "smallest case\n",
            "data/secret/group1/02.in": "x" * 40, "data/secret/group1/02.ans": answer,
            "data/secret/group2/03-max.in": "x" * 90, "data/secret/group2/03-max.ans": answer,
            "data/secret/group2/03-max.hint": "max\n",
            "data/invalid_inputs/bad.in": "oops\n",
            "submissions/accepted/sol.py": "# @EXPECTED_RESULTS@: ACCEPTED\nprint('x')\n",
            "submissions/accepted/sol.cpp": "int main(){}\n",
            "submissions/wrong_answer/wa.py": "print(0)\n",
            "submissions/time_limit_exceeded/tle.cpp": "int main(){for(;;);}\n",
            "submissions/run_time_error/rte.py": "1/0\n",
        })
    return root


def test_real_archive_layout_loads_unchanged(tmp_path):
    root = bapc_archive(tmp_path / "contest")
    before = _tree_digest(root)
    suite = load_suite(root, n_largest_optimization=1, build_dir=tmp_path / "build")
    assert _tree_digest(root) == before  # nothing written into the archive
    assert [p.id for p in suite.problems] == ["floaty", "hello"]
    # the only skip is solve_stats/, which is not a problem; invalid_inputs, generators etc. are ignored
    assert [(s.path.name, s.reason.split(" (")[0]) for s in suite.skipped] == \
        [("solve_stats", "not a problem package")]
    for problem in suite.problems:
        assert problem.time_limit_s == 1.0 and problem.memory_limit_mb == 1024
        assert [t.name for t in problem.tests] == ["sample/1", "secret/group1/01", "secret/group1/02",
                                                   "secret/group2/03-max"]
        assert [t.name for t in problem.tests_of_kind("optimization")] == ["secret/group2/03-max"]
        assert sorted(s.name for s in problem.submissions) == [
            "accepted/sol.cpp", "accepted/sol.py", "run_time_error/rte.py", "time_limit_exceeded/tle.cpp",
            "wrong_answer/wa.py"]
    floaty = suite.problem("floaty")
    assert floaty.checker.options["float_absolute_tolerance"] == 1e-6
    assert _check(floaty, "secret/group1/01", "0.3333334", tmp_path)[0]
    assert not _check(floaty, "secret/group1/01", "0.3334", tmp_path)[0]
    frame = suite.to_frame()
    assert frame.set_index("problem").loc["hello", ["optimization_tests", "correct_submissions"]].tolist() == [1, 3]


# ---------------------------------------------------------------- CLI


def test_cli_prints_summary(tmp_path, capsys):
    root = bapc_archive(tmp_path / "contest")
    basic_package(root / "sum")
    assert main(["suite", str(root), "--n-largest", "2", "--build-dir", str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    assert "problems: 3" in out
    # 3 problems: hello/floaty have 2 correctness + 2 optimization each; sum has 5 + 2 (one input lacks .ans)
    assert "tests: 15 (9 correctness, 6 optimization)" in out
    assert "accepted                    6  (correct, 2 by @EXPECTED_RESULTS@)" in out
    assert "time_limit_exceeded         3  (correct)" in out
    assert "wrong_answer                3  (incorrect)" in out
    assert "skipped: 3 (1 package, 1 submission, 1 test)" in out and "sum: 1 submission, 1 test" in out
    assert "Sum.java: language not supported (.java)" in out
    assert "05-noans.in: no answer file" in out


CLI = [sys.executable, "-c", "import sys; from audits.cli import main; sys.exit(main())"]


def test_cli_exit_status_as_a_real_process(tmp_path):
    (tmp_path / "nothing").mkdir()
    proc = subprocess.run([*CLI, "suite", str(tmp_path / "nothing")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "not a suite" in proc.stderr and "Traceback" not in proc.stderr
    write(tmp_path / "only_bad", {"p/problem.yaml": "validation: custom interactive\n"})
    proc = subprocess.run([*CLI, "suite", str(tmp_path / "only_bad")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "interactive problem" in proc.stdout and "no usable problem" in proc.stderr


# ---------------------------------------------------------------- @EXPECTED_RESULTS@, unknown folders, probes


@pytest.mark.parametrize("header, expected", [
    ("# @EXPECTED_RESULTS@: CORRECT", ("ACCEPTED",)),
    ("// @EXPECTED_RESULTS@: ACCEPTED,TIMELIMIT", ("ACCEPTED", "TIME_LIMIT_EXCEEDED")),
    ("/* @EXPECTED_RESULTS@: RUN-ERROR, WRONG-ANSWER */", ("RUN_TIME_ERROR", "WRONG_ANSWER")),
    (" * @EXPECTED_RESULTS@: correct, no-output", ("ACCEPTED", "NO_OUTPUT")),
    ("# @EXPECTED_RESULTS@: TIME_LIMIT_EXCEEDED; ACCEPTED", ("TIME_LIMIT_EXCEEDED", "ACCEPTED")),
    ("# no header here", None),
])
def test_expected_results_spellings(tmp_path, header, expected):
    from audits.collect.suite import expected_results

    src = tmp_path / "s.py"
    src.write_text(f"{header}\nprint(1)\n")
    assert expected_results(src) == expected
    folder = tmp_path / "multi"
    folder.mkdir()
    (folder / "helper.py").write_text("x = 1\n")
    (folder / "main.py").write_text(f"{header}\nprint(1)\n")
    assert expected_results(folder) == expected  # found in any source file of a folder


def test_unknown_verdict_folders_are_skipped_unless_a_header_decides(tmp_path):
    basic_package(tmp_path / "sum", **{
        "submissions/ac_or_wa/maybe.py": ADD_PY,
        "submissions/ac_or_wa/sure.py": "# @EXPECTED_RESULTS@: ACCEPTED\n" + ADD_PY,
        "submissions/rejected/no.py": "print(0)\n",
    })
    suite = load_suite(tmp_path)
    subs = {s.name: s.correct for s in suite.problems[0].submissions}
    assert subs["ac_or_wa/sure.py"] is True and subs["rejected/no.py"] is False and "ac_or_wa/maybe.py" not in subs
    reason = next(s.reason for s in suite.skipped if s.path.name == "maybe.py")
    assert reason.startswith("verdict folder submissions/ac_or_wa/ is not a known one")


def test_probe_that_cannot_build_a_reference_keeps_the_choice_by_name_and_says_why(tmp_path):
    from audits.collect.suite import probe_optimization_tests

    files = {"problem.yaml": "name: P\n", "submissions/accepted/broken.cpp": "int main( {\n",
             "submissions/time_limit_exceeded/slow.py": ADD_PY}
    for i in range(1, 6):
        files[f"data/secret/{i}.in"] = f"{i}\n"
        files[f"data/secret/{i}.ans"] = f"{i}\n"
    write(tmp_path / "p", files)
    suite = load_suite(tmp_path, n_largest_optimization=2)
    (problem,) = suite.problems
    assert problem.probe_candidates == ("secret/1", "secret/2", "secret/3", "secret/4", "secret/5")
    assert problem.probe_slots == 2
    (after,) = probe_optimization_tests(suite).problems
    assert after.tests == problem.tests  # nothing re-kinded
    assert "chosen BY NAME" in after.optimization_choice
    assert "probe impossible: no reference builds (accepted/broken.cpp:" in after.optimization_choice
    assert ": error: " in after.optimization_choice.split("probe impossible")[1]  # the compiler's first error line


def test_sizes_that_tell_tests_apart_need_no_probe(tmp_path):
    files = {"problem.yaml": "name: P\n"}
    for i, n in enumerate((10, 1000, 1050, 3000, 5000), start=1):  # 1000 and 1050 are within 10 %
        files[f"data/secret/{i}.in"] = "x" * n
        files[f"data/secret/{i}.ans"] = "x\n"
    write(tmp_path / "p", files)
    (clear,) = load_suite(tmp_path, n_largest_optimization=2).problems
    assert clear.probe_candidates == () and [t.name for t in clear.tests_of_kind("optimization")] == \
        ["secret/4", "secret/5"]
    assert clear.optimization_choice == "the 2 largest secret inputs (3,000+ bytes)"
    (tied,) = load_suite(tmp_path, n_largest_optimization=3).problems
    assert tied.probe_candidates == ("secret/3", "secret/2") and tied.probe_slots == 1
    assert "1 of 2 secret inputs of indistinguishable size" in tied.optimization_choice


def test_cli_output_into_a_closed_pipe_ends_without_a_traceback(tmp_path):
    # 3,000 skipped submissions: a summary far larger than a pipe's buffer, so the writer meets EPIPE
    basic_package(tmp_path / "sum", **{f"submissions/accepted/S{i}.java": "" for i in range(3000)})
    proc = subprocess.Popen([*CLI, "suite", str(tmp_path), "--no-probe"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout.readline().startswith(b"suite ")
    proc.stdout.close()  # like 'speedaudit suite ... | head -1'
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in stderr, stderr


def test_submissions_yaml_2025_09_decides_by_folder_or_file_and_patterns_make_it_unknown(tmp_path):
    basic_package(tmp_path / "sum", **{
        "submissions/submissions.yaml": (
            "accepted:\n  permitted: [AC, TLE]\n"
            "ac_or_wa:\n  permitted: [AC, WA]\n"
            "ac_or_wa/ac.py:\n  permitted: [AC]\n"
            "ac_or_wa/wa.py:\n  permitted: [WA]\n"
            "slow:\n  permitted: [AC, TLE]\n"
            "needs_wa:\n  permitted: [AC, WA]\n  required: [WA]\n"
            "needs_wa/ac*:\n  permitted: [AC]\n"),
        "submissions/ac_or_wa/ac.py": ADD_PY, "submissions/ac_or_wa/wa.py": "print(0)\n",
        "submissions/ac_or_wa/either.py": ADD_PY,
        "submissions/slow/brute.py": ADD_PY,
        "submissions/needs_wa/wrong.py": "print(0)\n", "submissions/needs_wa/ac_really.py": ADD_PY,
    })
    suite = load_suite(tmp_path)
    subs = {s.name: s.correct for s in suite.problems[0].submissions}
    assert subs["ac_or_wa/ac.py"] is True and subs["ac_or_wa/wa.py"] is False and subs["slow/brute.py"] is True
    assert subs["accepted/sum.py"] is True and subs["wrong_answer/off_by_one.cc"] is False  # folders as before
    # needs_wa/wrong.py: required WA; ac_really.py could match the pattern 'needs_wa/ac*', which is not read
    reasons = {s.path.name: s.reason for s in suite.skipped if s.what == "submission"}
    assert "either.py" in reasons and "ac_really.py" in reasons and "wrong.py" not in reasons
    assert subs["needs_wa/wrong.py"] is False
    assert "a pattern there (not read by speedaudit) may apply" in reasons["ac_really.py"]


# ---------------------------------------------------------------- campaign subsets (issue 25)

SPEEDBENCH = Path(__file__).resolve().parents[2] / "fixtures" / "suites" / "speedbench"
ODD_NAME = "a, b c [1].py"   # a comma, spaces and brackets: names are data


def speedbench_copy(root: Path, *problems: str) -> Path:
    """tmp copies of shipped speedbench problems, lis with one more accepted program under an odd name and a
    second copy of its largest optimization test as ``opt-0-copy`` (same bytes: a tie broken by name)."""
    for pid in problems:
        shutil.copytree(SPEEDBENCH / pid, root / pid, ignore=shutil.ignore_patterns("__pycache__"))
    if "lis" in problems:
        acc = root / "lis" / "submissions" / "accepted"
        shutil.copy(acc / "bisect_tails.py", acc / ODD_NAME)
        opt = root / "lis" / "data" / "secret" / "optimization"
        largest = max(opt.glob("*.in"), key=lambda f: (f.stat().st_size, f.name))
        for ext in (".in", ".ans"):
            shutil.copy(largest.with_suffix(ext), opt / f"opt-0-copy{ext}")
    return root


def largest_by_bytes(problem_dir: Path, n: int) -> list[str]:
    """The n largest optimization inputs on disk, ties by name: computed from the files, not the loader."""
    files = sorted((problem_dir / "data" / "secret" / "optimization").glob("*.in"),
                   key=lambda f: (-f.stat().st_size, f.stem))
    return sorted(f"secret/optimization/{f.stem}" for f in files[:n])


def test_optimization_tests_keeps_the_n_largest_by_bytes(tmp_path):
    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    full = load_suite(root, sandbox="local")
    for n in (1, 2, 3, 7, 50):
        suite = load_suite(root, optimization_tests=n, sandbox="local")
        for problem, whole in zip(suite.problems, full.problems):
            opt = sorted(t.name for t in problem.tests_of_kind("optimization"))
            assert opt == largest_by_bytes(root / problem.id, n), (problem.id, n)
            # correctness tests and submissions are untouched; the optimization tests left out are gone
            assert problem.tests_of_kind("correctness") == whole.tests_of_kind("correctness")
            assert problem.submissions == whole.submissions
            assert len(problem.tests) == len(whole.tests_of_kind("correctness")) + len(opt)
        assert suite.selection[0].startswith(f"optimization tests: the {n} largest per problem")
    # the tie: opt-0-copy and the largest shipped test have the same bytes, the name decides
    one = load_suite(root, optimization_tests=1, problems=["lis"], sandbox="local").problems[0]
    assert [t.name for t in one.tests_of_kind("optimization")] == ["secret/optimization/opt-0-copy"]
    n_opt = len(list((root / "lis" / "data" / "secret" / "optimization").glob("*.in")))
    assert f"the 1 largest of the {n_opt} tests under data/secret/optimization/" in one.optimization_choice
    assert full.selection == ()


def test_optimization_tests_without_an_optimization_folder_takes_the_largest_secret_inputs(tmp_path):
    basic_package(tmp_path / "suite" / "sum")
    whole = load_suite(tmp_path / "suite", n_largest_optimization=4).problems[0]
    (problem,) = load_suite(tmp_path / "suite", n_largest_optimization=4, optimization_tests=2).problems
    secret = sorted((t for t in whole.tests if t.group.startswith("secret")), key=lambda t: -t.input_bytes)
    assert {t.name for t in problem.tests_of_kind("optimization")} == {t.name for t in secret[:2]}
    # the other secret inputs stay correctness tests, as every secret input not chosen is
    assert {t.name for t in problem.tests} == {t.name for t in whole.tests}
    assert "--optimization-tests 2 of 4" in problem.optimization_choice


def test_submission_patterns_select_by_problem_and_solution_id(tmp_path):
    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    full = load_suite(root, sandbox="local")
    ids = [f"{p.id}/{s.name}" for p in full.problems for s in p.submissions]
    assert f"lis/accepted/{ODD_NAME}" in ids
    for patterns in (["lis/accepted/*"], ["*/wrong_answer/*", "twosum/accepted/counter*"],
                     [f"lis/accepted/{ODD_NAME}"], ["lis/accepted/a, b c*"], ["*"]):
        suite = load_suite(root, submissions=patterns, sandbox="local")
        got = [f"{p.id}/{s.name}" for p in suite.problems for s in p.submissions]
        # independent: the ids that equal a pattern or match it with fnmatch
        expected = [i for i in ids if any(i == pat or fnmatch.fnmatchcase(i, pat) for pat in patterns)]
        assert got == expected and got, patterns
        assert {p.id for p in suite.problems} == {i.split("/")[0] for i in expected}
        # "of N": the submissions of the packages read, which are only the ones named when every pattern
        # names its problem (nothing before its first "/" that fnmatch reads as a wildcard)
        heads = {pat.split("/")[0] for pat in patterns}
        named = all("/" in pat and not set("*?[") & set(pat.split("/")[0]) for pat in patterns)
        read = [i for i in ids if not named or i.split("/")[0] in heads]
        assert f"submissions: {len(expected)} of {len(read)} matching {len(patterns)} pattern(s)" \
            in suite.selection[0]
        assert any(line.startswith("packages: read only lis, named by the patterns; the other 1 were not read")
                   for line in suite.selection) == (named and heads == {"lis"}), suite.selection
    # a name with a comma and brackets is one pattern, matched by equality (fnmatch alone reads [1] as a class)
    (only,) = load_suite(root, submissions=f"lis/accepted/{ODD_NAME}", sandbox="local").submissions
    assert only.name == f"accepted/{ODD_NAME}"
    assert not fnmatch.fnmatchcase(f"lis/accepted/{ODD_NAME}", f"lis/accepted/{ODD_NAME}")


def _broken_packages(root: Path) -> None:
    """A package whose custom output validator does not compile (``broken``), one whose problem.yaml does not
    parse (``malformed``) and, in lis, an accepted C++ program that does not compile: each fails when it is
    read or built."""
    shutil.copytree(root / "twosum", root / "malformed")
    (root / "malformed" / "problem.yaml").write_text("name: [unclosed\n")
    shutil.copytree(root / "twosum", root / "broken")
    (root / "broken" / "problem.yaml").write_text("name: Broken\nvalidation: custom\n")
    (root / "broken" / "output_validators" / "check").mkdir(parents=True)
    (root / "broken" / "output_validators" / "check" / "validate.cpp").write_text("int main( { return 0; }\n")
    (root / "lis" / "submissions" / "accepted" / "broken.cpp").write_text("int main( { return 0; }\n")


def test_patterns_that_name_their_problems_read_and_build_nothing_else(tmp_path):
    # Issue 26 item 6: the packages the patterns do not name are not read (a broken one is neither loaded nor
    # listed), and in the packages read only the selected submissions are built (the build folder shows it:
    # one cpp-<hash> folder per C/C++ build attempted, a failed one included).
    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    _broken_packages(root)
    build = tmp_path / "build"
    suite = load_suite(root, submissions=["lis/accepted/tails_fread.cpp", "lis/wrong_answer/*"],
                       build_submissions=True, build_dir=build, sandbox="local")
    assert [f"{p.id}/{s.name}" for p in suite.problems for s in p.submissions] == [
        "lis/accepted/tails_fread.cpp", "lis/wrong_answer/contiguous_run.py", "lis/wrong_answer/non_strict.py"]
    assert suite.skipped == ()
    assert len(list(build.glob("cpp-*"))) == 1       # tails_fread.cpp only: not lis's 5 other C++ programs
    n_lis = sum(1 for d in (root / "lis" / "submissions").iterdir() for _ in d.iterdir())
    assert suite.selection == (
        f"submissions: 3 of {n_lis} matching 2 pattern(s) ('lis/accepted/tails_fread.cpp', 'lis/wrong_answer/*'), "
        f"in 1 of 1 problems",
        "packages: read only lis, named by the patterns; the other 3 were not read (nothing in them can match)")

    # a skip the patterns select is still listed, with the compiler's reason
    suite = load_suite(root, submissions=["lis/accepted/b*"], build_submissions=True, build_dir=build,
                       sandbox="local")
    assert [s.name for s in suite.submissions] == ["accepted/bisect_tails.py"]
    assert [(Path(s.path).name, s.what) for s in suite.skipped] == [("broken.cpp", "submission")]
    assert "does not build" in suite.skipped[0].reason

    # a pattern whose problem part is a wildcard can match in any package: every one is read, as before
    suite = load_suite(root, submissions=["*/accepted/tails_fread.cpp"], build_submissions=True,
                       build_dir=tmp_path / "build2", sandbox="local")
    assert [f"{p.id}/{s.name}" for p in suite.problems for s in p.submissions] == ["lis/accepted/tails_fread.cpp"]
    assert [(s.problem, s.what) for s in suite.skipped] == [("malformed", "package")]
    assert "problem.yaml is not valid YAML" in suite.skipped[0].reason
    assert len(list((tmp_path / "build2").glob("cpp-*"))) == 2   # broken's validator and tails_fread.cpp
    assert len(suite.selection) == 1

    # a pattern naming a problem that is not there: every package is read, and the message is a whole load's
    with pytest.raises(SuiteError, match=r"'nosuch/accepted/\*' matches no submission\. .* such as "
                                         + re.escape(f"'lis/accepted/{ODD_NAME}'")):
        load_suite(root, submissions=["lis/accepted/bisect_tails.py", "nosuch/accepted/*"], sandbox="local")


def test_collect_with_patterns_naming_one_problem_leaves_a_broken_package_alone(tmp_path):
    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    _broken_packages(root)
    out = tmp_path / "lis.parquet"
    proc = subprocess.run([*CLI, "collect", str(root), "--out", str(out), "--repeats", "1", "--timeout", "10",
                           "--tests", "optimization", "--optimization-tests", "1", "--no-progress", "--strict",
                           "--submission", "lis/accepted/bisect_tails.py", "--sandbox", "local"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr        # --strict: nothing read was skipped
    assert "selection: packages: read only lis, named by the patterns; the other 3 were not read" in proc.stderr
    assert "broken" not in proc.stderr and "malformed" not in proc.stderr


@pytest.mark.parametrize("kwargs, message", [
    ({"submissions": ["lis/accepted/nothing*"]}, "'lis/accepted/nothing*' matches no submission"),
    ({"submissions": ["lis/accepted/bisect_tails.py", "lis,twosum"]}, "'lis,twosum' matches no submission"),
    ({"submissions": [""]}, "non-empty strings"),
    ({"optimization_tests": 0}, "optimization_tests must be a whole number >= 1"),
    ({"optimization_tests": True}, "optimization_tests must be a whole number >= 1"),
])
def test_subset_errors_name_the_pattern(tmp_path, kwargs, message):
    root = speedbench_copy(tmp_path / "suite", "lis")
    with pytest.raises(SuiteError) as info:
        load_suite(root, sandbox="local", **kwargs)
    assert message in str(info.value)


def test_a_pattern_matching_only_a_skipped_submission_says_so(tmp_path):
    root = speedbench_copy(tmp_path / "suite", "lis")
    (root / "lis" / "submissions" / "accepted" / "old.py").write_text("print 'hi'\n")   # Python 2: skipped
    with pytest.raises(SuiteError, match=r"'lis/accepted/old\*' matches only skipped submissions "
                                         r"\(lis/accepted/old.py"):
        load_suite(root, submissions=["lis/accepted/old*"], sandbox="local")
    suite = load_suite(root, submissions=["lis/accepted/[ob][li][sd]*"], sandbox="local")   # bisect_tails, old
    assert [s.name for s in suite.submissions] == ["accepted/bisect_tails.py"]
    assert [Path(s.path).name for s in suite.skipped] == ["old.py"]          # a skip it selected stays listed
    suite = load_suite(root, submissions=["lis/accepted/bisect*"], sandbox="local")
    assert suite.skipped == ()                                                # one it did not select goes


def test_cli_suite_shows_the_selection_and_reads_a_pattern_file(tmp_path, capsys):
    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    patterns = tmp_path / "keep.txt"
    patterns.write_text(f"# the demo's subset\n\nlis/accepted/{ODD_NAME}\n   # indented comment\n"
                        "twosum/accepted/*\n")
    code = main(["suite", str(root), "--optimization-tests", "2", "--submissions-from", str(patterns),
                 "--submission", "lis/wrong_answer/*", "--no-probe", "--no-build"])
    out = capsys.readouterr().out
    assert code == 0
    n_twosum = len(list((root / "twosum" / "submissions" / "accepted").iterdir()))
    assert "selection:\n    optimization tests: the 2 largest per problem (input bytes, ties by name; 4 in 2 " \
           "problems)" in out
    assert f"submissions: {1 + 2 + n_twosum} of " in out and "matching 3 pattern(s)" in out
    assert "lis     tests   6 corr +   2 opt  submissions   1 correct +   2 incorrect" in out


def test_cli_subset_errors_are_clean(tmp_path):
    root = speedbench_copy(tmp_path / "suite", "lis")
    for args, status, message in (
            (["--submission", "lis/accepted/x, y*"], 1, "'lis/accepted/x, y*' matches no submission"),
            (["--submissions-from", str(tmp_path / "missing.txt")], 1, "missing.txt: cannot read"),
            (["--optimization-tests", "0"], 2, "--optimization-tests: must be >= 1")):
        for command in (["suite", str(root), "--no-probe", "--no-build"],
                        ["collect", str(root), "--out", str(tmp_path / "o.parquet"), "--no-progress"]):
            proc = subprocess.run([*CLI, *command, *args], capture_output=True, text=True, timeout=300)
            assert proc.returncode == status, (command, args, proc.stderr)
            assert message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "o.parquet").exists()


def test_collect_of_a_subset_writes_only_its_rows(tmp_path):
    from audits.corpus.io import load_corpus

    root = speedbench_copy(tmp_path / "suite", "lis", "twosum")
    out = tmp_path / "subset.parquet"
    proc = subprocess.run([*CLI, "collect", str(root), "--out", str(out), "--repeats", "1", "--timeout", "10",
                           "--tests", "optimization", "--optimization-tests", "2", "--no-progress",
                           "--submission", f"lis/accepted/{ODD_NAME}", "--submission", "lis/wrong_answer/non_*"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "selection: submissions: 2 of" in proc.stderr
    corpus = load_corpus(out)
    ref = corpus[corpus["role"] == "reference"]
    cells = set(zip(ref["problem"].astype(str), ref["solution"].astype(str), ref["test"].astype(str)))
    assert cells == {("lis", sol, test) for sol in (f"accepted/{ODD_NAME}", "wrong_answer/non_strict.py")
                     for test in largest_by_bytes(root / "lis", 2)}
    assert len(ref) == 4
    assert set(corpus["role"].astype(str)) == {"reference", "floor"}


def test_the_python_api_collect_takes_the_same_subset(tmp_path):
    import speedaudit
    from audits.corpus.io import load_corpus

    root = speedbench_copy(tmp_path / "suite", "lis")
    out = tmp_path / "api.parquet"
    speedaudit.collect(root, out=out, submissions=[f"lis/accepted/{ODD_NAME}"], optimization_tests=1,
                       test_kinds=("optimization",), repeats=1)
    ref = load_corpus(out).query("role == 'reference'")
    assert list(zip(ref["solution"].astype(str), ref["test"].astype(str))) == \
        [(f"accepted/{ODD_NAME}", largest_by_bytes(root / "lis", 1)[0])]
