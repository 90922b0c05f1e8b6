"""Discriminability audit: do the tests separate fast from slow solutions?

Per environment (side by side), from :mod:`stats.discriminability`:

* robust CV per problem (IQR / median of its optimization tests' reference
  medians; ``method="mad"`` for 2 MAD / median), the duration-filterable
  share (robust CV >= 0.3), and the noise-aware robust CV that discounts the
  spread repeat noise alone would produce;
* the strong-vs-weak gap (mean score of the slowest minus the fastest
  quartile of references, quartiles from other repeats) with a CI over
  problems;
* per-test discrimination (reference spread, repeat CV, ICC(3,1), near floor);
* the sandbox floor (median of ``floor`` rows, or ``floor_s``) and per problem
  the share of optimization tests whose reference median is <= 2x the floor;
  with a ``language`` column each language has its own floor and each test is
  checked per language (the median of that language's references against
  that language's floor), so Python tests near a 30 ms start-up are flagged
  even when C++ floors are 1 ms;
  problems where at least ``near_floor_problem_share`` of the tests are that
  close are flagged.

Runs: every figure is computed per run, one (environment, campaign)
(:mod:`audits.corpus.runs`), with that run's pool and floor; ``environment``
and ``campaign`` restrict the audit to the runs they name (default: every
run). Each result and finding names its run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from audits.checks.declared.discriminability import DiscriminabilityOptions, DiscriminabilityThresholds
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run, RunSummary, covered_runs, describe_runs, rule_of
from audits.protocol.context import audit_context
from audits.protocol.findings import (Finding, findings_table, frame_text, interval_text, judge, measured_scores, to_jsonable,
                                      unmeasured_finding)
from audits.protocol.params import DEFAULT, defaults_from
from audits.protocol.per_run import PerRunAudit
from audits.protocol.partition import joined, run_rows
from stats._groups import column_codes
from stats.bootstrap import Interval, bootstrap_ci
from stats.discriminability import (
    StrongWeakGap,
    noise_aware_robust_cv,
    strong_weak_gap,
    test_discrimination,
)
from stats.ranking import reference_pools
from stats.reliability import per_repeat_scores

__all__ = ["DiscriminabilityThresholds", "RunDiscriminability", "DiscriminabilityAudit", "run_discriminability_audit",
           "plan_runs", "partition_tables", "combine_parts"]


@dataclass(frozen=True)
class RunDiscriminability:
    """Discriminability of one run, an (environment, campaign).

    ``problems``: one row per problem (``problem, n_tests, median_s,
    robust_cv, filterable, noise_share, noise_aware_robust_cv,
    filterable_noise_aware, n_near_floor, near_floor_share, near_floor, gap``).
    ``tests``: per-test discrimination (:func:`stats.discriminability.test_discrimination`).
    """

    environment: str
    campaign: str
    floor_s: float
    floor_source: str
    filterable_share: Interval
    filterable_share_noise_aware: Interval
    median_robust_cv: Interval
    median_noise_aware_robust_cv: Interval
    gap: StrongWeakGap
    near_floor_test_share: float
    problems: pd.DataFrame = field(repr=False)
    tests: pd.DataFrame = field(repr=False)
    method: str = "iqr"
    #: floor per language (from the run's floor rows with a ``language`` column); empty when pooled or given
    floors: dict = field(default_factory=dict)
    run_summary: RunSummary | None = field(default=None, repr=False)

    @property
    def run(self) -> Run:
        return Run(self.environment, self.campaign)

    @property
    def flagged_problems(self) -> list[str]:
        return self.problems.loc[self.problems["near_floor"], "problem"].astype(str).tolist()

    def to_dict(self) -> dict:
        problems = {}
        for row in self.problems.itertuples(index=False):
            problems[str(row.problem)] = {
                "n_tests": row.n_tests, "robust_cv": row.robust_cv, "filterable": row.filterable,
                "noise_aware_robust_cv": row.noise_aware_robust_cv,
                "filterable_noise_aware": row.filterable_noise_aware,
                "near_floor_share": row.near_floor_share, "near_floor": row.near_floor, "gap": row.gap}
        return to_jsonable({
            "environment": self.environment,
            "campaign": self.campaign,
            "repeats": None if self.run_summary is None else self.run_summary.repeats,
            "n_problems": len(self.problems),
            "robust_cv_method": self.method,
            "filterable_share": self.filterable_share.estimate,
            "filterable_share_noise_aware": self.filterable_share_noise_aware.estimate,
            "median_robust_cv": self.median_robust_cv.estimate,
            "median_noise_aware_robust_cv": self.median_noise_aware_robust_cv.estimate,
            "strong_weak_gap": self.gap.gap.estimate,
            "strong_weak_gap_independent": self.gap.independent,
            "floor_s": self.floor_s,
            "floor_source": self.floor_source,
            "floors_s": dict(self.floors),
            "near_floor_test_share": self.near_floor_test_share,
            "near_floor_problems": self.flagged_problems,
            "intervals": {
                "filterable_share": self.filterable_share.to_dict(),
                "filterable_share_noise_aware": self.filterable_share_noise_aware.to_dict(),
                "median_robust_cv": self.median_robust_cv.to_dict(),
                "median_noise_aware_robust_cv": self.median_noise_aware_robust_cv.to_dict(),
                "strong_weak_gap": self.gap.gap.to_dict(),
            },
            "problems": problems,
        })

    def headline(self) -> dict:
        return {
            "environment": self.environment, "campaign": self.campaign, "n_problems": len(self.problems),
            "filterable_share": self.filterable_share.estimate,
            "filterable_share_noise_aware": self.filterable_share_noise_aware.estimate,
            "median_robust_cv": self.median_robust_cv.estimate,
            "median_noise_aware_robust_cv": self.median_noise_aware_robust_cv.estimate,
            "strong_weak_gap": self.gap.gap.estimate,
            "strong_weak_gap_low": self.gap.gap.low, "strong_weak_gap_high": self.gap.gap.high,
            "floor_s": self.floor_s, "near_floor_test_share": self.near_floor_test_share,
            "n_near_floor_problems": len(self.flagged_problems),
        }


@dataclass(frozen=True)
class DiscriminabilityAudit(PerRunAudit):
    """Discriminability of every run of a corpus, side by side, with findings (``runs``: Run -> result)."""

    runs: dict[Run, RunDiscriminability]
    findings: tuple[Finding, ...]
    thresholds: DiscriminabilityThresholds = field(default_factory=DiscriminabilityThresholds)
    #: The rule that chose the runs (a key of :data:`audits.corpus.runs.RULES`): ``"every run"`` or ``"named runs"``.
    run_rule: str = "every run"
    audit_name: ClassVar[str] = "discriminability"

    def summary(self) -> str:
        frame = self.to_frame()
        cols = ["environment", "campaign", "n_problems", "filterable_share", "filterable_share_noise_aware", "median_robust_cv",
                "strong_weak_gap", "floor_s", "near_floor_test_share", "n_near_floor_problems"]
        table = frame_text(frame[cols])
        used = describe_runs(r.run_summary for r in self.runs.values() if r.run_summary is not None)
        return f"Discriminability audit\nruns: {used}\n{table}\n\nFindings\n{findings_table(self.findings)}"


#: The fewest measured problems a figure over problems is judged on (the filterable share, its noise-aware
#: inflation, the strong-weak gap): the figures are means over problems with a bootstrap CI over problems, and one
#: problem gives a share of 0 or 100 % and no interval. The same minimum as calibration's
#: (:data:`audits.checks.calibration.MIN_PROBLEMS`, a held-out problem) and compare's win rate (n/a with one
#: problem): below it those findings are n/a with the reason, never a verdict. A count of problems, not of any
#: duration, so the same on nanosecond and ten-second timings.
MIN_PROBLEMS = 2


def _share(flags: np.ndarray, valid: np.ndarray, *, n_boot: int, seed: int) -> Interval:
    values = np.where(valid, flags.astype(float), np.nan)
    return bootstrap_ci(values, n_boot=n_boot, seed=seed)


def _run_floor(floors: pd.DataFrame, run: Run, floor_s: float | None, has_language: bool):
    """(floor, source, per-language floors) of one run: ``floor_s`` when given, else its floor rows' median."""
    if floor_s is not None:
        return float(floor_s), "given", {}
    env, chosen = run.environment, run.campaign
    match = floors.loc[(floors["environment"].astype(str) == env).to_numpy()
                       & (floors["campaign"].astype(str) == str(chosen)).to_numpy()] if len(floors) else floors
    floor, source = (float(match["floor_s"].iloc[0]), "floor rows") if len(match) else (math.nan, "none")
    language_floors: dict[str, float] = {}
    if "language" in match.columns and has_language:
        language_floors = {str(lang): float(f) for lang, f in zip(match["language"], match["floor_s"])
                           if pd.notna(lang)}
    return floor, source, language_floors


