"""A CSV or TSV whose rows end with a separator (one empty field more than the header: what a shell loop of
``printf '%s,%s,...,\\n'`` or some spreadsheet exports write) is read as its header says.

Before the fix pandas made each row's first field the index, so every value stood under the name of the column before
it: the file was refused for its status ('unknown status values ['<missing>']', rows shown with problem='t', test='a',
solution='1.5'), or, with the status before the duration, for status values '1.5'.
"""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest

from audits.corpus.io import load_corpus

CLI = [sys.executable, "-m", "audits.cli"]
HEADER = ["problem", "test", "solution", "status", "duration_s", "repeat"]
ROWS = [["p1", "007", "a", "ok", "1.5", "0"], ["p1", "007", "b", "timeout", "2", "0"],
        ["p2", "NA", "a", "ok", "2.5e-09", "0"]]


def _write(path, sep: str, rows, ending: str = "") -> None:
    text = sep.join(HEADER) + "\n" + "".join(sep.join(r) + ending + "\n" for r in rows)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)


@pytest.mark.parametrize(("name", "sep"), [("runs.csv", ","), ("runs.tsv", "\t"), ("runs.csv.gz", ","),
                                           ("runs.tsv.gz", "\t")])
@pytest.mark.parametrize("trailing", [1, 2])
def test_rows_ending_with_a_separator_read_as_the_header_says(tmp_path, name, sep, trailing):
    path = tmp_path / name
    _write(path, sep, ROWS, ending=sep * trailing)
    proc = subprocess.run([*CLI, "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    corpus = load_corpus(path)
    got = corpus[["problem", "test", "solution", "status"]].astype(str).values.tolist()
    assert got == [r[:4] for r in ROWS]
    assert corpus["duration_s"].tolist() == [float(r[4]) for r in ROWS]
    # the same corpus as the file without the separators
    plain = tmp_path / f"plain.{name}"
    _write(plain, sep, ROWS)
    assert load_corpus(plain).equals(corpus)


def test_row_names_before_the_values_are_still_left_out(tmp_path):
    """R's write.table(row.names=TRUE) writes a name before each row's values and none in the header: the extra field
    is the first, not an empty last one, and pandas' reading (the first field as the index) stays."""
    path = tmp_path / "runs.csv"
    path.write_text(",".join(HEADER) + "\n" + "".join(f"{k + 1},{','.join(r)}\n" for k, r in enumerate(ROWS)))
    corpus = load_corpus(path)
    assert corpus[["problem", "test", "solution", "status"]].astype(str).values.tolist() == [r[:4] for r in ROWS]
