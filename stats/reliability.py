"""Reliability of timing: repeat noise, rank drift, ICC, variance components, significance.

Definitions (DESIGN.md, "Definitions"; issue 5):

* **Repeat CV** of one (environment, campaign, problem, test, solution) cell =
  sd / mean of its ``ok`` repeats (ddof = 1); the absolute sd is reported in
  ms. Cells with fewer than two ``ok`` repeats have no CV (NaN). Summaries
  are medians over cells with a cluster-bootstrap CI over problems.
* **Rank drift**: every solution is scored once per repeat (q of that repeat's
  durations against the fixed pool built from all repeats' medians); per
  (problem, solution) the peak-to-peak range and the sd (ddof = 1) of 100*q
  across repeats. Reported: the mean range, the mean within-problem sd and the
  worst range.
* **ICC** (Shrout & Fleiss 1979; McGraw & Wong 1996) of a balanced
  targets x raters table, from the two-way ANOVA mean squares (rows = targets,
  columns = raters, n targets, k raters)::

      ICC1  = (MSR - MSW) / (MSR + (k-1) MSW)                      one-way, single
      ICC2  = (MSR - MSE) / (MSR + (k-1) MSE + k (MSC - MSE) / n)  absolute agreement, single
      ICC3  = (MSR - MSE) / (MSR + (k-1) MSE)                      consistency, single
      ICC1k = (MSR - MSW) / MSR
      ICC2k = (MSR - MSE) / (MSR + (MSC - MSE) / n)
      ICC3k = (MSR - MSE) / MSR

  (the six values pingouin's ``intraclass_corr`` reports). For timings the
  targets are the solutions of one test and the raters the repeats, on log
  duration: "does repeating the measurement order the solutions of a test the
  same way". :func:`grouped_icc` computes one ICC table per group at once.
* **Variance components** of log duration: see :func:`variance_components`.
* **Significance** of speed differences: a one-sided Mann-Whitney U test over
  repeats of two solutions' per-repeat scores, Benjamini-Hochberg across all
  pairs; see :func:`pairwise_significance`.

Everything is vectorised over groups (``np.bincount`` over dense group codes,
one sort per grouped median); nothing loops over problems or rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.integrate import quad
from scipy.special import gammaln

from stats._groups import canonical_order, first_rows, group_codes, grouped_order
from stats._hashing import GOLDEN, finalize64
from stats._ties import snap
from stats.bootstrap import Interval, cluster_bootstrap_ci
from stats.ranking import percentile_table, pool_join, pool_languages, problem_scores, reference_pools, solution_cells

__all__ = ["CELL", "correct_reference_rows", "correct_reference_mask", "d2_constant", "repeat_cv", "benchmark_checks",
           "summarize_repeat_cv", "process_level", "per_repeat_scores", "RankDrift", "rank_drift", "log_duration_icc",
           "grouped_icc", "icc_rounding_range", "VarianceComponents", "variance_partials", "variance_from_partials",
           "repeats_for_reliability", "repeats_for_precision", "PairSignificance", "pairwise_significance"]

CELL = ("environment", "campaign", "problem", "test", "solution")
ICC_TYPES = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
_ICC_DESCRIPTIONS = {
    "ICC1": "Single raters absolute",
    "ICC2": "Single random raters",
    "ICC3": "Single fixed raters",
    "ICC1k": "Average raters absolute",
    "ICC2k": "Average random raters",
    "ICC3k": "Average fixed raters",
}


def correct_reference_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The correct reference executions on optimization tests: the rows the repeat CV, the ICC and the rank
    figures read (a column the frame lacks restricts nothing).

    Examples
    --------
    >>> rows = pd.DataFrame({"role": ["reference", "reference", "candidate"], "correct": [True, False, True],
    ...                      "test_kind": "optimization"})
    >>> correct_reference_rows(rows).index.tolist()
    [0]
    """
    return rows.loc[correct_reference_mask(rows)]


def correct_reference_mask(rows: pd.DataFrame) -> np.ndarray:
    """The boolean mask of :func:`correct_reference_rows` (role ``reference``, ``correct``, optimization test)."""
    mask = np.ones(len(rows), dtype=bool)
    if "role" in rows.columns:
        mask &= (rows["role"] == "reference").to_numpy()
    if "correct" in rows.columns:
        mask &= rows["correct"].to_numpy(dtype=bool)
    if "test_kind" in rows.columns:
        mask &= (rows["test_kind"] == "optimization").to_numpy()
    return mask


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what}: missing column(s) {missing}; present: {list(frame.columns)[:12]}")


