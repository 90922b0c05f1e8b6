"""Output checking: the Kattis default validator and custom validators through the Kattis protocol."""

from __future__ import annotations

import random
import stat

import pytest

from audits.collect.checker import CheckerError, OutputChecker, compare_tokens, parse_validator_flags
from audits.collect.languages import prepare

# ---------------------------------------------------------------- flags


def test_parse_flags_defaults_and_each_flag():
    assert parse_validator_flags("") == {"case_sensitive": False, "space_change_sensitive": False,
                                         "float_absolute_tolerance": None, "float_relative_tolerance": None}
    got = parse_validator_flags("case_sensitive space_change_sensitive float_absolute_tolerance 1e-3")
    assert got == {"case_sensitive": True, "space_change_sensitive": True,
                   "float_absolute_tolerance": 1e-3, "float_relative_tolerance": None}
    # float_tolerance sets both; flags apply left to right, so a later one overrides
    assert parse_validator_flags(["float_tolerance", "1e-6"])["float_absolute_tolerance"] == 1e-6
    assert parse_validator_flags(["float_tolerance", "1e-6"])["float_relative_tolerance"] == 1e-6
    got = parse_validator_flags("float_tolerance 1e-6 float_relative_tolerance 0.5")
    assert got["float_absolute_tolerance"] == 1e-6 and got["float_relative_tolerance"] == 0.5
    got = parse_validator_flags(["float_relative_tolerance 0.5", "float_tolerance 1e-6"])
    assert got["float_relative_tolerance"] == 1e-6


@pytest.mark.parametrize("flags, fragment", [
    ("float_tolerance", "needs a number"),
    ("float_absolute_tolerance abc", "got 'abc'"),
    ("float_relative_tolerance -1", "non-negative"),
    ("ignore_case", "unknown validator flag 'ignore_case'"),
])
def test_parse_flags_rejects_bad_input_with_a_clear_message(flags, fragment):
    with pytest.raises(ValueError, match=fragment):
        parse_validator_flags(flags)


# ---------------------------------------------------------------- default validator: tokens and whitespace


@pytest.mark.parametrize("out", [b"A B", b" A  B \t\n", b" A B", b"A B ", b"A\nB\n", b"a b"])
def test_space_and_case_lenient_accepts(out):
    assert compare_tokens(out, b"A B") == (True, "accepted")


@pytest.mark.parametrize("out, reason", [
    (b"A B X", "extra output: 3 tokens, expected 2 (token 3 is 'X')"),
    (b"X A B", "token 1: expected 'A', got 'X'"),
    (b"A B\n\n\n \n X", "extra output: 3 tokens, expected 2 (token 3 is 'X')"),
    (b"A", "output ends early: 1 tokens, expected 2 (next expected 'B')"),
    (b"", "output ends early: 0 tokens, expected 2 (next expected 'A')"),
    (b"AB", "token 1: expected 'A', got 'AB'"),
])
def test_space_lenient_rejects_with_reason(out, reason):
    assert compare_tokens(out, b"A B") == (False, reason)


def test_empty_answer_accepts_only_whitespace():
    for out in (b"", b" ", b"\n", b" \t\n\t\n \t"):
        assert compare_tokens(out, b"")[0]
    for out in (b".", b"0", b" 0 ", b"\0"):
        assert not compare_tokens(out, b"")[0]


def test_case_sensitivity():
    assert compare_tokens(b"Yes", b"YES") == (True, "accepted")
    assert compare_tokens(b"Yes", b"YES", case_sensitive=True) == (False, "token 1: expected 'YES', got 'Yes'")
    assert compare_tokens(b"YES", b"YES", case_sensitive=True) == (True, "accepted")


