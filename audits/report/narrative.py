"""Prose and display helpers for the report notebooks.

Everything a report *says* about its numbers comes from a function here, so a
unit test can reach it (the notebooks only call these). Two kinds of helpers:

* **verdict display**: :func:`show_findings` renders a list of
  :class:`~audits.protocol.findings.Finding` as an HTML table and, beside it, as a
  machine-readable output (mimetype :data:`FINDINGS_MIMETYPE`) that
  :mod:`audits.report.render` reads back from the executed notebook to build the
  index page's headline verdicts;
* **interpretation**: small functions that turn an audit's numbers into one
  or two sentences (``describe_*``), always quoting the number, its interval
  and n, and saying what to do when a threshold is crossed.

Examples
--------
>>> from audits.protocol.findings import Finding
>>> f = [Finding("warn", "median_repeat_cv", 0.12, "<= 0.05 pass", "Timing is noisy.", "busy")]
>>> verdict_sentence(f)
'Verdict: WARN (0 fail, 1 warn, 0 pass). Worst: [busy] median_repeat_cv = 0.12 - Timing is noisy.'
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from audits.checks.declared.clocks import ClocksThresholds
from audits.protocol.findings import ALL_LEVELS, NA, Finding, to_jsonable, worst_level

__all__ = [
    "FINDINGS_MIMETYPE", "FindingsDisplay", "show_findings", "findings_frame", "rank_findings",
    "verdict_sentence", "format_value", "format_interval", "Markdown", "show_figure", "figure_png", "corpus_overview",
    "describe_corpus", "describe_counts", "run_table", "calibration_fit_table", "describe_calibration", "reliability_table", "describe_reliability",
    "discriminability_table", "describe_discriminability", "aggregation_table", "describe_aggregation",
    "simulation_table", "describe_simulation", "verdict_overview", "describe_overview", "describe_profile", "show_plot", "show_verdicts",
    "contention_table", "describe_contention", "CLOCK_AGREEMENT", "CLOCK_FIGURES", "clocks_not_compared", "clocks_table",
    "clock_agreement_table", "recommend_clock", "describe_clocks", "show_clocks_plot", "clocks_headline",
    "figure_notes", "describe_not_measured",
]

FINDINGS_MIMETYPE = "application/vnd.speedaudit.findings+json"
_BADGE = {"pass": ("PASS", "#1a7f37", "#dafbe1"), "warn": ("WARN", "#9a6700", "#fff8c5"),
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
    """Findings ordered worst first (fail, warn, pass, then n/a), keeping the audit's order within a level."""
    return sorted(findings, key=lambda f: _RANK[f.level])


def _level_counts(findings) -> dict[str, int]:
    counts = dict.fromkeys(ALL_LEVELS, 0)
    for f in findings:
        counts[f.level] += 1
    return counts


def _finding_text(f: Finding) -> str:
    where = f"[{f.where}] " if f.where else ""
    return f"{where}{f.metric} = {format_value(f.value)} - {f.message}"


def verdict_sentence(findings: Iterable[Finding]) -> str:
    """One sentence: overall level, counts per level and the worst finding.

    The overall level is the worst finding's (:func:`audits.protocol.findings.worst_level`).
    """
    rows = rank_findings(findings)
    if not rows:
        return "Verdict: no findings (the audit had nothing to judge on this corpus)."
    counts = _level_counts(rows)
    level = worst_level(rows)
    na = f", {counts[NA]} n/a" if counts[NA] else ""
    text = (f"Verdict: {level if level == NA else level.upper()} ({counts['fail']} fail, {counts['warn']} warn, "
            f"{counts['pass']} pass{na}). Worst: {_finding_text(rows[0])}")
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
                f"<td>{html.escape(f.where)}</td>"
                f"<td><code>{html.escape(f.metric)}</code></td>"
                f"<td>{html.escape(format_value(f.value))}</td>"
                f"<td>{html.escape(format_value(f.threshold) if f.threshold is not None else '-')}</td>"
                f"<td>{html.escape(f.message)}</td>"
                "</tr>")
        table = ("<table class='sa-findings'><thead><tr><th>verdict</th><th>run</th><th>metric</th>"
                 "<th>value</th><th>threshold</th><th>what it means / what to do</th>"
                 "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
        style = "<style>.sa-findings td, .sa-findings th {text-align: left !important;}</style>"
        return f"{style}{head}<p class='sa-verdict'><b>{sentence}</b></p>{table}"

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


def figure_png(fig, *, dpi: int = 110) -> bytes:
    """PNG bytes of a matplotlib Figure (tight bounding box)."""
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    return buffer.getvalue()


def show_figure(fig, *, dpi: int = 110):
    """Display a matplotlib Figure once, as a PNG, and close it.

    The PNG is rendered here rather than by the notebook's inline backend: the plot modules select the
    Agg backend, under which IPython has no figure formatter (the cell would show ``<Figure ...>``).
    nbconvert turns the PNG into a data URI, so the HTML stays self-contained.
    """
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    try:
        display(Image(data=figure_png(fig, dpi=dpi), format="png"))
    finally:
        plt.close(fig)


def _mask_equal(column: pd.Series, value: str) -> np.ndarray:
    """``column == value`` as a bool array, fast for categoricals (compares codes, no object array)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        if value not in categories:
            return np.zeros(len(column), dtype=bool)
        return column.cat.codes.to_numpy() == categories.get_loc(value)
    return (column.astype(object) == value).to_numpy()


def run_table(runs, counts) -> pd.DataFrame:
    """Per run (environment, campaign), in the run table's order (:mod:`audits.corpus.runs`: timestamps, else
    the corpus order; a listing only), of the non-floor rows: rows, problems, solutions, repeats (most common
    per cell, and the most), ok share. ``runs``: :class:`audits.corpus.runs.Runs`; ``counts``:
    :class:`audits.corpus.counts.CorpusCounts` (a partitioned dataset's: its files' counts added up)."""
    per_run = [counts.runs.get(s.run, (0, 0, 0)) for s in runs]
    table = pd.DataFrame({
        "environment": [s.environment for s in runs], "campaign": [s.campaign for s in runs],
        "rows": [r for r, _, _ in per_run], "problems": [s.problems for s in runs],
        "solutions": [n for _, n, _ in per_run], "repeats": [s.repeats for s in runs],
        "max_repeats": [s.max_repeats for s in runs],
        "ok_share": [ok / rows if rows else float("nan") for rows, _, ok in per_run],
    })
    return table.set_index(["environment", "campaign"])


def describe_counts(runs, counts, sources: Sequence[str] | str = ()) -> str:
    """One sentence saying what the report is based on (files, runs, problems, solutions, repeats), from the
    run table and the counts (:func:`run_table`), so a partitioned dataset's is that of its rows loaded."""
    from pathlib import Path

    if isinstance(sources, str):
        sources = [sources]
    table = run_table(runs, counts)
    run_text = ", ".join(f"{e} · {c} ({r} repeat{'s' if r != 1 else ''})"
                         for (e, c), r in zip(table.index, table["repeats"]))
    repeats = int(table["max_repeats"].max()) if len(table) else 0
    files = ", ".join(f"`{Path(s).name}`" for s in sources)
    return (f"**Corpus**: {counts.executions:,} executions from {files or 'memory'}: {counts.problems:,} problems, "
            f"{counts.solutions:,} (problem, solution) pairs, up to {repeats} repeats, "
            f"runs (environment · campaign): {run_text}.")


