"""The overview page's prose: the verdicts of every audit, the profile, what was not measured.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

import pandas as pd

from audits.protocol.findings import NA, Finding, worst_level
from audits.report.narrative.common import BADGE, audit_text, finding_text, level_counts, rank_findings, where_name

__all__ = ["verdict_overview", "describe_overview", "describe_profile", "show_verdicts", "describe_not_measured"]


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
        counts = level_counts(ranked)
        worst = worst_level(ranked)
        rows.append({"audit": title, "verdict": (worst if worst == NA else worst.upper()) if ranked else "NONE",
                     "fail": counts["fail"], "warn": counts["warn"], "pass": counts["pass"], "n/a": counts[NA],
                     "worst finding": finding_text(ranked[0]) if ranked else "-"})
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
            label, fg, bg = BADGE.get(level, (row["verdict"], "#57606a", "#eaeef2"))
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


def describe_not_measured(verdicts: Mapping[str, Sequence[Finding]]) -> str:
    """What this corpus could not measure, per audit: its ``n/a`` findings grouped by their reason.

    Each audit's page leaves the figures of those findings out and says so (:func:`figure_notes`); the
    overview, which draws no figure, names them all in one place.

    >>> f = [Finding.not_available("icc", "one repeat", environment="busy"),
    ...      Finding.not_available("significant_share", "one repeat", environment="busy")]
    >>> describe_not_measured({"sandbox reliability": f})
    '**Not measured on this corpus** (n/a, their figures not drawn): **sandbox reliability**: icc, significant_share (busy): one repeat.'

    Places with the same metrics and the same reason share one entry (``auc, curve_noise (top30; uniform):
    reason``): seven reward environments of a corpus without two references per problem repeated one long
    reason seven times.
    """
    parts = []
    for title, findings in verdicts.items():
        by_reason: dict[str, dict[str, list[str]]] = {}
        for f in findings:
            if f.level == NA:
                by_reason.setdefault(f.reason, {}).setdefault(where_name(f) if f.where else "", []).append(f.metric)
        if by_reason:
            groups = []
            for reason, places in by_reason.items():
                by_metrics: dict[tuple, list[str]] = {}
                for where, metrics in places.items():
                    by_metrics.setdefault(tuple(dict.fromkeys(metrics)), []).append(where)
                for metrics, wheres in by_metrics.items():
                    shown = "; ".join(w for w in wheres if w)
                    groups.append(f"{', '.join(metrics)}{f' ({shown})' if shown else ''}: {audit_text(reason)}")
            parts.append(f"**{title}**: " + "; ".join(groups) + ".")
    if not parts:
        return "Every finding was measured on this corpus (none is n/a)."
    return "**Not measured on this corpus** (n/a, their figures not drawn): " + " ".join(parts)
