"""The choice-of-clock page and the contention section of the reliability page, rendered and opened in a browser.

Real kernels, real files, a real browser: the pages are executed with papermill (``speedaudit report``'s
``render_reports``, and ``render_notebook`` for a page on its own), converted by nbconvert, and opened
from ``file://`` in headless Chromium (Debian's ``chromium``, as ``scripts/check_report_in_browser.sh``
runs it), whose serialised DOM (``--dump-dom``) is what is read back: no error cell, the tables' values
equal to :func:`audits.checks.clocks.run_clocks_audit`'s and the contention figures to an independent
computation, the figures embedded as PNGs.

The corpus plants the relation of the two clocks: a quiet run whose wall time is its CPU time plus at
most a few per cent (load 0.1-0.2), and a busy run of the *same* CPU times whose wall time is the CPU
time times a contention factor, lognormal around 2.4 (load 5-7): the CPU-time figures of the two runs
are then equal, the busy run is contended (fail at 2.0), and CPU time, which orders the quiet run's
solutions as wall time does, is the clock to trust.
"""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from audits.checks.clocks import run_clocks_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.narrative import CLOCK_FIGURES, format_value
from audits.report.render import render_notebook, render_reports
from audits.report.inputs import load_corpora

pytestmark = pytest.mark.slow  # a minute or more under make test's load (45 s at load 5): pages rendered, one opened in Chromium

N_BOOT = 40
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _planted(seed: int = 7):
    rng = np.random.default_rng(seed)
    base = synthesize(n_problems=6, n_tests=3, n_correctness_tests=0, n_solutions=6, n_incorrect=0,
                      n_candidates=0, n_repeats=3, base_seconds=(0.5, 2.0), timeout_s=1000.0, seed=seed).corpus
    cpu = base["duration_s"].to_numpy(dtype=float)
    quiet = base.assign(cpu_s=cpu, duration_s=cpu * (1.0 + np.abs(rng.normal(0.0, 0.02, len(base)))),
                        load_1m=rng.uniform(0.1, 0.2, len(base)))
    busy = base.assign(environment="busy", cpu_s=cpu,
                       duration_s=cpu * np.maximum(1.0, rng.lognormal(np.log(2.4), 0.4, len(base))),
                       load_1m=rng.uniform(5.0, 7.0, len(base)))
    corpus = pd.concat([quiet, busy], ignore_index=True)
    corpus["environment"] = corpus["environment"].astype(str).astype("category")
    return corpus


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    path = tmp_path_factory.mktemp("clocks") / "planted.parquet"
    save_corpus(_planted(), path)
    return path, load_corpora([path])


