"""The calibration page names the rule that chose each pair (issue 23 item 3): `speedaudit report` on a corpus
with two environments and two campaigns ordered by timestamps, one pair named with -p and the other left to
the report. Real kernels (papermill), real notebooks; the rendered page is read as text."""

from __future__ import annotations

import json

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.render import render_reports


def _corpus():
    corpus = synthesize(n_problems=5, n_tests=2, n_solutions=5, n_repeats=3, n_incorrect=0, n_candidates=0,
                        busy=True, campaigns=(("old", 1.0, 0.0), ("new", 0.8, 0.01)), seed=4).corpus
    corpus["timestamp"] = corpus["campaign"].astype(str).map({"old": "2026-01-01", "new": "2026-02-01"})
    return corpus.astype({"timestamp": object})


def test_the_page_names_the_named_pair_and_the_default_pair_s_rule(tmp_path):
    path = tmp_path / "two.parquet"
    save_corpus(_corpus(), path)
    index = render_reports([path], out_dir=tmp_path / "out", audits=["calibration"], progress=None,
                           parameters={"n_boot": 20, "n_boot_rank": 10, "stored_run": ["busy", "old"],
                                       "fresh_run": ["busy", "new"]})
    (page,) = index.reports
    notebook = json.loads(page.notebook.read_text())
    text = "\n".join("".join(out.get("data", {}).get("text/markdown", "")) for cell in notebook["cells"]
                     for out in cell.get("outputs", ()))
    # stored -> fresh: named by the user (busy, not the quieter environment the default would take first)
    assert "`old` → `new` (campaign)" in text and "chosen by the rule `named`" in text
    # across: chosen by the report, each environment against the quietest in a campaign
    assert "`busy` → `quiet` (environment)" in text and "chosen by the rule `vs-quietest`" in text
    assert text.count("chosen by the rule") == 2