def test_space_change_sensitive_requires_identical_whitespace():
    ans = b"1 2\n3\n"
    assert compare_tokens(b"1 2\n3\n", ans, space_change_sensitive=True) == (True, "accepted")
    ok, why = compare_tokens(b"1  2\n3\n", ans, space_change_sensitive=True)
    assert not ok and why == "whitespace after token 1 differs: expected ' ', got '  '"
    ok, why = compare_tokens(b"1 2\n3", ans, space_change_sensitive=True)
    assert not ok and "after token 3" in why
    ok, why = compare_tokens(b" 1 2\n3\n", ans, space_change_sensitive=True)
    assert not ok and why == "token 1: expected '1', got whitespace"
    ok, why = compare_tokens(b"1 2\n4\n", ans, space_change_sensitive=True)
    assert not ok and why == "token 3: expected '3', got '4'"
    # the same outputs are fine when whitespace is not significant
    for out in (b"1  2\n3\n", b"1 2\n3", b" 1 2\n3\n"):
        assert compare_tokens(out, ans)[0]
    # case is still ignored unless case_sensitive; an empty answer accepts only an empty output
    assert compare_tokens(b"a\n", b"A\n", space_change_sensitive=True)[0]
    assert not compare_tokens(b"\n", b"", space_change_sensitive=True)[0]
    assert compare_tokens(b"", b"", space_change_sensitive=True)[0]


# ---------------------------------------------------------------- default validator: numbers


def test_float_tolerance_absolute_or_relative_worked_example():
    # answer 100, output 100.5: |diff| = 0.5 = 0.005 * |100|
    assert not compare_tokens(b"100.5", b"100", float_absolute_tolerance=0.1)[0]
    assert compare_tokens(b"100.5", b"100", float_relative_tolerance=0.01)[0]
    assert not compare_tokens(b"100.5", b"100", float_relative_tolerance=0.001)[0]
    # either tolerance suffices (Kattis: absolute OR relative)
    assert compare_tokens(b"100.5", b"100", float_absolute_tolerance=1.0, float_relative_tolerance=1e-9)[0]
    assert compare_tokens(b"100.5", b"100", float_absolute_tolerance=1e-9, float_relative_tolerance=0.01)[0]
    # relative error is measured against the answer, not the output: |0 - 1e-7| <= rel*|1e-7| fails
    assert not compare_tokens(b"0", b"1e-7", float_relative_tolerance=0.5)[0]
    # answer 1, output 1.9: |diff| = 0.9 > 0.5 * |1| (it would pass if measured against max(|a|, |o|) = 1.9)
    assert not compare_tokens(b"1.9", b"1", float_relative_tolerance=0.5)[0]
    assert not compare_tokens(b"1 1.9", b"1 1", float_relative_tolerance=0.5)[0]
    assert compare_tokens(b"1.9", b"1", float_relative_tolerance=0.9)[0]
    ok, why = compare_tokens(b"1 2.5", b"1 2.0", float_absolute_tolerance=0.1)
    assert not ok and why.startswith("token 2: expected '2.0', got '2.5' (difference 0.5")


def test_numbers_without_tolerance_compare_as_text():
    assert not compare_tokens(b"2.50", b"2.5")[0]
    assert compare_tokens(b"2.50", b"2.5", float_absolute_tolerance=0.0)[0]
    assert not compare_tokens(b"1E3", b"1000")[0]
    assert compare_tokens(b"1E3", b"1000", float_absolute_tolerance=0.0)[0]


def test_number_formats_follow_strtod_not_python_float():
    # Python's float() accepts underscores and surrounding text; a judge does not
    assert not compare_tokens(b"1_000", b"1000", float_absolute_tolerance=1.0)[0]
    assert compare_tokens(b"+1.0e3", b"1000", float_absolute_tolerance=1e-9)[0]
    assert compare_tokens(b".5", b"0.5", float_absolute_tolerance=1e-9)[0]
    assert compare_tokens(b"5.", b"5", float_absolute_tolerance=1e-9)[0]
    ok, why = compare_tokens(b"five", b"5", float_absolute_tolerance=1e-3)
    assert not ok and why == "token 1: expected a number near '5', got 'five'"
    # a non-number answer token is compared as text even when a tolerance is set
    assert compare_tokens(b"IMPOSSIBLE", b"impossible", float_absolute_tolerance=1e-3)[0]
    assert not compare_tokens(b"possible", b"impossible", float_absolute_tolerance=1e-3)[0]