def _skipped(audit) -> bool:
    return bool(getattr(audit, "skipped", False))


def _plot_name(plot) -> str:
    return getattr(plot, "__name__", type(plot).__name__)


def _na_reasons(findings) -> str:
    return "; ".join(dict.fromkeys(f"{f.where + ': ' if f.where else ''}{f.reason}" for f in findings))


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
    if _skipped(audit):
        return f"not measured: {audit.reason}", []
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
    audit (e.g. :class:`audits.report.render.CalibrationSkipped`), every finding on ``metric`` (the figure's
    quantity) ``n/a``, nothing to draw; and below a drawn figure, what it leaves out (runs, bands).
    """
    from IPython.display import display

    not_drawn, notes = figure_notes(plot, audit, metric=metric)
    if not_drawn is not None:
        display(Markdown(f"*Figure not drawn: {not_drawn}.*"))
        return
    show_figure(plot(audit, **options))
    if notes:
        display(Markdown("*" + " ".join(notes) + "*"))


def corpus_overview(corpus: pd.DataFrame) -> pd.DataFrame:
    """Rows, problems, solutions, repeats (most common per cell, and the most) and ok share per run
    (environment, campaign), floor rows excluded, in run order (:mod:`audits.corpus.runs`).

    Examples
    --------
    >>> frame = pd.DataFrame({"environment": "e", "campaign": ["a", "a", "b"], "problem": "p", "test": "t",
    ...     "solution": ["s", "s", "s"], "repeat": [0, 1, 0], "status": ["ok", "timeout", "ok"],
    ...     "role": "reference"})
    >>> corpus_overview(frame)[["rows", "solutions", "repeats", "ok_share"]].values.tolist()
    [[2.0, 1.0, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0]]
    """
    from audits.corpus.counts import corpus_counts
    from audits.corpus.runs import runs_of

    return run_table(runs_of(corpus), corpus_counts(corpus))


def describe_corpus(corpus: pd.DataFrame, sources: Sequence[str] | str = ()) -> str:
    """One sentence saying what the report is based on (files, runs, problems, solutions, repeats)."""
    from audits.corpus.counts import corpus_counts
    from audits.corpus.runs import runs_of

    return describe_counts(runs_of(corpus), corpus_counts(corpus), sources)


# --- calibration ---------------------------------------------------------------------------------

def calibration_fit_table(audit) -> pd.DataFrame:
    """The fitted families of a calibration audit, lowest held-out log error first (the rule that chooses the
    family), with CIs as text columns, the share of pairs more than 2x off out of fold and whether it is usable."""
    if _skipped(audit):
        return pd.DataFrame(columns=["family", "formula", "LOPO R²", "R² 95% CI", "log-ratio RMSE", "pairs",
                                     "problems"]).set_index("family")
    fits = audit.fits
    out = pd.DataFrame({
        "family": fits["name"],
        "formula": fits["formula"],
        "LOPO R²": fits["lopo_r2"].astype(float),
        "R² 95% CI": [f"[{_fixed(lo, '.3f')}, {_fixed(hi, '.3f')}]"
                      for lo, hi in zip(fits["lopo_r2_low"], fits["lopo_r2_high"])],
        "log-ratio RMSE": fits["lopo_log_rmse"].astype(float),
        "> 2x off": fits["share_2x_off"].astype(float) if "share_2x_off" in fits else np.nan,
        "usable": fits["usable"].astype(bool),
        "pairs": fits["n_pairs"],
        "problems": fits["n_problems"],
    })
    return out.sort_values("log-ratio RMSE", ascending=True, na_position="last").set_index("family")


def _fixed(value, spec: str) -> str:
    """``value`` in the format ``spec``; ``-`` where undefined (None, NaN: no interval without resamples)."""
    return "-" if value is None or not np.isfinite(float(value)) else format(float(value), spec)


def _fixed_ci(row, column: str, spec: str, prefix: str | None = None) -> str:
    """``estimate [low, high]`` in the format ``spec`` (:func:`_fixed`); the bounds are ``column_low`` /
    ``column_high``, or ``prefix + "low"`` / ``prefix + "high"``."""
    low, high = ((row[f"{column}_low"], row[f"{column}_high"]) if prefix is None
                 else (row[prefix + "low"], row[prefix + "high"]))
    return f"{_fixed(row[column], spec)} [{_fixed(low, spec)}, {_fixed(high, spec)}]"


def describe_calibration(audit) -> str:
    """What a calibration audit says: best family and its R², the affine map, agreement, rank agreement.

    Every number comes from the audit (``fits``, ``params``, ``bland_altman``, ``spearman_*``), with
    its bootstrap interval over problems and n.
    """
    if _skipped(audit):
        return f"**Not measured**: {audit.reason}."
    from audits.corpus.runs import describe_runs

    from audits.corpus.selection import PAIR_RULES

    pair = f"`{audit.source}` → `{audit.target}` ({audit.key})"
    rule = getattr(audit, "pair_rule", "named")
    parts = [f"**{pair}**: {describe_runs(audit.source_runs)} mapped onto {describe_runs(audit.target_runs)}; "
             f"{audit.pairing.n_pairs:,} paired (problem, test, solution) medians over "
             f"{audit.pairing.n_problems} problems. Pair chosen by the rule `{rule}`: {PAIR_RULES[rule]}."]
    if audit.best_family is None and audit.pairing.n_problems < 2:
        k = audit.pairing.n_problems
        parts.append(f"No family can be validated: {k} problem{'' if k == 1 else 's'} pair up, and the "
                     "leave-one-problem-out check (and every interval, which resamples problems) needs >= 2; "
                     "what follows is measured on the pairs as they are. **What to do**: time both runs on the "
                     "same problems (at least 2, better 10 or more).")
    elif audit.best_family is None:
        parts.append("No family predicts usable (positive) durations for every held-out problem. **What to do**: "
                     f"do not calibrate these timings; time on {audit.target} itself.")
    else:
        best = audit.fits.set_index("name").loc[audit.best_family]
        parts.append(f"The family with the lowest held-out log error, **{audit.best_family}** (`{best['formula']}`), "
                     f"predicts held-out problems with a typical error of ×{np.exp(float(best['lopo_log_rmse'])):.3f} "
                     f"(log-RMSE {_fixed_ci(best, 'lopo_log_rmse', '.3f')}; linear LOPO R² = "
                     f"{_fixed_ci(best, 'lopo_r2', '.3f')}).")
    aff = audit.params.loc[audit.params["family"] == "affine"].set_index("param")
    if {"slope", "intercept_s"} <= set(aff.index):
        a, b = aff.loc["slope"], aff.loc["intercept_s"][["estimate", "ci_low", "ci_high"]] * 1000
        parts.append(f"Affine map: {audit.target} ≈ {_fixed_ci(a, 'estimate', '.3f', 'ci_')} × {audit.source} + "
                     f"{_fixed_ci(b, 'estimate', '.1f', 'ci_')} ms.")
    ba = audit.bland_altman
    if ba is not None:
        parts.append(f"Bland-Altman: a {audit.target} timing is typically ×{np.exp(ba.bias.estimate):.3f} the "
                     f"{audit.source} one, and 95 % of single cells lie within ×{np.exp(ba.lower.estimate):.3f} .. "
                     f"×{np.exp(ba.upper.estimate):.3f}.")
    if audit.spearman_raw is not None:
        text = (f"Scores against the stored pool rank re-run solutions like the fresh pool with Spearman ρ = "
                f"{format_interval(audit.spearman_raw)}")
        if audit.spearman_calibrated is not None:
            text += f" raw, {format_interval(audit.spearman_calibrated)} after {audit.calibration_family} calibration"
        parts.append(text + ".")
    if audit.best_family is not None:  # (else what to do was said above)
        from audits.checks.calibration import calibration_advice

        parts.append(f"**What to do**: {calibration_advice(audit)}.")  # from the findings, as in the JSON
    return " ".join(parts)


# --- reliability and discriminability ------------------------------------------------------------

def _finding_of(findings, run, metric: str) -> Finding | None:
    """The audit's finding on ``metric`` for ``run`` (the narrative reads verdicts, it never judges)."""
    for f in findings:
        if f.environment == run.environment and f.campaign == run.campaign and f.metric == metric:
            return f
    return None


