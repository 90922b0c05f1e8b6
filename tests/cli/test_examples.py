"""Every command example in README.md and in every ``--help`` text runs, as written.

An example is a line that starts with ``speedaudit `` (or ``.venv/bin/speedaudit ``): in README.md,
inside a fenced code block; in ``--help``, in a parser's description or epilog (an ``example:`` prefix
is dropped). A trailing backslash continues a line. Synopses (``usage: speedaudit ...``) and inline
mentions with placeholders (``speedaudit audit reliability CORPUS``) are not examples.

Each README block runs in a fresh temporary directory, line by line in order (later lines may read
what earlier ones wrote); each ``--help`` example runs in a fresh directory of its own (they are
alternatives). Commands run through ``bash -c`` (so globs and quotes mean what they mean in a
terminal). A ``--help`` example runs this checkout's ``python -m audits.cli`` as ``speedaudit`` and
``.venv/bin/speedaudit``, in a directory that holds ``fixtures/`` (a link to the shipped fixtures, read
only). README's examples run as a user who installed the wheel runs them (:func:`run_readme_block`):
``speedaudit`` and ``.venv/bin/speedaudit`` are the installed command of this session's one wheel of
the checkout (tests/installed_wheel.py), without ``PYTHONPATH``, in a folder holding copies of the shipped
corpora and suite only (the reward environments they name come from the wheel); each block runs once
per session and tests/report/test_wheel_install.py asserts on the same runs, so README's commands are
not run twice (the wheel is a copy of this checkout; the checkout's own command line runs the ``--help``
examples and the other CLI tests). Both directories hold the inputs the examples name, made here: ``runs.csv`` (a
synthetic corpus in a foreign layout: ``task_id``, ``runtime`` in ms, campaigns ``stored`` and ``fresh``), ``main.json`` and
``patched.json.gz`` (written by the real pyperf), ``archive/`` (a small problem archive: a trimmed copy
of the shipped ``primecount`` package). An example that names the scheduler ``tls://127.0.0.1:8786``
runs against a real Dask LocalCluster over TLS on loopback (the ``cluster`` fixture of
tests/conftest.py): its address replaces that one (the only substitution), and its certificates are
written as the ``ca.pem``, ``client.pem`` and ``client.key`` the example names.

The ``--help`` examples run in tests/cli/test_help_examples.py (a file of its own, so that ``make test``'s
workers run the two halves side by side); their inputs are tests/cli/conftest.py's ``inputs`` fixture.
"""

from __future__ import annotations

import argparse
import gzip
import json
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
from audits.report.inputs import repo_root
from tests.installed_wheel import installed_wheel, locked, session_folder

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
    """primecount with its three smallest optimization tests, two correctness tests, two accepted programs (of
    its 20+: the examples' run time stays that of the archive before issue 25 grew the pools) and no TLE one."""
    shutil.copytree(ROOT / "fixtures" / "suites" / "speedbench" / "primecount", path / "primecount")
    problem = path / "primecount"
    shutil.rmtree(problem / "submissions" / "time_limit_exceeded")
    for sub in (problem / "submissions" / "accepted").iterdir():
        if sub.name not in ("list_slice_sieve.py", "segmented_sieve.py"):
            shutil.rmtree(sub) if sub.is_dir() else sub.unlink()
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


def _readme_inputs(folder: Path, pyperf_files, venv: Path) -> None:
    """The inputs README's examples name, for the installed wheel: no link to the checkout's ``fixtures/``,
    only copies of the shipped corpora and suite (never the shipped reward environments: those must come
    from the wheel), and ``.venv/bin/speedaudit``, the installed command."""
    folder.mkdir(parents=True)
    _write_runs_csv(folder / "runs.csv")
    _, fixed, calibrated, _ = pyperf_files
    shutil.copy(fixed, folder / "main.json")
    with open(calibrated, "rb") as src, gzip.open(folder / "patched.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    _write_archive(folder / "archive")
    shutil.copytree(ROOT / "fixtures" / "corpora", folder / "fixtures" / "corpora")
    shutil.copytree(ROOT / "fixtures" / "suites" / "speedbench", folder / "fixtures" / "suites" / "speedbench")
    (folder / ".venv" / "bin").mkdir(parents=True)
    (folder / ".venv" / "bin" / "speedaudit").symlink_to(venv / "bin" / "speedaudit")


def readme_inputs(tmp_path_factory, pyperf_files) -> Path:
    """This session's one folder of README's inputs (:func:`_readme_inputs`), made by the first caller."""
    venv, _, _ = installed_wheel(tmp_path_factory)
    root = session_folder(tmp_path_factory)
    inputs, made = root / "readme-inputs", root / "readme-inputs.complete"
    with locked(root / "readme-inputs.lock"):
        if not made.is_file():
            shutil.rmtree(inputs, ignore_errors=True)
            _readme_inputs(inputs, pyperf_files, venv)
            made.write_text("", encoding="utf-8")
    return inputs


def run_readme_block(line: int, commands: list[str], *, tmp_path_factory, pyperf_files) -> list[dict]:
    """README's block at ``line`` run by the installed wheel, once per session (the first caller runs it, later
    callers read what it recorded): one record per command run (``command``, ``returncode``, whether its stderr
    holds a ``Traceback``, the tails of its output), up to the first that failed. Use :func:`assert_block_ran`."""
    venv, _, env = installed_wheel(tmp_path_factory)
    inputs = readme_inputs(tmp_path_factory, pyperf_files)
    runs = session_folder(tmp_path_factory) / "readme-runs"
    runs.mkdir(exist_ok=True)
    record = runs / f"README-{line}.json"
    with locked(runs / f"README-{line}.lock"):
        if record.is_file():
            return json.loads(record.read_text(encoding="utf-8"))
        work = runs / f"README-{line}"
        shutil.rmtree(work, ignore_errors=True)  # a run that died half-way is run again from the start
        shutil.copytree(inputs, work, symlinks=True)
        env = dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
        ran = []
        for command in commands:
            result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                    timeout=1500, stdin=subprocess.DEVNULL)
            ran.append({"command": command, "returncode": result.returncode, "traceback": "Traceback" in result.stderr,
                        "stdout": result.stdout[-3000:], "stderr": result.stderr[-3000:]})
            if result.returncode != 0 or ran[-1]["traceback"]:
                break  # later lines may read what this one should have written
        record.write_text(json.dumps(ran), encoding="utf-8")
    return ran


def assert_block_ran(ran: list[dict], commands: list[str], *, where: str) -> None:
    """Every command of the block ran, exited 0 and printed no traceback."""
    for r in ran:
        assert r["returncode"] == 0 and not r["traceback"], (
            f"{where}: example failed (exit {r['returncode']}): {r['command']}\n{r['stdout']}\n{r['stderr']}")
    assert [r["command"] for r in ran] == commands, where


@pytest.mark.slow
@pytest.mark.parametrize("line, commands", README_BLOCKS, ids=[f"README.md:{line}" for line, _ in README_BLOCKS])
def test_readme_examples_run(line, commands, tmp_path_factory, pyperf_files):
    ran = run_readme_block(line, commands, tmp_path_factory=tmp_path_factory, pyperf_files=pyperf_files)
    assert_block_ran(ran, commands, where=f"README.md line {line}")
