"""The command line as a real subprocess, for tests that check what a user sees (exit status, messages, files).

One helper instead of a copy in each test file: ``python -m audits.cli ARGS`` with this checkout first on
``PYTHONPATH`` and without pytest's ``PYTEST_*`` variables (a command must not see the test session's), and a
synthetic corpus written by ``speedaudit synth`` itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def speedaudit(*args, cwd: str | os.PathLike | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run ``speedaudit ARGS`` (``python -m audits.cli``) and return the finished process (text output)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def synth_corpus(path: str | os.PathLike, *, seed: int = 2) -> Path:
    """``speedaudit synth --out PATH --seed SEED``: a corpus written by the command itself; its path."""
    done = speedaudit("synth", "--out", path, "--seed", seed, timeout=300)
    assert done.returncode == 0, done.stderr
    return Path(path)
