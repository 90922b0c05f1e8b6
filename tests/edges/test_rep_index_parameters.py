"""The index page writes parameters and findings as the command line does.

Found on a report of a real archive (oj-lab/problem-packages): the index listed ``pairs = None``,
``stored_run = None``, ... (an option left to its automatic choice reads ``automatic``, as ``--help`` says:
"default: automatic"), and an n/a finding as ``clock_agreement = -: not measured: ...``.
"""

from __future__ import annotations

from audits.protocol.findings import Finding
from audits.report.render import RenderedReport, write_index


def test_none_reads_automatic_and_values_keep_their_repr(tmp_path):
    page = write_index([], tmp_path, parameters={"pairs": None, "n_boot": 10, "campaign": "c0"}).read_text()
    assert "pairs = automatic" in page and "None" not in page
    assert "n_boot = 10" in page and "campaign = &#x27;c0&#x27;" in page


def test_an_n_a_finding_on_the_index_reads_metric_colon_reason(tmp_path):
    """The index wrote "clock_agreement = -: not measured: ..." (a real archive's report): an n/a finding has no
    value, so it reads "clock_agreement: not measured: ...", as the pages write it; a judged one keeps "= value"."""
    na = Finding.not_available("clock_agreement", "no problem has two solutions scored under both clocks")
    judged = Finding("fail", "median_repeat_cv", 0.442, "fail >= 0.25", "timings vary", environment="e")
    report = RenderedReport("clocks", "Clocks", None, None, findings=(na.to_dict(), judged.to_dict()))
    page = write_index([report], tmp_path).read_text()
    assert "<code>clock_agreement</code>: not measured: no problem has two" in page, page
    assert "= -" not in page and "<code>median_repeat_cv</code> = 0.442: timings vary" in page
