"""The simulation page's prose: which reward environments are learnable.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations


import pandas as pd

from audits.report.narrative.common import as_name, format_value, run_name, sim_ci

__all__ = ["simulation_table", "describe_simulation"]


def simulation_table(audit) -> pd.DataFrame:
    """Reward environments ranked best first, diagnostics with CIs as text."""
    d = audit.diagnostics
    rows = d.to_dict(orient="records")
    return pd.DataFrame({
        "rank": d["rank"].to_numpy(),
        "reward environment": d["reward_environment"].to_numpy(),
        "AUC": [sim_ci(r, "auc") for r in rows],
        "monotonicity": [sim_ci(r, "monotonicity") for r in rows],
        "steepness": [format_value(r["steepness"], 2) for r in rows],
        "diagonal deviation": [sim_ci(r, "diagonal_deviation") for r in rows],
        # the group size the column is for, stated (the findings judge the same G: the headline, the largest)
        (f"zero-advantage rate (G = {int(d['headline_group_size'].iloc[0])})" if len(d) else "zero-advantage rate"):
            [format_value(r["zero_advantage_rate"], 2) for r in rows],
        "verdict": d["verdict"].to_numpy(),
    }).set_index("rank")


def describe_simulation(audit) -> str:
    """Best reward environment, the degenerate ones and what their failure means; the reward environments' names (a
    file's ``name:``, as a user gave it) isolated as the runs' are (:func:`audits.report.narrative.common.as_name`)."""
    d = audit.diagnostics
    if d.empty:
        return "No reward environment was simulated."
    head = d.iloc[0]
    g = int(head["headline_group_size"])
    repeats = "" if audit.run is None else f" ({audit.run.repeats_text})"
    total = int(head.get("n_problems_total", head["n_problems"]))  # every problem with rollouts (41ff32c)
    parts = [f"Simulated on **{run_name((audit.environment, audit.campaign))}**{repeats}: {total} "
             f"problem{'' if total == 1 else 's'} with rollouts, "
             f"{int(head['n_solutions'])} correct reference solutions as stand-in rollouts, "
             + (f"quality from one repeat and reward from another ({int(head['n_pairs'])} repeat pairs)."
                if int(head["n_pairs"]) > 1 else
                "quality and reward from the same (only) repeat: whether timing noise moves the reward is not "
                "measured (curve_noise n/a, no ±1 sd band); collect >= 2 repeats.")]
    parts.append(f"The best reward environment is **{as_name(head['reward_environment'])}** ({head['verdict']}): AUC "
                 f"{sim_ci(head, 'auc')} (0 = sparse, 1 = saturated), monotonicity "
                 f"{sim_ci(head, 'monotonicity')}, deviation from the ideal diagonal "
                 f"{sim_ci(head, 'diagonal_deviation')}, and {format_value(head['zero_advantage_rate'] * 100, 2)} "
                 f"% of GRPO groups of {g} carry no advantage.")
    failing = d.loc[d["level"] == "fail", "reward_environment"].tolist()
    if failing:
        parts.append(f"Degenerate (fail): {', '.join(map(as_name, failing))}; do not train with them as they are "
                     "(the findings say which property fails and what to change).")
    else:
        parts.append("No reward environment is degenerate on this corpus.")
    left_out = getattr(audit, "left_out", None)
    if left_out is not None and len(left_out):
        notes = "; ".join(f"**{as_name(r.reward_environment)}** ({r.key} needs the corpus column `{r.column}`)"
                          for r in left_out.itertuples())
        parts.append(f"Left out (n/a): {notes}, which this corpus lacks; add the column to screen "
                     f"{'it' if len(left_out) == 1 else 'them'}.")
    return " ".join(parts)
