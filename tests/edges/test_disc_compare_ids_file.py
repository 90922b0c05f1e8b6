"""``speedaudit compare --a @FILE``: a file of solution ids is read as a text editor saves it.

* Saved as UTF-8 with a byte-order mark (Windows Notepad's "UTF-8 with BOM", PowerShell's Out-File): the mark
  was read as part of the first id, so that solution silently dropped out of its set (the others compared).
* Saved in another encoding (Latin-1 ``café``, UTF-16): the error was Python's codec message under the corpus's
  name ("fixtures/...parquet: 'utf-8' codec can't decode byte 0xe9"), naming neither the ids file nor what to do.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from audits.checks.compare import resolve_sides
from tests.cli_process import speedaudit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "fixtures", "corpora", "quiet-a.parquet")


def _frame():
    return pd.DataFrame({"problem": ["p", "p", "p", "q"],
                         "solution": ["A/café.py", "A/two.py", "B/x.py", "A/café.py"]})


def test_bom_is_not_part_of_the_first_id(tmp_path):
    ids = tmp_path / "a.txt"
    ids.write_text("A/café.py\r\nA/two.py\r\n", encoding="utf-8-sig")
    side = resolve_sides(_frame(), f"@{ids}", "B")
    expected = np.array(["a", "a", "b", "a"], dtype=object)
    assert side.tolist() == expected.tolist()


def _cli(*args):
    return speedaudit(*args, cwd=ROOT)


def test_other_encodings_are_refused_naming_the_file(tmp_path):
    for name, data in (("latin1.txt", "accepted/café.py\n".encode("latin-1")),
                       ("utf16.txt", "accepted/x.py\n".encode("utf-16"))):
        ids = tmp_path / name
        ids.write_bytes(data)
        done = _cli("compare", CORPUS, "--a", f"@{ids}", "--b", "time_limit_exceeded", "--n-boot", "10")
        assert done.returncode != 0
        assert "Traceback" not in done.stderr, done.stderr
        assert str(ids) in done.stderr and "UTF-8" in done.stderr, done.stderr