def _ok_durations(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Durations and a mask of usable rows (status ok, finite, > 0 not required)."""
    d = frame["duration_s"].to_numpy(dtype=float)
    ok = np.isfinite(d)
    if "status" in frame.columns:
        ok &= (frame["status"] == "ok").to_numpy()
    return d, ok


# --------------------------------------------------------------------------- small-sample constants


def c4_constant(n) -> np.ndarray:
    """E[s] / sigma for the sample sd (ddof=1) of n normal draws.

    c4(n) = sqrt(2 / (n - 1)) * Gamma(n / 2) / Gamma((n - 1) / 2), computed
    with log-gamma (no table); NaN for n < 2.

    Examples
    --------
    >>> np.round(c4_constant([2, 3, 5, 10]), 4).tolist()
    [0.7979, 0.8862, 0.94, 0.9727]
    """
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.sqrt(2.0 / (n - 1)) * np.exp(gammaln(n / 2) - gammaln((n - 1) / 2))
    return np.where(n >= 2, out, np.nan)


def d2_constant(n) -> np.ndarray:
    """E[range] / sigma of n normal draws, by numerical integration.

    d2(n) = integral over x of 1 - Phi(x)^n - (1 - Phi(x))^n (the expected
    range of n standard normals; Tippett 1925), integrated with
    ``scipy.integrate.quad``; NaN for n < 2. Checked in the tests against a
    Monte Carlo simulation and the published table (d2(2) = 1.128,
    d2(5) = 2.326, d2(10) = 3.078).

    Examples
    --------
    >>> np.round(d2_constant([2, 5, 10]), 3).tolist()
    [1.128, 2.326, 3.078]
    """
    n_arr = np.atleast_1d(np.asarray(n, dtype=float))
    out = np.full(n_arr.shape, np.nan)
    for value in np.unique(n_arr[np.isfinite(n_arr) & (n_arr >= 2)]):   # a handful of distinct repeat counts
        k = float(value)
        integral, _ = quad(lambda x, k=k: 1.0 - sps.norm.cdf(x) ** k - sps.norm.sf(x) ** k, -np.inf, np.inf,
                           limit=200)
        out[n_arr == value] = integral
    return out if np.ndim(n) else out[0]


def chi2_median_factor(df) -> np.ndarray:
    """median(chi2_df) / df: the median of s^2 / sigma^2 for a normal sample with df = n - 1 degrees of freedom.

    Examples
    --------
    >>> np.round(chi2_median_factor([2, 4]), 4).tolist()   # 3 and 5 repeats
    [0.6931, 0.8392]
    """
    df = np.asarray(df, dtype=float)
    # once per distinct df (a corpus has a handful of repeat counts, and 10^6 cells): scipy's ppf per cell was
    # a fifth of the repeat-CV summary at 10^7 rows; the same values, computed by the same scipy call
    distinct, where = np.unique(df, return_inverse=True)
    clipped = np.maximum(distinct, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        factor = np.where(distinct >= 1, sps.chi2.median(clipped) / clipped, np.nan)
    return factor[where.reshape(df.shape)]


# --------------------------------------------------------------------------- repeat CV


def repeat_cv(executions: pd.DataFrame, *, by: Sequence[str] = CELL) -> pd.DataFrame:
    """Repeat CV and absolute sd of every cell, raw and corrected for the repeat count.

    For a cell with ``ok`` repeats x_1..x_n (n >= 2)::

        mean = sum(x) / n,  sd = sqrt(sum((x - mean)^2) / (n - 1)),  cv = sd / mean

    computed in two passes (mean first) for numerical stability.

    The raw cv depends on n: for normal noise the median of s / sigma is
    sqrt(m(n)) with m(n) = median(chi2_{n-1}) / (n - 1) (0.833 at 3 repeats,
    0.916 at 5, 0.963 at 10), so a median over cells is 17 %, 8 % and 4 % low.
    The corrected CV removes that dependence. With y = log x (multiplicative
    noise), s2_log = sum (y - ybar)^2 / (n - 1) has (n - 1) s2_log / sigma^2 ~
    chi2_{n-1}, hence median(s2_log / m(n)) = sigma^2 at every n, and::

        cv_corrected = sqrt(exp(s2_log / m(n)) - 1)

    (the CV of a lognormal with log-sd sigma; about sigma when small) is
    median-unbiased for the cell's CV whatever its repeat count, because a
    monotone map keeps medians. ``log_var`` is s2_log (rows with x > 0).

    Parameters
    ----------
    executions : DataFrame
        Columns ``by`` plus ``duration_s`` and ``status``.
    by : sequence of str, default (environment, campaign, problem, test, solution)
        Cell columns; those absent from ``executions`` are skipped.

    Returns
    -------
    DataFrame
        One row per cell with ``n_runs``, ``n_ok``, ``mean_s``, ``sd_s``,
        ``sd_ms``, ``cv``, ``log_var`` and ``cv_corrected`` (NaN when fewer
        than two ``ok`` repeats), ``min_s`` / ``max_s`` of the ok repeats,
        ``n_processes`` (distinct ``run`` values with an ok repeat; without a
        ``run`` column every ok repeat is its own process) and ``process_cv``
        (sd / mean of the processes' mean durations, ddof = 1; NaN below two
        processes) -- what :func:`benchmark_checks` judges -- and ``step_s``,
        the smallest positive difference between two ok repeats (NaN when they
        all tie): the clock's resolution shows in it.

    Examples
    --------
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": "s",
    ...     "duration_s": [1.0, 1.2, 0.8], "status": "ok"})
    >>> round(float(repeat_cv(runs)["cv"][0]), 6)
    0.2
    """
    by = [c for c in by if c in executions.columns]
    _require(executions, ["duration_s"], "repeat_cv")
    # Reduce in a canonical row order: sums are then bit-identical for any row order.
    executions = executions.iloc[canonical_order(executions, by)]
    codes, n = group_codes(executions, by)
    d, ok = _ok_durations(executions)
    c_ok, d_ok = codes[ok], d[ok]
    n_ok = np.bincount(c_ok, minlength=n)
    sums = np.bincount(c_ok, weights=d_ok, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums / n_ok
        ss = np.bincount(c_ok, weights=(d_ok - mean[c_ok]) ** 2, minlength=n)
        sd = np.where(n_ok >= 2, np.sqrt(ss / np.maximum(n_ok - 1, 1)), np.nan)
        sd[sd <= 1e-12 * np.abs(mean)] = 0.0  # identical repeats: exact 0, not rounding residue
        cv = np.where(mean > 0, sd / mean, np.nan)
        pos = d_ok > 0
        n_pos = np.bincount(c_ok[pos], minlength=n)
        logs = np.log(d_ok[pos])
        lmean = np.bincount(c_ok[pos], weights=logs, minlength=n) / n_pos
        lss = np.bincount(c_ok[pos], weights=(logs - lmean[c_ok[pos]]) ** 2, minlength=n)
        log_var = np.where(n_pos >= 2, lss / np.maximum(n_pos - 1, 1), np.nan)
        log_var[np.isfinite(log_var) & (sd == 0)] = 0.0
        cv_corrected = np.sqrt(np.expm1(log_var / chi2_median_factor(n_pos - 1)))
    out = executions.iloc[first_rows(codes, n)][by].reset_index(drop=True)
    out["n_runs"] = np.bincount(codes, minlength=n)
    out["n_ok"] = n_ok
    out["mean_s"] = np.where(n_ok > 0, mean, np.nan)
    low, high = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(low, c_ok, d_ok)
    np.maximum.at(high, c_ok, d_ok)
    out["min_s"] = np.where(n_ok > 0, low, np.nan)
    out["max_s"] = np.where(n_ok > 0, high, np.nan)
    out["n_processes"], out["process_cv"] = _process_spread(executions.loc[ok], by, c_ok, d_ok, n)
    out["step_s"] = _smallest_step(c_ok, d_ok, n)
    out["sd_s"] = sd
    out["sd_ms"] = sd * 1000.0
    out["cv"] = cv
    out["log_var"] = log_var
    out["cv_corrected"] = cv_corrected
    return out


def _smallest_step(c_ok: np.ndarray, d_ok: np.ndarray, n: int) -> np.ndarray:
    """Per cell: the smallest positive difference between two of its ok values (NaN when they are all equal or
    fewer than two). On a clock of resolution q every such step is a multiple of q, so their minimum over cells
    reads q (the audit's bound on the CV of cells whose repeats tie, :mod:`audits.checks.reliability`).

    The smallest positive gap between neighbours in sorted order is the smallest positive difference of any
    two values, so cells of at most ``_PAIRWISE_CELL`` values (rows contiguous by cell, as :func:`repeat_cv`
    orders them) compare every pair by shifting, without sorting; larger cells are sorted. Both give the same
    floats (``|a - b|`` is ``b - a`` for ``a <= b``), whatever the split.
    """
    step = np.full(n, np.inf)
    if len(d_ok) < 2:
        return np.full(n, np.nan)
    size = np.bincount(c_ok, minlength=n)
    small = size[c_ok] <= _PAIRWISE_CELL
    if np.all(c_ok[1:] >= c_ok[:-1]):
        _pairwise_step(step, c_ok[small], d_ok[small])
        _sorted_step(step, c_ok[~small], d_ok[~small])
    else:
        _sorted_step(step, c_ok, d_ok)
    return np.where(np.isfinite(step), step, np.nan)


# Cells of at most this many values take the pairwise path (its cost grows with the size, the sort's with
# log rows): a speed choice only; every value gives the same result. Benchmark cells have 5 repeats.
_PAIRWISE_CELL = 8


def _pairwise_step(step: np.ndarray, c: np.ndarray, d: np.ndarray) -> None:
    """:func:`_smallest_step` of cells whose rows are contiguous in ``c``: every pair within ``_PAIRWISE_CELL``."""
    if len(c) < 2:
        return
    best = np.full(len(c), np.inf)
    for shift in range(1, min(_PAIRWISE_CELL, len(c))):
        gap = np.abs(d[shift:] - d[:-shift])
        gap[(c[shift:] != c[:-shift]) | ~(gap > 0)] = np.inf
        np.minimum(best[shift:], gap, out=best[shift:])
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    np.minimum.at(step, c[starts], np.minimum.reduceat(best, starts))


def _sorted_step(step: np.ndarray, c: np.ndarray, d: np.ndarray) -> None:
    """:func:`_smallest_step` by sorting each cell's values: the positive gaps between neighbours."""
    if len(c) < 2:
        return
    order = np.lexsort((d, c))
    c_s, d_s = c[order], d[order]
    gap = np.diff(d_s)
    inside = (c_s[1:] == c_s[:-1]) & (gap > 0)
    np.minimum.at(step, c_s[1:][inside], gap[inside])


def _process_spread(ok_rows: pd.DataFrame, by: Sequence[str], c_ok: np.ndarray, d_ok: np.ndarray,
                    n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per cell: the number of processes and the CV of the process means (see :func:`repeat_cv`)."""
    if "run" in ok_rows.columns and len(ok_rows):
        proc, n_proc = group_codes(ok_rows, list(by) + ["run"])
        size = np.bincount(proc, minlength=n_proc).astype(float)
        p_mean = np.bincount(proc, weights=d_ok, minlength=n_proc) / size
        cell = c_ok[first_rows(proc, n_proc)]
    else:  # every ok repeat is a process
        p_mean, cell = d_ok, c_ok
    k = np.bincount(cell, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.bincount(cell, weights=p_mean, minlength=n) / k
        ss = np.bincount(cell, weights=(p_mean - m[cell]) ** 2, minlength=n)
        sd = np.sqrt(ss / np.maximum(k - 1, 1))
        sd[sd <= 1e-12 * np.abs(m)] = 0.0
        cv = np.where((k >= 2) & (m > 0), sd / m, np.nan)
    return k.astype(np.int64), cv


def benchmark_checks(cells: pd.DataFrame, *, cv_limit: float = 0.10, spread_limit: float = 0.5,
                     width: float = 0.01, level: float = 0.95) -> pd.DataFrame:
    """pyperf's per-benchmark stability checks on every cell of :func:`repeat_cv`.

    The rules of ``pyperf check`` (pyperf 2.x, ``pyperf._cli.format_checks`` and
    ``Benchmark.required_nprocesses``), applied to a cell's ``ok`` values:

    * *unstable*: the standard deviation is >= ``cv_limit`` of the mean (pyperf: 10 %);
    * *outlier*: the minimum or the maximum lies >= ``spread_limit`` of the mean
      away from it (pyperf: 50 %);
    * *too few processes*: only checked when the cell is not unstable (as pyperf
      does): the processes needed for a ``level`` CI of the mean of width
      ``width`` (pyperf: 95 %, 1 %), n = ceil(4 z^2 s^2 / w^2) with s = sd / mean
      of the process means (:func:`repeats_for_precision`, the same formula),
      exceed the processes measured.

    pyperf's fourth check (the shortest raw value, value x loops, is under
    1 ms) is an absolute cut-off about timer resolution and is not applied.

    Returns
    -------
    DataFrame
        ``cells`` with ``min_dev`` / ``max_dev`` ((min - mean) / mean, (max - mean) / mean),
        ``processes_needed`` and the flags ``unstable``, ``outlier``, ``too_few_processes``.
    """
    out = cells.copy(deep=False)  # copy-on-write (pandas 3): new columns never reach ``cells``, nothing is copied
    mean = out["mean_s"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["min_dev"] = (out["min_s"].to_numpy(dtype=float) - mean) / mean
        out["max_dev"] = (out["max_s"].to_numpy(dtype=float) - mean) / mean
    z = sps.norm.ppf((1 + level) / 2)
    pcv = out["process_cv"].to_numpy(dtype=float)
    needed = np.where(np.isfinite(pcv), np.maximum(1, np.ceil(4 * z**2 * pcv**2 / width**2 - 1e-9)), np.nan)
    out["processes_needed"] = needed
    cv = out["cv"].to_numpy(dtype=float)
    out["unstable"] = np.isfinite(cv) & (cv >= cv_limit)
    out["outlier"] = (np.abs(out["min_dev"].to_numpy(dtype=float)) >= spread_limit) | (
        out["max_dev"].to_numpy(dtype=float) >= spread_limit)
    out["too_few_processes"] = (np.isfinite(cv) & ~out["unstable"].to_numpy() & np.isfinite(needed)
                                & (needed > out["n_processes"].to_numpy(dtype=float)))
    return out


def summarize_repeat_cv(
    cells: pd.DataFrame, *, n_boot: int = 1000, level: float = 0.95, seed: int | None = 0
) -> dict[str, Interval]:
    """Median repeat CV and median absolute sd (ms) over cells, with CIs over problems.

    The CI is a cluster bootstrap (problems resampled whole) of the pooled
    median over cells, see :func:`stats.bootstrap.cluster_bootstrap_ci`.

    Repeat-count-aware summaries (see :func:`repeat_cv`):

    * ``median_repeat_cv_corrected``: median over cells of ``cv_corrected``;
      its expectation does not depend on the number of repeats when the cells
      share one noise level (with heterogeneous cells it is the median of
      median-unbiased per-cell estimates).
    * ``pooled_repeat_cv`` = sqrt(exp(s2_pooled) - 1) with
      s2_pooled = sum_c (n_c - 1) s2_log,c / sum_c (n_c - 1), an unbiased
      estimate of the df-weighted mean log variance at any repeat count (less
      robust than the median to a few very noisy cells). CI: multinomial
      bootstrap of problems on per-problem sums.

    Returns
    -------
    dict with ``median_repeat_cv``, ``median_abs_sd_ms``,
    ``median_repeat_cv_corrected`` and ``pooled_repeat_cv`` (each an Interval
    whose ``n`` is the number of problems).
    """
    problems = group_codes(cells, ["problem"])[0] if len(cells) else np.zeros(0, dtype=np.int64)
    out = {}
    for name, column in (("median_repeat_cv", "cv"), ("median_abs_sd_ms", "sd_ms"),
                         ("median_repeat_cv_corrected", "cv_corrected")):
        values = cells[column].to_numpy(dtype=float) if len(cells) and column in cells.columns else np.zeros(0)
        out[name] = cluster_bootstrap_ci(values, problems if len(values) else np.zeros(0, dtype=np.int64),
                                         statistic="median", n_boot=n_boot, level=level, seed=seed)
    out["pooled_repeat_cv"] = _pooled_cv(cells, problems, n_boot=n_boot, level=level, seed=seed)
    return out


def _pooled_cv(cells: pd.DataFrame, problems: np.ndarray, *, n_boot: int, level: float, seed) -> Interval:
    """sqrt(expm1(sum df s2 / sum df)) over cells, CI by resampling problems (per-problem sums)."""
    if not len(cells) or "log_var" not in cells.columns:
        return Interval(math.nan, math.nan, math.nan, 0, level)
    lv = cells["log_var"].to_numpy(dtype=float)
    df = (cells["n_ok"].to_numpy(dtype=float) - 1) if "n_ok" in cells.columns else np.ones(len(lv))
    ok = np.isfinite(lv) & (df >= 1)
    if not ok.any():
        return Interval(math.nan, math.nan, math.nan, 0, level)
    _, p = np.unique(problems[ok], return_inverse=True)
    k = int(p.max()) + 1
    ss = np.bincount(p, weights=lv[ok] * df[ok], minlength=k)
    dfs = np.bincount(p, weights=df[ok], minlength=k)
    estimate = float(np.sqrt(np.expm1(ss.sum() / dfs.sum())))
    if k < 2 or not n_boot:
        return Interval(estimate, math.nan, math.nan, k, level)
    counts = np.random.default_rng(seed).multinomial(k, np.full(k, 1.0 / k), size=n_boot).astype(float)
    draws = np.sqrt(np.expm1((counts @ ss) / np.maximum(counts @ dfs, 1e-300)))
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Interval(estimate, float(low), float(high), k, level)


# --------------------------------------------------------------------------- rank drift


def process_level(executions: pd.DataFrame) -> pd.DataFrame:
    """Collapse nested repeats to one row per process: the process is the independent repeat.

    With a ``run`` column (several values per process, e.g. pyperf: 20
    processes x 3 values), the values of one process share its state (memory
    layout, frequency, hash seed) and are not independent draws. Every
    (environment, campaign, problem, test, solution, run) becomes one row:
    ``duration_s`` = median of its ``ok`` values and ``status`` by majority
    (:func:`stats.ranking.solution_cells`), ``repeat`` = the ``run`` index.
    Frames without ``run`` are returned unchanged.

    Examples
    --------
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": "s", "run": [0, 0, 0, 1, 1, 1],
    ...     "repeat": range(6), "duration_s": [1.0, 1.1, 0.9, 2.0, 2.2, 1.8], "status": "ok"})
    >>> process_level(runs)[["repeat", "duration_s"]].values.tolist()
    [[0.0, 1.0], [1.0, 2.0]]
    """
    if "run" not in executions.columns:
        return executions
    by = [c for c in ("environment", "campaign", "problem", "test", "solution", "run") if c in executions.columns]
    cols = by + [c for c in ("repeat", "duration_s", "status", "role", "correct", "test_kind")
                 if c in executions.columns and c not in by]
    out = solution_cells(executions[cols], by=by)
    out["repeat"] = out["run"].to_numpy(dtype=np.int64)
    return out.drop(columns=["run", "n_runs", "n_ok"])


def per_repeat_scores(
    run: pd.DataFrame,
    *,
    roles: Sequence[str] = ("reference", "candidate"),
    correct_only: bool = True,
    pools: pd.DataFrame | None = None,
    table: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """q of every solution in every repeat against the fixed pool of one run.

    The pool is built from all repeats' medians (``reference_pools(run)``)
    unless ``pools`` is given; each repeat's durations are ranked against it
    (leave-self-out) and averaged over optimization tests
    (:func:`stats.ranking.problem_scores` by problem, solution, repeat).

    Parameters
    ----------
    run : DataFrame
        Executions of one environment and one campaign.
    roles : sequence of str
        Roles of the solutions to score (``floor`` rows are never scored).
    correct_only : bool, default True
        Score only solutions labelled correct (incorrect ones sit at q near 1
        in every repeat and would dilute the drift).
    table : DataFrame, optional
        ``percentile_table(run, per_repeat=True, pools=pools)`` of every row of ``run`` when already
        computed (a run context's, for a ``run`` with a ``repeat`` and no ``run`` column); the scored rows
        are then taken from it instead of ranked again. Default: computed.

    Returns
    -------
    DataFrame with ``problem, solution, repeat, q`` (q in 0..1; NaN when no
    optimization test has a pool), ``q_unrounded`` (q before its rounding, for
    averages over repeats) and ``role`` when the run has one. With
    nested repeats (a ``run`` column) each process is one repeat
    (:func:`process_level`), so drift and significance count processes.
    """
    _require(run, ["problem", "test", "solution", "duration_s", "status"], "per_repeat_scores")
    run = process_level(run)
    if pools is None:
        pools = reference_pools(run)
    mask = np.ones(len(run), dtype=bool)
    if "role" in run.columns:
        mask &= run["role"].isin([r for r in roles if r != "floor"]).to_numpy()
    if correct_only and "correct" in run.columns:
        mask &= run["correct"].to_numpy(dtype=bool)
    if table is not None and "repeat" in run.columns and len(table) == len(run):
        table = table.loc[mask].reset_index(drop=True)
    else:
        scored = run.loc[mask]
        if "repeat" not in scored.columns:
            scored = scored.assign(repeat=0)
        table = percentile_table(scored, per_repeat=True, pools=pools)
    by = ["problem", "solution", "repeat"]
    codes = group_codes(table, by)
    scores = problem_scores(table, by=by, codes=codes)
    scores = scores[[c for c in ("problem", "solution", "repeat", "q", "q_unrounded", "role") if c in scores.columns]]
    if "language" in table.columns:  # the pool each score is read in: pairs are compared within one
        scores = scores.assign(pool_language=_unit_pools(table, first_rows(*codes), pools))
    return scores


def _unit_pools(table: pd.DataFrame, first: np.ndarray, pools: pd.DataFrame) -> pd.Categorical:
    """The ``pool_language`` of each unit whose first row of ``table`` is ``first``, by the join the percentiles
    use (:func:`stats.ranking.pool_join`: its language in a problem whose pools are split by language, ``""``
    otherwise). Present whenever the rows have a language, so that the partitions' score tables have the same
    columns."""
    units, keys = pool_join(table.iloc[first], pools)
    if "pool_language" not in keys:  # no problem of these pools is split: one pool each
        return pd.Categorical(np.full(len(first), "", dtype=object))
    return pd.Categorical(units["pool_language"].to_numpy())


@dataclass(frozen=True)
class RankDrift:
    """Rank drift of per-repeat scores (points = 100*q).

    Attributes
    ----------
    per_solution : DataFrame
        ``problem, solution, n_repeats, mean_score, range, sd`` per (problem, solution).
    mean_range, mean_sd : Interval
        Means over (problem, solution) units with a cluster-bootstrap CI over problems.
    worst_range : float
        The largest range, and ``worst`` the (problem, solution) that has it.
    mean_sd_corrected, mean_range_normalised : Interval
        Repeat-count-aware versions, both estimating the sd sigma of one
        repeat's score whatever the number of repeats R of a unit: the mean of
        sd / c4(R) and of range / d2(R) (:func:`c4_constant`,
        :func:`d2_constant`; for normal scores E[sd] = c4(R) sigma and
        E[range] = d2(R) sigma). The raw range grows with R (d2 = 1.69, 2.33,
        3.08 at 3, 5, 10 repeats), so thresholds on it only hold at the repeat
        count they were set for; these do not.
    p95_range_5 : float
        The 95th percentile over units of the range as the range of 5 repeats,
        d2(5) * range / d2(R) (``numpy.percentile``, linear): the tail of the
        drift, which unlike ``worst_range`` (a maximum, which grows with the
        number of units and with R) does not depend on the corpus's size or
        repeat count. NaN without a unit of >= 2 repeats.
    """

    per_solution: pd.DataFrame = field(repr=False)
    mean_range: Interval
    mean_sd: Interval
    worst_range: float
    worst: tuple[str, str] | None
    mean_sd_corrected: Interval | None = None
    mean_range_normalised: Interval | None = None
    p95_range_5: float = math.nan

    def to_frame(self) -> pd.DataFrame:
        return self.per_solution

    def to_dict(self) -> dict:
        return {"mean_rank_range": self.mean_range.to_dict(), "mean_rank_sd": self.mean_sd.to_dict(),
                "mean_rank_sd_corrected": None if self.mean_sd_corrected is None else self.mean_sd_corrected.to_dict(),
                "mean_rank_range_normalised": (None if self.mean_range_normalised is None
                                               else self.mean_range_normalised.to_dict()),
                "worst_rank_range": self.worst_range, "p95_rank_range": self.p95_range_5,
                "worst": None if self.worst is None else {"problem": self.worst[0], "solution": self.worst[1]}}

    def summary(self) -> str:
        return (f"rank drift (points): mean range {self.mean_range}, mean sd {self.mean_sd}, "
                f"worst range {self.worst_range:.3g} at {self.worst}")


def rank_drift(scores: pd.DataFrame, *, n_boot: int = 1000, level: float = 0.95,
               seed: int | None = 0) -> RankDrift:
    """Peak-to-peak range and sd of 100*q across repeats per (problem, solution).

    range = max_r(100 q_r) - min_r(100 q_r); sd = sd_r(100 q_r) with ddof = 1
    (0 with a single repeat: one measurement has drifted nowhere, and the
    range is 0 too; ``n_repeats`` says so). Repeats with an undefined q are
    ignored.

    Parameters
    ----------
    scores : DataFrame
        ``problem, solution, repeat, q`` (see :func:`per_repeat_scores`).

    Examples
    --------
    >>> s = pd.DataFrame({"problem": "p", "solution": ["a", "a", "b", "b"], "repeat": [0, 1, 0, 1],
    ...                   "q": [0.1, 0.3, 0.5, 0.5]})
    >>> rank_drift(s, n_boot=10).per_solution["range"].round(6).tolist()
    [20.0, 0.0]
    """
    _require(scores, ["problem", "solution", "q"], "rank_drift")
    points = 100.0 * scores["q"].to_numpy(dtype=float)
    use = np.isfinite(points)
    sc = scores.loc[use]
    points = points[use]
    codes, n = group_codes(sc, ["problem", "solution"])
    counts = np.bincount(codes, minlength=n)
    mean = np.bincount(codes, weights=points, minlength=n) / np.maximum(counts, 1)
    ss = np.bincount(codes, weights=(points - mean[codes]) ** 2, minlength=n)
    sd = np.where(counts >= 2, np.sqrt(ss / np.maximum(counts - 1, 1)), 0.0)
    hi = np.full(n, -np.inf)
    lo = np.full(n, np.inf)
    np.maximum.at(hi, codes, points)
    np.minimum.at(lo, codes, points)
    rng_ = hi - lo
    sd[rng_ == 0] = 0.0  # identical repeats: exact 0, not rounding residue
    per = sc.iloc[first_rows(codes, n)][["problem", "solution"]].reset_index(drop=True)
    per["n_repeats"] = counts
    per["mean_score"] = mean
    per["range"] = rng_
    per["sd"] = sd
    # Repeat-count-aware: sd / c4(R) and range / d2(R) both estimate one repeat's sd (NaN for R < 2).
    with np.errstate(invalid="ignore", divide="ignore"):
        per["sd_corrected"] = np.where(counts >= 2, sd / c4_constant(counts), np.nan)
        per["range_normalised"] = np.where(counts >= 2, rng_ / d2_constant(counts), np.nan)
    problems = group_codes(per, ["problem"])[0] if n else np.zeros(0, dtype=np.int64)
    mean_range = cluster_bootstrap_ci(rng_, problems, statistic="mean", n_boot=n_boot, level=level, seed=seed)
    mean_sd = cluster_bootstrap_ci(sd, problems, statistic="mean", n_boot=n_boot, level=level, seed=seed)
    mean_sd_c = cluster_bootstrap_ci(per["sd_corrected"].to_numpy(dtype=float), problems, statistic="mean",
                                     n_boot=n_boot, level=level, seed=seed)
    mean_range_n = cluster_bootstrap_ci(per["range_normalised"].to_numpy(dtype=float), problems, statistic="mean",
                                        n_boot=n_boot, level=level, seed=seed)
    if n:
        i = int(np.argmax(rng_))
        worst, worst_range = (str(per["problem"].iloc[i]), str(per["solution"].iloc[i])), float(rng_[i])
    else:
        worst, worst_range = None, math.nan
    as_five = per["range_normalised"].to_numpy(dtype=float) * float(d2_constant(5))
    as_five = as_five[np.isfinite(as_five)]
    p95 = float(np.percentile(as_five, 95)) if len(as_five) else math.nan
    return RankDrift(per, mean_range, mean_sd, worst_range, worst, mean_sd_c, mean_range_n, p95)


# --------------------------------------------------------------------------- ICC


def grouped_icc(
    data: pd.DataFrame,
    *,
    targets: str | Sequence[str],
    raters: str,
    ratings: str,
    groups: Sequence[str] = (),
) -> pd.DataFrame:
    """The six Shrout-Fleiss ICCs of every group's targets x raters table.

    Each group is made balanced first: duplicate (target, rater) ratings are
    averaged, and a target is kept only when it has a rating from every rater
    seen in its group (list-wise deletion, as pingouin does). Mean squares
    (n targets, k raters, y_ij the rating, m_i. row means, m_.j column
    means, m grand mean)::

        MSR = k sum_i (m_i. - m)^2 / (n - 1)
        MSC = n sum_j (m_.j - m)^2 / (k - 1)
        MSE = sum_ij (y_ij - m_i. - m_.j + m)^2 / ((n - 1)(k - 1))
        MSW = (SSC + SSE) / (n (k - 1))

    and the ICCs as in the module docstring. A group with n < 2 or k < 2, or
    with MSR = MSE = 0 (constant ratings), has NaN ICCs.

    Parameters
    ----------
    data : DataFrame
    targets : str or sequence of str
        Column(s) identifying the rated objects (e.g. ``solution``).
    raters : str
        Column identifying the raters (e.g. ``repeat``).
    ratings : str
        Numeric column.
    groups : sequence of str
        Columns splitting the data into independent tables (e.g. problem, test).

    Returns
    -------
    DataFrame
        One row per group: the group columns, ``n_targets``, ``n_raters``,
        ``MSR``, ``MSC``, ``MSE``, ``MSW`` and ``ICC1`` ... ``ICC3k``.

    Examples
    --------
    >>> d = pd.DataFrame({"s": [0, 0, 1, 1, 2, 2], "r": [0, 1] * 3, "y": [1.0, 1.1, 2.0, 2.2, 3.0, 2.9]})
    >>> round(float(grouped_icc(d, targets="s", raters="r", ratings="y")["ICC3"][0]), 4)
    0.9872
    """
    targets = [targets] if isinstance(targets, str) else list(targets)
    groups = list(groups)
    _require(data, groups + targets + [raters, ratings], "grouped_icc")
    y_all = data[ratings].to_numpy(dtype=float)
    keep_rows = np.isfinite(y_all)
    frame = data.loc[keep_rows]
    y = y_all[keep_rows]
    g, n_g = group_codes(frame, groups)
    t, n_t = group_codes(frame, groups + targets)
    r, n_r = group_codes(frame, groups + [raters])
    # Each group's ratings less its smallest (every ICC is shift-invariant; the minimum, not a first row, so the
    # result does not depend on row order): a constant group is then exactly 0, so its mean squares are exactly 0
    # and its ICCs NaN as documented. Without it the means of a constant are it only up to rounding, and 12 equal
    # ratings of log(0.1) gave ICC(A,1) 0.18 from mean squares of 1e-33 (log(0.09): NaN).
    if len(y):
        lowest = np.full(n_g, np.inf)
        np.minimum.at(lowest, g, y)
        y = y - lowest[g]
    # Collapse duplicate (target, rater) ratings to their mean.
    key = t * np.int64(n_r) + r
    uniq, inv = np.unique(key, return_inverse=True)
    y = np.bincount(inv, weights=y) / np.bincount(inv)
    t = (uniq // n_r).astype(np.int64)
    r = (uniq % n_r).astype(np.int64)
    group_of_t = np.zeros(n_t, dtype=np.int64)
    group_of_t[t] = g[first_rows(inv, len(uniq))] if len(uniq) else 0
    group_of_r = np.zeros(n_r, dtype=np.int64)
    group_of_r[r] = group_of_t[t]
    k_g = np.bincount(group_of_r, minlength=n_g)
    # Balance: keep targets rated by all k raters of their group.
    per_target = np.bincount(t, minlength=n_t)
    full_t = per_target == k_g[group_of_t]
    cell_keep = full_t[t]
    t, r, y = t[cell_keep], r[cell_keep], y[cell_keep]
    gc = group_of_t[t]
    n_i = np.bincount(group_of_t[full_t], minlength=n_g).astype(float)
    k = k_g.astype(float)
    n_cells = np.bincount(gc, minlength=n_g)
    grand = np.bincount(gc, weights=y, minlength=n_g) / np.maximum(n_cells, 1)
    row_mean = np.bincount(t, weights=y, minlength=n_t) / np.maximum(np.bincount(t, minlength=n_t), 1)
    col_n = np.bincount(r, minlength=n_r)
    col_mean = np.bincount(r, weights=y, minlength=n_r) / np.maximum(col_n, 1)
    resid = y - row_mean[t] - col_mean[r] + grand[gc]
    ss_rows = k * np.bincount(gc, weights=(row_mean[t] - grand[gc]) ** 2, minlength=n_g) / np.maximum(k, 1)
    ss_cols = n_i * np.bincount(gc, weights=(col_mean[r] - grand[gc]) ** 2, minlength=n_g) / np.maximum(n_i, 1)
    ss_err = np.bincount(gc, weights=resid**2, minlength=n_g)
    valid = (n_i >= 2) & (k >= 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        msr = np.where(valid, ss_rows / (n_i - 1), np.nan)
        msc = np.where(valid, ss_cols / (k - 1), np.nan)
        mse = np.where(valid, ss_err / ((n_i - 1) * (k - 1)), np.nan)
        msw = np.where(valid, (ss_cols + ss_err) / (n_i * (k - 1)), np.nan)
        icc_values = {
            "ICC1": (msr - msw) / (msr + (k - 1) * msw),
            "ICC2": (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n_i),
            "ICC3": (msr - mse) / (msr + (k - 1) * mse),
            "ICC1k": (msr - msw) / msr,
            "ICC2k": (msr - mse) / (msr + (msc - mse) / n_i),
            "ICC3k": (msr - mse) / msr,
        }
    if groups:
        out = frame.iloc[first_rows(g, n_g)][groups].reset_index(drop=True)
    else:
        out = pd.DataFrame(index=range(n_g))
    out["n_targets"] = n_i.astype(np.int64)
    out["n_raters"] = k_g
    out["MSR"], out["MSC"], out["MSE"], out["MSW"] = msr, msc, mse, msw
    for name, value in icc_values.items():
        value = np.where(np.isfinite(value), value, np.nan)
        out[name] = value
    return out


def log_duration_icc(references: pd.DataFrame) -> pd.DataFrame:
    """:func:`grouped_icc` of every (problem, test): solutions x repeats of log ``duration_s``; of every (problem,
    test, ``pool_language``) when the rows have a ``language`` (one pool per language in a problem whose references
    mix languages, ``""`` for a problem with one pool: :func:`stats.ranking.pool_languages`).

    Reads the ``ok`` rows with a positive finite duration (a timeout's limit or a crash is not a rating);
    without a ``repeat`` column every row is repeat 0. What the reliability audit's ICC, the
    discriminability audit's ICC(3,1) column and the clock audit's ICC read, from the same rows.

    Parameters
    ----------
    references : DataFrame
        Correct reference executions on optimization tests (``problem, test, solution, repeat,
        duration_s, status``).

    Examples
    --------
    >>> rows = pd.DataFrame({"problem": "p", "test": "t", "solution": list("aabbcc"), "repeat": [0, 1] * 3,
    ...                      "duration_s": [1.0, 1.1, 2.0, 2.1, 4.0, 4.4], "status": "ok"})
    >>> round(float(log_duration_icc(rows)["ICC2"].iloc[0]), 4)   # pingouin's ICC(A,1) of the same logs
    0.9929
    """
    runs = references if "repeat" in references.columns else references.assign(repeat=0)
    d = runs["duration_s"].to_numpy(dtype=float)
    good = (runs["status"] == "ok").to_numpy() & np.isfinite(d) & (d > 0)
    logs = runs.loc[good].assign(_log=np.log(d[good]))
    # solutions are compared within their reference pool (stats.ranking.pool_languages), as their scores are: a
    # test of a problem whose references mix languages has one ICC per language; a C++ and a Python reference
    # differ by the interpreter, which read as an ICC of 0.995 on a real archive (oj-lab/problem-packages)
    pools = pool_languages(logs)  # present whenever there is a language (all "": one pool), so that the
    if pools is None:                 # partitions' tables have the same columns as the whole corpus's
        return grouped_icc(logs, targets="solution", raters="repeat", ratings="_log", groups=["problem", "test"])
    return grouped_icc(logs.assign(pool_language=pools), targets="solution", raters="repeat", ratings="_log",
                       groups=["problem", "test", "pool_language"])


def icc_rounding_range(test_icc: pd.DataFrame, cells: pd.DataFrame, *, step: float) -> pd.DataFrame:
    """The range of each test's ICC(A,1) that a clock of resolution ``step`` leaves open.

    A clock of resolution q reads a duration d to within one step: on the log scale an error of width about
    q / d, whose variance is delta = (q / d)^2 / 12 when it is spread evenly over the step (Sheppard's
    correction). Such an error adds delta to the expectations of MSR, MSE and MSC alike (:func:`grouped_icc`),
    so the numerator N = MSR - MSE of ICC(A,1) keeps its expectation and the denominator
    D = MSR + (k - 1) MSE + k (MSC - MSE) / n gains k delta. The corpus cannot say whether the clock added that
    variance (values on both sides of a step: take it out) or hid it (repeats that tie: put it in), so::

        ICC2 lies between N / (D + k delta) and N / max(D - k delta, |N|)

    (the second bound held within [-1, 1]: D >= N always). delta of a test is the mean of (q / mean)^2 / 12 over
    its cells with a positive mean. Relative to the durations, so the same at any unit of time; on a fine clock
    (q tiny next to every duration) both bounds are the ICC itself.

    Parameters
    ----------
    test_icc : DataFrame
        :func:`log_duration_icc` (group columns, ``n_targets``, ``n_raters``, ``MSR``, ``MSC``, ``MSE``).
    cells : DataFrame
        :func:`repeat_cv` of the same rows (the group columns and ``mean_s``).
    step : float
        The clock's resolution in seconds (NaN: unknown, both bounds NaN).

    Returns
    -------
    DataFrame
        ``test_icc``'s group columns, ``rounding_var`` (delta), ``ICC2_low`` and ``ICC2_high``, one row per row
        of ``test_icc`` in its order.

    Examples
    --------
    >>> table = pd.DataFrame({"problem": ["p"], "test": ["t"], "n_targets": [2], "n_raters": [2],
    ...                       "MSR": [1.0], "MSC": [0.0], "MSE": [0.0]})
    >>> cells = pd.DataFrame({"problem": "p", "test": "t", "mean_s": [1.0, 2.0]})
    >>> r = icc_rounding_range(table, cells, step=0.6)
    >>> round(float(r["rounding_var"][0]), 4), round(float(r["ICC2_low"][0]), 4), float(r["ICC2_high"][0])
    (0.0187, 0.9639, 1.0)
    """
    keys = [c for c in test_icc.columns[:list(test_icc.columns).index("n_targets")] if c in cells.columns]
    mean = cells["mean_s"].to_numpy(dtype=float)
    good = np.isfinite(mean) & (mean > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = (step / mean[good]) ** 2 / 12.0
    per_test = (cells.loc[good, keys].assign(rounding_var=share)
                .groupby(keys, observed=True, sort=False)["rounding_var"].mean().reset_index())
    out = test_icc[keys].reset_index(drop=True).merge(per_test, on=keys, how="left", sort=False)
    n, k = test_icc["n_targets"].to_numpy(dtype=float), test_icc["n_raters"].to_numpy(dtype=float)
    msr, msc, mse = (test_icc[c].to_numpy(dtype=float) for c in ("MSR", "MSC", "MSE"))
    num = msr - mse
    den = msr + (k - 1) * mse + k * (msc - mse) / n
    extra = k * out["rounding_var"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        one = num / (den + extra)
        other = num / np.maximum(den - extra, np.abs(num))
    out["ICC2_low"] = np.where(np.isfinite(one) & np.isfinite(other), np.minimum(one, other), np.nan)
    out["ICC2_high"] = np.where(np.isfinite(one) & np.isfinite(other), np.maximum(one, other), np.nan)
    return out


def icc(data: pd.DataFrame, *, targets: str | Sequence[str], raters: str, ratings: str) -> pd.DataFrame:
    """Six ICCs of one targets x raters table, laid out like pingouin's ``intraclass_corr``.

    Returns
    -------
    DataFrame
        Rows ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k with ``Type``,
        ``Description``, ``ICC``, ``F``, ``df1``, ``df2``, ``pval``
        (F = MSR/MSW for ICC1/ICC1k, MSR/MSE otherwise).

    Examples
    --------
    >>> d = pd.DataFrame({"s": [0, 0, 1, 1, 2, 2], "r": [0, 1] * 3, "y": [1.0, 1.1, 2.0, 2.2, 3.0, 2.9]})
    >>> icc(d, targets="s", raters="r", ratings="y").set_index("Type").loc["ICC2k", "ICC"].round(4)
    np.float64(0.9945)
    """
    table = grouped_icc(data, targets=targets, raters=raters, ratings=ratings)
    if len(table) == 0:
        row = {name: np.nan for name in ("n_targets", "n_raters", "MSR", "MSC", "MSE", "MSW", *ICC_TYPES)}
    else:
        row = table.iloc[0]
    n, k = float(row["n_targets"]), float(row["n_raters"])
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = row["MSR"] / row["MSW"]
        f3 = row["MSR"] / row["MSE"]
    df1 = n - 1
    df_w, df_e = n * (k - 1), (n - 1) * (k - 1)
    p1 = float(sps.f.sf(f1, df1, df_w)) if np.isfinite(f1) else np.nan
    p3 = float(sps.f.sf(f3, df1, df_e)) if np.isfinite(f3) else np.nan
    rows = []
    for name in ICC_TYPES:
        one_way = name.startswith("ICC1")
        rows.append({"Type": name, "Description": _ICC_DESCRIPTIONS[name], "ICC": float(row[name]),
                     "F": float(f1 if one_way else f3), "df1": df1, "df2": df_w if one_way else df_e,
                     "pval": p1 if one_way else p3})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- variance components

COMPONENTS = ("problem", "test", "solution", "test:solution", "campaign", "repeat")


@dataclass(frozen=True)
class VarianceComponents:
    """Variance components of log duration (see :func:`variance_components`).

    ``table`` has one row per component: ``component``, ``variance`` (NaN when
    not estimable from this corpus, e.g. campaign with one campaign),
    ``share`` (of the sum of the estimable components) and ``df`` -- the
    estimators pooled over problems -- and, for the within-problem components,
    the robust summary: ``median_share`` (the median over problems of the
    component's share of that problem's own within-problem variance),
    ``median_share_low`` / ``median_share_high`` (its cluster-bootstrap CI over
    problems), ``n_share`` (problems with a finite share) and
    ``positive_share`` (the share of those problems where it is > 0).
    ``mean_tests`` / ``mean_solutions`` are the average numbers of
    optimization tests and solutions per problem used. With nested repeats (a
    ``run`` column: values inside processes) the table has a ``run`` row
    (between-process variance) and ``repeat`` is the within-process variance;
    ``values_per_run`` is the mean number of values per process (else None) and
    ``between_process`` the median over problems of s2_run / (s2_run + s2_repeat)
    with its CI. ``per_problem`` holds every problem's own components and shares.

    *Why both*: the pooled estimators sum squares over problems, so one very
    noisy problem dominates them (its within-process variance, pooled, exceeds
    every other problem's process-mean variance and the pooled between-process
    component truncates to 0); a median over problems of per-problem shares
    cannot be moved by one problem. Variances (and so ``repeats_needed``) stay
    pooled; shares are read from the robust columns (:meth:`median_share`).
    """

    table: pd.DataFrame
    n_problems: int
    mean_tests: float
    mean_solutions: float
    values_per_run: float | None = None
    per_problem: pd.DataFrame | None = field(default=None, repr=False)
    between_process: Interval | None = None

    @property
    def nested(self) -> bool:
        """True when the components split between-process (``run``) and within-process (``repeat``) noise."""
        return self.values_per_run is not None

    def variance(self, component: str) -> float:
        return float(self.table.set_index("component").loc[component, "variance"])

    def share(self, component: str) -> float:
        return float(self.table.set_index("component").loc[component, "share"])

    def median_share(self, component: str) -> float:
        """Median over problems of the component's within-problem share (NaN for ``problem``, or absent)."""
        table = self.table.set_index("component")
        if "median_share" not in table.columns or component not in table.index:
            return math.nan
        return float(table.loc[component, "median_share"])

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def to_dict(self) -> dict:
        robust = "median_share" in self.table.columns
        out = {"n_problems": self.n_problems, "mean_tests": self.mean_tests,
               "mean_solutions": self.mean_solutions,
               "components": {row.component: {"variance": row.variance, "share": row.share,
                                              **({"median_share": row.median_share,
                                                  "median_share_ci": [row.median_share_low, row.median_share_high],
                                                  "n_share": row.n_share, "positive_share": row.positive_share}
                                                 if robust and row.component != "problem" else {})}
                              for row in self.table.itertuples()},
               "share_rule": "share: of the pooled components (sums over problems); median_share: median over "
                             "problems of the component's share of the problem's own within-problem variance, "
                             "cluster-bootstrap CI over problems"}
        if self.between_process is not None:
            out["between_process_share"] = self.between_process.to_dict()
        return out

    def summary(self) -> str:
        parts = [f"{row.component} {row.share:.1%}" for row in self.table.itertuples() if np.isfinite(row.share)]
        text = "variance shares of log duration: " + ", ".join(parts)
        if self.between_process is not None and np.isfinite(self.between_process.estimate):
            text += (f"; between-process share per problem: median {self.between_process.estimate:.1%} "
                     f"over {self.between_process.n} problems")
        return text


def _pos(x: float) -> float:
    return max(float(x), 0.0) if np.isfinite(x) else math.nan


def variance_components(executions: pd.DataFrame) -> VarianceComponents:
    """Method-of-moments (ANOVA / expected-mean-squares) variance components of log duration.

    Design: random effects, tests and solutions crossed within problems,
    campaigns crossed with cells, repeats nested in (cell, campaign)::

        y_ptscr = mu + P_p + T_pt + S_ps + TS_pts + C_ptsc + e_ptscr

    with y = log(duration_s) of ``ok`` rows. Estimators, pooled over all
    problems (all sums via ``np.bincount``; unbalanced numbers of tests,
    solutions, campaigns and repeats are allowed between problems/cells):

    1. repeat: s2_e = sum (y - ybar_cell,campaign)^2 / sum (n_cc - 1).
    2. campaign: for cells seen in C >= 2 campaigns, the variance of the
       campaign means b2 has E[b2] = s2_C + s2_e * mean_c(1/n_cc); pooled with
       weights C - 1.
    3. cell means m_pts (mean of campaign means) carry noise
       v = s2_C / C + s2_e * sum_c(1/n_cc) / C^2 (averaged over cells).
    4. a two-way ANOVA without replication of m per problem (solutions that
       lack a test of their problem are dropped):
       MS_TS = sum_p SS_res,p / sum_p (T_p-1)(S_p-1) -> s2_TS = MS_TS - v;
       s2_T = (sum_p SS_T,p - sum_p (T_p-1) MS_TS) / sum_p (T_p-1) S_p; s2_S likewise.
    5. problem: the problem means M_p have
       E[var(M)] = s2_P + mean_p(s2_T/T_p + s2_S/S_p + MS_TS/(T_p S_p)).

    Nested repeats (a ``run`` column, e.g. pyperf's values inside processes):
    0. within process: s2_w = sum (y - ybar_process)^2 / sum (n_k - 1), the
       ``repeat`` component; then every process is replaced by its mean and
       steps 1-5 run on process means, so step 1 gives the variance of process
       means, s2_pm, with E[s2_pm] = s2_run + s2_w h (h = df-weighted mean over
       cells of mean_k 1/n_k), and s2_run = s2_pm - s2_w h is the ``run``
       (between-process) component. Processes, not values, are then the
       independent repeats.

    Negative estimates are truncated at 0 (the usual ANOVA convention). For
    balanced data these are the classical ANOVA estimators, which equal REML
    whenever none is truncated. Components that the corpus cannot identify
    (repeat with one repeat per cell, campaign with one campaign, problem with
    one problem) are NaN, and the others then absorb them (say, with one
    repeat, test:solution includes repeat noise).

    Parameters
    ----------
    executions : DataFrame
        ``problem, test, solution, duration_s, status`` and optionally
        ``campaign`` and ``repeat``. Pass the rows to analyse (the audit uses
        correct reference solutions on optimization tests).

    Computed from per-problem sufficient statistics (:func:`variance_partials`, then
    :func:`variance_from_partials`), so that a corpus stored partition by partition gives the same result.

    Returns
    -------
    VarianceComponents
    """
    return variance_from_partials(variance_partials(executions))


def variance_partials(executions: pd.DataFrame) -> pd.DataFrame:
    """Per-problem sufficient statistics of :func:`variance_components` (one row per problem, in name order; a
    problem whose references mix languages has one row per reference pool, with the ``pool_language`` column of
    :func:`stats.ranking.pool_languages`, present whenever the rows have a ``language``).

    Every estimator of :func:`variance_components` is a function of sums over problems of within-problem
    quantities and of the per-problem means ``M`` and design sizes ``T``, ``S``: the components of a corpus
    stored partition by partition (whole problems per partition) are :func:`variance_from_partials` of the
    concatenated tables, exactly (the same code the in-memory call runs). Per problem p (cells c = (test,
    solution), cc = (cell, campaign); with nested repeats processes k first):

    ``df_w, ss_w`` : sum_k (n_k - 1), sum (y - ybar_k)^2;  ``n_proc, sum_values`` : processes, sum_k n_k;
    ``df_e, ss_e`` : sum_cc (n_cc - 1), sum (y - ybar_cc)^2;  ``h_num`` : sum_cc (n_cc - 1) mean_k(1 / n_k);
    ``df_c, ss_c, corr_c`` : over cells in >= 2 campaigns, sum (C - 1), sum_c (m_cc - m_c)^2,
    sum (C - 1) sum_cc(1 / n_cc) / C;  ``n_kept, inv_c, inv_n`` : kept cells (complete solutions), sum 1 / C,
    sum sum_cc(1 / n_cc) / C^2;  ``ss_res, ss_t, ss_s`` : the two-way sums of squares of the cell means;
    ``T, S, M, present`` : tests, solutions, mean of the kept cell means, whether any cell is kept.
    """
    _require(executions, ["problem", "test", "solution", "duration_s"], "variance_components")
    nested = "run" in executions.columns
    executions = executions.iloc[canonical_order(executions, ["problem", "test", "solution", "campaign"]
                                                 + (["run"] if nested else []))]
    d, ok = _ok_durations(executions)
    ok &= d > 0
    frame = executions.loc[ok]
    y = np.log(d[ok])
    if "campaign" not in frame.columns:
        frame = frame.assign(campaign="c0")
    # The unit is the reference pool (stats.ranking.pool_languages): a problem whose references mix languages is
    # one unit per language, as its scores are. A C++ and a Python solution differ by the interpreter (30x), not
    # by the idea; counted as between-solution variance, that gap made repeats_needed 1 on a real archive whose
    # only two-solution problem paired a C++ and a Python reference (oj-lab/problem-packages, hello-world).
    pools = pool_languages(frame)
    unit = ["problem"] if pools is None else ["problem", "pool_language"]
    if pools is not None:
        frame = frame.assign(pool_language=pools)
    prob, n_p = group_codes(frame, unit)  # the unit of every row (then of every process, cell...)
    out: dict[str, np.ndarray] = {}
    if nested:
        # 0. nested repeats: values inside processes; the rest runs on process means (see variance_components)
        pr, n_pr = group_codes(frame, ["problem", "test", "solution", "campaign", "run"])
        n_val = np.bincount(pr, minlength=n_pr).astype(float)
        mean_pr = np.bincount(pr, weights=y, minlength=n_pr) / n_val
        prob_pr = prob[first_rows(pr, n_pr)]
        out["df_w"] = np.bincount(prob_pr, weights=n_val - 1, minlength=n_p)
        out["ss_w"] = np.bincount(prob, weights=(y - mean_pr[pr]) ** 2, minlength=n_p)
        out["n_proc"] = np.bincount(prob_pr, minlength=n_p).astype(float)
        out["sum_values"] = np.bincount(prob_pr, weights=n_val, minlength=n_p)
        frame = frame.iloc[first_rows(pr, n_pr)]
        y, prob = mean_pr, prob_pr
    # 1. repeat (with nested repeats: between process means)
    cc, n_cc_groups = group_codes(frame, ["problem", "test", "solution", "campaign"])
    n_cc = np.bincount(cc, minlength=n_cc_groups).astype(float)
    mean_cc = np.bincount(cc, weights=y, minlength=n_cc_groups) / np.maximum(n_cc, 1)
    first_cc = first_rows(cc, n_cc_groups)
    prob_cc = prob[first_cc]
    out["df_e"] = np.bincount(prob_cc, weights=n_cc - 1, minlength=n_p)
    out["ss_e"] = np.bincount(prob, weights=(y - mean_cc[cc]) ** 2, minlength=n_p)
    if nested:
        inv = np.bincount(cc, weights=1.0 / n_val, minlength=n_cc_groups) / np.maximum(n_cc, 1)
        out["h_num"] = np.bincount(prob_cc, weights=(n_cc - 1) * inv, minlength=n_p)
    # 2. campaign
    cell_of_cc, n_cells = group_codes(frame.iloc[first_cc], ["problem", "test", "solution"])
    C = np.bincount(cell_of_cc, minlength=n_cells).astype(float)
    cell_mean = np.bincount(cell_of_cc, weights=mean_cc, minlength=n_cells) / np.maximum(C, 1)
    inv_n_sum = np.bincount(cell_of_cc, weights=1.0 / np.maximum(n_cc, 1), minlength=n_cells)
    b_ss = np.bincount(cell_of_cc, weights=(mean_cc - cell_mean[cell_of_cc]) ** 2, minlength=n_cells)
    first_cell = first_rows(cell_of_cc, n_cells)
    p = prob_cc[first_cell]  # problem of every cell
    multi = C >= 2
    out["df_c"] = np.bincount(p[multi], weights=C[multi] - 1, minlength=n_p)
    out["ss_c"] = np.bincount(p[multi], weights=b_ss[multi], minlength=n_p)
    out["corr_c"] = np.bincount(p[multi], weights=((C - 1) * inv_n_sum / C)[multi], minlength=n_p)
    # 4. two-way on cell means within problems
    cells = frame.iloc[first_cc[first_cell]][unit + ["test", "solution"]].reset_index(drop=True)
    pt, n_pt = group_codes(cells, unit + ["test"])
    ps, n_ps = group_codes(cells, unit + ["solution"])
    T_all = np.bincount(p[first_rows(pt, n_pt)], minlength=n_p)
    complete_s = np.bincount(ps, minlength=n_ps) == T_all[p[first_rows(ps, n_ps)]]
    keep = complete_s[ps]
    out["n_kept"] = np.bincount(p[keep], minlength=n_p).astype(float)
    out["inv_c"] = np.bincount(p[keep], weights=1.0 / C[keep], minlength=n_p)
    out["inv_n"] = np.bincount(p[keep], weights=inv_n_sum[keep] / C[keep] ** 2, minlength=n_p)
    p, pt, ps, m = p[keep], pt[keep], ps[keep], cell_mean[keep]
    T = np.bincount(p[first_rows(pt, n_pt)[np.bincount(pt, minlength=n_pt) > 0]], minlength=n_p).astype(float)
    S = np.bincount(p[first_rows(ps, n_ps)[np.bincount(ps, minlength=n_ps) > 0]], minlength=n_p).astype(float)
    n_cell_p = np.bincount(p, minlength=n_p)
    M = np.bincount(p, weights=m, minlength=n_p) / np.maximum(n_cell_p, 1)
    mt = np.bincount(pt, weights=m, minlength=n_pt) / np.maximum(np.bincount(pt, minlength=n_pt), 1)
    ms = np.bincount(ps, weights=m, minlength=n_ps) / np.maximum(np.bincount(ps, minlength=n_ps), 1)
    out["ss_res"] = np.bincount(p, weights=(m - mt[pt] - ms[ps] + M[p]) ** 2, minlength=n_p)
    out["ss_t"] = np.bincount(p, weights=(mt[pt] - M[p]) ** 2, minlength=n_p)  # = S_p sum_t (mt - M)^2
    out["ss_s"] = np.bincount(p, weights=(ms[ps] - M[p]) ** 2, minlength=n_p)
    out["T"], out["S"], out["M"], out["present"] = T, S, M, n_cell_p > 0
    table = frame.iloc[first_rows(prob, n_p)][unit].reset_index(drop=True) if n_p else frame[unit].iloc[:0]
    for name, values in out.items():
        table[name] = values
    return table


def _pos_array(x) -> np.ndarray:
    """:func:`_pos` element-wise (negative estimates truncated at 0, NaN kept)."""
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), np.maximum(x, 0.0), np.nan)


