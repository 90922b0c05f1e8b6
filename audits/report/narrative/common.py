"""What every page's prose shares: values and intervals as text, the findings display (and its
machine-readable output for the index), Markdown, figures and their notes.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

import functools
import html
import io
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from audits.corpus.runs import RULES
from audits.protocol.findings import ALL_LEVELS, NA, Finding, to_jsonable, where_label, worst_level

__all__ = ["FINDINGS_MIMETYPE", "FindingsDisplay", "show_findings", "findings_frame", "rank_findings",
           "verdict_sentence", "format_value", "format_seconds", "format_interval", "Markdown", "show_figure", "show_plot",
           "figure_notes", "BADGE", "level_counts", "finding_text", "is_skipped", "fixed", "fixed_ci", "finding_of",
           "run_index", "ci_text", "interval_words", "sim_ci", "as_name", "code_name", "run_name", "where_name",
           "audit_text", "where_subject"]


FINDINGS_MIMETYPE = "application/vnd.speedaudit.findings+json"


BADGE = {"pass": ("PASS", "#1a7f37", "#dafbe1"), "warn": ("WARN", "#9a6700", "#fff8c5"),
          "fail": ("FAIL", "#cf222e", "#ffebe9"), NA: ("n/a", "#57606a", "#eaeef2")}


#: Worst first; n/a (not measurable) last: it is never a pass and never the worst.
_RANK = {"fail": 0, "warn": 1, "pass": 2, NA: 3}


def format_value(value, digits: int = 3) -> str:
    """Short text for a number (``'-'`` for None/NaN), ``digits`` significant digits.

    >>> format_value(0.123456), format_value(float("nan")), format_value(12345.0)
    ('0.123', '-', '1.23e+04')
    """
    if value is None:
        return "-"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):  # NaN or inf (e.g. repeats needed without variance): not measured
            return "-"
        return f"{float(value):.{digits}g}"
    return str(value)


def format_seconds(seconds, digits: int = 3) -> str:
    """A duration in the unit that reads best (s, ms, µs or ns; ``digits`` significant digits), ``'-'`` for
    None/NaN: a corpus may hold ten-second programs or nanosecond benchmarks, and "0.000349 ms" reads worse than
    "349 ns".

    >>> [format_seconds(v) for v in (2.5, 0.0245, 3.49e-7, 0.0, -0.053, None)]
    ['2.5 s', '24.5 ms', '349 ns', '0 s', '-53 ms', '-']
    """
    if _missing(seconds):
        return "-"
    v = float(seconds)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if abs(v) >= scale or unit == "ns" or v == 0:
            return f"{v / scale:.{digits}g} {unit}"
    return f"{v:.{digits}g} s"  # pragma: no cover - the loop always returns


def _missing(value) -> bool:
    """None, NaN or inf: a figure that was not measured."""
    return value is None or not math.isfinite(float(value))


def format_interval(interval, digits: int = 3, scale: float = 1.0, unit: str = "") -> str:
    """``estimate [low, high] (n=...)`` for a :class:`stats.bootstrap.Interval` (or a dict of one).

    >>> from stats.bootstrap import Interval
    >>> format_interval(Interval(0.05, 0.04, 0.061, 20))
    '0.05 [0.04, 0.061] (n=20)'
    >>> format_interval(Interval(0.05, 0.04, 0.061, 20), scale=100, unit="%")
    '5% [4%, 6.1%] (n=20)'
    >>> format_interval(Interval(0.05, float("nan"), float("nan"), 1))
    '0.05 (no CI) (n=1)'
    >>> format_interval(Interval(float("nan"), float("nan"), float("nan"), 0))  # not measured
    'n/a'
    """
    if interval is None:
        return "-"
    if isinstance(interval, dict):
        est, low, high, n = (interval.get("estimate"), interval.get("ci_low", interval.get("low")),
                             interval.get("ci_high", interval.get("high")), interval.get("n"))
    else:
        est, low, high, n = interval.estimate, interval.low, interval.high, interval.n
    if est is None or (isinstance(est, float) and math.isnan(est)):  # "- (no CI) (n=0)" said nothing measured
        return NA

    def f(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format_value(x * scale, digits) + unit

    if f(low) == "-" or f(high) == "-":  # no resamples (one problem, or n_boot = 0): no interval
        return f"{f(est)} (no CI) (n={n})"
    return f"{f(est)} [{f(low)}, {f(high)}] (n={n})"


def rank_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings ordered worst first (fail, warn, pass, then n/a), keeping the audit's order within a level."""
    return sorted(findings, key=lambda f: _RANK[f.level])


