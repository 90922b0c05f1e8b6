"""The calibration page's prose: the fitted families and what the pair's map says.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audits.checks.calibration import calibration_advice
from audits.corpus.runs import RULES
from audits.corpus.selection import PAIR_RULES
from audits.report.narrative.common import (
    Markdown,
    as_name,
    audit_text,
    code_name,
    fixed,
    fixed_ci,
    format_interval,
    is_skipped,
    run_name,
    show_findings,
    show_plot,
)

__all__ = ["calibration_fit_table", "describe_calibration", "describe_calibration_pairs", "calibration_verdicts",
           "show_calibration_findings", "show_calibration_pairs"]


def _runs_label(summaries, name) -> str:
    return ", ".join(run_name(s.run) for s in summaries) or as_name(name)


def _describe_runs(summaries) -> str:
    """``quiet · c0 (5 repeats), busy · c0 (3 repeats)`` (:func:`audits.corpus.runs.describe_runs`), each name
    isolated (:func:`audits.report.narrative.common.as_name`)."""
    return ", ".join(f"{run_name(s.run)} ({s.repeats_text})" for s in summaries) or "(no run)"


def calibration_pair_title(audit) -> str:
    """A pair's heading: ``source run → target run (rule)``; what a skipped calibration is, for one without."""
    if is_skipped(audit):
        return "(no pair calibrated)"
    return (f"{_runs_label(audit.source_runs, audit.source)} → {_runs_label(audit.target_runs, audit.target)} "
            f"({getattr(audit, 'pair_rule', 'named')})")


def describe_calibration_pairs(pairs) -> str:
    """What the calibration page covers: how many pairs, by which rule (the pairs named, else every default
    pair; :data:`audits.corpus.runs.RULES`), and each pair with the rule that chose it."""
    done = [p for p in pairs if not is_skipped(p)]
    if not done:
        return "**No pair calibrated**: " + "; ".join(audit_text(getattr(p, "reason", "")) for p in pairs) + "."
    rules = list(dict.fromkeys(p.run_rule for p in done))
    lines = [f"**{len(done)} pair{'' if len(done) == 1 else 's'}**, chosen by the rule "
             + ", ".join(f"`{r}` ({RULES[r]})" for r in rules) + ":", ""]
    lines += [f"{k}. {calibration_pair_title(p)}: {PAIR_RULES[p.pair_rule]}" for k, p in enumerate(done, 1)]
    return "\n".join(lines)


def calibration_verdicts(pairs, prefix: str = "calibration ") -> dict:
    """``{heading: findings}`` of every pair (the overview's verdicts), each headed by its runs and rule."""
    return {f"{prefix}{calibration_pair_title(p)}": p.findings for p in pairs}


def show_calibration_findings(pairs) -> None:
    """Display every pair's findings (each goes to the index), titled by its runs and rule."""
    # deferred: IPython (notebook pages): only when a page displays the findings
    from IPython.display import display

    for pair in pairs:
        display(show_findings(pair.findings, audit="calibration", title=f"Calibration {calibration_pair_title(pair)}"))


def show_calibration_pairs(pairs, calibration_scatter, bland_altman_plot, *, seed: int = 0) -> None:
    """The calibration page's sections, one per pair in the rule's order: its heading, findings (to the index),
    what the pair says, the fitted families and the two figures of :mod:`audits.report.plots.calibration` (passed by
    the page: the plots import this package), or why they are not drawn."""
    # deferred: IPython (notebook pages): only when a page displays the sections
    from IPython.display import display

    for number, pair in enumerate(pairs, 1):
        title = calibration_pair_title(pair)
        display(Markdown(f"## Pair {number} of {len(pairs)}: {title}"))
        display(show_findings(pair.findings, audit="calibration", title=title))
        display(Markdown(describe_calibration(pair)))
        display(calibration_fit_table(pair))
        display(Markdown("Every fitted family on the paired medians (log-log), against the identity:"))
        show_plot(calibration_scatter, pair, seed=seed)
        display(Markdown("Bland-Altman on the log scale: the ratio of the two runs against their size, with the "
                         "bias and the 95 % limits of agreement (shaded: bootstrap CIs over problems):"))
        show_plot(bland_altman_plot, pair, seed=seed)


