"""Names a user gives reach the report's Markdown as data: never as HTML that runs, never as math or emphasis.

The narrative's Markdown outputs (audits.report.narrative.common.Markdown) are turned into HTML by nbconvert's own
Markdown filter (mistune, with its math plugin). A name that holds a tag was escaped outside code spans only, and
the renderer saw other code spans than the escaping did: a backslash before a backtick, or a ``$`` before it
(inline math is matched first), left ``<img src=x onerror=...>`` as raw HTML, which ran in the calibration page
(headless Chromium: the page's title was set by the handler). ``$a$`` and ``_b_`` in names were read as math and
emphasis (``$x<b>$`` showed as ``$x&lt;b&gt;$``, ``_b_`` lost its underscores), and a run named
``[quiet](javascript:...)`` was a link that ran its script when clicked (only links to the report's own pages,
which the narrative writes, are kept).

Checked on the real renderer's output (parsed HTML), and end to end: a calibration page rendered from a corpus
whose environments carry such names, opened in headless Chromium.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.narrative import Markdown

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

ENV_A = "$`$ <img src=x onerror=\"document.title='pwned-a'\"> `"
ENV_B = "\\`<img src=x onerror=\"document.title='pwned-b'\">`"
ENV_C = "[quiet](javascript:document.title='pwned-c') ![i](x.png)"

#: Names without backticks (a backtick in a name still opens a code span: its characters show, its backticks do not).
NAMES = ["S8 _b_ $x<b>$", "cost $5 or $10", "a\\_b \\<i>", "~~gone~~", "p|1 &amp; <b>B</b> <script>alert(1)</script>",
         ENV_C]


class _Page(HTMLParser):
    """Elements (tag, attributes) and visible text (outside script/style) of an HTML document."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.elements, self._text, self._skip, self.title = [], [], 0, None
        self._in_title = False
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        self._skip += tag in ("script", "style")
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title = data
        elif not self._skip:
            self._text.append(data)

    @property
    def text(self) -> str:
        return "".join(self._text)


def _rendered(text: str) -> _Page:
    """What nbconvert's HTML exporter makes of a Markdown output of the narrative."""
    return _Page(markdown2html_mistune(Markdown(text)._repr_markdown_()))


@pytest.mark.parametrize("name", NAMES)
def test_a_name_in_prose_is_shown_as_written_and_never_runs(name):
    page = _rendered(f"**Verdict** for run {name} · c0: see *below*.")
    handlers = [(tag, a) for tag, a in page.elements for key in a if key.startswith("on")]
    assert handlers == [] and not any(tag in ("img", "script", "b", "del", "math", "a") for tag, _ in page.elements)
    assert f"run {name} · c0" in page.text  # every character as given
    assert [tag for tag, _ in page.elements] == ["p", "strong", "em"]  # the narrative's own markup still formats


def test_the_narratives_own_link_to_a_page_is_kept():
    page = _rendered(f"**[The choice of clock](clocks.html)**: run {ENV_C}.")
    assert [a.get("href") for tag, a in page.elements if tag == "a"] == ["clocks.html"]
    assert f"The choice of clock: run {ENV_C}." in page.text


@pytest.mark.parametrize("text", [f"run {ENV_A} · c0", f"run {ENV_B} · c0", f"Pair `{ENV_A}` → `{ENV_B}`"])
def test_a_name_with_backticks_never_runs(text):
    page = _rendered(text)
    assert not any(tag in ("img", "script") for tag, _ in page.elements), page.elements
    assert not any(key.startswith("on") for _, a in page.elements for key in a)


@pytest.mark.slow
def test_calibration_page_in_chromium_runs_no_name(tmp_path):
    assert BROWSER, "headless Chromium is needed (apt-get install -y chromium; scripts/system-deps.sh does)"
    from audits.report.render import render_reports

    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=3, environments=("quiet", "other"),
                        busy=True, seed=3).corpus.copy()
    corpus["environment"] = corpus["environment"].astype(str).map({"quiet": ENV_A, "busy": ENV_B,
                                                                              "other": ENV_C})
    path = save_corpus(corpus, tmp_path / "names.parquet")
    index = render_reports([path], out_dir=tmp_path / "out", audits=["calibration"], progress=None,
                           parameters={"n_boot": 20, "seed": 0})
    (report,) = index.reports
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--dump-dom",
             Path(report.html).resolve().as_uri()], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and "<body" in done.stdout, done.stderr[-2000:]
    dom = _Page(done.stdout)
    assert "pwned" not in (dom.title or "")  # no handler ran
    assert not [a for tag, a in dom.elements if any(k.startswith("on") for k in a)]
    links = [a.get("href", "") for tag, a in dom.elements if tag == "a"]  # pages of the report, headings' anchors
    assert links and all(href.endswith(".html") or href.startswith("#") for href in links), links
    text = " ".join(dom.text.split())
    assert all(f"{env} · c0" in text for env in (ENV_A, ENV_B, ENV_C))  # every name shown as given