def _run_index(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(rows[0]) if rows else ["environment", "campaign"]).set_index(
        ["environment", "campaign"])


def reliability_table(audit) -> pd.DataFrame:
    """Headline reliability metrics, one row per run (environment, campaign), CIs as text."""
    rows = []
    for run, env in audit.runs.items():
        rows.append({
            "environment": run.environment, "campaign": run.campaign, "problems": env.n_problems,
            "repeats": env.n_repeats,
            "median repeat CV": format_interval(env.median_repeat_cv),
            "median sd (ms)": format_interval(env.median_abs_sd_ms),
            "mean rank range (points)": format_interval(env.drift.mean_range),
            "mean rank sd (points)": format_interval(env.drift.mean_sd),
            "worst rank range": format_value(env.drift.worst_range),
            "ICC(A,1)": format_interval(env.icc_agreement),
            "significant pairs": format_interval(env.significance.share),
            "repeats needed": format_value(env.repeats_needed),
        })
    return _run_index(rows)


def describe_reliability(audit) -> str:
    """One paragraph per run: repeat CV, rank drift, ICC and repeats needed, with what to do (from the findings)."""
    paragraphs = []
    t = audit.thresholds
    for run, env in audit.runs.items():
        cv = env.median_repeat_cv
        unit = "processes" if env.variance.nested else "repeats"
        stated = env.run_summary.repeats_text if env.run_summary is not None else f"{env.n_repeats} repeats"
        text = (f"**{run}** ({stated}): the median repeat CV is {format_interval(cv)} (median over (problem, test, solution) "
                f"cells of correct references; CI over problems), an absolute sd of "
                f"{format_value(env.median_abs_sd_ms.estimate)} ms. Scored once per repeat against a fixed pool, a "
                f"solution's score moves by {format_value(env.drift.mean_range.estimate)} points on average "
                f"(range over {env.n_repeats} {unit}; worst {format_value(env.drift.worst_range)}), a within-problem "
                f"sd of {format_interval(env.drift.mean_sd)} points. Test-retest agreement ICC(A,1) is "
                f"{format_interval(env.icc_agreement)}; "
                f"{format_value(env.repeats_needed)} {unit} would give a per-problem score reliability of "
                f"{env.target_reliability:g}.")
        finding = _finding_of(audit.findings, run, "median_repeat_cv")
        level = None if finding is None else finding.level
        if level == "fail":
            text += (f" **Too noisy** (fail at {t.repeat_cv_fail:g}): do not reward on single timings here; run "
                     "fewer workers per machine, pin CPUs or take the median of several repeats.")
        elif level == "warn" and np.isfinite(cv.estimate):
            text += f" **Noisy** (warn at {t.repeat_cv_warn:g}): use the median of repeats for rewards."
        elif level == "pass":
            text += f" Repeatable at the {t.repeat_cv_warn:g} warn threshold."
        elif finding is not None:
            text += f" Repeat noise: {finding.message}."
        paragraphs.append(text)
    return "\n\n".join(paragraphs) if paragraphs else "No run had repeated reference timings."


def discriminability_table(audit) -> pd.DataFrame:
    """Headline discriminability metrics, one row per run (environment, campaign), CIs as text."""
    rows = []
    for run, env in audit.runs.items():
        rows.append({
            "environment": run.environment, "campaign": run.campaign, "problems": len(env.problems),
            "filterable share": format_interval(env.filterable_share),
            "filterable (noise-aware)": format_interval(env.filterable_share_noise_aware),
            "median robust CV": format_interval(env.median_robust_cv),
            "strong-weak gap (points)": format_interval(env.gap.gap),
            "floor (ms)": format_value(env.floor_s * 1000 if env.floor_s is not None else None),
            "tests near floor": format_value(env.near_floor_test_share),
            "problems near floor": len(env.flagged_problems),
        })
    return _run_index(rows)