def per_problem_tables(run: pd.DataFrame, floors: pd.DataFrame, which: Run, *, floor_s: float | None,
                       t: DiscriminabilityThresholds, method: str, pools: pd.DataFrame | None = None,
                       scores: pd.DataFrame | None = None, shared=None) -> dict:
    """The per-test and per-problem tables of one run's (non-floor) rows: every figure of the audit is a
    function of these (:func:`combine_problem_tables`), so they can be computed partition by partition.

    Returns ``{"tests", "problems", "scores", "language_counts"}``: :func:`stats.discriminability.test_discrimination`
    (near-floor flags by language where there are per-language floors), :func:`noise_aware_robust_cv` with the
    near-floor counts, the references' per-repeat scores against the pool, and the reference rows per language.
    ``shared``: the run's :class:`audits.protocol.context.RunContext` when ``run`` is its rows (its test table
    and ICCs, built once for every audit).
    """
    floor, _, language_floors = _run_floor(floors, which, floor_s, "language" in run.columns)
    if "role" in run.columns:
        run = run.loc[(run["role"] != "floor").to_numpy()]
    if pools is None:
        pools = reference_pools(run)  # built once: reused by the test table and the per-repeat scores
    tests = test_discrimination(run, floor_s=floor, factor=t.near_floor_factor, pools=pools,
                                tests=None if shared is None else shared.test_table,
                                icc=None if shared is None else shared.test_icc)
    counts = {}
    if language_floors:  # every test is checked against the floor of its references' language
        tests = _near_floor_by_language(run, pools, tests, language_floors, t.near_floor_factor)
        refs = run.loc[(run["role"] == "reference").to_numpy(), "language"] if "role" in run.columns \
            else run["language"]
        counts = refs.astype(str).value_counts().to_dict()
    problems = noise_aware_robust_cv(tests, method=method, threshold=t.robust_cv)
    p_str = problems["problem"].astype(str).to_numpy()
    t_str = tests["problem"].astype(str).to_numpy()
    checked = _checked(tests)
    near = pd.DataFrame({"near": tests["near_floor"].to_numpy(dtype=float) * checked, "checked": checked},
                        index=t_str).groupby(level=0, sort=False).sum()  # <= 10^5 tests: no per-problem loop
    n_near = near["near"].reindex(p_str).to_numpy(dtype=float)
    n_checked = near["checked"].reindex(p_str).to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):  # a problem with no checked test has no share
        problems["n_near_floor"] = np.where(n_checked > 0, n_near, np.nan) if np.isfinite(floor) else np.nan
        problems["near_floor_share"] = np.where(n_checked > 0, n_near / n_checked, np.nan) if np.isfinite(floor) \
            else np.nan
    problems["near_floor"] = np.nan_to_num(problems["near_floor_share"].to_numpy(dtype=float), nan=-1.0) \
        >= t.near_floor_problem_share
    if scores is None:
        scores = per_repeat_scores(run, roles=("reference",), pools=pools)
    return {"tests": tests, "problems": problems, "scores": scores, "language_counts": counts}


