"""Suites: folders of problem packages in the Kattis problem-package format.

This is the format of ICPC, Kattis, DOMjudge and BAPCtools archives::

    <problem id>/
        problem.yaml                 name, validation, validator_flags, limits
        data/sample/*.in, *.ans      sample tests (correctness)
        data/secret/**/*.in, *.ans   secret tests, optionally in nested groups
        data/**/testdata.yaml        per-group output_validator_flags / _args (optional;
                                     test_group.yaml in the 2025-09 format)
        submissions/<verdict>/<file or folder>
        output_validators/<name>/    custom output validator (``validation: custom``)
        output_validator/            the same, in the 2023-07 layout
        problem_statement/, generators/, input_validators/, ...   (ignored)

:func:`load_suite` reads one package or a folder of them and never crashes on a
package it cannot use: the package (or test, or submission) is listed in
:attr:`Suite.skipped` with the reason, and everything else loads. A real archive
loads unchanged.

Decisions (where the issue is silent are marked *decision*):

* **Test kinds.** Tests under ``data/secret/optimization/`` are the optimization
  tests when that folder exists; otherwise the ``n_largest_optimization``
  largest secret inputs (by bytes). When sizes at the cut-off are within
  :data:`SIZE_TIE_RATIO` (10 %) of each other they cannot tell workloads
  apart (*decision*): :func:`probe_optimization_tests` runs the references
  once on those tests and keeps the heaviest; without a probe they are taken
  by name and :attr:`Problem.optimization_choice` says so. Everything else,
  samples included, is a correctness test.
* **Unusable tests** (a ``.ans`` without its ``.in``, an ``.in`` without its
  ``.ans``, a file that cannot be read) are listed in :attr:`Suite.skipped`
  (``what="test"``) and counted in :attr:`Problem.unusable_tests`.
* **Verdict folders and @EXPECTED_RESULTS@.** A submission whose source has an
  ``@EXPECTED_RESULTS@:`` header (DOMjudge / BAPCtools) is correct when every
  listed result is ``ACCEPTED`` or ``TIME_LIMIT_EXCEEDED`` (a correct
  reference that may time out), in any folder. Without a header, ``accepted``
  and ``time_limit_exceeded`` hold correct references (the latter slow), the
  folders of :data:`INCORRECT_VERDICTS` incorrect ones, and a submission in
  ``mixed`` or in any other folder is skipped (its verdict is unknown). A 2025-09
  ``submissions/submissions.yaml`` entry for the submission's folder or file
  (``permitted``/``required`` verdicts) decides before the folder does
  (:func:`_yaml_expectation`; patterns and per-group expectations are not read).
* **Python sources** are byte-compiled by the chosen interpreter at load time
  (one process per problem); one that does not compile, or a Python 2 program,
  is skipped with the reason (:func:`audits.collect.languages.check_python`).
  C and C++ submissions are compiled by ``collect`` (a compile or link error
  skips that submission with the compiler's first error line); custom output
  validators are built at load time, and one that does not build skips its
  problem with the same kind of reason (never a crash).
* Submission folders with ``build``/``run`` scripts are skipped: those scripts
  would run outside the sandbox.
* **Validator flags** (*decision*): problem.yaml ``validator_flags`` followed by
  the ``output_validator_flags`` of the nearest ``testdata.yaml`` at or above
  the test's group (later flags win). ``Problem.checker`` carries the flags that
  apply to ``data/``; a test whose group says otherwise carries its own in
  :attr:`TestCase.validator_flags`; use :meth:`Problem.checker_for`.
* **Time limit** (*decision*): ``limits.time_limit`` (2023-07 format), else a
  BAPCtools ``.timelimit`` file, else ``timelimit`` in ``domjudge-problem.ini``,
  else None (the legacy format derives it from the judge solutions).
* Hidden files and folders (``.gitkeep``, ``.git``) are ignored silently.
* **Campaign subsets** (:func:`load_suite` ``optimization_tests`` and
  ``submissions``; ``--optimization-tests``, ``--submission``,
  ``--submissions-from`` of ``speedaudit collect`` and ``speedaudit suite``):
  applied here, so that every way to collect gets them from one place.
  ``optimization_tests=N`` keeps each problem's N largest optimization tests
  (input bytes, ties by name in natural order) and leaves the others out of
  the problem; without ``data/secret/optimization/`` it takes the N largest of
  the ``n_largest_optimization`` chosen secret inputs, and the secret inputs
  left out stay correctness tests, as every secret input not chosen is
  (*decision*: the probe of same-size inputs then still decides among them).
  ``submissions`` keeps the submissions whose ``PROBLEM/SOLUTION`` id
  (``lis/accepted/bisect_tails.py``, the corpus's ``problem`` and ``solution``)
  equals or matches (:func:`fnmatch.fnmatchcase`) one of the patterns; a
  problem left with none is left out, and a pattern that matches nothing is a
  :class:`SuiteError` naming it. :attr:`Suite.selection` says what was kept.
  Only what can match is read (issue 26): when every pattern names its
  problem (no ``*?[`` before its first ``/``, e.g. ``lis/accepted/*``), only
  those packages are loaded, as with ``problems`` (the others are neither
  read nor listed as skipped, and a selection line says how many were not
  read); in the packages loaded, only the matching submissions are
  byte-compiled and built. The "N of M" of the selection counts in M every
  submission found in the packages read, the unselected ones unchecked.

Example
-------
>>> suite = load_suite("fixtures/suites/mini")          # doctest: +SKIP
>>> print(suite.summary())                               # doctest: +SKIP
"""

from __future__ import annotations

import configparser
import dataclasses
import fnmatch
import json
import os
import re
import shutil
import stat
import statistics
import sys
import tempfile
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import yaml

from audits.collect.checker import OutputChecker, parse_validator_flags
from audits.collect.languages import (
    DEFAULT_PYTHON,
    EXTENSIONS,
    LANGUAGES,
    BuildError,
    check_python,
    cxx_flags,
    language_of,
    prepare,
)
from audits.collect.sandbox import Limits, SandboxError, make_sandbox, scratch_root
from audits.corpus.schema import TEST_KINDS
from audits.corpus.table import id_defect
from audits.errors import UserError

__all__ = ["TestCase", "Submission", "Problem", "Skipped", "Suite", "SuiteError", "load_suite",
           "probe_optimization_tests", "read_patterns"]

#: Verdict folders whose programs are correct (time_limit_exceeded: correct but slow; brute_force, 2023-07:
#: correct, may exceed the time or memory limit).
CORRECT_VERDICTS = ("accepted", "time_limit_exceeded", "brute_force")
#: Verdict folders whose programs are incorrect (Kattis, DOMjudge, BAPCtools, the 2023-07 draft).
INCORRECT_VERDICTS = ("wrong_answer", "run_time_error", "rejected", "memory_limit_exceeded",
                      "output_limit_exceeded", "compile_error", "compiler_error", "partially_accepted")


class SuiteError(UserError):
    """The path is not a suite (or an option does not fit it). Message says what to do."""


@dataclass(frozen=True)
class TestCase:
    """One test of a problem.

    ``name`` is the path below ``data/`` without extension (``secret/group1/05``),
    unique within the problem; ``group`` is the folder below ``data/``
    (``sample``, ``secret`` or ``secret/group1``). ``validator_flags`` is None
    when the problem's checker applies unchanged, else the full flag list for
    this test's group (see :meth:`Problem.checker_for`).
    """

    __test__ = False  # not a pytest class

    problem: str
    name: str
    input_path: Path
    answer_path: Path
    kind: str
    group: str
    input_bytes: int
    validator_flags: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        return {"problem": self.problem, "name": self.name, "input_path": str(self.input_path),
                "answer_path": str(self.answer_path), "kind": self.kind, "group": self.group,
                "input_bytes": self.input_bytes,
                "validator_flags": None if self.validator_flags is None else list(self.validator_flags)}


@dataclass(frozen=True)
class Submission:
    """One judge submission: ``name`` is its path below ``submissions/`` (``accepted/fast.py``).

    ``expected`` is its verdict folder; ``expected_results`` the results its
    ``@EXPECTED_RESULTS@:`` header lists (normalised, e.g. ``("ACCEPTED",
    "TIME_LIMIT_EXCEEDED")``; empty without a header). ``correct`` comes from
    the header when there is one, else from the folder.
    """

    problem: str
    name: str
    path: Path
    language: str
    expected: str
    correct: bool
    expected_results: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"problem": self.problem, "name": self.name, "path": str(self.path), "language": self.language,
                "expected": self.expected, "correct": self.correct, "expected_results": list(self.expected_results)}


@dataclass(frozen=True)
class Skipped:
    """Something that was not loaded and why.

    ``what`` is ``"package"``, ``"test"``, ``"submission"`` or ``"validator"``;
    ``problem`` the problem id it belongs to (None for a folder that is not a
    package).
    """

    path: Path
    reason: str
    what: str = "package"
    problem: str | None = None

    def to_dict(self) -> dict:
        return {"path": str(self.path), "reason": self.reason, "what": self.what, "problem": self.problem}