@pytest.fixture(scope="module")
def rendered(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("pages")
    index = render_reports([planted[0]], out_dir=out, audits=["reliability", "clocks"],
                           parameters={"n_boot": N_BOOT, "seed": 0}, progress=None)
    return index, out


@pytest.fixture(scope="module")
def audit(planted):
    return run_clocks_audit(planted[1], n_boot=N_BOOT, seed=0)


# --- the browser ---------------------------------------------------------------------------------

def browser_dom(page: Path) -> str:
    """The DOM headless Chromium builds from ``page`` (``file://``; a fresh profile, no network)."""
    assert BROWSER, "headless Chromium is needed (apt-get install -y chromium; scripts/system-deps.sh does)"
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0 and "<body" in result.stdout, result.stderr[-2000:]
    return result.stdout


#: Tags after which the visible text gets a space (block boxes and table cells); inline tags (strong, code,
#: a) add none, so "**cpu_s**:" reads "cpu_s:" as in the browser.
_BLOCK = {"p", "div", "li", "ul", "ol", "td", "th", "tr", "table", "h1", "h2", "h3", "h4", "br", "pre"}


class _Dom(HTMLParser):
    """Tables (header and body rows of cell texts, ``rowspan`` expanded), images and the visible text of a DOM."""

    def __init__(self):
        super().__init__()
        self.tables, self.imgs, self._text = [], [], []
        self._table = self._cell = None
        self._head = False
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in _BLOCK:
            self._text.append(" ")
        if tag in ("script", "style"):
            self._skip += 1
        elif tag == "img":
            self.imgs.append(attrs.get("src", ""))
        elif tag == "table":
            self._table = {"head": [], "body": [], "spans": {}}
        elif tag == "thead":
            self._head = True
        elif tag == "tbody":
            self._head = False
        elif tag == "tr" and self._table is not None:
            self._table["head" if self._head else "body"].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"text": [], "rowspan": int(attrs.get("rowspan") or 1)}

    def handle_endtag(self, tag):
        if tag in _BLOCK:
            self._text.append(" ")
        if tag in ("script", "style"):
            self._skip -= 1
        elif tag == "thead":
            self._head = False
        elif tag in ("td", "th") and self._cell is not None and self._table is not None:
            rows = self._table["head" if self._head else "body"]
            row, spans = rows[-1], self._table["spans"]
            while spans.get(len(row), ("", 0))[1] > 0:  # cells of earlier rows spanning down into this one
                text, left = spans[len(row)]
                spans[len(row)] = (text, left - 1)
                row.append(text)
            text = re.sub(r"\s+", " ", html.unescape("".join(self._cell["text"]))).strip()
            if self._cell["rowspan"] > 1:
                spans[len(row)] = (text, self._cell["rowspan"] - 1)
            row.append(text)
            self._cell = None
        elif tag == "table" and self._table is not None:
            self.tables.append(self._table)
            self._table = None

    def handle_data(self, data):
        if self._skip:
            return
        self._text.append(data)
        if self._cell is not None:
            self._cell["text"].append(data)

    @property
    def text(self) -> str:
        return re.sub(r"\s+", " ", html.unescape("".join(self._text)))


def _dom(page: Path) -> _Dom:
    raw = browser_dom(page)
    parser = _Dom()
    parser.feed(raw)
    parser.raw = raw
    return parser


def _table(dom: _Dom, header: str) -> list[list[str]]:
    """The body rows of the one table whose header holds the column ``header``."""
    found = [t for t in dom.tables if any(header == cell for row in t["head"] for cell in row)]
    assert len(found) == 1, f"{len(found)} tables with the column {header!r}"
    return found[0]["body"]


def _no_error_cells(notebook: Path, dom: _Dom) -> None:
    nb = nbformat.read(notebook, as_version=4)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"
              or (o.get("output_type") == "stream" and o.get("name") == "stderr")]
    assert errors == []
    assert "Traceback" not in dom.text
    assert not re.search(r"data-mime-type=\"application/vnd\.jupyter\.stderr\"", dom.raw)  # an error output


def _pngs(dom: _Dom) -> int:
    for src in dom.imgs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    return len(dom.imgs)


# --- (a) a corpus with CPU times -----------------------------------------------------------------

def test_planted_truth_holds_in_the_audit(audit):
    t = audit.table.set_index(["environment", "campaign", "measure"])
    for column, _, _ in CLOCK_FIGURES:  # the same CPU times in both runs: the same CPU-time figures
        assert t.loc[("busy", "c0", "cpu_s"), column] == pytest.approx(t.loc[("quiet", "c0", "cpu_s"), column],
                                                                       rel=1e-12, nan_ok=True)
    assert t.loc[("busy", "c0", "duration_s"), "mean_rank_sd"] > 2 * t.loc[("busy", "c0", "cpu_s"), "mean_rank_sd"]
    assert audit.quietest == ("quiet", "c0") and "load_1m" in audit.quietest_by
    assert audit.mean_agreement()["cpu_s"] > 0.8