def _combine(tables: dict, floors: pd.DataFrame, summary: RunSummary, *, floor_s: float | None,
             t: DiscriminabilityThresholds, method: str, n_boot: int, seed: int, has_language: bool):
    floor, source, language_floors = _run_floor(floors, summary.run, floor_s, has_language)
    tests, problems = tables["tests"], _by_problem_content(tables["problems"])
    if language_floors:
        counts = tables["language_counts"]
        if isinstance(counts, list):  # one per partition
            total: dict = {}
            for c in counts:
                for k, v in c.items():
                    total[k] = total.get(k, 0) + v
            counts = total
        floor, source = _main_language_floor(counts, language_floors)
        missing = sorted(str(k) for k in counts if k not in language_floors)
        unchecked = int((~_checked(tests)).sum())
        if missing and unchecked:
            source += (f"; no floor rows for {', '.join(missing)}: {unchecked} test(s) with references only in "
                       f"{'that language' if len(missing) == 1 else 'those languages'} not checked")
    p_str = problems["problem"].astype(str).to_numpy()
    gap = strong_weak_gap(measured_scores(tables["scores"], summary), n_boot=n_boot, seed=seed)
    gap_lookup = pd.Series(gap.per_problem["gap"].to_numpy(dtype=float),
                           index=gap.per_problem["problem"].astype(str).to_numpy()) if len(gap.per_problem) else \
        pd.Series(dtype=float)
    problems["gap"] = gap_lookup.reindex(p_str).to_numpy()
    rcv = problems["robust_cv"].to_numpy(dtype=float)
    valid = np.isfinite(rcv)
    checked = _checked(tests)  # tests whose references' language has floor rows (every test without languages)
    near_share = float(np.mean(tests["near_floor"].to_numpy(dtype=float)[checked])) if np.isfinite(floor) and \
        checked.any() else math.nan
    return RunDiscriminability(
        environment=summary.environment, campaign=summary.campaign, run_summary=summary, floor_s=floor,
        floor_source=source,
        filterable_share=_share(problems["filterable"].to_numpy(), valid, n_boot=n_boot, seed=seed),
        filterable_share_noise_aware=_share(problems["filterable_noise_aware"].to_numpy(), valid, n_boot=n_boot,
                                            seed=seed),
        median_robust_cv=bootstrap_ci(rcv, statistic=np.median, n_boot=n_boot, seed=seed),
        median_noise_aware_robust_cv=bootstrap_ci(problems["noise_aware_robust_cv"].to_numpy(dtype=float),
                                                  statistic=np.median, n_boot=n_boot, seed=seed),
        gap=gap, near_floor_test_share=near_share, problems=problems, tests=tests, method=method,
        floors=language_floors)


