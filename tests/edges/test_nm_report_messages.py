"""End to end: the names an audit quotes in its messages are shown as written on the rendered pages and the index.

A real ``speedaudit report`` of a corpus whose environments are named ``b<U+202E>RTL`` (a right-to-left override) and
``*qa* `t1` [x](y.html)``: the calibration's advice ("b... cannot stand in for *qa* ...") was pasted into the page's
Markdown, so the target showed in italics, its backticks as a code span and ``[x](y.html)`` as a link to a page that
does not exist; the override reversed the rest of the advice, of the findings table's message cell and of the
index's line, in the browser (headless Chromium says where each character after the name is drawn). The rule:
``audits.report.narrative.common.audit_text``; the renderer-level tests are in ``test_nm_audit_text.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from tests.edges.test_txt_names_literal import _probed

ROOT = Path(__file__).resolve().parents[2]
ISOLATES = dict.fromkeys(map(ord, "\u2066\u2067\u2068\u2069"))
SOURCE, TARGET = "b\u202eRTL", "*qa* `t1` [x](y.html)"


class _Text(HTMLParser):
    """Visible text (outside script and style) and the tags of an HTML document."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.links, self._text, self._skip = [], [], [], 0
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.links += [value for key, value in attrs if tag == "a" and key == "href"]
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self._text.append(data)

    @property
    def text(self) -> str:
        return " ".join("".join(self._text).translate(ISOLATES).split())


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("messages")
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=3, environments=("quiet",), busy=True,
                        seed=3).corpus.copy()
    corpus["environment"] = corpus["environment"].astype(str).map({"quiet": TARGET, "busy": SOURCE})
    path = save_corpus(corpus, tmp / "names.parquet")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "speedaudit", "report", str(path), "--audit", "calibration",
                           "--audit", "overview", "-p", "n_boot=20", "--out", str(tmp / "out")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "out"


def _messages(out: Path) -> list[str]:
    """The calibration's findings' messages that quote the target, as the executed notebook saved them (the JSON)."""
    cells = json.loads((out / "calibration.ipynb").read_text(encoding="utf-8"))["cells"]
    found = [f["message"] for cell in cells for o in cell.get("outputs", ())
             for f in o.get("data", {}).get("application/vnd.speedaudit.findings+json", {}).get("findings", ())]
    return [m for m in dict.fromkeys(found) if TARGET in m]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["calibration.html", "overview.html", "index.html"])
def test_each_page_shows_the_quoted_names_as_written(rendered, page):
    messages = _messages(rendered)
    assert messages  # the audit quotes the target ("... cannot stand in for ...")
    document = _Text((rendered / page).read_text(encoding="utf-8"))
    assert "em" not in document.tags and "y.html" not in document.links
    assert any(" ".join(m.split()) in document.text for m in messages), messages


@pytest.mark.slow
def test_the_calibration_page_says_what_to_do_with_the_names_as_written(rendered):
    text = _Text((rendered / "calibration.html").read_text(encoding="utf-8")).text
    assert f"What to do: {SOURCE} cannot stand in for {TARGET}" in text


#: Where each of the characters after the word holding an override (U+202E) is drawn, for every text node of the
#: page that has one with text after it (the findings' cells, the advice, the index's lines).
PROBE = """<script>
(function () {
  const out = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf('\\u202e');
    if (at < 0) continue;
    let i = at;
    while (i < node.length && !/\\s/.test(node.data[i])) i++;
    const xs = [];
    for (; i < node.length && xs.length < 30; i++) {
      const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
      const b = r.getBoundingClientRect();
      if (/[\\u2066-\\u2069]/.test(node.data[i]) || b.width === 0) continue;
      xs.push([node.data[i], b.left, b.top]);
    }
    if (xs.filter(x => !/\\s/.test(x[0])).length >= 5) out.push({name: node.data.slice(0, 60), after: xs});
  }
  const pre = document.createElement('pre'); pre.id = 'bidi-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


@pytest.mark.slow
@pytest.mark.parametrize("page", ["calibration.html", "overview.html", "index.html"])
def test_the_text_after_an_override_in_a_message_is_drawn_in_reading_order(rendered, page, tmp_path):
    found = _probed(rendered / page, PROBE, tmp_path)
    assert found  # the messages that quote the source, with text after its name
    for node in found:
        lines: dict[float, list[float]] = {}
        for char, x, top in node["after"]:
            if not char.isspace():
                lines.setdefault(top, []).append(x)
        # left to right, as written, on each line the text wraps onto (a table cell wraps it after a word or two)
        assert all(b > a for xs in lines.values() for a, b in zip(xs, xs[1:])), (node["name"], node["after"][:12])
