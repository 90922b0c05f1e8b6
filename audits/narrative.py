"""Prose and display helpers for the report notebooks.

Everything a report *says* about its numbers comes from a function here, so a
unit test can reach it (the notebooks only call these). Two kinds of helpers:

* **verdict display**: :func:`show_findings` renders a list of
  :class:`~audits.findings.Finding` as an HTML table and, beside it, as a
  machine-readable output (mimetype :data:`FINDINGS_MIMETYPE`) that
  :mod:`audits.report` reads back from the executed notebook to build the
  index page's headline verdicts;
* **interpretation**: small functions that turn an audit's numbers into one
  or two sentences (``describe_*``), always quoting the number, its interval
  and n, and saying what to do when a threshold is crossed.

Examples
--------
>>> from audits.findings import Finding
>>> f = [Finding("warn", "median_repeat_cv", 0.12, "<= 0.05 pass", "Timing is noisy.", "busy")]
>>> verdict_sentence(f)
'Verdict: WARN (0 fail, 1 warn, 0 pass). Worst: [busy] median_repeat_cv = 0.12 - Timing is noisy.'
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from audits.findings import LEVELS, Finding, to_jsonable, worst_level

__all__ = [
    "FINDINGS_MIMETYPE", "FindingsDisplay", "show_findings", "findings_frame", "rank_findings",
    "verdict_sentence", "format_value", "format_interval", "Markdown", "show_figure", "corpus_overview",
]

FINDINGS_MIMETYPE = "application/vnd.speedaudit.findings+json"
_BADGE = {"pass": ("PASS", "#1a7f37", "#dafbe1"), "warn": ("WARN", "#9a6700", "#fff8c5"),
          "fail": ("FAIL", "#cf222e", "#ffebe9")}


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
        if math.isnan(value):
            return "-"
        return f"{float(value):.{digits}g}"
    return str(value)


def format_interval(interval, digits: int = 3, scale: float = 1.0, unit: str = "") -> str:
    """``estimate [low, high] (n=...)`` for a :class:`stats.bootstrap.Interval` (or a dict of one).

    >>> from stats.bootstrap import Interval
    >>> format_interval(Interval(0.05, 0.04, 0.061, 20))
    '0.05 [0.04, 0.061] (n=20)'
    >>> format_interval(Interval(0.05, 0.04, 0.061, 20), scale=100, unit="%")
    '5% [4%, 6.1%] (n=20)'
    """
    if interval is None:
        return "-"
    if isinstance(interval, dict):
        est, low, high, n = (interval.get("estimate"), interval.get("ci_low", interval.get("low")),
                             interval.get("ci_high", interval.get("high")), interval.get("n"))
    else:
        est, low, high, n = interval.estimate, interval.low, interval.high, interval.n

    def f(x):
        return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format_value(x * scale, digits) + unit

    return f"{f(est)} [{f(low)}, {f(high)}] (n={n})"


def rank_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings ordered worst first (fail, warn, pass), keeping the audit's order within a level."""
    rows = list(findings)
    order = {level: i for i, level in enumerate(reversed(LEVELS))}
    return sorted(rows, key=lambda f: order[f.level])


def _finding_text(f: Finding) -> str:
    where = f"[{f.environment}] " if f.environment else ""
    return f"{where}{f.metric} = {format_value(f.value)} - {f.message}"


def verdict_sentence(findings: Iterable[Finding]) -> str:
    """One sentence: overall level, counts per level and the worst finding.

    The overall level is the worst finding's (:func:`audits.findings.worst_level`).
    """
    rows = rank_findings(findings)
    if not rows:
        return "Verdict: no findings (the audit had nothing to judge on this corpus)."
    counts = {level: sum(f.level == level for f in rows) for level in LEVELS}
    level = worst_level(rows)
    text = (f"Verdict: {level.upper()} ({counts['fail']} fail, {counts['warn']} warn, {counts['pass']} pass). "
            f"Worst: {_finding_text(rows[0])}")
    return text


