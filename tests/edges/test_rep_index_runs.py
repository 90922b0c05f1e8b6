"""The index page names each finding's run as the pages do (environment · campaign), never by its environment alone.

write_index labelled a finding ``[environment]``: the findings of runs ``quiet · 001`` and ``quiet · 1`` (campaign
names that look like one number, kept apart as written) read as two identical lines, and which run failed was
lost. The label is now the finding's own (``audits.protocol.findings.where_label``, what ``Finding.where`` and the
page's table show). Checked on a real rendered reliability page and its index, parsed.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

ENV = "Quiet <b>&amp;</b> q"


class _Items(HTMLParser):
    """Text of every ``li`` of the index's finding lists."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.items, self._depth = [], 0
        self.feed(document)

    def handle_starttag(self, tag, attrs):
        if tag == "li":
            self.items.append("")
            self._depth += 1

    def handle_endtag(self, tag):
        self._depth -= tag == "li"

    def handle_data(self, data):
        if self._depth:
            self.items[-1] += data


@pytest.mark.slow
def test_index_names_each_finding_by_its_run(tmp_path):
    from audits.report.render import render_reports, write_index

    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=4, n_repeats=3, environments=(ENV,),
                        campaigns=(("001", 1.0, 0.0), ("1", 1.0, 0.0)), seed=5).corpus
    assert set(corpus["campaign"].astype(str)) == {"001", "1"}
    path = save_corpus(corpus, tmp_path / "runs.parquet")
    index = render_reports([path], out_dir=tmp_path / "out", audits=["reliability"], progress=None,
                           parameters={"n_boot": 20, "seed": 0})
    (report,) = index.reports
    findings = [f for f in report.findings if f.get("environment") is not None]
    runs = {(f["environment"], f["campaign"]) for f in findings}
    assert runs == {(ENV, "001"), (ENV, "1")}
    page = write_index(index.reports, tmp_path / "all", top=len(report.findings))
    # a finding's line: "[run] metric = value: message", an n/a one "[run] metric: not measured: ..."
    items = [i for i in _Items(page.read_text(encoding="utf-8")).items if "[" in i]
    assert len(items) == len(report.findings)
    for env, camp in runs:  # each run's findings under its own label, as written ("001" is not "1")
        mine = [f for f in findings if (f["environment"], f["campaign"]) == (env, camp)]
        shown = [i for i in items if f"[{env} · {camp}]" in i]
        assert len(shown) == len(mine) and {re.match(r"\s*(\w+)", i.split("]", 1)[1]).group(1) for i in shown} == {
            f["metric"] for f in mine}
