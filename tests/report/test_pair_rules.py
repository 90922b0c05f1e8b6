"""The report calibrates every pair the calibration audit chooses (issue 23 item 3): on a corpus of three environments
and two campaigns ordered by timestamps, ``speedaudit report`` without a named pair calibrates all seven default
pairs (three stored -> fresh, two campaigns x two environments against the quietest), the calibration page shows one
section per pair and the index names each; a pair named with ``--pair`` (the calibration audit's ``pairs`` option) or
the report parameter ``pairs`` is the only one calibrated; ``audit all``'s saved results hold every pair. Real
kernels (papermill), real notebooks; the rendered page is read as text."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from audits.cli._main import main
from audits.corpus.io import save_corpus
from audits.corpus.selection import choose_pairs
from audits.corpus.synthetic import synthesize
from audits.errors import UserError
from audits.protocol.saved import read_results
from audits.report.inputs import named_pairs
from audits.report.render import render_reports

PARAMETERS = {"n_boot": 10, "n_boot_rank": 5}


def _corpus():
    corpus = synthesize(n_problems=5, n_tests=2, n_solutions=5, n_repeats=3, n_incorrect=0, n_candidates=0,
                        environments=("quiet", "lab"), busy=True,
                        campaigns=(("old", 1.0, 0.0), ("new", 0.8, 0.01)), seed=4).corpus
    corpus["timestamp"] = corpus["campaign"].astype(str).map({"old": "2026-01-01", "new": "2026-02-01"})
    return corpus.astype({"timestamp": object})


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("pairs") / "three.parquet"
    save_corpus(_corpus(), path)
    return path


def _markdown(notebook_path) -> str:
    """The executed notebook's Markdown outputs as a reader sees them (the narrative writes ``&``, ``<``, ``>`` of its text as
    character references: audits.report.narrative.common.without_raw_html)."""
    notebook = json.loads(Path(notebook_path).read_text())
    return html.unescape("\n".join("".join(out.get("data", {}).get("text/markdown", "")) for cell in notebook["cells"]
                                   for out in cell.get("outputs", ())))


def _text(path) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _titles(choices) -> list[str]:
    return [f"{c.source} → {c.target} ({c.rule})" for c in choices]


def test_the_report_calibrates_every_default_pair(corpus_path, tmp_path):
    expected = _titles(choose_pairs(_corpus()))
    assert len(expected) == 7 and {t.rsplit("(", 1)[1] for t in expected} == {"stored->fresh)", "vs-quietest)"}
    index = render_reports([corpus_path], out_dir=tmp_path / "out", audits=["calibration"], progress=None,
                           parameters=PARAMETERS)
    (page,) = index.reports
    text = _markdown(page.notebook)
    for k, title in enumerate(expected, 1):  # one section per pair, in the rule's order
        assert f"## Pair {k} of 7: {title}" in text, title
    assert text.count("Pair chosen by the rule `stored->fresh`") == 3
    assert text.count("Pair chosen by the rule `vs-quietest`") == 4
    assert "chosen by the rule `default pairs`" in text
    assert [s["title"] for s in page.sections] == expected  # the index names every pair
    shown = _text(index.path)
    assert "7 sections" in shown and all(title in shown for title in expected)


def test_a_pair_named_with_the_pair_flag_is_the_only_one(corpus_path, tmp_path):
    out = tmp_path / "out"
    status = main(["report", str(corpus_path), "--out", str(out), "--audit", "calibration", "-p", "n_boot=10",
                   "-p", "n_boot_rank=5", "--pair", "lab", "old", "busy", "new"])
    assert status in (0, 1)
    text = _markdown(out / "calibration.ipynb")
    assert "## Pair 1 of 1: lab · old → busy · new (named)" in text and "Pair 2" not in text
    assert "chosen by the rule `named pairs`" in text


def test_a_pair_named_by_the_report_parameter_is_the_only_one(corpus_path, tmp_path):
    index = render_reports([corpus_path], out_dir=tmp_path / "out", audits=["calibration"], progress=None,
                           parameters={**PARAMETERS, "pairs": [[["quiet", "new"], ["quiet", "old"]]]})
    text = _markdown(index.reports[0].notebook)
    assert "## Pair 1 of 1: quiet · new → quiet · old (named)" in text and "Pair 2" not in text


def test_named_pairs_are_validated_as_the_calibration_option():
    with pytest.raises(UserError, match="calibration option pairs must be a list of"):
        named_pairs([[["quiet"], ["busy", "old"]]])
    with pytest.raises(UserError, match="fresh_run is not named"):
        named_pairs(stored_run=["quiet", "old"])


def test_saved_results_of_audit_all_hold_every_default_pair(corpus_path, tmp_path):
    path = tmp_path / "all.json"
    assert main(["audit", "all", str(corpus_path), "--n-boot", "10", "--simulation-environment", "quiet",
                 "--json", str(path)]) in (0, 1)
    pairs = read_results(path).value("pairs")
    assert [f"{a.source_runs[0].run} → {a.target_runs[0].run} ({a.pair_rule})" for a in pairs] == _titles(
        choose_pairs(_corpus()))
    doc = json.loads(path.read_text())
    assert {one["run_rule"] for one in doc["calibration"]} == {"default pairs"}
    assert doc["reliability"]["run_rule"] == "every run" and doc["simulation"]["run_rule"] == "one run"
