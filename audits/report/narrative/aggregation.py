"""The aggregation page's prose: which aggregation of per-test timings is stable and discriminating.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations


import numpy as np
import pandas as pd

from audits.protocol.findings import NA
from audits.report.narrative.common import audit_text, ci_text, format_value, run_name, where_name

__all__ = ["aggregation_table", "describe_aggregation"]


def _aggregation_rows(comp) -> pd.DataFrame:
    table = comp.table.sort_values(["ratio", "aggregator"], na_position="last")
    return pd.DataFrame({
        "aggregator": table["aggregator"].to_numpy(),
        "stability (points)": [ci_text(r, "stability") for _, r in table.iterrows()],
        "dynamic range (points)": [ci_text(r, "dynamic_range") for _, r in table.iterrows()],
        "ratio": [ci_text(r, "ratio") for _, r in table.iterrows()],
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
    parts = [f"**{run_name((env, camp))}**: {len(table)} aggregators compared over {comp.n_problems} problems and "
             f"{comp.n_repeats} repeat indices" + _run_repeats(audit, env, camp) + "."]
    if rec is not None and rec in table.index:
        r = table.loc[rec]
        parts.append(f"The recommended aggregator is **{rec}**: it moves {ci_text(r, 'stability', 3)} points "
                     f"between repeats and separates the reference quartiles by {ci_text(r, 'dynamic_range', 3)} "
                     f"points (ratio {format_value(r['ratio'])}).")
    if default in table.index:
        d = table.loc[default]
        on_front = bool(d["pareto"])
        measured = np.isfinite(d["stability"]) and np.isfinite(d["dynamic_range"])
        # a default this run cannot score is neither on the front nor dominated: it was not compared
        parts.append(f"The default **{default}** has stability {ci_text(d, 'stability', 3)}, range "
                     f"{ci_text(d, 'dynamic_range', 3)}"
                     + ((f" (ratio {format_value(d['ratio'])}); it is "
                         + ("on the Pareto front." if on_front else "dominated (not on the Pareto front)."))
                        if measured else "; it is not compared with the others (the table below says why)."))
        # what to do follows the audit's verdict on the default (judged once, in audits.checks.aggregation)
        verdict = next((f for f in audit.findings if f.metric == "default_aggregator"
                        and (f.environment, f.campaign) == (env, camp)), None)
        if rec is not None and rec != default and verdict is not None and verdict.level in ("warn", "fail"):
            parts.append(f"**What to do**: set `post: {{aggregator: {rec}}}` in the reward environment for this "
                         "sandbox, and re-check on more problems if the CIs overlap.")
        elif verdict is not None and verdict.level == NA:
            parts.append(f"Whether to switch from the default is not judged (n/a: {audit_text(verdict.reason)}).")
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
        head += " Not compared: " + "; ".join(dict.fromkeys(f"**{where_name(f)}** ({audit_text(f.reason)})" for f in left)) + "."
    return "\n\n".join([head] + [_describe_aggregation_run(audit, env, camp) for env, camp in runs])