@dataclass(frozen=True)
class Problem:
    """One loaded problem package."""

    id: str
    name: str
    root: Path
    tests: tuple[TestCase, ...]
    submissions: tuple[Submission, ...]
    checker: OutputChecker
    time_limit_s: float | None
    memory_limit_mb: int | None
    #: tests under data/ that cannot be used (no .in, no .ans, unreadable); listed in Suite.skipped
    unusable_tests: int = 0
    #: how the optimization tests were chosen (folder, sizes, or a probe run), in words
    optimization_choice: str = ""
    #: secret tests whose sizes cannot tell them apart at the cut-off (a probe run decides among them)
    probe_candidates: tuple[str, ...] = ()
    #: how many of the optimization slots the probe candidates compete for
    probe_slots: int = 0
    #: (test, median CPU seconds of the references) of a probe run, heaviest first; empty without one
    probe_seconds: tuple[tuple[str, float], ...] = ()

    def checker_for(self, test: TestCase) -> OutputChecker:
        """The checker for one test: ``checker`` with the test group's flags when they differ."""
        if test.validator_flags is None:
            return self.checker
        return self.checker.with_flags(test.validator_flags)

    def tests_of_kind(self, kind: str) -> tuple[TestCase, ...]:
        if kind not in TEST_KINDS:
            raise ValueError(f"test kind must be one of {TEST_KINDS}, got {kind!r}")
        return tuple(t for t in self.tests if t.kind == kind)

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "root": str(self.root),
                "tests": [t.to_dict() for t in self.tests], "submissions": [s.to_dict() for s in self.submissions],
                "checker": self.checker.to_dict(), "time_limit_s": self.time_limit_s,
                "memory_limit_mb": self.memory_limit_mb, "unusable_tests": self.unusable_tests,
                "optimization_choice": self.optimization_choice, "probe_candidates": list(self.probe_candidates),
                "probe_slots": self.probe_slots, "probe_seconds": [list(x) for x in self.probe_seconds]}


@dataclass(frozen=True)
class Suite:
    """A loaded suite: the usable problems and everything skipped, with reasons."""

    root: Path
    problems: tuple[Problem, ...]
    skipped: tuple[Skipped, ...]
    #: the campaign subset applied at load time (``optimization_tests``, ``submissions``), one line each, in
    #: words; empty when the whole suite is loaded
    selection: tuple[str, ...] = ()

    def problem(self, problem_id: str) -> Problem:
        for p in self.problems:
            if p.id == problem_id:
                return p
        raise KeyError(f"no problem {problem_id!r} in {self.root}; problems: {', '.join(p.id for p in self.problems)}")

    @property
    def tests(self) -> tuple[TestCase, ...]:
        return tuple(t for p in self.problems for t in p.tests)

    @property
    def submissions(self) -> tuple[Submission, ...]:
        return tuple(s for p in self.problems for s in p.submissions)

    def to_frame(self):
        """One row per problem: tests per kind, unusable tests, submissions per language and correctness, checker."""
        rows = []
        for p in self.problems:
            kinds = Counter(t.kind for t in p.tests)
            row = {
                "problem": p.id, "name": p.name,
                "correctness_tests": kinds.get("correctness", 0), "optimization_tests": kinds.get("optimization", 0),
                "unusable_tests": p.unusable_tests,
                "correct_submissions": sum(s.correct for s in p.submissions),
                "incorrect_submissions": sum(not s.correct for s in p.submissions),
            }
            row.update({lang: sum(s.language == lang for s in p.submissions) for lang in LANGUAGES})
            row.update({"checker": p.checker.describe(), "time_limit_s": p.time_limit_s,
                        "memory_limit_mb": p.memory_limit_mb, "optimization_choice": p.optimization_choice})
            rows.append(row)
        columns = ["problem", "name", "correctness_tests", "optimization_tests", "unusable_tests",
                   "correct_submissions", "incorrect_submissions", *LANGUAGES, "checker", "time_limit_s",
                   "memory_limit_mb", "optimization_choice"]
        return pd.DataFrame(rows, columns=columns)

    def to_dict(self) -> dict:
        return {"root": str(self.root), "problems": [p.to_dict() for p in self.problems],
                "skipped": [s.to_dict() for s in self.skipped], "selection": list(self.selection)}

    def warnings(self, *, timeout_s: float | None = None) -> list[str]:
        """What the suite cannot measure, one line per problem and cause (issue 24).

        A problem with no optimization test (nothing to rank programs on), with
        no correct submission (no reference to time or rank), or, given the
        campaign's ``timeout_s``, whose own time limit (problem.yaml
        ``limits.time_limit``, ``.timelimit``, ``domjudge-problem.ini``) is
        above it: an accepted solution may then time out on every run.
        """
        out = []
        for p in self.problems:
            if not any(t.kind == "optimization" for t in p.tests):
                out.append(f"{p.id}: no optimization tests (no data/secret/optimization/ and no secret input "
                           f"chosen by --n-largest): nothing to rank its programs on; the audits have no "
                           f"optimization row for it")
            if not any(s.correct for s in p.submissions):
                out.append(f"{p.id}: no accepted (correct) submission left: no reference to time or rank; "
                           f"the reliability and ranking findings cannot use it")
            if timeout_s is not None and p.time_limit_s is not None and timeout_s < p.time_limit_s:
                out.append(f"{p.id}: --timeout {timeout_s:g} s is below the problem's own time limit "
                           f"{p.time_limit_s:g} s: an accepted solution may time out on every run (raise "
                           f"--timeout to at least {p.time_limit_s:g})")
        return out

    def summary(self) -> str:
        """Problems, tests per kind, submissions per verdict folder and language, and what was skipped.

        Skips are grouped by problem with a count per kind (tests, submissions,
        validators), so a test that vanished from an archive is visible.
        """
        kinds = Counter(t.kind for t in self.tests)
        verdicts = Counter((s.expected, s.correct) for s in self.submissions)
        by_header = Counter((s.expected, s.correct) for s in self.submissions if s.expected_results)
        languages = Counter(s.language for s in self.submissions)
        lines = [f"suite {self.root}"]
        if self.selection:
            lines.append("  selection:")
            lines.extend(f"    {line}" for line in self.selection)
        lines += [f"  problems: {len(self.problems)}",
                 f"  tests: {len(self.tests)} ({kinds.get('correctness', 0)} correctness, "
                 f"{kinds.get('optimization', 0)} optimization)"
                 + (f"; {sum(p.unusable_tests for p in self.problems)} unusable (listed below)"
                    if any(p.unusable_tests for p in self.problems) else "")]
        n_sub = len(self.submissions)
        lang_text = ", ".join(f"{k} {v}" for k, v in sorted(languages.items()))
        lines.append(f"  submissions: {n_sub}" + (f" ({lang_text})" if lang_text else ""))
        for verdict, correct in sorted(verdicts, key=lambda v: (v[0] not in CORRECT_VERDICTS, v[0], not v[1])):
            tag = "correct" if correct else "incorrect"
            if by_header[(verdict, correct)]:
                tag += f", {by_header[(verdict, correct)]} by @EXPECTED_RESULTS@"
            lines.append(f"    {verdict:<22} {verdicts[(verdict, correct)]:>6}  ({tag})")
        if self.problems:
            lines.append("  per problem:")
            width = max(len(p.id) for p in self.problems)
            for p in self.problems:
                k = Counter(t.kind for t in p.tests)
                n_ok = sum(s.correct for s in p.submissions)
                unusable = f"  ({p.unusable_tests} unusable)" if p.unusable_tests else ""
                lines.append(f"    {p.id:<{width}}  tests {k.get('correctness', 0):>3} corr + "
                             f"{k.get('optimization', 0):>3} opt{unusable}  submissions {n_ok:>3} correct + "
                             f"{len(p.submissions) - n_ok:>3} incorrect  {p.checker.describe()}")
                if p.optimization_choice:
                    lines.append(f"    {'':<{width}}  optimization tests: {p.optimization_choice}")
        lines.append(f"  skipped: {len(self.skipped)}"
                     + (" (" + ", ".join(f"{n} {w}{'s' if n != 1 else ''}" for w, n in
                                         sorted(Counter(s.what for s in self.skipped).items())) + ")"
                        if self.skipped else ""))
        groups: dict[str | None, list[Skipped]] = {}
        for s in self.skipped:
            groups.setdefault(s.problem if s.what != "package" else None, []).append(s)
        for s in groups.pop(None, []):
            lines.append(f"    {_rel(s.path, self.root)}: {s.reason}")
        for problem, items in groups.items():
            counts = Counter(s.what for s in items)
            lines.append(f"    {problem}: " + ", ".join(f"{n} {w}{'s' if n != 1 else ''}"
                                                        for w, n in sorted(counts.items())))
            for s in items:
                lines.append(f"      {_rel(s.path, self.root)}: {s.reason}")
        return "\n".join(lines)