def _by_problem_content(problems: pd.DataFrame) -> pd.DataFrame:
    """The per-problem table in the order of the problems' content (the bootstrap's clusters, issue 24): the
    same in memory (one run's table) and on Dask (partitions' tables concatenated in partition order)."""
    if len(problems) == 0:
        return problems
    codes, _ = column_codes(problems["problem"])
    return problems.iloc[np.argsort(codes, kind="stable")].reset_index(drop=True)


def combine_problem_tables(per_run: dict, summaries: dict, floors: pd.DataFrame, *, floor_s: float | None,
                           t: DiscriminabilityThresholds, method: str, n_boot: int, seed: int,
                           has_language: bool = False, run_rule: str = "every run") -> DiscriminabilityAudit:
    """The audit from each run's :func:`per_problem_tables` (``per_run``: Run -> tables, in run order; tables
    of several partitions concatenated in problem order, ``language_counts`` a list of their counts)."""
    results: dict[Run, RunDiscriminability] = {}
    findings: list[Finding] = []
    for run, tables in per_run.items():
        result = _combine(tables, floors, summaries[run], floor_s=floor_s, t=t, method=method, n_boot=n_boot,
                          seed=seed, has_language=has_language)
        results[run] = result
        findings.extend(_findings(result, t))
    return DiscriminabilityAudit(results, tuple(findings), t, run_rule=run_rule)


def _main_language_floor(counts: dict, floors: dict[str, float]) -> tuple[float, str]:
    """The floor of the language with the most reference rows (``counts``: language -> rows; the headline),
    and a source naming every floor."""
    ranked = sorted(floors, key=lambda lang: (-int(counts.get(lang, 0)), lang))
    listing = ", ".join(f"{lang} {floors[lang] * 1000:.3g} ms" for lang in ranked)
    return floors[ranked[0]], f"floor rows per language: {listing}; each test is checked against its own language's"


def _checked(tests: pd.DataFrame) -> np.ndarray:
    """Which tests the near-floor check could judge: those with a reference in a language that has floor rows
    (``near_floor_checked``, per-language floors), else every test."""
    if "near_floor_checked" in tests.columns:
        return tests["near_floor_checked"].to_numpy(dtype=bool)
    return np.ones(len(tests), dtype=bool)