def level_counts(findings) -> dict[str, int]:
    counts = dict.fromkeys(ALL_LEVELS, 0)
    for f in findings:
        counts[f.level] += 1
    return counts


def finding_text(f: Finding) -> str:
    """``[where] metric = value - message``; an n/a finding, which has no value, ``[where] metric: message`` (as
    the command line's findings table writes it; "calibration_pair = - - not measured: ..." read as a typo)."""
    where = f"[{where_name(f)}] " if f.where else ""
    if f.level == NA:
        return f"{where}{f.metric}: {audit_text(f.message)}"
    return f"{where}{f.metric} = {format_value(f.value)} - {audit_text(f.message)}"


def verdict_sentence(findings: Iterable[Finding]) -> str:
    """One sentence: overall level, counts per level and the worst finding.

    The overall level is the worst finding's (:func:`audits.protocol.findings.worst_level`).
    """
    rows = rank_findings(findings)
    if not rows:
        return "Verdict: no findings (the audit had nothing to judge on this corpus)."
    counts = level_counts(rows)
    level = worst_level(rows)
    na = f", {counts[NA]} n/a" if counts[NA] else ""
    text = (f"Verdict: {level if level == NA else level.upper()} ({counts['fail']} fail, {counts['warn']} warn, "
            f"{counts['pass']} pass{na}). Worst: {finding_text(rows[0])}")
    return text


def findings_frame(findings: Iterable[Finding], *, audit: str | None = None) -> pd.DataFrame:
    """Findings as a tidy table (one row per finding, worst first)."""
    rows = [f.to_dict() for f in rank_findings(findings)]
    frame = pd.DataFrame(rows, columns=["level", "metric", "value", "threshold", "message", "environment",
                                        "campaign", "subject", "reason"])
    if audit is not None:
        frame.insert(0, "audit", audit)
    return frame


class FindingsDisplay:
    """Rich display of findings: an HTML table plus a JSON copy for the index page."""

    def __init__(self, findings: Sequence[Finding], *, audit: str, title: str | None = None):
        self.findings = tuple(rank_findings(findings))
        self.audit = audit
        self.title = title

    def to_dict(self) -> dict:
        return {"audit": self.audit, "title": self.title, "worst": worst_level(self.findings),
                "findings": [f.to_dict() for f in self.findings]}

    def _repr_html_(self) -> str:
        head = f"<h3>{html.escape(self.title)}</h3>" if self.title else ""
        sentence = html.escape(verdict_sentence(self.findings))
        rows = []
        for f in self.findings:
            label, fg, bg = BADGE[f.level]
            rows.append(
                "<tr>"
                f"<td><span class='sa-badge sa-{f.level}' style='font-weight:bold;color:{fg};background:{bg};"
                f"padding:1px 6px;border-radius:4px'>{label}</span></td>"
                f"<td>{html.escape(where_name(f))}</td>"
                f"<td><code>{html.escape(f.metric)}</code></td>"
                f"<td>{html.escape(format_value(f.value))}</td>"
                f"<td>{html.escape(format_value(f.threshold) if f.threshold is not None else '-')}</td>"
                f"<td>{html.escape(audit_text(f.message))}</td>"
                "</tr>")
        table = ("<table class='sa-findings'><thead><tr><th>verdict</th><th>run</th><th>metric</th>"
                 "<th>value</th><th>threshold</th><th>what it means / what to do</th>"
                 "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
        style = "<style>.sa-findings td, .sa-findings th {text-align: left !important;}</style>"
        return f"{style}{head}<p class='sa-verdict'><b>{sentence}</b></p>{table}"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self._repr_html_(), "text/plain": verdict_sentence(self.findings),
                FINDINGS_MIMETYPE: to_jsonable(self.to_dict())}


