"""A regular (not editable) install renders every report and runs every README command from any working directory.

The installed wheel is this session's one (tests/installed_wheel.py: built from a copy of the checkout,
installed into a fresh venv, ``PYTHONPATH`` removed); the installed ``speedaudit`` command makes a
synthetic corpus and renders every report from an empty temporary directory, and runs README's commands
and every audit. README's blocks are the runs of tests/cli/test_examples.py (each block runs once per
session, by the wheel, whichever test asks first). A plain ``pip install .`` with dependencies is what
``make demo``/``make test`` do on a fresh machine (``pip install -e``) and what README's install check runs
by hand.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from setuptools import find_packages

from audits.cli._main import build_parser
from audits.report.render import REPORTS, template_parameters, template_path
from audits.report.inputs import repo_root
from tests.cli.test_examples import README_BLOCKS, assert_block_ran, readme_inputs, run_readme_block
from tests.installed_wheel import run as _run
from tests.test_docs_python import python_blocks

PYPROJECT = tomllib.loads((repo_root() / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]


def test_package_list_is_every_package_and_mapped_folder():
    listed = set(SETUPTOOLS["packages"])
    mapped = SETUPTOOLS["package-dir"]
    on_disk = set(find_packages(where=str(repo_root()), include=["speedaudit*", "stats*", "audits*"]))
    assert listed == on_disk | set(mapped), "list every package of speedaudit/, stats/ and audits/ in pyproject.toml"
    assert mapped == {"audits.report.templates": "notebooks",
                      "audits.shipped_reward_environments": "fixtures/environments"}
    for package, folder in mapped.items():
        patterns = SETUPTOOLS["package-data"][package]
        files = [p for pattern in patterns for p in (repo_root() / folder).glob(pattern)]
        assert files, f"{folder}/ holds no {patterns} to ship as {package}"


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_wheel_in_a_fresh_venv_renders_every_report_from_any_directory(installed_wheel, tmp_path):
    venv, site, env = installed_wheel
    python = venv / "bin" / "python"
    work = tmp_path / "work"
    work.mkdir()
    where = _run([python, "-c", "import audits, audits.report.render as r, audits.checks.reward_environments as e; "
                  "print(audits.__file__); print(r.notebook_dir()); print(e.shipped_environments_dir())"],
                 cwd=work, env=env).split()
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


def _audit_names() -> list[str]:
    """Every ``speedaudit audit NAME`` of the command line (from its parser, so a new audit is covered)."""
    audit = next(a for a in build_parser()._subparsers._group_actions[0].choices["audit"]._actions
                 if isinstance(a, argparse._SubParsersAction))
    return sorted(audit.choices)


#: What each audit needs beyond the corpus on the synthetic corpus of README's quick start (``synth
#: --campaigns stored,fresh``), and short bootstraps to keep the test's cost modest.
AUDIT_OPTIONS = {"calibration": ["--environment", "quiet", "--source-campaign", "stored", "--target-campaign", "fresh",
                                 "--n-boot", "30"],
                 "simulation": ["--reward-env", "fixtures/environments/top30.yaml", "--environment", "quiet",
                                "--campaign", "stored", "--n-boot", "30"],
                 # the synthetic corpus has no judge verdict folders: its references against its candidates
                 "compare": ["--by", "role", "--a", "reference", "--b", "candidate", "--n-boot", "30"],
                 # no --reward-env: the shipped examples, from the wheel
                 "all": ["--simulation-environment", "quiet", "--simulation-campaign", "stored", "--n-boot", "30"]}
SHORT = ["--n-boot", "30"]


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_wheel_runs_every_readme_command_from_an_empty_folder(installed_wheel, tmp_path, tmp_path_factory,
                                                               pyperf_files):
    """README's commands, each audit, ``audit all`` without ``--reward-env`` and ``--version``, run by the
    installed ``speedaudit`` in a folder that holds only the inputs the examples name: the synthetic and
    pyperf files, a trimmed archive and copies of the shipped corpora and suite (never the shipped reward
    environments: those must come from the wheel; tests/cli/test_examples.py's ``readme_inputs``)."""
    venv, site, env = installed_wheel
    env = dict(env, PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
    inputs = readme_inputs(tmp_path_factory, pyperf_files)

    def run_block(commands, where):
        work = tmp_path / f"work-{where}"
        shutil.copytree(inputs, work, symlinks=True)
        for command in commands:
            result = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True, text=True,
                                    timeout=1500, stdin=subprocess.DEVNULL)
            assert result.returncode == 0 and "Traceback" not in result.stderr, (
                f"{where}: {command} (exit {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return work

    ran = []
    # Last block first: beside tests/cli/test_examples.py (first block first, on the other xdist worker) the two
    # tests run different blocks until they meet, instead of one waiting for each block the other is running.
    for line, commands in reversed(README_BLOCKS):
        assert_block_ran(run_readme_block(line, commands, tmp_path_factory=tmp_path_factory, pyperf_files=pyperf_files),
                         commands, where=f"README-{line}")
        ran += commands
    assert any(" collect " in c for c in ran) and any(" import " in c for c in ran) and any(" synth " in c for c in ran)
    assert any(" report " in c for c in ran)

    # Each audit on the quick start's synthetic corpus, and the whole audit with the shipped reward environments.
    commands = ["speedaudit synth --out synth.parquet --busy --campaigns stored,fresh"]
    commands += [" ".join(["speedaudit", "audit", name, "synth.parquet", *AUDIT_OPTIONS.get(name, SHORT),
                           "--json", f"{name}.json"]) for name in _audit_names()]
    work = run_block(commands, "audits")
    whole = json.loads((work / "all.json").read_text(encoding="utf-8"))
    assert "simulation" in whole and "simulation" not in whole["skipped"], whole["skipped"]
    assert {"top30", "uniform_timeout_2x"} <= set(whole["simulation"]["ranking"])

    version = subprocess.run([venv / "bin" / "speedaudit", "--version"], env=env, capture_output=True, text=True,
                             cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.strip() == f"speedaudit {PYPROJECT['project']['version']}"


#: README's fenced ``python`` blocks: its public-API example (tests/test_docs_python.py runs them from the checkout).
README_PYTHON = python_blocks((repo_root() / "README.md").read_text(encoding="utf-8"))


@pytest.mark.slow
@pytest.mark.timeout(2400)
def test_wheel_runs_readme_python_example_from_an_empty_folder(installed_wheel, tmp_path):
    """README's Python example runs as written after ``pip install .`` (issue 23, "Done when"): each ``python`` block
    of README.md run by the installed wheel's interpreter, without ``PYTHONPATH``, in a folder that holds only a copy
    of the shipped corpora the example reads; ``speedaudit`` comes from the fresh venv's site-packages."""
    venv, site, env = installed_wheel
    assert README_PYTHON and any("import speedaudit" in source for _, source in README_PYTHON)
    shutil.copytree(repo_root() / "fixtures" / "corpora", tmp_path / "fixtures" / "corpora")
    python = venv / "bin" / "python"
    env = dict(env, MPLBACKEND="Agg")
    where = _run([python, "-c", "import speedaudit; print(speedaudit.__file__)"], cwd=tmp_path, env=env).strip()
    assert Path(where) == site / "speedaudit" / "__init__.py"
    for line, source in README_PYTHON:
        script = tmp_path / f"readme-{line}.py"
        script.write_text(source, encoding="utf-8")
        result = subprocess.run([python, script.name], cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=1500, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, f"README.md:{line} failed:\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