def _near_floor_by_language(run: pd.DataFrame, pools: pd.DataFrame, tests: pd.DataFrame, floors: dict[str, float],
                            factor: float) -> pd.DataFrame:
    """``near_floor`` per test from per-language reference medians: near when, for some language, the median of
    that language's references is <= factor x that language's floor. A test none of whose references is in a
    language with floor rows cannot be judged: ``near_floor_checked`` is False (it is left out of the shares).
    Adds ``near_floor_languages`` (the languages near their floor, comma-separated)."""
    lang = run[["problem", "solution", "language"]].astype(str).drop_duplicates(["problem", "solution"])
    lookup = pd.Series(lang["language"].to_numpy(), index=(lang["problem"] + "\x00" + lang["solution"]).to_numpy())
    key = pools["problem"].astype(str) + "\x00" + pools["solution"].astype(str)
    frame = pd.DataFrame({"problem": pools["problem"].astype(str).to_numpy(), "test": pools["test"].astype(str).to_numpy(),
                          "language": lookup.reindex(key.to_numpy()).to_numpy(),
                          "duration_s": pools["duration_s"].to_numpy(dtype=float)})
    med = frame.groupby(["problem", "test", "language"], sort=False)["duration_s"].median().reset_index()
    limit = med["language"].map(floors).to_numpy(dtype=float) * factor
    has_floor = med.loc[np.isfinite(limit), ["problem", "test"]]
    checked = set(zip(has_floor["problem"], has_floor["test"]))
    med = med.loc[med["duration_s"].to_numpy() <= limit]  # NaN limit (no floor for that language): never near
    near = med.groupby(["problem", "test"], sort=True)["language"].agg(lambda v: ", ".join(sorted(v)))
    near.index = [p + "\x00" + q for p, q in near.index]
    tkey = (tests["problem"].astype(str) + "\x00" + tests["test"].astype(str)).to_numpy()
    found = near.reindex(tkey)
    tests = tests.copy()
    tests["near_floor"] = found.notna().to_numpy()
    tests["near_floor_languages"] = found.fillna("").to_numpy()
    tests["near_floor_checked"] = [(p, q) in checked for p, q in zip(tests["problem"].astype(str),
                                                                      tests["test"].astype(str))]
    return tests


def _fmt(x: float, spec: str = ".3g") -> str:
    return "undefined" if x is None or not np.isfinite(x) else format(x, spec)


def _findings(env: RunDiscriminability, t: DiscriminabilityThresholds) -> list[Finding]:
    where = {"environment": env.environment, "campaign": env.campaign}
    out = []
    fs = env.filterable_share
    level = judge(fs.estimate, warn=t.filterable_share_warn, fail=t.filterable_share_fail, higher_is_worse=False)
    out.append(Finding(level, "filterable_share", fs.estimate,
                       f"warn <= {t.filterable_share_warn}, fail <= {t.filterable_share_fail}",
                       (f"{fs.estimate:.1%} {interval_text(fs.low, fs.high, '.1%')} of {fs.n} problems have "
                        f"robust CV >= {t.robust_cv} across their optimization tests"
                        if np.isfinite(fs.estimate) else "no problem has >= 2 optimization tests with a reference pool")
                       + ("" if level == "pass" else
                          "; few problems' tests span a useful workload range: add larger optimization tests "
                          "(published service: 48.2 % filterable)"), **where))
    na = env.filterable_share_noise_aware.estimate
    inflation = fs.estimate - na if np.isfinite(fs.estimate) and np.isfinite(na) else math.nan
    level = judge(inflation, warn=t.noise_inflation_warn, fail=t.noise_inflation_fail)
    out.append(Finding(level, "noise_inflated_filterable_share", inflation,
                       f"warn >= {t.noise_inflation_warn}, fail >= {t.noise_inflation_fail}",
                       f"filterable share {_fmt(fs.estimate, '.1%')} vs {_fmt(na, '.1%')} after discounting the "
                       "spread repeat noise alone produces"
                       + ("" if level == "pass" else "; part of the apparent workload span is timing noise "
                          "(published: local 81.1 % vs service 48.2 %): filter problems in a quiet environment"),
                       **where))
    gap = env.gap.gap
    level = judge(gap.estimate, warn=t.gap_warn, fail=t.gap_fail, higher_is_worse=False)
    out.append(Finding(level, "strong_weak_gap", gap.estimate, f"warn <= {t.gap_warn}, fail <= {t.gap_fail}",
                       (f"slowest minus fastest quartile of references: {gap.estimate:.1f} "
                        f"{interval_text(gap.low, gap.high, '.1f')} points over {gap.n} problems "
                        "(quartiles from even repeats, scores from odd ones)"
                        if np.isfinite(gap.estimate) else
                        "undefined: needs >= 2 repeats (independent quartiles) and >= 2 references per problem")
                       + ("" if level == "pass" or not np.isfinite(gap.estimate) else
                          "; the tests barely separate fast from slow references: add workload-heavy tests, "
                          "reduce noise"), **where))
    share = env.near_floor_test_share
    flagged = env.flagged_problems
    level = judge(share, warn=t.near_floor_share_warn, fail=t.near_floor_share_fail)
    if not np.isfinite(env.floor_s):
        msg = "no sandbox floor: the corpus has no 'floor' rows for this run; time an empty program or pass floor_s"
    else:
        shown = ", ".join(flagged[:5]) + (" ..." if len(flagged) > 5 else "")
        msg = (f"{share:.1%} of optimization tests have a reference median <= {t.near_floor_factor:g}x the floor "
               f"({env.floor_s * 1000:.3g} ms, {env.floor_source}); {len(flagged)} problem(s) with >= "
               f"{t.near_floor_problem_share:.0%} such tests" + (f": {shown}" if flagged else "")
               + ("" if level == "pass" else "; their ranks are start-up noise: drop those tests or make them larger"))
    out.append(Finding(level, "near_floor_test_share", share,
                       f"warn >= {t.near_floor_share_warn}, fail >= {t.near_floor_share_fail}", msg, **where))
    na = _not_measurable(env)
    out = [Finding.not_available(f.metric, na[f.metric], threshold=f.threshold, **where) if f.metric in na else f
           for f in out]
    out.extend(unmeasured_finding(env.run_summary))
    return t.judged(out)


