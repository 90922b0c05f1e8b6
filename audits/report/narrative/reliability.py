"""The reliability page's prose: repeatability, discriminability and contention per run.

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audits.checks.clocks import CONTENTION_MIN_CPU_S
from audits.protocol.findings import NA
from audits.report.narrative.common import (as_name, audit_text, finding_of, format_interval, format_seconds, format_value,
                                            run_index, run_name)

__all__ = ["reliability_table", "describe_reliability", "discriminability_table", "describe_discriminability",
           "contention_table", "describe_contention"]


def _figure(value) -> str:
    """A figure of the run table: its value, or ``n/a`` when the run cannot measure it (as the intervals beside
    it read, :func:`audits.report.narrative.common.format_interval`)."""
    return format_value(value) if value is not None and np.isfinite(value) else NA


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
            "95th percentile rank range (as 5 repeats)": _figure(env.drift.p95_range_5),
            "worst rank range": _figure(env.drift.worst_range),
            "ICC(A,1)": format_interval(env.icc_agreement),
            "significant pairs": format_interval(env.significance.share),
            "repeats needed": _figure(env.repeats_needed),
        })
    return run_index(rows)


def describe_reliability(audit) -> str:
    """One paragraph per run: repeat CV, rank drift, ICC and repeats needed, with what to do (from the findings)."""
    paragraphs = []
    t = audit.thresholds
    for run, env in audit.runs.items():
        cv = env.median_repeat_cv
        unit = "processes" if env.variance.nested else "repeats"
        stated = env.run_summary.repeats_text if env.run_summary is not None else f"{env.n_repeats} repeats"
        text = (f"**{run_name(run)}** ({stated}): the median repeat CV is {format_interval(cv)} (median over (problem, test, solution) "
                f"cells of correct references; CI over problems), an absolute sd of "
                f"{format_seconds(env.median_abs_sd_ms.estimate / 1000)}. " + _drift_and_agreement(audit, run, env, unit))
        finding = finding_of(audit.findings, run, "median_repeat_cv")
        level = None if finding is None else finding.level
        if level == "fail":
            text += (f" **Too noisy** (fail at {t.repeat_cv_fail:g}): do not reward on single timings here; run "
                     "fewer workers per machine, pin CPUs or take the median of several repeats.")
        elif level == "warn" and np.isfinite(cv.estimate):
            text += f" **Noisy** (warn at {t.repeat_cv_warn:g}): use the median of repeats for rewards."
        elif level == "pass":
            text += f" Repeatable at the {t.repeat_cv_warn:g} warn threshold."
        elif finding is not None:
            text += f" Repeat noise: {audit_text(finding.message)}."
        paragraphs.append(text)
    return "\n\n".join(paragraphs) if paragraphs else "No run had repeated reference timings."


def _not_measured(audit, run, metric: str, what: str) -> str:
    """``what: n/a (the finding's reason).``: a figure the run cannot measure, said once with its reason, where
    the sentence that reads it would have shown dashes ("moves by - points", "ICC(A,1) is - (no CI) (n=0)")."""
    finding = finding_of(audit.findings, run, metric)
    reason = audit_text(finding.reason) if finding is not None and finding.reason else "not measured on this run"
    return f"{what}: n/a ({reason})."


def _drift_and_agreement(audit, run, env, unit: str) -> str:
    """The rank drift, ICC and repeats-needed sentences of one run, each figure either read or n/a with why."""
    parts = []
    if np.isfinite(env.drift.mean_range.estimate):
        parts.append(f"Scored once per repeat against a fixed pool, a solution's score moves by "
                     f"{format_value(env.drift.mean_range.estimate)} points on average (range over {env.n_repeats} "
                     f"{unit}; 95 % of scores move less than {format_value(env.drift.p95_range_5)} as the range of 5 "
                     f"repeats, the worst {format_value(env.drift.worst_range)}), a within-problem sd of "
                     f"{format_interval(env.drift.mean_sd)} points.")
    else:
        parts.append(_not_measured(audit, run, "mean_rank_sd", "Rank drift of the score"))
    if np.isfinite(env.icc_agreement.estimate):
        parts.append(f"Test-retest agreement ICC(A,1) is {format_interval(env.icc_agreement)}.")
    else:
        parts.append(_not_measured(audit, run, "icc", "Test-retest agreement ICC(A,1)"))
    if np.isfinite(env.repeats_needed):
        parts.append(f"{format_value(env.repeats_needed)} {unit} would give a per-problem score reliability of "
                     f"{env.target_reliability:g}.")
    else:
        parts.append(_not_measured(audit, run, "repeats_needed", f"{unit.capitalize()} needed"))
    return " ".join(parts)


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
    return run_index(rows)


def describe_discriminability(audit) -> str:
    """One paragraph per run: filterable share, strong-weak gap and the floor, with what to do."""
    paragraphs = []
    t = audit.thresholds
    for run, env in audit.runs.items():
        share = env.filterable_share
        repeats = "" if env.run_summary is None else f" ({env.run_summary.repeats_text})"
        text = (f"**{run_name(run)}**{repeats}: {format_value(share.estimate * 100 if np.isfinite(share.estimate) else None)} % of "
                f"problems are duration-filterable (robust CV of their tests' reference medians ≥ {t.robust_cv:g}; "
                f"{format_interval(share)}), {format_value(env.filterable_share_noise_aware.estimate * 100)} % once "
                f"repeat noise is discounted. The slowest quarter of references scores "
                f"{format_interval(env.gap.gap)} points worse than the fastest quarter (strong-weak gap). The "
                f"sandbox floor is {format_seconds(env.floor_s)} ({env.floor_source}); "
                f"{format_value(env.near_floor_test_share * 100)} % of optimization tests have a reference median "
                f"within {t.near_floor_factor:g}× of it.")
        if env.flagged_problems:
            shown = ", ".join(map(as_name, env.flagged_problems[:8])) + (" …" if len(env.flagged_problems) > 8 else "")
            text += (f" Flagged problems (most tests near the floor: their ranks are start-up noise): {shown}. "
                     "Enlarge their inputs or drop those tests from the speed score.")
        paragraphs.append(text)
    return "\n\n".join(paragraphs) if paragraphs else "No run had reference timings."


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
        finding = finding_of(audit.findings, run, "contention")
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
    return run_index(rows)


def describe_contention(audit) -> str:
    """What the contention evidence says per run, and why it is ``n/a`` where it cannot be measured.

    The limits are the audit's thresholds (``wall_cpu_warn`` / ``wall_cpu_fail``); each run's sentence
    is its ``contention`` finding's message (what was measured, and what to do when contended).
    """
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
        finding = finding_of(audit.findings, run, "contention")
        if c is None and finding is None:
            paragraphs.append(f"**{run_name(run)}**: contention n/a: this result carries no contention evidence.")
            continue
        level = finding.level if finding is not None else c.level
        if level == NA:
            reason = (finding.reason if finding is not None and finding.reason
                      else c.message.removeprefix("contention cannot be measured: "))
            paragraphs.append(f"**{run_name(run)}**: contention n/a: {audit_text(reason)}.")
        else:
            message = finding.message if finding is not None else c.message
            paragraphs.append(f"**{run_name(run)}** ({level.upper()}): {audit_text(message)}.")
    return "\n\n".join(paragraphs)