def _rel(path: Path, root: Path) -> str:
    """``path`` below ``root`` for the listing, its control characters escaped (a folder's name is printed, and an
    escape sequence in it would otherwise reach the terminal)."""
    try:
        rel = Path(path).relative_to(root)
        shown = str(rel) if str(rel) != "." else str(path)
    except ValueError:
        shown = str(path)
    return "".join(repr(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch for ch in shown)


def _with_usable_names(problem: Problem, skipped: list[Skipped]) -> Problem:
    """``problem`` without the submissions and tests whose names cannot be ids (:func:`id_defect`), each listed in
    ``skipped``: a campaign would run them and then fail to write its corpus, which refuses such ids."""
    def usable(what: str, name: str, path: Path) -> bool:
        defect = id_defect(name)
        if defect is not None:
            skipped.append(Skipped(path, f"its name {name!r} cannot be a {what} id ({defect}); rename it", what,
                                   problem.id))
        return defect is None

    submissions = tuple(s for s in problem.submissions if usable("submission", s.name, s.path))
    tests = tuple(t for t in problem.tests if usable("test", t.name, t.input_path))
    if len(submissions) == len(problem.submissions) and len(tests) == len(problem.tests):
        return problem
    return dataclasses.replace(problem, submissions=submissions, tests=tests)


def default_build_dir() -> Path:
    """Where validators are compiled when no build_dir is given: $XDG_CACHE_HOME/speedaudit/build."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "speedaudit" / "build"


_NATURAL = re.compile(r"(\d+)")


def _natural_key(text: str):
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in _NATURAL.split(text)]


def _hidden(name: str) -> bool:
    """A dot-file, or Python's bytecode cache: ``__pycache__`` is what Python writes beside any module it imports
    (a suite's build script imported by a tool leaves one at the suite's root), never part of a package; inside a
    folder submission its bytecode would be a second copy of the program that the source does not show."""
    return name.startswith(".") or name == "__pycache__"


class _Skip(Exception):
    """Internal: this package cannot be used; the message is the reason (``what``/``path``: what failed)."""

    def __init__(self, message: str, *, what: str = "package", path: Path | None = None):
        super().__init__(message)
        self.what = what
        self.path = path


def _read_yaml(path: Path, what: str) -> dict:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            text = fh.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Skip(f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise _Skip(f"{what} cannot be read: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = ""
        mark = getattr(exc, "problem_mark", None)
        if mark is not None:
            where = f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _Skip(f"{what} is not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _Skip(f"{what} must be a YAML mapping (key: value lines), got a {type(data).__name__}")
    return data


def _flags_of(value, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return tuple(part for v in value for part in str(v).split())
    if isinstance(value, (int, float)):
        return (str(value),)
    raise _Skip(f"{where} must be a string of flags (e.g. 'float_tolerance 1e-6'), got {value!r}")


def _problem_name(pid: str, root: Path, config: dict) -> str:
    name = config.get("name")
    if isinstance(name, dict) and name:  # 2023-07: a map language -> name
        name = name.get("en", next(iter(name.values())))
    if isinstance(name, str) and name.strip():
        return name.strip()
    statement = root / "problem_statement"
    if statement.is_dir():  # legacy: \problemname{...} in the LaTeX statement
        for tex in sorted(statement.glob("problem*.tex")):
            try:
                match = re.search(r"\\problemname\{([^}]*)\}", tex.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            if match and match.group(1).strip():
                return match.group(1).strip()
    return pid


def _number(value, where: str, *, integer: bool = False):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _Skip(f"{where} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise _Skip(f"{where} must be a number, got {value!r}") from None
    if not number > 0 or number != number or number == float("inf"):
        raise _Skip(f"{where} must be a positive number, got {value!r}")
    return int(number) if integer else number


def _limits(root: Path, config: dict) -> tuple[float | None, int | None]:
    limits = config.get("limits") or {}
    if not isinstance(limits, dict):
        raise _Skip(f"problem.yaml: 'limits' must be a mapping (e.g. 'limits: {{memory: 1024}}'), got {limits!r}")
    memory = _number(limits.get("memory"), "problem.yaml: limits.memory (MB)", integer=True)
    time_limit = _number(limits.get("time_limit"), "problem.yaml: limits.time_limit (s)")
    if time_limit is None and (root / ".timelimit").is_file():
        text = (root / ".timelimit").read_text(errors="replace").strip()
        time_limit = _number(text, ".timelimit (s)")
    if time_limit is None and (root / "domjudge-problem.ini").is_file():
        parser = configparser.ConfigParser()
        try:
            parser.read_string("[p]\n" + (root / "domjudge-problem.ini").read_text(errors="replace"))
        except configparser.Error as exc:
            raise _Skip(f"domjudge-problem.ini cannot be parsed: {exc}") from None
        raw = parser.get("p", "timelimit", fallback=None)
        if raw is not None:
            time_limit = _number(raw.strip().strip("'\""), "domjudge-problem.ini: timelimit (s)")
    return time_limit, memory


def _problem_types(config: dict) -> tuple[str, set[str]]:
    """(legacy validation string, set of 2023-07 types)."""
    validation = config.get("validation", "default")
    if validation is None:
        validation = "default"
    mapped: set[str] = set()
    if isinstance(validation, dict):  # a 2023-07 draft: {interactive: bool, scoring: bool}
        unknown = set(validation) - {"interactive", "scoring"}
        if unknown or not all(isinstance(v, bool) for v in validation.values()):
            raise _Skip(f"problem.yaml: 'validation' as a mapping takes interactive: true/false and "
                        f"scoring: true/false, got {validation!r}")
        mapped = {k for k, v in validation.items() if v}
        validation = "auto" + (" interactive" if "interactive" in mapped else "")
    elif not isinstance(validation, str):
        raise _Skip(f"problem.yaml: 'validation' must be a string such as 'default' or 'custom', or a mapping "
                    f"such as {{interactive: false, scoring: false}}, got {validation!r}")
    types = config.get("type", "pass-fail")
    if isinstance(types, str):
        types = set(types.split())
    elif isinstance(types, list):
        types = {str(t) for t in types}
    else:
        raise _Skip(f"problem.yaml: 'type' must be a string or a list, got {types!r}")
    if "scoring" in mapped:
        types = (types - {"pass-fail"}) | {"scoring"}
    return validation.strip(), types


def _find_validator(root: Path) -> Path | None:
    """The custom output validator: a folder or a single file in output_validators/ (or output_validator/)."""
    for folder_name in ("output_validator", "output_validators"):
        folder = root / folder_name
        if not folder.is_dir():
            continue
        entries = sorted(p for p in folder.iterdir() if not _hidden(p.name))
        if folder_name == "output_validator":
            return folder
        dirs = [p for p in entries if p.is_dir()]
        files = [p for p in entries if p.is_file()]
        if len(dirs) == 1 and not any(language_of(f) for f in files):
            return dirs[0]
        if not dirs and files:
            sources = [f for f in files if language_of(f)]
            return sources[0] if len(sources) == 1 else folder
        if entries:
            raise _Skip(f"{folder}: expected one validator (one folder or one source file), found "
                        + ", ".join(p.name for p in entries))
    return None


def _prepare_validator(path: Path, build_dir: Path, python: str, cxx: str, sandbox: str):
    language = language_of(path)
    if language is None:
        files = [p for p in (path.rglob("*") if path.is_dir() else [path]) if p.is_file()]
        found = sorted({p.suffix or p.name for p in files})
        if path.is_dir() and all(_hidden(p.name) for p in files):  # e.g. a template's output_validator/.gitkeep
            raise _Skip(f"custom output validator folder {path} holds no program (found "
                        f"{', '.join(found) or 'no files'}), problem skipped: remove the folder to use the default "
                        f"validator, or put the validator's source in it", what="validator", path=path)
        raise _Skip(f"custom output validator {path} is neither Python, C++ nor C (found "
                    f"{', '.join(found) or 'no files'}), problem skipped; supported: {', '.join(EXTENSIONS)}",
                    what="validator", path=path)
    try:  # a C++ validator folder is compiled with -I itself, so validate.h / testlib.h beside it are found
        return prepare(path, build_dir, python=python, cxx=cxx, sandbox=sandbox, siblings=True)
    except (BuildError, OSError) as exc:  # a compile or link error, a Python 2 validator, an unreadable file
        text = str(exc)
        for prefix in (f"{path.resolve()}: ", f"{path}: "):  # the skip already names the validator
            text = text[len(prefix):] if text.startswith(prefix) else text
        raise _Skip(f"custom output validator cannot be built, problem skipped: {text}", what="validator",
                    path=path) from None


def _testdata_flags(data: Path) -> dict[str, tuple[str, ...] | None]:
    """group path (relative to data/, '' for data/) -> output_validator_flags set there (None = not set)."""
    found: dict[str, tuple[str, ...] | None] = {}
    for dirpath, dirnames, filenames in os.walk(data):
        dirnames[:] = [d for d in dirnames if not _hidden(d)]
        for config_name in ("test_group.yaml", "testdata.yaml"):  # 2025-09 name, then the legacy one
            if config_name not in filenames:
                continue
            rel = Path(dirpath).relative_to(data).as_posix()
            rel = "" if rel == "." else rel
            config_path = Path(dirpath) / config_name
            cfg = _read_yaml(config_path, str(config_path.relative_to(data.parent)))
            key = "output_validator_args" if "output_validator_args" in cfg else "output_validator_flags"
            value = cfg.get(key)
            found[rel] = None if value is None else _flags_of(value, f"{config_path.relative_to(data.parent)}: {key}")
            break
    return found


def _group_flags(group: str, testdata: dict) -> tuple[str, ...] | None:
    parts = group.split("/") if group else []
    for depth in range(len(parts), -1, -1):
        key = "/".join(parts[:depth])
        if testdata.get(key) is not None:
            return testdata[key]
    return None


#: The parts of a package whose files are read or built: no link in them is followed (issue 22).
GUARDED_PARTS = ("problem.yaml", "data", "submissions", "output_validators", "output_validator", "generators",
                 ".timelimit", "domjudge-problem.ini")


def refuse_links(root: Path) -> None:
    """Raise ``_Skip`` at the first link in a package's guarded parts, without following it.

    Every entry of :data:`GUARDED_PARTS` (folders walked with
    ``os.walk(followlinks=False)``, each entry ``lstat``-ed) must be a plain
    folder or a regular file: a symbolic link (to a file or a folder, dangling
    or not), a regular file with more than one hard link (a hard link may name
    a file outside the package: its other names cannot be found, so any is
    refused), or a fifo/socket/device is refused. Only the link's own text is
    read (``readlink``), never what it names. Hidden folders (``.git``) are not
    descended into, but a hidden link is still refused.
    """
    def check(path: Path) -> None:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise _Skip(f"{path.relative_to(root)} cannot be examined ({exc.strerror}); package skipped",
                        path=path) from None
        rel = path.relative_to(root).as_posix()
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(path)
            except OSError:
                target = "?"
            raise _Skip(f"{rel} is a symbolic link (to {target}, not followed): speedaudit follows no link in a "
                        f"package, since it reads packages as root; copy the file or folder into the package "
                        f"instead; package skipped", path=path)
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            raise _Skip(f"{rel} is a hard link ({st.st_nlink} names for one file; the others may be outside the "
                        f"package): speedaudit reads only files that belong to the package; copy it "
                        f"(cp --no-preserve=links) instead; package skipped", path=path)
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise _Skip(f"{rel} is neither a file nor a folder (a fifo, socket or device); package skipped",
                        path=path)

    for part in GUARDED_PARTS:
        top = root / part
        check(top)
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            for name in sorted(dirnames) + sorted(filenames):
                check(Path(dirpath) / name)
            dirnames[:] = sorted(d for d in dirnames if not _hidden(d))


def _readable(path: Path) -> str | None:
    """None when ``path`` is a regular file we can open (never through a link), else why not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    return None if stat.S_ISREG(mode) else "not a regular file"


def _collect_tests(pid: str, root: Path, *, include_samples: bool, skipped: list[Skipped]
                   ) -> tuple[list[tuple[str, str, Path, Path, int]], int]:
    """(name, group, input, answer, bytes) for every usable test in data/sample and data/secret, and the
    number of unusable ones (each listed in ``skipped``: no .in, no .ans, unreadable)."""
    data = root / "data"
    found = []
    unusable = 0

    def skip(path: Path, reason: str) -> None:
        nonlocal unusable
        unusable += 1
        skipped.append(Skipped(path, reason, "test", pid))

    for top in ("sample", "secret"):
        base = data / top
        if not base.is_dir() or (top == "sample" and not include_samples):
            continue
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):  # links: refused before
            dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
            names = set(filenames)
            for fname in sorted(filenames):
                if _hidden(fname):
                    continue
                if fname.endswith(".ans") and fname[:-4] + ".in" not in names:
                    ans = Path(dirpath) / fname
                    rel = ans.relative_to(data).with_suffix("").as_posix()
                    skip(ans, f"no input file {fname[:-4]}.in beside the answer (test {rel} skipped; archives "
                              f"often leave large inputs out: regenerate them)")
                    continue
                if not fname.endswith(".in"):
                    continue
                inp = Path(dirpath) / fname
                ans = inp.with_suffix(".ans")
                rel = inp.relative_to(data).with_suffix("").as_posix()
                if fname[:-3] + ".ans" not in names:
                    skip(inp, f"no answer file {ans.name} beside the input (test {rel} skipped)")
                    continue
                # no link is followed (refuse_links ran first; O_NOFOLLOW here as well)
                why = _readable(inp)
                if why is not None:
                    skip(inp, f"input cannot be read ({why}; test {rel} skipped)")
                    continue
                why = _readable(ans)
                if why is not None:
                    skip(ans, f"answer file cannot be read ({why}; test {rel} skipped)")
                    continue
                size = inp.stat().st_size
                group = Path(rel).parent.as_posix()
                found.append((rel, group, inp, ans, size))
    found.sort(key=lambda t: _natural_key(t[0]))
    return found, unusable