def describe_discriminability(audit) -> str:
    """One paragraph per run: filterable share, strong-weak gap and the floor, with what to do."""
    paragraphs = []
    t = audit.thresholds
    for run, env in audit.runs.items():
        share = env.filterable_share
        repeats = "" if env.run_summary is None else f" ({env.run_summary.repeats_text})"
        text = (f"**{run}**{repeats}: {format_value(share.estimate * 100 if np.isfinite(share.estimate) else None)} % of "
                f"problems are duration-filterable (robust CV of their tests' reference medians ≥ {t.robust_cv:g}; "
                f"{format_interval(share)}), {format_value(env.filterable_share_noise_aware.estimate * 100)} % once "
                f"repeat noise is discounted. The slowest quarter of references scores "
                f"{format_interval(env.gap.gap)} points worse than the fastest quarter (strong-weak gap). The "
                f"sandbox floor is {format_value(env.floor_s * 1000)} ms ({env.floor_source}); "
                f"{format_value(env.near_floor_test_share * 100)} % of optimization tests have a reference median "
                f"within {t.near_floor_factor:g}× of it.")
        if env.flagged_problems:
            shown = ", ".join(env.flagged_problems[:8]) + (" …" if len(env.flagged_problems) > 8 else "")
            text += (f" Flagged problems (most tests near the floor: their ranks are start-up noise): {shown}. "
                     "Enlarge their inputs or drop those tests from the speed score.")
        paragraphs.append(text)
    return "\n\n".join(paragraphs) if paragraphs else "No run had reference timings."


# --- aggregation ---------------------------------------------------------------------------------

def _ci_text(row, column: str, digits: int = 3, *, low: str = "_low", high: str = "_high") -> str:
    """``estimate [low, high]`` from a row holding ``column``, ``column + low`` and ``column + high`` (a bound
    the row lacks, as without resamples, shows as ``-``)."""
    return (f"{format_value(row[column], digits)} [{format_value(row.get(column + low), digits)}, "
            f"{format_value(row.get(column + high), digits)}]")


def _sim_ci(row, column: str) -> str:
    return _ci_text(row, column, 2, low="_ci_low", high="_ci_high")


def _aggregation_rows(comp) -> pd.DataFrame:
    table = comp.table.sort_values(["ratio", "aggregator"], na_position="last")
    return pd.DataFrame({
        "aggregator": table["aggregator"].to_numpy(),
        "stability (points)": [_ci_text(r, "stability") for _, r in table.iterrows()],
        "dynamic range (points)": [_ci_text(r, "dynamic_range") for _, r in table.iterrows()],
        "ratio": [_ci_text(r, "ratio") for _, r in table.iterrows()],
        "Pareto": table["pareto"].map({True: "yes", False: ""}).to_numpy(),
        "problems": table["n_problems"].to_numpy(),
    })


def aggregation_table(audit, *, environment: str | None = None, campaign: str | None = None) -> pd.DataFrame:
    """Aggregators, best stability/range ratio first: of one run, or (default) of every run compared.

    Every run: indexed by ``run`` (``environment · campaign``, in run-name order) and ``aggregator``,
    so a page given two runs shows both.
    """
    if environment is not None or campaign is not None:
        return _aggregation_rows(audit.comparison(environment, campaign)).set_index("aggregator")
    if not audit.comparisons:  # no run with >= 2 repeats: an empty table (the findings say why)
        return pd.DataFrame(columns=["run", "aggregator", "stability (points)", "dynamic range (points)", "ratio",
                                     "Pareto", "problems"]).set_index(["run", "aggregator"])
    parts = [_aggregation_rows(comp).assign(run=f"{env} · {camp}")
             for (env, camp), comp in sorted(audit.comparisons, key=lambda kv: (str(kv[0][0]), str(kv[0][1])))]
    return pd.concat(parts, ignore_index=True).set_index(["run", "aggregator"])


def _run_repeats(audit, env, camp) -> str:
    """`` (20 processes x 3 values per cell)``: the run's repeats in the one vocabulary, when the audit names it."""
    for r in getattr(audit, "runs", ()):
        if getattr(r, "environment", None) == env and getattr(r, "campaign", None) == camp and hasattr(r, "repeats_text"):
            return f" ({r.repeats_text} per cell)"
    return ""


def _describe_aggregation_run(audit, env, camp) -> str:
    comp = audit.comparison(env, camp)
    table = comp.table.set_index("aggregator")
    rec, default = comp.recommended, comp.default
    parts = [f"**{env} · {camp}**: {len(table)} aggregators compared over {comp.n_problems} problems and "
             f"{comp.n_repeats} repeat indices" + _run_repeats(audit, env, camp) + "."]
    if rec is not None and rec in table.index:
        r = table.loc[rec]
        parts.append(f"The recommended aggregator is **{rec}**: it moves {_ci_text(r, 'stability', 3)} points "
                     f"between repeats and separates the reference quartiles by {_ci_text(r, 'dynamic_range', 3)} "
                     f"points (ratio {format_value(r['ratio'])}).")
    if default in table.index:
        d = table.loc[default]
        on_front = bool(d["pareto"])
        parts.append(f"The default **{default}** has stability {_ci_text(d, 'stability', 3)}, range "
                     f"{_ci_text(d, 'dynamic_range', 3)} (ratio {format_value(d['ratio'])}); it is "
                     + ("on the Pareto front." if on_front else "dominated (not on the Pareto front)."))
        # what to do follows the audit's verdict on the default (judged once, in audits.checks.aggregation)
        verdict = next((f for f in audit.findings if f.metric == "default_aggregator"
                        and (f.environment, f.campaign) == (env, camp)), None)
        if rec is not None and rec != default and verdict is not None and verdict.level in ("warn", "fail"):
            parts.append(f"**What to do**: set `post: {{aggregator: {rec}}}` in the reward environment for this "
                         "sandbox, and re-check on more problems if the CIs overlap.")
        elif verdict is not None and verdict.level == NA:
            parts.append(f"Whether to switch from the default is not judged (n/a: {verdict.reason}).")
        else:
            parts.append("**What to do**: keep the default.")
    return " ".join(parts)


def describe_aggregation(audit) -> str:
    """Per run compared (run-name order), which aggregator to use, how it compares with the default, what to do."""
    runs = sorted((run for run, _ in audit.comparisons), key=lambda r: (str(r[0]), str(r[1])))
    head = ("Stability = mean |score(repeat i) − score(repeat j)| in percentile points, lower is better; dynamic "
            "range = slowest minus fastest reference quartile, higher is better"
            + (f"; {len(runs)} runs, each compared on its own." if len(runs) > 1 else "."))
    left = [f for f in audit.findings if f.metric == "repeats" and f.level == NA]
    if left:  # runs that could not be compared, named, with why
        head += " Not compared: " + "; ".join(dict.fromkeys(f"**{f.where}** ({f.reason})" for f in left)) + "."
    return "\n\n".join([head] + [_describe_aggregation_run(audit, env, camp) for env, camp in runs])


# --- reward simulation ---------------------------------------------------------------------------

