"""Discriminability: do a problem's tests separate fast from slow solutions?

Definitions (DESIGN.md, "Definitions"; issue 5):

* **Test median** of an optimization test = the median of its reference pool
  (one duration per correct reference: the median of its ``ok`` repeats).
* **Robust CV** of a problem = IQR / median of its optimization tests' test
  medians: the spread of workload *across tests*. MAD variant:
  2 * MAD / median (IQR = 2 MAD for a symmetric distribution, so both live on
  one scale and share the 0.3 threshold). A problem is **duration-filterable**
  when robust CV >= 0.3. With fewer than two optimization tests the spread is
  undefined (NaN, not filterable).
* **Noise-aware robust CV** discounts the part of the across-test spread that
  repeat noise alone would produce (see :func:`noise_aware_robust_cv`).
* **Strong-vs-weak gap** = mean score (100*q) of the slowest quartile of
  references minus that of the fastest quartile, the quartiles taken from
  other repeats than the scores (see :func:`strong_weak_gap`).
* **Near floor**: an optimization test whose test median is <= 2x the
  sandbox floor (the median duration of the empty program, ``floor`` rows):
  its ranks are start-up noise.

Vectorised over problems and tests (sorts + ``np.bincount``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from stats._groups import canonical_order, first_rows, group_codes, grouped_median, grouped_order
from stats._ties import snap, tail_weights
from stats.bootstrap import Interval, bootstrap_ci
from stats.reliability import correct_reference_mask, correct_reference_rows, log_duration_icc

__all__ = ["sandbox_floor", "test_table", "robust_cv", "noise_aware_robust_cv", "StrongWeakGap", "strong_weak_gap",
           "test_discrimination"]

_IQR_PER_SD = 1.3489795003921634  # IQR of a standard normal


def grouped_quantile(codes: np.ndarray, values: np.ndarray, n_groups: int, q: float) -> np.ndarray:
    """Quantile ``q`` of ``values`` per group, numpy's default ("linear") rule.

    For a group's sorted values x_0..x_{n-1}: h = q (n - 1), result
    x_floor(h) + (h - floor(h)) (x_ceil(h) - x_floor(h)). Empty groups: NaN.

    Examples
    --------
    >>> grouped_quantile(np.array([0, 0, 0, 1]), np.array([3.0, 1.0, 2.0, 5.0]), 2, 0.25).tolist()
    [1.5, 5.0]
    """
    out = np.full(n_groups, np.nan)
    if len(values) == 0:
        return out
    order = grouped_order(values, codes)
    v = values[order]
    counts = np.bincount(codes, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    has = counts > 0
    h = q * (counts[has] - 1)
    lo = np.floor(h).astype(np.int64)
    hi = np.minimum(lo + 1, counts[has] - 1)
    frac = h - lo
    base = starts[has]
    out[has] = v[base + lo] + frac * (v[base + hi] - v[base + lo])
    return out


def sandbox_floor(corpus: pd.DataFrame, *, by_language: bool = True) -> pd.DataFrame:
    """Sandbox floor per (environment, campaign[, language]): median of ``ok`` floor rows.

    Each language has its own floor (its empty program: a Python start-up
    costs ~10-30 ms, a C++ one ~1 ms), so with a ``language`` column and
    ``by_language`` the floor is per language.

    Returns
    -------
    DataFrame with ``environment, campaign, [language,] floor_s, n`` (only
    runs that have floor rows).

    Examples
    --------
    >>> runs = pd.DataFrame({"environment": "e", "campaign": "c", "role": "floor", "status": "ok",
    ...                      "duration_s": [0.03, 0.031, 0.05]})
    >>> sandbox_floor(runs)["floor_s"].tolist()
    [0.031]
    """
    keys = [c for c in ("environment", "campaign") if c in corpus.columns]
    if by_language and "language" in corpus.columns:
        keys.append("language")
    if "role" not in corpus.columns:
        return pd.DataFrame(columns=keys + ["floor_s", "n"])
    d = corpus["duration_s"].to_numpy(dtype=float)
    mask = (corpus["role"] == "floor").to_numpy() & (corpus["status"] == "ok").to_numpy() & np.isfinite(d)
    rows = corpus.loc[mask]
    codes, n = group_codes(rows, keys)
    out = rows.iloc[first_rows(codes, n)][keys].reset_index(drop=True)
    out["floor_s"] = grouped_median(codes, d[mask], n)
    out["n"] = np.bincount(codes, minlength=n)
    return out


def test_table(run: pd.DataFrame, *, pools: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per optimization test of one run, from its correct references.

    Columns: ``problem, test, n_refs, median_s`` (median of the reference
    medians), ``log_noise_var`` (estimated repeat-noise variance of log
    ``median_s``, see :func:`noise_aware_robust_cv`), ``median_repeat_cv``
    (median over the test's cells) and ``spread`` (IQR / median of the
    references' medians on the test; NaN with one reference).

    Parameters
    ----------
    run : DataFrame
        Executions of one environment and campaign (``floor`` and candidate
        rows are ignored).
    pools : DataFrame, optional
        ``stats.ranking.reference_pools(run)`` when the caller already has it:
        its cell medians are reused instead of sorting every execution again.
    """
    d = run["duration_s"].to_numpy(dtype=float)
    mask = (run["status"] == "ok").to_numpy() & np.isfinite(d) & (d > 0) & correct_reference_mask(run)
    refs = run.loc[mask]
    # Reduce in a canonical row order: grouped sums are then bit-identical for any row order.
    order = canonical_order(refs, ["problem", "test", "solution"])
    refs = refs.iloc[order]
    d, mask = d[mask][order], np.ones(len(order), dtype=bool)
    logd = np.log(d)
    cell, n_cell = group_codes(refs, ["problem", "test", "solution"])
    if pools is None:
        cell_med = grouped_median(cell, d[mask], n_cell)
    else:
        cell_med = _pool_medians(refs.iloc[first_rows(cell, n_cell)], pools)
    n_rep = np.bincount(cell, minlength=n_cell).astype(float)
    lmean = np.bincount(cell, weights=logd, minlength=n_cell) / np.maximum(n_rep, 1)
    lss = np.bincount(cell, weights=(logd - lmean[cell]) ** 2, minlength=n_cell)
    with np.errstate(invalid="ignore", divide="ignore"):
        lvar = np.where(n_rep >= 2, lss / (n_rep - 1), np.nan)
    cells = refs.iloc[first_rows(cell, n_cell)][["problem", "test"]].reset_index(drop=True)
    t, n_t = group_codes(cells, ["problem", "test"])
    out = cells.iloc[first_rows(t, n_t)].reset_index(drop=True)
    out["n_refs"] = np.bincount(t, minlength=n_t)
    out["median_s"] = grouped_median(t, cell_med, n_t)
    # Noise of one reference's median of R repeats: (pi/2) s2 / R (asymptotic efficiency of the median).
    per_cell_noise = (np.pi / 2) * lvar / np.maximum(n_rep, 1)
    finite = np.isfinite(per_cell_noise)
    n_fin = np.bincount(t[finite], minlength=n_t)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["log_noise_var"] = np.where(
            n_fin > 0, np.bincount(t[finite], weights=per_cell_noise[finite], minlength=n_t) / n_fin, np.nan)
    # Repeat CV per cell (raw scale, ddof=1) and its median per test.
    raw = d[mask]
    mean = np.bincount(cell, weights=raw, minlength=n_cell) / np.maximum(n_rep, 1)
    ss = np.bincount(cell, weights=(raw - mean[cell]) ** 2, minlength=n_cell)
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.where(n_rep >= 2, np.sqrt(ss / np.maximum(n_rep - 1, 1)) / mean, np.nan)
    fin = np.isfinite(cv)
    out["median_repeat_cv"] = grouped_median(t[fin], cv[fin], n_t)
    # Spread of the references on the test: IQR / median of their medians.
    with np.errstate(invalid="ignore", divide="ignore"):
        out["spread"] = np.where(
            out["n_refs"].to_numpy() >= 2,
            (grouped_quantile(t, cell_med, n_t, 0.75) - grouped_quantile(t, cell_med, n_t, 0.25))
            / out["median_s"].to_numpy(), np.nan)
    return out