def test_float_tolerance_against_planted_errors():
    """Random answers, each output perturbed by a planted error clearly inside or outside the tolerance."""
    rng = random.Random(7)
    abs_tol, rel_tol = 1e-4, 1e-6
    for _ in range(300):
        n = rng.randint(1, 8)
        answers = [rng.choice([rng.uniform(-1, 1), rng.uniform(-1e6, 1e6), rng.randint(-50, 50)]) for _ in range(n)]
        bad = rng.randrange(-1, n)  # -1: every token within tolerance
        outputs = []
        for i, a in enumerate(answers):
            allowed = max(abs_tol, rel_tol * abs(a))
            factor = rng.uniform(1.5, 3.0) if i == bad else rng.uniform(0.0, 0.5)
            outputs.append(a + rng.choice([-1, 1]) * factor * allowed)
        ans = " ".join(repr(float(a)) for a in answers).encode()
        out = "\n".join(f"{o:.17g}" for o in outputs).encode()
        ok, why = compare_tokens(out, ans, float_absolute_tolerance=abs_tol, float_relative_tolerance=rel_tol)
        assert ok == (bad == -1), (ans, out, why)
        if bad >= 0:
            assert why.startswith(f"token {bad + 1}:")


def test_rejects_text_and_bad_tolerance():
    with pytest.raises(TypeError):
        compare_tokens("1", b"1")
    with pytest.raises(ValueError, match="float_absolute_tolerance"):
        compare_tokens(b"1", b"1", float_absolute_tolerance=-1.0)


# ---------------------------------------------------------------- OutputChecker


def test_default_checker_reads_files(tmp_path):
    ans = tmp_path / "t.ans"
    ans.write_bytes(b"3.14159\nYES\n")
    out = tmp_path / "out"
    out.write_bytes(b"3.1416 yes")
    checker = OutputChecker.default("float_absolute_tolerance 1e-4")
    assert checker.check(out, input_path=tmp_path / "t.in", answer_path=ans, workdir=tmp_path) == (True, "accepted")
    strict = OutputChecker.default("float_absolute_tolerance 1e-4 case_sensitive")
    assert strict.check(out, input_path=tmp_path / "t.in", answer_path=ans, workdir=tmp_path) == \
        (False, "token 2: expected 'YES', got 'yes'")
    with pytest.raises(ValueError, match="unknown validator flag"):
        OutputChecker.default("tolerance 3")


VALIDATOR_PY = r"""
import sys
inp, ans, feedback = sys.argv[1], sys.argv[2], sys.argv[3]
slack = int(sys.argv[sys.argv.index("slack") + 1]) if "slack" in sys.argv else 0
n = int(open(inp).read())
want = int(open(ans).read())
got = sys.stdin.read().split()
if len(got) != 1 or not got[0].lstrip("-").isdigit():
    open(feedback + "judgemessage.txt", "w").write("expected one integer\n")
    sys.exit(43)
if abs(int(got[0]) - want) > slack:
    open(feedback + "judgemessage.txt", "w").write(f"\nn={n}: off by {int(got[0]) - want}\n")
    sys.exit(43)
if "crash" in sys.argv:
    sys.exit(1)
sys.exit(42)
"""

VALIDATOR_CPP = r"""
#include <fstream>
#include <iostream>
#include <string>
#include "tolerance.h"
int main(int argc, char** argv) {
    std::ifstream ans(argv[2]);
    long long want, got;
    ans >> want;
    if (!(std::cin >> got)) return 43;
    std::string extra;
    if (std::cin >> extra) { std::ofstream(std::string(argv[3]) + "judgemessage.txt") << "trailing output"; return 43; }
    if (got - want > SLACK || want - got > SLACK) {
        std::ofstream(std::string(argv[3]) + "judgemessage.txt") << "wrong value " << got;
        return 43;
    }
    return 42;
}
"""


def _files(tmp_path, answer: str, output: str):
    (tmp_path / "t.in").write_text("7\n")
    (tmp_path / "t.ans").write_text(answer)
    (tmp_path / "out").write_text(output)
    return dict(input_path=tmp_path / "t.in", answer_path=tmp_path / "t.ans", workdir=tmp_path / "work")


