"""Every command example in README.md and in every ``--help`` text runs, as written.

An example is a line that starts with ``speedaudit `` (or ``.venv/bin/speedaudit ``): in README.md,
inside a fenced code block; in ``--help``, in a parser's description or epilog (an ``example:`` prefix
is dropped). A trailing backslash continues a line. Synopses (``usage: speedaudit ...``) and inline
mentions with placeholders (``speedaudit audit reliability CORPUS``) are not examples.

Each README block runs in a fresh temporary directory, line by line in order (later lines may read
what earlier ones wrote); each ``--help`` example runs in a fresh directory of its own (they are
alternatives). Commands run through ``bash -c`` (so globs and quotes mean what they mean in a
terminal), with ``speedaudit`` and ``.venv/bin/speedaudit`` both running this checkout's
``python -m audits.cli``. The directory holds the inputs the examples name, made here: ``fixtures/``
(a link to the shipped fixtures, read only), ``runs.csv`` (a synthetic corpus in a foreign layout:
``task_id``, ``runtime`` in ms, campaigns ``stored`` and ``fresh``), ``main.json`` and
``patched.json.gz`` (written by the real pyperf), ``archive/`` (a small problem archive: a trimmed copy
of the shipped ``primecount`` package). An example that names the scheduler ``tls://127.0.0.1:8786``
runs against a real Dask LocalCluster over TLS on loopback (the ``cluster`` fixture of
tests/conftest.py): its address replaces that one (the only substitution), and its certificates are
written as the ``ca.pem``, ``client.pem`` and ``client.key`` the example names.

The ``--help`` examples run in tests/cli/test_help_examples.py (a file of its own, so that ``make test``'s
workers run the two halves side by side); the inputs are tests/cli/conftest.py's ``inputs`` fixture.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from audits.cli._main import build_parser
from audits.corpus.synthetic import synthesize
from audits.report.render import repo_root

ROOT = repo_root()
COMMAND = re.compile(r"^(?:\.venv/bin/)?speedaudit\s")
EXAMPLE_SCHEDULER = "tls://127.0.0.1:8786"


def commands_in(lines) -> list[str]:
    """The example commands among ``lines`` (continuations joined, ``example:`` prefixes dropped)."""
    out, pending = [], None
    for raw in lines:
        line = raw.strip()
        if pending is not None:
            pending += " " + line
        else:
            line = re.sub(r"^(?:examples?:|e\.g\.)\s*", "", line)
            if not COMMAND.match(line):
                continue
            pending = line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        out.append(pending)
        pending = None
    return out


def readme_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(first line number, commands) of every fenced block of ``text`` that holds example commands."""
    blocks = []
    for match in re.finditer(r"^```[a-z]*\n(.*?)^```", text, flags=re.M | re.S):
        commands = commands_in(match.group(1).splitlines())
        if commands:
            blocks.append((text.count("\n", 0, match.start()) + 2, commands))
    return blocks


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("speedaudit",)):
    yield " ".join(path), parser
    seen = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # aliases share a parser
                    seen.add(id(sub))
                    yield from _parsers(sub, path + (name,))


def help_examples() -> dict[str, list[str]]:
    """Command path -> the example commands of its ``--help`` (description and epilog)."""
    found = {}
    for path, parser in _parsers(build_parser()):
        commands = commands_in(f"{parser.description or ''}\n{parser.epilog or ''}".splitlines())
        if commands:
            found[path] = commands
    return found


README_BLOCKS = readme_blocks((ROOT / "README.md").read_text(encoding="utf-8"))
HELP_EXAMPLES = help_examples()


def test_extraction_finds_the_examples_it_should():
    # Hand-checked against README.md and the parsers: a rename that hides an example fails here.
    assert [c for _, commands in README_BLOCKS for c in commands if " report " in c]
    assert {"speedaudit collect", "speedaudit report"} <= set(HELP_EXAMPLES)
    assert commands_in(["example: speedaudit a \\", "    --b c", "usage: speedaudit x [-h]", "speedaudit y"]) == [
        "speedaudit a --b c", "speedaudit y"]


# --- the inputs the examples name -----------------------------------------------------------------

def _write_runs_csv(path: Path) -> None:
    corpus = synthesize(n_problems=6, n_tests=3, n_correctness_tests=1, n_solutions=6, n_incorrect=1,
                        n_candidates=1, n_repeats=3, campaigns=(("stored", 1.0, 0.0), ("fresh", 0.63, 0.053)),
                        seed=7).corpus
    foreign = corpus.rename(columns={"problem": "task_id", "duration_s": "runtime"})
    foreign["runtime"] = foreign["runtime"] * 1000.0  # milliseconds, as --unit ms says
    foreign.to_csv(path, index=False)


def _write_archive(path: Path) -> None:
    """primecount with its three smallest optimization tests, two correctness tests and no TLE program."""
    shutil.copytree(ROOT / "fixtures" / "suites" / "speedbench" / "primecount", path / "primecount")
    problem = path / "primecount"
    shutil.rmtree(problem / "submissions" / "time_limit_exceeded")
    for sub in ("bytearray_sieve.py", "lucy_hedgehog.py", "odd_only_loop.py"):
        (problem / "submissions" / "accepted" / sub).unlink()
    secret = problem / "data" / "secret"
    for f in (secret / "optimization").iterdir():
        if not f.name.startswith(("opt-1-", "opt-2-", "opt-3-")):
            f.unlink()
    for f in (secret / "correctness").iterdir():
        if f.stem not in ("one", "prime-97"):
            f.unlink()


def _speedaudit_wrapper(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m audits.cli "$@"\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _workdir(tmp_path: Path, inputs: Path) -> Path:
    work = tmp_path / "work"
    shutil.copytree(inputs, work)
    (work / "fixtures").symlink_to(ROOT / "fixtures", target_is_directory=True)
    _speedaudit_wrapper(tmp_path / "bin" / "speedaudit")
    _speedaudit_wrapper(work / ".venv" / "bin" / "speedaudit")
    return work


def _run_all(commands: list[str], work: Path, *, where: str, cluster=None) -> None:
    env = dict(os.environ, PATH=f"{work.parent / 'bin'}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    for command in commands:
        if EXAMPLE_SCHEDULER in command:
            assert cluster is not None, f"{where}: a scheduler example needs the LocalCluster"
            address, security = cluster
            command = command.replace(EXAMPLE_SCHEDULER, address)
            for name, pem in (("ca.pem", security.tls_ca_file), ("client.pem", security.tls_client_cert),
                              ("client.key", security.tls_client_key)):
                (work / name).write_text(pem)
        result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                timeout=900, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, (f"{where}: example failed (exit {result.returncode}): {command}\n"
                                        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        assert "Traceback" not in result.stderr, f"{where}: {command}\n{result.stderr[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("line, commands", README_BLOCKS, ids=[f"README.md:{line}" for line, _ in README_BLOCKS])
def test_readme_examples_run(line, commands, tmp_path, inputs):
    _run_all(commands, _workdir(tmp_path, inputs), where=f"README.md line {line}")
