"""Reliability audit: is this sandbox's timing repeatable?

Per environment (all side by side) it measures, with :mod:`stats.reliability`:

* repeat CV and absolute sd (ms) of every (campaign, problem, test, solution)
  cell of correct references on optimization tests (median over cells, CI
  over problems);
* rank drift of per-repeat scores against the fixed pool (mean range, mean
  within-problem sd, worst range; points = 100*q);
* ICC of log durations, solutions x repeats within each optimization test
  (median over tests of ICC1, absolute agreement ICC(A,1)=ICC2 / ICC(A,k),
  consistency ICC(C,1)=ICC3 / ICC(C,k));
* variance components of log duration (problem, test, solution,
  test:solution, campaign, repeat) and, from them, the repeats needed for a
  target reliability of the per-problem score; the repeats needed for a target
  relative CI width of one (solution, test) mean;
* the share of "faster" reference pairs that are significantly faster;
* contention evidence (:func:`audits.checks.clocks.contention`): the median wall/CPU
  ratio of single-threaded ok executions and the 1-minute load average recorded
  at each execution's start, so that a "quiet" run collected on a busy machine
  says so (``n/a`` without ``cpu_s``).

and turns them into findings against :class:`ReliabilityThresholds`.

Runs: every figure is computed per run, one (environment, campaign)
(:mod:`audits.corpus.runs`): each campaign of an environment is audited on its
own, with its own pool and its own repeat count. ``environment`` and
``campaign`` restrict the audit to the runs they name (default: every run of
the corpus, listed in run order). Each result and finding names its run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from audits.checks.clocks import Contention
from audits.checks.declared.reliability import ReliabilityOptions, ReliabilityThresholds
from audits.checks.median_selection import contention_part, run_contention
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run, RunSummary, covered_runs, describe_runs, rule_of
from audits.protocol.context import audit_context
from audits.protocol.context import reference_rows as _reference_rows
from audits.protocol.findings import (Finding, findings_table, frame_text, interval_text, to_jsonable, measured_scores,
                                      unmeasured_finding)
from audits.protocol.params import DEFAULT, defaults_from
from audits.protocol.per_run import PerRunAudit
from audits.protocol.partition import joined, run_rows
from stats._groups import group_codes, label_mask
from stats.bootstrap import Interval, cluster_bootstrap_ci
from stats.reliability import (
    ICC_TYPES,
    PairSignificance,
    RankDrift,
    VarianceComponents,
    benchmark_checks,
    d2_constant,
    icc_rounding_range,
    log_duration_icc,
    pairwise_significance,
    per_repeat_scores,
    process_level,
    rank_drift,
    repeat_cv,
    repeats_for_precision,
    repeats_for_reliability,
    summarize_repeat_cv,
    variance_from_partials,
    variance_partials,
)

__all__ = ["ReliabilityThresholds", "RunReliability", "ReliabilityAudit", "run_reliability_audit",
           "combine_problem_tables", "plan_runs", "partition_tables", "combine_parts"]


@dataclass(frozen=True)
class RunReliability:
    """Reliability of one run, an (environment, campaign) (see the module docstring).

    Headline numbers: ``median_repeat_cv``, ``median_abs_sd_ms`` (Intervals),
    ``drift`` (:class:`stats.reliability.RankDrift`), ``icc`` (median over
    tests of each ICC type, and ``icc_agreement`` the headline ICC(A,1) with
    a CI over problems), ``variance`` (:class:`VarianceComponents`),
    ``repeats_needed`` / ``repeats_for_precision``, ``significance``
    (:class:`PairSignificance`). Tables: ``cells`` (repeat CV per cell) and
    ``test_icc`` (ICCs per optimization test).
    """

    environment: str
    campaign: str
    n_problems: int
    n_repeats: int
    median_repeat_cv: Interval
    median_abs_sd_ms: Interval
    drift: RankDrift
    icc: dict
    icc_agreement: Interval
    variance: VarianceComponents
    repeats_needed: float
    repeats_for_precision: float
    significance: PairSignificance
    cells: pd.DataFrame = field(repr=False)
    test_icc: pd.DataFrame = field(repr=False)
    target_reliability: float = 0.9
    target_precision: float = 0.05
    run_summary: RunSummary | None = field(default=None, repr=False)
    median_repeat_cv_corrected: Interval | None = None
    contention: Contention | None = None
    #: pyperf's per-benchmark checks at the audit's thresholds (:func:`benchmark_profile`); set by the
    #: audit that holds this run (:class:`ReliabilityAudit`), so the run's JSON and the audit's agree
    benchmark_checks: dict | None = field(default=None, repr=False)
    #: Cells whose ok repeats tie, read against the clock's resolution (:func:`tied_cells`); None: not computed
    ties: dict | None = field(default=None, repr=False)

    @property
    def run(self) -> Run:
        return Run(self.environment, self.campaign)

    def to_dict(self) -> dict:
        return to_jsonable({
            "environment": self.environment,
            "campaign": self.campaign,
            "n_problems": self.n_problems,
            "n_repeats": self.n_repeats,
            "median_repeat_cv": self.median_repeat_cv.estimate,
            "median_repeat_cv_corrected": (None if self.median_repeat_cv_corrected is None
                                           else self.median_repeat_cv_corrected.estimate),
            "median_abs_sd_ms": self.median_abs_sd_ms.estimate,
            "mean_rank_range": self.drift.mean_range.estimate,
            "mean_rank_sd": self.drift.mean_sd.estimate,
            "p95_rank_range": self.drift.p95_range_5,
            "worst_rank_range": self.drift.worst_range,
            "worst_rank_range_at": self.drift.to_dict()["worst"],
            "icc": self.icc_agreement.estimate,
            "icc_types": self.icc,
            "repeats_needed": _finite(self.repeats_needed),  # null beside its n/a finding, never inf
            "repeats_needed_detail": {
                "reliability": _finite(self.repeats_needed), "target_reliability": self.target_reliability,
                "reliability_rule": "Spearman-Brown on variance components: "
                                    "n = ceil(rho s2_repeat / ((1-rho) T (s2_solution + s2_test:solution/T)))",
                "precision": self.repeats_for_precision, "target_relative_ci_width": self.target_precision,
                "precision_rule": "n = ceil(4 z^2 cv^2 / w^2) with cv = median repeat CV (nested repeats: median CV of "
                                  "process medians across processes, n counts processes)",
                "have": self.n_repeats},
            "significant_share": self.significance.share.estimate,
            "significance": self.significance.to_dict(),
            "contention": None if self.contention is None else self.contention.to_dict(),
            "variance_components": self.variance.to_dict(),
            "intervals": {
                "median_repeat_cv": self.median_repeat_cv.to_dict(),
                "median_abs_sd_ms": self.median_abs_sd_ms.to_dict(),
                "mean_rank_range": self.drift.mean_range.to_dict(),
                "mean_rank_sd": self.drift.mean_sd.to_dict(),
                "icc": self.icc_agreement.to_dict(),
                "significant_share": self.significance.share.to_dict(),
            },
            "benchmark_checks": self.benchmark_checks,
        })

    def headline(self) -> dict:
        """One flat row of headline metrics (see :meth:`ReliabilityAudit.to_frame`)."""
        vc = self.variance
        return {
            "environment": self.environment, "campaign": self.campaign, "n_problems": self.n_problems,
            "n_repeats": self.n_repeats,
            "median_repeat_cv": self.median_repeat_cv.estimate,
            "median_repeat_cv_low": self.median_repeat_cv.low, "median_repeat_cv_high": self.median_repeat_cv.high,
            "median_abs_sd_ms": self.median_abs_sd_ms.estimate,
            "mean_rank_range": self.drift.mean_range.estimate,
            "mean_rank_sd": self.drift.mean_sd.estimate,
            "mean_rank_sd_low": self.drift.mean_sd.low, "mean_rank_sd_high": self.drift.mean_sd.high,
            "p95_rank_range": self.drift.p95_range_5,
            "worst_rank_range": self.drift.worst_range,
            "icc": self.icc_agreement.estimate,
            "significant_share": self.significance.share.estimate,
            "repeat_share": vc.share("repeat"),
            "repeat_share_median": vc.median_share("repeat"),
            "between_process_share": (math.nan if vc.between_process is None else vc.between_process.estimate),
            "repeats_needed": self.repeats_needed,
            "repeats_for_precision": self.repeats_for_precision,
            "median_wall_cpu": math.nan if self.contention is None else self.contention.median_wall_cpu,
            "median_load_1m": math.nan if self.contention is None else self.contention.median_load_1m,
        }


@dataclass(frozen=True)
class ReliabilityAudit(PerRunAudit):
    """Reliability of every run of a corpus, side by side, with findings.

    ``runs`` maps each :class:`~audits.corpus.runs.Run` to its :class:`RunReliability`, in run order.
    """

    runs: dict[Run, RunReliability]
    findings: tuple[Finding, ...]
    thresholds: ReliabilityThresholds = field(default_factory=ReliabilityThresholds)
    #: The rule that chose the runs (a key of :data:`audits.corpus.runs.RULES`): ``"every run"`` or ``"named runs"``.
    run_rule: str = "every run"
    audit_name: ClassVar[str] = "reliability"

    def __post_init__(self):
        # every way of building the audit (in memory, on Dask, the engine) meets the thresholds here
        object.__setattr__(self, "runs", {
            run: res if res.benchmark_checks is not None
            else replace(res, benchmark_checks=benchmark_profile(res, self.thresholds))
            for run, res in self.runs.items()})

    def summary(self) -> str:
        frame = self.to_frame()
        cols = ["environment", "campaign", "n_problems", "n_repeats", "median_repeat_cv", "median_abs_sd_ms",
                "mean_rank_range", "mean_rank_sd", "p95_rank_range", "worst_rank_range", "icc", "significant_share",
                "repeats_needed"]
        # NaN and inf (e.g. repeats_needed without between-solution variance) print as n/a, as their findings say
        table = frame_text(frame[cols])
        used = describe_runs(r.run_summary for r in self.runs.values() if r.run_summary is not None)
        return f"Reliability audit\nruns: {used}\n{table}\n\nFindings\n{findings_table(self.findings)}"


def _finite(value):
    """``value``, or None when it is NaN or infinite (not measured: JSON null, never ``inf``)."""
    return value if value is not None and np.isfinite(value) else None


def _run_rows(corpus: pd.DataFrame, summary: RunSummary) -> pd.DataFrame:
    """Non-floor rows of one run."""
    mask = summary.run.mask(corpus)
    if "role" in corpus.columns:
        mask &= ~label_mask(corpus["role"], "floor")
    return corpus.loc[mask]


def per_problem_tables(rows: pd.DataFrame, *, scores: pd.DataFrame | None = None, shared=None) -> dict:
    """The per-problem parts of one run's reliability figures, from its (non-floor) rows of whole problems.

    Every figure of the audit is a function of these (:func:`combine_problem_tables`), so they can be
    computed partition by partition (:mod:`audits.engine.partitioned`) and concatenated in problem order.

    Returns ``{"cells", "scores", "test_icc", "variance", "process_tally"}``: the repeat CV of every
    (campaign, problem, test, solution) cell of correct references on optimization tests
    (:func:`stats.reliability.repeat_cv`), the per-repeat scores against the run's pool
    (:func:`stats.reliability.per_repeat_scores`; ``scores`` when the run context has them), the ICCs of every
    optimization test, the per-problem sufficient statistics of the variance components
    (:func:`stats.reliability.variance_partials`) and, with nested repeats, the histogram of processes per
    (problem, test, solution) (else None). ``shared``: the run's :class:`audits.protocol.context.RunContext`
    when ``rows`` are its rows (its reference rows, cells, ICCs and scores, built once for every audit).
    """
    if shared is not None:
        refs, cells, test_icc, scores = (shared.reference_rows, shared.repeat_cells, shared.test_icc,
                                         shared.repeat_scores)
    else:
        refs = _reference_rows(rows)
        cells = repeat_cv(refs, by=("campaign", "problem", "test", "solution"))
        test_icc = log_duration_icc(refs)
    if scores is None:  # the run context's shared per-repeat scores, else computed here
        scores = per_repeat_scores(rows)
    variance = variance_partials(refs)
    tally = None
    if "run" in refs.columns and len(refs):  # nested repeats: the independent repeat is the process (``run``)
        procs = refs.groupby(["problem", "test", "solution"], observed=True)["run"].nunique().to_numpy()
        tally = np.bincount(procs)
    process_cells = (repeat_cv(process_level(refs), by=("campaign", "problem", "test", "solution"))
                     if "run" in refs.columns else None)  # nested repeats: the repeat CV of process medians
    return {"cells": cells, "scores": scores, "test_icc": test_icc, "variance": variance, "process_tally": tally,
            "process_cells": process_cells}


def tied_cells(cells: pd.DataFrame) -> dict:
    """What the cells whose ok repeats are all equal say about the median repeat CV.

    Such a cell reads a CV of 0; on a clock whose resolution ``q`` is coarse next to the noise, that is the
    clock, not the program: its values only lie within one step of ``q``, so its CV is below about
    ``q / mean``. ``q`` is read from the cells themselves, the smallest positive step between two repeats of a
    cell (``step_s`` of :func:`stats.reliability.repeat_cv`; every step of a clock of resolution q is a multiple
    of it). When no cell shows a step (every cell tied: a clock too coarse to show any, or a deterministic
    measure such as instruction counts, which the repeats do not tell apart), ``q`` is the smallest positive
    difference between two cells' values (on a clock of resolution q a multiple of it too): a deterministic
    measure over many cells shows small differences, a bound that changes no verdict; a coarse clock shows its
    tick. Returns ``{"n_tied", "n_cells", "step_s", "step_from", "upper"}``: ``step_from`` says where ``q``
    was read (``"repeats"`` or ``"values"``), ``upper`` is the median corrected repeat CV with each tied cell at
    ``q / mean`` instead of 0 (the median that is judged lies between the two); NaN when no cell ties or no
    step is seen at all (every value of the run equal: ``step_from`` is ``"none"``). Relative to the durations,
    so the same at any unit of time.
    """
    need = ("n_ok", "sd_s", "mean_s", "cv_corrected", "step_s")
    if not len(cells) or any(c not in cells.columns for c in need):
        return {"n_tied": 0, "n_cells": 0, "step_s": math.nan, "step_from": "none", "upper": math.nan}
    cv = cells["cv_corrected"].to_numpy(dtype=float)
    mean = cells["mean_s"].to_numpy(dtype=float)
    measured = np.isfinite(cv)
    tied = measured & (cells["n_ok"].to_numpy() >= 2) & (cells["sd_s"].to_numpy(dtype=float) == 0) & (mean > 0)
    steps = cells["step_s"].to_numpy(dtype=float)
    q = float(np.min(steps[np.isfinite(steps)])) if np.isfinite(steps).any() else math.nan
    source = "repeats" if math.isfinite(q) else "none"
    if not math.isfinite(q) and tied.any():  # every cell tied: the differences between the cells' values
        values = np.unique(cells["min_s" if "min_s" in cells.columns else "mean_s"].to_numpy(dtype=float)[tied])
        gaps = np.diff(values)
        gaps = gaps[gaps > 1e-9 * values[1:]]  # the same value read twice (a mean's rounding) is no step
        if len(gaps):
            q, source = float(gaps.min()), "values"
    upper = math.nan
    if tied.any() and math.isfinite(q):
        bound = cv.copy()
        bound[tied] = q / mean[tied]
        upper = float(np.median(bound[measured]))
    return {"n_tied": int(tied.sum()), "n_cells": int(measured.sum()), "step_s": q, "step_from": source,
            "upper": upper}


def clock_step_text(ties: dict) -> str:
    """How the clock's step was read (:func:`tied_cells`), for a reason: ``"on a clock whose smallest step between
    two repeats is 0.02 s"``, or, every cell tied, from the differences between the cells' values."""
    if ties.get("step_from") == "values":
        return (f"on a clock whose smallest step between two values is {ties['step_s']:.3g} s (every cell's "
                f"repeats read one value: a clock that coarse, or a deterministic measure, which the corpus does "
                f"not tell apart)")
    return f"on a clock whose smallest step between two repeats is {ties['step_s']:.3g} s"


