"""The reward-environment audit: screen reward environments offline before anyone trains.

:func:`run_simulation_audit` runs the offline simulator (:mod:`stats.simulator`)
for every reward environment on one run (environment, campaign) of a corpus,
ranks them and turns each degenerate property into a :class:`Finding`
(thresholds: :class:`SimulationThresholds`, documented in docs/rewards.md).
:func:`score_candidates` reports p_tau (p100/p50/p30/p10 with bootstrap CIs
over problems) of the corpus's candidate solutions under one reward
environment.

Words: *environment* is the corpus column (the sandbox or machine); the
reward side is a *reward environment* (:class:`stats.rewards.RewardEnvironment`),
the ``reward_environment`` column of the tables here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from audits.checks.declared.simulation import SimulationOptions, SimulationThresholds
from audits.corpus.memory import small_pages
from audits.corpus.runs import Runs, RunSummary, one_run, run_codes
from audits.protocol.context import AuditContext, audit_context
from audits.protocol.findings import Finding, to_jsonable, unmeasured_causes, unmeasured_finding
from audits.protocol.params import DEFAULT, defaults_from
from audits.protocol.partition import run_rows
from stats._groups import first_rows, group_codes, label_mask
from stats.bootstrap import check_n_boot
from stats.noise import fit_noise, noise_aware_p_tau, noise_aware_scores
from stats.rewards import (
    RewardEnvironment,
    ScoringBase,
    apply_environment,
    base_percentiles,
    environment_rewards,
    filter_tests,
    optimization_reference_medians,
    p_tau,
    row_lookup,
)
from stats.simulator import (
    DegeneracyThresholds,
    SimulationResult,
    check_unique_names,
    checked_group_sizes,
    combine_simulation,
    problems_text,
    rank_environments,
    repeat_quality,
    simulate_problems,
)

__all__ = ["NoReferences", "SimulationThresholds", "SimulationAudit", "run_simulation_audit", "CandidateScores", "score_candidates",
           "fact_columns", "facts_part",
           "plan_run", "partition_part", "combine_parts"]



#: The reward schemes that draw on the repeat-noise model (stats.noise): undefined without repeat variance.
NOISE_SCHEMES = ("noise_aware", "noise_gate")


def _reward_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A stats table with its ``environment`` column (the reward environment's name) as ``reward_environment``."""
    return frame.rename(columns={"environment": "reward_environment"})

_ADVICE = {
    "sparse": "almost no rollout is paid, so most GRPO groups carry no signal: loosen tau, raise the time limit, "
              "or check that the pre-filter left optimization tests to run",
    "saturated": "almost every correct rollout is paid, so speed is not rewarded: tighten tau or add a limit",
    "non-monotone": "the reward barely follows measured quality (measurement noise shuffles it between repeats): "
                    "use a quieter sandbox, collapse more repeats, or a coarser gate",
    "off-diagonal": "the reward-vs-quality curve is far from the ideal 1 - u (the strongest offline predictor of "
                    "online p30 in the study): move tau towards the middle or use a graded scheme",
    "dead groups": "most GRPO groups would have zero advantage: use larger groups or move tau",
    "noisy": "the curve changes between repeat pairs: the sandbox's timing noise reaches the reward",
}


def choose_run(corpus: pd.DataFrame, *, environment: str | None, campaign: str | None) -> RunSummary:
    """The one run whose timings stand in for rollouts, with its repeat count.

    The run ``environment`` and ``campaign`` name. Left out, the environment must be the only one that
    matches (else an error lists the runs: pass ``--environment``); a campaign left out is the
    environment's only one, else its earliest by timestamp (or the user's order; :mod:`audits.corpus.runs`),
    else the first by name: never the file's row order, which must not decide a figure. The result names
    the run it used, with its repeat count.
    """
    return one_run(corpus if isinstance(corpus, Runs) else corpus.runs if isinstance(corpus, AuditContext) else corpus,
                   environment=environment, campaign=campaign)