def describe_run_rule(result) -> str:
    """The sentence a page shows under an audit's verdicts: the rule that chose its runs (the result's ``run_rule``,
    a key of :data:`audits.corpus.runs.RULES`, as its JSON names it) and what the rule says; ``""`` for what has
    none (a skipped or unsaved result, the reason a comparison is n/a).

    >>> class Result:
    ...     run_rule = "every run"
    >>> describe_run_rule(Result()).startswith("Runs chosen by the rule `every run`: every run of the corpus")
    True
    """
    rule = getattr(result, "run_rule", None)
    if not isinstance(rule, str):
        return ""
    return f"Runs chosen by the rule `{rule}`: {RULES.get(rule, '(not a documented rule)')}."


def show_findings(findings: Sequence[Finding], *, audit: str, title: str | None = None) -> FindingsDisplay:
    """Display object for a notebook cell: verdict sentence + findings table (+ JSON for the index)."""
    return FindingsDisplay(findings, audit=audit, title=title)


#: A run of backticks: what opens and closes a Markdown code span (CommonMark: a closing run has the same length).
_BACKTICKS = re.compile(r"`+")

#: Characters of a page's text (outside its code spans) that the notebook's Markdown renderer (nbconvert's mistune,
#: with its math plugin) would read as syntax: written as numeric character references, which show the character
#: itself and are never syntax. A backslash escapes the backtick after it (so a code span this module saw would not
#: be one for the renderer), a ``$`` opens inline math, which the renderer matches before code spans (and shows
#: ``<`` in it as ``&lt;``), ``_`` and ``~`` emphasise and strike out. The narrative writes none of them as syntax.
_LITERAL = str.maketrans({"\\": "&#92;", "$": "&#36;", "_": "&#95;", "~": "&#126;", "`": "&#96;", "[": "&#91;",
                          "]": "&#93;"})

#: The only links the narrative writes: to a page of the same report (``[The choice of clock](clocks.html)``). Every
#: other bracket is a character reference: a run named ``[quiet](javascript:...)`` was a link that ran its script
#: when clicked, in the calibration and overview pages.
_PAGE_LINK = re.compile(r"\[([^\[\]`]+)\]\(([a-z][a-z0-9_-]*\.html)\)")


def _literal(text: str) -> str:
    out, at = [], 0
    for link in _PAGE_LINK.finditer(text):
        out.append(html.escape(text[at:link.start()], quote=False).translate(_LITERAL))
        out.append(f"[{html.escape(link.group(1), quote=False).translate(_LITERAL)}]({link.group(2)})")
        at = link.end()
    out.append(html.escape(text[at:], quote=False).translate(_LITERAL))
    return "".join(out)


#: Unicode's bidirectional isolates: FIRST STRONG ISOLATE opens one, POP DIRECTIONAL ISOLATE closes it. A name in
#: the narrative is written between them (:func:`as_name`), so that a right-to-left override (U+202E) or any other
#: bidi control in it cannot reorder the text around it, and :func:`without_raw_html` knows it for a name.
FSI, PDI = "\u2068", "\u2069"
_ISOLATE_INITIATORS = frozenset("\u2066\u2067\u2068")  # LRI, RLI, FSI