def combine_problem_tables(tables: dict, summary: RunSummary, *, n_boot: int, seed: int,
                           target_reliability: float, target_precision: float, max_pairs: int,
                           contention: Contention | None = None) -> RunReliability:
    """One run's :class:`RunReliability` from its :func:`per_problem_tables` (the in-memory audit's step too).

    ``tables`` holds the tables of all the run's problems, in problem order (one call's, or the partitions'
    concatenated and sorted by problem); ``process_tally`` may be a list of histograms (one per partition).
    ``contention``: the run's :class:`audits.checks.clocks.Contention` (from all its rows, :func:`audits.checks.median_selection.run_contention`).
    """
    cells, scores, test_icc = tables["cells"], measured_scores(tables["scores"], summary), tables["test_icc"]
    cv_summary = summarize_repeat_cv(cells, n_boot=n_boot, seed=seed)
    drift = rank_drift(scores, n_boot=n_boot, seed=seed)
    icc_types = {name: float(np.nanmedian(test_icc[name])) if np.isfinite(test_icc[name]).any() else math.nan
                 for name in ICC_TYPES}
    icc_problem = group_codes(test_icc, ["problem"])[0] if len(test_icc) else np.zeros(0, dtype=np.int64)
    icc_agreement = cluster_bootstrap_ci(test_icc["ICC2"].to_numpy(dtype=float) if len(test_icc) else np.zeros(0),
                                         icc_problem, statistic="median", n_boot=n_boot, seed=seed)
    variance = variance_from_partials(tables["variance"], n_boot=n_boot, seed=seed)
    needed = repeats_for_reliability(variance, target=target_reliability)
    precision_cv = cv_summary["median_repeat_cv"].estimate
    if variance.nested and tables.get("process_cells") is not None:  # nested repeats: the repeated unit is the
        # process, so the CV of process medians
        precision_cv = summarize_repeat_cv(tables["process_cells"], n_boot=0)["median_repeat_cv"].estimate
    precision = repeats_for_precision(precision_cv, width=target_precision)
    ref_scores = scores.loc[(scores["role"] == "reference").to_numpy()] if "role" in scores.columns else scores
    significance = pairwise_significance(ref_scores, max_pairs=max_pairs, n_boot=n_boot, seed=seed)
    n_rep = int(np.bincount(cells["n_runs"].to_numpy()).argmax()) if len(cells) else 0
    tallies = tables["process_tally"]
    tallies = [t for t in (tallies if isinstance(tallies, list) else [tallies]) if t is not None]
    if variance.nested and tallies:  # nested repeats: the independent repeat is the process (``run``)
        size = max(len(t) for t in tallies)
        n_rep = int(np.sum([np.pad(t, (0, size - len(t))) for t in tallies], axis=0).argmax())
    measured = cells.loc[(cells["n_ok"] > 0).to_numpy(), "problem"]  # problems with at least one ok timing
    n_problems = int(measured.nunique()) if len(measured) else 0
    return RunReliability(
        environment=summary.environment, campaign=summary.campaign, n_problems=n_problems, n_repeats=n_rep,
        median_repeat_cv=cv_summary["median_repeat_cv"], median_abs_sd_ms=cv_summary["median_abs_sd_ms"],
        drift=drift, icc=icc_types, icc_agreement=icc_agreement, variance=variance, repeats_needed=needed,
        repeats_for_precision=precision, significance=significance, cells=cells, test_icc=test_icc,
        target_reliability=target_reliability, target_precision=target_precision, run_summary=summary,
        median_repeat_cv_corrected=cv_summary.get("median_repeat_cv_corrected"),
        contention=contention, ties=tied_cells(cells))