@dataclass(frozen=True)
class SimulationAudit:
    """Offline screening of reward environments on one run (environment, campaign) of a corpus.

    Attributes
    ----------
    environment, campaign : str
        The run the simulation used (``run``: with its repeat count).
    curves : DataFrame
        ``reward_environment, bin, u_low, u_high, u_mid, n, mean_reward, curve, ideal, sd_pairs``.
    diagnostics : DataFrame
        One row per reward environment, best first (``rank``): the diagnostics with
        ``*_ci_low``/``*_ci_high``, n's, ``level`` and ``verdict``.
    groups : DataFrame
        ``reward_environment, group_size, zero_advantage_rate, all_negative, all_positive, n_problems``.
    findings : tuple of Finding
    thresholds : SimulationThresholds
    results : tuple of SimulationResult
    run : RunSummary
    left_out : DataFrame
        ``reward_environment, key, column``: the reward environments not simulated because they read a
        corpus column this run lacks (each also an ``n/a`` finding naming the column).
    """

    environment: str
    campaign: str
    curves: pd.DataFrame
    diagnostics: pd.DataFrame
    groups: pd.DataFrame
    findings: tuple
    thresholds: SimulationThresholds
    results: tuple = field(default=(), repr=False)
    include_incorrect: bool = False
    run: RunSummary | None = None
    left_out: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(_LEFT_OUT_COLUMNS)))
    #: The rule that chose the run (a key of :data:`audits.corpus.runs.RULES`): always ``"one run"``.
    run_rule: str = "one run"

    def to_frame(self) -> pd.DataFrame:
        return self.diagnostics

    def to_dict(self) -> dict:
        envs = {}
        for row in self.diagnostics.to_dict(orient="records"):
            envs[row["reward_environment"]] = {k: v for k, v in row.items() if k != "reward_environment"}
            if self.thresholds.profile != "reward":  # as the terminal says: measured, not judged
                envs[row["reward_environment"]].update(level="not judged", verdict="not judged")
        return to_jsonable({
            "audit": "simulation",
            "run_rule": self.run_rule,
            "environment": self.environment,
            "campaign": self.campaign,
            "run": None if self.run is None else self.run.to_dict(),
            "include_incorrect": self.include_incorrect,
            "ranking": list(self.diagnostics["reward_environment"]),
            "reward_environments": envs,
            "definitions": {r.environment.name: r.environment.to_dict() for r in self.results},
            "thresholds": self.thresholds.to_dict(),
            "left_out": self.left_out.to_dict(orient="records"),
            "findings": [f.to_dict() for f in self.findings],
            "curves": self.curves,
            "groups": self.groups,
        })

    def summary(self) -> str:
        d = self.diagnostics
        if d.empty:
            return "no reward environment simulated"
        head = d.iloc[0]
        repeats = "" if self.run is None else f" ({self.run.repeats_text})"
        lines = [f"offline simulation on environment {self.environment!r}, campaign "
                 f"{self.campaign!r}{repeats}: {_total(head)} problems, {int(head['n_solutions'])} "
                 f"{'' if self.include_incorrect else 'correct '}reference solutions as rollouts, {int(head['n_pairs'])} repeat pairs (quality from one repeat, "
                 f"reward from the next)",
                 f"zero-advantage rate at G = {int(head['headline_group_size'])}; CIs: 95 % bootstrap over the "
                 "problems with samples (column problems)",
                 ""]
        table = pd.DataFrame({
            "rank": d["rank"],
            "reward_environment": d["reward_environment"],
            "auc": [_ci(r, "auc") for r in d.to_dict(orient="records")],
            "monotonicity": [_ci(r, "monotonicity") for r in d.to_dict(orient="records")],
            "steepness": d["steepness"].map(_num),
            "diag_dev": [_ci(r, "diagonal_deviation") for r in d.to_dict(orient="records")],
            "noise": d["curve_noise"].map(lambda v: "n/a" if not np.isfinite(v) else f"{v:.3f}"),
            "zero_adv": d["zero_advantage_rate"].map(_num),
            "problems": d["n_problems"].astype(int),
            "verdict": d["verdict"] if self.thresholds.profile == "reward" else "not judged",
        })
        lines.append(table.to_string(index=False))
        reasons = d["ci_reason"] if "ci_reason" in d.columns else pd.Series(dtype=object)
        for reason in pd.unique(reasons.dropna()):  # one line per reason, naming the reward environments it holds for
            names = d.loc[(reasons == reason).to_numpy(), "reward_environment"].astype(str).tolist()
            lines.append(f"{reason} ({', '.join(names)})")
        for row in self.left_out.to_dict(orient="records"):
            lines += ["", f"left out: reward environment {row['reward_environment']!r} ({row['key']} needs the "
                          f"corpus column {row['column']!r}, which this run lacks)"]
        # what is flagged is read from the findings (as the JSON is): a profile that leaves them out, or a
        # metric that is n/a, never shows as a verdict here
        judged = {f.subject: [] for f in self.findings}
        for f in self.findings:
            if f.level != "pass" and f.metric != "verdict":
                judged[f.subject].append(f)
        flagged = [n for n in d["reward_environment"] if judged.get(n)]
        if flagged:
            lines += ["", "reward environments flagged or not measured (thresholds in docs/rewards.md; full findings "
                          "with --json):"]
        for name in flagged:
            parts = [f"{f.level.upper()} {f.metric}" + ("" if f.level == "n/a" else f" ({f.value:.2f})")
                     for f in judged[name]]
            first = next((f for f in judged[name] if f.level != "n/a"), None)
            advice = first.message.split("; ")[-1].rstrip(".") if first is not None else judged[name][0].reason
            lines.append(f"  [{name}] " + ", ".join(parts) + f" -> {advice}")
        if self.thresholds.profile != "reward":
            lines += ["", f"verdicts: not judged under --profile {self.thresholds.profile} (a reward environment's "
                          "learnability is a reward's question, not a benchmark's); the diagnostics above are "
                          "measurements"]
        return "\n".join(lines)


def _num(value) -> str:
    """``0.12``, or ``n/a`` for NaN (not measured)."""
    return "n/a" if value is None or not np.isfinite(value) else f"{value:.2f}"


def _total(head) -> int:
    """The problems with rollouts (every reward environment simulates the same ones; ``n_problems`` counts
    those with samples, which a reward environment's filter can make fewer)."""
    total = head.get("n_problems_total", head["n_problems"])
    return int(head["n_problems"] if total is None or not np.isfinite(total) else total)


def _ci(row: dict, name: str) -> str:
    lo, hi = row.get(f"{name}_ci_low"), row.get(f"{name}_ci_high")
    value = row[name]
    if value is None or not np.isfinite(value):
        return "n/a"
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{value:.2f} (no CI)"
    return f"{value:.2f} [{lo:.2f},{hi:.2f}]"


_LEFT_OUT_COLUMNS = ("reward_environment", "key", "column")


def columns_lacking(reward_environment: RewardEnvironment, rows: pd.DataFrame) -> dict[str, str]:
    """``{key: column}`` of the optional corpus columns ``reward_environment`` reads that ``rows`` lack.

    A column is lacking when it is absent or holds no value on any row (``speedaudit import`` and a
    corpus with only the required columns leave ``input_bytes`` out, for instance).

    >>> env = RewardEnvironment.from_dict({"name": "l", "pre": {"max_input_chars": 1000}, "post": {"tau": 30}})
    >>> columns_lacking(env, pd.DataFrame({"duration_s": [0.1]}))
    {'pre.max_input_chars': 'input_bytes'}
    """
    return {key: column for key, column in reward_environment.needs_columns.items()
            if column not in rows.columns or not rows[column].notna().any()}


def _left_out_finding(name: str, key: str, column: str, run: RunSummary) -> Finding:
    return Finding.not_available(
        "reward_environment_columns",
        f"reward environment {name!r} left out: {key} needs the corpus column {column!r}, which run "
        f"{run.environment} · {run.campaign} lacks (absent or empty); add the column to the corpus or drop "
        f"{key} from the reward environment", threshold=f"column {column!r} present",
        environment=run.environment, campaign=run.campaign, subject=name)


def _not_measured(d: dict, metric: str, scheme: str = "") -> str:
    """Why ``metric`` is NaN on this run (the simulator measured nothing to judge)."""
    if d.get("n_samples") and d.get("n_quality_bins", 2) < 2:
        return (f"every one of the {d['n_samples']} samples has the same quality bin: the references of each problem "
                "are tied in q (no timing tells them apart, e.g. a clock coarser than their differences), so whether "
                "the reward follows quality cannot be measured; time them with a finer clock")
    if not d.get("n_samples") and scheme in NOISE_SCHEMES and d.get("n_pairs") == 1 and d.get("n_solutions"):
        return (f"the {scheme} reward draws on the repeat-noise model (docs/noise.md), whose variances come from "
                "cells with >= 2 ok repeats; this run has one repeat, so no reward of a correct rollout is defined: collect >= 2 repeats")
    if not d.get("n_samples") and d.get("n_optimization_tests", 1) == 0:
        return (f"no rollout was scored ({d['n_solutions']} solutions over {d['n_problems_total']} problems): the run has no "
                "optimization test (test_kind), so no rollout has a quality to rank; mark the tests that time the "
                "programs as test_kind=optimization")
    if not d.get("n_samples"):
        return (f"no rollout was scored ({d['n_solutions']} solutions over {d['n_problems_total']} problems): a problem "
                "needs >= 2 correct references, since each is scored against the others (leave-self-out) and one "
                "reference has an empty pool; collect more accepted solutions per problem")
    return f"{metric} is undefined (NaN) on this run's {d['n_samples']} samples"