def test_clocks_page_opens_in_chromium_without_an_error_cell(rendered):
    index, out = rendered
    assert [r.name for r in index.reports] == ["reliability", "clocks"] and not index.failed
    dom = _dom(out / "clocks.html")
    _no_error_cells(out / "clocks.ipynb", dom)
    assert "The choice of clock" in dom.text
    assert _pngs(dom) == 2  # the figures side by side, and the rank agreement
    assert "clocks.html" in (out / "index.html").read_text(encoding="utf-8")


def test_clocks_page_shows_the_audit_figures(rendered, audit):
    _, out = rendered
    dom = _dom(out / "clocks.html")
    labels = [label for _, label, _ in CLOCK_FIGURES]
    rows = _table(dom, "median repeat CV")
    shown = {tuple(r[:3]): r[3:] for r in rows}
    expected = {}
    for r in audit.table.itertuples(index=False):
        expected[(r.environment, r.campaign, r.measure)] = [format_value(int(r.n_rows))] + [
            format_value(getattr(r, column)) for column, _, _ in CLOCK_FIGURES] + [
            format_value(r.median_wall_cpu), format_value(r.median_load_1m)]
    assert len(labels) == 5 and shown == expected
    (agreement,) = _table(dom, "mean Kendall tau-b")
    tau = audit.agreement["kendall_tau"].to_numpy(dtype=float)
    assert agreement[:5] == ["cpu_s", "duration_s", "quiet · c0", str(int(np.isfinite(tau).sum())),
                             format_value(audit.mean_agreement()["cpu_s"])]
    low = min((float(v), str(p)) for v, p in zip(audit.agreement["kendall_tau"], audit.agreement["problem"])
              if np.isfinite(v))
    assert agreement[5] == f"{format_value(low[0])} ({low[1]})"
    t = audit.table.set_index(["environment", "campaign", "measure"])
    for env in ("quiet", "busy"):
        w, c = t.loc[(env, "c0", "duration_s")], t.loc[(env, "c0", "cpu_s")]
        assert (f"{env} · c0 (median wall/CPU {format_value(w['median_wall_cpu'])}, median load_1m "
                f"{format_value(w['median_load_1m'])}): duration_s vs cpu_s: repeat CV "
                f"{format_value(w['median_repeat_cv'])} vs {format_value(c['median_repeat_cv'])}, rank sd "
                f"{format_value(w['mean_rank_sd'])} vs {format_value(c['mean_rank_sd'])} points") in dom.text
    # The planted truth, in the page's words: CPU time agrees with wall time on the quiet run and is less
    # noisy on the contended one.
    assert "Which clock to trust: cpu_s:" in dom.text and re.search(r"averaged over 2 runs \(lower on [12] of 2\)", dom.text)
    assert "What this page cannot show" in dom.text


def _contention_truth(corpus, env):
    """Median wall/CPU of the run's single-threaded ok executions of >= CONTENTION_MIN_CPU_S CPU seconds
    (floor rows aside), how many, and the load average's median and max over the run's rows."""
    from audits.checks.clocks import CONTENTION_MIN_CPU_S

    rows = corpus.loc[((corpus["environment"] == env) & (corpus["role"] != "floor")).to_numpy()]
    cpu = rows["cpu_s"].to_numpy()
    used = (rows["status"] == "ok").to_numpy() & (cpu >= CONTENTION_MIN_CPU_S)
    ratio = rows["duration_s"].to_numpy()[used] / cpu[used]
    load = rows["load_1m"].to_numpy()
    assert (ratio >= 1).all()  # planted: every execution single-threaded
    return float(np.median(ratio)), len(ratio), float(np.median(load)), float(load.max())


def test_reliability_page_shows_contention_per_run(rendered, planted):
    _, out = rendered
    dom = _dom(out / "reliability.html")
    _no_error_cells(out / "reliability.ipynb", dom)
    rows = {tuple(r[:2]): r[2:] for r in _table(dom, "median wall/CPU")}
    for env, level in (("quiet", "pass"), ("busy", "fail")):
        ratio, n, med_load, max_load = _contention_truth(planted[1], env)
        assert rows[(env, "c0")] == [format_value(ratio), format_value(n), "0", format_value(med_load),
                                     format_value(max_load), level]
    busy_ratio = _contention_truth(planted[1], "busy")[0]
    assert 2.0 < busy_ratio < 3.0  # the planted factor, lognormal around 2.4
    assert f"busy · c0 (FAIL): contended: median wall/CPU {busy_ratio:.2f}" in dom.text
    assert "quiet · c0 (PASS): median wall/CPU" in dom.text