#: Test sizes closer than this ratio cannot tell two tests' workloads apart (*decision*): a generator's
#: "maximal" inputs often differ by a few digits' worth of bytes.
SIZE_TIE_RATIO = 1.1


def _kinds(tests: list[tuple[str, str, Path, Path, int]], n_largest: int
           ) -> tuple[list[str], str, tuple[str, ...], int]:
    """Test kinds, how the optimization tests were chosen, and the tied candidates a probe should decide.

    Without ``data/secret/optimization/``: the ``n_largest`` largest secret
    inputs. When the sizes at the cut-off are within :data:`SIZE_TIE_RATIO` of
    each other, those tests are *probe candidates*: tests clearly larger than
    the cut-off stay chosen, and a probe run (:func:`probe_optimization_tests`)
    picks the heaviest candidates for the remaining slots; until then they are
    chosen by name (natural order) and the choice says so.
    """
    opt_folder = [t[1] == "secret/optimization" or t[1].startswith("secret/optimization/") for t in tests]
    if any(opt_folder):
        return (["optimization" if flag else "correctness" for flag in opt_folder],
                f"the {sum(opt_folder)} tests under data/secret/optimization/", (), 0)
    secret = [i for i, t in enumerate(tests) if t[1] == "secret" or t[1].startswith("secret/")]
    ranked = sorted(secret, key=lambda i: (-tests[i][4], _natural_key(tests[i][0])))
    largest = ranked[:n_largest]
    kinds = ["optimization" if i in set(largest) else "correctness" for i in range(len(tests))]
    if not largest:
        return kinds, "", (), 0
    if len(ranked) <= n_largest:
        return kinds, f"every secret test ({len(largest)}, at most {n_largest} wanted)", (), 0
    cut = tests[largest[-1]][4]
    tied = [i for i in ranked if cut / SIZE_TIE_RATIO <= tests[i][4] <= cut * SIZE_TIE_RATIO]
    clear = [i for i in largest if tests[i][4] > cut * SIZE_TIE_RATIO]
    if len(tied) <= n_largest - len(clear):
        return kinds, f"the {len(largest)} largest secret inputs ({tests[largest[-1]][4]:,}+ bytes)", (), 0
    slots = n_largest - len(clear)
    names = tuple(tests[i][0] for i in tied)
    return (kinds, f"{slots} of {len(tied)} secret inputs of indistinguishable size ({cut:,} bytes, within "
                   f"{SIZE_TIE_RATIO:g}x) chosen BY NAME: run a probe (speedaudit suite/collect do) to pick "
                   f"the heaviest", names, slots)


#: ``@EXPECTED_RESULTS@`` result names (DOMjudge / BAPCtools spellings) -> one name each.
_RESULT_NAMES = {
    "ACCEPTED": "ACCEPTED", "CORRECT": "ACCEPTED",
    "WRONG_ANSWER": "WRONG_ANSWER", "NO_OUTPUT": "NO_OUTPUT",
    "TIME_LIMIT_EXCEEDED": "TIME_LIMIT_EXCEEDED", "TIMELIMIT": "TIME_LIMIT_EXCEEDED",
    "RUN_TIME_ERROR": "RUN_TIME_ERROR", "RUN_ERROR": "RUN_TIME_ERROR", "RUNTIME_ERROR": "RUN_TIME_ERROR",
    "MEMORY_LIMIT_EXCEEDED": "MEMORY_LIMIT_EXCEEDED", "MEMORY_LIMIT": "MEMORY_LIMIT_EXCEEDED",
    "OUTPUT_LIMIT_EXCEEDED": "OUTPUT_LIMIT_EXCEEDED", "OUTPUT_LIMIT": "OUTPUT_LIMIT_EXCEEDED",
    "COMPILER_ERROR": "COMPILER_ERROR", "COMPILE_ERROR": "COMPILER_ERROR",
}
#: Results of a correct program: it may be slow, never wrong.
CORRECT_RESULTS = ("ACCEPTED", "TIME_LIMIT_EXCEEDED")
_EXPECTED = re.compile(rb"@EXPECTED_RESULTS@:?[ \t]*([^\r\n]*)")


def expected_results(path: Path) -> tuple[str, ...] | None:
    r"""The ``@EXPECTED_RESULTS@:`` header of a submission (file, or the first source file of a folder).

    Returns the normalised result names (``CORRECT`` -> ``ACCEPTED``,
    ``TIMELIMIT`` -> ``TIME_LIMIT_EXCEEDED``, ``RUN-ERROR`` ->
    ``RUN_TIME_ERROR``, ...), None without a header. Raises ValueError naming
    an unknown result.

    >>> import tempfile
    >>> f = Path(tempfile.mkdtemp()) / "a.py"
    >>> _ = f.write_text("# @EXPECTED_RESULTS@: ACCEPTED, TIME_LIMIT_EXCEEDED\nprint(1)\n")
    >>> expected_results(f)
    ('ACCEPTED', 'TIME_LIMIT_EXCEEDED')
    """
    files = [path] if path.is_file() else sorted(
        (p for p in path.rglob("*") if p.is_file() and not any(part.startswith(".") for part in
                                                                p.relative_to(path).parts)), key=str)
    for f in files:
        try:
            with open(f, "rb") as fh:
                head = fh.read(1 << 16)
        except OSError:
            continue
        match = _EXPECTED.search(head)
        if not match:
            continue
        text = match.group(1).decode("utf-8", "replace")
        text = re.split(r"\*/|-->", text)[0]  # a header inside a one-line C comment
        out = []
        for word in (w.strip() for w in text.replace(";", ",").split(",")):
            if not word:
                continue
            key = word.upper().replace("-", "_").replace(" ", "_")
            if key not in _RESULT_NAMES:
                raise ValueError(f"unknown result {word!r} in its @EXPECTED_RESULTS@ header; known: "
                                 f"{', '.join(sorted(set(_RESULT_NAMES)))}")
            if _RESULT_NAMES[key] not in out:
                out.append(_RESULT_NAMES[key])
        if not out:
            raise ValueError("its @EXPECTED_RESULTS@ header lists no result")
        return tuple(out)
    return None


