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
from audits.corpus import save_corpus
from audits.report import ReportError, default_audits, load_corpora, render_notebook, render_reports
from audits.synthetic import synthesize

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
def rendered(corpus_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    lines = []
    index = render_reports([corpus_path], out_dir=out, parameters=report_parameters(), progress=lines.append)
    return index, out, lines


def report_parameters() -> dict:
    return {"n_boot": N_BOOT}


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
    assert [line.split(":")[0] for line in lines if "->" in line] == [
        f"[{i}/{len(names)}] {n}" for i, n in enumerate(names, 1)]
    assert not list(out.glob(".*.tmp")) and not list(out.glob(".*.running.ipynb"))


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


def test_code_hidden_by_default_and_shown_on_request(rendered, corpus_path, tmp_path):
    index, out, _ = rendered
    page = (out / "overview.html").read_text()
    assert "load_corpora(corpora)" not in _code_text(page) and 'class="highlight' not in page
    shown = render_notebook("overview", tmp_path, parameters={"corpora": [str(corpus_path)], "n_boot": N_BOOT},
                            show_code=True)
    assert "corpus = load_corpora(corpora)" in _code_text(shown.html.read_text())
    assert 'class="highlight' in shown.html.read_text()


def test_failing_cell_names_notebook_cell_and_parameters(tmp_path, corpus_path):
    (tmp_path / "overview.html").write_text("stale")  # a stale report of the same name must not survive
    missing = str(tmp_path / "no-such-corpus.parquet")
    with pytest.raises(ReportError) as info:
        render_notebook("overview", tmp_path, parameters={"corpora": [missing], "n_boot": 7})
    message = str(info.value)
    assert "overview.ipynb" in message
    assert "corpus = load_corpora(corpora)" in message and re.search(r"at cell \d+ of overview\.ipynb", message)
    assert "n_boot=7" in message and missing in message and "not found" in message
    assert not (tmp_path / "overview.html").exists()
    assert (tmp_path / "overview.ipynb").exists()  # executed notebook with the traceback kept
    assert not list(tmp_path.glob(".overview*"))


def test_cli_rejects_unknown_parameter_before_running(corpus_path, tmp_path, capsys):
    status = cli_main(["report", str(corpus_path), "-p", "n_bootz=3", "--out", str(tmp_path)])
    assert status == 1
    err = capsys.readouterr().err
    assert "n_bootz" in err and "known parameters" in err and "n_boot" in err
    assert not list(tmp_path.iterdir())
