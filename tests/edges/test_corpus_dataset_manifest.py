"""A dataset manifest edited by hand or cut short is refused naming the manifest and the entry, not with a traceback.

Before the fix open_dataset indexed the entries blindly: an entry without 'rows' ended validate and every audit with
KeyError, a file name given as a plain string with TypeError, rows "many" with ValueError, 'partitions': null with
TypeError.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "audits.cli"]
MANIFEST = "_speedaudit_dataset.json"


@pytest.mark.parametrize(("edit", "said"), [
    (lambda m: m["partitions"][0].pop("rows"), "partition 0 is not an entry of 'file' (a name), 'rows' (a count)"),
    (lambda m: m.update(partitions=["part-000000.parquet"]), 'partition 0 is not an entry'),
    (lambda m: m["partitions"][1].update(rows="many"), 'partition 1 is not an entry'),
    (lambda m: m["partitions"][0].update(problems="p"), 'partition 0 is not an entry'),
    (lambda m: m.update(partitions=None), "'partitions' is not a list"),
])
@pytest.mark.parametrize("command", [["validate"], ["audit", "reliability"]])
def test_a_broken_manifest_is_named_with_its_entry(tmp_path, edit, said, command):
    runs = tmp_path / "runs.csv"
    runs.write_text("problem,test,solution,duration_s,status,repeat\n"
                    + "".join(f"{p},t,{s},{1 + r / 10},ok,{r}\n" for p in ("p", "q") for s in "ab" for r in range(3)))
    dataset = tmp_path / "runs.dataset"
    subprocess.run([*CLI, "convert", str(runs), "--out", str(dataset), "--partition-by", "problem"], check=True,
                   capture_output=True, timeout=120)
    meta = json.loads((dataset / MANIFEST).read_text())
    edit(meta)
    (dataset / MANIFEST).write_text(json.dumps(meta))
    proc = subprocess.run([*CLI, *command, str(dataset)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{dataset / MANIFEST}: {said}" in proc.stderr and "--partition-by problem" in proc.stderr
