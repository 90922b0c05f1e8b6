"""Names quoted in what an audit wrote (a finding's message, an n/a reason, a calibration's advice) reach the page as
data, shown as written.

The narrative isolated the names it writes itself (``audits.report.narrative.common.as_name``), but pasted the audits'
own text into its Markdown as it was: a calibration from ``busy`` onto a run named ``*qa*`` said "busy cannot stand in
for qa" in italics, a target ``[x](y.html)`` was a link, ``$m$`` was math, backticks made a code span, and a source
named with a right-to-left override (U+202E) reversed the rest of the advice. The rule now
(``audits.report.narrative.common.audit_text``): an audit's text is plain text, written literally, each word holding
a bidi control isolated on its own; ordinary text reaches the page byte for byte as the JSON has it.

Checked here on nbconvert's own Markdown renderer (parsed HTML); ``test_nm_report_messages.py`` renders the pages.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from audits.checks.calibration import calibration_advice, run_calibration_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import Finding
from audits.report.narrative import Markdown, describe_overview, describe_not_measured
from audits.report.narrative.calibration import calibration_verdicts, describe_calibration
from audits.report.narrative.common import FSI, PDI, audit_text, show_findings

ISOLATES = dict.fromkeys(map(ord, "\u2066\u2067\u2068\u2069"))

#: Target names, each what Markdown (or the renderer's url plugin) reads as more than text.
TARGETS = ["*qa*", "`t1`", "[x](y.html)", "_u_", "$m$ c0", "# h", "p|1|", "http://h.example/x", "**b** ~~s~~",
           "a\\`b`"]


class _Page(HTMLParser):
    """The tags of an HTML fragment with the text inside each, and the whole text."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.elements, self._open, self._text = [], [], []
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self._open.append([tag, dict(attrs), ""])

    def handle_endtag(self, tag):
        while self._open:
            element = self._open.pop()
            self.elements.append(tuple(element))
            if self._open:
                self._open[-1][2] += element[2]
            if element[0] == tag:
                break

    def handle_data(self, data):
        self._text.append(data)
        if self._open:
            self._open[-1][2] += data

    @property
    def text(self) -> str:
        return "".join(self._text).translate(ISOLATES)


def _rendered(markdown: str) -> _Page:
    return _Page(markdown2html_mistune(Markdown(markdown)._repr_markdown_()))


def _calibration(target: str):
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=3, environments=("quiet",), busy=True,
                        seed=3).corpus.copy()
    corpus["environment"] = corpus["environment"].astype(str).map({"quiet": target, "busy": "busy"})
    return run_calibration_audit(corpus, source="busy", target=target, n_boot=20, n_boot_rank=20)


@pytest.mark.parametrize("target", TARGETS)
def test_the_calibration_advice_shows_its_names_as_written(target):
    audit = _calibration(target)
    advice = calibration_advice(audit)
    assert target in advice  # the audit quotes the name (the terminal and JSON text)
    page = _rendered(describe_calibration(audit))
    assert f"What to do: {advice}." in page.text
    # the narrative's own markup only: bold leads, the formula's and the source's code spans; nothing from a name
    tags = {tag for tag, _, _ in page.elements}
    assert tags <= {"p", "strong", "code"}, page.elements
    assert [text for tag, _, text in page.elements if tag == "code"][:1] == ["busy"]


@pytest.mark.parametrize("target", ["*qa*", "[x](y.html)", "`t1`"])
def test_the_overview_quotes_the_worst_message_as_written(target):
    audit = _calibration(target)
    verdicts = calibration_verdicts([audit])
    worst = next(f for f in audit.findings if f.level == "fail" and target in f.message)
    page = _rendered(describe_overview(verdicts))
    assert worst.message in page.text
    assert {tag for tag, _, _ in page.elements} <= {"p", "strong"}, page.elements


def test_an_n_a_reason_quoting_a_name_is_shown_as_written():
    reasons = ["no reference of *p0* or `p1` ran ok", "problems [p2](y.html), _p3_ have one test"]
    findings = [Finding.not_available("icc", reason, environment="busy", campaign="c0") for reason in reasons]
    page = _rendered(describe_not_measured({"sandbox reliability": findings}))
    assert all(reason in page.text for reason in reasons), page.text
    assert {tag for tag, _, _ in page.elements} == {"p", "strong"}, page.elements


def test_an_override_in_a_quoted_name_ends_with_its_word():
    text = "b\u202eRTL cannot stand in for quiet; time on quiet itself"
    written = audit_text(text)
    assert written.translate(ISOLATES) == text
    # outside the word that holds it, nothing is inside an isolate but the whole text's own
    depth, levels = 0, []
    for char in written:
        depth += char in "\u2066\u2067\u2068"
        depth -= char == PDI
        levels.append((char, depth))
    after = "".join(char for char, d in levels if d == 1 and char not in (FSI, PDI))
    assert after == " cannot stand in for quiet; time on quiet itself"
    assert depth == 0


def test_ordinary_text_is_the_json_text_byte_for_byte():
    for text in ("busy cannot stand in for quiet; time on quiet itself", "3 repeats per cell: p = 1/20 = 0.05",
                 "a_b $5 <i> ~x~ \\ & done"):
        assert audit_text(text) == text


def test_the_findings_table_isolates_an_override_in_a_message():
    message = "b\u202eRTL cannot stand in for quiet"
    display = show_findings([Finding("fail", "best_lopo_log_rmse", 0.8, 0.25, message)], audit="calibration")
    cells = [text for tag, _, text in _Page(display._repr_html_()).elements if tag == "td"]
    assert message in [cell.translate(ISOLATES) for cell in cells]
    (cell,) = [c for c in cells if "RTL" in c]
    assert cell.index(PDI) < cell.index(" cannot")  # the override's isolate is closed before the text after it