def _pool_medians(cells: pd.DataFrame, pools: pd.DataFrame) -> np.ndarray:
    """Each cell's duration in ``pools`` (NaN when absent), aligned by (problem, test, solution)."""
    keys = ["problem", "test", "solution"]
    joined = pd.concat([cells[keys].reset_index(drop=True), pools[keys].reset_index(drop=True)], ignore_index=True)
    codes, n = group_codes(joined, keys)
    lookup = np.full(n, np.nan)
    lookup[codes[len(cells):]] = pools["duration_s"].to_numpy(dtype=float)
    return lookup[codes[: len(cells)]]


def robust_cv(tests: pd.DataFrame, *, method: str = "iqr", threshold: float = 0.3,
              min_tests: int = 2) -> pd.DataFrame:
    """Robust CV of every problem across its optimization tests' medians.

    iqr: (Q3 - Q1) / median; mad: 2 * median(|x - median|) / median, over the
    problem's test medians x (quantiles with numpy's linear rule).

    Parameters
    ----------
    tests : DataFrame
        ``problem, median_s`` per test (see :func:`test_table`).
    method : {"iqr", "mad"}
    threshold : float, default 0.3
        ``filterable`` = robust_cv >= threshold.
    min_tests : int, default 2
        Fewer tests give NaN (no spread to measure) and ``filterable=False``.

    Returns
    -------
    DataFrame: ``problem, n_tests, median_s, robust_cv, filterable``.

    Examples
    --------
    >>> t = pd.DataFrame({"problem": "p", "median_s": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> robust_cv(t)["robust_cv"].tolist()   # (4 - 2) / 3
    [0.6666666666666666]
    """
    if method not in ("iqr", "mad"):
        raise ValueError(f"method must be 'iqr' or 'mad', got {method!r}")
    x = tests["median_s"].to_numpy(dtype=float)
    keep = np.isfinite(x)
    frame = tests.loc[keep]
    x = x[keep]
    p, n_p = group_codes(frame, ["problem"])
    n = np.bincount(p, minlength=n_p)
    med = grouped_quantile(p, x, n_p, 0.5)
    if method == "iqr":
        spread = grouped_quantile(p, x, n_p, 0.75) - grouped_quantile(p, x, n_p, 0.25)
    else:
        spread = 2.0 * grouped_quantile(p, np.abs(x - med[p]), n_p, 0.5)
    with np.errstate(invalid="ignore", divide="ignore"):
        rcv = np.where((n >= min_tests) & (med > 0), spread / med, np.nan)
    out = frame.iloc[first_rows(p, n_p)][["problem"]].reset_index(drop=True)
    out["n_tests"] = n
    out["median_s"] = med
    out["robust_cv"] = rcv
    out["filterable"] = np.nan_to_num(rcv, nan=-np.inf) >= threshold
    return out


