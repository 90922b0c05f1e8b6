"""Every format ``speedaudit convert`` writes reads back as the corpus it wrote: values and dtypes, every column.

Before the fix, a corpus written as CSV, TSV or JSON lines read its ``timestamp`` column back as text (the
collector writes datetimes), and a CSV or TSV read its ids as numbers or missing values when they looked like them:
a test named ``007`` came back as ``7``, and one named ``NA`` or ``None`` as missing (then a crash).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import WRITE_FORMATS, load_corpus

CLI = [sys.executable, "-m", "audits.cli"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A Parquet file as another program writes it: the columns a corpus may have, with the values that are hard
    to keep in text."""
    problems = ['say "hi"', "a,b", "naïve café", "50% off", "1st", "it's"]
    tests = ["007", "1.50", "NA", "None", "1e3", "null"]  # every one looks like a number or a missing value
    statuses = ["ok", "timeout", "ok", "runtime_error", "ok", "wrong_answer"]
    rows = []
    for p, problem in enumerate(problems):
        for t, test in enumerate(tests):
            for s, solution in enumerate(["x, y", "ünï", "%s"]):
                for repeat in range(2):
                    status = statuses[(p + t + s + repeat) % len(statuses)]
                    rows.append({"environment": 'host "b", 2', "campaign": "001", "problem": problem, "test": test,
                                 "solution": solution, "repeat": repeat, "run": repeat % 2, "status": status,
                                 "duration_s": 1e-9 * (1 + p + 7 * t + 49 * s) + repeat * 0.1
                                 if status in ("ok", "wrong_answer") else (2.0 if status == "timeout" else np.nan),
                                 "language": "C++" if s else "python"})
    frame = pd.DataFrame(rows)
    n = len(frame)
    start = pd.Timestamp("2026-03-29T01:59:59.123456789+02:00")  # nanoseconds, an offset, a DST change in Europe
    frame["timestamp"] = pd.Series([start + pd.Timedelta(seconds=k, nanoseconds=k) for k in range(n)],
                                   dtype="datetime64[ns, Europe/Paris]").mask(np.arange(n) % 17 == 5)
    frame["max_rss_kb"] = pd.array([None if k % 5 == 0 else 1000 + k for k in range(n)], dtype="Int64")
    frame["cpu_s"] = frame["duration_s"].where(frame["status"] == "ok")
    frame["cpu"] = pd.array([None if k % 3 == 0 else k % 4 for k in range(n)], dtype="Int64")
    path = tmp_path_factory.mktemp("src") / "source.parquet"
    frame.to_parquet(path, index=False)
    return path


