"""Render every report notebook with papermill on a small synthetic corpus and check the HTML.

Real kernels, real files: each template is executed once (module fixture) in the venv's python3
kernel, converted by nbconvert, and the HTML is checked for the *values* the audit functions return
for the same corpus, the verdict words, embedded figures, hidden code, and the index links.
"""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from audits.cli import main as cli_main
from audits.corpus.io import save_corpus
from audits.report.narrative import format_interval
from audits.report.render import ReportError, default_audits, export_html, render_notebook, render_reports
from audits.report.inputs import load_corpora
from audits.corpus.synthetic import synthesize
from audits.report.results import RESULTS_FILE
from tests.report.test_report_once import _kernel_calls, count_calls

pytestmark = pytest.mark.slow  # a minute or more under make test's load: a report set rendered (module fixture)

N_BOOT = 50


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    """Quiet + busy environments, two campaigns (drift), candidates and incorrect solutions: small."""
    synth = synthesize(n_problems=8, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                       n_candidates=2, n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                       seed=11)
    path = tmp_path_factory.mktemp("corpus") / "small.parquet"
    save_corpus(synth.corpus, path)
    return path


@pytest.fixture(scope="module")
def rendered_counted(corpus_path, tmp_path_factory):
    """``(index, out, progress lines, audit calls in this process, audit calls in the pages' kernels)``: the one
    report set of this module, rendered with the audit functions counted where they run
    (tests/report/test_report_once.py's :func:`count_calls`; undone once the set is rendered)."""
    out = tmp_path_factory.mktemp("reports")
    lines = []
    with pytest.MonkeyPatch.context() as mp:
        log, here = count_calls(mp, tmp_path_factory.mktemp("counting"))
        index = render_reports([corpus_path], out_dir=out, parameters=report_parameters(), progress=lines.append)
    return index, out, lines, list(here), _kernel_calls(log)


@pytest.fixture(scope="module")
def rendered(rendered_counted):
    index, out, lines, _here, _kernel = rendered_counted
    return index, out, lines


def report_parameters() -> dict:
    """The synthetic corpus's names for the runs each report compares."""
    return {"n_boot": N_BOOT, "n_boot_rank": 20, "seed": 0, "stored_run": "quiet/c0", "fresh_run": "quiet/c1",
            "source_run": "quiet/c0", "target_run": "busy/c0", "aggregation_environment": "quiet", "aggregation_campaign": "c0",
            "simulation_environment": "quiet", "simulation_campaign": "c0"}


@pytest.fixture(scope="module")
def corpus(corpus_path):
    return load_corpora([corpus_path])