def calibration_fit_table(audit) -> pd.DataFrame:
    """The fitted families of a calibration audit, lowest held-out log error first (the rule that chooses the
    family), with CIs as text columns, the share of pairs more than 2x off out of fold and whether it is usable."""
    if is_skipped(audit):
        return pd.DataFrame(columns=["family", "formula", "LOPO R²", "R² 95% CI", "log-ratio RMSE", "pairs",
                                     "problems"]).set_index("family")
    fits = audit.fits
    # a family the source values do not determine (na_reason) has no formula to show (its parameters are NaN:
    # "y = nan + nan x"): the table says n/a and why; results saved before na_reason existed have no such column
    reasons = fits["na_reason"].fillna("").astype(str) if "na_reason" in fits else pd.Series("", index=fits.index)
    out = pd.DataFrame({
        "family": fits["name"],
        "formula": fits["formula"].where(reasons == "", "n/a: " + reasons),
        "LOPO R²": fits["lopo_r2"].astype(float),
        "R² 95% CI": [f"[{fixed(lo, '.3f')}, {fixed(hi, '.3f')}]"
                      for lo, hi in zip(fits["lopo_r2_low"], fits["lopo_r2_high"])],
        "log-ratio RMSE": fits["lopo_log_rmse"].astype(float),
        "> 2x off": fits["share_2x_off"].astype(float) if "share_2x_off" in fits else np.nan,
        "usable": fits["usable"].astype(bool),
        "pairs": fits["n_pairs"],
        "problems": fits["n_problems"],
    })
    return out.sort_values("log-ratio RMSE", ascending=True, na_position="last").set_index("family")


def describe_calibration(audit) -> str:
    """What a calibration audit says: best family and its R², the affine map, agreement, rank agreement.

    Every number comes from the audit (``fits``, ``params``, ``bland_altman``, ``spearman_*``), with
    its bootstrap interval over problems and n.
    """
    if is_skipped(audit):
        return f"**Not measured**: {audit_text(audit.reason)}."
    pair = f"{code_name(audit.source)} → {code_name(audit.target)} ({audit.key})"
    rule = getattr(audit, "pair_rule", "named")
    parts = [f"**{pair}**: {_describe_runs(audit.source_runs)} mapped onto {_describe_runs(audit.target_runs)}; "
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
                     f"do not calibrate these timings; time on {as_name(audit.target)} itself.")
    else:
        best = audit.fits.set_index("name").loc[audit.best_family]
        parts.append(f"The family with the lowest held-out log error, **{audit.best_family}** (`{best['formula']}`), "
                     f"predicts held-out problems with a typical error of ×{np.exp(float(best['lopo_log_rmse'])):.3f} "
                     f"(log-RMSE {fixed_ci(best, 'lopo_log_rmse', '.3f')}; linear LOPO R² = "
                     f"{fixed_ci(best, 'lopo_r2', '.3f')}).")
    aff = audit.params.loc[audit.params["family"] == "affine"].set_index("param")
    if {"slope", "intercept_s"} <= set(aff.index):
        a, b = aff.loc["slope"], aff.loc["intercept_s"][["estimate", "ci_low", "ci_high"]] * 1000
        parts.append(f"Affine map: {as_name(audit.target)} ≈ {fixed_ci(a, 'estimate', '.3f', 'ci_')} × {as_name(audit.source)} + "
                     f"{fixed_ci(b, 'estimate', '.3g', 'ci_')} ms.")
    ba = audit.bland_altman
    if ba is not None:
        parts.append(f"Bland-Altman: a {as_name(audit.target)} timing is typically ×{np.exp(ba.bias.estimate):.3f} the "
                     f"{as_name(audit.source)} one, and 95 % of single cells lie within ×{np.exp(ba.lower.estimate):.3f} .. "
                     f"×{np.exp(ba.upper.estimate):.3f}.")
    if audit.spearman_raw is not None:
        text = (f"Scores against the stored pool rank re-run solutions like the fresh pool with Spearman ρ = "
                f"{format_interval(audit.spearman_raw)}")
        if audit.spearman_calibrated is not None:
            text += f" raw, {format_interval(audit.spearman_calibrated)} after {audit.calibration_family} calibration"
        parts.append(text + ".")
    if audit.best_family is not None:  # (else what to do was said above)
        parts.append(f"**What to do**: {audit_text(calibration_advice(audit))}.")  # from the findings, as in the JSON
    return " ".join(parts)
