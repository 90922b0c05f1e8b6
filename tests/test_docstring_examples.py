"""Every example in the docstrings of stats/ and audits/ runs and prints what it says.

Run with doctest from the repository root (examples may name shipped fixture files). Examples
marked ``+SKIP`` are illustrations of calls on user files that do not exist here.
"""

from __future__ import annotations

import doctest
import importlib
import os
import pkgutil
from pathlib import Path

import pytest

import audits
import stats

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(
    f"{package.__name__}.{info.name}"
    for package in (stats, audits, importlib.import_module("audits.cli"), importlib.import_module("audits.corpus"), importlib.import_module("audits.corpus.importers"), importlib.import_module("audits.collect"), importlib.import_module("audits.report"), importlib.import_module("audits.report.plots"))
    for info in pkgutil.iter_modules(package.__path__)
    if info.name != "__main__" and not info.ispkg
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} docstring examples failed"


def test_the_examples_are_really_run():
    attempted = 0
    cwd = os.getcwd()
    try:
        os.chdir(ROOT)
        for name in ("stats.ranking", "stats.bootstrap", "audits.checks.reward_environments"):
            attempted += doctest.testmod(importlib.import_module(name), verbose=False).attempted
    finally:
        os.chdir(cwd)
    assert attempted >= 5