def _not_measurable(env: RunDiscriminability) -> dict[str, str]:
    """Why each finding cannot be measured on this run (metric -> reason)."""
    out: dict[str, str] = {}
    n_tests = env.problems["n_tests"].to_numpy(dtype=float) if "n_tests" in env.problems.columns else np.zeros(0)
    repeats = env.run_summary.repeats if env.run_summary is not None else None
    unmeasured = env.run_summary.unmeasured if env.run_summary is not None else ()
    if not np.isfinite(env.filterable_share.estimate):
        out["filterable_share"] = out["noise_inflated_filterable_share"] = (
            "no problem of the run can be measured (unmeasured_problems names each with its cause)"
            if unmeasured and len(unmeasured) == env.run_summary.problems else
            "one optimization test per problem: a robust CV across tests needs >= 2 optimization tests"
            if len(n_tests) == 0 or np.nanmax(n_tests, initial=0) < 2 else
            "no problem has >= 2 optimization tests with a reference pool")
    elif repeats is not None and repeats < 2:
        out["noise_inflated_filterable_share"] = "one repeat per cell: the noise-aware robust CV needs repeat noise"
    elif not np.isfinite(env.filterable_share_noise_aware.estimate):
        out["noise_inflated_filterable_share"] = "repeat noise of the medians could not be measured"
    few = ("{n} problem{s} measured: {what} is a mean over problems, judged with its bootstrap CI over problems, "
           f"and needs >= {MIN_PROBLEMS} (as calibration and compare do); time more problems (10 or more)")
    fs = env.filterable_share
    if np.isfinite(fs.estimate) and fs.n < MIN_PROBLEMS:
        text = few.format(n=fs.n, s="" if fs.n == 1 else "s", what="the filterable share")
        out["filterable_share"] = text
        out.setdefault("noise_inflated_filterable_share", text)
    gap = env.gap.gap
    if np.isfinite(gap.estimate) and gap.n < MIN_PROBLEMS:
        out["strong_weak_gap"] = few.format(n=gap.n, s="" if gap.n == 1 else "s", what="the strong-weak gap")
    if not np.isfinite(env.gap.gap.estimate):
        out["strong_weak_gap"] = ("one repeat per cell: the gap takes quartiles and scores from different repeats"
                                  if repeats is not None and repeats < 2 else
                                  "needs >= 2 repeats and >= 2 correct references per problem")
    if not np.isfinite(env.floor_s):
        out["near_floor_test_share"] = "no floor rows for this run (time an empty program, or pass floor_s)"
    elif not np.isfinite(env.near_floor_test_share) and len(env.tests):
        out["near_floor_test_share"] = (f"no optimization test has a reference in a language with floor rows "
                                        f"({env.floor_source}): time an empty program in each language, or pass "
                                        "floor_s")
    return out


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(DiscriminabilityOptions)
def run_discriminability_audit(
    corpus: pd.DataFrame,
    *,
    floor_s: float | None = DEFAULT,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    runs=None,
    thresholds: DiscriminabilityThresholds | None = None,
    method: str = DEFAULT,
    n_boot: int = DEFAULT,
    seed: int = DEFAULT,
) -> DiscriminabilityAudit:
    """Run the discriminability audit on every run of ``corpus`` (each (environment, campaign) on its own).

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.discriminability.DiscriminabilityOptions` (``<Options default>`` in the
    signature).

    Parameters
    ----------
    corpus : DataFrame
        A normalised timing corpus.
    floor_s : float, optional
        The sandbox floor in seconds; default None: median of the run's ``floor``
        rows (NaN, with a warning finding, when there are none).
    environment, campaign : str, optional
        Restrict the audit to the runs of this environment and / or campaign (default None: every run).
    runs : sequence of Run or (environment, campaign) pairs, optional
        Exactly these runs.
    thresholds : DiscriminabilityThresholds, optional
    method : {"iqr", "mad"}
        Robust CV variant (default: the Options field, ``"iqr"``).
    n_boot, seed : int
        Bootstrap over problems (default: the Options fields, 1000 and 0).

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> audit = run_discriminability_audit(synthesize(n_problems=6, seed=1).corpus, n_boot=50)
    >>> [str(run) for run in audit.runs], len(audit.result("quiet").problems)
    (['quiet · c0'], 6)
    """
    thresholds = DiscriminabilityThresholds.coerce(thresholds)
    ctx = audit_context(corpus)  # one shared context (audits.protocol.context): rows, pool, scores per run built once
    plan = plan_runs(ctx, environment=environment, campaign=campaign, runs=runs)
    return combine_parts([partition_tables(ctx, plan, floor_s=floor_s, thresholds=thresholds, method=method)], plan,
                         floor_s=floor_s, thresholds=thresholds, method=method, n_boot=n_boot, seed=seed)