def simulation_table(audit) -> pd.DataFrame:
    """Reward environments ranked best first, diagnostics with CIs as text."""
    d = audit.diagnostics
    rows = d.to_dict(orient="records")
    return pd.DataFrame({
        "rank": d["rank"].to_numpy(),
        "reward environment": d["reward_environment"].to_numpy(),
        "AUC": [_sim_ci(r, "auc") for r in rows],
        "monotonicity": [_sim_ci(r, "monotonicity") for r in rows],
        "steepness": [format_value(r["steepness"], 2) for r in rows],
        "diagonal deviation": [_sim_ci(r, "diagonal_deviation") for r in rows],
        # the group size the column is for, stated (the findings judge the same G: the headline, the largest)
        (f"zero-advantage rate (G = {int(d['headline_group_size'].iloc[0])})" if len(d) else "zero-advantage rate"):
            [format_value(r["zero_advantage_rate"], 2) for r in rows],
        "verdict": d["verdict"].to_numpy(),
    }).set_index("rank")


def describe_simulation(audit) -> str:
    """Best reward environment, the degenerate ones and what their failure means."""
    d = audit.diagnostics
    if d.empty:
        return "No reward environment was simulated."
    head = d.iloc[0]
    g = int(head["headline_group_size"])
    repeats = "" if audit.run is None else f" ({audit.run.repeats_text})"
    parts = [f"Simulated on **{audit.environment} · {audit.campaign}**{repeats}: {int(head['n_problems'])} problems, "
             f"{int(head['n_solutions'])} correct reference solutions as stand-in rollouts, "
             + (f"quality from one repeat and reward from another ({int(head['n_pairs'])} repeat pairs)."
                if int(head["n_pairs"]) > 1 else
                "quality and reward from the same (only) repeat: whether timing noise moves the reward is not "
                "measured (curve_noise n/a, no ±1 sd band); collect >= 2 repeats.")]
    parts.append(f"The best reward environment is **{head['reward_environment']}** ({head['verdict']}): AUC "
                 f"{_sim_ci(head, 'auc')} (0 = sparse, 1 = saturated), monotonicity "
                 f"{_sim_ci(head, 'monotonicity')}, deviation from the ideal diagonal "
                 f"{_sim_ci(head, 'diagonal_deviation')}, and {format_value(head['zero_advantage_rate'] * 100, 2)} "
                 f"% of GRPO groups of {g} carry no advantage.")
    failing = d.loc[d["level"] == "fail", "reward_environment"].tolist()
    if failing:
        parts.append(f"Degenerate (fail): {', '.join(map(str, failing))}; do not train with them as they are "
                     "(the findings say which property fails and what to change).")
    else:
        parts.append("No reward environment is degenerate on this corpus.")
    left_out = getattr(audit, "left_out", None)
    if left_out is not None and len(left_out):
        notes = "; ".join(f"**{r.reward_environment}** ({r.key} needs the corpus column `{r.column}`)"
                          for r in left_out.itertuples())
        parts.append(f"Left out (n/a): {notes}, which this corpus lacks; add the column to screen "
                     f"{'it' if len(left_out) == 1 else 'them'}.")
    return " ".join(parts)


# --- overview ------------------------------------------------------------------------------------

def verdict_overview(verdicts: Mapping[str, Sequence[Finding]]) -> pd.DataFrame:
    """One row per audit: its verdict (worst level), counts per level and its worst finding; worst audits first.

    Parameters
    ----------
    verdicts : mapping
        Audit title -> its findings.
    """
    rows = []
    for title, findings in verdicts.items():
        ranked = rank_findings(findings)
        counts = _level_counts(ranked)
        worst = worst_level(ranked)
        rows.append({"audit": title, "verdict": (worst if worst == NA else worst.upper()) if ranked else "NONE",
                     "fail": counts["fail"], "warn": counts["warn"], "pass": counts["pass"], "n/a": counts[NA],
                     "worst finding": _finding_text(ranked[0]) if ranked else "-"})
    order = {"FAIL": 0, "WARN": 1, "PASS": 2, NA: 3, "NONE": 4}
    frame = pd.DataFrame(rows, columns=["audit", "verdict", "fail", "warn", "pass", "n/a", "worst finding"])
    frame["_order"] = frame["verdict"].map(order)
    return frame.sort_values("_order", kind="stable").drop(columns="_order").set_index("audit")


class VerdictsDisplay:
    """HTML table of :func:`verdict_overview` with coloured verdict badges, left-aligned."""

    def __init__(self, verdicts: Mapping[str, Sequence[Finding]]):
        self.table = verdict_overview(verdicts)

    def _repr_html_(self) -> str:
        rows = []
        for audit, row in self.table.iterrows():
            level = row["verdict"] if row["verdict"] == NA else row["verdict"].lower()
            label, fg, bg = _BADGE.get(level, (row["verdict"], "#57606a", "#eaeef2"))
            rows.append(f"<tr><td><b>{html.escape(str(audit))}</b></td><td><span style='font-weight:bold;color:{fg};"
                        f"background:{bg};padding:1px 6px;border-radius:4px'>{label}</span></td>"
                        f"<td>{row['fail']}</td><td>{row['warn']}</td><td>{row['pass']}</td><td>{row['n/a']}</td>"
                        f"<td>{html.escape(str(row['worst finding']))}</td></tr>")
        style = "<style>.sa-verdicts td, .sa-verdicts th {text-align: left !important;}</style>"
        return (f"{style}<table class='sa-verdicts'><thead><tr><th>audit</th><th>verdict</th><th>fail</th>"
                f"<th>warn</th><th>pass</th><th>n/a</th><th>worst finding</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")

    def __repr__(self) -> str:
        return self.table.to_string()


def show_verdicts(verdicts: Mapping[str, Sequence[Finding]]) -> VerdictsDisplay:
    """Display object for the overview: one row per audit, worst first, with its worst finding."""
    return VerdictsDisplay(verdicts)


_PROFILE_TEXT = {
    "reward": "the study's reward sandbox: every finding, including the reward gates (rank drift of q, "
              "filterable problems, aggregators, reward environments)",
    "benchmark": "a benchmark machine: repeat noise judged by pyperf's practice (warn when the std dev is more "
                 "than 10 % of the mean, fail at 20 %); the reward gates (rank drift of q, ICC and significance "
                 "of the programs at hand, filterable problems, aggregators, reward environments) are not judged",
}


def describe_profile(profile: str | None) -> str:
    """The sentence that states which verdict profile the findings were judged under.

    >>> describe_profile("benchmark").startswith("Verdict profile: **benchmark**")
    True
    """
    profile = profile or "reward"
    return f"Verdict profile: **{profile}** ({_PROFILE_TEXT.get(profile, profile)})."