#: submissions.yaml verdict names that a correct program may get (TLE: correct but slow).
_YAML_CORRECT = {"AC", "TLE"}


def _yaml_expectation(expectations: dict, folder: str, entry: str) -> str | None:
    """"correct", "incorrect", "unknown" or None (no entry) from a 2025-09 ``submissions.yaml``.

    Only keys that name the submission exactly (``folder/file``) or its folder
    are read; the file's key wins. Keys with patterns (``*``, ``{a,b}``) and the
    per-test-group expectations are not read (*decision*: a partial reading of
    them could label a program wrongly). With ``required`` that holds no
    ``AC``/``TLE``: incorrect; with ``permitted`` a subset of ``AC``/``TLE``:
    correct; ``permitted`` without ``AC``: incorrect; anything else unknown.
    """
    exact = f"{folder}/{entry}"
    if exact not in expectations and any(
            isinstance(key, str) and key.startswith(f"{folder}/") and any(c in key for c in "*?[{")
            and ("{" in key or fnmatch.fnmatchcase(exact, key)) for key in expectations):
        return "unknown"  # a pattern may apply to it: rather unknown than labelled by the folder alone
    for key in (exact, folder):
        spec = expectations.get(key)
        if not isinstance(spec, dict) or not ({"permitted", "required"} & set(spec)):
            continue
        permitted = spec.get("permitted")
        required = spec.get("required")
        permitted = {str(v).upper() for v in permitted} if isinstance(permitted, list) else None
        required = {str(v).upper() for v in required} if isinstance(required, list) else None
        if required is not None and not required & _YAML_CORRECT:
            return "incorrect"
        if permitted is not None and permitted <= _YAML_CORRECT and permitted:
            return "correct"
        if permitted is not None and "AC" not in permitted:
            return "incorrect"
        return "unknown"
    return None


def _python_files(entry: Path) -> list[Path]:
    if entry.is_file():
        return [entry]
    return sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix.lower() in (".py", ".py3")
                  and not any(part.startswith(".") for part in p.relative_to(entry).parts))


def _collect_submissions(pid: str, root: Path, skipped: list[Skipped], python: str,
                         sandbox: str = "auto", patterns: Sequence[str] | None = None
                         ) -> tuple[list[Submission], list[str]]:
    """The package's usable submissions, and the names of the submissions found.

    With ``patterns`` (:func:`load_suite` ``submissions``), only the submissions whose ``PROBLEM/SOLUTION``
    id matches one are byte-compiled and returned; the others are read as far as their language and
    expected verdict (what a skip of theirs would say before any check) and only counted.
    """
    subs_dir = root / "submissions"
    if not subs_dir.is_dir():
        return [], []
    out = []
    found: list[str] = []
    python_subs: list[tuple[Submission, Path]] = []

    def skip(entry: Path, reason: str) -> None:
        skipped.append(Skipped(entry, reason, "submission", pid))

    expectations: dict = {}
    if (subs_dir / "submissions.yaml").is_file():  # 2025-09: expected verdicts per folder or file
        expectations = _read_yaml(subs_dir / "submissions.yaml", "submissions/submissions.yaml")

    for verdict_dir in sorted(subs_dir.iterdir()):
        if _hidden(verdict_dir.name) or not verdict_dir.is_dir():
            continue  # e.g. submissions.yaml (2023-07)
        verdict = verdict_dir.name
        for entry in sorted(verdict_dir.iterdir(), key=lambda p: _natural_key(p.name)):
            if _hidden(entry.name):
                continue
            name = f"{verdict}/{entry.name}"
            if entry.is_dir() and any((entry / script).is_file() for script in ("build", "run")):
                skip(entry, "has a build/run script: speedaudit does not run build scripts outside the sandbox; "
                            "build it yourself and add the program as a source file")
                continue
            language = language_of(entry)
            if language is None:
                if entry.suffix.lower() == ".disabled":
                    skip(entry, "disabled by its name (.disabled)")
                    continue
                if entry.suffix.lower() == ".py2":
                    reason = "Python 2 program (.py2); speedaudit runs Python 3"
                elif entry.is_dir():
                    reason = "language not supported (a folder without a single Python, C++ or C program)"
                else:
                    reason = f"language not supported ({entry.suffix or 'no extension'})"
                skip(entry, f"{reason}; supported: {', '.join(EXTENSIONS)}")
                continue
            try:
                results = expected_results(entry)
            except ValueError as exc:
                skip(entry, str(exc))
                continue
            from_yaml = _yaml_expectation(expectations, verdict, entry.name)
            if results is not None:
                correct = all(r in CORRECT_RESULTS for r in results)
            elif from_yaml is not None:
                if from_yaml == "unknown":
                    skip(entry, f"submissions.yaml permits both correct and incorrect verdicts for {name}, or "
                                f"a pattern there (not read by speedaudit) may apply: its expected verdict is unknown")
                    continue
                correct = from_yaml == "correct"
            elif verdict == "mixed":
                skip(entry, "in submissions/mixed/ without an @EXPECTED_RESULTS@ header: its expected verdict "
                            "is unknown (add e.g. '@EXPECTED_RESULTS@: ACCEPTED, TIME_LIMIT_EXCEEDED')")
                continue
            elif verdict not in CORRECT_VERDICTS and verdict not in INCORRECT_VERDICTS:
                skip(entry, f"verdict folder submissions/{verdict}/ is not a known one and the submission has no "
                            f"@EXPECTED_RESULTS@ header: its expected verdict is unknown (known folders: "
                            f"{', '.join(CORRECT_VERDICTS + INCORRECT_VERDICTS)}; or give it 'permitted:' in "
                            f"submissions/submissions.yaml)")
                continue
            else:
                correct = verdict in CORRECT_VERDICTS
            sub = Submission(pid, name, entry, language, verdict, correct, results or ())
            found.append(name)
            if patterns is not None and not any(matches(pat, submission_id(pid, name)) for pat in patterns):
                continue  # not selected: neither byte-compiled nor kept
            if language == "python":
                python_subs.append((sub, entry))
            out.append(sub)
    if python_subs:  # byte-compiled by the chosen interpreter, one process for the whole problem
        files = {sub.name: _python_files(entry) for sub, entry in python_subs}
        try:
            verdicts = check_python([f for fs in files.values() for f in fs], python=python, sandbox=sandbox)
        except BuildError as exc:
            verdicts = None
            failure = str(exc)
        bad = set()
        for sub, entry in python_subs:
            if verdicts is None:
                skip(entry, f"cannot check the Python source: {failure}")
                bad.add(sub.name)
                continue
            reasons = [(f, verdicts.get(f)) for f in files[sub.name] if verdicts.get(f)]
            if reasons:
                f, why = reasons[0]
                where = f"{f.relative_to(entry)}: " if entry.is_dir() else ""
                skip(entry, where + why)
                bad.add(sub.name)
        out = [sub for sub in out if sub.name not in bad]
    return out, found


def _built(submissions: list[Submission], skipped: list[Skipped], build_dir: Path, *, python: str, cxx: str,
           sandbox: str, cxx_std: str | None) -> list[Submission]:
    """The C/C++ submissions that build (in the box, cached in ``build_dir``); the others listed as skipped."""
    kept = []
    for sub in submissions:
        if sub.language in ("cpp", "c"):
            try:
                prepare(sub, build_dir, python=python, cxx=cxx, cxxflags=cxx_flags(cxx_std, cxx=cxx),
                        sandbox=sandbox)
            except BuildError as exc:
                text = str(exc)
                for prefix in (f"{Path(sub.path).resolve()}: ", f"{sub.path}: "):
                    text = text[len(prefix):] if text.startswith(prefix) else text
                skipped.append(Skipped(sub.path, f"does not build ({cxx_flags(cxx_std, cxx=cxx)[1]}): {text}",
                                       "submission", sub.problem))
                continue
        kept.append(sub)
    return kept


def load_problem(path, *, n_largest_optimization: int = 6, include_samples: bool = True,
                 build_dir: Path | None = None, python: str | None = None, cxx: str = "g++",
                 sandbox: str = "auto", build_submissions: bool = False, cxx_std: str | None = None,
                 optimization_tests: int | None = None) -> tuple[Problem | None, tuple[Skipped, ...]]:
    """Load one problem package.

    Returns ``(problem, skipped)``: ``problem`` is None when the whole package
    cannot be used, and ``skipped`` lists it (or its unusable tests and
    submissions) with the reasons. Options as in :func:`load_suite`.
    """
    problem, skipped, _found = _load_problem(
        path, n_largest_optimization=n_largest_optimization, include_samples=include_samples, build_dir=build_dir,
        python=python, cxx=cxx, sandbox=sandbox, build_submissions=build_submissions, cxx_std=cxx_std,
        optimization_tests=optimization_tests)
    return problem, skipped


