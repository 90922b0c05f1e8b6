"""The categories of a loaded corpus are the names present, sorted, whatever the format and the writer: so a corpus
reads back the same from Parquet, CSV, TSV and JSON lines (tests/edges/test_corpus_roundtrip.py), categories included.

Before the fix a categorical column was kept as it came: the pyperf import wrote its files' campaigns, problems and
solutions in the order the files were given ('zb' before 'aa'), a Parquet file kept categories no row used, and a
default filled into some rows (environment 'default') came last; from CSV, TSV or JSON lines the same corpus read back
with the present names sorted, so the two loads differed (assert_frame_equal: 'category.categories are different').
"""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from audits.corpus.io import load_corpus
from audits.corpus.schema import COLUMNS

CLI = [sys.executable, "-m", "audits.cli"]
ENDINGS = (".csv", ".tsv.gz", ".jsonl")


def _run(*args: str) -> None:
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def _schema_columns(corpus: pd.DataFrame) -> pd.DataFrame:
    return corpus[[c for c in corpus.columns if c in COLUMNS]]


def _same_in_every_format(source, tmp_path) -> None:
    expected = load_corpus(source)
    for column in ("problem", "test", "solution", "environment", "campaign"):
        names = list(expected[column].cat.categories)
        assert names == sorted(set(expected[column].astype(str))), column  # present names, sorted
    for ending in ENDINGS:
        out = tmp_path / f"out{ending}"
        _run("convert", str(source), "--out", str(out))
        pd.testing.assert_frame_equal(_schema_columns(load_corpus(out)), _schema_columns(expected), check_exact=True)


def test_a_pyperf_import_reads_back_the_same_from_every_format(tmp_path):
    for name, statement in (("zb", "pass"), ("aa", "x = 1")):
        subprocess.run([sys.executable, "-m", "pyperf", "timeit", "-q", "-p", "2", "-n", "3", "-w", "1", "--name",
                        f"bench {name}", "-o", str(tmp_path / f"{name}.json"), statement], check=True,
                       capture_output=True, timeout=120)
    imported = tmp_path / "imported.parquet"
    _run("import", "pyperf", str(tmp_path / "zb.json"), str(tmp_path / "aa.json"), "--campaign-from", "file",
         "--out", str(imported))
    _same_in_every_format(imported, tmp_path)


@pytest.mark.parametrize("what", ["unused and unsorted categories", "a default filled into some rows"])
def test_a_parquet_corpus_reads_back_the_same_from_every_format(tmp_path, what):
    frame = pd.DataFrame({"problem": ["q", "p", "q", "p"], "test": "t", "solution": ["b", "b", "a", "a"],
                          "duration_s": [1.0, 2.0, 3.0, 4.0], "status": "ok",
                          "environment": ["zeta", "zeta", "alpha", "alpha"]})
    if what == "unused and unsorted categories":
        frame["problem"] = pd.Categorical(frame["problem"], categories=["q", "unused", "p"])
        frame["solution"] = pd.Categorical(frame["solution"], categories=["b", "a"])
    else:
        frame["environment"] = ["zeta", None, "alpha", None]  # 'default' where missing
    source = tmp_path / "source.parquet"
    frame.to_parquet(source, index=False)
    _same_in_every_format(source, tmp_path)
