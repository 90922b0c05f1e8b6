"""`speedaudit report --results FILE` renders from a saved `speedaudit audit all --json FILE` without
recomputing: every audit function is counted in this process and in every page's kernel (the ``counting``
fixture of test_report_once.py: a real ``sitecustomize`` on the kernels' PYTHONPATH), and none runs; the
pages show the saved findings. Real commands, real kernels."""

from __future__ import annotations

import json

import pytest

from audits.cli._main import main
from audits.errors import UserError
from audits.protocol.saved import read_results
from audits.report.render import render_reports
from tests.report.test_report_once import _kernel_calls, corpus_path, counting  # noqa: F401 -- fixtures

pytestmark = pytest.mark.slow  # a minute or more under make test's load: a report set rendered from saved results

ALL = ["--n-boot", "30", "--pair-environment", "quiet", "--source-campaign", "c0", "--target-campaign", "c1",
       "--simulation-environment", "quiet", "--simulation-campaign", "c0"]


@pytest.fixture(scope="module")
def saved(corpus_path, tmp_path_factory):  # noqa: F811 -- the fixture imported above
    path = tmp_path_factory.mktemp("saved") / "all.json"
    assert main(["audit", "all", str(corpus_path), *ALL, "--json", str(path)]) == 0
    return path


def test_audit_all_json_is_the_plain_json_and_the_saved_results(saved):
    doc = json.loads(saved.read_text(encoding="utf-8"))
    assert doc["audit"] == "all" and doc["reliability"]["audit"] == "reliability"  # each audit's own JSON, as before
    results = read_results(saved)
    assert results.meta["saved"] and {"reliability", "discriminability", "pairs", "aggregation", "simulation",
                                      "clocks", "corpus_summary"} <= set(results.names())
    assert [f.to_dict() for f in results.value("reliability").findings] == doc["reliability"]["findings"]


def test_report_from_saved_results_computes_nothing(saved, tmp_path, counting):  # noqa: F811
    log, here = counting
    # one render slot: every page in one kernel (one kernel start, not two); pages in slots side by side are
    # tests/report/test_report.py's
    index = render_reports(None, results=saved, out_dir=tmp_path / "out", progress=None, workers=1)
    assert not index.failed
    assert [r.name for r in index.reports] == ["overview", "reliability", "clocks", "calibration", "aggregation",
                                                     "simulation", "compare"]
    assert here == [] and _kernel_calls(log) == []  # no audit here, none in any page, and no page read the corpus
    results = read_results(saved)
    page = {r.name: {(f["metric"], f["level"], f.get("environment"), f.get("campaign")) for f in r.findings}
            for r in index.reports}
    for name, audit in (("reliability", "reliability"), ("reliability", "discriminability"),
                        ("calibration", "pairs"), ("aggregation", "aggregation"), ("simulation", "simulation"),
                        ("clocks", "clocks")):
        value = results.value(audit)
        found = [f for one in value for f in one.findings] if audit == "pairs" else value.findings  # every pair
        shown = {(f.metric, f.level, f.environment, f.campaign) for f in found}
        assert shown and shown <= page[name], (name, audit)
        assert shown <= page["overview"], ("overview", audit)  # the overview's verdicts hold every audit's, clocks too
    overview = (tmp_path / "out" / "overview.html").read_text(encoding="utf-8")
    assert "clocks is not in the saved results" not in overview  # every audit of audit all is saved, clocks too


def test_saved_results_are_the_only_input(saved, corpus_path, tmp_path):  # noqa: F811
    with pytest.raises(UserError, match="not both"):
        render_reports([corpus_path], results=saved, out_dir=tmp_path / "out", progress=None)
    plain = tmp_path / "reliability.json"
    assert main(["audit", "reliability", str(corpus_path), "--n-boot", "30", "--json", str(plain)]) == 0
    with pytest.raises(UserError, match=r"reliability\.json.*audit all"):
        render_reports(None, results=plain, out_dir=tmp_path / "out", progress=None)