def _load_problem(path, *, n_largest_optimization: int, include_samples: bool, build_dir: Path | None,
                  python: str | None, cxx: str, sandbox: str, build_submissions: bool, cxx_std: str | None,
                  optimization_tests: int | None, patterns: Sequence[str] | None = None
                  ) -> tuple[Problem | None, tuple[Skipped, ...], list[str]]:
    """:func:`load_problem`, plus the names of the submissions found (see :func:`_collect_submissions`).

    With ``patterns``, only the matching submissions are byte-compiled, built and kept.
    """
    root = Path(path).resolve()
    pid = root.name
    skipped: list[Skipped] = []
    yaml_path = root / "problem.yaml"
    try:
        refuse_links(root)  # before reading a byte of the package
        if not yaml_path.is_file():
            raise _Skip("missing problem.yaml (every problem package needs one, even if empty)")
        config = _read_yaml(yaml_path, "problem.yaml")
        validation, types = _problem_types(config)
        words = set(validation.split())
        if "interactive" in words or "interactive" in types:
            raise _Skip("interactive problem (validation: custom interactive): the program talks to a "
                        "validator while it runs; speedaudit times batch programs only")
        unsupported = types - {"pass-fail", "scoring"}
        if unsupported:
            raise _Skip(f"problem type {', '.join(sorted(unsupported))} is not supported "
                        "(only pass-fail and scoring batch problems)")
        if words - {"default", "custom", "score", "auto"} or (words and validation.split()[0] not in
                                                              ("default", "custom", "auto")):
            raise _Skip(f"problem.yaml: unknown validation {validation!r} "
                        "(expected default, custom, custom score or custom interactive)")
        name = _problem_name(pid, root, config)
        time_limit, memory = _limits(root, config)
        base_flags = _flags_of(config.get("validator_flags"), "problem.yaml: validator_flags")
        data = root / "data"
        testdata = _testdata_flags(data) if data.is_dir() else {}
        root_flags = base_flags + (testdata.get("") or ())

        validator = _find_validator(root)
        # "auto" (a 2023-07 validation mapping): custom exactly when the package has an output validator
        custom = validation.startswith("custom") or (validator is not None and (
            validation == "auto" or (validation == "default" and (root / "output_validator").is_dir())))
        if custom:
            if validator is None:
                raise _Skip("validation is custom but there is no output_validators/<name>/ "
                            "(or output_validator/) folder")
            program = _prepare_validator(validator, Path(build_dir) if build_dir else default_build_dir(),
                                         python or DEFAULT_PYTHON, cxx, sandbox)
            checker = OutputChecker.custom(program, flags=root_flags, source=validator)
        else:
            try:
                checker = OutputChecker.default(root_flags)
            except ValueError as exc:
                raise _Skip(f"validator_flags: {exc}") from None
        if not data.is_dir():
            raise _Skip("no data/ folder (tests go in data/sample/ and data/secret/)")

        raw, unusable = _collect_tests(pid, root, include_samples=include_samples, skipped=skipped)
        kinds, choice, candidates, slots = _kinds(raw, n_largest_optimization)
        if optimization_tests is not None and not any(group == "secret/optimization" or
                                                      group.startswith("secret/optimization/")
                                                      for _rel, group, *_ in raw):
            # no folder: the N largest secret inputs (the others stay correctness tests, as unchosen ones are)
            n_opt = sum(k == "optimization" for k in kinds)
            if optimization_tests < n_opt:
                kinds, choice, candidates, slots = _kinds(raw, optimization_tests)
                choice = f"{choice} (--optimization-tests {optimization_tests} of {n_opt})"
        elif optimization_tests is not None:  # the folder's tests beyond the N largest are left out
            opt = sorted((i for i, k in enumerate(kinds) if k == "optimization"),
                         key=lambda i: (-raw[i][4], _natural_key(raw[i][0])))
            if optimization_tests < len(opt):
                dropped = set(opt[optimization_tests:])
                raw = [t for i, t in enumerate(raw) if i not in dropped]
                kinds = [k for i, k in enumerate(kinds) if i not in dropped]
                choice = (f"the {optimization_tests} largest of the {len(opt)} tests under "
                          f"data/secret/optimization/ ({_smallest_kept(raw, kinds):,}+ "
                          f"bytes; --optimization-tests {optimization_tests})")
        tests = []
        for (rel, group, inp, ans, size), kind in zip(raw, kinds):
            flags = _group_flags(group, testdata)
            effective = base_flags + (flags or ())
            own = None if effective == root_flags else effective
            if own is not None and checker.kind == "default":
                try:
                    parse_validator_flags(list(own))
                except ValueError as exc:
                    skipped.append(Skipped(inp, f"output_validator_flags of group {group}: {exc}", "test", pid))
                    unusable += 1
                    continue
            tests.append(TestCase(pid, rel, inp, ans, kind, group, size, own))
        if not tests:
            where = "data/secret" if not include_samples else "data/sample or data/secret"
            raise _Skip(f"no tests: no NAME.in with NAME.ans under {where}")
        submissions, found = _collect_submissions(pid, root, skipped, python or DEFAULT_PYTHON, sandbox, patterns)
        if build_submissions:
            submissions = _built(submissions, skipped, Path(build_dir) if build_dir else default_build_dir(),
                                 python=python or DEFAULT_PYTHON, cxx=cxx, sandbox=sandbox, cxx_std=cxx_std)
    except _Skip as exc:  # the tests listed as unusable so far stay listed: they explain a "no tests"
        return None, (*skipped, Skipped(exc.path or root, str(exc), exc.what, pid)), []
    problem = Problem(pid, name, root, tuple(tests), tuple(submissions), checker, time_limit, memory,
                      unusable, choice, candidates, slots)
    return problem, tuple(skipped), found


def _smallest_kept(raw: list[tuple[str, str, Path, Path, int]], kinds: list[str]) -> int:
    """Input bytes of the smallest optimization test."""
    return min(t[4] for t, k in zip(raw, kinds) if k == "optimization")


def submission_id(problem: str, solution: str) -> str:
    """The id a ``submissions`` pattern is matched against: ``PROBLEM/SOLUTION`` (``lis/accepted/a.py``)."""
    return f"{problem}/{solution}"


def matches(pattern: str, ident: str) -> bool:
    """``ident`` equals ``pattern`` or matches it as an :func:`fnmatch.fnmatchcase` pattern.

    Equality first, so that a name holding ``[`` or ``*`` is selected by itself.

    >>> matches("lis/accepted/*.cpp", "lis/accepted/fast.cpp"), matches("lis/accepted/a[1].py", "lis/accepted/a[1].py")
    (True, True)
    >>> matches("lis/*", "lisp/accepted/a.py")
    False
    """
    return pattern == ident or fnmatch.fnmatchcase(ident, pattern)


