"""Partitioned datasets (audits.corpus.dataset): round trip as a set, lazy partitions, atomic writes, names as data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.corpus.dataset import MANIFEST, is_dataset, open_dataset, save_dataset, split_by_problem, write_dataset
from audits.corpus.io import CorpusError, load_corpus, save_corpus
from audits.corpus.synthetic import synthesize

REPO = Path(__file__).resolve().parents[2]
KEY = ["environment", "campaign", "problem", "test", "solution", "repeat"]


def _as_set(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows as plain values in key order: equal exactly when the two frames hold the same rows."""
    plain = frame.astype({c: object for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)})
    plain = plain.astype({c: str for c in KEY if c != "repeat"})
    return plain.sort_values(KEY).reset_index(drop=True)[sorted(frame.columns)]


@pytest.fixture(scope="module")
def corpus():
    c = synthesize(n_problems=4, n_tests=3, n_solutions=4, n_repeats=2, n_candidates=1, seed=3,
                   campaigns=(("c0", 1.0, 0.0), ("c1", 0.7, 0.01))).corpus
    # names are data: slashes, '=', '%', spaces and non-ASCII survive unchanged (never put in a path)
    odd = {"p0000": "a/b=c%2F d", "p0001": "ünï/../x", "p0002": "problem=p0003"}
    c["problem"] = c["problem"].cat.rename_categories(lambda n: odd.get(n, n))
    return c


def test_round_trip_holds_the_same_rows(corpus, tmp_path):
    ds = save_dataset(corpus, tmp_path / "d")
    assert is_dataset(tmp_path / "d")
    assert ds.rows == len(corpus)
    assert sorted(ds.problems) == sorted(map(str, corpus["problem"].unique()))
    pd.testing.assert_frame_equal(_as_set(ds.load()), _as_set(corpus))
    pd.testing.assert_frame_equal(_as_set(load_corpus(tmp_path / "d")), _as_set(corpus))


def test_each_partition_holds_whole_problems(corpus, tmp_path):
    ds = save_dataset(corpus, tmp_path / "d", problems_per_partition=2)
    seen = []
    for info, part in zip(ds.partitions_info, ds.partitions()):
        names = set(map(str, part["problem"].unique()))
        assert names == set(info.problems) and len(names) <= 2
        for name in names:  # every row of that problem is in this partition
            assert (corpus["problem"].astype(str) == name).sum() == (part["problem"].astype(str) == name).sum()
        seen += sorted(names)
    assert sorted(seen) == sorted(map(str, corpus["problem"].unique())) and len(seen) == len(set(seen))
    # files carry only their own problems' names (no dictionary of every problem in every file)
    assert all(len(part["problem"].cat.categories) == len(info.problems)
               for info, part in zip(ds.partitions_info, ds.partitions()))


def test_split_ignores_row_order(corpus):
    shuffled = corpus.sample(frac=1.0, random_state=7).reset_index(drop=True)
    a = [sorted(map(str, f["problem"].unique())) for f in split_by_problem(corpus, problems_per_partition=2)]
    b = [sorted(map(str, f["problem"].unique())) for f in split_by_problem(shuffled, problems_per_partition=2)]
    assert a == b


def test_failed_write_leaves_nothing(corpus, tmp_path):
    parts = list(split_by_problem(corpus))

    def failing():
        yield parts[0]
        yield parts[1]
        raise RuntimeError("generator broke half-way")

    with pytest.raises(RuntimeError):
        write_dataset(failing(), tmp_path / "d")
    assert list(tmp_path.iterdir()) == []


def test_a_problem_in_two_partitions_is_refused(corpus, tmp_path):
    parts = list(split_by_problem(corpus))
    with pytest.raises(CorpusError, match="is in partitions 1 and 2"):
        write_dataset([parts[0], parts[1], parts[1]], tmp_path / "d")
    assert list(tmp_path.iterdir()) == []


def test_invalid_partition_is_refused_before_writing(corpus, tmp_path):
    parts = list(split_by_problem(corpus))
    bad = parts[1].copy()
    bad.loc[0, "duration_s"] = -1.0
    with pytest.raises(CorpusError, match="negative durations"):
        write_dataset([parts[0], bad], tmp_path / "d")
    assert list(tmp_path.iterdir()) == []


def test_existing_non_dataset_is_not_replaced(corpus, tmp_path):
    target = tmp_path / "d"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    with pytest.raises(CorpusError, match="not a speedaudit dataset"):
        save_dataset(corpus, target)
    assert (target / "keep.txt").read_text() == "mine"


def test_changed_partition_is_detected(corpus, tmp_path):
    ds = save_dataset(corpus, tmp_path / "d")
    first = ds.partitions_info[1].path
    frame = pd.read_parquet(first)
    frame.iloc[:-1].to_parquet(first, index=False)
    with pytest.raises(CorpusError, match="the manifest"):
        ds.read_partition(1)
    with pytest.raises(CorpusError, match="manifest says"):
        open_dataset(tmp_path / "d").load()


def test_folder_without_manifest_says_what_to_do(tmp_path):
    with pytest.raises(CorpusError, match="convert CORPUS --out FOLDER --partition-by problem"):
        open_dataset(tmp_path)


def test_convert_cli_writes_a_dataset(corpus, tmp_path):
    src = tmp_path / "c.parquet"
    save_corpus(corpus, src)
    out = tmp_path / "out.dataset"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "convert", str(src), "--out", str(out),
                           "--partition-by", "problem"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert meta["rows"] == len(corpus) and meta["partition_by"] == "problem"
    assert len(meta["partitions"]) == corpus["problem"].nunique()
    pd.testing.assert_frame_equal(_as_set(load_corpus(out)), _as_set(corpus))
    # and validate reads the folder like a file
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "validate", str(out)], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert f"{len(corpus):,}" in proc.stdout


def test_synthetic_dataset_is_written_chunk_by_chunk(tmp_path):
    from benchmarks.corpora import dataset_chunks, ensure_dataset

    path = ensure_dataset(30_000, cache=tmp_path, chunk_problems=2, problems_per_partition=1)
    ds = open_dataset(path)
    assert ds.rows == 30_000 + 2 * 20  # 3 problems x 20 tests x 50 solutions x 5 repeats x 2 campaigns + floors
    names = list(ds.problems)
    assert names == ["_floor", "p00000", "p00001", "p00002"]
    # a chunk is its own draw; the geometry is the benchmark's
    part = ds.read_partition(names.index("p00002"))
    assert part.groupby(["campaign", "test", "solution"], observed=True).size().eq(5).all()
    assert part["test"].nunique() == 20 and part["solution"].nunique() == 50
    assert np.isfinite(part["duration_s"]).all()
    assert sum(1 for _ in dataset_chunks(30_000, chunk_problems=2, problems_per_partition=1)) == 4
