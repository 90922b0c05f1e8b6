"""The inputs the command examples name (README's: tests/cli/test_examples.py; ``--help``'s:
tests/cli/test_help_examples.py), one fixture for both files."""

from __future__ import annotations

import gzip
import shutil

import pytest

from tests.cli.test_examples import _write_archive, _write_runs_csv


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, pyperf_files):
    """A directory with every input file, copied into each example's working directory."""
    root = tmp_path_factory.mktemp("example-inputs")
    _write_runs_csv(root / "runs.csv")
    _, fixed, calibrated, _ = pyperf_files
    shutil.copy(fixed, root / "main.json")
    with open(calibrated, "rb") as src, gzip.open(root / "patched.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    _write_archive(root / "archive")
    return root
