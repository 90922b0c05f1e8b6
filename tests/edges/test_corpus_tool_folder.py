"""A folder of another tool's result files given as a corpus (validate, convert, the audits) names the import.

Before the fix such a folder (pytest-benchmark's ``.benchmarks``, a folder of pyperf or hyperfine results) was
refused as 'is a directory, not a corpus file -> pass a .parquet, .csv or .jsonl file', though each file of it alone
is named for what it is ('a pytest-benchmark result file ... -> import it first: speedaudit import ...').
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

import pytest

from audits.corpus.io import load_corpus

OWN_SESSION = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
CLI = [sys.executable, "-m", "audits.cli"]


def _pytest_benchmark(folder):
    (folder / "test_b.py").write_text("def test_sum(benchmark):\n"
                                      "    benchmark.pedantic(sum, args=(range(99),), rounds=5, iterations=10)\n")
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_b.py",
                    "--benchmark-autosave", "--benchmark-save-data"], check=True, capture_output=True, timeout=120,
                   cwd=folder, env=OWN_SESSION)
    return folder / ".benchmarks"


def _pyperf(folder):
    (folder / "results").mkdir()
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-q", "-p", "2", "-n", "3", "-w", "1", "-o",
                    str(folder / "results" / "base.json"), "pass"], check=True, capture_output=True, timeout=120)
    return folder / "results"


def _hyperfine(folder):
    (folder / "my results").mkdir()
    subprocess.run(["hyperfine", "-N", "-r", "3", "-w", "1", "--export-json", str(folder / "my results" / "sleep.json"),
                    "sleep 0.001"], check=True, capture_output=True, timeout=120)
    return folder / "my results"


@pytest.mark.parametrize(("tool", "write"), [("pytest-benchmark", _pytest_benchmark), ("pyperf", _pyperf),
                                             ("hyperfine", _hyperfine)])
@pytest.mark.parametrize("command", [["validate", "{}"], ["convert", "{}", "--out", "corpus.parquet"],
                                     ["audit", "all", "{}"]])
def test_a_folder_of_result_files_names_the_import_that_reads_it(tmp_path, tool, write, command):
    folder = write(tmp_path)
    proc = subprocess.run([*CLI, *(a.format(folder) for a in command)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{folder}: a folder of {tool} result files (such as " in proc.stderr
    suggested = proc.stderr.split("-> import them first: ", 1)[1].splitlines()[0]
    assert suggested.startswith(f"speedaudit import {tool} ")
    # the command suggested, run by a shell (hyperfine's files are given by a glob), imports the folder
    runnable = suggested.replace("speedaudit", " ".join(map(shlex.quote, CLI)), 1)
    done = subprocess.run(runnable, shell=True, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(load_corpus(tmp_path / "corpus.parquet")) > 0


def test_a_folder_of_other_files_is_still_a_directory(tmp_path):
    (tmp_path / "notes.json").write_text('{"a": 1}')
    proc = subprocess.run([*CLI, "validate", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and f"{tmp_path}: is a directory, not a corpus file" in proc.stderr