def _problems_ci(d: dict) -> str:
    """``2 problems with samples``, or why there is no CI (with the problems' count: a verdict over one problem
    stands, with that said; :func:`stats.simulator.combine_simulation`)."""
    reason = d.get("ci_reason")
    if not reason:
        return problems_text(d)
    return reason if int(d["n_problems"]) < 2 else f"{reason}; n = {problems_text(d)}"


def _no_ci(d: dict) -> str:
    return f" ({_problems_ci(d)})" if d.get("ci_reason") else f" (n = {problems_text(d)})"


def _nothing_measured(run: RunSummary) -> bool:
    """Whether every problem of ``run`` is one the run cannot measure (:mod:`stats.coverage`)."""
    return bool(run.unmeasured) and len(run.unmeasured) >= run.problems


def _findings(result: SimulationResult, run: RunSummary) -> list[Finding]:
    d = result.diagnostics
    name, scheme = result.environment.name, result.environment.reward.scheme
    where = {"environment": run.environment, "campaign": run.campaign, "subject": name}
    if _nothing_measured(run):  # every problem left out (partition_part): nothing was simulated, nothing judged
        why = (f"all {run.problems} problems of the run are not measured ({unmeasured_causes(run, shown=3)}): "
               "no rollout has a timing to rank")
        return [Finding.not_available("verdict", why, threshold="all checks pass", **where)]
    out, not_measured = [], set()
    for label, metric, value, level, threshold in result.checks:
        if level == "pass":
            continue
        if level == "n/a":  # NaN: not measured, never a verdict (one n/a finding per metric)
            if metric in not_measured or (metric == "curve_noise" and d["n_pairs"] == 1):
                continue
            not_measured.add(metric)
            out.append(Finding.not_available(metric, _not_measured(d, metric, scheme), threshold=threshold, **where))
            continue
        lo, hi = d.get(f"{metric}_ci_low"), d.get(f"{metric}_ci_high")
        ci = f" (95% CI {lo:.2f}-{hi:.2f}, n = {problems_text(d)})" if lo is not None and hi is not None \
            and np.isfinite(lo) and np.isfinite(hi) else _no_ci(d)
        extra = f" at G = {d['headline_group_size']}" if metric == "zero_advantage_rate" else ""
        out.append(Finding(level=level, metric=metric, value=value, threshold=threshold,
                           # the metric and its value head every finding line already (Finding's own text)
                           message=f"{label}{extra}{ci}; {_ADVICE[label]}.", **where))
    if d["n_pairs"] == 1:  # not measured (n/a), never a warning about the reward environment
        out.append(Finding.not_available(
            "curve_noise", "one repeat: quality and reward come from the same measurement, so whether timing noise "
            "moves the reward (the curve across repeat pairs) cannot be measured; collect >= 2 repeats",
            threshold=">= 2 repeats", **where))
    if d["level"] == "pass":
        out.append(Finding(level="pass", metric="verdict", value=d["auc"], threshold="all checks pass",
                           message=f"learnable: AUC {d['auc']:.2f}, monotonicity {d['monotonicity']:.2f}, "
                                   f"diagonal deviation {d['diagonal_deviation']:.2f} "
                                   f"({'' if d.get('ci_reason') else 'n = '}{_problems_ci(d)})"
                                   + ("; measured without timing noise: with one repeat, quality and reward share it "
                                      "(curve_noise is n/a), so this is what the reward environment gives a "
                                      "noise-free sandbox." if d["n_pairs"] == 1 else "."), **where))
    elif d["level"] == "n/a":
        out.append(Finding.not_available("verdict", _not_measured(d, "every diagnostic", scheme),
                                         threshold="all checks pass", **where))
    return out


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(SimulationOptions)
def run_simulation_audit(
    corpus: pd.DataFrame,
    *,
    reward_environments: Sequence[RewardEnvironment] | None = DEFAULT,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    environments: Sequence[RewardEnvironment] | None = None,
    group_sizes: Sequence[int] = DEFAULT,
    seed: int = DEFAULT,
    thresholds: SimulationThresholds | dict | None = None,
    n_bins: int = DEFAULT,
    quality_distribution=DEFAULT,
    n_boot: int = DEFAULT,
    include_incorrect: bool = DEFAULT,
) -> SimulationAudit:
    """Simulate every reward environment on one sandbox run and judge it.

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.simulation.SimulationOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame
        A timing corpus (several repeats of correct reference solutions).
    reward_environments : sequence of RewardEnvironment
        E.g. from :func:`audits.checks.reward_environments.load_reward_environments`
        (``environments=`` is the old name of this option). Required here (the Options field's None, the
        shipped examples, is the registered audit's choice).
    environment, campaign : str, optional
        The run of the corpus whose timings stand in for rollouts (see
        :func:`choose_run`: the only environment, and its only or earliest campaign).
    group_sizes : sequence of int
        GRPO group sizes; the headline zero-advantage rate is at the largest (default: the Options field,
        (2, 4, 8, 16)).
    seed : int
        Seed of the simulation and its bootstrap (default: the Options field, 0).
    thresholds : SimulationThresholds or dict, optional
        The thresholds, or overrides of the documented defaults (``{"auc_sparse.fail": 0.02}``).
    n_bins : int
        Quality bins of the curves (default: the Options field, 10).
    quality_distribution
        Quality distribution of a GRPO group's rollouts (default: the Options field, ``"uniform"``).
    n_boot : int
        Bootstrap resamples over problems (default: the Options field, 200).
    include_incorrect : bool
        Also use incorrect references as rollouts (see :func:`stats.simulator.simulate`; default: the Options
        field, False).

    Returns
    -------
    SimulationAudit

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> corpus = synthesize(n_problems=6, n_repeats=3, seed=1).corpus
    >>> env = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
    >>> audit = run_simulation_audit(corpus, reward_environments=[env], n_boot=20)
    >>> audit.diagnostics["verdict"].tolist()
    ['pass']
    """
    reward_environments = reward_environment_list(reward_environments, environments)
    ctx = audit_context(corpus)  # one shared context (audits.protocol.context): the run's rows and pool built once
    plan = plan_run(ctx, [facts_part(ctx, fact_columns(reward_environments), include_incorrect)],
                    reward_environments, environment=environment, campaign=campaign, group_sizes=group_sizes,
                    n_bins=n_bins, quality_distribution=quality_distribution, include_incorrect=include_incorrect)
    return combine_parts([partition_part(ctx, plan)], plan, thresholds=thresholds, n_boot=n_boot, seed=seed)


