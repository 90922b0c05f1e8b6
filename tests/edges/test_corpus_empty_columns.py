"""A corpus column that is present but empty in every row (an export that writes the header of a field it never
fills) is read as missing values, not a crash.

Before the fix every such text column (environment, campaign, role, language, an id) ended ``speedaudit validate``
with a traceback: ``IndexError: index 0 is out of bounds for axis 0 with size 0`` (no label to sort).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from audits.corpus.io import load_corpus

CLI = [sys.executable, "-m", "audits.cli"]
ROWS = [{"problem": "p", "test": "t", "solution": s, "duration_s": d, "status": "ok"}
        for s, d in (("a", 1.5), ("b", 2.5))]


def _write(path, empty: str) -> None:
    if path.name.endswith(".csv"):
        columns = [*ROWS[0], empty] if empty not in ROWS[0] else list(ROWS[0])
        lines = [",".join(columns)] + [",".join("" if c == empty else str(r[c]) for c in columns) for r in ROWS]
        path.write_text("\n".join(lines) + "\n")
    else:
        path.write_text("".join(json.dumps({**r, empty: None}) + "\n" for r in ROWS))


@pytest.mark.parametrize("ending", [".csv", ".jsonl"])
@pytest.mark.parametrize(("empty", "expected"), [("environment", "default"), ("campaign", "c0"),
                                                 ("role", "reference"), ("language", None)])
def test_an_empty_optional_column_takes_its_default(tmp_path, ending, empty, expected):
    path = tmp_path / f"runs{ending}"
    _write(path, empty)
    proc = subprocess.run([*CLI, "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    values = load_corpus(path)[empty]
    assert values.isna().all() if expected is None else (values.astype(str) == expected).all()


@pytest.mark.parametrize("ending", [".csv", ".jsonl"])
@pytest.mark.parametrize(("empty", "said"), [("test", "column 'test': empty or missing ids (2 rows)"),
                                             ("status", "column 'status': unknown status values ['<missing>']")])
def test_an_empty_required_column_is_named_with_its_rows(tmp_path, ending, empty, said):
    path = tmp_path / f"runs{ending}"
    _write(path, empty)
    proc = subprocess.run([*CLI, "validate", str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert said in proc.stderr and "row 1:" in proc.stderr