def _page(out: Path, name: str) -> str:
    return (out / f"{name}.html").read_text(encoding="utf-8")


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.imgs = [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        if tag == "img":
            self.imgs.append(attrs.get("src", ""))


def _parse(text: str) -> _Links:
    parser = _Links()
    parser.feed(text)
    return parser


def _text(page: str) -> str:
    """Visible text of an HTML page (tags dropped, entities decoded, whitespace collapsed)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def _code_text(page: str) -> str:
    """Text with tags removed without spacing (syntax highlighting splits code into many spans)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_every_default_report_rendered_with_progress(rendered):
    index, out, lines = rendered
    names = [r.name for r in index.reports]
    assert names == list(default_audits())
    for report in index.reports:
        assert report.html == out / f"{report.name}.html" and report.html.stat().st_size > 0
        executed = nbformat.read(report.notebook, as_version=4)
        assert any("injected-parameters" in c.metadata.get("tags", []) for c in executed.cells)
        assert all(not any(o.get("output_type") == "error" for o in c.get("outputs", [])) for c in executed.cells)
    # pages render side by side and report as each finishes, so the lines come in any order; each page's own
    # number and name appear once
    assert sorted((line.split(":")[0] for line in lines if "->" in line),
                  key=lambda head: int(head[1:head.index("/")])) == [
        f"[{i}/{len(names)}] {n}" for i, n in enumerate(names, 1)]
    assert not list(out.glob(".*.tmp")) and not list(out.glob(".*.running.ipynb"))


def test_report_computes_each_audit_once(rendered_counted):
    """`speedaudit report` computes each audit once: the pages read the shared results (moved here from
    tests/report/test_report_once.py, whose counters it uses, to read this module's report set)."""
    index, out, lines, here, kernel_calls = rendered_counted
    assert not index.failed
    assert len(index.reports) == 7
    # a page starts once its own results are computed, before the others': the clocks page before the reliability
    # results are computed, the overview (every result) after the last
    at = {key: next(i for i, line in enumerate(lines) if key in line)
          for key in ("clocks: executing", "computed reliability", "computed pairs", "overview: executing")}
    assert at["clocks: executing"] < min(at["computed reliability"], at["computed pairs"])
    assert max(at["computed reliability"], at["computed pairs"]) < at["overview: executing"]
    assert sum("computed" in line for line in lines) == 6  # six batches, each result in one (8 results, 7 pages)
    # every audit once, in this process: calibration twice (stored -> fresh, and across environments)
    assert sorted(here) == sorted(["reliability.combine_parts", "discriminability.combine_parts",
                                   "calibration.combine_pair", "calibration.combine_pair", "aggregation.combine_parts",
                                   "simulation.combine_parts", "clocks.run_clocks_audit", "compare.run_compare_audit"])
    # no page ran a shared audit or read the corpus: the clocks page renders from the saved clock results and the
    # paired comparison (here n/a: no verdict folders) is a shared result like the others
    assert kernel_calls == []
    assert not list(out.glob(f"*{RESULTS_FILE}"))  # the pages' hand-over files are removed afterwards


def test_index_links_every_report_with_its_verdict(rendered):
    index, out, _ = rendered
    page = index.path.read_text()
    links = _parse(page).hrefs
    for report in index.reports:
        assert f"{report.name}.html" in links and f"{report.name}.ipynb" in links
        assert (out / f"{report.name}.html").exists()
    text = _text(page)
    for report in index.reports:
        c = report.counts()
        assert f"{c['fail']} fail, {c['warn']} warn, {c['pass']} pass" in text or not report.findings
    # the overview links the choice-of-clock page (it has no verdict of its own to list there)
    assert "clocks.html" in _parse(_page(out, "overview")).hrefs


def test_code_hidden_by_default_and_shown_on_request(rendered):
    index, out, _ = rendered
    for report in index.reports:
        page = report.html.read_text(encoding="utf-8")
        assert "open_page(results_path, corpora" not in _code_text(page) and 'class="highlight' not in page
    # --show-code converts the same executed notebook with its inputs (no second kernel run needed).
    executed = nbformat.read(out / "aggregation.ipynb", as_version=4)
    shown = export_html(executed, show_code=True)
    # the page reads the shared results (and the corpus only for a result not stored)
    assert "results = open_page(results_path, corpora" in _code_text(shown) and 'class="highlight' in shown
    hidden = export_html(executed)
    assert _parse(hidden).imgs == _parse(shown).imgs  # same outputs either way


def test_failing_cell_names_notebook_cell_and_parameters(tmp_path, corpus_path):
    (tmp_path / "aggregation.html").write_text("stale")  # a stale report of the same name must not survive
    missing = str(tmp_path / "no-such-corpus.parquet")
    with pytest.raises(ReportError) as info:
        render_notebook("aggregation", tmp_path, parameters={"corpora": [missing], "n_boot": 7})
    message = str(info.value)
    assert "aggregation.py" in message  # the template the user edits
    assert "open_page(results_path, corpora" in message and re.search(r"at cell 4 of aggregation\.py", message)
    assert "n_boot=7" in message and missing in message and "not found" in message
    assert not (tmp_path / "aggregation.html").exists()
    assert (tmp_path / "aggregation.ipynb").exists()  # executed notebook with the traceback kept
    assert not list(tmp_path.glob(".aggregation*"))


def test_cli_rejects_unknown_parameter_before_running(corpus_path, tmp_path, capsys):
    status = cli_main(["report", str(corpus_path), "-p", "n_bootz=3", "--out", str(tmp_path)])
    assert status == 1
    err = capsys.readouterr().err
    assert "n_bootz" in err and "known parameters" in err and "n_boot" in err
    assert not list(tmp_path.iterdir())


def test_reliability_values_in_html_equal_the_audit(rendered, corpus):
    from audits.checks.discriminability import run_discriminability_audit
    from audits.checks.reliability import run_reliability_audit

    _, out, _ = rendered
    text = _text(_page(out, "reliability"))
    audit = run_reliability_audit(corpus, n_boot=N_BOOT, seed=0)
    # every run (environment, campaign) on its own, named with its repeat count
    assert {(r.environment, r.campaign) for r in audit.runs} == {(e, c) for e in ("quiet", "busy") for c in ("c0", "c1")}
    for run, env in audit.runs.items():
        cv = format_interval(env.median_repeat_cv)
        assert f"{run} ({env.n_repeats} repeats): the median repeat CV is {cv}" in text
    # The planted busy worker is the noisier environment, and the report says so with its verdict.
    quiet, busy = audit.result("quiet", "c0"), audit.result("busy", "c0")
    assert busy.median_repeat_cv.estimate > 3 * quiet.median_repeat_cv.estimate
    assert "Too noisy" in text and "FAIL" in text
    disc = run_discriminability_audit(corpus, n_boot=N_BOOT, seed=0)
    for env in disc.runs.values():
        assert f"{format_interval(env.filterable_share)}" in text
        assert f"{format_interval(env.gap.gap)} points worse" in text
    # No cpu_s in this corpus: contention is not measurable, and the page says why for every run
    # (tests/report/test_clocks_page.py plants a contended run).
    for run in audit.runs:
        assert re.search(rf"{re.escape(str(run))}\s*: contention n/a: the corpus has no cpu_s column", text), run


def test_calibration_values_in_html_equal_the_audit(rendered, corpus):
    from audits.checks.calibration import run_calibration_audit
    from stats.ranking import select_runs

    _, out, _ = rendered
    text = _text(_page(out, "calibration"))
    audit = run_calibration_audit(select_runs(corpus, environment="quiet"), source="c0", target="c1",
                                  n_boot=N_BOOT, n_boot_rank=20, seed=0)
    aff = audit.params[audit.params["family"] == "affine"].set_index("param")
    slope = aff.loc["slope"]
    assert f"c1 ≈ {slope['estimate']:.3f} [{slope['ci_low']:.3f}, {slope['ci_high']:.3f}] × c0" in text
    # The planted drift (slope 0.63, +53 ms) is what the report prints, to its CI.
    assert slope["ci_low"] - 0.02 < 0.63 < slope["ci_high"] + 0.02
    best = audit.fits.set_index("name").loc[audit.best_family]
    assert f"The family with the lowest held-out log error, {audit.best_family}" in text
    assert f"log-RMSE {best['lopo_log_rmse']:.3f}" in text and f"LOPO R² = {best['lopo_r2']:.3f}" in text
    # what to do is the audit's own advice, derived from its findings (the JSON's "advice")
    from audits.checks.calibration import calibration_advice
    assert calibration_advice(audit).split(";")[0].replace("`", "") in text


def test_aggregation_and_simulation_values_in_html(rendered, corpus):
    import ast

    from audits.checks.aggregation import run_aggregation_audit
    from audits.checks.reward_environments import load_reward_environments
    from audits.report.render import template_parameters, template_path
    from audits.report.inputs import repo_root
    from audits.checks.simulation import run_simulation_audit

    _, out, _ = rendered
    agg = run_aggregation_audit(corpus, environment="quiet", campaign="c0", n_boot=N_BOOT, seed=0)
    text = _text(_page(out, "aggregation"))
    assert f"The recommended aggregator is {agg.recommended}" in text
    assert len(_parse(_page(out, "aggregation")).imgs) == 1
    files = ast.literal_eval(template_parameters(template_path("simulation"))["reward_environment_files"]["default"])
    envs = load_reward_environments([repo_root() / f for f in files])
    sim = run_simulation_audit(corpus, reward_environments=envs, environment="quiet", campaign="c0",
                               seed=0, n_boot=N_BOOT)
    text = _text(_page(out, "simulation"))
    best = sim.diagnostics.iloc[0]
    assert f"The best reward environment is {best['reward_environment']} ({best['verdict']})" in text


def test_figures_are_embedded_png_data_uris(rendered):
    index, out, _ = rendered
    expected = {"reliability": 4, "calibration": 4, "aggregation": 1, "simulation": 2, "overview": 0,
                "clocks": 0,  # no cpu_s in this corpus: the clocks figures are not drawn (tests/report/test_clocks_page.py)
                "compare": 0}  # no candidate sets named accepted/time_limit_exceeded: n/a (tests/report/test_compare_page.py)
    for report in index.reports:
        page = report.html.read_text(encoding="utf-8")
        imgs = _parse(page).imgs
        assert len(imgs) == expected[report.name], report.name
        for src in imgs:
            assert src.startswith("data:image/png;base64,")
            assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
        assert not re.search(r"<(script|link|img)[^>]+(src|href)=[\"']https?://", page), report.name


def test_index_headline_is_the_worst_of_every_finding(rendered, corpus):
    from audits.protocol.findings import worst_level
    from audits.checks.reliability import run_reliability_audit

    index, out, _ = rendered
    by_name = {r.name: r for r in index.reports}
    audit = run_reliability_audit(corpus, n_boot=N_BOOT, seed=0)
    reliability_metrics = [f["metric"] for f in by_name["reliability"].findings]
    assert set(f.metric for f in audit.findings) <= set(reliability_metrics)
    overview = by_name["overview"]
    # The overview repeats every audit's findings, so its counts are the sum of the others'.
    for level in ("fail", "warn", "pass"):
        assert overview.counts()[level] == sum(by_name[n].counts()[level] for n in by_name if n != "overview")
    levels = ("pass", "warn", "fail")
    # the clocks audit's own recommendation (issue 23: a finding like every audit's); n/a here, no cpu_s
    assert [(f["metric"], f["level"]) for f in by_name["clocks"].findings] == [("clock_agreement", "n/a")]
    assert by_name["compare"].worst == "n/a"  # no candidate sets in this corpus: one n/a finding with the reason
    assert overview.worst == max((by_name[n].worst for n in by_name if n != "overview" and by_name[n].findings
                                  and by_name[n].worst in levels), key=levels.index)
    assert audit.result("busy", "c0") and worst_level(audit.findings) == by_name["reliability"].worst or \
        by_name["reliability"].worst == "fail"  # reliability + discriminability share the report
    page = _text(index.path.read_text())
    assert "FAIL" in page and "WARN" in page and "PASS" in page


def test_demo_says_why_collection_failed_and_what_to_do(tmp_path, capfd):
    from audits.report import demo

    suite = tmp_path / "empty-suite"  # a folder without problem packages: the real collector refuses it
    suite.mkdir()
    status = demo.main(["--out", str(tmp_path / "out"), "--suite", str(suite), "--problems", "all"])
    assert status == 1
    captured = capfd.readouterr()
    assert "collecting the quiet run failed" in captured.out and "what to do" in captured.out
    assert "speedaudit report fixtures/corpora/*.parquet --out reports" in captured.out
    assert "audits.cli collect " + str(suite) in captured.out  # the command to rerun by hand
    assert not (tmp_path / "out" / "index.html").exists()
