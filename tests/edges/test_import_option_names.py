"""Names given as ``speedaudit import`` options (--environment, --campaign, --problem) that cannot be ids.

Before the fix, ``--environment 'lab '`` was blamed on the file ("column 'environment': ids with leading or
trailing white space ... strip the spaces in the file", over rows of the corpus being built), and an empty
``--problem ''`` or ``--campaign ''`` was silently replaced by the file name.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pandas as pd
import pytest

from audits.corpus.importers.hyperfine import import_hyperfine
from audits.corpus.importers.pyperf_json import import_pyperf
from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark
from audits.corpus.io import CorpusError

CLI = [sys.executable, "-m", "audits.cli"]


@pytest.fixture(scope="module")
def hyperfine_file(tmp_path_factory):
    assert shutil.which("hyperfine"), "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    path = tmp_path_factory.mktemp("hf") / "run.json"
    subprocess.run(["hyperfine", "--style", "none", "-N", "--runs", "2", "seq 10", "--export-json", str(path)],
                   check=True, capture_output=True, timeout=120)
    return path


@pytest.mark.parametrize(("option", "name", "said"), [
    ("--environment", "lab ", "--environment 'lab ': leading or trailing white space"),
    ("--campaign", "a\tb", "--campaign 'a\\tb': control characters"),
    ("--problem", "", "--problem '': empty"),
    ("--campaign", "", "--campaign '': empty"),
])
def test_an_option_name_that_cannot_be_an_id_is_named_as_the_option(hyperfine_file, tmp_path, option, name, said):
    out = tmp_path / "out.parquet"
    proc = subprocess.run([*CLI, "import", "hyperfine", str(hyperfine_file), option, name, "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert said in proc.stderr and f"-> give {option} a name" in proc.stderr
    assert "in the file" not in proc.stderr and not out.exists()


def test_any_other_name_is_used_as_given(hyperfine_file, tmp_path):
    out = tmp_path / "out.parquet"
    proc = subprocess.run([*CLI, "import", "hyperfine", str(hyperfine_file), "--environment", "büro / 2 <b>",
                           "--problem", "$x$, \"q\"", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    corpus = pd.read_parquet(out)
    assert set(corpus["environment"]) == {"büro / 2 <b>"} and set(corpus["problem"]) == {"$x$, \"q\""}


@pytest.mark.parametrize("importer", ["hyperfine", "pyperf", "pytest-benchmark"])
def test_the_python_importers_refuse_such_names_too(hyperfine_file, importer):
    # before: import_hyperfine([f], problem="") or campaign="" silently used the file name (`problem or ...`), and
    # an environment with a trailing space was blamed on the file's rows
    function = {"hyperfine": import_hyperfine, "pyperf": import_pyperf,
                "pytest-benchmark": import_pytest_benchmark}[importer]
    with pytest.raises(CorpusError, match=r"^--campaign '': empty"):
        function([hyperfine_file], campaign="")
    with pytest.raises(CorpusError, match=r"^--environment 'lab ': leading or trailing white space"):
        function([hyperfine_file], environment="lab ")
    if importer == "hyperfine":
        with pytest.raises(CorpusError, match=r"^--problem '': empty"):
            function([hyperfine_file], problem="")