def _fmt(x: float, spec: str = ".3g") -> str:
    return "undefined" if x is None or not np.isfinite(x) else format(x, spec)


def _smallest_share(n_repeats: int, alpha: float) -> float:
    """The smallest share of pairs that Benjamini-Hochberg at ``alpha`` can call significant (other than none) when
    every p is an exact one-sided Mann-Whitney p of R repeats against R: its smallest p is 1 / C(2R, R), and k of m
    pairs at that p pass only when m p / k <= alpha, so any share below p / alpha reads 0."""
    return (1 / math.comb(2 * n_repeats, n_repeats)) / alpha


def _too_few_repeats(sig, t: ReliabilityThresholds, unit: str) -> str:
    """Why significant_share is n/a at too few repeats, and how many would measure it."""
    r, floor = sig.n_repeats, 1 / math.comb(2 * sig.n_repeats, sig.n_repeats)
    enough = next(n for n in range(r, 64) if _smallest_share(n, sig.alpha) <= t.significant_share_fail)
    if floor > sig.alpha:
        return (f"{r} {unit} per cell: the exact one-sided Mann-Whitney test of {r} against {r} cannot reach "
                f"p <= {sig.alpha:g} (its smallest p is 1/{math.comb(2 * r, r)}), so no pair can be significant and "
                f"the share is 0 whatever the noise; collect {enough} {unit} or more")
    what = (f"so after the Benjamini-Hochberg correction a share of pairs is significant only when it is at least "
            f"{min(_smallest_share(r, sig.alpha), 1):.0%}: every smaller share reads 0, and the fail limit "
            f"({t.significant_share_fail:g}) lies below that, so the finding would judge the {unit} count, not the "
            f"noise (a quiet campaign reads 0 unless every one of its pairs is separated in every repeat)")
    return (f"{r} {unit} per cell: the exact one-sided Mann-Whitney test of {r} against {r} cannot go below "
            f"p = 1/{math.comb(2 * r, r)} = {floor:.3g} (it counts at {sig.alpha:g}), "
            f"{what}; collect {enough} {unit} or more")