def read_patterns(path) -> list[str]:
    """Submission patterns from a file: one per line, lines starting with ``#`` and blank lines ignored.

    A line is taken as it is (only its line ending removed): names may hold spaces, commas and ``#``.
    Raises :class:`SuiteError` for a file that cannot be read or holds no pattern.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read the submission patterns ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (byte {exc.start}); write one pattern per line") from None
    patterns = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not patterns:
        raise SuiteError(f"{path}: no submission pattern in it (one PROBLEM/SOLUTION pattern per line; lines "
                         f"starting with # are comments)")
    return patterns


def _skipped_id(s: Skipped) -> str | None:
    """``PROBLEM/SOLUTION`` of a skipped submission (None when it is not one)."""
    if s.what != "submission" or s.problem is None:
        return None
    parts = Path(s.path).parts
    if "submissions" not in parts:
        return None
    at = len(parts) - 1 - parts[::-1].index("submissions")
    return submission_id(s.problem, "/".join(parts[at + 1:]))


def _select_submissions(problems: list[Problem], skipped: list[Skipped], patterns: list[str], *,
                        found: dict[str, list[str]]) -> tuple[list[Problem], list[Skipped], str]:
    """Keep the submissions (and the skips of submissions) matching a pattern; the selection in words.

    ``problems`` hold the matching submissions already (:func:`_load_problem` with the patterns); ``found``:
    problem id -> the names of every submission found in it, selected or not (the "of N" of the selection).
    """
    used = {pattern: 0 for pattern in patterns}
    kept_problems = []
    total = sum(len(found.get(problem.id, ())) for problem in problems)
    for problem in problems:
        keep = []
        for sub in problem.submissions:
            hit = [pat for pat in patterns if matches(pat, submission_id(problem.id, sub.name))]
            for pat in hit:
                used[pat] += 1
            if hit:
                keep.append(sub)
        if keep:
            kept_problems.append(dataclasses.replace(problem, submissions=tuple(keep)))
    kept_skips, skipped_hits = [], {pattern: [] for pattern in patterns}
    for s in skipped:
        ident = _skipped_id(s)
        if ident is None:
            if s.what == "package" or s.problem in {p.id for p in kept_problems}:
                kept_skips.append(s)
            continue
        hit = [pat for pat in patterns if matches(pat, ident)]
        for pat in hit:
            skipped_hits[pat].append(ident)
        if hit:
            kept_skips.append(s)
    unused = [pat for pat, n in used.items() if n == 0]
    if unused:
        lines = []
        for pat in unused:
            only = skipped_hits[pat]
            lines.append(f"{pat!r} matches only skipped submissions ({', '.join(only[:3])}"
                         f"{', ...' if len(only) > 3 else ''}; see 'speedaudit suite')" if only else
                         f"{pat!r} matches no submission")
        example = next((submission_id(p.id, found[p.id][0]) for p in problems if found.get(p.id)), None)
        raise SuiteError("submission pattern(s): " + "; ".join(lines) + ". Patterns are matched against "
                         "PROBLEM/SOLUTION ids" + (f" such as {example!r}" if example else "")
                         + " (fnmatch: * ? [...]; the whole id)")
    n_kept = sum(len(p.submissions) for p in kept_problems)
    shown = ", ".join(map(repr, patterns[:5])) + (f" and {len(patterns) - 5} more" if len(patterns) > 5 else "")
    return kept_problems, kept_skips, (f"submissions: {n_kept} of {total} matching {len(patterns)} pattern(s) "
                                       f"({shown}), in {len(kept_problems)} of {len(problems)} problems")


def _named_problems(patterns: Sequence[str]) -> set[str] | None:
    """The problem ids the patterns name, when every pattern names its own; else None.

    A pattern names its problem when its text before the first ``/`` holds no ``*``, ``?`` or ``[``: an id
    ``PROBLEM/SOLUTION`` can equal or :func:`fnmatch.fnmatchcase`-match it only when PROBLEM is that text
    (fnmatch has no escapes, and a problem id holds no ``/``). A pattern without ``/`` matches no id at all;
    it gives None, so that its error message is the one of a whole load.

    >>> _named_problems(["lis/accepted/*", "twosum/*/*.py"]) == {"lis", "twosum"}
    True
    >>> _named_problems(["lis/accepted/*", "*/accepted/*.cpp"]) is None, _named_problems(["lis"]) is None
    (True, True)
    """
    named = set()
    for pattern in patterns:
        head, slash, _ = pattern.partition("/")
        if not slash or not head or any(c in head for c in "*?["):
            return None
        named.add(head)
    return named


def _looks_like_package(path: Path) -> bool:
    return any((path / part).exists() for part in ("problem.yaml", "data", "submissions", "problem_statement"))


def load_suite(path, *, n_largest_optimization: int = 6, include_samples: bool = True,
               problems: Sequence[str] | None = None, build_dir: Path | None = None,
               python: str | None = None, cxx: str = "g++", sandbox: str = "auto",
               build_submissions: bool = False, cxx_std: str | None = None, progress: bool = False,
               optimization_tests: int | None = None, submissions: Sequence[str] | None = None) -> Suite:
    """Load a suite: a folder of problem packages, or one package (a folder with problem.yaml).

    Parameters
    ----------
    path : path-like
    n_largest_optimization : int, default 6
        When a problem has no ``data/secret/optimization/`` folder, its this-many
        largest secret inputs are its optimization tests (0 = none).
    include_samples : bool, default True
        Load ``data/sample`` tests (as correctness tests).
    problems : sequence of str, optional
        Load only these problem ids (folder names).
    build_dir : Path, optional
        Where custom output validators are compiled (default :func:`default_build_dir`).
    python, cxx : str, optional
        Interpreter for Python validators (default ``/usr/bin/python3``) and the C++ compiler.
    sandbox : str, default "auto"
        Where C/C++ validators are compiled (see :func:`audits.collect.languages.build_sandbox`).
    build_submissions : bool, default False
        Also compile every C/C++ submission (in the box, cached in ``build_dir``);
        one that does not build is skipped with the compiler's first error.
    cxx_std : str, optional
        C++ standard (``c++20``, ``gnu++23``); default the newest ``cxx`` supports.
    progress : bool, default False
        A tqdm bar of the packages loaded (and built), with count and ETA, on stderr.
    optimization_tests : int, optional
        Keep only each problem's this-many largest optimization tests (by input
        bytes, ties by name in natural order); the others are left out of the
        problem (without ``data/secret/optimization/``: they stay correctness
        tests, see the module's decisions). None (default): all. At least 1.
    submissions : sequence of str, optional
        Keep only the submissions whose ``PROBLEM/SOLUTION`` id (e.g.
        ``lis/accepted/bisect_tails.py``; SOLUTION as in a corpus's
        ``solution`` column) equals or :func:`fnmatch.fnmatchcase`-matches one
        of these patterns (``"lis/accepted/*"``, ``"*/accepted/*.cpp"``). A
        pattern is never split (names may hold commas and spaces). Problems
        left without a submission are left out; skipped submissions that match
        no pattern are not listed. Only the packages the patterns can match
        are read, and only the matching submissions are byte-compiled and
        built (see the module's decisions). None (default): all.

    Returns
    -------
    Suite
        Problems sorted by id; ``skipped`` lists every package, test and
        submission that could not be used, with the reason.

    Raises
    ------
    SuiteError
        ``path`` does not exist, is not a folder, holds no problem package,
        ``problems`` names ids that are not there, ``optimization_tests`` is
        below 1, or a ``submissions`` pattern matches no submission (the
        message names it).

    Examples
    --------
    >>> suite = load_suite("my_archive", n_largest_optimization=4)   # doctest: +SKIP
    >>> [t.name for t in suite.problems[0].tests_of_kind("optimization")]   # doctest: +SKIP
    ['secret/07-max', 'secret/08-max-random', ...]
    """
    if isinstance(n_largest_optimization, bool) or not isinstance(n_largest_optimization, int) \
            or n_largest_optimization < 0:
        raise SuiteError(f"n_largest_optimization must be a non-negative integer, got {n_largest_optimization!r}")
    if optimization_tests is not None and (isinstance(optimization_tests, bool) or not isinstance(
            optimization_tests, int) or optimization_tests < 1):
        raise SuiteError(f"optimization_tests must be a whole number >= 1 (the largest tests kept per problem), or "
                         f"None for all; got {optimization_tests!r}")
    if submissions is not None:
        if isinstance(submissions, str):  # one pattern, never split
            submissions = [submissions]
        submissions = list(dict.fromkeys(submissions))
        bad = [pat for pat in submissions if not isinstance(pat, str) or not pat]
        if bad or not submissions:
            raise SuiteError(f"submissions: give PROBLEM/SOLUTION patterns (non-empty strings), got "
                             f"{bad[0] if bad else 'none'!r}")
    root = Path(path)
    if not root.exists():
        raise SuiteError(f"{root}: no such folder; give a folder of problem packages or one package "
                         f"(a folder with problem.yaml)")
    if not root.is_dir():
        raise SuiteError(f"{root}: not a folder; a suite is a folder of problem packages "
                         f"(each a folder with problem.yaml, data/ and submissions/)")
    root = root.resolve()
    if (root / "problem.yaml").is_file():
        candidates = [root]
        suite_root = root
    else:
        candidates = sorted((p for p in root.iterdir() if (p.is_dir() or p.is_symlink()) and not _hidden(p.name)),
                            key=lambda p: p.name)
        suite_root = root
        if not any(p.is_symlink() or _looks_like_package(p) for p in candidates):
            if _looks_like_package(root):
                raise SuiteError(f"{root}: looks like a problem package (it has data/ or submissions/) but has no "
                                 f"problem.yaml; add one (it may be empty), or give the folder that holds packages")
            raise SuiteError(f"{root}: not a suite: no problem package in it (a package is a folder with "
                             f"problem.yaml, data/sample/, data/secret/ and submissions/)")
    if problems is not None:
        if isinstance(problems, str):
            problems = [problems]
        wanted = list(dict.fromkeys(problems))
        names = {p.name for p in candidates}
        missing = [w for w in wanted if w not in names]
        if missing:
            raise SuiteError(f"{root}: no problem {', '.join(map(repr, missing))}; "
                             f"problems here: {', '.join(sorted(names)) or 'none'}")
        candidates = [p for p in candidates if p.name in set(wanted)]
    not_read: list[str] = []
    named = _named_problems(submissions) if submissions is not None else None
    if named is not None and named <= {p.name for p in candidates}:
        # every pattern names its problem: the other packages cannot hold a match, so they are not read
        not_read = [p.name for p in candidates if p.name not in named]
        candidates = [p for p in candidates if p.name in named]
    # deferred: tqdm only draws the progress bar (an optional feature)
    from tqdm.auto import tqdm

    loaded: list[Problem] = []
    skipped: list[Skipped] = []
    found: dict[str, list[str]] = {}
    bar = tqdm(candidates, desc="load and build" if build_submissions else "load", unit="package",
               disable=not progress, file=sys.stderr, dynamic_ncols=True, mininterval=0.5)
    for candidate in bar:
        if candidate.is_symlink():  # a package folder that is a link: not followed (issue 22)
            skipped.append(Skipped(candidate, f"is a symbolic link (to {os.readlink(candidate)}, not followed): "
                                              f"speedaudit follows no link in a suite; copy the package in"))
            continue
        if not _looks_like_package(candidate):
            skipped.append(Skipped(candidate, "not a problem package (no problem.yaml, data/ or submissions/)"))
            continue
        if (defect := id_defect(candidate.name)) is not None:  # the package's name is its problem id
            skipped.append(Skipped(candidate, f"its name {candidate.name!r} cannot be a problem id ({defect}); "
                                              f"rename the folder"))
            continue
        problem, skips, names = _load_problem(
            candidate, n_largest_optimization=n_largest_optimization, include_samples=include_samples,
            build_dir=build_dir, python=python, cxx=cxx, sandbox=sandbox, build_submissions=build_submissions,
            cxx_std=cxx_std, optimization_tests=optimization_tests, patterns=submissions)
        skipped.extend(skips)
        if problem is not None:
            problem = _with_usable_names(problem, skipped)
            loaded.append(problem)
            found[problem.id] = names
    selection = []
    if submissions is not None:
        loaded, skipped, text = _select_submissions(loaded, skipped, submissions, found=found)
        selection.append(text)
        if not_read:
            selection.append(f"packages: read only {', '.join(p.name for p in candidates)}, named by the "
                             f"patterns; the other {len(not_read)} were not read (nothing in them can match)")
    if optimization_tests is not None:
        n_opt = sum(t.kind == "optimization" for p in loaded for t in p.tests)
        selection.insert(0, f"optimization tests: the {optimization_tests} largest per problem (input bytes, ties "
                            f"by name; {n_opt} in {len(loaded)} problems)")
    return Suite(suite_root, tuple(loaded), tuple(skipped), tuple(selection))


#: A probe's choice is called weak when its lightest chosen test costs less than this times the heaviest left out.
PROBE_CLEAR_RATIO = 1.5


def probe_optimization_tests(suite: Suite, *, sandbox: str = "local", build_dir: Path | None = None,
                             python: str | None = None, wall_s: float = 5.0, max_references: int = 3,
                             memory_bytes: int | None = 1 << 30, record: str | os.PathLike | None = None,
                             progress: bool = False) -> Suite:
    """Pick optimization tests that sizes cannot tell apart by a short probe run of the references.

    For every problem with :attr:`Problem.probe_candidates` (secret inputs of
    indistinguishable size at the cut-off, see :data:`SIZE_TIE_RATIO`), up to
    ``max_references`` accepted references (``accepted/`` or a header of
    ``ACCEPTED`` only; by name) run **once** on each candidate in ``sandbox``
    under ``wall_s``. A test's workload is the median over references of the
    CPU seconds (user + system; less sensitive than wall time to other load on
    the machine; a run that fails or times out counts as ``wall_s``). The
    ``probe_slots`` heaviest candidates (ties by name) become optimization
    tests, the others correctness tests, and
    :attr:`Problem.optimization_choice` / :attr:`Problem.probe_seconds` report
    the choice. A problem whose references do not build keeps its by-name
    choice, and its choice says why.

    ``progress``: a tqdm bar of the probe runs (count, ETA) on stderr. When
    every run hit ``wall_s``, the choice says so and stays by name.

    ``record``: a JSON file that keeps each problem's probe result. When it
    holds a result for the same candidates, that result is reused without
    running anything, so that a resumed campaign times the same tests as the
    first attempt (a probe of near-equal tests could choose differently).

    Returns a new :class:`Suite` (problems without candidates unchanged).

    Examples
    --------
    >>> suite = probe_optimization_tests(load_suite("archive"))       # doctest: +SKIP
    >>> suite.problem("p").optimization_choice                        # doctest: +SKIP
    '0 clearly largest + 6 of 24 same-size inputs picked by a probe run ...'
    """
    todo = [p for p in suite.problems if p.probe_candidates and p.probe_slots > 0]
    if not todo:
        return suite
    kept: dict = {}
    if record is not None and Path(record).is_file():
        try:
            kept = json.loads(Path(record).read_text())
        except (OSError, ValueError):
            kept = {}
    # deferred: tqdm only draws the progress bar (an optional feature)
    from tqdm.auto import tqdm

    box = make_sandbox(sandbox)
    box.check()
    limits = Limits(wall_s=wall_s, memory_bytes=memory_bytes)
    total = sum(len(p.probe_candidates) * min(max_references, sum(s.correct for s in p.submissions)) for p in todo)
    bar = tqdm(total=total, desc="probe", unit="run", disable=not progress, file=sys.stderr, dynamic_ncols=True,
               mininterval=0.5)
    work = scratch_root("speedaudit-probe-")
    build = Path(build_dir) if build_dir is not None else work / "build"
    problems = {p.id: p for p in suite.problems}
    try:
        for problem in todo:
            previous = kept.get(problem.id) if isinstance(kept, dict) else None
            if isinstance(previous, dict) and previous.get("candidates") == list(problem.probe_candidates) \
                    and previous.get("slots") == problem.probe_slots:
                problems[problem.id] = _apply_probe(problem, dict(previous["seconds"]), previous["choice"])
                continue
            refs = [s for s in problem.submissions
                    if s.correct and (s.expected_results == ("ACCEPTED",)
                                      or (not s.expected_results and s.expected == "accepted"))]
            programs, failures = [], []
            for sub in refs:
                if len(programs) == max_references:
                    break
                try:
                    programs.append(prepare(sub, build, python=python or DEFAULT_PYTHON, sandbox=sandbox))
                except BuildError as exc:
                    failures.append(f"{sub.name}: {exc}")
            if not programs:
                why = "no accepted reference" if not refs else f"no reference builds ({failures[0]})"
                problems[problem.id] = dataclasses.replace(
                    problem, optimization_choice=problem.optimization_choice + f"; probe impossible: {why}")
                continue
            by_name = {t.name: t for t in problem.tests}
            seconds: dict[str, float] = {}
            failed: list[str] = []
            timeouts = 0
            bar.set_description(f"probe {problem.id}")
            for name in problem.probe_candidates:
                test = by_name[name]
                costs = []
                for program in programs:
                    bar.update(1)
                    workdir = Path(tempfile.mkdtemp(prefix="probe-", dir=work))
                    try:
                        ex = box.run(program.argv, stdin_path=test.input_path, workdir=workdir, limits=limits)
                    except SandboxError as exc:  # e.g. a build folder the sandbox's uid cannot read
                        failed.append(str(exc).splitlines()[0])
                        continue
                    finally:
                        shutil.rmtree(workdir, ignore_errors=True)
                    if ex.status == "ok":
                        costs.append(ex.cpu_s)
                    elif ex.status == "timeout":  # too heavy to finish: the heaviest there is
                        costs.append(wall_s)
                        timeouts += 1
                    else:  # a crash says nothing about the workload
                        failed.append(f"{name}: {ex.status} ({ex.reason})")
                seconds[name] = float(statistics.median(costs)) if costs else float("nan")
            if not any(v == v for v in seconds.values()):
                problems[problem.id] = dataclasses.replace(
                    problem, optimization_choice=problem.optimization_choice
                    + f"; probe failed: every run failed ({failed[0] if failed else 'no run'})")
                continue
            if timeouts and all(v == wall_s for v in seconds.values() if v == v):
                problems[problem.id] = dataclasses.replace(
                    problem, optimization_choice=problem.optimization_choice
                    + f"; probe inconclusive: every probe run ({timeouts}) hit the probe's {wall_s:g} s limit, so "
                      f"the workloads could not be told apart and the tests stay chosen by name (raise --timeout, "
                      f"which sets the probe's limit up to 5 s, or make data/secret/optimization/)")
                continue
            seconds = {n: (v if v == v else -1.0) for n, v in seconds.items()}  # unmeasured: lightest
            ranked = sorted(problem.probe_candidates, key=lambda n: (-seconds[n], _natural_key(n)))
            chosen = ranked[:problem.probe_slots]
            rest = [seconds[n] for n in ranked[problem.probe_slots:]]
            weak = ""
            if rest and max(rest) > 0 and seconds[chosen[-1]] < PROBE_CLEAR_RATIO * max(rest):
                weak = (f"; WEAK: the lightest chosen is less than {PROBE_CLEAR_RATIO:g}x the heaviest left out, so "
                        f"the workloads barely differ and one run may have ordered them by noise")
            choice = (f"{len(chosen)} of {len(ranked)} inputs of indistinguishable size picked by a probe run "
                      f"({len(programs)} reference(s) x {len(ranked)} tests, one run each, {sandbox} sandbox): "
                      f"chosen {', '.join(chosen[:8])}{f' and {len(chosen) - 8} more' if len(chosen) > 8 else ''} "
                      f"({_ms_range(seconds[chosen[-1]], seconds[chosen[0]], wall_s)} CPU), left out "
                      + (_ms_range(min(rest), max(rest), wall_s) if rest else "none")
                      + (f"; {timeouts} run(s) hit the {wall_s:g} s limit" if timeouts else "") + weak)
            problems[problem.id] = _apply_probe(problem, seconds, choice)
            kept[problem.id] = {"candidates": list(problem.probe_candidates), "slots": problem.probe_slots,
                                "seconds": [[n, seconds[n]] for n in ranked], "choice": choice}
    finally:
        bar.close()
        box.sweep()
        shutil.rmtree(work, ignore_errors=True)
    if record is not None:
        tmp = Path(record).with_name(Path(record).name + ".tmp")
        tmp.write_text(json.dumps(kept, indent=1))
        os.replace(tmp, record)
    return Suite(suite.root, tuple(problems[p.id] for p in suite.problems), suite.skipped, suite.selection)


def _ms(seconds: float, wall_s: float) -> str:
    """A probe figure in words: milliseconds, 'failed' (unmeasured) or 'over the limit' (timed out)."""
    if seconds < 0:
        return "failed"
    if seconds >= wall_s:
        return f"over the {wall_s:g} s limit"
    return f"{seconds * 1000:,.1f} ms"


def _ms_range(low: float, high: float, wall_s: float) -> str:
    """``low to high`` in words (:func:`_ms`), or one figure when both read the same: one chosen test, or tests
    that took the same time, printed "2.5 ms to 2.5 ms"."""
    low_text, high_text = _ms(low, wall_s), _ms(high, wall_s)
    return low_text if low_text == high_text else f"{low_text} to {high_text}"


def _apply_probe(problem: Problem, seconds: dict[str, float], choice: str) -> Problem:
    """``problem`` with its probe candidates re-kinded: the ``probe_slots`` heaviest become optimization tests."""
    ranked = sorted(problem.probe_candidates, key=lambda n: (-seconds[n], _natural_key(n)))
    chosen = set(ranked[:problem.probe_slots])
    candidates = set(problem.probe_candidates)
    tests = tuple(dataclasses.replace(t, kind="optimization" if t.name in chosen else "correctness")
                  if t.name in candidates else t for t in problem.tests)
    clear = sum(t.kind == "optimization" for t in tests) - len(chosen)
    return dataclasses.replace(problem, tests=tests, optimization_choice=f"{clear} clearly largest + {choice}",
                               probe_seconds=tuple((n, seconds[n]) for n in ranked))
