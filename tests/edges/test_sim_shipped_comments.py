"""The commands written in the shipped reward-environment files' comments run as written.

noise_aware.yaml and noise_gate.yaml showed `speedaudit simulate CORPUS --env fixtures/environments/top30.yaml ...`;
`--env` is no option of simulate (the reward environment is --reward-env; --environment names the sandbox run), so
the example ended in "unrecognized arguments: --env". Every `speedaudit` command in a shipped file's comments is run
here on a synthetic corpus, from the checkout's root as the paths are written.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from tests.cli_process import synth_corpus

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "fixtures" / "environments"


def _commands() -> list[tuple[str, str]]:
    out = []
    for path in sorted(SHIPPED.glob("*.y*ml")):
        lines = [line.lstrip("#").strip() for line in path.read_text(encoding="utf-8").splitlines()
                 if line.startswith("#")]
        i = 0
        while i < len(lines):
            if lines[i].startswith("speedaudit "):
                command = lines[i]
                while command.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command[:-1].rstrip() + " " + lines[i]
                out.append((path.name, command))
            i += 1
    return out


COMMANDS = _commands()


def test_the_shipped_files_show_commands():
    assert len(COMMANDS) >= 3


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("shipped") / "synth.parquet"
    return synth_corpus(path)


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[f"{n}:{i}" for i, (n, _) in enumerate(COMMANDS)])
def test_a_shipped_comment_command_runs(corpus, name, command):
    args = [str(corpus) if a == "CORPUS" else a for a in shlex.split(command)[1:]]
    proc = subprocess.run([sys.executable, "-m", "audits.cli", *args, "--environment", "quiet", "--n-boot", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, (name, command, proc.stderr[-2000:])
