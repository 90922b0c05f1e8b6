"""What the paired-comparison page (``notebooks/compare.py``) shows, as functions a test can call.

The page compares two candidate sets timed in one campaign (:func:`audits.checks.compare.run_compare_audit`).
On a corpus that does not hold both sets in one run the comparison is ``n/a`` with the reason (the
audit's own message), and every section says so instead of failing: :func:`page_comparison` returns
either the audit or that reason, and each display function takes either.
"""

from __future__ import annotations

import pandas as pd

from audits.protocol.findings import Finding
from audits.report.narrative import Markdown, format_value, show_figure, show_findings
from audits.report.narrative.common import audit_text, code_name, interval_words, run_name
from audits.report.results import NotSaved

__all__ = ["compare_findings", "show_compare_findings", "describe_compare", "compare_runs_table",
           "compare_problems_table", "show_compare_figure"]

#: The runs table: (column of :meth:`CompareAudit.to_frame`, label).
RUN_COLUMNS = (("win_rate", "win rate of A"), ("expected_win_rate", "expected win rate"),
               ("decided_win_rate", "decided win rate"), ("pass_rate_a", "pass rate A"),
               ("pass_rate_b", "pass rate B"))
#: The per-problem table: (column of the comparison's ``problems``, label).
PROBLEM_COLUMNS = (("n_a", "A solutions"), ("n_b", "B solutions"), ("n_pairs", "pairs"),
                   ("n_comparisons", "comparisons"), ("n_a_wins", "A faster"), ("n_b_wins", "B faster"),
                   ("n_undecided", "undecided"), ("win_rate", "win rate of A"), ("pass_rate_a", "pass rate A"),
                   ("pass_rate_b", "pass rate B"))


def page_comparison(results):
    """The comparison a page shows: the shared result (``compare``, computed once by ``speedaudit report`` with
    the page's ``compare_*`` parameters, or here when the page renders alone) or, from saved results, what the
    file holds; the audit, or the reason it is n/a (text)."""
    value = results.get("compare")
    return value.reason if isinstance(value, NotSaved) else value


def compare_findings(result) -> list[Finding]:
    """The audit's findings; one ``n/a`` finding with the reason when the comparison is n/a."""
    return [Finding.not_available("win_rate", result)] if isinstance(result, str) else list(result.findings)


def show_compare_findings(result):
    """The findings display (its verdicts go to the index)."""
    return show_findings(compare_findings(result), audit="compare", title="Paired comparison")


def describe_compare(result) -> Markdown:
    """The page's headline: per run the win rate with its CI, the undecided share and the pass rates."""
    if isinstance(result, str):
        return Markdown(f"**The comparison is n/a**: {audit_text(result)}. On this page the sets are named with "
                        f"`-p compare_a=VALUE -p compare_b=VALUE` (values of `-p compare_by=COLUMN`, default the "
                        f"solution prefix) or `@FILE` of solution ids.")
    lines = [f"Sets by {code_name(result.by)}: **A = {code_name(result.a)}**, **B = {code_name(result.b)}**. A comparison is one A and one B "
             f"solution (neither with a wrong answer or a crash) on one optimization test; it is decided when "
             f"P(A faster) ≥ {result.confidence:g} or ≤ {1 - result.confidence:g} under the noise model, "
             f"otherwise it counts ½ (a timeout loses)."]
    frame = result.to_frame()
    for row in frame.itertuples(index=False):
        share = "-" if not row.n_comparisons else f"{100 * row.undecided_share:.1f} %"
        lines.append(f"* **{run_name((row.environment, row.campaign))}**: win rate of A over B "
                     f"{interval_words(row.win_rate, row.win_rate_low, row.win_rate_high)} over {row.n_problems} "
                     f"problem{'' if row.n_problems == 1 else 's'}; {row.n_undecided:,} of {row.n_comparisons:,} comparisons undecided ({share}); "
                     f"pass rate A {format_value(row.pass_rate_a)}, B {format_value(row.pass_rate_b)}.")
    if result.skipped_runs:
        lines.append(f"Runs without both sets (not compared): {audit_text(', '.join(result.skipped_runs))}.")
    return Markdown("\n\n".join(lines[:1]) + "\n\n" + "\n".join(lines[1:]))


def compare_runs_table(result) -> pd.DataFrame:
    """One row per run: each figure with its CI as text, comparisons, undecided share, interleaving AUC."""
    columns = ["run", "problems", *(label for _, label in RUN_COLUMNS), "comparisons", "undecided",
               "P(A ran first)"]
    if isinstance(result, str):
        return pd.DataFrame(columns=columns)
    rows = []
    for row in result.to_frame().to_dict("records"):
        rows.append([f"{row['environment']} · {row['campaign']}", row["n_problems"],
                     *(interval_words(row[c], row[f"{c}_low"], row[f"{c}_high"]) for c, _ in RUN_COLUMNS),
                     row["n_comparisons"], format_value(row["undecided_share"]), format_value(row["interleaving_auc"])])
    return pd.DataFrame(rows, columns=columns)


def compare_problems_table(result) -> pd.DataFrame:
    """One row per (run, problem): solutions, pairs, comparisons won/lost/undecided, win rate, pass rates."""
    columns = ["run", "problem", *(label for _, label in PROBLEM_COLUMNS)]
    if isinstance(result, str):
        return pd.DataFrame(columns=columns)
    parts = []
    for r in result.runs:
        table = r.result.problems
        part = pd.DataFrame({"run": str(r.run), "problem": table["problem"].astype(str)})
        for column, label in PROBLEM_COLUMNS:
            values = table[column]
            part[label] = values.map(format_value) if values.dtype.kind == "f" else values
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def show_compare_figure(result) -> None:
    """Display :func:`audits.report.plots.compare.win_rate_figure`, or say why it is not drawn."""
    # deferred: IPython (notebook pages), matplotlib (plots, by audits.report.plots.compare): only to draw the figure
    from IPython.display import display

    from audits.report.plots.compare import win_rate_figure

    if isinstance(result, str):
        display(Markdown(f"*Figure not drawn: the comparison is n/a ({audit_text(result)}).*"))
        return
    show_figure(win_rate_figure(result))