def _convert(src, out) -> None:
    proc = subprocess.run([*CLI, "convert", str(src), "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("ending", sorted(WRITE_FORMATS))
def test_every_output_format_reads_back_what_was_written(source, tmp_path, ending):
    expected = load_corpus(source)
    assert str(expected["timestamp"].dtype) == "datetime64[ns, UTC]"   # the premise: datetimes, some missing
    assert expected["timestamp"].isna().any() and expected["duration_s"].isna().any()
    out = tmp_path / f"corpus{ending}"
    _convert(source, out)
    back = load_corpus(out)
    pd.testing.assert_frame_equal(back, expected, check_exact=True)
    assert back["timestamp"].iloc[0] == pd.Timestamp("2026-03-28T23:59:59.123456789Z")
    assert sorted(back["test"].cat.categories) == ["007", "1.50", "1e3", "NA", "None", "null"]


def test_a_text_output_converted_again_is_the_same_corpus(source, tmp_path):
    expected = load_corpus(source)
    previous = source
    for name in ("a.csv.gz", "b.jsonl", "c.tsv", "d.parquet"):
        _convert(previous, tmp_path / name)
        previous = tmp_path / name
    pd.testing.assert_frame_equal(load_corpus(previous), expected, check_exact=True)


def test_a_partitioned_dataset_reads_back_what_was_written(source, tmp_path):
    out = tmp_path / "corpus.dataset"
    proc = subprocess.run([*CLI, "convert", str(source), "--out", str(out), "--partition-by", "problem"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    expected = load_corpus(source)
    back = load_corpus(out)
    order = ["problem", "test", "solution", "repeat"]
    pd.testing.assert_frame_equal(back.sort_values(order).reset_index(drop=True),
                                  expected.sort_values(order).reset_index(drop=True), check_exact=True)


def test_ids_of_a_mapped_column_are_read_as_written(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("task,case,solution,duration_s,status,when\n"
                    "007,NA,1.50,1.5,ok,2026-01-01T10:00:00+01:00\n007,None,1.50,2.5,ok,\n")
    out = tmp_path / "runs.parquet"
    proc = subprocess.run([*CLI, "convert", str(runs), "--out", str(out), "--map", "task=problem,case=test,when=timestamp"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    corpus = load_corpus(out)
    assert corpus[["problem", "test", "solution"]].astype(str).values.tolist() == [["007", "NA", "1.50"],
                                                                                    ["007", "None", "1.50"]]
    assert corpus["timestamp"].tolist()[0] == pd.Timestamp("2026-01-01T09:00:00Z")
    assert corpus["timestamp"].isna().tolist() == [False, True]


@pytest.mark.parametrize(("cell", "said"), [("yesterday", "values that are not dates"),
                                            ("1764000000", "numbers (dtype int64), not dates")])
def test_a_timestamp_that_is_not_a_date_is_refused_with_its_rows(tmp_path, cell, said):
    """Before, such a value was kept as it was and read as no time (or as nanoseconds after 1970) by the run order."""
    runs = tmp_path / "runs.csv"
    runs.write_text(f"problem,test,solution,duration_s,status,timestamp\np,t,a,1.5,ok,{cell}\np,t,b,2.5,ok,{cell}\n")
    proc = subprocess.run([*CLI, "validate", str(runs)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert f"column 'timestamp': {said}" in proc.stderr and "row 1:" in proc.stderr and "ISO 8601" in proc.stderr


def test_an_empty_timestamp_text_is_not_known(tmp_path):
    """JSON lines (and Parquet string columns) write an unknown time as "": missing, as an empty CSV cell is."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"problem":"p","test":"t","solution":"a","duration_s":1.5,"status":"ok","timestamp":""}\n'
                    '{"problem":"p","test":"t","solution":"b","duration_s":2.5,"status":"ok","timestamp":" "}\n'
                    '{"problem":"p","test":"t","solution":"c","duration_s":2.5,"status":"ok",'
                    '"timestamp":"2026-01-01T00:00:00+01:00"}\n')
    proc = subprocess.run([*CLI, "validate", str(runs)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert load_corpus(runs)["timestamp"].tolist() == [pd.NaT, pd.NaT, pd.Timestamp("2025-12-31T23:00:00Z")]


def test_a_number_among_date_texts_is_refused_not_read_as_1970(tmp_path):
    """A JSON line with an epoch beside lines with ISO text: pandas' mixed parsing read 1767225600 as nanoseconds."""
    runs = tmp_path / "runs.jsonl"
    runs.write_text('{"problem":"p","test":"t","solution":"a","duration_s":1.5,"status":"ok","timestamp":1767225600}\n'
                    '{"problem":"p","test":"t","solution":"b","duration_s":2.5,"status":"ok",'
                    '"timestamp":"2026-01-01T00:00:00Z"}\n')
    proc = subprocess.run([*CLI, "validate", str(runs)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert "column 'timestamp': numbers among the dates" in proc.stderr and "timestamp=1767225600" in proc.stderr


def test_pandas_json_lines_with_epoch_timestamps_are_refused_with_the_export_that_works(source, tmp_path):
    """pandas' to_json writes datetimes as epoch milliseconds: refused (a number's unit is unknown) with the option that
    writes them as dates, and that export reads back every instant."""
    corpus = load_corpus(source)
    epoch = tmp_path / "epoch.jsonl"
    corpus.to_json(epoch, orient="records", lines=True, date_format="epoch")  # pandas 3 default, said explicitly
    proc = subprocess.run([*CLI, "validate", str(epoch)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "column 'timestamp': numbers (dtype" in proc.stderr
    assert "unless given date_format='iso'" in proc.stderr
    iso = tmp_path / "iso.jsonl"
    corpus.to_json(iso, orient="records", lines=True, date_format="iso", date_unit="ns")
    # pandas writes microseconds at most (its date_unit='ns' too): every instant to the microsecond
    pd.testing.assert_series_equal(load_corpus(iso)["timestamp"], corpus["timestamp"].dt.floor("us"))


def test_a_timestamp_text_without_its_day_is_refused_not_read_as_today(tmp_path):
    """Outside ISO 8601 pandas reads dates as dateutil does, filling a missing day, month or year from the day the file
    is read: '12:30' was today at 12:30, and the run order changed with the day of the audit."""
    runs = tmp_path / "runs.csv"
    runs.write_text("problem,test,solution,duration_s,status,timestamp\n"
                    "p,t,a,1.5,ok,2026-01-01T10:00:00Z\np,t,b,2.5,ok,12:30\np,t,c,2.5,ok,Jan 5 2026 10:00\n"
                    "p,t,d,2.5,ok,5 Jan\n")
    proc = subprocess.run([*CLI, "validate", str(runs)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "column 'timestamp': values that are not dates (2 rows)" in proc.stderr
    assert "timestamp='12:30'" in proc.stderr and "timestamp='5 Jan'" in proc.stderr
    runs.write_text("problem,test,solution,duration_s,status,timestamp\n"
                    "p,t,a,1.5,ok,2026-01-01T10:00:00Z\np,t,c,2.5,ok,Jan 5 2026 10:00\n")
    assert load_corpus(runs)["timestamp"].tolist() == [pd.Timestamp("2026-01-01T10:00:00Z"),
                                                       pd.Timestamp("2026-01-05T10:00:00Z")]