def test_custom_python_validator_protocol(tmp_path):
    (tmp_path / "val").mkdir()
    (tmp_path / "val" / "validate.py").write_text(VALIDATOR_PY)
    program = prepare(tmp_path / "val" / "validate.py", tmp_path / "build")
    checker = OutputChecker.custom(program, flags="slack 1", source=tmp_path / "val")
    out = tmp_path / "out"
    assert checker.check(out, **_files(tmp_path, "10\n", "11\n")) == (True, "accepted")
    assert checker.check(out, **_files(tmp_path, "10\n", "13\n")) == (False, "validator: n=7: off by 3")
    assert checker.check(out, **_files(tmp_path, "10\n", "ten\n")) == (False, "validator: expected one integer")
    # flags reach the validator as extra arguments: without slack, 11 is wrong
    exact = checker.with_flags(())
    assert exact.check(out, **_files(tmp_path, "10\n", "11\n")) == (False, "validator: n=7: off by 1")
    # a validator that exits with neither 42 nor 43 is a judge error, not a wrong answer
    with pytest.raises(CheckerError, match="exited with 1"):
        checker.with_flags("crash").check(out, **_files(tmp_path, "10\n", "10\n"))


def test_custom_validator_timeout_is_a_judge_error(tmp_path):
    (tmp_path / "slow.py").write_text("import time\ntime.sleep(30)\n")
    checker = OutputChecker.custom(prepare(tmp_path / "slow.py", tmp_path / "build"), timeout_s=0.5)
    with pytest.raises(CheckerError, match="longer than 0.5 s"):
        checker.check(tmp_path / "out", **_files(tmp_path, "1", "1"))


def test_custom_cpp_validator_with_local_header(tmp_path):
    folder = tmp_path / "checker"
    folder.mkdir()
    (folder / "check.cpp").write_text(VALIDATOR_CPP)
    (folder / "tolerance.h").write_text("#define SLACK 2\n")
    program = prepare(folder, tmp_path / "build")
    assert program.language == "cpp" and stat.S_IMODE((tmp_path / "build").stat().st_mode) == 0o755
    checker = OutputChecker.custom(program, source=folder)
    out = tmp_path / "out"
    assert checker.check(out, **_files(tmp_path, "100", "102"))[0]
    assert checker.check(out, **_files(tmp_path, "100", "103")) == (False, "validator: wrong value 103")
    assert checker.check(out, **_files(tmp_path, "100", "100 1")) == (False, "validator: trailing output")
    assert checker.check(out, **_files(tmp_path, "100", "")) == (False, "validator: wrong answer")


def test_checker_construction_is_validated(tmp_path):
    with pytest.raises(ValueError, match="kind"):
        OutputChecker("fancy")
    with pytest.raises(ValueError, match="needs the prepared validator"):
        OutputChecker("custom")
    program = prepare(_write(tmp_path / "v.py", "import sys; sys.exit(42)"), tmp_path / "b")
    with pytest.raises(ValueError, match="timeout_s"):
        OutputChecker.custom(program, timeout_s=0)
    assert OutputChecker.custom(program).to_dict()["program"]["language"] == "python"


def _write(path, text):
    path.write_text(text)
    return path


def test_checkers_survive_pickling_for_remote_workers(tmp_path):
    """Campaigns ship checkers to Dask workers by pickle; the parsed options must come along."""
    import pickle

    default = OutputChecker.default("float_relative_tolerance 0.5 case_sensitive")
    clone = pickle.loads(pickle.dumps(default))
    assert clone == default and clone.options == default.options
    (tmp_path / "a").write_text("1\nX")
    (tmp_path / "o").write_text("1.4 x")
    kw = dict(input_path=tmp_path / "i", answer_path=tmp_path / "a", workdir=tmp_path)
    assert clone.check(tmp_path / "o", **kw) == default.check(tmp_path / "o", **kw) == \
        (False, "token 2: expected 'X', got 'x'")
    custom = OutputChecker.custom(prepare(_write(tmp_path / "v.py", "import sys; sys.exit(42)"), tmp_path / "b"))
    assert pickle.loads(pickle.dumps(custom)).check(tmp_path / "o", **kw) == (True, "accepted")
