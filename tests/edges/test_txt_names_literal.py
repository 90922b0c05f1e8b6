"""A name a user gives is shown in the report as written: never as Markdown, never reordering the text around it.

The narrative's Markdown carries environment, campaign, problem and file names. Escaping them as HTML was not
enough: a run named ``*star*`` was shown in italics (``star``, stars gone), a pair of backticks opened a code span,
and a name holding a right-to-left override (U+202E) reversed the rest of its paragraph in the browser: the
sentence after a run's name read backwards. A name is now isolated (``audits.report.narrative.common.as_name``):
between bidi isolates, each Markdown character of it a character reference.

Checked on nbconvert's own Markdown renderer (parsed HTML) and on a real ``speedaudit report`` page opened in
headless Chromium, which says where each character of the sentence after a name is drawn.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report.narrative import Markdown, describe_corpus

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
ROOT = Path(__file__).resolve().parents[2]
ISOLATES = dict.fromkeys(map(ord, "\u2066\u2067\u2068\u2069"))

#: Each character Markdown could read as syntax, alone and in pairs (``*a*`` is emphasis, ``a`b`c`` a code span).
SYNTAX = "\\`*_{}[]()#+-.!|<>~"
NAMES = ([f"a{c}b{c}c" for c in SYNTAX] + [f"{c}x{c}" for c in SYNTAX]
         + ["*star*", "**bold**", "`tick`", "``two``", "x `y` z", "# head", "1. item", "- item", "a\nb", "[l](x.html)"])


class _Page(HTMLParser):
    """Element tags and the text of each ``<strong>``, of an HTML fragment or document."""

    def __init__(self, document: str):
        super().__init__(convert_charrefs=True)
        self.tags, self.text, self.strong, self._in = [], [], [], 0
        self.feed(document)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "strong":
            self._in, self.strong = 1, [*self.strong, ""]

    def handle_endtag(self, tag):
        if tag == "strong":
            self._in = 0

    def handle_data(self, data):
        self.text.append(data)
        if self._in:
            self.strong[-1] += data


def _corpus(names) -> pd.DataFrame:
    one = synthesize(n_problems=2, n_tests=1, n_solutions=2, n_repeats=2, environments=("quiet",), seed=0).corpus
    parts = [one.assign(campaign=name) for name in names]
    return pd.concat(parts, ignore_index=True)


def test_every_markdown_character_of_a_name_shows_as_written():
    corpus = _corpus(NAMES)
    page = _Page(markdown2html_mistune(Markdown(describe_corpus(corpus, ["runs.parquet"]))._repr_markdown_()))
    text = "".join(page.text).translate(ISOLATES)  # a line break in a name is one in the HTML too (shown as a space)
    missing = [name for name in NAMES if f"quiet · {name} (2 repeats)" not in text]
    assert missing == [], missing
    # the sentence's own markup only: its bold lead and the file's code span; no emphasis, link, heading, list
    assert sorted(page.tags) == ["code", "p", "strong"], page.tags


def test_a_name_with_a_right_to_left_override_ends_with_the_name():
    from audits.report.narrative.common import as_name

    for name in ("a\u202eRTL", "a\u2069\u202eRTL", "a\u2067b", "שלום"):
        isolated = as_name(name)
        assert name in isolated  # the name itself, as given
        # what is left open at the end of the name is closed: a PDI closes the latest open isolate (UAX #9, X6a)
        depth = 0
        for char in isolated:
            depth += char in "\u2066\u2067\u2068"
            depth -= char == "\u2069" and depth > 0
        assert depth == 0 and isolated[0] == "\u2068"


#: The script added to the rendered page: where each of the first characters after a run's bold name is drawn.
PROBE = """<script>
(function () {
  const out = [];
  for (const p of document.querySelectorAll('p')) {
    const strong = p.querySelector('strong');
    if (!strong || !strong.textContent.includes('RTL')) continue;
    const node = strong.nextSibling, xs = [];
    for (let i = 0; i < Math.min(node.length, 40); i++) {
      const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
      const b = r.getBoundingClientRect(); xs.push([node.data[i], b.left, b.top]);
    }
    out.push({name: strong.textContent, after: xs});
  }
  const pre = document.createElement('pre'); pre.id = 'bidi-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""

ENVIRONMENTS = {"quiet": "*star* `tick` a\u202eRTL", "busy": "b\u2069\u202eRTL #+-.!|{}()[]<>~\\_x"}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("names")
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=3, environments=("quiet",), busy=True,
                        seed=3).corpus.copy()
    corpus["environment"] = corpus["environment"].astype(str).map(ENVIRONMENTS)
    path = save_corpus(corpus, tmp / "names.parquet")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run([sys.executable, "-m", "speedaudit", "report", str(path), "--audit", "reliability",
                           "-p", "n_boot=20", "--out", str(tmp / "out")], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return tmp / "out"


@pytest.mark.slow
def test_the_report_shows_each_run_name_as_written(rendered):
    page = _Page((rendered / "reliability.html").read_text(encoding="utf-8"))
    assert "em" not in page.tags  # no name is emphasis
    labels = [s for s in page.strong if "RTL" in s]
    assert labels, page.strong
    for name in ENVIRONMENTS.values():
        runs = [s for s in labels if name in s]  # every character, in order
        assert runs and all(s.translate(ISOLATES) == f"{name} · c0".translate(ISOLATES) for s in runs), labels


@pytest.mark.slow
def _probed(page: Path, probe: str, tmp_path) -> list:
    """What ``probe`` (a script added to a copy of ``page``) writes into ``<pre id="bidi-probe">``, in Chromium."""
    assert BROWSER, "headless Chromium is needed (apt-get install -y chromium; scripts/system-deps.sh does)"
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", probe + "</body>"), encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--dump-dom",
             probed.resolve().as_uri()], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    start = done.stdout.index('<pre id="bidi-probe">') + len('<pre id="bidi-probe">')
    return json.loads(_Page(done.stdout[start:done.stdout.index("</pre>", start)]).text[0])


#: The same on the index page: where each character of the metric's name after a finding's run label is drawn.
INDEX_PROBE = """<script>
(function () {
  const out = [];
  for (const li of document.querySelectorAll('li')) {
    const code = li.querySelector('code');
    if (!code || !li.textContent.includes('RTL')) continue;
    const node = code.firstChild, xs = [];
    for (let i = 0; i < node.length; i++) {
      const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
      const b = r.getBoundingClientRect(); xs.push([node.data[i], b.left, b.top]);
    }
    out.push({name: li.textContent.slice(0, 60), after: xs});
  }
  const pre = document.createElement('pre'); pre.id = 'bidi-probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def _in_reading_order(found) -> None:
    for paragraph in found:
        line = [(x, top) for char, x, top in paragraph["after"] if not char.isspace()]
        first_line = [x for x, top in line if top == line[0][1]]
        assert len(first_line) >= 5, paragraph
        # left to right, as written: each character is drawn right of the one before it
        assert all(b > a for a, b in zip(first_line, first_line[1:])), (paragraph["name"], paragraph["after"][:12])


@pytest.mark.slow
def test_the_index_draws_what_follows_a_run_label_in_reading_order(rendered, tmp_path):
    found = _probed(rendered / "index.html", INDEX_PROBE, tmp_path)
    assert len(found) >= 1
    _in_reading_order(found)


@pytest.mark.slow
def test_the_text_after_a_name_is_drawn_in_reading_order(rendered, tmp_path):
    found = _probed(rendered / "reliability.html", PROBE, tmp_path)
    assert len(found) >= 4  # both runs, in the repeatability and discriminability paragraphs (and contention's)
    _in_reading_order(found)