# ----------------------------------------------------------------------------------------------
# the partition steps (audits.protocol.partition): the same in memory (one partition) and on Dask
# ----------------------------------------------------------------------------------------------
# The simulator turns each correct reference solution's repeats into (quality, reward) samples within its problem;
# every figure is a function of per-problem parts (stats.simulator.SimulationProblems: reward sums and sample counts
# per problem, repeat pair and quality bin, the (bin, reward value) counts, the GRPO group rates, test and execution
# counts) plus what the whole run decides, in the plan: the run; its repeat values (they define the repeat pairs:
# a problem lacking one still pairs as in the whole run); its floor rows' durations (the floor of aggregators other
# than mean_pct); which optional columns hold a value anywhere in the run (a reward environment reading a lacking
# one is left out). A ``multitask`` reward (a seeded coin per rollout) needs nothing from the plan: each rollout's
# coin is keyed by its own data (stats.rewards.multitask_uniforms), the same in any partition.

#: The fact a reward environment relative to the run's reference medians needs from every partition (an entry of
#: :func:`fact_columns`, not a corpus column): its optimization tests' medians (:func:`stats.rewards.reference_medians`,
#: read from the run context's :attr:`~audits.protocol.context.RunContext.reward_tests`).
REFERENCE_MEDIANS = "reference medians"


def fact_columns(reward_environments) -> list:
    """The optional columns the reward environments read (each partition's facts tell which hold a value), and
    :data:`REFERENCE_MEDIANS` when one is relative to the run's reference medians (the plan takes its quantile of
    every partition's)."""
    columns = sorted({c for e in reward_environments for c in e.needs_columns.values()})
    return columns + ([REFERENCE_MEDIANS] if any(e.relative for e in reward_environments) else [])


def _unmeasured(context, run) -> set[str]:
    """The problems of ``run`` the rows cannot measure (:mod:`stats.coverage`, the run table's ``unmeasured``), which
    the simulation leaves out as if the run had none of their rows, as every other audit does: a problem whose
    every reference timed out pays all its rollouts alike, so it would add dead groups and flat curves that say
    nothing of the reward. A partition holds whole problems, so its own run table names the same problems."""
    try:
        summary = context.runs.get(run)
    except (KeyError, ValueError):  # a run of floor rows alone has no summary and no problem
        return set()
    return {problem for problem, _ in getattr(summary, "unmeasured", ())}


def _measured_rows(context, run, problem_names: np.ndarray, problem_code: np.ndarray) -> np.ndarray:
    """Per row of the partition, whether its problem is measured in ``run`` (codes and names of :func:`facts_part`)."""
    dropped = _unmeasured(context, run)
    if not dropped:
        return np.ones(len(problem_code), dtype=bool)
    return ~np.isin(problem_names, list(dropped))[problem_code]


def facts_part(part, columns: list, include_incorrect: bool) -> dict:
    """Per run of one partition (an AuditContext): the repeat values of the simulated references (those of
    :func:`stats.simulator.repeat_quality`), which of ``columns`` hold a value, and whether it has correct
    reference rows."""
    context, part = part, part.corpus
    if len(part) == 0:
        return {}
    # names as text only for one row per run and per problem: a whole column as text (pandas' string arrays)
    # took 5.4 of the 8.8 s this pass took at 10^7 rows (2026-12-06, cProfile)
    run_code, run_names = run_codes(part)
    problem_code, n_problems = group_codes(part, ["problem"])
    problem_names = part["problem"].iloc[first_rows(problem_code, n_problems)].astype(str).to_numpy()
    n = len(part)
    floor = label_mask(part["role"], "floor") if "role" in part.columns else np.zeros(n, dtype=bool)
    reference = label_mask(part["role"], "reference") if "role" in part.columns else ~floor
    correct = part["correct"].to_numpy(dtype=bool) if "correct" in part.columns else np.ones(n, dtype=bool)
    rated = reference & (correct | include_incorrect) & ~floor
    repeat = part["repeat"].to_numpy()
    optimization = label_mask(part["test_kind"], "optimization") if "test_kind" in part.columns else ~floor
    sized = (np.isfinite(part["input_bytes"].to_numpy(dtype=float)) if "input_bytes" in part.columns
             else np.zeros(n, dtype=bool))
    out = {}
    for k, run in enumerate(run_names):
        mine = run_code == k
        measured = mine & _measured_rows(context, run, problem_names, problem_code)
        out[run] = {
            "repeats": np.unique(repeat[measured & rated]),
            "all_repeats": np.unique(repeat[mine & rated]),  # the plan's repeats when no problem is measured
            "has_values": {c: bool(c in part.columns and part.loc[mine, c].notna().any()) for c in columns
                           if c != REFERENCE_MEDIANS},
            "has_references": bool((mine & reference & correct).any()),
            "optimization": bool((mine & ~floor & optimization).any()),
            "sized": bool((mine & ~floor & optimization & sized).any()),
        }
        if REFERENCE_MEDIANS in columns:  # a partition of floor rows alone holds no run of its own
            run_ctx = run_rows(context, run) if (mine & ~floor).any() else None
            out[run]["reference_medians"] = (np.zeros(0) if run_ctx is None
                                             else optimization_reference_medians(run_ctx.reward_tests))
    return out


def plan_run(ctx, facts: list, reward_environments, *, environment, campaign, group_sizes, n_bins,
             quality_distribution, include_incorrect) -> dict:
    """What the whole run decides (see above), over a plan context (:mod:`audits.protocol.partition`) and every
    partition's :func:`facts_part`: ``{"run", "usable", "left_out", "sizes", "headline", "repeats",
    "floor_durations", "options"}``. Raises the audit's errors (no run to choose, no reference
    rows, no usable reward environment, ...)."""
    sizes, headline = checked_group_sizes(group_sizes, None, n_bins)
    run = choose_run(ctx.runs, environment=environment, campaign=campaign)
    mine = [f[run.run] for f in facts if run.run in f]
    if not any(f["has_references"] for f in mine):
        raise NoReferences(_no_references(run))
    left_out, usable = usable_reward_environments(
        reward_environments, lambda column: any(f["has_values"][column] for f in mine), run)
    check_unique_names(usable)
    if any(f["optimization"] for f in mine) and not any(f["sized"] for f in mine):
        _check_sizes(usable)
    floor_durations = None
    floor_rows = ctx.floor_rows
    if "role" in floor_rows.columns and len(floor_rows):
        floor_rows = floor_rows.loc[run.run.mask(floor_rows) & label_mask(floor_rows["role"], "floor")]
        if len(floor_rows):
            floor_durations = floor_rows["duration_s"].to_numpy(dtype=float)
    run_medians = None
    if any(e.relative for e in usable):  # every partition's tests: the quantile is the whole run's
        run_medians = np.sort(np.concatenate([f.get("reference_medians", np.zeros(0)) for f in mine]))
    return {"run": run, "usable": usable, "left_out": left_out, "sizes": sizes, "headline": headline,
            "run_medians": run_medians,
            "repeats": _repeats(mine, run), "floor_durations": floor_durations,
            "options": {"include_incorrect": include_incorrect, "n_bins": n_bins, "group_sizes": sizes,
                        "quality_distribution": quality_distribution}}