def describe_overview(verdicts: Mapping[str, Sequence[Finding]], *, profile: str | None = None) -> str:
    """Headline sentence over every audit: how many fail / warn / pass, and where to start."""
    table = verdict_overview(verdicts)
    failing = table.index[table["verdict"] == "FAIL"].tolist()
    warning = table.index[table["verdict"] == "WARN"].tolist()
    text = (f"**{len(table)} audits**: {len(failing)} fail, {len(warning)} warn, "
            f"{int((table['verdict'] == 'PASS').sum())} pass.")
    if failing:
        text += (f" Start with **{failing[0]}**: {table.loc[failing[0], 'worst finding']}. A failing audit means "
                 "the measurement chain cannot be trusted at that step until the finding is addressed; the report "
                 "of that audit shows the figures behind it.")
    elif warning:
        text += f" Nothing fails; look at **{warning[0]}** first: {table.loc[warning[0], 'worst finding']}."
    else:
        unjudged = int(table["verdict"].isin([NA, "NONE"]).sum())
        text += (" Nothing fails or warns on this corpus" + (f"; {unjudged} audit(s) judged nothing here (n/a: not "
                 "measurable on this corpus, or not judged under this profile)." if unjudged else "."))
    if profile is not None:
        text += " " + describe_profile(profile)
    return text


# --- contention (the reliability page) -----------------------------------------------------------

def _contention_of(env):
    """A run's :class:`audits.checks.clocks.Contention`, or None (a result computed before contention existed)."""
    return getattr(env, "contention", None)


def contention_table(audit) -> pd.DataFrame:
    """Contention evidence per run: median wall/CPU of the executions used (single-threaded, ok, of at least
    :data:`audits.checks.clocks.CONTENTION_MIN_CPU_S` CPU seconds; multi-threaded ones counted aside), load, verdict.

    The verdict is the audit's ``contention`` finding for the run (judged once, by the audit); ``n/a``
    when the corpus has no CPU times.

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> from audits.checks.reliability import run_reliability_audit
    >>> corpus = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=2, base_seconds=(0.5, 1.0),
    ...                     seed=0).corpus
    >>> corpus["cpu_s"] = corpus["duration_s"]                 # every program waits 1.5 times its CPU time
    >>> corpus["duration_s"] = corpus["duration_s"] * 2.5
    >>> contention_table(run_reliability_audit(corpus, n_boot=20))[["median wall/CPU", "verdict"]].values.tolist()
    [['2.5', 'fail']]
    """
    rows = []
    for run, env in audit.runs.items():
        c = _contention_of(env)
        finding = _finding_of(audit.findings, run, "contention")
        level = finding.level if finding is not None else (c.level if c is not None else NA)
        rows.append({
            "environment": run.environment, "campaign": run.campaign,
            "median wall/CPU": format_value(None if c is None else c.median_wall_cpu),
            "executions used": format_value(None if c is None else c.n_single),
            "multi-threaded (left out)": format_value(None if c is None else c.n_multi),
            "median load_1m": format_value(None if c is None else c.median_load_1m),
            "max load_1m": format_value(None if c is None else c.max_load_1m),
            "verdict": level,
        })
    return _run_index(rows)


def describe_contention(audit) -> str:
    """What the contention evidence says per run, and why it is ``n/a`` where it cannot be measured.

    The limits are the audit's thresholds (``wall_cpu_warn`` / ``wall_cpu_fail``); each run's sentence
    is its ``contention`` finding's message (what was measured, and what to do when contended).
    """
    from audits.checks.clocks import CONTENTION_MIN_CPU_S

    t = audit.thresholds
    warn, fail = t.wall_cpu_warn, t.wall_cpu_fail
    head = (f"**Contention**: a program that has a core to itself spends about its CPU time in wall time "
            f"(wall/CPU 1.0-1.2: start-up and its own I/O); a run whose median wall/CPU ratio of single-threaded "
            f"ok executions (of at least {CONTENTION_MIN_CPU_S:g} s of CPU time: in shorter ones the start-up "
            f"cost dominates) reaches {warn:g} warns and {fail:g} fails: its programs waited for a core, so its "
            f"wall times carry the machine's other work. The 1-minute load average recorded at each execution's "
            f"start is shown beside it, not judged (its meaning depends on the machine's core count).")
    paragraphs = [head]
    for run, env in audit.runs.items():
        c = _contention_of(env)
        finding = _finding_of(audit.findings, run, "contention")
        if c is None and finding is None:
            paragraphs.append(f"**{run}**: contention n/a: this result carries no contention evidence.")
            continue
        level = finding.level if finding is not None else c.level
        if level == NA:
            reason = (finding.reason if finding is not None and finding.reason
                      else c.message.removeprefix("contention cannot be measured: "))
            paragraphs.append(f"**{run}**: contention n/a: {reason}.")
        else:
            message = finding.message if finding is not None else c.message
            paragraphs.append(f"**{run}** ({level.upper()}): {message}.")
    return "\n\n".join(paragraphs)


# --- the choice of clock ---------------------------------------------------------------------------

#: Mean within-problem Kendall tau-b of the solutions' scores at or above which two clocks are said to
#: order solutions alike (on the quietest run). 0.8: at most one discordant pair in ten.
CLOCK_AGREEMENT = ClocksThresholds().agreement_warn  # the clocks audit's limit (one declaration)

#: The figures of :func:`audits.checks.clocks.run_clocks_audit`: column, label, which way is better.
CLOCK_FIGURES = (
    ("median_repeat_cv", "median repeat CV", "lower is better"),
    ("mean_rank_sd", "mean rank sd (points)", "lower is better"),
    ("icc", "ICC(A,1)", "higher is better"),
    ("strong_weak_gap", "strong-weak gap (points)", "higher is better"),
    ("filterable_share", "filterable share", "a property of the workloads: clocks should agree"),
)


def _clock_runs(audit) -> list[tuple[str, str]]:
    """The runs of a clocks audit, in name order (the audit's own order)."""
    t = audit.table
    if not len(t):
        return []
    return sorted({(str(e), str(c)) for e, c in zip(t["environment"], t["campaign"])})


def _clock_row(audit, run, measure) -> dict:
    t = audit.table
    mask = ((t["environment"].astype(str) == run[0]) & (t["campaign"].astype(str) == run[1])
            & (t["measure"] == measure)).to_numpy()
    return t.loc[mask].iloc[0].to_dict() if mask.any() else {}


