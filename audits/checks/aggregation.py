"""Aggregation audit: which way of turning per-test timings into one score to use on a corpus.

For every (environment, campaign) with at least two repeats, every registered
aggregator (:mod:`stats.aggregation`) is scored per (problem, solution, repeat)
against the fixed reference pool and compared on

* **stability** - mean |score(repeat i) - score(repeat j)| in reference-percentile
  points (lower = better), mean and sd over problems;
* **dynamic range** - slowest-quartile minus fastest-quartile mean score of the
  references, quartiles taken from an independent repeat (higher = better);
* their **ratio** and the **Pareto front** (no other aggregator is at least as
  stable and at least as separating).

Findings (thresholds in :class:`AggregationThresholds`, all overridable):

* ``recommended_aggregator`` - the Pareto-optimal aggregator with the lowest
  stability / range ratio, and why (pass);
* ``stability[<name>]`` / ``dynamic_range[<name>]`` of the recommended one against
  absolute limits (warn / fail when even the best aggregator is noisy or flat:
  then the sandbox or the tests are the problem, not the aggregation);
* ``default_aggregator`` - whether the default ``mean_pct`` is on the front; warn
  when it is dominated or clearly worse than the recommendation;
* ``dominated_aggregators`` - which aggregators are dominated, and by what;
* ``n_problems`` - warn when too few problems make the CIs wide.

What a run cannot measure is ``n/a`` with the reason, never a verdict: with one repeat every finding of the
run (stability compares repeats); with fewer than 2 problems, or ``n_boot=0``, the findings judged against
bootstrap resamples of problems (``default_aggregator`` when it is not the recommendation,
``dominated_aggregators``); no aggregator with a finite stability and range: ``recommended_aggregator``.
The problems a run cannot measure (:mod:`stats.coverage`; the ``unmeasured_problems`` finding names
them) are left out of every figure, ``n_problems`` and the bootstrap; a run with none left is ``n/a``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from audits.checks.declared.aggregation import AggregationOptions, AggregationThresholds
from audits.corpus.memory import small_pages
from audits.corpus.runs import RunSummary, covered_runs, rule_of, run_codes
from audits.protocol.context import audit_context
from audits.protocol.findings import Finding, findings_table, judge, to_jsonable, unmeasured_finding, worst_level
from audits.protocol.params import DEFAULT, defaults_from
from audits.protocol.partition import run_rows
from stats._groups import label_mask
from stats.aggregation import (
    AGGREGATORS,
    AggregatorComparison,
    AggregatorProblemValues,
    aggregator_problem_values,
    combine_aggregator_values,
    floor_from_rows,
    floors_by_language,
    get_aggregator,
)

__all__ = ["AggregationThresholds", "AggregationAudit", "run_aggregation_audit", "repeat_values_part", "plan_runs", "partition_values", "combine_parts"]


@dataclass(frozen=True)
class AggregationAudit:
    """Result of :func:`run_aggregation_audit`.

    Attributes
    ----------
    table : DataFrame
        One row per (environment, campaign, aggregator): stability (+ CI, sd),
        dynamic_range (+ CI, sd), ratio (+ CI), pareto, dominated_by, ...
    findings : tuple of Finding
    comparisons : tuple of ((environment, campaign), AggregatorComparison)
    primary : (environment, campaign)
        The run whose aggregators appear at the top level of :meth:`to_dict`
        (the one with the most problems; ties by name); None when no run has >= 2 repeats.
    thresholds : AggregationThresholds
    runs : tuple of RunSummary
        The runs compared, with their repeat counts.
    """

    table: pd.DataFrame
    findings: tuple
    comparisons: tuple = field(repr=False)
    primary: tuple
    thresholds: AggregationThresholds
    runs: tuple = ()
    #: The rule that chose the runs (a key of :data:`audits.corpus.runs.RULES`): ``"every run"`` or ``"named runs"``.
    run_rule: str = "every run"

    @property
    def level(self) -> str:
        return worst_level(self.findings)

    def comparison(self, environment: str | None = None, campaign: str | None = None) -> AggregatorComparison:
        """The comparison of one run (default: the primary one)."""
        if self.primary is None:
            raise KeyError("no run was compared (none has >= 2 repeats); see the findings for why")
        if environment is None and campaign is None:  # the primary run itself: one key picks run and tables
            key = tuple(self.primary)
            return next(comp for k, comp in self.comparisons if tuple(k) == key)
        key = (self.primary[0] if environment is None else environment,
               self.primary[1] if campaign is None else campaign)
        matches = [(k, comp) for k, comp in self.comparisons
                   if tuple(k) == key or (campaign is None and k[0] == key[0])]
        if matches:  # an environment alone: its run with the primary key's rule (most problems, then name)
            return min(matches, key=lambda kc: (tuple(kc[0]) != key, -kc[1].n_problems, str(kc[0])))[1]
        raise KeyError(f"no aggregation comparison for environment={key[0]!r}, campaign={key[1]!r}")

    @property
    def recommended(self) -> str | None:
        return self.comparison().recommended if self.comparisons else None

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict:
        primary = (self.comparison().to_dict() if self.comparisons else
                   dict.fromkeys(("recommended", "default", "n_problems", "n_repeats", "aggregators")))
        environments: dict = {}
        for (env, camp), comp in self.comparisons:
            environments.setdefault(str(env), {})[str(camp)] = comp.to_dict()
        return to_jsonable({
            "audit": "aggregation",
            "run_rule": self.run_rule,
            "level": self.level,
            "primary": (None if self.primary is None
                        else {"environment": self.primary[0], "campaign": self.primary[1]}),
            "recommended": primary["recommended"],
            "default": primary["default"],
            "n_problems": primary["n_problems"],
            "n_repeats": primary["n_repeats"],
            "aggregators": primary["aggregators"],
            "findings": [f.to_dict() for f in self.findings],
            "thresholds": self.thresholds.to_dict(),
            "environments": environments,
            "runs": [r.to_dict() for r in self.runs],
        })

    def summary(self) -> str:
        lines = []
        repeats = {(r.environment, r.campaign): r.repeats_text for r in self.runs}
        for (env, camp), comp in self.comparisons:
            lines.append(f"== aggregation audit: environment {env}, campaign {camp} "
                         f"({repeats.get((env, camp), '?')}) ==")
            lines.append(comp.summary())
            lines.append("")
        lines.append(findings_table(self.findings))
        return "\n".join(lines)


#: The fewest problems a bootstrap over problems needs (with one, every resample is that problem).
MIN_PROBLEMS = 2


def _no_resamples(n_problems: int, n_boot: int, th: AggregationThresholds, level: float) -> str | None:
    """Why the findings judged against bootstrap resamples of problems are n/a (None: they are judged).

    They compare a share of the resamples with ``level`` (confident domination) and ``th.default_confidence``:
    with fewer than 1 / (1 - share) resamples a share moves in steps wider than 1 - share, so it cannot be told
    from 100 % (n_boot = 1 judged "dominated in >= 95 % of bootstrap resamples" from one resample)."""
    if n_problems < MIN_PROBLEMS:
        return (f"{n_problems} problem{'' if n_problems == 1 else 's'}; this figure needs >= {MIN_PROBLEMS}: it is judged "
                "against bootstrap resamples of problems (with one problem every resample is that problem). "
                f"Collect more problems (>= {th.min_problems} for CIs that hold)")
    if n_boot == 0:
        return "judged against bootstrap resamples of problems, and n_boot = 0 draws none: run with --n-boot 1000"
    share = max(level, th.default_confidence)
    needed = int(np.ceil(1 / (1 - share) - 1e-9)) if share < 1 else None
    if needed is not None and n_boot < needed:
        return (f"judged as a share of bootstrap resamples of problems against {share:.0%}, and {n_boot} resample"
                f"{'' if n_boot == 1 else 's'} cannot tell {share:.0%} from 100% (one resample is "
                f"{1 / n_boot:.1%} of them; >= {needed} needed): run with --n-boot 1000")
    return None


def _excess(ratio: float, best: float) -> tuple[float, str]:
    """How much larger ``ratio`` (stability / range) is than the best one, as a fraction and as text.

    A clock without repeat noise (instruction counts) gives every aggregator stability 0, so both ratios can be
    0: equal ratios are 0 % apart, and a positive ratio against a best of 0 is infinitely larger (said in words,
    not as "+inf%")."""
    if not (np.isfinite(ratio) and np.isfinite(best)):
        return np.nan, "n/a"
    if ratio == best:
        return 0.0, "+0%"
    if best > 0:
        return ratio / best - 1, f"{ratio / best - 1:+.0%}"
    return np.inf, f"{ratio:.3f} (the best's is 0)"


def _fmt_ci(row, column) -> str:
    low, high = row[column + "_low"], row[column + "_high"]
    if not (np.isfinite(low) and np.isfinite(high)):  # no resamples (n_boot = 0 or one problem): no interval
        return f"{row[column]:.2f} (no CI)"
    return f"{row[column]:.2f} [{low:.2f}, {high:.2f}]"


def _run_findings(comp: AggregatorComparison, where: dict, th: AggregationThresholds, *, n_boot: int
                  ) -> list[Finding]:
    table = comp.table.set_index("aggregator")
    findings: list[Finding] = []
    n = comp.n_problems
    if n == 0:  # every problem of the run is one it cannot measure (left out): nothing to judge
        why = "no problem of the run can be measured (unmeasured_problems names each with its cause)"
        return [Finding.not_available(metric, why, threshold=threshold, **where) for metric, threshold in
                (("n_problems", f">= {th.min_problems}"), ("recommended_aggregator", "a finite stability and "
                                                           "dynamic range"))]
    best = comp.recommended
    # the problems the recommendation's figures rest on: a problem with fewer than 4 correct references has a
    # stability but no dynamic range, so its ratio and CIs come from fewer problems than the run has
    if best is not None:
        n = min(n, int(table.loc[best, "n_problems"]), int(table.loc[best, "n_problems_range"]))
    if n < th.min_problems:
        some = ("" if n == comp.n_problems else
                f" of the {comp.n_problems} give {best} both a stability and a dynamic range (a range needs >= 4 "
                "correct references with ok runs)")
        findings.append(Finding(
            "warn", "n_problems", n, f">= {th.min_problems}",
            f"only {n} problem{'' if n == 1 else 's'}{some}: the bootstrap CIs are wide and the ranking of aggregators may not hold; "
            "collect more problems before switching aggregators.", **where))
    if best is None:  # not measurable on this run: n/a with why, never a verdict on the aggregators
        finite = np.isfinite(table["stability"].to_numpy(float)) & np.isfinite(table["dynamic_range"].to_numpy(float))
        if finite.any():  # measured, but no aggregator puts the slowest references above the fastest
            widest = float(table["dynamic_range"].to_numpy(float)[finite].max())
            why = (f"no aggregator separates the slowest reference quartile from the fastest (the widest dynamic "
                   f"range is {widest:.2f} points), so no stability / range ratio ranks them: the references' "
                   "scores tie (durations equal across programs: is the clock too coarse for these programs, "
                   "e.g. every duration the same number of milliseconds?); time with a finer clock or heavier tests")
        else:
            why = ("no aggregator has a finite stability and dynamic range: the dynamic range needs a problem with "
                   ">= 4 correct references with ok runs in >= 2 repeats; add references or repeats")
        findings.append(Finding.not_available("recommended_aggregator", why,
                                               threshold="a finite stability and dynamic range", **where))
        return findings
    b = table.loc[best]
    same = [name for name, row in table.iterrows() if row["same_as"] == best]
    same_text = f" (rank-identical: {', '.join(same)})" if same else ""
    findings.append(Finding(
        "pass", "recommended_aggregator", float(b["ratio"]), "lowest stability / range ratio on the Pareto front",
        f"use {best}{same_text}: it moves {_fmt_ci(b, 'stability')} percentile points between repeats and "
        f"separates the slowest from the fastest reference quartile by {_fmt_ci(b, 'dynamic_range')} points "
        f"(ratio {b['ratio']:.3f}; n = {comp.n_problems} problem{'' if comp.n_problems == 1 else 's'}{'' if n == comp.n_problems else f', {n} with both figures'}). {comp.table.loc[comp.table['aggregator'] == best, 'description'].item()}.",
        **where))
    level_s = judge(float(b["stability"]), warn=th.stability_warn, fail=th.stability_fail)
    findings.append(Finding(
        level_s, f"stability[{best}]", float(b["stability"]),
        f"< {th.stability_warn} pass, >= {th.stability_fail} fail",
        "repeat-to-repeat movement of the recommended score is small enough." if level_s == "pass" else
        f"even the best aggregator moves {b['stability']:.1f} points between repeats: the sandbox timing is the "
        "problem, not the aggregation. Run the repeatability audit, quiet the worker, or collect more repeats "
        "and score their median.", **where))
    level_r = judge(float(b["dynamic_range"]), warn=th.range_warn, fail=th.range_fail, higher_is_worse=False)
    findings.append(Finding(
        level_r, f"dynamic_range[{best}]", float(b["dynamic_range"]),
        f"> {th.range_warn} pass, <= {th.range_fail} fail",
        "fast and slow references are well separated." if level_r == "pass" else
        f"the fastest and slowest reference quartiles are only {b['dynamic_range']:.1f} points apart: the tests "
        "hardly separate fast from slow programs. Add heavier optimization tests or drop floor-level ones "
        "(see the test-separation audit).", **where))

    default = comp.default
    if default in table.index:
        d = table.loc[default]
        if default == best:
            findings.append(Finding("pass", "default_aggregator", float(d["ratio"]), "on the Pareto front",
                                    f"the default {default} is the recommended aggregator on this corpus.", **where))
        else:
            excess, excess_text = _excess(float(d["ratio"]), float(b["ratio"]))
            confident = float(b["p_better_than_default"]) >= th.default_confidence
            dominated = list(d["dominated_by_confident"])
            rule = (f"not dominated in >= {comp.level:.0%} of bootstrap resamples, and ratio <= "
                    f"(1 + {th.default_margin}) x best unless within bootstrap noise")
            if np.isnan(excess):
                findings.append(Finding.not_available(
                    "default_aggregator", f"the stability / range ratio of {default} or {best} is undefined on "
                    f"this corpus (a stability or dynamic range not measured, or a range of 0)", threshold=rule, **where))
            elif dominated or (excess > th.default_margin and confident):
                why = (f"dominated by {', '.join(dominated[:5])} (in >= {comp.level:.0%} of bootstrap resamples)"
                       if dominated else "clearly worse than the best")
                findings.append(Finding(
                    "warn", "default_aggregator", float(d["ratio"]), rule,
                    f"the default {default} (stability {_fmt_ci(d, 'stability')}, range "
                    f"{_fmt_ci(d, 'dynamic_range')}) is {why}; its stability / range ratio is {excess_text} "
                    f"against {best}, which does better in {b['p_better_than_default']:.0%} of bootstrap resamples. "
                    f"Consider post: {{aggregator: {best}}} for rewards on this sandbox.", **where))
            else:
                findings.append(Finding(
                    "pass", "default_aggregator", float(d["ratio"]), rule,
                    f"the default {default} is within bootstrap noise of the best ({excess_text} ratio against "
                    f"{best}, better in {b['p_better_than_default']:.0%} of resamples); keeping it is fine.", **where))

    dominated = table[~table["pareto"]]
    if len(dominated):
        def names(row):
            by = list(row["dominated_by_confident"])
            return f"{', '.join(by[:3])}{'...' if len(by) > 3 else ''}"
        firm = [f"{name} (by {names(row)})" for name, row in dominated.iterrows() if row["dominated_by_confident"]]
        loose = [name for name, row in dominated.iterrows()
                 if row["dominated_by"] and not row["dominated_by_confident"]]
        undefined = [name for name, row in dominated.iterrows() if not row["dominated_by"]]
        text = f"avoid these (dominated in >= {comp.level:.0%} of bootstrap resamples): {'; '.join(firm) or 'none'}."
        if loose:
            text += f" Dominated on point estimates only (within bootstrap noise): {', '.join(loose)}."
        if undefined:
            text += f" Undefined on this corpus: {', '.join(undefined)}."
        findings.append(Finding(
            "pass", "dominated_aggregators", len(dominated),
            "dominated = another aggregator is at least as stable and at least as separating", text, **where))
    why = _no_resamples(n, n_boot, th, comp.level)
    if why is not None:  # these are judged against resamples of problems: none to judge against
        findings = [Finding.not_available(f.metric, why, threshold=f.threshold, **where)
                    if f.metric == "dominated_aggregators" or (f.metric == "default_aggregator" and default != best)
                    else f for f in findings]
    return findings


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(AggregationOptions)
def run_aggregation_audit(
    corpus: pd.DataFrame,
    *,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    runs=None,
    names: Sequence[str] | None = DEFAULT,
    floor_s: float | None = DEFAULT,
    n_boot: int = DEFAULT,
    seed: int | None = DEFAULT,
    thresholds: AggregationThresholds | Mapping | None = None,
) -> AggregationAudit:
    """Compare every aggregator on a corpus and say which one to use.

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.aggregation.AggregationOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame or AuditContext
        A timing corpus (``audits.corpus.io.load_corpus``); a run with one repeat gets n/a findings. Or the
        :class:`audits.protocol.context.AuditContext` every audit of it shares.
    environment, campaign : str, optional
        Restrict to the runs of this environment and / or campaign; default None: every run, each on its own.
    runs : sequence of Run or (environment, campaign) pairs, optional
        Exactly these runs.
    names : sequence of str, optional
        Aggregators to compare (default None: all registered).
    floor_s : float, optional
        Sandbox floor for ``floor_pct``; default None: from each run's ``floor`` rows.
    n_boot, seed : int
        Bootstrap over problems (default: the Options fields, 1000 and 0).
    thresholds : AggregationThresholds or mapping, optional

    Returns
    -------
    AggregationAudit
    """
    ctx = audit_context(corpus)  # one shared context (audits.protocol.context): rows and pool per run built once
    plan = plan_runs(ctx, [repeat_values_part(ctx)], environment=environment, campaign=campaign, runs=runs,
                     floor_s=floor_s)
    return combine_parts([partition_values(ctx, plan, names=names)], plan, thresholds=thresholds, n_boot=n_boot,
                         seed=seed)


# ----------------------------------------------------------------------------------------------
# the partition steps (audits.protocol.partition): the same in memory (one partition) and on Dask
# ----------------------------------------------------------------------------------------------
# Every figure is a function of per-problem values (stats.aggregation.AggregatorProblemValues: per aggregator and
# problem, the stability and the dynamic range, and a digest of the per-unit percentiles for ``same_as``) plus
# three figures of the whole run: its floor (for ``floor_pct``, from the run's floor rows), its repeat values (the
# smallest defines the quartiles; fewer than two: n/a) and its run summary.

def repeat_values_part(part) -> dict:
    """``{Run: sorted repeat values}`` of one partition's (an AuditContext's) non-floor rows: what the plan needs
    to know of each partition."""
    rows = part.corpus
    # the floor rows masked out, not copied out (a copy of the corpus at 10^7 rows: 2026-12-06)
    kept = ~label_mask(rows["role"], "floor") if "role" in rows.columns else np.ones(len(rows), dtype=bool)
    if not kept.any():
        return {}
    run_code, runs = run_codes(rows)
    repeat = rows["repeat"].to_numpy()
    out = {}
    for k, run in enumerate(runs):
        mine = kept & (run_code == k)
        if mine.any():  # a run of floor rows only has no repeat values to give
            out[run] = np.unique(repeat[mine])
    return out


def _run_floor(floor_rows: pd.DataFrame, run, floor_s):
    """The floor :func:`stats.aggregation.compare_aggregators` takes for ``run`` from its executions: ``floor_s`` when
    given, else each language's floor, else the median of the run's ``ok`` floor rows, else 0 (the same functions
    on the run's floor rows, the only rows they read)."""
    if floor_s is not None:
        return floor_s
    rows = floor_rows.loc[run.mask(floor_rows)] if len(floor_rows) else floor_rows
    return floors_by_language(rows) or floor_from_rows(rows) or 0.0


def plan_runs(ctx, repeat_parts: list, *, environment: str | None = None, campaign: str | None = None, runs=None,
              floor_s: float | None = None) -> dict:
    """The plan over a plan context (:mod:`audits.protocol.partition`) and every partition's
    :func:`repeat_values_part`: ``{"chosen": run summaries covered, "repeats": Run -> repeat values, "plan":
    [(summary, floor, quartile repeat)] of the runs with >= 2 repeats}``."""
    for column in ("environment", "campaign", "repeat"):
        if column not in ctx.columns:
            raise ValueError(f"aggregation audit: the corpus has no {column!r} column; load it with "
                             "audits.corpus.io.load_corpus, which fills the defaults")
    chosen = covered_runs(ctx.runs, environment=environment, campaign=campaign, explicit=runs)
    repeats: dict = {}
    for part in repeat_parts:
        for run, values in part.items():
            repeats[run] = np.union1d(repeats[run], values) if run in repeats else values
    plan = [(s, _run_floor(ctx.floor_rows, s.run, floor_s), repeats[s.run][0])
            for s in chosen if len(repeats.get(s.run, ())) >= 2]
    return {"chosen": chosen, "repeats": repeats, "plan": plan}


def partition_values(part, plan: dict, *, names: Sequence[str] | None = None) -> dict:
    """``{Run: stats.aggregation.AggregatorProblemValues}`` of one partition's problems (an AuditContext; in
    memory the whole corpus, whose run contexts' pools and percentile tables every audit shares), per planned run,
    with the whole run's floor and quartile repeat."""
    names = list(AGGREGATORS) if names is None else [get_aggregator(n).name for n in names]
    out = {}
    for summary, floor, quartile_repeat in plan["plan"]:
        run_ctx = run_rows(part, summary)
        if run_ctx is None:
            continue
        # the problems the run cannot measure (stats.coverage, named by the unmeasured_problems finding)
        # are left out of every figure, the problem count and the bootstrap over problems: every reference of
        # one that timed out scored 100 in every repeat, a stability and a dynamic range of 0 for each
        out[summary.run] = aggregator_problem_values(run_ctx.rows, names=names, pools=run_ctx.pools, floor_s=floor,
                                                     quartile_repeat=quartile_repeat,
                                                     tables=(run_ctx.repeat_percentiles, run_ctx.cell_percentiles),
                                                     leave_out=[p for p, _ in summary.unmeasured])
    return out


def combine_parts(parts: list, plan: dict, *, thresholds: AggregationThresholds | Mapping | None = None,
                  n_boot: int, seed: int | None) -> AggregationAudit:
    """The audit from every partition's :func:`partition_values`: per run, the values of its problems (one part's
    as they are, several joined in problem-name order, :meth:`stats.aggregation.AggregatorProblemValues.concat`),
    :func:`stats.aggregation.combine_aggregator_values` (means, paired bootstrap over problems, Pareto front),
    then :func:`combine_run_comparisons`."""
    th = AggregationThresholds.coerce(thresholds)  # the options: validated by AggregationOptions (not again here)
    planned = {s.run for s, _, _ in plan["plan"]}
    repeats = plan["repeats"]
    items = []
    for s in plan["chosen"]:
        if s.run not in planned:
            items.append((s, None))  # one repeat only: n/a findings
            continue
        mine = [p.pop(s.run) for p in parts if s.run in p]
        values = mine[0] if len(mine) == 1 else AggregatorProblemValues.concat(mine)
        items.append((s, combine_aggregator_values(values, n_repeats=len(repeats[s.run]),
                                                   quartile_repeat=repeats[s.run][0], n_boot=n_boot, seed=seed)))
    return combine_run_comparisons(items, thresholds=th, n_boot=n_boot, run_rule=rule_of(plan["chosen"]))


def combine_run_comparisons(items: Sequence[tuple[RunSummary, AggregatorComparison | None]], *,
                            thresholds: AggregationThresholds | Mapping | None = None,
                            n_boot: int, run_rule: str = "every run") -> AggregationAudit:
    """The audit from each chosen run's comparison, in run order (``None``: the run has one repeat only).

    :func:`combine_parts` (in memory and on Dask, whose comparisons come from per-partition values) ends here:
    findings, the table and the primary run.
    """
    th = AggregationThresholds.coerce(thresholds)
    comparisons, findings, frames, used = [], [], [], []
    for summary, comp in items:
        env, camp = summary.environment, summary.campaign
        where = {"environment": env, "campaign": camp}
        findings.extend(unmeasured_finding(summary))
        if comp is None:
            # Every finding of this audit compares repeats: with one, each is n/a (named, with why).
            reason = ("one repeat only: stability compares repeats and the dynamic range takes its quartiles from "
                      "another repeat; re-run the campaign with --repeats 3 or more")
            findings.extend(Finding.not_available(metric, reason, threshold=">= 2 repeats", **where)
                            for metric in ("repeats", "recommended_aggregator", "default_aggregator"))
            continue
        comparisons.append(((env, camp), comp))
        findings.extend(_run_findings(comp, where, th, n_boot=n_boot))
        frames.append(comp.table.assign(environment=env, campaign=camp, repeats=summary.repeats))
        used.append(summary)
    # The primary run (the report's headline): the one with most problems; ties by name, so that it
    # does not depend on row order (audits.corpus.runs: the corpus order never decides a figure). No run with
    # >= 2 repeats: no comparison and no primary run; every finding says n/a and why (above).
    primary = (min(comparisons, key=lambda kc: (-kc[1].n_problems, tuple(map(str, kc[0]))))[0]
               if comparisons else None)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["environment", "campaign",
                                                                                       "repeats", "aggregator"])
    first = ["environment", "campaign", "repeats"]
    table = table[first + [c for c in table.columns if c not in first]]
    return AggregationAudit(table=table, findings=tuple(th.judged(findings)), comparisons=tuple(comparisons),
                            primary=primary, thresholds=th, runs=tuple(used), run_rule=run_rule)