def _repeats(facts: list, run: RunSummary) -> np.ndarray:
    """The repeat values of the run's simulated references (of its measured problems; of all of them when none is
    measured, so the empty simulation still has the run's repeat pairs)."""
    key = "all_repeats" if _nothing_measured(run) else "repeats"
    return np.unique(np.concatenate([f[key] for f in facts]))


def _filter_as_in_the_run(env, rows: pd.DataFrame):
    """``env`` as it filters this partition's tests in the whole run.

    ``pre.max_input_chars`` keeps a test without a known input size; only when no optimization test of the
    run has one does it raise (the plan checks that on the whole run, :func:`_check_sizes`). A partition whose
    optimization tests all lack a size would raise on its own: there the key keeps every test, exactly what it
    does to those tests in the whole run, so it is dropped for this partition.
    """
    if env.pre.max_input_chars is None:
        return env
    if "test_kind" in rows.columns:
        rows = rows.loc[label_mask(rows["test_kind"], "optimization")]
    if "input_bytes" in rows.columns and np.isfinite(rows["input_bytes"].to_numpy(dtype=float)).any():
        return env
    return dataclasses.replace(env, pre=dataclasses.replace(env.pre, max_input_chars=None))


def partition_part(part, plan: dict) -> list | None:
    """:func:`stats.simulator.simulate_problems` of one partition's problems of the planned run (an AuditContext;
    in memory the whole corpus, whose run context's pool and per-repeat percentiles every audit shares), one per
    usable reward environment; None when the partition holds none of the run's (non-floor) rows."""
    run_ctx = run_rows(part, plan["run"])
    if run_ctx is None:
        return None
    options = plan["options"]
    # every row of the run is ranked once, in the shared per-repeat table: the repeat quality and the reward
    # environments' base percentiles are subsets of it (aligned with the run's non-floor rows)
    rows, pools, ranked = run_ctx.rows, run_ctx.pools, run_ctx.repeat_percentiles["percentile"].to_numpy()
    tests = run_ctx.reward_tests  # the one built for the facts, when a reward environment is relative to the run
    dropped = {problem for problem, _ in plan["run"].unmeasured}
    if dropped:  # the problems the run cannot measure, left out before anything is scored (see _unmeasured)
        keep = ~rows["problem"].isin(list(dropped)).to_numpy()
        if not keep.any() and not _nothing_measured(plan["run"]):
            return None  # this partition's problems all left out; the others' parts make the run's figures
        if not keep.all():  # (every problem of the run left out: an empty part, every figure n/a, see _findings)
            rows, ranked = rows.loc[keep], ranked[keep]
            # whole problems left out: their tests' rows (an empty part builds its own empty table)
            tests = (tests.loc[~tests["problem"].isin(list(dropped)).to_numpy()].reset_index(drop=True) if len(rows)
                     else None)
    quality = repeat_quality(rows, pools=pools, include_incorrect=options["include_incorrect"], percentiles=ranked)
    percentiles = base_percentiles(rows, pools=pools, roles=("reference",), percentiles=ranked)
    # shared by the environments
    base = ScoringBase(rows, pools=pools, roles=("reference",), per_repeat=True, tests=tests)
    return [simulate_problems(rows, _filter_as_in_the_run(env, rows), repeats=plan["repeats"], quality=quality,
                              pools=pools, percentiles=percentiles, n_bins=options["n_bins"],
                              group_sizes=options["group_sizes"], quality_distribution=options["quality_distribution"],
                              floor_durations=plan["floor_durations"], base=base,
                              run_medians=plan["run_medians"] if env.relative else None)
            for env in plan["usable"]]


def combine_parts(parts: list, plan: dict, *, thresholds, n_boot: int, seed: int) -> SimulationAudit:
    """The audit from every partition's :func:`partition_part`: per reward environment
    :func:`stats.simulator.combine_simulation` of its parts (curves, diagnostics and their bootstrap over problems,
    group statistics, verdict), then :func:`combine_simulation_results`. The options come validated by
    :class:`~audits.checks.declared.simulation.SimulationOptions` (the registered audit's, or
    :func:`run_simulation_audit`'s keywords): not checked again here."""
    th = SimulationThresholds.coerce(thresholds)
    parts = [p for p in parts if p is not None]
    results = [combine_simulation([p[j] for p in parts], env, group_sizes=plan["sizes"],
                                  headline_group_size=plan["headline"], thresholds=_degeneracy(th), n_boot=n_boot,
                                  seed=seed)
               for j, env in enumerate(plan["usable"])]
    return combine_simulation_results(plan["run"], results, plan["left_out"], thresholds=th,
                                      include_incorrect=plan["options"]["include_incorrect"])


def _check_sizes(reward_environments) -> None:
    """The simulation's error for ``pre.max_input_chars`` on a run whose optimization tests all lack an input size
    (``stats.rewards.filter_tests`` raises it; called on one such test, so that the message is the same)."""
    tests = pd.DataFrame({"test_kind": ["optimization"], "reference_median_s": [np.nan], "input_bytes": [np.nan]})
    for env in reward_environments:
        filter_tests(tests, env.pre)


def reward_environment_list(reward_environments, environments) -> list:
    """The reward environments given, required: ``reward_environments`` as :class:`SimulationOptions` validated it
    (:func:`audits.protocol.params.defaults_from`), or under its old name ``environments=``, validated here by the
    same field."""
    if environments is not None:
        if reward_environments is not None:
            raise TypeError("pass the reward environments once, as reward_environments=")
        reward_environments = SimulationOptions.keyword_values({"reward_environments": environments})[
            "reward_environments"]
    if reward_environments is None:
        raise ValueError("no reward environment to simulate; pass at least one RewardEnvironment")
    return list(reward_environments)