# ----------------------------------------------------------------------------------------------
# the partition steps (audits.protocol.partition): the same in memory (one partition) and on Dask
# ----------------------------------------------------------------------------------------------

def plan_runs(ctx, *, environment: str | None = None, campaign: str | None = None, runs=None) -> dict:
    """The plan over a plan context (:mod:`audits.protocol.partition`): the runs covered (in run order), the floors
    of every run and whether the corpus has a ``language`` column (per-language floors exactly then)."""
    return {"runs": covered_runs(ctx.runs, environment=environment, campaign=campaign, explicit=runs),
            "floors": ctx.floors, "has_language": "language" in ctx.columns}


def partition_tables(part, plan: dict, *, floor_s: float | None, thresholds: DiscriminabilityThresholds,
                     method: str) -> dict:
    """``{Run: per_problem_tables}`` of every planned run's rows in one partition (an AuditContext; in memory the
    whole corpus, whose run contexts' pools, scores, test table and ICCs every audit shares)."""
    out = {}
    for summary in plan["runs"]:
        run_ctx = run_rows(part, summary)
        if run_ctx is None:
            continue
        out[summary.run] = per_problem_tables(run_ctx.rows, plan["floors"], summary.run, floor_s=floor_s,
                                              t=thresholds, method=method, pools=run_ctx.pools,
                                              scores=run_ctx.reference_repeat_scores(), shared=run_ctx)
    return out


def combine_parts(parts: list, plan: dict, *, floor_s: float | None, thresholds: DiscriminabilityThresholds,
                  method: str, n_boot: int, seed: int) -> DiscriminabilityAudit:
    """The audit from every partition's :func:`partition_tables` (each partition's tables taken out of ``parts``
    as they are joined): per run, the tables concatenated (:func:`audits.protocol.partition.joined`), the
    language counts listed, then :func:`combine_problem_tables`. The options come validated by
    :class:`~audits.checks.declared.discriminability.DiscriminabilityOptions` (the registered audit's, or
    :func:`run_discriminability_audit`'s keywords): not checked again here."""
    per_run = {}
    for summary in plan["runs"]:
        mine = [p.pop(summary.run) for p in parts if summary.run in p]
        per_run[summary.run] = {name: joined([m[name] for m in mine], ordered=False)
                                if isinstance(mine[0][name], pd.DataFrame) else [m[name] for m in mine]
                                for name in mine[0]}
    return combine_problem_tables(per_run, {s.run: s for s in plan["runs"]}, plan["floors"], floor_s=floor_s,
                                  t=thresholds, method=method, n_boot=n_boot, seed=seed,
                                  has_language=plan["has_language"], run_rule=rule_of(plan["runs"]))
