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
#: Every subpackage of audits whose modules carry examples (the protocol, the audits, the engines, the pages).
PACKAGES = ("audits.cli", "audits.corpus", "audits.corpus.importers", "audits.collect", "audits.report",
            "audits.report.plots", "audits.report.narrative", "audits.protocol", "audits.checks",
            "audits.checks.declared", "audits.engine", "audits.engine.partitioned")
MODULES = sorted(
    f"{package.__name__}.{info.name}"
    for package in (stats, audits, *map(importlib.import_module, PACKAGES))
    for info in pkgutil.iter_modules(package.__path__)
    if info.name != "__main__" and not info.ispkg
) + ["audits.report.narrative"]  # a package whose __init__ holds the module's own example


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