def clocks_not_compared(audit, corpus=None) -> str | None:
    """Why the clocks cannot be compared on this corpus (None when they can): the audit's own reason
    (:func:`audits.checks.clocks.clock_findings`); ``corpus`` is not read (kept for the pages' calls).

    >>> from audits.checks.clocks import run_clocks_audit
    >>> from audits.corpus.synthetic import synthesize
    >>> corpus = synthesize(n_problems=2, n_tests=2, n_solutions=3, n_repeats=2, seed=0).corpus
    >>> clocks_not_compared(run_clocks_audit(corpus, n_boot=10), corpus)[:50]
    'the corpus has one clock, `duration_s` (wall time)'
    """
    measures = tuple(audit.measures)
    if len(measures) < 2:  # the audit judged it, with the reason read off the rows (clocks.one_clock_reason)
        reasons = [f.reason for f in audit.findings if f.metric == "clock_agreement" and f.level == NA]
        return reasons[0] if reasons else f"the corpus has one clock, `{measures[0] if measures else 'duration_s'}`"
    if audit.quietest is None:
        return "the corpus has no run to compare the clocks on"
    if not len(audit.agreement) or not np.isfinite(audit.agreement["kendall_tau"].to_numpy(dtype=float)).any():
        return (f"no problem of the quietest run ({' · '.join(audit.quietest)}) has two solutions scored under "
                f"both clocks, so no order can be compared")
    return None


def clocks_table(audit) -> pd.DataFrame:
    """The figures of every run under every clock, one row per (environment, campaign, measure).

    Values as the audit computed them (3 significant digits, ``-`` where not measurable); runs in name
    order, measures in the audit's order (the first is the base of the rank agreement).
    """
    rows = []
    for run in _clock_runs(audit):
        for measure in audit.measures:
            r = _clock_row(audit, run, measure)
            if not r:
                continue
            rows.append({"environment": run[0], "campaign": run[1], "measure": measure,
                         "rows": format_value(int(r["n_rows"])),
                         **{label: format_value(r[col]) for col, label, _ in CLOCK_FIGURES},
                         "median wall/CPU": format_value(r["median_wall_cpu"]),
                         "median load_1m": format_value(r["median_load_1m"])})
    columns = ["environment", "campaign", "measure", "rows"] + [label for _, label, _ in CLOCK_FIGURES] + [
        "median wall/CPU", "median load_1m"]
    return pd.DataFrame(rows, columns=columns).set_index(["environment", "campaign", "measure"])


