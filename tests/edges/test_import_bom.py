"""Files saved with a UTF-8 byte-order mark (Notepad, PowerShell 5's ``Out-File -Encoding utf8``) read as without.

Before the fix a hyperfine file re-saved so was refused as "not a hyperfine JSON file (not readable JSON:
Unexpected UTF-8 BOM ...)" and a JSON-lines corpus with "line 1: not valid JSON ... fix or remove that line",
while a CSV with the same mark read (pandas drops it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd

CLI = [sys.executable, "-m", "audits.cli"]


def _run(*args):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def test_a_hyperfine_file_with_a_bom_imports_exactly(tmp_path):
    assert shutil.which("hyperfine"), "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    plain = tmp_path / "plain.json"
    subprocess.run(["hyperfine", "--style", "none", "-N", "--runs", "3", "seq 10", "--export-json", str(plain)],
                   check=True, capture_output=True, timeout=120)
    saved = tmp_path / "saved.json"
    saved.write_text(plain.read_text(encoding="utf-8"), encoding="utf-8-sig")
    assert saved.read_bytes().startswith(b"\xef\xbb\xbf")
    out = tmp_path / "out.parquet"
    proc = _run("import", "hyperfine", saved, "--out", out)
    assert proc.returncode == 0, proc.stderr
    times = json.loads(plain.read_text())["results"][0]["times"]
    assert pd.read_parquet(out).sort_values("repeat")["duration_s"].tolist() == times


def test_a_json_lines_corpus_with_a_bom_validates_like_its_csv(tmp_path):
    frame = pd.DataFrame({"problem": ["p", "p"], "test": ["t", "t"], "solution": ["a", "b"],
                          "duration_s": [1.5, 2.25], "status": "ok"})
    jsonl = tmp_path / "runs.jsonl"
    jsonl.write_text(frame.to_json(orient="records", lines=True), encoding="utf-8-sig")
    out = tmp_path / "runs.parquet"
    proc = _run("convert", jsonl, "--out", out)
    assert proc.returncode == 0, proc.stderr
    written = pd.read_parquet(out)
    assert written["problem"].astype(str).tolist() == ["p", "p"]
    assert written["duration_s"].tolist() == [1.5, 2.25]
