"""A result file of one tool given to another tool's importer, or to validate/convert: named for what it is.

Every file here is written by the real tool (pyperf, hyperfine, pytest-benchmark), once per module.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from audits.corpus.importers.hyperfine import import_hyperfine
from audits.corpus.importers.pyperf_json import import_pyperf
from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark
from audits.corpus.io import CorpusError
from tests.edges.test_import_same_name import CLI, pytest_benchmark_json

FORMATS = ("pyperf", "hyperfine", "pytest-benchmark")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("tools")
    pyperf = root / "py perf.json"  # a space: the suggested command must quote it
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-p", "2", "-n", "3", "-w", "1", "--loops", "10",
                    "-o", str(pyperf), "sum(range(100))"], check=True, capture_output=True, timeout=120)
    hyperfine = root / "hf.json"
    assert shutil.which("hyperfine"), "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    subprocess.run(["hyperfine", "--style", "none", "-N", "--runs", "3", "true", "--export-json", str(hyperfine)],
                   check=True, capture_output=True, timeout=120)
    bench = pytest_benchmark_json(root, root / "pb.json")
    return {"pyperf": pyperf, "hyperfine": hyperfine, "pytest-benchmark": bench}


def _run(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


IMPORTERS = {"pyperf": import_pyperf, "hyperfine": import_hyperfine, "pytest-benchmark": import_pytest_benchmark}


@pytest.mark.parametrize("given", FORMATS)
def test_each_importer_names_the_importer_of_another_tools_file(files, given, tmp_path):
    # before: 'import pyperf' on a pytest-benchmark file said "no benchmark values found (0 benchmarks or files
    # skipped)" (its 'benchmarks' list passed for pyperf's), and the others said "pass files written by <tool>"
    for fmt in FORMATS:
        if fmt == given:
            continue
        command = f"speedaudit import {fmt} {shlex.quote(str(files[fmt]))} --out corpus.parquet"
        with pytest.raises(CorpusError) as error:
            IMPORTERS[given]([files[fmt]])
        assert str(error.value).startswith(f"{files[fmt]}: ")
        assert f"it is a {fmt} result file: {command}" in str(error.value)
    # the command line says it without a traceback and writes nothing
    other = files["pyperf" if given != "pyperf" else "hyperfine"]
    out = tmp_path / "out.parquet"
    proc = _run("import", given, other, "--out", out)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "result file: speedaudit import" in proc.stderr
    assert not out.exists()


def test_the_suggested_import_reads_the_file_exactly(files, tmp_path):
    data = json.loads(files["hyperfine"].read_text())
    out = tmp_path / "hf.parquet"
    assert _run("import", "hyperfine", files["hyperfine"], "--out", out).returncode == 0
    assert pd.read_parquet(out).sort_values("repeat")["duration_s"].tolist() == data["results"][0]["times"]


def test_a_pytest_benchmark_file_in_a_pyperf_folder_is_listed_as_skipped(files, tmp_path):
    # before: the pytest-benchmark file was read as a pyperf file without runs and left out silently
    folder = tmp_path / "results"
    folder.mkdir()
    shutil.copy(files["pyperf"], folder / "a.json")
    shutil.copy(files["pytest-benchmark"], folder / "b.json")
    result = import_pyperf([folder])
    assert [what for what, _ in result.skipped] == [str(folder / "b.json")]
    assert "not a pyperf result file" in result.skipped[0][1]
    assert f"skipped 1 (its 'benchmarks' have no 'runs': this is not a pyperf result file): {folder / 'b.json'}" \
        in result.summary()
    assert set(result.corpus["file"].astype(str)) == {str(folder / "a.json")}


def test_validate_and_convert_name_the_importer_of_a_tools_file(files, tmp_path):
    # before: "line 1: not valid JSON ... (one JSON object per line)" for hyperfine's and pytest-benchmark's
    # pretty-printed files, "required column missing ... --map FILE_COLUMN=problem" for pyperf's one-line file
    out = tmp_path / "x.parquet"
    for command, fmt in [("validate", f) for f in FORMATS] + [("convert", "hyperfine")]:
        path = files[fmt]
        proc = _run(command, path, *(["--out", out] if command == "convert" else []))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert f"{path}: a {fmt} result file, not a timing corpus" in proc.stderr
        assert f"speedaudit import {fmt} {shlex.quote(str(path))} --out corpus.parquet" in proc.stderr
        assert not out.exists()