def _ratio(num, den) -> np.ndarray:
    """num / den where den > 0, else NaN (element-wise)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _within_problem_estimates(c: dict, nested: bool) -> dict:
    """Steps 0-4 of :func:`variance_components` from sums ``c`` (arrays: one entry per unit).

    A unit is either the whole corpus (every entry the sum over problems: the pooled estimators) or one
    problem (the raw per-problem partials: that problem's own estimators). One code path for both, so the
    pooled and the per-problem components are the same formulas.
    """
    out = {}
    zero = np.zeros_like(np.asarray(c["df_e"], dtype=float))
    s2_w = _ratio(c["ss_w"], c["df_w"]) if nested else zero + np.nan
    s2_e = _ratio(c["ss_e"], c["df_e"])
    if nested:
        # E[s2 of process means] = s2_run + s2_w * h, h = the df-weighted mean over cells of mean_k(1 / n_k)
        h = _ratio(c["h_num"], c["df_e"])
        s2_run = np.where(c["df_e"] > 0, _pos_array(s2_e - np.nan_to_num(s2_w) * h), np.nan)
    else:
        s2_run = zero + np.nan
    e_used = np.nan_to_num(s2_e)
    s2_c = np.where(c["df_c"] > 0, _pos_array(_ratio(c["ss_c"] - e_used * c["corr_c"], c["df_c"])), np.nan)
    c_used = np.nan_to_num(s2_c)
    v_bar = np.where(c["n_kept"] > 0, _ratio(c_used * c["inv_c"] + e_used * c["inv_n"], c["n_kept"]), 0.0)
    has_res = c["df_res"] > 0
    ms_ts = np.where(has_res, _ratio(c["ss_res"], c["df_res"]), v_bar)  # one test or solution: v_bar
    s2_ts = np.where(has_res, _pos_array(ms_ts - v_bar), np.nan)
    s2_t = np.where(c["df_t"] > 0, _pos_array(_ratio(c["ss_t"] - c["df_t"] * ms_ts, c["t_s"])), np.nan)
    s2_s = np.where(c["df_s"] > 0, _pos_array(_ratio(c["ss_s"] - c["df_s"] * ms_ts, c["s_t"])), np.nan)
    out.update(s2_w=s2_w, s2_e=s2_e, s2_run=s2_run, s2_c=s2_c, ms_ts=ms_ts, s2_ts=s2_ts, s2_t=s2_t, s2_s=s2_s)
    return out


def _partial_sums(partials: pd.DataFrame, nested: bool) -> dict:
    """The per-problem columns the estimators need (the design's degrees of freedom derived per problem)."""
    names = ["df_e", "ss_e", "df_c", "ss_c", "corr_c", "n_kept", "inv_c", "inv_n", "ss_res", "ss_t", "ss_s"]
    names += ["df_w", "ss_w", "h_num"] if nested else []
    c = {name: partials[name].to_numpy(dtype=float) for name in names}
    T, S = (partials[col].to_numpy(dtype=float) for col in ("T", "S"))
    present = partials["present"].to_numpy(dtype=bool)
    c["df_res"] = np.where(present, (T - 1) * (S - 1), 0.0)
    c["df_t"] = np.where(present, T - 1, 0.0)
    c["df_s"] = np.where(present, S - 1, 0.0)
    c["t_s"], c["s_t"] = (T - 1) * S, (S - 1) * T
    return c


def variance_from_partials(partials: pd.DataFrame, *, n_boot: int = 0, level: float = 0.95,
                           seed: int | None = 0) -> VarianceComponents:
    """:func:`variance_components` from per-problem sufficient statistics (:func:`variance_partials`).

    ``partials`` may be the concatenation of the tables of disjoint sets of problems (partitions); its row
    order is the order of the per-problem terms in the sums (use problem order for results that do not depend
    on how problems were grouped).

    Besides the pooled estimators, every problem's own components are computed from its own row (the same
    formulas on that problem's sums; ``VarianceComponents.per_problem``) and each within-problem share is
    summarised by its median over problems with a cluster-bootstrap CI over problems (``n_boot`` resamples;
    0: no interval) -- the robust summary that one very noisy problem cannot drive to 0 (see
    :class:`VarianceComponents`).
    """
    nested = "df_w" in partials.columns
    per = _partial_sums(partials, nested)
    pooled = _within_problem_estimates({k: np.array([float(np.sum(v))]) for k, v in per.items()}, nested)
    s2_w, s2_e, s2_run, s2_c, ms_ts, s2_ts, s2_t, s2_s = (
        float(pooled[k][0]) for k in ("s2_w", "s2_e", "s2_run", "s2_c", "ms_ts", "s2_ts", "s2_t", "s2_s"))
    values_per_run = math.nan
    if nested:
        n_proc = float(np.sum(partials["n_proc"].to_numpy(dtype=float)))
        values_per_run = float(np.sum(partials["sum_values"].to_numpy(dtype=float))) / n_proc if n_proc > 0 \
            else math.nan
    df_w, df_e = (float(np.sum(per[k])) if k in per else math.nan for k in ("df_w", "df_e"))
    df_c, df_res, df_t, df_s = (float(np.sum(per[k])) for k in ("df_c", "df_res", "df_t", "df_s"))
    # 5. problem
    T, S, M = (partials[c].to_numpy(dtype=float) for c in ("T", "S", "M"))
    present = partials["present"].to_numpy(dtype=bool)
    n_prob = int(present.sum())
    if n_prob >= 2:
        Tp, Sp = T[present], S[present]
        expected = np.mean(np.nan_to_num(s2_t) / Tp + np.nan_to_num(s2_s) / Sp + ms_ts / (Tp * Sp))
        s2_p = _pos(np.var(M[present], ddof=1) - expected)
    else:
        s2_p = math.nan
    if nested:
        names = COMPONENTS[:-1] + ("run", "repeat")
        variances = np.array([s2_p, s2_t, s2_s, s2_ts, s2_c, s2_run, s2_w], dtype=float)
        dfs = [n_prob - 1, df_t, df_s, df_res, df_c, df_e, df_w]
    else:
        names = COMPONENTS
        variances = np.array([s2_p, s2_t, s2_s, s2_ts, s2_c, s2_e], dtype=float)
        dfs = [n_prob - 1, df_t, df_s, df_res, df_c, df_e]
    total = np.nansum(variances)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = (np.where(np.isfinite(variances), variances / total, np.nan) if total > 0
                  else np.full(len(variances), np.nan))
    table = pd.DataFrame({"component": names, "variance": variances, "share": shares, "df": dfs})
    per_problem, robust, split = _robust_shares(partials, _within_problem_estimates(per, nested), nested,
                                                n_boot=n_boot, level=level, seed=seed)
    table = table.merge(robust, on="component", how="left")
    return VarianceComponents(table, n_prob, float(np.mean(T[present])) if n_prob else math.nan,
                              float(np.mean(S[present])) if n_prob else math.nan,
                              values_per_run if nested else None, per_problem=per_problem,
                              between_process=split)


def _robust_shares(partials: pd.DataFrame, est: dict, nested: bool, *, n_boot: int, level: float,
                   seed) -> tuple[pd.DataFrame, pd.DataFrame, Interval | None]:
    """Per-problem within-problem components and shares; their medians over problems with CIs.

    A problem's within-problem share of a component is its variance over the sum of that problem's
    estimable within-problem components (test, solution, test:solution, campaign[, run], repeat; the
    problem level is a between-problem quantity). Clusters of the bootstrap are the problems, numbered
    by their sorted ids (``partials`` is in problem order, :func:`variance_partials`).
    """
    within = [("test", "s2_t"), ("solution", "s2_s"), ("test:solution", "s2_ts"), ("campaign", "s2_c")]
    within += [("run", "s2_run"), ("repeat", "s2_w")] if nested else [("repeat", "s2_e")]
    present = partials["present"].to_numpy(dtype=bool)
    variances = np.column_stack([est[key] for _, key in within]) if len(partials) else np.zeros((0, len(within)))
    variances[~present] = np.nan
    total = np.nansum(variances, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(np.isfinite(variances) & (total[:, None] > 0), variances / total[:, None], np.nan)
    per_problem = pd.DataFrame({"problem": partials["problem"].to_numpy()})
    for j, (name, _) in enumerate(within):
        per_problem[f"{name}_variance"] = variances[:, j]
        per_problem[f"{name}_share"] = shares[:, j]
    clusters = np.arange(len(partials))
    rows = []
    for j, (name, _) in enumerate(within):
        finite = np.isfinite(shares[:, j])
        ci = cluster_bootstrap_ci(shares[:, j], clusters, statistic="median", n_boot=n_boot, level=level,
                                  seed=seed)
        rows.append({"component": name, "median_share": ci.estimate, "median_share_low": ci.low,
                     "median_share_high": ci.high, "n_share": int(finite.sum()),
                     "positive_share": float(np.mean(shares[finite, j] > 0)) if finite.any() else math.nan})
    split = None
    if nested:
        run, rep = est["s2_run"], est["s2_w"]
        with np.errstate(invalid="ignore", divide="ignore"):
            between = np.where(present & np.isfinite(run) & np.isfinite(rep) & (run + rep > 0),
                               run / (run + rep), np.nan)
        per_problem["between_process_share"] = between
        split = cluster_bootstrap_ci(between, clusters, statistic="median", n_boot=n_boot, level=level, seed=seed)
    return per_problem, pd.DataFrame(rows), split


def repeats_for_reliability(components: VarianceComponents, *, target: float = 0.9,
                            n_tests: float | None = None) -> float:
    """Repeats per (test, solution) needed for a target reliability of the per-problem score.

    Uses the solution's mean log duration over its problem's T optimization
    tests as the per-problem score. Its between-solution (true) variance is
    s2_S + s2_TS / T and the error variance with n repeats s2_e / (n T), so

        R(n) = sig / (sig + s2_e / (n T)),  sig = s2_S + s2_TS / T,

    which is the Spearman-Brown prophecy from the single-repeat reliability
    R1 = sig / (sig + s2_e / T). Solving R(n) >= target:

        n = ceil(target * s2_e / ((1 - target) * T * sig)),  at least 1.

    Returns ``inf`` when sig = 0 (no repeat count makes the score reliable)
    and NaN when the repeat variance is unknown (one repeat per cell).

    Nested repeats (``components.nested``): the unit that is repeated is the
    process. With m values per process (``values_per_run``) one process mean
    has error variance s2_e = s2_run + s2_repeat / m, and n counts processes
    (more values inside one process cannot remove the between-process part).

    Examples
    --------
    >>> vc = VarianceComponents(pd.DataFrame({"component": list(COMPONENTS),
    ...     "variance": [1.0, 1.0, 0.01, 0.0, np.nan, 0.04], "share": np.nan, "df": 1}), 10, 4.0, 10.0)
    >>> repeats_for_reliability(vc, target=0.9)   # 0.9*0.04 / (0.1*4*0.01) = 9
    9.0
    """
    if not 0 < target < 1:
        raise ValueError(f"target reliability must lie in (0, 1), got {target}")
    T = components.mean_tests if n_tests is None else float(n_tests)
    s2_e = components.variance("repeat")
    if getattr(components, "nested", False):
        s2_e = components.variance("run") + s2_e / components.values_per_run
    if not (np.isfinite(s2_e) and np.isfinite(T) and T > 0):
        return math.nan
    sig = np.nan_to_num(components.variance("solution")) + np.nan_to_num(components.variance("test:solution")) / T
    if s2_e == 0:
        return 1.0
    if sig <= 0:
        return math.inf
    return float(max(1, math.ceil(target * s2_e / ((1 - target) * T * sig) - 1e-9)))


def repeats_for_precision(cv: float, *, width: float = 0.05, level: float = 0.95) -> float:
    """Repeats needed so that the CI of one (solution, test) mean is ``width`` wide (relative).

    A mean of n repeats with coefficient of variation cv has a normal-theory CI
    of full relative width 2 z cv / sqrt(n); requiring it to be <= w gives

        n = ceil(4 z^2 cv^2 / w^2),   z = Phi^-1((1 + level) / 2).

    Examples
    --------
    >>> repeats_for_precision(0.08, width=0.05)   # 4 * 1.96^2 * 0.0064 / 0.0025 = 39.3
    40.0
    """
    if not width > 0:
        raise ValueError(f"width must be > 0, got {width}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if not np.isfinite(cv):
        return math.nan
    z = sps.norm.ppf((1 + level) / 2)
    return float(max(1, math.ceil(4 * z**2 * cv**2 / width**2 - 1e-9)))


# --------------------------------------------------------------------------- significance


@dataclass(frozen=True)
class PairSignificance:
    """Which "faster" pairs of solutions are significantly faster.

    ``pairs``: ``problem, faster, slower, median_faster, median_slower, U,
    pvalue, qvalue, significant`` per tested pair. ``share``: share of tested
    pairs significant at the FDR level, CI over problems. ``n_pairs`` = pairs
    with a strict median order, ``n_tested`` <= ``max_pairs`` of them; ``n_tied`` = pairs of solutions of one
    problem whose medians tie (none faster: not tested).
    """

    pairs: pd.DataFrame = field(repr=False)
    share: Interval
    n_pairs: int
    n_tested: int
    n_repeats: int
    alpha: float
    n_tied: int = 0

    def to_frame(self) -> pd.DataFrame:
        return self.pairs

    def to_dict(self) -> dict:
        return {"share_significant": self.share.to_dict(), "n_pairs": self.n_pairs, "n_tested": self.n_tested,
                "n_repeats": self.n_repeats, "alpha": self.alpha,
                "test": "one-sided Mann-Whitney U (exact) over repeats, Benjamini-Hochberg FDR"}

    def summary(self) -> str:
        return (f"{self.share.estimate:.1%} of {self.n_tested} faster pairs significantly faster "
                f"(BH q <= {self.alpha}, {self.n_repeats} repeats)")


def _bh(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (step-up), vectorised."""
    n = len(p)
    if n == 0:
        return p
    order = np.argsort(p)
    ranked = p[order] * n / np.arange(1, n + 1)
    adj = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(n)
    out[order] = np.minimum(adj, 1.0)
    return out


def _row_keys(mat: np.ndarray) -> np.ndarray:
    """A 64-bit key of each row's float values (splitmix64 over their bits, in column order)."""
    bits = np.ascontiguousarray(mat, dtype=np.float64).view(np.uint64)
    key = np.full(len(mat), GOLDEN, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(bits.shape[1]):
            key = finalize64(key ^ bits[:, j])
    return key


def pairwise_significance(
    scores: pd.DataFrame,
    *,
    value: str = "q",
    alpha: float = 0.05,
    max_pairs: int = 200_000,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> PairSignificance:
    """Is the faster of two solutions of one problem significantly faster?

    For every pair of solutions (a, b) of one problem (of one reference pool,
    when ``scores`` has a ``pool_language``: :func:`per_repeat_scores`) whose median per-repeat
    score differs, a is the "faster" one (lower median). H0: a's and b's
    repeats come from one distribution; H1: a's are stochastically smaller.
    Test: exact one-sided Mann-Whitney U over the repeats (scipy, vectorised
    over all pairs; ties count 1/2 in U, the exact null ignores them, which
    is conservative for ties). Multiple testing: Benjamini-Hochberg over all
    tested pairs, significant when q <= ``alpha`` (we estimate a share of
    true discoveries, so FDR rather than family-wise control).

    Only solutions with the modal number of scored repeats take part (the
    exact test is vectorised over equal sample sizes). When a corpus has more
    than ``max_pairs`` ordered pairs, a seeded uniform sample of them is
    tested (the share is a proportion: 2*10^5 pairs pin it to +-0.2 %).
    With fewer than two repeats nothing can be tested and the share is NaN.

    Parameters
    ----------
    scores : DataFrame
        ``problem, solution, repeat`` and ``value`` (lower = faster), e.g.
        :func:`per_repeat_scores`.

    Examples
    --------
    >>> s = pd.DataFrame({"problem": "p", "solution": np.repeat(["a", "b"], 5), "repeat": list(range(5)) * 2,
    ...                   "q": [0.1, 0.12, 0.11, 0.13, 0.1, 0.5, 0.52, 0.49, 0.51, 0.5]})
    >>> r = pairwise_significance(s, n_boot=10)
    >>> float(r.pairs["pvalue"][0]).__round__(4), bool(r.pairs["significant"][0])
    (0.004, True)
    """
    _require(scores, ["problem", "solution", value], "pairwise_significance")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    x_all = snap(scores[value].to_numpy(dtype=float))  # equal rationals compare equal (stats._ties)
    sc = scores.loc[np.isfinite(x_all)]
    x_all = x_all[np.isfinite(x_all)]
    codes, n_sol = group_codes(sc, ["problem", "solution"])
    counts = np.bincount(codes, minlength=n_sol)
    empty = PairSignificance(pd.DataFrame(columns=["problem", "faster", "slower", "median_faster", "median_slower",
                                                   "U", "pvalue", "qvalue", "significant"]),
                             Interval(math.nan, math.nan, math.nan, 0, level), 0, 0, 0, alpha)
    if n_sol == 0:
        return empty
    R = int(np.bincount(counts).argmax())
    if R < 2:
        return PairSignificance(empty.pairs, empty.share, 0, 0, R, alpha)
    use_sol = counts == R
    rows = use_sol[codes]
    codes_u, x_u = codes[rows], x_all[rows]
    sol_ids = np.flatnonzero(use_sol)
    remap = np.full(n_sol, -1)
    remap[sol_ids] = np.arange(len(sol_ids))
    cu = remap[codes_u]
    order = grouped_order(x_u, cu)
    mat = x_u[order].reshape(len(sol_ids), R)  # sorted repeats per solution
    med = np.median(mat, axis=1)
    first = first_rows(codes, n_sol)[sol_ids]
    # pairs within a reference pool (per_repeat_scores' pool_language): a C++ and a Python solution's scores are
    # read in different pools, and whether one is "faster" than the other is no question any score asks
    unit = ["problem", "pool_language"] if "pool_language" in sc.columns else ["problem"]
    sol_frame = sc.iloc[first][["solution"] + unit].reset_index(drop=True)
    prob, n_prob = group_codes(sol_frame, unit)
    # Pairs within problems: solutions in blocks of their problem, enumerate i < j in each block. Problems and
    # the solutions within one are ordered by their data (a hash of the sorted repeat scores), not their names,
    # so the seeded sample of pairs (more than ``max_pairs``) and the bootstrap over problems pick the same
    # pairs and problems whatever the names (equal keys: equal data, whose order changes nothing)
    sol_key = _row_keys(mat)
    prob_key = np.zeros(n_prob, dtype=np.uint64)
    np.add.at(prob_key, prob, sol_key)  # order-free within the problem (wraps modulo 2^64)
    p_order = np.lexsort((np.arange(n_prob), prob_key))
    prob = np.argsort(p_order)[prob]  # problem codes in data order
    by_p = np.lexsort((sol_key, prob))
    size = np.bincount(prob, minlength=n_prob)
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    end = (start + size)[prob[by_p]]
    pos = np.arange(len(by_p))
    partners = end - pos - 1
    n_all = int(partners.sum())
    if n_all == 0:
        return PairSignificance(empty.pairs, empty.share, 0, 0, R, alpha)
    rng = np.random.default_rng(seed)
    ends = np.cumsum(partners)
    pick = np.arange(n_all) if n_all <= max_pairs else np.sort(rng.choice(n_all, max_pairs, replace=False))
    owner = np.searchsorted(ends, pick, side="right")  # position (in by_p) of the pair's first solution
    b_pos = owner + 1 + (pick - (ends[owner] - partners[owner]))
    a, b = by_p[owner], by_p[b_pos]
    strict = med[a] != med[b]
    a, b = a[strict], b[strict]
    n_pairs_est = int(round(len(a) * n_all / len(pick)))
    n_tied = int(round((len(pick) - len(a)) * n_all / len(pick)))
    swap = med[a] > med[b]
    fast = np.where(swap, b, a)
    slow = np.where(swap, a, b)
    if len(fast) == 0:
        return PairSignificance(empty.pairs, empty.share, 0, 0, R, alpha, n_tied)
    res = sps.mannwhitneyu(mat[fast], mat[slow], axis=1, alternative="less", method="exact")
    pval = np.asarray(res.pvalue, dtype=float)
    qval = _bh(pval)
    sig = qval <= alpha
    pairs = pd.DataFrame({
        "problem": sol_frame["problem"].to_numpy()[fast],
        "faster": sol_frame["solution"].to_numpy()[fast],
        "slower": sol_frame["solution"].to_numpy()[slow],
        "median_faster": med[fast], "median_slower": med[slow],
        "U": np.asarray(res.statistic, dtype=float), "pvalue": pval, "qvalue": qval, "significant": sig,
    })
    share = cluster_bootstrap_ci(sig.astype(float), prob[fast], statistic="mean", n_boot=n_boot, level=level,
                                 seed=seed)
    return PairSignificance(pairs, share, n_pairs_est, len(pairs), R, alpha, n_tied)