def clock_agreement_table(audit, corpus: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per compared measure: the rank agreement with the base measure on the quietest run.

    Mean Kendall tau-b over problems (the audit's :meth:`~audits.checks.clocks.ClocksAudit.mean_agreement`),
    the lowest problem's tau, and the problems compared. Empty (with the columns) when the clocks
    cannot be compared (:func:`clocks_not_compared`).
    """
    columns = ["measure", "compared with", "run", "problems", "mean Kendall tau-b", "lowest tau (problem)"]
    if clocks_not_compared(audit, corpus) is not None:
        return pd.DataFrame(columns=columns).set_index("measure")
    rows = []
    means = audit.mean_agreement()
    for measure in audit.measures[1:]:
        part = audit.agreement.loc[(audit.agreement["measure"] == measure).to_numpy()]
        tau = part["kendall_tau"].to_numpy(dtype=float)
        finite = np.isfinite(tau)
        lowest = ""
        if finite.any():
            # the lowest tau, ties broken by problem name (a function of the problems as a set)
            low = min((t, str(p)) for t, p, f in zip(tau, part["problem"], finite) if f)
            lowest = f"{format_value(low[0])} ({low[1]})"
        rows.append({"measure": measure, "compared with": audit.measures[0], "run": " · ".join(audit.quietest),
                     "problems": int(finite.sum()), "mean Kendall tau-b": format_value(means.get(measure)),
                     "lowest tau (problem)": lowest})
    return pd.DataFrame(rows, columns=columns).set_index("measure")


def recommend_clock(audit, corpus: pd.DataFrame | None = None) -> dict:
    """Which clock to trust, by a documented rule, with the figures behind it.

    Rule: a measure ``m`` other than the base (``measures[0]``, the wall time by default) is
    recommended when (1) it orders the solutions of each problem as the base does on the quietest run,
    mean Kendall tau-b >= :data:`CLOCK_AGREEMENT`, and (2) it is less noisy than the base: a lower mean
    over the runs of the mean rank sd of 100*q across repeats (the median repeat CV where rank drift is
    not measurable under both). Of several such measures the least noisy wins (then the audit's
    order). Otherwise the base is kept, with the reason.

    Returns ``{"measure": str | None, "reason": str, "agree": {m: tau}, "noise": {m: (figure, base mean,
    m mean, runs where m is lower, runs)}}``; ``measure`` is None when the clocks cannot be compared
    (``reason`` says why).
    """
    why_not = clocks_not_compared(audit, corpus)
    if why_not is not None:
        return {"measure": None, "reason": why_not, "agree": {}, "noise": {}}
    from audits.checks.clocks import recommended_clock

    base = audit.measures[0]
    best, agree, noise = recommended_clock(audit)  # the rule, judged once by the clocks audit

    def said(m):
        column, a, b, k, n = noise[m]
        unit = " points" if column == "mean_rank_sd" else ""
        what = "mean rank sd" if column == "mean_rank_sd" else "median repeat CV"
        return (f"{what} {format_value(b)}{unit} against {format_value(a)}{unit} for `{base}`, averaged over "
                f"{n} run{'s' if n != 1 else ''} (lower on {k} of {n})")

    if best != base:
        reason = (f"it orders the solutions of each problem as `{base}` does on the quietest run (mean Kendall "
                  f"tau-b {format_value(agree[best])} >= {CLOCK_AGREEMENT:g}) and is less noisy: {said(best)}; "
                  f"it ranks the same programs with less of the machine's other work in the score")
        return {"measure": best, "reason": reason, "agree": agree, "noise": noise}
    parts = []
    for m in audit.measures[1:]:
        tau = agree.get(m, math.nan)
        if not np.isfinite(tau) or tau < CLOCK_AGREEMENT:
            parts.append(f"`{m}` orders solutions differently even on the quietest run (mean Kendall tau-b "
                         f"{format_value(tau)} < {CLOCK_AGREEMENT:g}): it measures something else than `{base}` "
                         f"(waiting, I/O, several threads), so it cannot stand in for it")
        elif m in noise:
            parts.append(f"`{m}` orders solutions as `{base}` does (tau {format_value(tau)}) but is not less noisy "
                         f"({said(m)}): nothing is gained by switching")
        else:
            parts.append(f"`{m}` orders solutions as `{base}` does (tau {format_value(tau)}), but no run measures the "
                         f"noise of both (one repeat?)")
    return {"measure": base, "reason": "; ".join(parts), "agree": agree, "noise": noise}


def _figure_pair(base_row: dict, row: dict, column: str) -> str:
    return f"{format_value(base_row.get(column))} vs {format_value(row.get(column))}"


def describe_clocks(audit, corpus: pd.DataFrame | None = None) -> str:
    """What the clocks audit says: the figures per run under each clock, their rank agreement on the
    quietest run, which clock to trust (:func:`recommend_clock`) and what the page cannot show.

    Every number is the audit's (:func:`clocks_table` shows them all), 3 significant digits.
    """
    base = audit.measures[0] if audit.measures else "duration_s"
    head = ("Each run is audited once per clock, the clock's value standing in for the duration: **median "
            "repeat CV** (sd/mean of a cell's repeats; lower is more repeatable), **mean rank sd** (points of "
            "100·q a solution's score moves across repeats: the noise a reward feels; lower is better), "
            "**ICC(A,1)** of log durations (1 = repeats agree exactly; higher is better), the **strong-weak gap** "
            "(points between the slowest and the fastest quarter of references; higher separates better) and the "
            "**filterable share** (problems whose tests span a wide workload range; a property of the workloads, "
            "which the clocks should agree on). On a contended run (median wall/CPU well above 1) the wall time "
            "carries the other work on the machine and the CPU time does not.")
    why_not = clocks_not_compared(audit, corpus)
    if why_not is not None:
        return "\n\n".join([head, f"**The comparison of clocks is n/a**: {why_not}. The table below gives the "
                                  f"`{base}` figures of each run on their own."])
    paragraphs = [head]
    for run in _clock_runs(audit):
        b = _clock_row(audit, run, base)
        context = (f"median wall/CPU {format_value(b.get('median_wall_cpu'))}, median load_1m "
                   f"{format_value(b.get('median_load_1m'))}")
        parts = []
        for m in audit.measures[1:]:
            r = _clock_row(audit, run, m)
            parts.append(f"`{base}` vs `{m}`: repeat CV {_figure_pair(b, r, 'median_repeat_cv')}, rank sd "
                         f"{_figure_pair(b, r, 'mean_rank_sd')} points, ICC {_figure_pair(b, r, 'icc')}, strong-weak "
                         f"gap {_figure_pair(b, r, 'strong_weak_gap')} points, filterable share "
                         f"{_figure_pair(b, r, 'filterable_share')}")
        paragraphs.append(f"**{run[0]} · {run[1]}** ({context}): " + "; ".join(parts) + ".")
    env, camp = audit.quietest
    means = audit.mean_agreement()
    agreement = "; ".join(
        f"`{m}` orders the solutions of each problem as `{base}` does with a mean Kendall tau-b of "
        f"{format_value(means.get(m))} over "
        f"{int(np.isfinite(audit.agreement.loc[audit.agreement['measure'] == m, 'kendall_tau'].to_numpy(dtype=float)).sum())}"
        f" problems (1 = the same order, 0 = unrelated, -1 = reversed)" for m in audit.measures[1:])
    paragraphs.append(f"On the quietest run, **{env} · {camp}** ({audit.quietest_by}), {agreement}.")
    rec = recommend_clock(audit, corpus)
    if rec["measure"] == base:
        paragraphs.append(f"**Which clock to trust**: keep **`{base}`**: {rec['reason']}.")
    else:
        paragraphs.append(f"**Which clock to trust**: **`{rec['measure']}`**: {rec['reason']}. Keep the wall time "
                          f"as the time limit, and watch the wall/CPU ratio (the reliability page's contention "
                          f"finding).")
    paragraphs.append(
        "**What this page cannot show**: CPU time counts only the CPU the sandboxed process (and the children "
        "it waited for) used: time spent waiting (I/O, sleeps, locks, a core it did not get) is in the wall "
        "time only, and a program rewarded on CPU time can move work there (sleep-polling, I/O waits, work "
        "handed to a process it does not wait for); a multi-threaded program's CPU time exceeds its wall time. "
        "The rank agreement is measured on one run, the quietest; agreement there does not prove agreement on "
        "programs unlike these.")
    return "\n\n".join(paragraphs)


def show_clocks_plot(plot, audit, corpus: pd.DataFrame | None = None, **options):
    """Display ``plot(audit, **options)`` (:mod:`audits.report.plots.clocks`), or say why it is not drawn
    (:func:`clocks_not_compared`)."""
    from IPython.display import display

    why_not = clocks_not_compared(audit, corpus)
    if why_not is not None:
        display(Markdown(f"*Figure not drawn: the comparison of clocks is n/a ({why_not}).*"))
        return
    show_figure(plot(audit, **options))


def clocks_headline(audit, corpus: pd.DataFrame | None = None, *, link: str = "clocks.html") -> str:
    """One sentence for the overview: which clock to trust (or why the comparison is n/a), with a link to
    the clocks page.

    ``corpus`` is the corpus or the page's results (:class:`audits.report.results.ReportResults`), whose
    rows are then read only when the rule needs them (never for a result a saved file does not hold)."""
    if _skipped(audit):
        return f"**[The choice of clock]({link})**: n/a: {audit.findings[0].reason}."
    rec = recommend_clock(audit, corpus)
    if rec["measure"] is None:
        text = f"n/a: {rec['reason']}"
    elif rec["measure"] == audit.measures[0]:
        text = f"keep **`{rec['measure']}`**: {rec['reason']}"
    else:
        text = f"trust **`{rec['measure']}`**: {rec['reason']}"
    return f"**[The choice of clock]({link})**: {text}."


def describe_not_measured(verdicts: Mapping[str, Sequence[Finding]]) -> str:
    """What this corpus could not measure, per audit: its ``n/a`` findings grouped by their reason.

    Each audit's page leaves the figures of those findings out and says so (:func:`figure_notes`); the
    overview, which draws no figure, names them all in one place.

    >>> f = [Finding.not_available("icc", "one repeat", environment="busy"),
    ...      Finding.not_available("significant_share", "one repeat", environment="busy")]
    >>> describe_not_measured({"sandbox reliability": f})
    '**Not measured on this corpus** (n/a, their figures not drawn): **sandbox reliability**: icc, significant_share (busy): one repeat.'
    """
    parts = []
    for title, findings in verdicts.items():
        by_reason: dict[str, dict[str, list[str]]] = {}
        for f in findings:
            if f.level == NA:
                by_reason.setdefault(f.reason, {}).setdefault(f.where, []).append(f.metric)
        if by_reason:
            groups = [f"{', '.join(dict.fromkeys(metrics))}{f' ({where})' if where else ''}: {reason}"
                      for reason, places in by_reason.items() for where, metrics in places.items()]
            parts.append(f"**{title}**: " + "; ".join(groups) + ".")
    if not parts:
        return "Every finding was measured on this corpus (none is n/a)."
    return "**Not measured on this corpus** (n/a, their figures not drawn): " + " ".join(parts)