#: Every character a name could bring in as Markdown (CommonMark's escapable ASCII punctuation, ``&`` ``<`` ``>``
#: among them) or as a line break, written as a numeric character reference inside a name: it shows the character
#: and is never syntax.
_NAME_LITERAL = {ord(c): f"&#{ord(c)};" for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\n\r"}


#: What :func:`as_name` isolates: a name with a character the Markdown pass outside names (:func:`_literal`) leaves
#: as syntax (``*`` emphasises, a pair of backticks is a code span, a line break can start a block: a heading, a
#: list, a table; the narrative starts no line with a name, so ``#``, ``-`` or ``1.`` in one are text), or with a
#: character the bidi algorithm reads right to left or as a control (Hebrew or Arabic letters and digits, U+202A-E,
#: U+2066-9): in a left-to-right sentence "שלום · 001" shows its campaign on the left. Other names (``_``, ``$``,
#: ``<``, brackets, ... included) are shown as they are by :func:`_literal`, and a plain string stays plain.
_NAME_SYNTAX = frozenset("*`[\n\r")  # "[": a name "[a](b.html)" would be a link to a page of the report
_BIDI_CLASSES = frozenset({"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})


#: What the renderer links without brackets (mistune's url plugin: ``https?://...``): a run named
#: ``http://host/x`` was a link in the report.
_AUTOLINK = "://"


def _has_bidi(text: str) -> bool:
    return any(unicodedata.bidirectional(c) in _BIDI_CLASSES for c in text)


def _needs_isolate(text: str) -> bool:
    return (text != text.strip() or any(c in _NAME_SYNTAX for c in text)  # "**quiet **" is no bold
            or _AUTOLINK in text or _has_bidi(text))


def as_name(value) -> str:
    """A name a user gave (environment, campaign, problem, test, solution, file), ready for the narrative's
    Markdown. A name Markdown or the bidi algorithm could read as more than text (:data:`_NAME_SYNTAX`) is written
    between bidi isolates (:data:`FSI` ... :data:`PDI`), balanced so that the name's own bidi controls end with it
    (an isolate it opens is closed before the final PDI; a PDI it has no opener for closes an FSI put before it):
    a right-to-left override in it cannot reorder the text after it, and :func:`without_raw_html` writes every
    Markdown character of the span as a character reference (``*star*``, backticks, ``# `` show as written).

    >>> as_name("quiet · c0"), as_name("a*b") == FSI + "a*b" + PDI
    ('quiet · c0', True)
    >>> as_name("x\u2069y\u2067") == FSI + FSI + "x\u2069y\u2067" + PDI + PDI
    True
    """
    text = str(value)
    return _isolated(text) if _needs_isolate(text) else text


def _isolated(text: str) -> str:
    """``text`` between :data:`FSI` and :data:`PDI`, balanced as :func:`as_name` says."""
    depth = unmatched = 0
    for char in text:
        if char in _ISOLATE_INITIATORS:
            depth += 1
        elif char == PDI:
            if depth:
                depth -= 1
            else:
                unmatched += 1
    return FSI * (1 + unmatched) + text + PDI * depth + PDI


def code_name(value) -> str:
    """A name in a code span (`` `a.parquet` ``), or isolated as :func:`as_name` does when a code span cannot show
    it as written (a backtick in it ends the span; a bidi control in it reorders what follows).

    >>> code_name("a.parquet"), code_name("a`b") == as_name("a`b")
    ('`a.parquet`', True)
    """
    text = str(value)
    return as_name(text) if _needs_isolate(text) else f"`{text}`"


#: A word of an audit's text: what :func:`audit_text` isolates when a bidi control or a right-to-left letter is in it.
_WORD = re.compile(r"\S+")


def audit_text(value) -> str:
    """Text an audit wrote (a finding's message or reason, the reason an audit or a pair was skipped, a calibration's
    advice), ready for the page: shown as the command line prints it, whatever names it quotes.

    The rule: the audits (:mod:`audits.checks`) write plain text, the same for the terminal, the JSON and the report,
    with the names a user gave pasted in as they are ("at ('p0', 'ref-001')", "busy cannot stand in for quiet"); the
    narrative never reads that text as Markdown. A text holding a character Markdown would read as syntax there (``*``,
    a backtick, ``[``, a line break, ``://``; the others :func:`without_raw_html` shows as written anyway) or a bidi
    control or right-to-left letter is written whole between bidi isolates, so that :func:`without_raw_html` writes
    each Markdown character of it as a character reference (a source environment ``*qa*`` quoted in "... cannot
    stand in for *qa*" was shown in italics, ``[x](y.html)`` was a link, the audit's own quotes ```duration_s```
    showed as code: now as backticks, as in the terminal). Where a name ends in the text is not known here, so each
    word (a run of non-space characters) holding a bidi control or a right-to-left letter is isolated on its own
    (:func:`as_name`'s balancing): a right-to-left override in a quoted name reorders the rest of its word only,
    never the text after it. Any other text is returned unchanged: the page shows the JSON's text byte for byte.
    Used wherever the narrative shows such text, in Markdown and in its HTML tables (where the isolates keep the
    bidi part of the rule).

    >>> audit_text("busy cannot stand in for quiet; time on quiet itself")
    'busy cannot stand in for quiet; time on quiet itself'
    >>> audit_text("*qa* cannot stand in") == FSI + "*qa* cannot stand in" + PDI
    True
    >>> audit_text("at a\u202eb, then c") == FSI + "at " + FSI + "a\u202eb," + PDI + " then c" + PDI
    True
    """
    text = str(value)
    if not (any(c in _NAME_SYNTAX for c in text) or _AUTOLINK in text or _has_bidi(text)):
        return text
    words = _WORD.sub(lambda word: _isolated(word.group()) if _has_bidi(word.group()) else word.group(), text)
    return FSI + words + PDI


def run_name(run) -> str:
    """``environment · campaign`` of a run (a :class:`audits.corpus.runs.RunKey`, a pair, or anything with the
    two attributes), each name isolated (:func:`as_name`)."""
    env, camp = (run if isinstance(run, tuple) else (run.environment, run.campaign))
    return f"{as_name(env)} · {as_name(camp)}"


def where_name(finding) -> str:
    """:attr:`Finding.where` with each name isolated: ``environment · campaign · subject``, the environment and the
    campaign by :func:`as_name`, the subject by :func:`audit_text`: it is a label the audit composed (a calibration's
    pair of runs, ``busy · c0 -> quiet · c0``), whose names an override in the first would reverse."""
    return where_subject(finding.environment, finding.campaign, finding.subject)


def where_subject(environment=None, campaign=None, subject=None) -> str:
    """:func:`where_name` of the three parts (as a finding's dict holds them: the index page)."""
    return where_label(None if environment is None else as_name(environment),
                       None if campaign is None else as_name(campaign),
                       None if subject is None else audit_text(subject))


def _name_spans(text: str):
    """``(start, end)`` of each name :func:`as_name` wrote: an FSI outside any isolate, to its matching PDI."""
    depth, start = 0, None
    for at, char in enumerate(text):
        if char in _ISOLATE_INITIATORS:
            if depth == 0 and char == FSI:
                start = at
            depth += 1
        elif char == PDI and depth:
            depth -= 1
            if depth == 0 and start is not None:
                yield start, at + 1
                start = None


def without_raw_html(text: str) -> str:
    """``text`` with every name :func:`as_name` isolated written literally (each Markdown character a numeric
    character reference), and the rest as :func:`_without_raw_html` leaves it."""
    out, at = [], 0
    for start, end in _name_spans(text):
        out.append(_without_raw_html(text[at:start]))
        out.append(text[start:end].translate(_NAME_LITERAL))
        at = end
    out.append(_without_raw_html(text[at:]))
    return "".join(out)


def _without_raw_html(text: str) -> str:
    """``text`` with nothing the Markdown renderer could read as raw HTML or as syntax a name brought in, outside its
    code spans: ``&``, ``<``, ``>``, ``\\``, ``$``, ``_``, ``~``, brackets (but those of a link to a page of the report,
    :data:`_PAGE_LINK`) and unmatched backticks as character references.

    The narrative's Markdown carries the names a user gave (environments, campaigns, problems, solutions: folder
    names of a downloaded archive among them) and messages that quote them. Markdown passes raw HTML through, so a
    run named ``quiet <i>`` turned the rest of a sentence italic, and a name holding a tag with an event handler
    would run it in the report. Escaping ``<`` alone is not enough: the text inside code spans is left as written
    (it is shown literally there, and a reference would not be decoded), so the renderer must see the same code
    spans as this function does. It did not: a backslash before a backtick (``\\`<img ...>```) or a ``$`` before
    it (``$`$ <img ...> ```: the renderer's inline math is matched first) made the renderer read the tag as raw
    HTML, and a run so named ran its ``onerror`` in the calibration page. With these characters written as
    references outside code spans, every backtick left is one of a code span this function matched. The narrative
    writes none of these characters as syntax, so this changes nothing it means to show; names show as written
    (``$a$``, ``_b_``). Markdown's ``*`` is left as syntax here (the narrative's own bold and italics use it): a name
    with one is isolated by :func:`as_name`, whose span :func:`without_raw_html` writes literally.

    >>> without_raw_html("quiet <i> & `a<b>` done")
    'quiet &lt;i&gt; &amp; `a<b>` done'
    >>> without_raw_html("\\\\`<b>` $x$ _y_")
    '&#92;`<b>` &#36;x&#36; &#95;y&#95;'
    """
    out, at = [], 0
    while True:
        opening = _BACKTICKS.search(text, at)
        if opening is None:
            out.append(_literal(text[at:]))
            return "".join(out)
        closing = re.compile(r"(?<!`)" + opening.group() + r"(?!`)").search(text, opening.end())
        if closing is None:  # an unmatched run is literal backticks; escape past it
            out.append(_literal(text[at:opening.end()]))
            at = opening.end()
            continue
        out.append(_literal(text[at:opening.start()]))
        out.append(text[opening.start():closing.end()])
        at = closing.end()


class Markdown:
    """Markdown text for a notebook output (a minimal stand-in that does not need IPython); raw HTML in it is shown
    as text (:func:`without_raw_html`)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return without_raw_html(self.text)

    def __repr__(self) -> str:
        return self.text


#: matplotlib reads the text between two ``$`` as mathtext (TeX-like math). The figures' texts carry names a user
#: gave (problems, solutions, runs): a problem named ``cost $\frac$ here`` raised ValueError when the figure was
#: drawn and failed its page, and ``$5 or $10`` was drawn as math. Names are shown as written; no figure here
#: draws math (the figure functions run under it: audits.report.plots._layout.names_as_text).
PLAIN_TEXT = {"text.parse_math": False}


@functools.cache
def _plain_log_formatter() -> type:
    """matplotlib's LogFormatter writing each label it draws as a plain number (``f"{x:g}"``), never mathtext:
    the same ticks labelled (its own rules for a base, minor ticks and a narrow range), other text. A class made
    on first use, since matplotlib is imported only when a figure is drawn."""
    # deferred: matplotlib (plots): only when a figure is drawn
    from matplotlib.ticker import LogFormatter

    class PlainLogFormatter(LogFormatter):
        def __call__(self, x, pos=None):
            return f"{x:g}" if super().__call__(x, pos) else ""

    return PlainLogFormatter


def figure_png(fig, *, dpi: int = 110) -> bytes:
    """PNG bytes of a matplotlib Figure (tight bounding box), its texts drawn as written (never as math: the tick
    labels matplotlib makes while drawing carry problem and solution names; :data:`PLAIN_TEXT`)."""
    # deferred: matplotlib (plots): only when a figure is drawn
    import matplotlib
    from matplotlib.ticker import LogFormatter

    # A log axis labels its ticks in mathtext ("$\\mathdefault{10^{-1}}$"), which PLAIN_TEXT would draw as written:
    # every log axis of the pages showed that string under its ticks. Its formatters become plain ones with the
    # same base and the same choice of ticks to label ("0.1", "1", "10"; base 2: "0.5", "1", "2").
    plain = _plain_log_formatter()
    for axis in (a for ax in fig.get_axes() for a in (ax.xaxis, ax.yaxis)):
        for formatter, setter in ((axis.get_major_formatter(), axis.set_major_formatter),
                                  (axis.get_minor_formatter(), axis.set_minor_formatter)):
            if isinstance(formatter, LogFormatter) and not isinstance(formatter, plain):
                setter(plain(base=formatter._base, labelOnlyBase=formatter.labelOnlyBase,
                             minor_thresholds=formatter.minor_thresholds, linthresh=formatter._linthresh))
    buffer = io.BytesIO()
    with matplotlib.rc_context(PLAIN_TEXT):
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def show_figure(fig, *, dpi: int = 110):
    """Display a matplotlib Figure once, as a PNG, and close it.

    The PNG is rendered here rather than by the notebook's inline backend: the plot modules select the
    Agg backend, under which IPython has no figure formatter (the cell would show ``<Figure ...>``).
    nbconvert turns the PNG into a data URI, so the HTML stays self-contained.
    """
    # deferred: matplotlib (plots) and IPython (notebook pages): only when a figure is shown
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    try:
        display(Image(data=figure_png(fig, dpi=dpi), format="png"))
    finally:
        plt.close(fig)


def is_skipped(audit) -> bool:
    return bool(getattr(audit, "skipped", False))


def _plot_name(plot) -> str:
    return getattr(plot, "__name__", type(plot).__name__)


def _na_reasons(findings) -> str:
    return "; ".join(dict.fromkeys(f"{where_name(f) + ': ' if f.where else ''}{audit_text(f.reason)}" for f in findings))


def _no_interval(interval) -> bool:
    return interval is not None and not (np.isfinite(interval.low) and np.isfinite(interval.high))


def _why_no_intervals(audit) -> str:
    n_boot = getattr(audit, "n_boot", None)
    return "n_boot = 0 draws no resamples" if n_boot == 0 else "intervals resample problems and need >= 2"


def figure_notes(plot, audit, *, metric: str | None = None) -> tuple[str | None, list[str]]:
    """What a page's figure cannot show on this corpus, as sentences: ``(not_drawn, notes)``.

    ``not_drawn`` says why the figure is not drawn at all (None: it is drawn): a skipped audit, every finding
    on ``metric`` (the figure's quantity) ``n/a``, or nothing to draw (fewer than 2 paired cells for the
    calibration figures, no run with >= 2 repeats for the aggregation figure, no reward environment
    simulated). ``notes`` say what a drawn figure leaves out: the runs whose ``metric`` is ``n/a``, the bands
    it cannot draw (no intervals with one problem or ``n_boot = 0``, no spread across repeat pairs with one
    repeat), a calibration whose leave-one-problem-out R² could not be measured. Every sentence comes from
    the audit's own numbers and ``n/a`` reasons.

    Examples
    --------
    >>> from audits.protocol.findings import Finding
    >>> class Audit:  # any result with findings
    ...     findings = (Finding.not_available("icc", "one repeat", environment="busy", campaign="c0"),)
    >>> figure_notes(lambda audit: None, Audit(), metric="icc")[0]
    'icc is not measurable on this corpus (busy · c0: one repeat)'
    """
    if is_skipped(audit):
        return f"not measured: {audit_text(audit.reason)}", []
    notes: list[str] = []
    if metric is not None:
        about = [f for f in getattr(audit, "findings", ()) if f.metric == metric]
        if about and all(f.level == NA for f in about):
            return f"{metric} is not measurable on this corpus ({_na_reasons(about)})", []
        missing = [f for f in about if f.level == NA]
        if missing:
            notes.append(f"Not in the figure ({metric} n/a): {_na_reasons(missing)}.")
    name = _plot_name(plot)
    if name in ("calibration_scatter", "bland_altman_plot"):
        pairing = audit.pairing
        if pairing.n_pairs < 2 or (name == "bland_altman_plot" and audit.bland_altman is None):
            return (f"{pairing.n_pairs} paired (problem, test, solution) cell{'' if pairing.n_pairs == 1 else 's'} "
                    "between the two runs; a map and the agreement need >= 2: time the same reference solutions "
                    "on the same problems on both runs"), []
        if name == "calibration_scatter" and pairing.n_problems < 2:
            notes.append(f"The families are fitted on all {pairing.n_pairs:,} pairs; their leave-one-problem-out R² "
                         f"is not measured ({pairing.n_problems} problem pairs up; it needs >= 2).")
        if name == "bland_altman_plot" and _no_interval(audit.bland_altman.bias):
            notes.append(f"The bias and the limits of agreement are drawn without their CI bands "
                         f"({_why_no_intervals(audit) if pairing.n_problems >= 2 else '1 problem pairs up'}).")
    elif name == "stability_range_figure":
        left = [f for f in getattr(audit, "findings", ()) if f.metric == "repeats" and f.level == NA]
        if not getattr(audit, "comparisons", ()):
            return f"no run was compared ({_na_reasons(left) or 'no run given'})", []
        if left:
            notes.append(f"Not in the figure: {_na_reasons(left)}.")
        table = audit.table
        if len(table) and not np.isfinite(table[["stability_low", "stability_high"]].to_numpy(dtype=float)).any():
            notes.append("No error bars: no bootstrap intervals (one problem per run, or n_boot = 0).")
    elif name in ("reward_curves", "zero_advantage_by_group_size"):
        d = audit.diagnostics
        if d.empty:
            return "no reward environment was simulated", []
        if (d["level"] == NA).all():  # nothing measured (e.g. no rollout scored): a sentence, not empty axes
            verdicts = [f for f in getattr(audit, "findings", ()) if f.metric == "verdict" and f.level == NA]
            return f"nothing was measured ({_na_reasons(verdicts) or 'every diagnostic is n/a'})", []
        if name == "reward_curves" and (d["n_pairs"] < 2).all():
            notes.append("No ±1 sd band: the curves come from one repeat, so their spread across repeat pairs "
                         "(timing noise) is not measured; collect >= 2 repeats.")
    return None, notes


def show_plot(plot, audit, *, metric: str | None = None, **options):
    """Display ``plot(audit, **options)`` (a figure function of :mod:`audits.report.plots`) once, as a PNG.

    What the corpus does not let it draw is said in a sentence instead (:func:`figure_notes`): a skipped
    audit (e.g. :class:`audits.report.inputs.CalibrationSkipped`), every finding on ``metric`` (the figure's
    quantity) ``n/a``, nothing to draw; and below a drawn figure, what it leaves out (runs, bands).
    """
    # deferred: IPython (notebook pages): only when a page displays a figure
    from IPython.display import display

    not_drawn, notes = figure_notes(plot, audit, metric=metric)
    if not_drawn is not None:
        display(Markdown(f"*Figure not drawn: {not_drawn}.*"))
        return
    show_figure(plot(audit, **options))
    if notes:
        display(Markdown("*" + " ".join(notes) + "*"))


def fixed(value, spec: str) -> str:
    """``value`` in the format ``spec``; ``-`` where undefined (None, NaN: no interval without resamples)."""
    return "-" if value is None or not np.isfinite(float(value)) else format(float(value), spec)


def fixed_ci(row, column: str, spec: str, prefix: str | None = None) -> str:
    """``estimate [low, high]`` in the format ``spec`` (:func:`fixed`); the bounds are ``column_low`` /
    ``column_high``, or ``prefix + "low"`` / ``prefix + "high"``."""
    low, high = ((row[f"{column}_low"], row[f"{column}_high"]) if prefix is None
                 else (row[prefix + "low"], row[prefix + "high"]))
    return f"{fixed(row[column], spec)} [{fixed(low, spec)}, {fixed(high, spec)}]"


def finding_of(findings, run, metric: str) -> Finding | None:
    """The audit's finding on ``metric`` for ``run`` (the narrative reads verdicts, it never judges)."""
    for f in findings:
        if f.environment == run.environment and f.campaign == run.campaign and f.metric == metric:
            return f
    return None


def run_index(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(rows[0]) if rows else ["environment", "campaign"]).set_index(
        ["environment", "campaign"])


def ci_text(row, column: str, digits: int = 3, *, low: str = "_low", high: str = "_high") -> str:
    """``estimate [low, high]`` from a row holding ``column``, ``column + low`` and ``column + high``;
    ``estimate (no CI)`` when a bound is missing or NaN (no resamples: one problem, or n_boot = 0), as the
    command line's findings say it (:func:`audits.protocol.findings.interval_text`).

    >>> ci_text({"auc": 0.5, "auc_low": 0.4, "auc_high": 0.6}, "auc"), ci_text({"auc": 0.5, "auc_low": float("nan")}, "auc")
    ('0.5 [0.4, 0.6]', '0.5 (no CI)')
    """
    return interval_words(row[column], row.get(column + low), row.get(column + high), digits)


def interval_words(estimate, low, high, digits: int = 3) -> str:
    """``estimate [low, high]`` with :func:`format_value`; ``estimate (no CI)`` when a bound is missing or NaN.

    >>> interval_words(0.5, 0.25, 0.75), interval_words(1.0, None, float("nan")), interval_words(None, None, None)
    ('0.5 [0.25, 0.75]', '1 (no CI)', 'n/a')
    """
    if _missing(estimate):  # not measured: "- (no CI)" said nothing
        return NA
    lo, hi = format_value(low, digits), format_value(high, digits)
    if lo == "-" or hi == "-":  # no resamples (one problem, or n_boot = 0): no interval
        return f"{format_value(estimate, digits)} (no CI)"
    return f"{format_value(estimate, digits)} [{lo}, {hi}]"


def sim_ci(row, column: str) -> str:
    return ci_text(row, column, 2, low="_ci_low", high="_ci_high")
