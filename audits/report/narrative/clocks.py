"""The clocks page's prose: the figures under each clock and which clock to trust.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from audits.checks.clocks import recommended_clock
from audits.checks.declared.clocks import ClocksThresholds
from audits.protocol.findings import NA
from audits.report.narrative.common import Markdown, audit_text, format_value, is_skipped, run_name, show_figure

__all__ = ["CLOCK_AGREEMENT", "CLOCK_FIGURES", "clocks_table", "clock_agreement_table", "describe_clocks",
           "show_clocks_plot", "clocks_headline"]


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
    >>> clocks_not_compared(run_clocks_audit(corpus, n_boot=10), corpus)[1:51]  # the audit's text (audit_text)
    'the corpus has one clock, `duration_s` (wall time)'
    """
    measures = tuple(audit.measures)
    if len(measures) < 2:  # the audit judged it, with the reason read off the rows (clocks.one_clock_reason)
        reasons = [f.reason for f in audit.findings if f.metric == "clock_agreement" and f.level == NA]
        return audit_text(reasons[0]) if reasons else f"the corpus has one clock, `{measures[0] if measures else 'duration_s'}`"
    if audit.quietest is None:
        return "the corpus has no run to compare the clocks on"
    if not len(audit.agreement) or not np.isfinite(audit.agreement["kendall_tau"].to_numpy(dtype=float)).any():
        return (f"no problem of the quietest run ({run_name(tuple(audit.quietest))}) has two solutions scored under "
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
        paragraphs.append(f"**{run_name(tuple(run))}** ({context}): " + "; ".join(parts) + ".")
    env, camp = audit.quietest
    means = audit.mean_agreement()
    agreement = "; ".join(
        f"`{m}` orders the solutions of each problem as `{base}` does with a mean Kendall tau-b of "
        f"{format_value(means.get(m))} over {audit.agreement_problems(m)} "
        f"problem{'' if audit.agreement_problems(m) == 1 else 's'} (1 = the same order, 0 = unrelated, -1 = reversed)"
        for m in audit.measures[1:])
    paragraphs.append(f"On the quietest run, **{run_name((env, camp))}** ({audit.quietest_by}), {agreement}.")
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
    # deferred: IPython (notebook pages): only when a page displays the figure
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
    if is_skipped(audit):
        return f"**[The choice of clock]({link})**: n/a: {audit_text(audit.findings[0].reason)}."
    rec = recommend_clock(audit, corpus)
    if rec["measure"] is None:
        text = f"n/a: {rec['reason']}"
    elif rec["measure"] == audit.measures[0]:
        text = f"keep **`{rec['measure']}`**: {rec['reason']}"
    else:
        text = f"trust **`{rec['measure']}`**: {rec['reason']}"
    return f"**[The choice of clock]({link})**: {text}."
