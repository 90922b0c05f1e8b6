"""The corpus loader: formats, mapping, units, defaults and at least 15 distinct bad inputs."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import CorpusError, load_corpus, normalize, save_corpus, summarize

GOOD = pd.DataFrame({
    "problem": ["p1", "p1", "p1", "p2"],
    "test": ["t1", "t1", "t2", "t1"],
    "solution": ["a", "a", "a", "b"],
    "duration_s": [0.5, 0.6, 1.0, 2.0],
    "status": ["ok", "ok", "timeout", "wrong_answer"],
    "repeat": [0, 1, 0, 0],
})


def _write(frame: pd.DataFrame, path):
    name = str(path)
    if name.endswith(".parquet"):
        frame.to_parquet(path, index=False)
    elif name.endswith(".csv"):
        frame.to_csv(path, index=False)
    elif name.endswith(".jsonl"):
        frame.to_json(path, orient="records", lines=True)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl"])
def test_formats_load_identically(tmp_path, suffix):
    corpus = load_corpus(_write(GOOD, tmp_path / f"c{suffix}"))
    assert corpus["duration_s"].tolist() == GOOD["duration_s"].tolist()
    assert corpus["status"].tolist() == GOOD["status"].tolist()
    # defaults filled
    assert set(corpus["environment"]) == {"default"} and set(corpus["campaign"]) == {"c0"}
    assert set(corpus["role"]) == {"reference"} and set(corpus["test_kind"]) == {"optimization"}
    for column in ("problem", "test", "solution", "status", "role", "test_kind", "environment", "campaign"):
        assert isinstance(corpus[column].dtype, pd.CategoricalDtype), column


def test_gzipped_csv(tmp_path):
    path = tmp_path / "c.csv.gz"
    with gzip.open(path, "wt") as handle:
        GOOD.to_csv(handle, index=False)
    assert len(load_corpus(path)) == len(GOOD)


def test_mapping_and_units(tmp_path):
    raw = GOOD.rename(columns={"problem": "task_id", "duration_s": "runtime"}).assign(runtime=lambda f: f.runtime * 1000)
    path = _write(raw, tmp_path / "c.csv")
    corpus = load_corpus(path, mapping="task_id=problem,runtime=duration_s", unit="ms")
    np.testing.assert_allclose(corpus["duration_s"], GOOD["duration_s"])
    assert corpus["problem"].tolist() == GOOD["problem"].tolist()


@pytest.mark.parametrize("unit, scale", [("us", 1e-6), ("ns", 1e-9), ("s", 1.0)])
def test_units_scale_duration_cpu_and_timeout(unit, scale):
    frame = GOOD.assign(cpu_s=[1.0, 2.0, 3.0, 4.0], timeout_s=10.0, max_rss_kb=100.0)
    corpus = normalize(frame, unit=unit)
    np.testing.assert_allclose(corpus["duration_s"], GOOD["duration_s"] * scale)
    np.testing.assert_allclose(corpus["cpu_s"], np.array([1.0, 2.0, 3.0, 4.0]) * scale)
    np.testing.assert_allclose(corpus["timeout_s"], 10.0 * scale)
    np.testing.assert_allclose(corpus["max_rss_kb"], 100.0)  # not a duration: untouched


def test_correct_is_derived_from_status_per_solution():
    corpus = normalize(GOOD)
    # solution b has a wrong answer -> incorrect; a only timed out -> still correct
    assert corpus.loc[corpus.solution == "b", "correct"].tolist() == [False]
    assert corpus.loc[corpus.solution == "a", "correct"].all()


def test_given_correct_labels_are_parsed():
    corpus = normalize(GOOD.assign(correct=["true", "true", "1", "no"]))
    assert corpus["correct"].tolist() == [True, True, True, False]


def test_save_roundtrip(tmp_path):
    corpus = normalize(GOOD)
    path = save_corpus(corpus, tmp_path / "out" / "c.parquet")
    again = load_corpus(path)
    pd.testing.assert_frame_equal(corpus, again, check_categorical=False)
    assert [p.name for p in path.parent.iterdir()] == ["c.parquet"]  # no temp file left
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # as a plain open() would create it


def test_summary_counts():
    s = summarize(normalize(GOOD))
    assert (s.rows, s.problems, s.tests, s.solutions, s.repeats) == (4, 2, 3, 2, 2)
    assert s.statuses == {"ok": 2, "timeout": 1, "wrong_answer": 1}


# --- bad inputs: each names the file and the column, and what to do -----------------------------------

def _bad(frame_edit):
    frame = GOOD.copy()
    return frame_edit(frame)


BAD_TABLES = {
    "missing_required_column": (lambda f: f.drop(columns="status"), "status", "required column missing"),
    "missing_duration_column": (lambda f: f.drop(columns="duration_s"), "duration_s", "required column missing"),
    "duration_not_numeric": (lambda f: f.assign(duration_s=["0.5", "fast", "1", "2"]), "duration_s", "not numbers"),
    "duration_bool_dtype": (lambda f: f.assign(duration_s=[True, False, True, True]), "duration_s", "expected numbers"),
    "nan_duration_on_ok": (lambda f: f.assign(duration_s=[np.nan, 0.6, 1.0, 2.0]), "duration_s", "NaN"),
    "negative_duration": (lambda f: f.assign(duration_s=[-0.5, 0.6, 1.0, 2.0]), "duration_s", "negative"),
    "infinite_duration": (lambda f: f.assign(duration_s=[np.inf, 0.6, 1.0, 2.0]), "duration_s", "infinite"),
    "unknown_status": (lambda f: f.assign(status=["ok", "OK!", "timeout", "wrong_answer"]), "status", "unknown status"),
    "duplicate_keys": (lambda f: f.assign(repeat=[0, 0, 0, 0]), "repeat", "duplicate"),
    "empty_problem_id": (lambda f: f.assign(problem=["p1", None, "p1", "p2"]), "problem", "empty or missing ids"),
    "blank_solution_id": (lambda f: f.assign(solution=["a", " ", "a", "b"]), "solution", "empty or missing ids"),
    "negative_repeat": (lambda f: f.assign(repeat=[0, -1, 0, 0]), "repeat", "whole numbers"),
    "fractional_repeat": (lambda f: f.assign(repeat=[0, 1.5, 0, 0]), "repeat", "whole numbers"),
    "unknown_role": (lambda f: f.assign(role=["reference", "human", "reference", "reference"]), "role", "unknown role values"),
    "unknown_test_kind": (lambda f: f.assign(test_kind=["optimization", "perf", "optimization", "optimization"]),
                          "test_kind", "unknown test_kind values"),
    "correct_not_boolean": (lambda f: f.assign(correct=["yes", "maybe", "no", "no"]), "correct", "not booleans"),
    "no_rows": (lambda f: f.iloc[:0], None, "no rows"),
}


@pytest.mark.parametrize("case", sorted(BAD_TABLES))
def test_bad_table_is_rejected_naming_file_and_column(tmp_path, case):
    edit, column, words = BAD_TABLES[case]
    src = _write(edit(GOOD.copy()), tmp_path / "bad.csv" if case != "duration_bool_dtype" else tmp_path / "bad.parquet")
    with pytest.raises(CorpusError) as info:
        load_corpus(src)
    message = str(info.value)
    assert str(src) in message
    if column:
        assert f"column '{column}'" in message
    assert words in message
    assert "->" in message  # says what to do


def test_offending_rows_are_shown(tmp_path):
    src = _write(GOOD.assign(duration_s=[0.5, -1.0, 1.0, 2.0]), tmp_path / "bad.csv")
    with pytest.raises(CorpusError, match=r"row 2: .*duration_s=-1\.0"):
        load_corpus(src)


@pytest.mark.parametrize("content, words", [
    (b"", r"empty \(0 bytes\)"),
    (b"\x00\x01garbage-not-parquet", "cannot be read"),
])
def test_unreadable_files(tmp_path, content, words):
    path = tmp_path / "bad.parquet"
    path.write_bytes(content)
    with pytest.raises(CorpusError, match=words):
        load_corpus(path)


def test_malformed_json_lines(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(GOOD.iloc[0].to_dict()) + "\n{not json\n")
    with pytest.raises(CorpusError, match=r"bad.jsonl: line 2: not valid JSON"):
        load_corpus(path)


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        load_corpus(tmp_path / "nope.parquet")
    odd = tmp_path / "c.xlsx"
    odd.write_text("x")
    with pytest.raises(CorpusError, match="unknown file type"):
        load_corpus(odd)


@pytest.mark.parametrize("mapping, words", [
    ("task=problem", "mapping names a column the file lacks"),
    ("problem", "is not SOURCE=TARGET"),
    ("problem=,", "empty side"),
    ("test=problem", "already has this column"),
])
def test_bad_mappings(tmp_path, mapping, words):
    src = _write(GOOD, tmp_path / "c.csv")
    with pytest.raises(CorpusError, match=words):
        load_corpus(src, mapping=mapping)


def test_two_columns_mapped_onto_one(tmp_path):
    src = _write(GOOD.assign(other=1.0), tmp_path / "c.csv")
    with pytest.raises(CorpusError, match="several file columns"):
        load_corpus(src, mapping="duration_s=duration_s,other=duration_s")


def test_unknown_unit(tmp_path):
    with pytest.raises(CorpusError, match="unknown unit"):
        load_corpus(_write(GOOD, tmp_path / "c.csv"), unit="minutes")


def test_nan_duration_is_allowed_on_failed_rows():
    corpus = normalize(GOOD.assign(duration_s=[0.5, 0.6, np.nan, np.nan]))
    assert corpus["duration_s"].isna().sum() == 2


CLI = [sys.executable, "-m", "audits.cli"]


def test_cli_convert_writes_nothing_on_bad_input(tmp_path):
    src = _write(GOOD.assign(duration_s=[0.5, -0.6, 1.0, 2.0]), tmp_path / "bad.csv")
    out = tmp_path / "out.parquet"
    proc = subprocess.run(CLI + ["convert", str(src), "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "bad.csv: column 'duration_s'" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == [src]  # no output, no temp file


def test_cli_validate_summary_and_error(tmp_path):
    good = _write(GOOD, tmp_path / "good.csv")
    proc = subprocess.run(CLI + ["validate", str(good)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "rows          4" in proc.stdout and "timeout 1" in proc.stdout
    bad = _write(GOOD.drop(columns="test"), tmp_path / "bad.csv")
    proc = subprocess.run(CLI + ["validate", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 1 and "column 'test'" in proc.stderr


def test_crash_during_save_leaves_nothing(tmp_path, monkeypatch):
    corpus = normalize(GOOD)
    target = tmp_path / "c.parquet"

    def broken(self, path, **kwargs):
        with open(path, "wb") as handle:
            handle.write(b"PAR1 half")
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(CorpusError, match="writing failed \\(disk full\\); nothing was written"):
        save_corpus(corpus, target)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("spread", [False, True])
@pytest.mark.parametrize("duplicated", [False, True])
def test_duplicate_keys_are_found_whether_the_keys_are_dense_or_spread(spread, duplicated):
    """Few key combinations: a presence count of the keys; a problem, test and solution per row (3000^3
    combinations, too spread for a count): one sort. Both must find the one duplicated key."""
    n = 3000
    ids = [f"x{i}" for i in range(n)] if spread else "x"
    frame = pd.DataFrame({"problem": ids, "test": ids, "solution": ids, "status": "ok",
                          "duration_s": np.linspace(0.1, 1.0, n), "repeat": 0 if spread else np.arange(n)})
    if duplicated:
        frame.loc[n - 1, ["problem", "test", "solution", "repeat"]] = frame.loc[7, ["problem", "test", "solution",
                                                                                   "repeat"]].to_numpy()
        with pytest.raises(CorpusError, match="duplicate"):
            normalize(frame, source="keys.csv")
    else:
        assert len(normalize(frame, source="keys.csv")) == n