#: What a run whose every test reads one value cannot measure (:func:`_one_value_reason`): the noise, the drift,
#: the order of the solutions and, under the benchmark profile, pyperf's shares (every benchmark "stable").
_CLOCK_BLIND = ("median_repeat_cv", "mean_rank_sd", "mean_rank_range", "p95_rank_range", "icc", "significant_share",
                "repeats_needed", "unstable_share", "outlier_share", "too_few_processes_share")


def _one_value_tests(cells: pd.DataFrame) -> tuple[int, int, int, float]:
    """``(n_one, n_tests, n_shared, value)``: the optimization tests whose ok durations of correct references all
    read one value (every solution, every repeat), the tests with an ok duration, the tests of one value shared by
    two or more solutions, and that value when it is one for the whole run (else NaN)."""
    if not len(cells) or "min_s" not in cells.columns:
        return 0, 0, 0, math.nan
    seen = cells.loc[(cells["n_ok"] > 0).to_numpy()]
    if not len(seen):
        return 0, 0, 0, math.nan
    codes, n = group_codes(seen, [c for c in ("campaign", "problem", "test") if c in seen.columns])
    low, high = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(low, codes, seen["min_s"].to_numpy(dtype=float))
    np.maximum.at(high, codes, seen["max_s"].to_numpy(dtype=float))
    one = low == high
    shared = one & (np.bincount(codes, minlength=n) >= 2)  # a cell per solution
    value = float(low[0]) if one.all() and np.all(low == low[0]) else math.nan
    return int(one.sum()), n, int(shared.sum()), value


def _one_value_reason(env: RunReliability) -> str | None:
    """Why nothing of the repeats or the order can be read when every optimization test reads one value (else
    None). No step between two values is seen within any test, so the clock's step (:func:`tied_cells`) bounds
    nothing: a repeat CV of 0, a rank drift of 0 and a tie of every pair say only that the clock did not tell
    the repeats or the programs apart. Relative to nothing but equality, so the same at any unit of time. Tests of
    one solution each whose values differ between tests are left to :func:`tied_cells` (a deterministic measure
    of one build per test: the step between the tests' values bounds the CV)."""
    n_one, n_tests, n_shared, value = _one_value_tests(env.cells)
    if not n_tests or n_one < n_tests or not (n_shared or math.isfinite(value)):
        return None
    what = (f"every ok duration of a correct reference in the run reads {value:.3g} s" if math.isfinite(value) else
            f"each of the run's {n_tests:,} optimization tests reads one duration for all its correct references "
            f"and repeats")
    return (f"{what}: the clock does not tell the repeats or the programs apart (or the programs cannot be told "
            f"apart), so no step of the clock within a test bounds the noise, and a spread, a drift or an order of "
            f"0 would be the clock's; time with a finer clock or more iterations per repeat")


def _icc_clock_reason(env: RunReliability, t: ReliabilityThresholds) -> str | None:
    """Why the median ICC(A,1) is n/a on the run's clock (else None): with the clock's rounding variance taken out
    of or put into each test's repeat noise (:func:`stats.reliability.icc_rounding_range`) the median lies
    between two values that the limits judge otherwise. A fine clock's step leaves both at the ICC."""
    ties = env.ties or {}
    step, icc_value = ties.get("step_s", math.nan), env.icc_agreement.estimate
    if not (math.isfinite(step) and np.isfinite(icc_value) and len(env.test_icc)):
        return None
    bounds = icc_rounding_range(env.test_icc, env.cells, step=step)
    measured = env.test_icc["ICC2"].to_numpy(dtype=float)
    keep = np.isfinite(measured)
    low = float(np.median(np.where(np.isfinite(bounds["ICC2_low"]), bounds["ICC2_low"], measured)[keep]))
    high = float(np.median(np.where(np.isfinite(bounds["ICC2_high"]), bounds["ICC2_high"], measured)[keep]))
    if t.judge("icc", low) == t.judge("icc", icc_value) == t.judge("icc", high):
        return None
    return (f"the clock's step is not small next to the spread between a test's solutions ({clock_step_text(ties)}"
            f"): its rounding variance, (step / duration)^2 / 12 on the log scale, may be in the repeat noise or "
            f"hidden by it, and with it taken out or put in the median ICC(A,1) lies between {low:.3f} and "
            f"{high:.3f}, which the limits judge differently; time with a finer clock or more iterations per repeat")


def _share_clock_reason(env: RunReliability, t: ReliabilityThresholds) -> str | None:
    """Why significant_share is n/a on the run's clock (else None): some cells' repeats tie (:func:`tied_cells`)
    and some pairs of references tie in their median score, and with every tied pair significant or none the
    share is judged otherwise. A finer clock could order a tied pair; which way it would test, the corpus does
    not say. Counts of pairs only, so the same at any unit of time."""
    sig, ties = env.significance, env.ties or {}
    if not (ties.get("n_tied") and sig.n_tied and sig.n_pairs and np.isfinite(sig.share.estimate)):
        return None
    total = sig.n_pairs + sig.n_tied
    significant = sig.share.estimate * sig.n_pairs
    low, high = significant / total, (significant + sig.n_tied) / total
    if t.judge("significant_share", low) == t.judge("significant_share", high):
        return None
    return (f"{sig.n_tied:,} of {total:,} pairs of references tie in their median score and {ties['n_tied']:,} of "
            f"{ties['n_cells']:,} cells read identical repeats {clock_step_text(ties)}: a finer clock could order "
            f"the tied pairs, and with all of them significant or none the share lies between {low:.1%} and "
            f"{high:.1%}, which the limits judge differently; time with a finer clock or more iterations per repeat")