class NoReferences(ValueError):
    """The run to simulate has no correct reference rows: nothing to stand in for the rollouts. ``audit all``
    reports the simulation as skipped with this reason when the run was its own choice, not the user's (a corpus
    whose only run's programs all failed: the other audits still report)."""


def _no_references(run: RunSummary) -> str:
    return (f"environment {run.environment!r}, campaign {run.campaign!r} has no correct reference rows "
            "(role=reference, correct=true): the simulator needs them as stand-in rollouts")


def _degeneracy(th) -> DegeneracyThresholds:
    return DegeneracyThresholds(**{k: v for k, v in th.to_dict().items() if k != "profile"})


def usable_reward_environments(reward_environments: Sequence[RewardEnvironment], has_values, run: RunSummary):
    """``(left_out, usable)``: the reward environments that read a corpus column the run lacks (a table of
    ``reward_environment, key, column``) and the others; ``has_values(column)`` says whether any row of the
    run holds a value in ``column`` (:func:`columns_lacking`). An error when none is usable.

    A reward environment that reads a column this run lacks is left out with a note naming the column (an
    n/a finding), so the others are still screened on a corpus with only the required columns.
    """
    lacking = {e.name: {key: column for key, column in e.needs_columns.items() if not has_values(column)}
               for e in reward_environments}
    left_out = pd.DataFrame([(name, key, column) for name, cols in lacking.items() for key, column in cols.items()],
                            columns=list(_LEFT_OUT_COLUMNS))
    usable = [e for e in reward_environments if not lacking[e.name]]
    if not usable:
        needs = "; ".join(f"{r.reward_environment!r}: {r.key} needs {r.column!r}" for r in left_out.itertuples())
        raise ValueError(f"every reward environment reads a corpus column run {run.environment} · {run.campaign} "
                         f"lacks ({needs}); add the column or pass a reward environment without those keys")
    return left_out, usable


def combine_simulation_results(run: RunSummary, results: Sequence[SimulationResult], left_out: pd.DataFrame, *,
                               thresholds, include_incorrect: bool) -> SimulationAudit:
    """The audit from the simulations of the usable reward environments (in the order given): ranking, curves,
    groups and findings. :func:`run_simulation_audit` ends here, and so does the Dask path
    (the partition steps, :func:`combine_parts`, whose results come from per-partition parts)."""
    th = SimulationThresholds.coerce(thresholds)
    env_name, camp = run.environment, run.campaign
    ranking = rank_environments(list(results))
    name_first = ["reward_environment"]
    curves = pd.concat([r.curve.assign(reward_environment=r.environment.name) for r in results], ignore_index=True)
    curves = curves[name_first + [c for c in curves.columns if c not in name_first]]
    groups = pd.concat([r.groups.assign(reward_environment=r.environment.name) for r in results], ignore_index=True)
    groups = groups[name_first + [c for c in groups.columns if c not in name_first]]
    ranking = _reward_frame(ranking)
    by_name = {r.environment.name: r for r in results}
    findings = list(unmeasured_finding(run))
    for name in ranking["reward_environment"]:
        findings.extend(_findings(by_name[name], run))
    findings.extend(_left_out_finding(r.reward_environment, r.key, r.column, run) for r in left_out.itertuples())
    return SimulationAudit(environment=env_name, campaign=camp, curves=curves, diagnostics=ranking,
                           groups=groups, findings=tuple(th.judged(findings)), thresholds=th, results=tuple(results),
                           include_incorrect=include_incorrect, run=run, left_out=left_out)


# --------------------------------------------------------------------------------------------
# p_tau of candidate solutions
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CandidateScores:
    """p_tau of a corpus's candidate solutions under one reward environment, on one run.

    Attributes
    ----------
    table : DataFrame
        ``tau, k, estimate, ci_low, ci_high, n_problems`` (percent).
    samples : DataFrame
        One row per (problem, candidate solution): ``q, c, g, reward`` and the
        noise-aware ``q_expected, q_ci_low, q_ci_high, p_q_le_tau, p_gate``
        (docs/noise.md; the table adds ``noise_aware, noise_ci_low, noise_ci_high``).
    noise_reason : str or None
        Why the noise-aware values are n/a, if they are.
    noise_unmeasured : tuple of str
        Problems whose noise-aware values are n/a while others' are not (sorted names): no cell of the problem
        has two ok repeats, so it has no variance of its own, and another problem's is never borrowed. Their
        candidates are left out of the noise-aware p_tau below 100.
    """

    reward_environment: RewardEnvironment
    environment: str
    campaign: str
    table: pd.DataFrame
    samples: pd.DataFrame
    noise_reason: str | None = None
    noise_settings: dict = field(default_factory=dict)
    run: RunSummary | None = None
    #: Problems left out of p_tau below 100 (:func:`unranked_problems`): no reference to rank their candidates.
    unranked: tuple = ()
    noise_unmeasured: tuple = ()

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def to_dict(self) -> dict:
        return to_jsonable({
            "reward_environment": self.reward_environment.to_dict(), "environment": self.environment,
            "campaign": self.campaign, "run": None if self.run is None else self.run.to_dict(),
            "n_problems": int(self.samples["problem"].nunique()), "n_samples": len(self.samples),
            "p_tau": {f"p{int(r['tau']) if float(r['tau']).is_integer() else r['tau']}": r
                      for r in self.table.to_dict(orient="records")},
            "noise_aware": _noise_dict(self),
            "unranked_problems": list(self.unranked),
        })

    def summary(self) -> str:
        per_problem = self.samples.groupby("problem", observed=True).size()
        lines = [f"p_tau of {len(self.samples)} candidate solutions on {len(per_problem)} problems "
                 f"({per_problem.min()}-{per_problem.max()} per problem), environment "
                 f"{self.environment!r}, campaign {self.campaign!r}"
                 + ("" if self.run is None else f" ({self.run.repeats_text})"),
                 f"reward environment {self.reward_environment.name}: {self.reward_environment.describe()}",
                 f"success = strictly correct (c) and q <= tau/100 (q from "
                 f"{self.reward_environment.post.aggregator}); "
                 f"pass@{int(self.table['k'].iloc[0])}, 95 % bootstrap CI over problems", ""]
        for r in self.table.to_dict(orient="records"):
            tau = f"p{r['tau']:g}"
            if not np.isfinite(r["estimate"]) and r["tau"] < 100 and self.unranked and not r["n_problems"] \
                    and set(self.unranked) >= set(per_problem.index.astype(str)):
                lines.append(f"  {tau:>5}    n/a    (no problem has a correct reference on an optimization test to "
                             "rank its candidates against)")
                continue
            if not np.isfinite(r["estimate"]):  # no problem has k candidates: not measured, never "nan %"
                lines.append(f"  {tau:>5}    n/a    (pass@{int(r['k'])} needs >= {int(r['k'])} candidates of a "
                             f"problem; these have {per_problem.min()}-{per_problem.max()}: lower --k or add "
                             "candidates)")
                continue
            ci = f"[{r['ci_low']:5.1f}, {r['ci_high']:5.1f}]" if np.isfinite(r["ci_low"]) else "[  n/a ]"
            lines.append(f"  {tau:>5}  {r['estimate']:5.1f} %  {ci}  n = {r['n_problems']} problems"
                         + _noise_cell(r))
        if self.unranked:
            lines += ["", f"left out of p_tau below 100 (n/a): {len(self.unranked)} problem(s) without a correct "
                          "reference on any optimization test, so their candidates cannot be ranked: "
                          + ", ".join(self.unranked[:10]) + (" ..." if len(self.unranked) > 10 else "")]
        return "\n".join(lines + _noise_lines(self))


