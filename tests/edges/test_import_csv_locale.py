"""CSV written in a European locale (';' between columns, ',' as the decimal point), given to validate/convert.

Before the fix, a ';'-separated file was refused with "required column missing ... file columns:
['problem;test;solution;duration_s;status'] -> map a file column onto it with --map", and a decimal comma with
"store plain numbers (no units in the cell)": neither says what is wrong with the file.
"""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

CLI = [sys.executable, "-m", "audits.cli"]
FRAME = pd.DataFrame({"problem": ["p", "p"], "test": ["t", "t"], "solution": ["a", "b"], "duration_s": [1.5, 2.25],
                      "status": "ok"})


def _run(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["validate", "convert"])
def test_semicolon_separated_csv_is_named_with_its_separator(tmp_path, command):
    path = tmp_path / "runs.csv"
    FRAME.to_csv(path, sep=";", decimal=",", index=False)
    out = tmp_path / "out.parquet"
    proc = _run(command, path, "--unit", "s", *(["--out", out] if command == "convert" else []))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (f"{path}: the header is one column, 'problem;test;solution;duration_s;status', separated by ';', "
            f"not ','") in proc.stderr
    assert "write the file with ',' between columns (and '.' as the decimal point)" in proc.stderr
    assert "--map" not in proc.stderr and not out.exists()
    # the same file, written as the message says, converts with its durations as written
    FRAME.to_csv(path, index=False)
    assert _run("convert", path, "--out", out).returncode == 0
    assert pd.read_parquet(out)["duration_s"].tolist() == [1.5, 2.25]


def test_a_comma_separated_tsv_says_so(tmp_path):
    path = tmp_path / "runs.tsv"
    FRAME.to_csv(path, index=False)
    proc = _run("validate", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "separated by ',', not '\\t'" in proc.stderr and "or name it .csv" in proc.stderr


def test_decimal_comma_is_named(tmp_path):
    path = tmp_path / "runs.csv"
    FRAME.to_csv(path, decimal=",", index=False)
    proc = _run("validate", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}: column 'duration_s': values that are not numbers (2 rows)" in proc.stderr
    assert "duration_s='1,5'" in proc.stderr
    assert "'.' as the decimal point and no thousands separator" in proc.stderr


def test_a_semicolon_separated_tsv_is_not_told_to_be_named_csv(tmp_path):
    path = tmp_path / "runs.tsv"
    FRAME.to_csv(path, sep=";", index=False)
    proc = _run("validate", path)
    assert proc.returncode == 1 and "separated by ';', not '\\t'" in proc.stderr
    assert "to_csv(sep='\\t')" in proc.stderr and "name it .csv" not in proc.stderr


@pytest.mark.parametrize("name", ["runs.csv", "runs.csv.gz"])
def test_a_windows_1252_csv_is_said_to_be_not_utf8_with_the_line(tmp_path, name):
    # Excel's plain "CSV" in a Western locale writes Windows-1252; before the fix: "cannot be read as .csv
    # (UnicodeDecodeError: ...) -> check that the file is complete and of the format its name says"
    frame = FRAME.assign(problem=["p", "café"])
    path = tmp_path / name
    frame.to_csv(path, index=False, encoding="cp1252")
    proc = _run("validate", path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{path}: not UTF-8 text (byte 0xe9 on line 3)" in proc.stderr and "save it as UTF-8" in proc.stderr
    frame.to_csv(path, index=False, encoding="utf-8")  # saved as the message says, the name reads as written
    out = tmp_path / "out.parquet"
    assert _run("convert", path, "--out", out).returncode == 0
    assert sorted(pd.read_parquet(out)["problem"].astype(str)) == ["café", "p"]