def _clock_order_reasons(env: RunReliability, t: ReliabilityThresholds, *, skip: dict) -> dict[str, str]:
    """The coarse-clock rules of the ICC and the significant share (metric -> reason), for the metrics not in
    ``skip`` (already n/a for another reason)."""
    rules = {"icc": _icc_clock_reason, "significant_share": _share_clock_reason}
    reasons = {metric: rule(env, t) for metric, rule in rules.items() if metric not in skip}
    return {metric: reason for metric, reason in reasons.items() if reason}


def _not_measurable(env: RunReliability, t: ReliabilityThresholds) -> dict[str, str]:
    """Why each finding cannot be measured on this run (metric -> reason); absent metrics are measurable."""
    out: dict[str, str] = {}
    if env.n_repeats < 2:
        values = env.run_summary.values_per_process if env.run_summary is not None else None
        reason = (f"{env.n_repeats} repeat per cell: repeat noise, rank drift, ICC and significance need >= 2 "
                  "repeats; collect a campaign with --repeats 3 or more" if not env.variance.nested else
                  f"{env.n_repeats} process per cell" + (f" ({values} values in it)" if values else "")
                  + ": the values of one process share its state (memory layout, frequency, hash seed), so repeat "
                  "noise, rank drift, ICC and significance need >= 2 processes (run values); collect 3 or more "
                  "processes per cell (pyperf --processes)")
        return dict.fromkeys(("median_repeat_cv", "mean_rank_sd", "mean_rank_range",
                              "p95_rank_range", "icc", "significant_share", "repeats_needed"), reason)
    if not np.isfinite(env.median_repeat_cv.estimate):
        out["median_repeat_cv"] = "no cell has two ok repeats of a correct reference"
    else:
        cv = env.median_repeat_cv_corrected or env.median_repeat_cv
        ties = env.ties or {}
        upper = ties.get("upper", math.nan)
        if np.isfinite(upper) and t.judge("repeat_cv", upper) != t.judge("repeat_cv", cv.estimate):
            out["median_repeat_cv"] = (
                f"{ties['n_tied']:,} of {ties['n_cells']:,} cells read identical repeats (CV 0) "
                f"{clock_step_text(ties)}: their noise is below the clock's "
                f"resolution, so the median repeat CV lies between {cv.estimate:.1%} and {upper:.1%} (each tied "
                f"cell at step / mean), which the limits judge differently; time with a finer clock or more "
                f"iterations per repeat")
            # rank drift has no such bound: a solution whose repeats tie scores the same in each, and one at the
            # edge of a step jumps over the pool's values tied with it, so the drift read is the clock's
            clock = (f"rank drift is read from timings whose repeats tie: {ties['n_tied']:,} of "
                     f"{ties['n_cells']:,} cells read identical repeats {clock_step_text(ties)}, so a score's "
                     f"movement between repeats below one step is not seen and a step's edge makes one; time "
                     f"with a finer clock or more iterations per repeat")
            out.update(dict.fromkeys(("mean_rank_sd", "mean_rank_range", "p95_rank_range"), clock))
    if not np.isfinite(env.drift.mean_sd.estimate):
        out["mean_rank_sd"] = out["mean_rank_range"] = out["p95_rank_range"] = "no solution was scored twice"
    elif not np.isfinite(env.drift.p95_range_5):  # judged NaN would read "warn"
        out["p95_rank_range"] = "no solution was scored in two repeats"
    if not np.isfinite(env.icc_agreement.estimate):
        out["icc"] = ("no optimization test has >= 2 correct references in one pool (one language, when a "
                      "problem's references mix languages) with >= 2 ok repeats and non-constant durations")
    sig = env.significance
    if not np.isfinite(sig.share.estimate) and sig.n_tied and not sig.n_tested:
        out["significant_share"] = (f"every one of the {sig.n_tied:,} pairs of references of a problem ties in its "
                                    f"median score over {sig.n_repeats} {'processes' if env.variance.nested else 'repeats'}: no solution is faster than another, "
                                    f"so no ordering can be tested (equally fast programs, or a clock too coarse "
                                    f"to separate them)")
    elif not np.isfinite(sig.share.estimate):
        out["significant_share"] = "no pair could be tested (needs >= 2 references per problem with >= 2 repeats)"
    elif sig.n_repeats >= 2 and _smallest_share(sig.n_repeats, sig.alpha) > t.significant_share_fail:
        out["significant_share"] = _too_few_repeats(sig, t, "processes" if env.variance.nested else "repeats")
    if not np.isfinite(env.repeats_needed):
        out["repeats_needed"] = ("variance components undefined (no between-solution variance measured: no "
                                 "problem has >= 2 correct references in one pool, one language when its "
                                 "references mix languages)")
    one_value = _one_value_reason(env)
    if one_value:  # the ICC's and the share's own reasons, when they have one, already say what ties
        return {**dict.fromkeys(_CLOCK_BLIND, one_value),
                **{m: out[m] for m in ("icc", "significant_share") if m in out}}
    out.update(_clock_order_reasons(env, t, skip=out))
    return out


def _judged(t: ReliabilityThresholds, limit: str, metric: str, value: float, text: str, advice: str,
            where: dict) -> Finding:
    """The finding ``metric`` judged against the limit ``limit``; ``advice`` is added unless it passes."""
    level = t.judge(limit, value)
    return Finding(level, metric, value, t.text(limit), text + ("" if level == "pass" else advice), **where)


def _drift_findings(env: RunReliability, t: ReliabilityThresholds, where: dict) -> list[Finding]:
    """mean_rank_sd, mean_rank_range and p95_rank_range: rank drift, each at any repeat count."""
    drift = env.drift
    unit = "processes" if env.variance.nested else "repeats"
    rank_sd = drift.mean_sd_corrected or drift.mean_sd
    rng5 = (D2_5 * drift.mean_range_normalised.estimate if drift.mean_range_normalised is not None
            else drift.mean_range.estimate)
    return [
        _judged(t, "rank_sd", "mean_rank_sd", rank_sd.estimate,
                f"a solution's problem score (100*q) moves by sd {_fmt(rank_sd.estimate)} points between repeats "
                f"{interval_text(rank_sd.low, rank_sd.high)} (sd / c4(R), unbiased at any repeat count; raw "
                f"{_fmt(drift.mean_sd.estimate)})",
                "; rewards thresholded on q will flip between repeats: reduce noise or use a coarser (binary) speed "
                "gate", where),
        _judged(t, "rank_range", "mean_rank_range", rng5,
                f"mean peak-to-peak range of 100*q across {env.n_repeats} {unit} {_fmt(drift.mean_range.estimate)} "
                f"points; as the range of 5 repeats, d2(5) x mean(range / d2(R)) = {_fmt(rng5)} (busy training "
                "worker, published: 41.2)", "", where),
        # the tail, not the maximum: the worst range of many units grows with their number and the repeat count
        _judged(t, "p95_range", "p95_rank_range", drift.p95_range_5,
                f"95 % of (problem, solution) scores move less than {_fmt(drift.p95_range_5)} points as the range of "
                f"5 repeats (d2(5) x range / d2(R)); the worst moves {_fmt(drift.worst_range)} points over "
                f"{env.n_repeats} {unit}, at {drift.worst}",
                ": inspect the problems with the widest ranges (near the floor? timeouts?)", where),
    ]