def findings_frame(findings: Iterable[Finding], *, audit: str | None = None) -> pd.DataFrame:
    """Findings as a tidy table (one row per finding, worst first)."""
    rows = [f.to_dict() for f in rank_findings(findings)]
    frame = pd.DataFrame(rows, columns=["level", "metric", "value", "threshold", "message", "environment"])
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
        return {"audit": self.audit, "worst": worst_level(self.findings),
                "findings": [f.to_dict() for f in self.findings]}

    def _repr_html_(self) -> str:
        head = f"<h3>{html.escape(self.title)}</h3>" if self.title else ""
        sentence = html.escape(verdict_sentence(self.findings))
        rows = []
        for f in self.findings:
            label, fg, bg = _BADGE[f.level]
            rows.append(
                "<tr>"
                f"<td><span class='sa-badge sa-{f.level}' style='font-weight:bold;color:{fg};background:{bg};"
                f"padding:1px 6px;border-radius:4px'>{label}</span></td>"
                f"<td>{html.escape(f.environment or '')}</td>"
                f"<td><code>{html.escape(f.metric)}</code></td>"
                f"<td style='text-align:right'>{html.escape(format_value(f.value))}</td>"
                f"<td>{html.escape(format_value(f.threshold) if f.threshold is not None else '-')}</td>"
                f"<td style='text-align:left'>{html.escape(f.message)}</td>"
                "</tr>")
        table = ("<table class='sa-findings'><thead><tr><th>verdict</th><th>environment</th><th>metric</th>"
                 "<th>value</th><th>threshold</th><th style='text-align:left'>what it means / what to do</th>"
                 "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
        return f"{head}<p class='sa-verdict'><b>{sentence}</b></p>{table}"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self._repr_html_(), "text/plain": verdict_sentence(self.findings),
                FINDINGS_MIMETYPE: to_jsonable(self.to_dict())}


def show_findings(findings: Sequence[Finding], *, audit: str, title: str | None = None) -> FindingsDisplay:
    """Display object for a notebook cell: verdict sentence + findings table (+ JSON for the index)."""
    return FindingsDisplay(findings, audit=audit, title=title)


class Markdown:
    """Markdown text for a notebook output (a minimal stand-in that does not need IPython)."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


def show_figure(fig):
    """Display a matplotlib Figure once in a notebook and close it (no duplicate inline copy)."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    display(fig)
    plt.close(fig)


def corpus_overview(corpus: pd.DataFrame) -> pd.DataFrame:
    """Rows, problems, solutions and repeats per (environment, campaign): what the report is based on."""
    frame = corpus[corpus["role"].astype(object) != "floor"]
    grouped = frame.groupby(["environment", "campaign"], observed=True)
    out = pd.DataFrame({
        "rows": grouped.size(),
        "problems": grouped["problem"].nunique(),
        "solutions": grouped.apply(lambda g: len(g[["problem", "solution"]].drop_duplicates()),
                                   include_groups=False),
        "repeats": grouped["repeat"].max() + 1,
        "ok_share": grouped["status"].apply(lambda s: float((s.astype(object) == "ok").mean())),
    })
    return out.reset_index()


def describe_corpus(corpus: pd.DataFrame, sources: Sequence[str] | str = ()) -> str:
    """One paragraph saying what the report is based on (files, runs, problems, solutions, repeats)."""
    from pathlib import Path

    if isinstance(sources, str):
        sources = [sources]
    runs = corpus[["environment", "campaign"]].drop_duplicates().astype(str)
    run_text = ", ".join(f"{e}/{c}" for e, c in sorted(runs.itertuples(index=False)))
    body = corpus[corpus["role"].astype(object) != "floor"]
    n_problems = body["problem"].nunique()
    n_solutions = len(body[["problem", "solution"]].drop_duplicates())
    files = ", ".join(f"`{Path(s).name}`" for s in sources)
    return (f"**Corpus**: {len(corpus):,} executions from {files or 'memory'}: {n_problems:,} problems, "
            f"{n_solutions:,} (problem, solution) pairs, up to {int(body['repeat'].max()) + 1} repeats, "
            f"runs (environment/campaign): {run_text}.")
