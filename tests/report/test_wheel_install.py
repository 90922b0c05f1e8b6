"""A regular (not editable) install renders every report from any working directory.

The real thing, end to end: the source tree is copied, a wheel is built from the copy (``pip wheel``,
with build isolation, as a user's ``pip install .`` does), the copy is deleted, the wheel is installed
with its dependencies into a fresh virtual environment (``python -m venv``, no system site-packages,
the same package index as this environment), and the installed ``speedaudit`` command makes a
synthetic corpus and renders every report from an empty temporary directory. ``PYTHONPATH`` is
removed, so neither the checkout nor this environment's packages can stand in for the wheel's.

Slow (a full dependency install: about two minutes here), so it runs once; the cheap check that the
package list in pyproject.toml is complete runs on its own.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from audits.report.render import REPORTS, repo_root, template_parameters, template_path

PYPROJECT = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
#: What never belongs in a wheel build's input (local state of a checkout).
NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "reports", "__pycache__", ".pytest_cache",
              ".ipynb_checkpoints", "demo-work", "results")


def test_package_list_is_every_package_and_mapped_folder():
    listed = set(SETUPTOOLS["packages"])
    mapped = SETUPTOOLS["package-dir"]
    on_disk = set(find_packages(where=str(repo_root()), include=["stats*", "audits*"]))
    assert listed == on_disk | set(mapped), "list every package of stats/ and audits/ in pyproject.toml"
    assert mapped == {"audits.report.templates": "notebooks",
                      "audits.shipped_reward_environments": "fixtures/environments"}
    for package, folder in mapped.items():
        patterns = SETUPTOOLS["package-data"][package]
        files = [p for pattern in patterns for p in (repo_root() / folder).glob(pattern)]
        assert files, f"{folder}/ holds no {patterns} to ship as {package}"


def _run(cmd, *, cwd, env, timeout=1500):
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{cmd} failed ({result.returncode}):\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result.stdout


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_wheel_in_a_fresh_venv_renders_every_report_from_any_directory(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    src, dist, venv, work = (tmp_path / d for d in ("src", "dist", "venv", "work"))
    shutil.copytree(repo_root(), src, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--progress-bar", "off", "-w", dist, src],
         cwd=tmp_path, env=env)
    shutil.rmtree(src)  # nothing of a checkout is left to fall back on
    (wheel,) = dist.glob("speedaudit-*.whl")
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path, env=env)
    python = venv / "bin" / "python"
    _run([python, "-m", "pip", "install", "--progress-bar", "off", wheel], cwd=tmp_path, env=env)

    work.mkdir()
    where = _run([python, "-c", "import audits, audits.report.render as r, audits.reward_environments as e; "
                  "print(audits.__file__); print(r.notebook_dir()); print(e.shipped_environments_dir())"],
                 cwd=work, env=env).split()
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert [Path(p) for p in where] == [site / "audits" / "__init__.py", site / "audits" / "report" / "templates",
                                        site / "audits" / "shipped_reward_environments"]

    speedaudit = venv / "bin" / "speedaudit"
    _run([speedaudit, "synth", "--out", "corpus.parquet", "--problems", "6", "--tests", "3", "--solutions", "6",
          "--repeats", "3", "--campaigns", "c0,c1", "--busy", "--seed", "5"], cwd=work, env=env)
    out = _run([speedaudit, "report", "corpus.parquet", "-p", "n_boot=30", "-p", "n_boot_rank=10",
                "--out", "reports"], cwd=work, env=env)
    for name in REPORTS:
        page = work / "reports" / f"{name}.html"
        assert page.is_file() and (work / "reports" / f"{name}.ipynb").is_file(), f"{name} not rendered:\n{out}"
    index = (work / "reports" / "index.html").read_text(encoding="utf-8")
    assert all(f"href='{name}.html'" in index for name in REPORTS)
    assert "FAILED" not in out
    # Every shipped reward environment is in the wheel, and the simulation report screened the template's
    # defaults (fixtures/environments/<file>), read from the wheel's package data.
    installed = site / "audits" / "shipped_reward_environments"
    assert sorted(p.name for p in installed.glob("*.y*ml")) == sorted(
        p.name for p in (repo_root() / "fixtures" / "environments").glob("*.y*ml"))
    defaults = ast.literal_eval(template_parameters(template_path("simulation"))["reward_environment_files"]["default"])
    assert defaults and all(f.startswith("fixtures/environments/") for f in defaults)
    simulation = (work / "reports" / "simulation.html").read_text(encoding="utf-8")
    for name in defaults:
        assert (installed / Path(name).name).is_file() and Path(name).stem in simulation, name
    assert sorted(p.name for p in work.iterdir()) == ["corpus.parquet", "corpus.truth.json", "reports"]