def score_candidates(
    corpus: pd.DataFrame,
    *,
    env: RewardEnvironment,
    environment: str | None = None,
    campaign: str | None = None,
    taus: Sequence[float] = (100, 50, 30, 10),
    k: int = 1,
    n_boot: int = 1000,
    seed: int = 0,
    n_draws: int = 2000,
    prior_df: float = 4.0,
) -> CandidateScores:
    """p_tau (pass@k) of the candidate solutions (role ``candidate``) under one reward environment ``env``.

    Every candidate solution of a problem is one sample; its repeats are
    collapsed (median of ``ok`` repeats, majority status) and ranked against the
    reference pool of the same run (environment, campaign; :func:`choose_run`),
    through the reward environment's filter, limit and aggregator. Beside each point value, the
    noise-aware one (docs/noise.md): E[q] with its 95 % posterior interval and
    P(q <= tau/100) per candidate, and p_tau's posterior mean with its
    timing-noise interval (``n_draws`` posterior draws, ``prior_df`` of the
    repeat-noise model).
    """
    n_boot = check_n_boot(n_boot)  # 0: no intervals (NaN), every point estimate still computed
    if "role" not in corpus.columns or not (corpus["role"] == "candidate").any():
        raise ValueError("the corpus has no candidate solutions (rows with role=candidate): p_tau scores "
                         "candidates against the reference pool; add the programs to score as role=candidate")
    run = choose_run(corpus, environment=environment, campaign=campaign)
    env_name, camp = run.environment, run.campaign
    runs = corpus.loc[run.run.mask(corpus)]
    if not (runs["role"] == "candidate").any():
        raise ValueError(f"environment {env_name!r}, campaign {camp!r} has no candidate solutions (role=candidate); "
                         "choose another --environment / --campaign")
    outcome = apply_environment(runs, env, per_repeat=False, roles=("candidate",))
    samples = outcome.scores.copy()

    samples["reward"] = environment_rewards(samples, env.reward)
    unranked = unranked_problems(outcome.tests)
    ranked = ~samples["problem"].astype(str).isin(unranked).to_numpy()
    # p_tau below 100 ranks candidates against the references: a problem with no reference pool on any optimization
    # test cannot rank them, so it is left out there (n/a, named), never counted as its candidates' failure
    table = pd.concat([_p_tau_row(samples if tau >= 100 else samples.loc[ranked], tau, k=k, n_boot=n_boot, seed=seed)
                       for tau in taus], ignore_index=True)
    samples, noise_table, reason, no_variance = noise_aware_candidates(
        runs, outcome, env, samples=samples, taus=taus, k=k, n_draws=n_draws, prior_df=prior_df, seed=seed,
        ranked=ranked)
    return CandidateScores(reward_environment=env, environment=env_name, campaign=camp,
                           table=pd.concat([table, noise_table], axis=1), samples=samples, noise_reason=reason,
                           noise_settings={"n_draws": n_draws, "prior_df": prior_df, "tau": env.post.tau}, run=run,
                           unranked=tuple(unranked), noise_unmeasured=tuple(no_variance))


def _p_tau_row(samples: pd.DataFrame, tau: float, *, k: int, n_boot: int, seed: int) -> pd.DataFrame:
    """:func:`stats.rewards.p_tau` at one tau; with no sample (every problem unranked) its row is n/a (NaN)."""
    if len(samples):
        return p_tau(samples, taus=(tau,), k=k, n_boot=n_boot, seed=seed)
    return pd.DataFrame([{"tau": float(tau), "k": k, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                          "n_problems": 0}])


def unranked_problems(tests: pd.DataFrame) -> list[str]:
    """The problems (sorted names) none of whose optimization tests has a reference pool (an
    :class:`stats.rewards.EnvironmentRun`'s ``tests``): their candidates have no q to compare with tau. A test
    the reward environment's filter drops still counts: that is the environment's choice, not the corpus's gap."""
    problems = tests["problem"].astype(str).to_numpy()
    ranks = (tests["test_kind"].to_numpy() == "optimization") & (tests["pool_size"].to_numpy() > 0)
    return sorted(set(problems) - set(problems[ranks]))


# --------------------------------------------------------------------------------------------
# Noise-aware values of the candidates (docs/noise.md)
# --------------------------------------------------------------------------------------------

NOISE_COLUMNS = ("q_expected", "q_ci_low", "q_ci_high", "p_q_le_tau", "p_gate")


