"""The paired-comparison page shows the names it quotes as written: the runs, the sets, and the audit's n/a reason.

``audits.report.compare_page`` pasted them into its Markdown as they were: a run ``*qa*`` showed in italics in the
win-rate list, the solution prefixes the n/a reason lists (``**bad**/s0.py`` gives the prefix ``**bad**``) were bold,
and a set named with a backtick broke its code span. Checked on nbconvert's own Markdown renderer.
"""

from __future__ import annotations

import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from audits.checks.compare import run_compare_audit
from audits.corpus.synthetic_pairs import synthesize_pairs
from audits.errors import UserError
from audits.report.compare_page import describe_compare
from tests.edges.test_nm_audit_text import _Page


def _corpus(**names):
    corpus = synthesize_pairs(n_problems=6, share_a=0.625, share_tie=0.25, n_fail_b=1, seed=4).corpus.copy()
    for column, mapping in names.items():
        corpus[column] = corpus[column].map(lambda v, m=mapping: m(v))
    return corpus


def _rendered(markdown) -> _Page:
    return _Page(markdown2html_mistune(markdown._repr_markdown_()))


@pytest.mark.parametrize("prefix", ["**bad**", "*x*", "`t`", "[l](y.html)"])
def test_the_n_a_reason_lists_the_prefixes_as_written(prefix):
    corpus = _corpus(solution=lambda s: f"{prefix}/{s.split('/', 1)[1]}" if s.startswith("B/") else s)
    with pytest.raises(UserError) as caught:
        run_compare_audit(corpus, a="missing", b="B", n_boot=0, source="the corpus")
    reason = str(caught.value)
    assert prefix in reason  # the audit lists the prefixes it found
    page = _rendered(describe_compare(reason))
    assert f"The comparison is n/a: {reason}." in page.text
    # the page's own markup: its bold lead and the code spans of the options it names; none from a prefix
    assert [text for tag, _, text in page.elements if tag == "strong"] == ["The comparison is n/a"]
    assert not {"em", "a"} & {tag for tag, _, _ in page.elements}


@pytest.mark.parametrize("name", ["*qa*", "`t1`", "[x](y.html)"])
def test_the_runs_and_the_sets_are_shown_as_written(name):
    corpus = _corpus(environment=lambda _: name,
                     solution=lambda s: f"{name}/{s.split('/', 1)[1]}" if s.startswith("A/") else s)
    audit = run_compare_audit(corpus, a=name, b="B", n_boot=0)
    page = _rendered(describe_compare(audit))
    assert f"A = {name}, B = B." in page.text
    assert f"{name} · c0: win rate of A over B" in page.text
    assert not {"em", "a"} & {tag for tag, _, _ in page.elements}, page.elements
