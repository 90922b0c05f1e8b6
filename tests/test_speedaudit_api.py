"""The public API (the package ``speedaudit``): a handful of names, each importable, the version from one place."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import speedaudit

ROOT = Path(__file__).resolve().parents[1]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def test_every_public_name_resolves_and_is_listed_once():
    assert speedaudit.__all__ == ["__version__", *speedaudit._NAMES]
    assert len(speedaudit.__all__) <= 20  # a handful, as pyperf's seven
    for name in speedaudit.__all__:
        assert getattr(speedaudit, name) is not None, name
    with pytest.raises(AttributeError):
        speedaudit.run_reliability_audit  # noqa: B018 -- the implementation's names are not the API


def test_version_and_the_command_line_say_the_same():
    assert speedaudit.__version__ == VERSION
    out = subprocess.run([sys.executable, "-m", "speedaudit", "--version"], capture_output=True, text=True,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == f"speedaudit {VERSION}"


def test_import_is_light():
    code = "import sys, speedaudit; print(sorted(m for m in ('pandas', 'numpy', 'scipy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]"


def test_run_audit_by_name_is_the_audit_function():
    from audits.checks.reliability import run_reliability_audit
    from audits.corpus.synthetic import synthesize
    from audits.errors import UserError

    corpus = synthesize(n_problems=4, n_repeats=3, seed=2).corpus
    mine = speedaudit.run_audit("reliability", corpus, n_boot=20).to_dict()
    assert mine == run_reliability_audit(corpus, n_boot=20).to_dict()
    with pytest.raises(UserError, match="no audit 'speed'.*reliability"):
        speedaudit.run_audit("speed", corpus)
    for name in speedaudit.AUDITS:  # each audit the API names exists under the one naming rule
        module = __import__(f"audits.checks.{name}", fromlist=["x"])
        assert callable(getattr(module, f"run_{name}_audit")), name


def test_run_all_saves_what_audit_all_json_writes(tmp_path):
    """``run_all(..., save=FILE)`` and ``speedaudit audit all --json FILE`` write the same document (one writer,
    :func:`audits.report.results.save_audit_all`), so the report renders from either; a non-default option
    (n_boot, seed) reaches both files the same way."""
    corpus = str(ROOT / "fixtures" / "corpora" / "quiet-a.parquet")
    subprocess.run([sys.executable, "-m", "speedaudit", "audit", "all", corpus, "--n-boot", "40", "--seed", "3",
                    "--json", str(tmp_path / "cli.json")], capture_output=True, text=True, cwd=tmp_path, check=True)
    whole = speedaudit.run_all(corpus, n_boot=40, seed=3, save=tmp_path / "api.json")
    cli = json.loads((tmp_path / "cli.json").read_text())
    api = json.loads((tmp_path / "api.json").read_text())
    assert api == cli
    assert api["meta"]["saved"] and api["meta"]["parameters"]["n_boot"] == 40 and api["meta"]["parameters"]["seed"] == 3
    # the file is written from the Options the engine ran each audit with (WholeAudit.options), not rebuilt
    # (clocks and simulation declare their own n_boot, not the shared one)
    assert [whole.options[n].n_boot for n in ("reliability", "discriminability", "aggregation")] == [40, 40, 40]
    assert {o.seed for o in whole.options.values() if hasattr(o, "seed")} == {3}
    again = speedaudit.load_results(tmp_path / "api.json")
    assert [f.to_dict() for f in again["reliability"].findings] == [f.to_dict() for f in whole.reliability.findings]
