"""The paired-comparison page (notebooks/compare.py) executed by real papermill and converted by nbconvert.

On a corpus of two candidate sets with a planted win rate the page shows the audit's figures (read back
from the HTML and compared with :func:`audits.checks.compare.run_compare_audit` computed here) and one
figure; on a corpus without the sets it says n/a with the reason and draws nothing, without an error cell.
"""

from __future__ import annotations

import html
import re

import nbformat
import pytest

from audits.checks.compare import run_compare_audit
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic import synthesize
from audits.corpus.synthetic_pairs import synthesize_pairs
from audits.report.narrative import format_value
from audits.report.render import render_notebook

N_BOOT = 200


def _text(page: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _errors(nb) -> list:
    return [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"
            or (o.get("output_type") == "stream" and o.get("name") == "stderr")]


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-page")
    synth = synthesize_pairs(n_problems=24, share_a=0.625, share_tie=0.25, n_fail_b=1, seed=4)
    path = save_corpus(synth.corpus, root / "pairs.parquet")
    report = render_notebook("compare", root / "out", parameters={
        "corpora": [str(path)], "compare_a": "A", "compare_b": "B", "n_boot": N_BOOT, "seed": 0})
    return path, synth, report


def test_the_page_shows_the_audit_values(planted):
    path, synth, report = planted
    nb = nbformat.read(report.notebook, as_version=4)
    assert _errors(nb) == []
    page = report.html.read_text(encoding="utf-8")
    text = _text(page)
    audit = run_compare_audit(load_corpus(path), a="A", b="B", n_boot=N_BOOT, seed=0)
    (run,) = audit.runs
    iv = run.result.win_rate
    assert iv.low <= synth.planted_win_rate <= iv.high
    interval = f"{format_value(iv.estimate)} [{format_value(iv.low)}, {format_value(iv.high)}]"
    assert (f"synthetic · c0 : win rate of A over B {interval} over 24 problems; {run.result.n_undecided:,} of "
            f"{run.result.n_comparisons:,} comparisons undecided") in text
    assert f"pass rate A 1, B {format_value(0.5)}" in text
    assert text.count(interval) >= 2  # the headline and the runs table
    assert len(re.findall(r'<img[^>]+src="data:image/png;base64,', page)) == 1
    assert [(f.metric, f.level) for f in report.findings] == [("win_rate", "pass"), ("shared_execution", "pass")]
    # the per-problem table: one row per problem with its win rate
    for row in run.result.problems.itertuples(index=False):
        assert row.problem in text


def test_without_the_sets_the_page_says_na(tmp_path):
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=2, seed=0).corpus
    path = save_corpus(corpus, tmp_path / "plain.parquet")
    report = render_notebook("compare", tmp_path / "out", parameters={"corpora": [str(path)], "n_boot": 50})
    nb = nbformat.read(report.notebook, as_version=4)
    assert _errors(nb) == []
    text = _text(report.html.read_text(encoding="utf-8"))
    assert "The comparison is n/a : the corpus: set A (the solution prefix 'accepted') names no execution" in text
    assert "-p compare_a=VALUE -p compare_b=VALUE" in text
    assert "Figure not drawn: the comparison is n/a" in text
    assert [f.level for f in report.findings] == ["n/a"]
