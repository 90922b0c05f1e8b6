"""One wheel of this checkout, installed (not editable) into one fresh venv, made once per test session.

The real thing, end to end: the source tree is copied, a wheel is built from the copy (``pip wheel``,
with build isolation, as a user's ``pip install .`` does), the copy is deleted, the wheel is installed
(not editable) into a fresh virtual environment (``python -m venv``). ``PYTHONPATH`` is removed from the
environment the installed commands run in.

The wheel's dependencies are not downloaded and installed again (about 140 packages: 8-9 minutes of
CI time): the fresh venv reaches this environment's site-packages through a ``.pth`` line, and
``pip check`` there verifies that every requirement the wheel declares is satisfied. That cannot let the
checkout stand in for the wheel: ``.pth`` files are processed only in site directories, so the
editable-install hook of this environment (itself a ``.pth`` file in that folder) never runs in the
fresh venv (tests/report/test_wheel_install.py asserts that ``audits`` and its package data load from
the fresh venv's own site-packages; ``JUPYTER_PATH`` points at that environment's nbconvert templates,
which are data files, not modules).

Made once per session, not once per user: tests/report/test_wheel_install.py and README's examples
(tests/cli/test_examples.py) both use it, and under ``make test`` they run on different xdist workers.
What is made once lives in the session's folder shared by the workers (:func:`session_folder`) and is made
under an exclusive lock (:func:`locked`): the first process to ask makes it, the others wait, then use it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from audits.report.inputs import repo_root

#: What never belongs in a wheel build's input (local state of a checkout).
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "reports", "__pycache__", ".pytest_cache",
              ".ipynb_checkpoints", "demo-work", "results")


def session_folder(tmp_path_factory) -> Path:
    """This test session's folder, the same for every xdist worker of the session (each worker's base
    temporary folder is a child of it); without xdist, the session's base temporary folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def locked(path: Path):
    """Hold an exclusive lock on ``path`` (``flock``; released when the holder exits, also when it dies)."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def run(cmd, *, cwd, env, timeout=1500) -> str:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{cmd} failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


def _dependencies() -> Path:
    """This environment's site-packages (the one holding pandas)."""
    return next(p for p in map(Path, sys.path) if p.name == "site-packages" and (p / "pandas").is_dir())


def _environment(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    # The fresh venv's own kernel first (installed by _build), then nbconvert's templates: data files, not modules.
    env["JUPYTER_PATH"] = os.pathsep.join([str(venv / "share" / "jupyter"),
                                           str(_dependencies().parents[2] / "share" / "jupyter")])
    return env


def _build(folder: Path) -> None:
    src, dist, venv = (folder / d for d in ("src", "dist", "venv"))
    env = _environment(venv)
    shutil.copytree(repo_root(), src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--progress-bar", "off", "-w", dist, src],
        cwd=folder, env=env)
    shutil.rmtree(src)  # nothing of a checkout is left to fall back on
    (wheel,) = dist.glob("speedaudit-*.whl")
    run([sys.executable, "-m", "venv", venv], cwd=folder, env=env)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "speedaudit-test-dependencies.pth").write_text(f"{_dependencies()}\n", encoding="utf-8")
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--progress-bar", "off", wheel], cwd=folder, env=env)
    run([python, "-m", "pip", "check"], cwd=folder, env=env)  # every declared requirement is there
    run([python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3"], cwd=folder, env=env)


def installed_wheel(tmp_path_factory) -> tuple[Path, Path, dict]:
    """``(venv, site-packages, env)`` of this session's one installed wheel, built by the first caller.

    A build that failed is made again from scratch by the next caller (it fails with its own message).
    """
    root = session_folder(tmp_path_factory)
    folder = root / "installed-wheel"
    with locked(root / "installed-wheel.lock"):
        if not (folder / "complete").is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            _build(folder)
            (folder / "complete").write_text("", encoding="utf-8")
    venv = folder / "venv"
    return venv, next((venv / "lib").glob("python3*/site-packages")), _environment(venv)