def noise_aware_candidates(runs: pd.DataFrame, outcome, env, *, samples: pd.DataFrame, taus: Sequence[float],
                           k: int, n_draws: int, prior_df: float, seed: int, ranked: np.ndarray | None = None
                           ) -> tuple[pd.DataFrame, pd.DataFrame, str | None, list[str]]:
    """The noise-aware values beside the point ones: per candidate E[q] [interval], P(q <= tau/100), P(gate),
    and p_tau's posterior mean and timing-noise interval.

    The repeat-noise model (:func:`stats.noise.fit_noise`) is fitted on every repeat
    of the run, each problem from its own rows (``widest="problem"``, as the simulation's noise_aware and
    noise_gate rewards, :func:`stats.rewards.apply_environment`); the candidates' cells are those the reward
    environment kept, with the status its limit gave them. A problem with no cell of two ok repeats (one
    repeat) has no variance of its own: its candidates' noise-aware values are n/a, never drawn from the
    other problems' variance (which would make them depend on which problems share the corpus), and it is
    left out of the noise-aware p_tau below 100 (an undefined q* is not a failure). A problem whose repeats
    are all equal has a variance of its own, zero: its noise-aware values are the point ones.
    Returns ``(samples, table, reason, no_variance)``: the samples with :data:`NOISE_COLUMNS`, the p_tau table
    with ``noise_aware, noise_ci_low, noise_ci_high``, why they are n/a (else None), and the problems (sorted
    names) n/a for want of a variance while others are measured.
    """
    samples = samples.copy()
    reason = None
    if env.post.aggregator != "mean_pct":
        reason = (f"defined for the mean_pct aggregator (q = mean per-test percentile); this reward environment "
                  f"uses {env.post.aggregator}")
    table_cols = {"noise_aware": np.nan, "noise_ci_low": np.nan, "noise_ci_high": np.nan}
    # (the draws follow each cell's data, never its labels: stats.noise orders them by keys hashed from the data)
    model = fit_noise(runs, prior_df=prior_df, widest="problem") if reason is None else None
    no_variance: list[str] = []
    if model is not None:
        has_variance = np.isfinite(model.cells["pooled_var"].to_numpy(dtype=float))
        measured = set(model.cells["problem"].astype(str).to_numpy()[has_variance])
        mine = sorted(set(samples["problem"].astype(str)))
        no_variance = [name for name in mine if name not in measured]
        if not has_variance.any():
            # no variance to draw from: every E[q] and P(q <= tau) is undefined (a p_tau of 0 % would be a verdict)
            reason = ("the repeat-noise model's variances come from cells with >= 2 ok repeats, and this run has "
                      "none (one repeat): collect >= 2 repeats")
        elif len(no_variance) == len(mine):
            reason = ("the repeat-noise model's variances come from cells with >= 2 ok repeats, and no problem with "
                      "candidates has one (one repeat there; each problem's variance is its own): collect >= 2 "
                      "repeats")
        if reason is not None:
            no_variance = []
    if reason is None:
        scored = noise_aware_scores(model, tau=env.post.tau, roles=("candidate",), cells=outcome.scored,
                                    n_draws=n_draws, seed=seed, keep_draws=True)
        scores = scored.scores
        row = row_lookup(samples, scores, ["problem", "solution"])
        found = row >= 0
        for column in NOISE_COLUMNS:
            values = scores[column].to_numpy(dtype=float)[np.maximum(row, 0)]
            samples[column] = np.where(found, values, np.nan)
        # a candidate left without any scored test has no draws: its q* is undefined (never a success)
        draws = np.where(found[None, :], scored.draws[:, np.maximum(row, 0)], np.nan)
        keep = np.ones(len(samples), dtype=bool) if ranked is None else np.asarray(ranked, dtype=bool)
        keep = keep & ~samples["problem"].astype(str).isin(no_variance).to_numpy()
        by_data = samples[["problem", "c"]]  # (noise_aware_p_tau's mean over problems sums them in sorted order)
        noise = pd.concat([noise_aware_p_tau(by_data if tau >= 100 else by_data.loc[keep],
                                             draws if tau >= 100 else draws[:, keep], taus=(tau,), k=k)
                           for tau in taus], ignore_index=True)
        table_cols = {"noise_aware": noise["expected"].to_numpy(), "noise_ci_low": noise["noise_ci_low"].to_numpy(),
                      "noise_ci_high": noise["noise_ci_high"].to_numpy()}
    else:
        for column in NOISE_COLUMNS:
            samples[column] = np.nan
    return samples, pd.DataFrame(table_cols, index=range(len(taus))), reason, no_variance


#: Why a problem's noise-aware values are n/a in ``speedaudit score`` (:attr:`CandidateScores.noise_unmeasured`).
NO_VARIANCE_REASON = ("no cell of the problem has two ok repeats, so it has no repeat variance of its own (another "
                      "problem's is never borrowed); left out of the noise-aware p_tau below 100: collect >= 2 "
                      "repeats")


def _noise_cell(row: dict) -> str:
    if not np.isfinite(row.get("noise_aware", np.nan)):
        return ""
    return f"  | noise-aware {row['noise_aware']:5.1f} % [{row['noise_ci_low']:5.1f}, {row['noise_ci_high']:5.1f}]"


def _noise_lines(result: CandidateScores, *, max_rows: int = 20) -> list[str]:
    settings = result.noise_settings
    if result.noise_reason is not None:
        return ["", f"noise-aware values: n/a ({result.noise_reason})"]
    s = result.samples
    lines = ["", f"noise-aware (docs/noise.md): p_tau's posterior mean and its interval from timing noise alone "
                 f"({settings.get('n_draws')} posterior draws, prior_df {settings.get('prior_df')}); per candidate, "
                 f"today's q and g beside E[q] [95 % posterior interval] and P(q <= tau/100), "
                 f"tau = {settings.get('tau'):g}:"]
    table = pd.DataFrame({
        "problem": s["problem"].astype(str), "solution": s["solution"].astype(str),
        "q": s["q"].map(lambda v: "n/a" if not np.isfinite(v) else f"{v:.3f}"),
        "g": s["g"].map(lambda v: "yes" if v else "no"),
        "E[q]": [("n/a" if not np.isfinite(e) else f"{e:.3f}" if not np.isfinite(lo) else f"{e:.3f} [{lo:.3f}, {hi:.3f}]")
                 for e, lo, hi in zip(s["q_expected"], s["q_ci_low"], s["q_ci_high"])],
        "P(q<=tau)": s["p_q_le_tau"].map(lambda v: "n/a" if not np.isfinite(v) else f"{v:.3f}"),
        "P(gate)": s["p_gate"].map(lambda v: "n/a" if not np.isfinite(v) else f"{v:.3f}"),
    }).sort_values(["problem", "solution"], kind="stable")
    lines.append(table.head(max_rows).to_string(index=False))
    if len(table) > max_rows:
        lines.append(f"  ... {len(table) - max_rows} more candidates (all of them with --json)")
    if result.noise_unmeasured:
        names = list(result.noise_unmeasured)
        lines.append(f"noise-aware values n/a for {len(names)} problem(s): " + ", ".join(names[:10])
                     + (f" and {len(names) - 10} more" if len(names) > 10 else "") + f" ({NO_VARIANCE_REASON})")
    return lines


def _noise_dict(result: CandidateScores) -> dict:
    if result.noise_reason is not None:
        return {"level": "n/a", "reason": result.noise_reason}
    cols = ["problem", "solution", "q", "c", "g", *NOISE_COLUMNS]
    return {**result.noise_settings, "model": "docs/noise.md",
            "candidates": result.samples[[c for c in cols if c in result.samples.columns]],
            "unmeasured_problems": {"problems": list(result.noise_unmeasured),
                                    "reason": NO_VARIANCE_REASON if result.noise_unmeasured else None}}