def test_figures_draw_the_audit_values_whatever_the_row_order(planted, audit):
    import matplotlib.pyplot as plt

    from audits.report.plots.clocks import clock_figures, rank_agreement_figure

    t = audit.table.set_index(["environment", "campaign", "measure"])
    runs = [("busy", "c0"), ("quiet", "c0")]  # top to bottom: name order
    shuffled = run_clocks_audit(planted[1].sample(frac=1.0, random_state=3), n_boot=N_BOOT, seed=0)
    for drawn in (audit, shuffled):
        fig = clock_figures(drawn)
        assert len(fig.axes) == len(CLOCK_FIGURES)
        for ax, (column, _, _) in zip(fig.axes, CLOCK_FIGURES):
            assert [c.get_label() for c in ax.containers] == ["duration_s", "cpu_s"]
            for bars, measure in zip(ax.containers, ("duration_s", "cpu_s")):
                expected = [t.loc[(env, camp, measure), column] for env, camp in runs]
                assert np.allclose(bars.datavalues, expected, rtol=1e-9, equal_nan=True), (column, measure)
            assert all(a.get_y() > b.get_y() for a, b in zip(ax.containers[0], ax.containers[1]))  # first clock on top
        assert [label.get_text() for label in fig.axes[0].get_yticklabels()] == ["busy · c0", "quiet · c0"]
        plt.close(fig)
        fig = rank_agreement_figure(drawn)
        (ax,) = fig.axes
        part = audit.agreement[audit.agreement["measure"] == "cpu_s"]
        order = sorted((float(v), str(p)) for v, p in zip(part["kendall_tau"], part["problem"]) if np.isfinite(v))
        assert np.allclose(ax.collections[0].get_offsets()[:, 0], [v for v, _ in order], rtol=1e-9)
        assert [label.get_text() for label in ax.get_yticklabels()] == [p for _, p in order]
        plt.close(fig)


# --- (b) a corpus without CPU times --------------------------------------------------------------

def test_without_cpu_times_the_page_says_na_and_still_renders(planted, tmp_path):
    path = tmp_path / "wall-only.parquet"
    save_corpus(planted[1].drop(columns=["cpu_s"]), path)
    render_notebook("clocks", tmp_path / "out", parameters={"corpora": [str(path)], "n_boot": N_BOOT, "seed": 0})
    dom = _dom(tmp_path / "out" / "clocks.html")
    _no_error_cells(tmp_path / "out" / "clocks.ipynb", dom)
    # the audit's reason as the command line prints it (audits.report.narrative.common.audit_text: its backticks too)
    text = dom.text.translate(dict.fromkeys(map(ord, "\u2068\u2069")))
    assert "The comparison of clocks is n/a: the corpus has one clock, `duration_s` (wall time): it has no `cpu_s` " \
           "column" in text
    assert dom.text.count("Figure not drawn: the comparison of clocks is n/a") == 2 and _pngs(dom) == 0
    audit = run_clocks_audit(load_corpora([path]), n_boot=N_BOOT, seed=0)
    assert audit.measures == ("duration_s",)
    shown = {tuple(r[:3]): r[3:8] for r in _table(dom, "median repeat CV")}
    assert shown == {(r.environment, r.campaign, r.measure): [format_value(int(r.n_rows))] + [
        format_value(getattr(r, c)) for c, _, _ in CLOCK_FIGURES[:4]] for r in audit.table.itertuples(index=False)}
    assert _table(dom, "mean Kendall tau-b") == []