def _findings(env: RunReliability, t: ReliabilityThresholds) -> list[Finding]:
    where = {"environment": env.environment, "campaign": env.campaign}
    out = []
    cv = env.median_repeat_cv_corrected or env.median_repeat_cv
    raw = env.median_repeat_cv
    level = t.judge("repeat_cv", cv.estimate)
    summary = env.run_summary
    nested = summary is not None and summary.processes is not None and summary.processes > 1
    # each cell's CV pools all its values and is corrected for that count: say the count it uses
    pooled = (f"{summary.repeats} values per cell ({summary.repeats_text})" if nested else
              f"{env.n_repeats} repeats")
    msg = (f"median repeat CV of a (test, solution) timing is {cv.estimate:.1%} "
           f"{interval_text(cv.low, cv.high, '.1%')} over {cv.n} problems, corrected for {pooled} "
           f"(raw median of sample CVs {_fmt(raw.estimate, '.1%')})" if np.isfinite(cv.estimate) else "")
    msg += ("" if level == "pass" else
            "; timings vary too much between repeats: pin CPUs, stop background load, or use an "
            "isolated execution service (published service: 8.2 %)")
    out.append(Finding(level, "median_repeat_cv", cv.estimate, t.text("repeat_cv"), msg, **where))
    # median_abs_sd_ms is reported (the run's table, JSON and report), not judged: see ReliabilityThresholds
    out.extend(_drift_findings(env, t, where))
    icc = env.icc_agreement
    level = t.judge("icc", icc.estimate)
    out.append(Finding(level, "icc", icc.estimate, t.text("icc"),
                       f"median ICC(A,1) of log duration within a test (solutions x repeats) "
                       f"{_fmt(icc.estimate)} {interval_text(icc.low, icc.high)}"
                       + ("" if level == "pass" else
                          "; one repeat does not order the solutions of a test as another does"), **where))
    sig = env.significance
    level = t.judge("significant_share", sig.share.estimate)
    unit = "processes" if env.variance.nested else "repeats"
    out.append(Finding(level, "significant_share", sig.share.estimate, t.text("significant_share"),
                       f"{_fmt(sig.share.estimate, '.1%')} of {sig.n_tested} faster reference pairs are significantly "
                       f"faster (one-sided Mann-Whitney over {sig.n_repeats} {unit}, BH q <= {sig.alpha})"
                       + ("" if level == "pass" else "; most speed orderings are not distinguishable from noise: "
                          "collect more repeats or reduce noise"), **where))
    needed, have = env.repeats_needed, env.n_repeats
    level = ("fail" if not np.isfinite(needed) else "pass" if needed <= have
             else "warn" if needed <= t.repeats_fail_factor * have else "fail")
    out.append(Finding(level, "repeats_needed", needed,
                       f"<= {have} {unit} pass, <= {t.repeats_fail_factor:g}x warn",
                       f"{_fmt(needed)} {unit} per (test, solution) give reliability {env.target_reliability} of "
                       f"the per-problem score (Spearman-Brown on variance components; corpus has {have}); "
                       f"{_fmt(env.repeats_for_precision)} {unit} for a {env.target_precision:.0%} relative CI of one "
                       "timing's mean" + ("" if level == "pass" else ": collect more repeats or reduce noise"), **where))
    c = env.contention
    if c is not None and c.level == "n/a":
        out.append(Finding.not_available("contention", c.message.removeprefix("contention cannot be measured: "),
                                         threshold=t.text("wall_cpu"), **where))
    elif c is not None:  # judged at t's wall/CPU limits when the run was audited (_contention)
        out.append(Finding(c.level, "contention", c.median_wall_cpu, t.text("wall_cpu"), c.message, **where))
    if t.profile == "benchmark":
        out.extend(_benchmark_findings(env, t, where))
    na = _not_measurable(env, t)
    out = [Finding.not_available(f.metric, na[f.metric], threshold=f.threshold, **where) if f.metric in na else f
           for f in out]
    out.extend(unmeasured_finding(env.run_summary))
    return t.judged(out)


def _benchmark_table(env: RunReliability, t: ReliabilityThresholds) -> pd.DataFrame:
    """pyperf's checks on every cell of the run with at least two ok values (labelled by :func:`_labels` only
    where a benchmark is named: a label per cell was 10^7 Python strings per run at 10^8 executions)."""
    checked = benchmark_checks(env.cells, cv_limit=t.benchmark_cv, spread_limit=t.benchmark_spread,
                               width=t.benchmark_width)
    read = [c for c in ("problem", "test", "solution", "campaign") if c in checked.columns] + list(_CHECKED)
    return checked.loc[np.isfinite(checked["cv"].to_numpy(dtype=float)), read].reset_index(drop=True)


#: What the benchmark profile and its findings read of :func:`stats.reliability.benchmark_checks` (besides the
#: names): the cells' other columns are not copied into its table.
_CHECKED = ("cv", "min_dev", "max_dev", "processes_needed", "n_processes", "unstable", "outlier", "too_few_processes")


def _label_columns(table: pd.DataFrame) -> list[str]:
    """The columns of a benchmark's name: the problem, then test, solution and campaign where the run has several."""
    return ["problem"] + [c for c in ("test", "solution", "campaign") if c in table.columns and table[c].nunique() > 1]


