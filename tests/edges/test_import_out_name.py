"""An output name that says no format is refused before the input is read (import and convert).

Before the fix the name was checked when the corpus was written: an archive import (minutes for faster-cpython's
1.5 GB) ran to the end and then failed with "cannot tell the format from the name"; here an input error was said
first and the output name only after the user had fixed it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "audits.cli"]


@pytest.fixture(scope="module")
def pyperf_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("pyperf") / "t.json"
    subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-p", "2", "-n", "2", "-w", "1", "--loops", "10",
                    "-o", str(path), "sum(range(50))"], check=True, capture_output=True, timeout=120)
    return path


@pytest.mark.parametrize("out_name", ["corpus.json", "corpus"])
def test_import_refuses_the_output_name_before_reading(pyperf_file, tmp_path, out_name):
    truncated = tmp_path / "truncated.json"
    truncated.write_text(pyperf_file.read_text()[:200])  # the input would fail too, later
    out = tmp_path / out_name
    proc = subprocess.run([*CLI, "import", "pyperf", str(truncated), "--out", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{out}: cannot tell the format from the name" in proc.stderr and "truncated.json" not in proc.stderr
    assert not out.exists()
    # a good name reads the input, which then says what is wrong with it
    proc = subprocess.run([*CLI, "import", "pyperf", str(truncated), "--out", str(tmp_path / "c.parquet")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and f"{truncated}: not a pyperf result file" in proc.stderr


def test_convert_refuses_the_output_name_before_reading(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("problem,test,solution,duration_s,status\np,t,a,oops,ok\n")
    out = tmp_path / "runs.txt"
    proc = subprocess.run([*CLI, "convert", str(runs), "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and f"{out}: cannot tell the format from the name" in proc.stderr
    assert "oops" not in proc.stderr and not out.exists()