def noise_aware_robust_cv(tests: pd.DataFrame, *, method: str = "iqr", threshold: float = 0.3,
                          min_tests: int = 2) -> pd.DataFrame:
    """Robust CV with the part explained by repeat noise discounted.

    On the log scale, the across-test spread of the test medians is
    s2_obs = (IQR(log median_s) / 1.349)^2 (a robust variance). Repeat noise
    alone moves a test's median by about the noise of its middle reference's
    median of R repeats, v_t = (pi/2) * mean_s(s2_ts / R_ts), s2_ts the
    within-cell variance of log duration (``log_noise_var`` of
    :func:`test_table`; conservative: when the references are tighter than
    the noise the median averages some of it away). The signal share of the
    spread is f = sqrt(max(1 - mean_t(v_t) / s2_obs, 0)), and

        noise_aware_robust_cv = robust_cv * f.

    So a noise-free corpus keeps its robust CV, and a problem whose tests
    differ only by repeat noise goes to 0. Noise that persists across repeats
    (a cell that ran while the machine was slow) is not seen by this
    correction; the busy-environment findings of the reliability audit catch
    that.

    Returns
    -------
    :func:`robust_cv`'s frame plus ``noise_share`` (mean v_t / s2_obs, capped
    at 1), ``noise_aware_robust_cv`` and ``filterable_noise_aware``.
    """
    out = robust_cv(tests, method=method, threshold=threshold, min_tests=min_tests)
    x = tests["median_s"].to_numpy(dtype=float)
    keep = np.isfinite(x) & (x > 0)
    frame = tests.loc[keep]
    p, n_p = group_codes(frame, ["problem"])
    lx = np.log(x[keep])
    iqr = grouped_quantile(p, lx, n_p, 0.75) - grouped_quantile(p, lx, n_p, 0.25)
    s2_obs = (iqr / _IQR_PER_SD) ** 2
    nv = frame["log_noise_var"].to_numpy(dtype=float) if "log_noise_var" in frame.columns else np.zeros(len(frame))
    fin = np.isfinite(nv)
    cnt = np.bincount(p[fin], minlength=n_p)
    noise = np.where(cnt > 0, np.bincount(p[fin], weights=nv[fin], minlength=n_p) / np.maximum(cnt, 1), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(s2_obs > 0, np.minimum(noise / s2_obs, 1.0), np.where(noise > 0, 1.0, 0.0))
    names = frame.iloc[first_rows(p, n_p)]["problem"].astype(str).to_numpy()
    lookup = pd.Series(share, index=names)
    out["noise_share"] = lookup.reindex(out["problem"].astype(str).to_numpy()).to_numpy()
    factor = np.sqrt(np.clip(1.0 - out["noise_share"].to_numpy(dtype=float), 0.0, 1.0))
    out["noise_aware_robust_cv"] = out["robust_cv"].to_numpy(dtype=float) * factor
    out["filterable_noise_aware"] = np.nan_to_num(out["noise_aware_robust_cv"].to_numpy(), nan=-np.inf) >= threshold
    return out


def near_floor(tests: pd.DataFrame, floor_s: float, *, factor: float = 2.0) -> pd.DataFrame:
    """Share of each problem's optimization tests whose median is <= factor x floor.

    Returns
    -------
    DataFrame ``problem, n_tests, n_near_floor, near_floor_share`` (NaN
    shares when ``floor_s`` is unknown).

    Examples
    --------
    >>> t = pd.DataFrame({"problem": "p", "median_s": [0.05, 0.055, 0.5]})
    >>> near_floor(t, 0.03)["near_floor_share"].round(4).tolist()
    [0.6667]
    """
    if factor <= 0:
        raise ValueError(f"factor must be > 0, got {factor}")
    x = tests["median_s"].to_numpy(dtype=float)
    p, n_p = group_codes(tests, ["problem"])
    n = np.bincount(p, minlength=n_p)
    out = tests.iloc[first_rows(p, n_p)][["problem"]].reset_index(drop=True)
    out["n_tests"] = n
    if floor_s is None or not np.isfinite(floor_s):
        out["n_near_floor"] = np.nan
        out["near_floor_share"] = np.nan
        return out
    near = np.isfinite(x) & (x <= factor * floor_s)
    out["n_near_floor"] = np.bincount(p, weights=near.astype(float), minlength=n_p)
    out["near_floor_share"] = out["n_near_floor"] / np.maximum(n, 1)
    return out


@dataclass(frozen=True)
class StrongWeakGap:
    """Strong-vs-weak gap (points): per problem and its mean with a CI over problems."""

    per_problem: pd.DataFrame = field(repr=False)
    gap: Interval
    independent: bool

    def to_frame(self) -> pd.DataFrame:
        return self.per_problem

    def to_dict(self) -> dict:
        return {"strong_weak_gap": self.gap.to_dict(), "independent_repeats": self.independent}

    def summary(self) -> str:
        return f"strong-vs-weak gap {self.gap} points"


def strong_weak_gap(scores: pd.DataFrame, *, quantile: float = 0.25, n_boot: int = 1000, level: float = 0.95,
                    seed: int | None = 0) -> StrongWeakGap:
    """Mean score of the slowest minus the fastest quartile of references.

    The repeats are split in two: even positions (in sorted repeat order)
    rank the solutions, odd positions score them (score = mean over those
    repeats of 100*q). Per problem with n references, k = max(1,
    floor(quantile * n)); fastest = the k lowest ranking scores, slowest = the
    k highest; references whose ranking scores tie across the cut share it
    (tie-averaged weights, :func:`stats._ties.tail_weights`; ranking scores
    = means of the unrounded per-repeat q (``q_unrounded`` when present),
    snapped to 12 significant digits once, after averaging)::

        gap_p = mean(score | slowest k) - mean(score | fastest k)

    Reported: the mean of gap_p over problems with a bootstrap CI. A perfect
    ranking of 12 references gives 100*(10/12 - 1/12)... roughly 75 points;
    pure noise gives about 0. With a single repeat nothing is independent:
    the gap is NaN (``independent=False``).

    Parameters
    ----------
    scores : DataFrame
        ``problem, solution, repeat, q`` for reference solutions (see
        :func:`stats.reliability.per_repeat_scores`).

    Examples
    --------
    >>> s = pd.DataFrame({"problem": "p", "solution": np.repeat(list("abcd"), 2), "repeat": [0, 1] * 4,
    ...                   "q": [0.0, 0.1, 0.3, 0.3, 0.6, 0.7, 0.9, 1.0]})
    >>> strong_weak_gap(s, n_boot=10).per_problem["gap"].round(6).tolist()
    [90.0]
    """
    if not 0 < quantile <= 0.5:
        raise ValueError(f"quantile must lie in (0, 0.5], got {quantile}")
    # Rounded once: the ranking score is the mean of the unrounded per-repeat q, snapped after averaging
    # (averaging already-rounded q and rounding again splits equal rationals, e.g. 250/3 from (75, 91.67) and
    # (83.33, 83.33) into 83.3333333333 and 83.3333333334); ``q`` when the scores carry no unrounded column.
    # The scores that are averaged but not ranked (the tails' means) use the rounded q: the unrounded one differs
    # in its last bit with the order its tests were summed in.
    q = scores["q"].to_numpy(dtype=float)
    q_rank = scores["q_unrounded" if "q_unrounded" in scores.columns else "q"].to_numpy(dtype=float)
    sc = scores.loc[np.isfinite(q)]
    q_rank = 100.0 * q_rank[np.isfinite(q)]
    q = 100.0 * q[np.isfinite(q)]
    repeats = np.sort(pd.unique(sc["repeat"].to_numpy())) if len(sc) else np.zeros(0)
    if len(repeats) < 2:
        per = pd.DataFrame(columns=["problem", "n_refs", "fast_mean", "slow_mean", "gap"])
        return StrongWeakGap(per, Interval(math.nan, math.nan, math.nan, 0, level), False)
    pos = np.searchsorted(repeats, sc["repeat"].to_numpy())
    ranking = pos % 2 == 0
    s, n_s = group_codes(sc, ["problem", "solution"])
    r_cnt = np.bincount(s[ranking], minlength=n_s)
    c_cnt = np.bincount(s[~ranking], minlength=n_s)
    r_mean = np.bincount(s[ranking], weights=q_rank[ranking], minlength=n_s) / np.maximum(r_cnt, 1)
    c_mean = np.bincount(s[~ranking], weights=q[~ranking], minlength=n_s) / np.maximum(c_cnt, 1)
    both = (r_cnt > 0) & (c_cnt > 0)
    sols = sc.iloc[first_rows(s, n_s)][["problem"]].reset_index(drop=True).loc[both].reset_index(drop=True)
    r_mean, c_mean = snap(r_mean[both]), c_mean[both]
    p, n_p = group_codes(sols, ["problem"])
    n = np.bincount(p, minlength=n_p)
    k = np.minimum(n, np.maximum(1, np.floor(quantile * n).astype(np.int64)))
    # Tie-averaged tails (stats._ties): equal ranking scores share the tail slots.
    fast, slow = tail_weights(p, r_mean, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        fast_mean = np.bincount(p, weights=fast * c_mean, minlength=n_p) / np.bincount(p, weights=fast, minlength=n_p)
        slow_mean = np.bincount(p, weights=slow * c_mean, minlength=n_p) / np.bincount(p, weights=slow, minlength=n_p)
    gap = np.where(n >= 2, slow_mean - fast_mean, np.nan)
    per = sols.iloc[first_rows(p, n_p)][["problem"]].reset_index(drop=True)
    per["n_refs"] = n
    per["fast_mean"] = np.where(n >= 2, fast_mean, np.nan)
    per["slow_mean"] = np.where(n >= 2, slow_mean, np.nan)
    per["gap"] = gap
    return StrongWeakGap(per, bootstrap_ci(gap, n_boot=n_boot, level=level, seed=seed), True)


def test_discrimination(run: pd.DataFrame, *, floor_s: float | None = None, factor: float = 2.0,
                        pools: pd.DataFrame | None = None, tests: pd.DataFrame | None = None,
                        icc: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per optimization test: how well it separates the references.

    Columns: ``problem, test, n_refs, median_s, spread`` (IQR / median of
    the references' medians on the test: how far apart the solutions are),
    ``median_repeat_cv``, ``icc`` (ICC(3,1) of log duration, solutions x
    repeats: the share of one repeat's variance that is between solutions,
    i.e. whether a repeat orders the solutions as the others do; the median of
    the language pools' ICCs on a test whose references mix languages) and
    ``near_floor`` (median_s <= factor x floor; False when the floor is unknown).

    ``tests`` and ``icc``: :func:`test_table` of ``run`` and :func:`stats.reliability.log_duration_icc` of its
    correct references on optimization tests, when the caller has them already (the run context's).
    """
    tests = (test_table(run, pools=pools) if tests is None else tests).copy()
    if "repeat" in run.columns:
        if icc is None:
            icc = log_duration_icc(correct_reference_rows(run))
        key = icc["problem"].astype(str) + "\x00" + icc["test"].astype(str)
        lookup = pd.Series(icc["ICC3"].to_numpy(dtype=float), index=key.to_numpy())
        if "pool_language" in icc.columns:  # one ICC per language pool of the test: their median
            lookup = lookup.groupby(level=0, sort=False).median()
        tkey = tests["problem"].astype(str) + "\x00" + tests["test"].astype(str)
        tests["icc"] = lookup.reindex(tkey.to_numpy()).to_numpy()
    else:
        tests["icc"] = np.nan
    if floor_s is None or not np.isfinite(floor_s):
        tests["near_floor"] = False
    else:
        tests["near_floor"] = tests["median_s"].to_numpy(dtype=float) <= factor * floor_s
    return tests