def _labels(rows: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Each row's benchmark name, ``problem · test · solution`` (``columns``: :func:`_label_columns` of the table)."""
    label = rows[columns[0]].astype(str)
    for column in columns[1:]:
        label = label + " · " + rows[column].astype(str)
    return label.to_numpy()


def _top(table: pd.DataFrame, flag: str, key: str, k: int, columns: list[str]) -> list[tuple[str, float]]:
    """The ``k`` flagged rows of largest ``|key|``, ties by name: ``[(name, value)]``. Only rows that can be among
    them are named (those at or above the k-th largest ``|key|``, and every row without a value when fewer than
    ``k`` have one), so the order is that of sorting every flagged row by (-|key|, name). ``columns``: the
    table's :func:`_label_columns`."""
    rows = table.loc[table[flag].to_numpy(dtype=bool)]
    order_key = -np.abs(rows[key].to_numpy(dtype=float))
    finite = np.isfinite(order_key)
    if finite.sum() >= k:  # a row without a value sorts after every valued one
        kth = np.partition(order_key[finite], k - 1)[k - 1]
        keep = finite & (order_key <= kth)
        rows, order_key = rows.loc[keep], order_key[keep]
    names = _labels(rows, columns)
    order = np.lexsort((names, order_key))[:k]
    return [(str(names[i]), float(v)) for i, v in zip(order, rows[key].to_numpy(dtype=float)[order])]


def _worst(table: pd.DataFrame, flag: str, key: str, fmt: str, columns: list[str], k: int = 3) -> str:
    return ", ".join(f"{b} {format(v, fmt)}" for b, v in _top(table, flag, key, k, columns))


def benchmark_profile(env: RunReliability, t: ReliabilityThresholds) -> dict:
    """pyperf's per-benchmark checks of one run, summarised (the JSON's ``runs[].benchmark_checks``).

    Per benchmark (cell) the rules of :func:`stats.reliability.benchmark_checks` at ``t``'s
    ``benchmark_cv`` / ``benchmark_spread`` / ``benchmark_width``; here the shares of benchmarks flagged,
    the worst ones named (largest first, ties by name), the widest min / max spread and the processes
    pyperf would ask for.
    """
    table = _benchmark_table(env, t)
    n, columns = len(table), _label_columns(table)
    stable = ~table["unstable"].to_numpy(dtype=bool)

    def share(flag: str, among=None) -> float:
        values = table[flag].to_numpy(dtype=bool)
        if among is not None:
            values = values[among]
        return float(values.mean()) if len(values) else math.nan

    def top(flag: str, key: str) -> list:
        return [{"benchmark": b, key: v} for b, v in _top(table, flag, key, 5, columns)]

    min_dev, max_dev = (table[c].to_numpy(dtype=float) for c in ("min_dev", "max_dev"))
    return {
        "n_benchmarks": n,
        "rules": {"unstable": f"cv >= {t.benchmark_cv:g}", "outlier": f"|min or max - mean| >= {t.benchmark_spread:g}"
                  " x mean", "too_few_processes": f"ceil(4 z^2 s^2 / {t.benchmark_width:g}^2) > processes (s: CV of "
                  "process means; stable benchmarks only)", "source": "pyperf check (pyperf._cli.format_checks)"},
        "median_cv": float(np.median(table["cv"])) if n else math.nan,
        "unstable_share": share("unstable"), "unstable": top("unstable", "cv"),
        "outlier_share": share("outlier"), "outliers": top("outlier", "max_dev"),
        "min_spread": float(np.min(min_dev)) if n else math.nan,
        "max_spread": float(np.max(max_dev)) if n else math.nan,
        "too_few_processes_share": share("too_few_processes", stable),
        "too_few_processes": top("too_few_processes", "processes_needed"),
        "median_processes": float(np.median(table["n_processes"])) if n else math.nan,
    }


def _tie_bound_cells(cells: pd.DataFrame, step: float) -> pd.DataFrame | None:
    """``cells`` with every cell whose ok repeats tie at the edge of one clock step (``step``, :func:`tied_cells`):
    CV and process CV ``step / mean``, minimum and maximum ``step`` from the mean; None when no cell ties or the
    step is unknown."""
    if not len(cells) or not math.isfinite(step) or "step_s" not in cells.columns:
        return None
    mean = cells["mean_s"].to_numpy(dtype=float)
    tied = ((cells["n_ok"].to_numpy() >= 2) & (cells["sd_s"].to_numpy(dtype=float) == 0) & (mean > 0)
            & np.isfinite(cells["cv"].to_numpy(dtype=float)))
    if not tied.any():
        return None
    out = cells.copy()
    bound = np.where(tied, step / np.where(mean > 0, mean, 1.0), np.nan)
    for column in ("cv", "process_cv"):
        out[column] = np.where(tied, bound, out[column].to_numpy(dtype=float))
    out["min_s"] = np.where(tied, mean - step, out["min_s"].to_numpy(dtype=float))
    out["max_s"] = np.where(tied, mean + step, out["max_s"].to_numpy(dtype=float))
    return out


def _benchmark_findings(env: RunReliability, t: ReliabilityThresholds, where: dict) -> list[Finding]:
    """pyperf's per-benchmark checks as findings (``benchmark`` profile), beside the median CV; a share that
    the cells whose repeats tie on a coarse clock decide (judged otherwise with them at one clock step,
    :func:`_tie_bound_cells`) is n/a, as the median repeat CV is."""
    out = _pyperf_findings(env, t, where)
    ties = env.ties or {}
    bound_cells = _tie_bound_cells(env.cells, ties.get("step_s", math.nan))
    if bound_cells is None:
        return out
    bound = benchmark_profile(replace(env, cells=bound_cells, benchmark_checks=None), t)
    judged = []
    for f in out:
        other = bound.get(f.metric, math.nan)
        if f.level != "n/a" and f.metric in bound and (not np.isfinite(other) or t.judge(f.metric, other) != f.level):
            at_step = (f"{other:.1%}" if np.isfinite(other) else
                       "not measured (no stable benchmark left)")
            f = Finding.not_available(
                f.metric, f"{ties['n_tied']:,} of {ties['n_cells']:,} cells read identical repeats "
                f"{clock_step_text(ties)}: the share is {f.value:.1%} with "
                f"them at no spread and {at_step} with them one step apart, which the limits judge "
                f"differently; time with a finer clock or more iterations per value", threshold=f.threshold,
                **where)
        judged.append(f)
    return judged


def _pyperf_findings(env: RunReliability, t: ReliabilityThresholds, where: dict) -> list[Finding]:
    """pyperf's per-benchmark checks as findings, as the cells read them."""
    table = _benchmark_table(env, t)
    if not len(table):
        reason = "no benchmark has two ok values: pyperf's checks need a standard deviation"
        return [Finding.not_available(m, reason, threshold=t.text(m), **where) for m in t.benchmark_metrics]
    p = benchmark_profile(env, t)
    n, names = p["n_benchmarks"], _label_columns(table)
    out = []
    n_bad = int(table["unstable"].sum())
    level = t.judge("unstable_share", p["unstable_share"])
    msg = (f"{n_bad} of {n} benchmarks have a CV >= {t.benchmark_cv:.0%} of the mean (pyperf check: unstable)"
           + (f", worst {_worst(table, 'unstable', 'cv', '.1%', names)}" if n_bad else "")
           + f"; median CV {p['median_cv']:.1%}")
    msg += "" if level == "pass" else ("; rerun those with more processes, values or loops (pyperf system tune "
                                       "reduces the system jitter)")
    out.append(Finding(level, "unstable_share", p["unstable_share"], t.text("unstable_share"), msg, **where))
    n_out = int(table["outlier"].sum())
    level = t.judge("outlier_share", p["outlier_share"])
    worst_low = _labels(table.iloc[[int(np.argmin(table["min_dev"]))]], names)[0]
    worst_high = _labels(table.iloc[[int(np.argmax(table["max_dev"]))]], names)[0]
    msg = (f"{n_out} of {n} benchmarks have a minimum or maximum >= {t.benchmark_spread:.0%} away from the mean "
           f"(pyperf check); widest spread: minimum {p['min_spread']:+.1%} ({worst_low}), maximum "
           f"{p['max_spread']:+.1%} ({worst_high})")
    msg += "" if level == "pass" else "; look for outliers with pyperf dump / hist and rerun those benchmarks"
    out.append(Finding(level, "outlier_share", p["outlier_share"], t.text("outlier_share"), msg, **where))
    stable = table.loc[~table["unstable"].to_numpy(dtype=bool)]
    n_few = int(stable["too_few_processes"].sum())
    if not len(stable):
        out.append(Finding.not_available("too_few_processes_share", "every benchmark is unstable (CV >= "
                                         f"{t.benchmark_cv:.0%}); pyperf checks processes only for stable ones",
                                         threshold=t.text("too_few_processes_share"), **where))
        return out
    level = t.judge("too_few_processes_share", p["too_few_processes_share"])
    msg = (f"{n_few} of {len(stable)} stable benchmarks need more processes than the {p['median_processes']:g} "
           f"(median) measured for a 95 % CI of {t.benchmark_width:.0%} of the mean (pyperf's required_nprocesses)"
           + (f", most: {_worst(stable, 'too_few_processes', 'processes_needed', '.0f', names)}" if n_few else ""))
    msg += "" if level == "pass" else "; run those benchmarks with more processes (pyperf --processes)"
    out.append(Finding(level, "too_few_processes_share", p["too_few_processes_share"],
                       t.text("too_few_processes_share"), msg, **where))
    return out


#: d2(5) = 2.326, the expected range of 5 normal draws in sd units: the rank-range limits were set at 5 repeats.
D2_5 = float(d2_constant(5))


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(ReliabilityOptions)
def run_reliability_audit(
    corpus: pd.DataFrame,
    *,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    runs=None,
    thresholds: ReliabilityThresholds | None = None,
    n_boot: int = DEFAULT,
    seed: int = DEFAULT,
    target_reliability: float = DEFAULT,
    target_precision: float = DEFAULT,
    max_pairs: int = DEFAULT,
) -> ReliabilityAudit:
    """Run the reliability audit on every run of ``corpus`` (each (environment, campaign) on its own).

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.reliability.ReliabilityOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame or AuditContext
        A normalised timing corpus (:func:`audits.corpus.io.normalize`), or the
        :class:`audits.protocol.context.AuditContext` every audit of it shares.
    environment, campaign : str, optional
        Restrict the audit to the runs of this environment and / or campaign (default None: every run).
    runs : sequence of Run or (environment, campaign) pairs, optional
        Exactly these runs (instead of ``environment`` / ``campaign``).
    thresholds : ReliabilityThresholds, optional
    n_boot, seed : int
        Bootstrap resamples over problems and their seed (default: the Options fields, 1000 and 0).
    target_reliability : float in (0, 1)
        Default: the Options field, 0.9.
    target_precision : float > 0
        Target full relative width of a 95 % CI of one timing's mean (default: the Options field, 0.05).
    max_pairs : int
        Cap on the solution pairs tested for significance (seeded sample; default: the Options field, 200000).

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> audit = run_reliability_audit(synthesize(n_problems=6, seed=1).corpus, n_boot=50)
    >>> [str(run) for run in audit.runs], audit.to_frame()["median_repeat_cv"].round(2).tolist()
    (['quiet · c0'], [0.05])
    """
    ctx = audit_context(corpus)  # one shared context (audits.protocol.context): rows and scores per run built once
    plan = plan_runs(ctx, environment=environment, campaign=campaign, runs=runs)
    return combine_parts([partition_tables(ctx, plan)], plan, ctx, thresholds=thresholds, n_boot=n_boot, seed=seed,
                         target_reliability=target_reliability, target_precision=target_precision,
                         max_pairs=max_pairs)


# ----------------------------------------------------------------------------------------------
# the partition steps (audits.protocol.partition): the same in memory (one partition) and on Dask
# ----------------------------------------------------------------------------------------------

#: The tables of :func:`per_problem_tables` that are concatenated across partitions.
_TABLES = ("cells", "scores", "test_icc", "variance")
#: The contention medians' exact selection gathers the keys of a bin of at most this many
#: (:mod:`audits.checks.median_selection`); a plan context may set its own (``selection_limit``).
SELECTION_LIMIT = 1 << 20


def plan_runs(ctx, *, environment: str | None = None, campaign: str | None = None, runs=None) -> tuple:
    """The runs covered (rule ``"every run"``, in run order) over a plan context (:mod:`audits.protocol.partition`)."""
    return covered_runs(ctx.runs, environment=environment, campaign=campaign, explicit=runs)


def partition_tables(part, plan: tuple) -> dict:
    """``{Run: per_problem_tables + its contention part}`` of every planned run's rows in one partition (an
    AuditContext; in memory the whole corpus, whose run contexts' reference rows, cells, ICCs and scores every
    audit shares)."""
    out = {}
    for summary in plan:
        run_ctx = run_rows(part, summary)
        if run_ctx is not None:
            out[summary.run] = {**per_problem_tables(run_ctx.rows, shared=run_ctx),
                                "contention": contention_part(run_ctx.rows)}
    return out


def _joined_tables(parts: list[dict]) -> dict:
    """One run's tables of every partition, joined in problem order (:func:`audits.protocol.partition.joined`);
    each partition's table is taken out of ``parts`` as it is joined, so that the client holds one copy of it."""
    tables = {name: joined([p.pop(name) for p in parts]) for name in _TABLES}
    tables["process_tally"] = [p["process_tally"] for p in parts]
    nested = [p["process_cells"] for p in parts if p.get("process_cells") is not None]
    tables["process_cells"] = joined(nested) if nested else None
    return tables


def combine_parts(parts: list, plan: tuple, ctx, *, thresholds: ReliabilityThresholds, n_boot: int, seed: int,
                  target_reliability: float, target_precision: float, max_pairs: int) -> ReliabilityAudit:
    """The audit from every partition's :func:`partition_tables` (taken out of ``parts`` run by run as they are
    joined): each run's contention (exact medians over ``ctx``'s partitions, :mod:`audits.checks.median_selection`),
    then :func:`combine_problem_tables` and the findings. The options come validated by
    :class:`~audits.checks.declared.reliability.ReliabilityOptions` (the registered audit's, or
    :func:`run_reliability_audit`'s keywords): not checked again here."""
    thresholds = ReliabilityThresholds.coerce(thresholds)
    summaries = {s.run: s for s in plan}
    contention = run_contention(ctx, summaries, {s.run: [p[s.run].pop("contention") for p in parts if s.run in p]
                                                 for s in plan}, thresholds,
                                limit=getattr(ctx, "selection_limit", SELECTION_LIMIT))
    results: dict[Run, RunReliability] = {}
    findings: list[Finding] = []
    for summary in plan:
        result = combine_problem_tables(_joined_tables([p.pop(summary.run) for p in parts if summary.run in p]),
                                        summary, n_boot=n_boot, seed=seed, target_reliability=target_reliability,
                                        target_precision=target_precision, max_pairs=max_pairs,
                                        contention=contention[summary.run])
        results[summary.run] = result
        findings.extend(_findings(result, thresholds))
    return ReliabilityAudit(results, tuple(findings), thresholds, run_rule=rule_of(plan))
