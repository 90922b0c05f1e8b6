"""The choice of clock: the same audit figures from wall time, CPU time or any other measure, side by side.

A corpus may carry several measures of one execution: ``duration_s`` (wall time), ``cpu_s``,
``instructions``. On a shared machine the wall time carries the other sessions' load
(``duration_s / cpu_s`` well above 1); CPU time does not, but it also hides what a program
waits for. :func:`run_clocks_audit` computes, per run (environment, campaign) and per measure:

* ``median_repeat_cv``: median repeat CV of correct references' optimization cells
  (:func:`stats.reliability.repeat_cv`);
* ``mean_rank_sd``: mean within-solution sd of 100*q across repeats (rank drift,
  :func:`stats.reliability.rank_drift`);
* ``icc``: median over optimization tests of ICC(A,1) of log durations, solutions x repeats
  (:func:`stats.reliability.grouped_icc`);
* ``strong_weak_gap``: mean over problems of the score gap between the slowest and the
  fastest quartile of references (:func:`stats.discriminability.strong_weak_gap`);
* ``filterable_share``: share of problems whose robust CV across test medians is >= 0.3
  (a duration filter can separate them, :func:`stats.discriminability.robust_cv`);

and, on the *quietest* run, the within-problem rank agreement of each measure with the first
(Kendall's tau-b of the solutions' scores q, :func:`scipy.stats.kendalltau`, per problem; the
mean over problems): does CPU time order solutions as wall time does?

Issue 25's three questions of a clock, per run and measure, in the same table:

* **stability**: ``mean_rank_sd``, the score's repeat sd (points of 100*q) under that clock;
* **faithfulness** (``faithfulness``, with a ``reference`` run named, e.g. a long quiet CPU-time campaign):
  the mean over problems of Kendall's tau-b between the solutions' q under the measure and their q under
  ``reference_measure`` on the reference run (its own pool). NaN without a reference, for a problem set the
  two runs do not share, or where the reference run lacks the measure;
* **cost**: ``executions`` (the run's rows) and ``seconds`` (the sum of their wall times, ``duration_s``,
  floor rows included): what collecting the run took. A counted (valgrind) campaign's wall time is the
  counted run's, so its cost is what the instruction clock costs.

Like the reliability and discriminability audits, the figures leave out the problems a run does not measure
(no timed correct reference, :mod:`stats.coverage`), and the rank sd is NaN with one repeat per cell.

The quietest run: of the runs with a correct reference to rank (a run of floor rows only, or one whose every
reference execution timed out, has none), the
lowest median ``load_1m`` when every such run has it, else the lowest median wall/CPU ratio, else the
lowest median wall-time repeat CV; ties go to the run named first in sorted order. :func:`use_measure` puts a measure in place of ``duration_s`` (the
``--measure`` option of every audit).

Example
-------
>>> from audits.corpus.synthetic import synthesize
>>> corpus = synthesize(n_problems=3, n_tests=3, n_solutions=5, n_repeats=3, seed=0).corpus
>>> corpus["cpu_s"] = corpus["duration_s"] * 0.9
>>> audit = run_clocks_audit(corpus, n_boot=50)
>>> sorted(set(audit.table["measure"]))
['cpu_s', 'duration_s']
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from audits.checks.declared.clocks import (
    CONTENTION_FAIL,
    CONTENTION_MIN_CPU_S,
    CONTENTION_WARN,
    ClocksOptions,
    ClocksThresholds,
)
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run, RunError, one_run, runs_of
from audits.corpus.schema import RUN_COLUMNS
from audits.errors import UserError
from audits.protocol.context import reference_rows
from audits.protocol.findings import Finding, findings_table, frame_text, to_jsonable, where_label
from audits.protocol.params import DEFAULT, defaults_from
from stats._groups import first_rows, group_codes
from stats.coverage import unmeasured_problems
from stats.discriminability import robust_cv, strong_weak_gap, test_table
from stats.ranking import percentile_table, problem_scores
from stats.reliability import (
    correct_reference_mask,
    log_duration_icc,
    per_repeat_scores,
    rank_drift,
    repeat_cv,
    summarize_repeat_cv,
)

__all__ = ["ClocksAudit", "run_clocks_audit", "reference_run", "use_measure", "wall_cpu_ratio", "Contention", "contention",
           "CONTENTION_WARN", "CONTENTION_FAIL", "CONTENTION_MIN_CPU_S", "wall_cpu_values", "load_values",
           "judge_contention"]

#: Measures compared by default when the corpus has them (besides ``duration_s``).
CANDIDATE_MEASURES = ("duration_s", "cpu_s", "instructions")


def _ok(frame: pd.DataFrame) -> np.ndarray:
    return (frame["status"] == "ok").to_numpy(copy=True)


def use_measure(corpus: pd.DataFrame, measure: str, *, source: str = "the corpus") -> pd.DataFrame:
    """The corpus with ``measure`` in place of ``duration_s`` (every audit then reads it).

    ``ok`` rows without a positive finite value of the measure are left out (an ok execution
    needs a duration); other rows keep theirs (a timeout's or crash's value is not ranked).
    ``attrs["measure"]`` names the measure and ``attrs["measure_note"]`` says what was done.

    Raises
    ------
    UserError
        The column is missing, not numeric, or has no positive value on any ok row.

    Examples
    --------
    >>> frame = pd.DataFrame({"status": ["ok", "ok", "timeout"], "duration_s": [1.0, 2.0, 3.0],
    ...                       "cpu_s": [0.5, float("nan"), 2.9]})
    >>> use_measure(frame, "cpu_s")["duration_s"].tolist()
    [0.5, 2.9]
    """
    if measure == "duration_s":
        return corpus
    numeric = [c for c in corpus.columns if c != "duration_s" and pd.api.types.is_numeric_dtype(corpus[c])
               and not pd.api.types.is_bool_dtype(corpus[c])]
    if measure not in corpus.columns:
        raise UserError(f"{source}: --measure {measure}: no such column (numeric columns: "
                        f"{', '.join(map(str, numeric)) or 'none'})\n  -> name one of them, or add the column")
    if measure not in numeric:
        raise UserError(f"{source}: --measure {measure}: the column is not numeric (dtype {corpus[measure].dtype})"
                        f"\n  -> name a numeric duration column such as cpu_s")
    values = corpus[measure].to_numpy(dtype=float)
    ok = _ok(corpus)
    usable = np.isfinite(values) & (values > 0)
    drop = ok & ~usable
    if not (ok & usable).any():
        raise UserError(f"{source}: --measure {measure}: no ok execution has a positive {measure}\n"
                        f"  -> collect it (speedaudit collect records cpu_s) or choose another measure")
    out = corpus.loc[~drop].copy()
    out["duration_s"] = values[~drop]
    out.attrs = dict(corpus.attrs)
    out.attrs["measure"] = measure
    note = f"every duration is {measure} (--measure {measure}), not the wall time"
    if drop.any():
        note += f"; {int(drop.sum()):,} ok rows without a positive {measure} left out"
    out.attrs["measure_note"] = note
    return out


def available_measures(corpus: pd.DataFrame) -> list[str]:
    """``duration_s`` and those of :data:`CANDIDATE_MEASURES` with a positive value on some ok row."""
    ok = _ok(corpus)
    out = []
    for name in CANDIDATE_MEASURES:
        if name in corpus.columns and pd.api.types.is_numeric_dtype(corpus[name]):
            v = corpus[name].to_numpy(dtype=float)
            if (ok & np.isfinite(v) & (v > 0)).any():
                out.append(name)
    return out


def wall_cpu_ratio(rows: pd.DataFrame, *, min_cpu_s: float = CONTENTION_MIN_CPU_S) -> tuple[float, int, int]:
    """Median wall/CPU ratio of single-threaded ok executions with at least ``min_cpu_s`` of CPU time.

    Returns ``(median ratio, executions used, executions left out as multi-threaded)``.
    Floor runs are excluded; so are executions shorter than ``min_cpu_s`` (their wall time is mostly
    start-up cost, :data:`CONTENTION_MIN_CPU_S`). A ratio below 1 means the execution used more than
    one core, so it says nothing about waiting for a core: those are left out (counted). NaN with no
    usable execution.

    >>> rows = pd.DataFrame({"status": "ok", "duration_s": [2.0, 3.0, 1.0, 0.05], "cpu_s": [1.0, 1.0, 2.0, 0.01]})
    >>> wall_cpu_ratio(rows)
    (2.5, 2, 1)
    """
    single, n_multi = wall_cpu_values(rows, min_cpu_s=min_cpu_s)
    if not len(single):
        return math.nan, 0, n_multi
    return float(np.median(single)), len(single), n_multi


def wall_cpu_values(rows: pd.DataFrame, *, min_cpu_s: float = CONTENTION_MIN_CPU_S) -> tuple[np.ndarray, int]:
    """The ratios :func:`wall_cpu_ratio` takes the median of, and the number left out as multi-threaded
    (the partition steps select their median exactly, :mod:`audits.checks.median_selection`)."""
    if "cpu_s" not in rows.columns:
        return np.zeros(0), 0
    keep = _ok(rows)
    if "role" in rows.columns:
        keep &= (rows["role"] != "floor").to_numpy()
    wall = rows["duration_s"].to_numpy(dtype=float)
    cpu = rows["cpu_s"].to_numpy(dtype=float)
    keep &= np.isfinite(wall) & np.isfinite(cpu) & (cpu >= min_cpu_s) & (cpu > 0) & (wall > 0)
    ratio = wall[keep] / cpu[keep]
    single = ratio >= 1.0
    return ratio[single], int((~single).sum())


def load_values(rows: pd.DataFrame) -> np.ndarray:
    """The finite ``load_1m`` values of ``rows`` (empty without the column)."""
    load = rows["load_1m"].to_numpy(dtype=float) if "load_1m" in rows.columns else np.zeros(0)
    return load[np.isfinite(load)]


@dataclass(frozen=True)
class Contention:
    """Was a run collected on a contended machine? (the reliability audit's contention finding)

    ``level`` is ``pass``, ``warn``, ``fail`` or ``n/a`` (no ``cpu_s``: the ratio cannot be
    measured); ``median_wall_cpu`` with the executions it was read from (``n_single``) and those
    left out as multi-threaded (``n_multi``); ``median_load_1m`` / ``max_load_1m`` (NaN without
    a ``load_1m`` column); ``message`` says what it means and what to do.
    """

    level: str
    median_wall_cpu: float
    n_single: int
    n_multi: int
    median_load_1m: float
    max_load_1m: float
    message: str

    def to_dict(self) -> dict:
        return to_jsonable(self.__dict__)


def contention(rows: pd.DataFrame, *, warn: float = CONTENTION_WARN, fail: float = CONTENTION_FAIL) -> Contention:
    """The contention evidence of one run's executions: median wall/CPU ratio and load average.

    Level: ``fail`` when the median wall/CPU ratio (:func:`wall_cpu_ratio`: executions of at least
    :data:`CONTENTION_MIN_CPU_S` CPU seconds) is >= ``fail``,
    ``warn`` when >= ``warn``, ``pass`` below; ``n/a`` without CPU times. The load average
    (``load_1m``, recorded by ``speedaudit collect``) is reported beside it, not judged: its
    meaning depends on the machine's core count, which a corpus does not carry.

    >>> rows = pd.DataFrame({"status": "ok", "duration_s": [2.2, 2.4, 2.6], "cpu_s": 1.0, "load_1m": 7.0})
    >>> c = contention(rows)
    >>> c.level, c.median_wall_cpu, c.median_load_1m
    ('fail', 2.4, 7.0)
    """
    ratio, n_single, n_multi = wall_cpu_ratio(rows)
    load = load_values(rows)
    return judge_contention(ratio, n_single, n_multi, float(np.median(load)) if len(load) else math.nan,
                            float(load.max()) if len(load) else math.nan, has_cpu="cpu_s" in rows.columns,
                            warn=warn, fail=fail)


def judge_contention(ratio: float, n_single: int, n_multi: int, med_load: float, max_load: float, *,
                     has_cpu: bool, warn: float = CONTENTION_WARN, fail: float = CONTENTION_FAIL) -> Contention:
    """:class:`Contention` from its figures (what :func:`contention` measures; the Dask path computes them
    from partitions, :mod:`audits.checks.median_selection`). NaN loads: no load average was recorded."""
    load_text = (f"; 1-minute load average during collection: median {med_load:.2f}, max {max_load:.2f}"
                 if math.isfinite(med_load) else "; no load_1m column (speedaudit collect records it)")
    if not math.isfinite(ratio):
        if not has_cpu:
            why, advice = "the corpus has no cpu_s column", "record CPU time beside the wall time (speedaudit collect does)"
        else:
            # The limit is in seconds on purpose (audits.checks.declared.clocks.CONTENTION_MIN_CPU_S): what it
            # excludes is a fixed cost per process, not a share of the program's time, so a corpus of shorter
            # programs (nanosecond benchmarks) gets n/a here, never a verdict read from start-up; the advice is to
            # lengthen the executions, not to record the CPU time the corpus has.
            multi = (f"; {n_multi:,} used more than one core (wall/CPU below 1 says nothing about waiting for one)"
                     if n_multi else "")
            why = (f"no single-threaded ok execution with at least {CONTENTION_MIN_CPU_S:g} s of CPU time{multi}: "
                   f"every execution pays a fixed start-up cost in wall time (exec, the sandbox, page faults: about "
                   f"1-7 ms), which in shorter ones reads as waiting for a core; the limit is the process's cost, "
                   f"not a share of the program's time")
            advice = (f"to measure contention, time executions of >= {CONTENTION_MIN_CPU_S:g} s of CPU (larger "
                      f"inputs or more iterations per execution), or read the load average")
        return Contention("n/a", ratio, n_single, n_multi, med_load, max_load,
                          f"contention cannot be measured: {why}{load_text}; {advice}")
    level = "fail" if ratio >= fail else "warn" if ratio >= warn else "pass"
    waited = max(0.0, 1.0 - 1.0 / ratio)
    if level == "pass":
        message = (f"median wall/CPU {ratio:.2f} over {n_single:,} single-threaded ok executions of >= "
                   f"{CONTENTION_MIN_CPU_S:g} s CPU: programs had their core{load_text}")
    else:
        message = (f"contended: median wall/CPU {ratio:.2f} over {n_single:,} single-threaded ok executions of "
                   f">= {CONTENTION_MIN_CPU_S:g} s CPU "
                   f"(programs waited for a core about {waited:.0%} of their wall time){load_text}; the wall times "
                   f"carry other work on the machine. Recollect on an idle machine (load average below 0.3 per "
                   f"core), with collect --pin-cpus and --workers 1, or audit CPU time with --measure cpu_s "
                   f"(speedaudit audit clocks compares the two)")
    return Contention(level, ratio, n_single, n_multi, med_load, max_load, message)


def _refs(run: pd.DataFrame) -> pd.DataFrame:
    """Correct reference executions on optimization tests: the rows the reliability audit reads."""
    return reference_rows(run)


def _figures(run: pd.DataFrame, *, n_boot: int, seed: int, shared=None) -> dict:
    """The five figures of one run under the measure in its ``duration_s`` (``shared``: the run's
    :class:`audits.protocol.context.RunContext` when the measure is the wall time: its repeat cells, test ICCs,
    test table and per-repeat scores, built once for every audit)."""
    if shared is None:
        refs = _refs(run)
        cells, icc, scores, tests = repeat_cv(refs), log_duration_icc(refs), per_repeat_scores(run), test_table(run)
    else:  # the tables the reliability and discriminability audits of the run read too
        cells, icc, scores, tests = shared.repeat_cells, shared.test_icc, shared.repeat_scores, shared.test_table
    # the reliability and discriminability audits' rules: a problem with no timed correct reference is not
    # measured (its references score 100 in every repeat: a rank sd and a gap of 0), and one repeat per cell
    # measures no rank drift (audits.checks.reliability: mean_rank_sd n/a)
    unmeasured = [p for p, _ in unmeasured_problems(run.loc[(run["role"] != "floor").to_numpy()]
                                                    if "role" in run.columns else run)]
    if unmeasured:
        scores = scores.loc[~scores["problem"].astype(str).isin(unmeasured).to_numpy()]
    n_rep = int(np.bincount(cells["n_runs"].to_numpy(dtype=np.int64)).argmax()) if len(cells) else 0
    cv = summarize_repeat_cv(cells, n_boot=n_boot, seed=seed)["median_repeat_cv"].estimate
    drift = rank_drift(scores, n_boot=n_boot, seed=seed).mean_sd.estimate if n_rep >= 2 else math.nan
    icc2 = icc["ICC2"].to_numpy(dtype=float) if len(icc) else np.zeros(0)
    ref_scores = scores.loc[(scores["role"] == "reference").to_numpy()] if "role" in scores.columns else scores
    gap = strong_weak_gap(ref_scores, n_boot=n_boot, seed=seed).gap.estimate
    rcv = robust_cv(tests)
    finite = np.isfinite(rcv["robust_cv"].to_numpy(dtype=float))
    return {"median_repeat_cv": float(cv), "mean_rank_sd": float(drift),
            "icc": float(np.nanmedian(icc2)) if np.isfinite(icc2).any() else math.nan,
            "strong_weak_gap": float(gap),
            "filterable_share": float(rcv.loc[finite, "filterable"].mean()) if finite.any() else math.nan}


def _q(run: pd.DataFrame, shared=None) -> pd.DataFrame:
    if shared is not None:  # the run's shared table: its rows without floor rows ranked against its pool
        return problem_scores(shared.cell_percentiles)[["problem", "solution", "q"]]
    real = run.loc[(run["role"] != "floor").to_numpy()] if "role" in run.columns else run
    return problem_scores(percentile_table(real))[["problem", "solution", "q"]]


def _agreement(base: pd.DataFrame, other: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b between two measures' q of the solutions of every problem."""
    both = base.merge(other, on=["problem", "solution"], suffixes=("_a", "_b"))
    rows = []
    for problem, group in both.groupby("problem", observed=True, sort=True):
        keep = np.isfinite(group["q_a"].to_numpy(dtype=float)) & np.isfinite(group["q_b"].to_numpy(dtype=float))
        n = int(keep.sum())
        tau = math.nan
        if n >= 2:
            result = kendalltau(group["q_a"].to_numpy()[keep], group["q_b"].to_numpy()[keep])
            tau = float(result.statistic)
        rows.append({"problem": problem, "n_solutions": n, "kendall_tau": tau})
    # typed even when empty (a measure the quietest run lacks): concatenated with other measures' rows, an
    # untyped empty frame would turn kendall_tau into objects
    return pd.DataFrame(rows, columns=["problem", "n_solutions", "kendall_tau"]).astype(
        {"n_solutions": np.int64, "kendall_tau": np.float64})


@dataclass(frozen=True)
class ClocksAudit:
    """The figures of every run under every measure, and the clocks' rank agreement on the quietest run.

    Attributes
    ----------
    table : DataFrame
        One row per (environment, campaign, measure): ``n_rows``, the five figures, and the
        run's ``median_load_1m`` and ``median_wall_cpu``.
    agreement : DataFrame
        On the quietest run, per other measure and problem: ``measure, problem, n_solutions,
        kendall_tau`` (against ``measures[0]``).
    quietest : tuple or None
        (environment, campaign) of the quietest run; ``quietest_by`` says how it was chosen.
    measures : tuple of str
    findings : tuple
        The clock recommendation (:func:`clock_findings`): per other measure, its rank agreement with the
        base judged against :class:`ClocksThresholds`, the message naming the clock to trust; ``n/a`` with
        the reason when the clocks cannot be compared.
    """

    table: pd.DataFrame
    agreement: pd.DataFrame
    quietest: tuple | None
    quietest_by: str
    measures: tuple[str, ...]
    findings: tuple = ()
    #: The rule that chose the runs of the table (a key of :data:`audits.corpus.runs.RULES`): ``"every run"`` or
    #: ``"named runs"``; the rank agreement's run is the quietest of them (``quietest_by``).
    run_rule: str = "every run"
    #: The reference run of ``faithfulness`` ((environment, campaign)) or None, and how it was chosen when the
    #: user did not name it whole (:func:`reference_run`: an environment named alone); '' when named whole.
    reference: tuple | None = None
    reference_note: str = ""

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def mean_agreement(self) -> dict[str, float]:
        """Mean Kendall tau over problems, per measure compared with the first."""
        a = self.agreement
        return {m: float(np.nanmean(g["kendall_tau"])) if np.isfinite(g["kendall_tau"]).any() else math.nan
                for m, g in a.groupby("measure", sort=False)} if len(a) else {}

    def agreement_problems(self, measure: str) -> int:
        """How many problems the mean of :meth:`mean_agreement` averages for ``measure``: those with a
        defined tau (two solutions scored under both clocks), not every problem of the run."""
        a = self.agreement
        return int(np.isfinite(a.loc[(a["measure"] == measure).to_numpy(), "kendall_tau"].to_numpy(dtype=float)).sum())

    def summary(self) -> str:
        lines = ["Clocks audit: the same figures from each measure, per run"]
        lines.append(frame_text(self.table))
        if len(self.measures) < 2:
            lines.append(f"\nrank agreement between clocks: n/a (the corpus has one measure, {self.measures[0]}; "
                         f"collect records cpu_s)")
        elif self.quietest is None:
            lines.append("\nrank agreement between clocks: n/a (no run)")
        else:
            env, camp = self.quietest
            lines.append(f"\nwithin-problem rank agreement with {self.measures[0]} on the quietest run "
                         f"{where_label(env, camp)} ({self.quietest_by}): mean Kendall tau-b of the solutions' q")
            for measure, tau in self.mean_agreement().items():
                n = self.agreement_problems(measure)
                # no problem with a tau: the mean is undefined, n/a with the reason (its finding says the same)
                lines.append(f"    {measure}: {tau:.3f} over {n} problem{'' if n == 1 else 's'} with two solutions "
                             f"scored under both clocks" if n else
                             f"    {measure}: n/a (no problem has two solutions scored under both clocks)")
        if self.reference is not None:
            lines.append(f"\nfaithfulness: against the reference run {where_label(*self.reference)}"
                         + (f" ({self.reference_note})" if self.reference_note else ""))
        if self.findings:
            lines.append("\nFindings\n" + findings_table(self.findings))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return to_jsonable({"run_rule": self.run_rule, "measures": list(self.measures),
                            "table": self.table.to_dict("records"),
                            "quietest": None if self.quietest is None else list(self.quietest),
                            "quietest_by": self.quietest_by, "agreement": self.agreement.to_dict("records"),
                            "reference": None if self.reference is None else list(self.reference),
                            "reference_note": self.reference_note,
                            "mean_agreement": self.mean_agreement(),
                            "findings": [f.to_dict() for f in self.findings]})


def noise_pairs(audit: ClocksAudit, base: str, measure: str) -> tuple[str, list[tuple[float, float]]]:
    """The noise figure two clocks are compared on and its (base, measure) values per run where both exist:
    the mean rank sd of 100*q across repeats (the noise a reward feels) when some run has it under both
    clocks, else the median repeat CV; never a mix of the two."""
    t = audit.table
    if not len(t):
        return "", []
    records = t.to_dict("records")
    rows = {(str(r["environment"]), str(r["campaign"]), str(r["measure"])): r for r in records}
    runs = sorted({(e, c) for e, c, _ in rows})
    for column in ("mean_rank_sd", "median_repeat_cv"):
        pairs = []
        for env, camp in runs:
            a = rows.get((env, camp, base), {}).get(column)
            b = rows.get((env, camp, measure), {}).get(column)
            if a is not None and b is not None and np.isfinite(a) and np.isfinite(b):
                pairs.append((float(a), float(b)))
        if pairs:
            return column, pairs
    return "", []


def recommended_clock(audit: ClocksAudit, thresholds: ClocksThresholds | None = None) -> tuple[str, dict, dict]:
    """The clock to trust by the documented rule: another measure ``m`` than the base (``measures[0]``) when it
    orders the solutions of each problem as the base does on the quietest run (mean Kendall tau-b >=
    ``agreement_warn``) and is less noisy (a lower mean over the runs of :func:`noise_pairs`' figure); of
    several, the least noisy (then the audit's order); otherwise the base.

    Returns ``(measure, agree, noise)``: ``agree`` = mean tau per other measure, ``noise`` = ``{m: (figure,
    base mean, m mean, runs where m is lower, runs)}``.
    """
    limit = (thresholds or ClocksThresholds()).agreement_warn
    base = audit.measures[0]
    agree = audit.mean_agreement()
    noise = {}
    for m in audit.measures[1:]:
        column, pairs = noise_pairs(audit, base, m)
        if pairs:
            a, b = (float(np.mean([p[i] for p in pairs])) for i in (0, 1))
            noise[m] = (column, a, b, sum(pb < pa for pa, pb in pairs), len(pairs))
    good = [m for m in audit.measures[1:] if np.isfinite(agree.get(m, math.nan)) and agree[m] >= limit
            and m in noise and noise[m][2] < noise[m][1]]
    best = min(good, key=lambda m: (noise[m][2], audit.measures.index(m))) if good else base
    return best, agree, noise


def one_clock_reason(corpus: pd.DataFrame | None, measures: Sequence[str]) -> str:
    """Why only one clock can be compared, from the rows: another clock was recorded but not named, or
    ``cpu_s`` has no positive value on an ok execution, or the corpus has no ``cpu_s`` column."""
    name = measures[0] if measures else "duration_s"
    others = [m for m in available_measures(corpus) if m != name] if corpus is not None else []
    if others:
        return (f"only one clock, `{name}`, was named (clocks_measures); the corpus also has "
                f"{', '.join(f'`{o}`' for o in others)}: name two or more, e.g. `-p 'clocks_measures=[{name}, "
                f"{others[0]}]'` (speedaudit audit clocks --measure)")
    if corpus is not None and "cpu_s" in corpus.columns:
        why = "its `cpu_s` column has no positive value on any ok execution"
    elif corpus is not None:
        why = "it has no `cpu_s` column"
    else:
        why = "no other duration column (cpu_s, instructions) has a positive value on an ok execution"
    return (f"the corpus has one clock, `{name}`{' (wall time)' if name == 'duration_s' else ''}: {why}; "
            f"record CPU time beside the wall time (speedaudit collect does), or name another numeric "
            f"duration column with `-p 'clocks_measures=[duration_s, COLUMN]'` (speedaudit audit clocks --measure)")


def clock_findings(audit: ClocksAudit, thresholds: ClocksThresholds | None = None, *,
                   corpus: pd.DataFrame | None = None) -> tuple[Finding, ...]:
    """The clocks audit's verdicts: per measure other than the base, its mean within-problem rank agreement
    with the base on the quietest run, judged against ``agreement`` (lower is worse); each message names the
    clock to trust (:func:`recommended_clock`). ``n/a`` with the reason when nothing can be compared (with one
    clock, :func:`one_clock_reason` of ``corpus``)."""
    th = thresholds or ClocksThresholds()
    if len(audit.measures) < 2:
        return (Finding.not_available("clock_agreement", one_clock_reason(corpus, audit.measures),
                                      threshold=th.text("agreement")),)
    base = audit.measures[0]
    if audit.quietest is None or not len(audit.agreement) or not np.isfinite(
            audit.agreement["kendall_tau"].to_numpy(dtype=float)).any():
        return (Finding.not_available("clock_agreement", "no problem of the quietest run has two solutions scored "
                                      "under both clocks", threshold=th.text("agreement")),)
    best, agree, noise = recommended_clock(audit, th)
    env, camp = audit.quietest
    out = []
    for m in audit.measures[1:]:
        tau = agree.get(m, math.nan)
        level = th.judge("agreement", tau, nan="n/a")
        if level == "n/a":
            out.append(Finding.not_available("clock_agreement", f"no problem has two solutions scored under {m}",
                                             threshold=th.text("agreement"), environment=env, campaign=camp,
                                             subject=m))
            continue
        if best == m:
            advice = f"trust {m}: it orders solutions as {base} does and is less noisy ({noise[m][0]})"
        elif level == "pass":
            advice = (f"keep {base}: {m} orders solutions as it does but is not less noisy" if m in noise else
                      f"keep {base}: no run measures the noise of both clocks")
        else:
            advice = (f"keep {base} and find out why {m} orders solutions differently (waiting, I/O, threads): "
                      f"one of the two clocks is not the program's speed")
        out.append(Finding(level, "clock_agreement", float(tau), th.text("agreement"),
                           f"mean Kendall tau-b of the solutions' q under {m} against {base} on the quietest run "
                           f"({audit.quietest_by}) over {audit.agreement_problems(m)} problem"
                           f"{'' if audit.agreement_problems(m) == 1 else 's'} with two solutions scored under both; "
                           f"recommended clock: {best}. {advice}", env, camp, subject=m))
    return tuple(out)


def _quietest(runs: list[tuple], table: pd.DataFrame) -> tuple[tuple | None, str]:
    if not runs:
        return None, "no run"
    wall = table[table["measure"] == "duration_s"].set_index(list(RUN_COLUMNS))
    for column, how in (("median_load_1m", "lowest median load_1m"), ("median_wall_cpu", "lowest median wall/CPU"),
                        ("median_repeat_cv", "lowest median wall-time repeat CV")):
        values = np.array([wall.loc[r, column] for r in runs], dtype=float)
        if np.isfinite(values).all():
            order = sorted(range(len(runs)), key=lambda i: (values[i], tuple(map(str, runs[i]))))
            return runs[order[0]], how
    return sorted(runs, key=lambda r: tuple(map(str, r)))[0], "first run by name (no figure to choose by)"


def _label_is(column: pd.Series, value: str) -> np.ndarray:
    """``column.astype(str) == value`` as a boolean array, on a categorical's codes (its labels turned into
    strings, not its 10^6 rows: that conversion per run and measure was a tenth of the whole audit)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        hits = np.flatnonzero(np.asarray(column.cat.categories.astype(str)) == value)
        return np.isin(column.cat.codes.to_numpy(), hits)
    return (column.astype(str) == value).to_numpy()


def _run_mask(frame: pd.DataFrame, environment: str, campaign: str) -> np.ndarray:
    """Rows of ``frame`` in the run named (environment, campaign) by its labels as strings."""
    return _label_is(frame["environment"], environment) & _label_is(frame["campaign"], campaign)


def _faithfulness(corpus, q_by, table, reference, measure: str, swapped, source: str) -> np.ndarray:
    """Per row of ``table`` (run, measure): mean over problems of Kendall's tau-b between the solutions' q
    under the row's measure and under ``measure`` on the ``reference`` run; NaN without a reference."""
    out = np.full(len(table), math.nan)
    if reference is None:
        return out
    frame = swapped[measure] if measure in swapped else use_measure(corpus, measure, source=source)
    rows = frame.loc[_run_mask(frame, reference.environment, reference.campaign)]
    if not len(rows):
        raise UserError(f"{source}: the reference run {reference} has no ok execution with a {measure}")
    truth = _q(rows)
    for i, (env, camp, m) in enumerate(zip(table["environment"], table["campaign"], table["measure"])):
        taus = _agreement(truth, _q(*q_by[(env, camp, m)]))["kendall_tau"].to_numpy(dtype=float)
        out[i] = float(np.mean(taus[np.isfinite(taus)])) if np.isfinite(taus).any() else math.nan
    return out


def _cost(corpus: pd.DataFrame, runs: list[tuple]) -> pd.DataFrame:
    """Per run: its executions (rows, floor included) and the wall seconds they took (sum of ``duration_s``)."""
    rows = []
    wall = corpus["duration_s"].to_numpy(dtype=float)
    for env, camp in runs:
        mask = _run_mask(corpus, env, camp)
        spent = wall[mask]
        rows.append({"environment": env, "campaign": camp, "executions": int(mask.sum()),
                     "seconds": math.fsum(spent[np.isfinite(spent)])})  # exact: the same for any row order
    return pd.DataFrame(rows, columns=["environment", "campaign", "executions", "seconds"])


#: How the reference run's options are spelled where a message names them: ``audit clocks`` takes
#: ``--reference-*``, ``audit all`` gives every option of one audit its name (``--clocks-reference-*``), Python the
#: keyword. The messages come from one place (:func:`reference_run`) for every command, so they name all three.
_REFERENCE_CAMPAIGN = ("--reference-campaign NAME (audit all: --clocks-reference-environment NAME "
                       "--clocks-reference-campaign NAME; Python: reference_environment=..., reference_campaign=...)")


def reference_run(runs, *, environment: str | None, campaign: str | None,
                  source: str = "the corpus") -> tuple[Run | None, str]:
    """The reference run of ``faithfulness`` that ``--reference-environment`` / ``--reference-campaign`` name, and
    how it was chosen: ``(None, "")`` when neither is given; ``(run, "")`` when the two name one run; otherwise
    (one of them left out and several runs match it) the run of the one-run rule
    (:func:`audits.corpus.runs.one_run`: the earliest campaign by timestamp or the user's order, else the first by
    name), with a note naming the run picked, the others and how to choose another, which the result, the JSON
    and the terminal carry (a reference picked without saying so is a truth the user did not choose).

    ``runs``: the corpus's :class:`audits.corpus.runs.Runs` table (or a corpus). A name that matches no run, or a
    campaign held by several environments, is a :class:`UserError` naming the reference options.
    """
    if environment is None and campaign is None:
        return None, ""
    table = runs if hasattr(runs, "select") else runs_of(runs)
    try:
        picked = one_run(table, environment=environment, campaign=campaign).run
    except RunError as error:  # its advice names --environment/--campaign, which select the audited runs
        what = re.sub(r"; this audit uses one run: choose it with [^;]*", "", str(error).splitlines()[0])
        raise UserError(f"{source}: the reference run: {what}\n  -> name one of the runs listed with "
                        f"--reference-environment NAME and {_REFERENCE_CAMPAIGN}") from None
    matches = table.select(environment=environment, campaign=campaign)
    if len(matches) < 2:
        return picked, ""
    how = {"timestamp": "the earliest by timestamp", "user": "the first in the order given"}.get(
        table.order_by, "the first by name")
    others = ", ".join(repr(r.campaign) for r in matches if r != picked)
    return picked, (f"--reference-environment {picked.environment!r} without --reference-campaign holds "
                    f"{len(matches)} campaigns; the one-run rule picked {picked.campaign!r}, {how} (the others: "
                    f"{others}); choose another with {_REFERENCE_CAMPAIGN}")


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(ClocksOptions)
def run_clocks_audit(corpus: pd.DataFrame, *, measures: Sequence[str] | None = DEFAULT, n_boot: int = DEFAULT,
                     seed: int = DEFAULT, source: str = DEFAULT, thresholds=None, context=None,
                     reference: Run | None = None, reference_measure: str = DEFAULT,
                     reference_corpus: pd.DataFrame | None = None, reference_note: str = "") -> ClocksAudit:
    """Compare measures (clocks) side by side per run (see the module docstring).

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.clocks.ClocksOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame
        A loaded corpus (:func:`audits.corpus.io.load_corpus`).
    measures : sequence of str, optional
        Columns to compare, the first being the base of the rank agreement (default None:
        :func:`available_measures`, i.e. ``duration_s`` first).
    n_boot, seed : int
        Bootstrap of the figures' intervals (only the estimates are reported; default: the Options fields,
        200 and 0).
    source : str
        How error messages name the corpus (default: the Options field, ``"the corpus"``).
    thresholds : ClocksThresholds or mapping, optional
        The limits of the rank agreement (:func:`clock_findings`).
    context : AuditContext, optional
        The shared context of ``corpus`` (the whole audit's): the wall-time figures then read each run's
        pool and per-repeat scores from it instead of building them again (the same values).
    reference : Run, optional
        The reference run of ``faithfulness`` (see the module docstring); None: the column is NaN.
    reference_measure : str
        The reference run's clock (default: the Options field, ``cpu_s``).
    reference_corpus : DataFrame, optional
        Where the reference run's rows are read (default: ``corpus``): the whole corpus when ``corpus`` holds
        only the runs selected for the table (``--environment`` / ``--campaign``), which need not include it.
    reference_note : str
        How ``reference`` was chosen when the user did not name it whole (:func:`reference_run`), carried by the
        result (``reference_note``), its JSON and its summary.

    Returns
    -------
    ClocksAudit
    """
    measures = list(measures) if measures else available_measures(corpus)  # validated by ClocksOptions (no repeat)
    if not measures:
        raise UserError(f"{source}: no measure to compare (no ok execution has a positive duration)")
    swapped = {m: use_measure(corpus, m, source=source) for m in measures}
    run_code, n_runs = group_codes(corpus, list(RUN_COLUMNS))  # one row per run turned into names, not every row
    firsts = corpus.iloc[first_rows(run_code, n_runs)][list(RUN_COLUMNS)].astype(str)
    runs = sorted({tuple(r) for r in firsts.itertuples(index=False)}, key=lambda r: r)
    rows = []
    q_by = {}
    names = set(context.runs.names) if context is not None else set()

    def shared(frame, env, camp):
        """The run's shared context when ``frame`` is the context's own corpus (the wall time)."""
        run = Run(env, camp)
        return context.run(run) if context is not None and frame is context.corpus and run in names else None

    # the columns the load and the wall/CPU ratio read: a run's rows of these, not of every column
    ratio_columns = [c for c in ("load_1m", "status", "role", "duration_s", "cpu_s") if c in corpus.columns]
    scored = []  # the runs with a correct reference to rank under the first measure: the quietest is one of them
    for env, camp in runs:
        wall_run = corpus[ratio_columns].loc[_run_mask(corpus, env, camp)]
        # the run's load average without its floor rows: the reliability audit's contention figure (RunContext.rows)
        load = load_values(wall_run.loc[(wall_run["role"] != "floor").to_numpy()] if "role" in wall_run.columns
                           else wall_run)
        ratio, _, _ = wall_cpu_ratio(wall_run)
        for m in measures:
            frame = swapped[m]
            run = frame.loc[_run_mask(frame, env, camp)]
            # a correct reference with an ok timing to rank (a run whose every reference timed out has none)
            has_references = bool((correct_reference_mask(run) & _ok(run)).any())
            if has_references and m == measures[0]:
                scored.append((env, camp))
            figures = _figures(run, n_boot=n_boot, seed=seed, shared=shared(frame, env, camp)) if (
                has_references) else dict.fromkeys(
                ("median_repeat_cv", "mean_rank_sd", "icc", "strong_weak_gap", "filterable_share"), math.nan)
            rows.append({"environment": env, "campaign": camp, "measure": m, "n_rows": int(len(run)), **figures,
                         "median_load_1m": float(np.median(load)) if len(load) else math.nan,
                         "median_wall_cpu": ratio})
            q_by[(env, camp, m)] = (run, shared(frame, env, camp))
    table = pd.DataFrame(rows)
    table["faithfulness"] = (_faithfulness(corpus, q_by, table, reference, reference_measure, swapped, source)
                             if reference_corpus is None or reference_corpus is corpus else
                             _faithfulness(reference_corpus, q_by, table, reference, reference_measure, {}, source))
    table = table.merge(_cost(corpus, runs), on=["environment", "campaign"], how="left", sort=False)
    quietest, how = _quietest(scored or runs, table)
    parts = []
    if quietest is not None and len(measures) > 1:
        base = _q(*q_by[(*quietest, measures[0])])
        for m in measures[1:]:
            parts.append(_agreement(base, _q(*q_by[(*quietest, m)])).assign(measure=m))
    agreement = (pd.concat(parts, ignore_index=True)[["measure", "problem", "n_solutions", "kendall_tau"]] if parts
                 else pd.DataFrame(columns=["measure", "problem", "n_solutions", "kendall_tau"]))
    audit = ClocksAudit(table, agreement, quietest, how, tuple(measures),
                        reference=None if reference is None else (reference.environment, reference.campaign),
                        reference_note=reference_note if reference is not None else "")
    return replace(audit, findings=clock_findings(audit, ClocksThresholds.coerce(thresholds), corpus=corpus))
