"""Candidate programs to time beside a suite's references (``collect --candidates NAME=DIR``).

A candidate set is a folder with one sub-folder per problem id of the suite, each holding the set's
programs for that problem: source files (``.py``, ``.cpp``, ``.c``, ...) or multi-file program folders,
as a judge submission (:func:`audits.collect.languages.language_of`)::

    model-a/
      twosum/solution.py
      primecount/sieve.cpp

Every program becomes a solution ``NAME/<entry>`` (``model-a/solution.py``) of role ``candidate``,
timed on every test of its problem in the same campaign as the references and the other sets,
shuffled together (:func:`audits.collect.campaign.interleave`): shared execution by construction, which
``speedaudit compare CORPUS --a NAME --b OTHER`` relies on (the set is the solution id's prefix).
Candidates carry no dataset label: ``correct`` is True and their correctness is their statuses.

Programs come from outside the suite and are untrusted like any submission: they are built and run in
the sandbox, and no link is followed: an entry that is (or holds) a symbolic link, a file with more
than one hard link, or a special file is skipped with the reason, as are hidden entries, unsupported
languages and problem folders the campaign does not run.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from audits.collect.languages import EXTENSIONS, language_of
from audits.errors import UserError

__all__ = ["Candidate", "CandidateSets", "parse_candidate_option", "load_candidates"]


@dataclass(frozen=True)
class Candidate:
    """One candidate program: its problem, its solution id (``NAME/entry``) and its path."""

    problem: str
    solution: str
    path: Path


@dataclass(frozen=True)
class CandidateSets:
    """The candidates of every set, sorted by (problem, solution), and what was skipped (name, reason)."""

    candidates: tuple[Candidate, ...]
    skipped: tuple[tuple[str, str], ...]
    names: tuple[str, ...]

    def summary(self) -> str:
        counts = {n: sum(c.solution.startswith(f"{n}/") for c in self.candidates) for n in self.names}
        return "candidates: " + ", ".join(f"{n} {k} program(s)" for n, k in counts.items()) + (
            f", {len(self.skipped)} skipped" if self.skipped else "")


def parse_candidate_option(text: str) -> tuple[str, Path]:
    """``NAME=DIR`` as ``(NAME, Path(DIR))``; NAME is the solution-id prefix (no ``/``, not empty).

    >>> parse_candidate_option("A=runs/model-a")
    ('A', PosixPath('runs/model-a'))
    """
    name, sep, folder = text.partition("=")
    name = name.strip()
    if not sep or not name or not folder or "/" in name or name.startswith("."):
        raise UserError(f"--candidates {text!r}: write NAME=DIR, NAME a set name without '/' (it prefixes the "
                        f"solution ids, e.g. A=runs/model-a gives A/<program>)")
    return name, Path(folder)


def _link_problem(path: Path) -> str | None:
    """Why ``path`` (a program file or folder) is refused, or None: no link, hard link or special file in it."""
    entries = [path]
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
            entries += [Path(dirpath) / n for n in sorted(dirnames) + sorted(filenames)]
    for entry in entries:
        st = os.lstat(entry)
        if stat.S_ISLNK(st.st_mode):
            return f"{entry} is a symbolic link (not followed); copy the file instead"
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            return f"{entry} is a hard link ({st.st_nlink} names for one file); copy it instead"
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            return f"{entry} is neither a file nor a folder"
    return None


def load_candidates(options, problems) -> CandidateSets:
    """The candidates of ``options`` (``(NAME, DIR)`` pairs) for the problem ids ``problems`` (those the campaign runs).

    Raises
    ------
    UserError
        A set named twice, a set name that is also a verdict folder of the references (``accepted``: their
        ids would share its prefix), a DIR that is not a folder, or a set with no program at all.
    """
    problems = {str(p) for p in problems}
    names = [name for name, _ in options]
    if len(set(names)) != len(names):
        raise UserError(f"--candidates: a set name is given twice ({', '.join(names)}); name each set once")
    out, skipped = [], []
    for name, folder in options:
        if name in ("accepted", "wrong_answer", "time_limit_exceeded", "run_time_error", "mixed", "rejected"):
            raise UserError(f"--candidates {name}={folder}: {name!r} is a verdict folder of the references' ids "
                            f"({name}/...); give the set another name")
        if folder.is_symlink() or not folder.is_dir():
            raise UserError(f"--candidates {name}={folder}: not a folder (give a folder with one sub-folder per "
                            f"problem id, each holding that problem's programs)")
        found = 0
        for problem_dir in sorted(folder.iterdir()):
            label = f"{name}={folder}/{problem_dir.name}"
            if problem_dir.name.startswith("."):
                continue
            if problem_dir.is_symlink() or not problem_dir.is_dir():
                skipped.append((label, "not a problem folder (a folder named after a problem id, not a link)"))
                continue
            if problem_dir.name not in problems:
                skipped.append((label, "no such problem in this campaign (suite or --problems)"))
                continue
            for entry in sorted(problem_dir.iterdir()):
                where = f"{label}/{entry.name}"
                if entry.name.startswith("."):
                    continue
                why = _link_problem(entry)
                if why is None and language_of(entry) is None:
                    why = f"language not supported; supported: {', '.join(EXTENSIONS)}"
                if why is not None:
                    skipped.append((where, why))
                    continue
                out.append(Candidate(problem_dir.name, f"{name}/{entry.name}", entry.resolve()))
                found += 1
        if not found:
            raise UserError(f"--candidates {name}={folder}: no program for any problem of this campaign "
                            f"({', '.join(sorted(problems)[:8])}{' ...' if len(problems) > 8 else ''})"
                            + "".join(f"\n    {w}: {r}" for w, r in skipped[-5:]))
    out.sort(key=lambda c: (c.problem, c.solution))
    return CandidateSets(tuple(out), tuple(skipped), tuple(names))
