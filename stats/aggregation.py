"""Aggregators: per-test results of one solution on one problem -> one score.

An *aggregator* maps the optimization-test results of one unit (a solution on
a problem, optionally one repeat) to a single number. Every built-in returns a
score where **lower = faster** (win rate is flipped to a loss rate). The
default, ``mean_pct``, is the q of DESIGN.md (x100).

Notation for one unit with optimization tests t = 1..T:

* r_t : per-test percentile (0-100, tie-averaged, leave-self-out) from
  :func:`stats.ranking.test_percentiles`; a non-``ok`` execution has r_t = 100.
  Tests with an undefined percentile (empty pool) are left out.
* d_t : the duration; for a non-``ok`` execution the *penalised* duration
  max(d_t, timeout_s, 2 * slowest reference on t), i.e. always slower than
  every reference.
* m_t, MAD_t, P_t : median, median absolute deviation and the durations of
  the reference pool of t (:func:`stats.ranking.reference_pools`; these pool
  statistics include the scored solution itself - with >= 5 references the
  effect is small, and the comparison ranks scores leave-self-out anyway).
* f : the sandbox floor (median duration of the ``floor`` rows, or given).

Built-ins (``list_aggregators()`` prints them):

=============== =================================================================
name            score (lower = faster)
=============== =================================================================
mean_pct        mean_t r_t                                   (default, = 100 q)
median_pct      median_t r_t
trim10_pct      mean of r_t after cutting int(0.10 T) lowest and highest
trim25_pct      same with int(0.25 T)                (= scipy.stats.trim_mean)
winsor20_pct    mean of r_t winsorised at 20 % each side (= mstats.winsorize)
clip_pct        mean_t clip(r_t, 10, 90)
worst_pct       max_t r_t
heaviest_pct    r_t of the test with the largest m_t (tied tests: their mean)
heavy_half_pct  mean r_t over ceil(T/2) largest-m_t tests (ties share the cut)
weighted_pct    sum_t m_t r_t / sum_t m_t
total_pct       percentile of sum_t d_t among references' totals
geo_ratio       exp(mean_t log(d_t / m_t))
log_ratio       mean_t log2(d_t / m_t)
mean_ratio      mean_t d_t / m_t
robust_z        mean_t (d_t - m_t) / max(1.4826 MAD_t, 0.01 m_t)
loss_rate       100 (1 - W), W = share of references beaten on most tests
slope           OLS slope of log d_t on log m_t across tests
floor_pct       mean r_t over tests with m_t >= 2 f (all tests if none)
=============== =================================================================

``geo_ratio`` and ``log_ratio`` are monotone transforms of each other, so
they rank the units of a problem identically (their comparison rows agree);
both are kept because rewards threshold raw scores on different scales.
``mean_ratio`` is the arithmetic counterpart that weighs outlier tests more.

Everything is vectorised over all units: grouped sums are ``np.bincount``,
grouped order statistics one ``np.lexsort`` plus block offsets, ranks against
pools one sort plus ``searchsorted``. ``loss_rate`` compares every unit with
every reference of its problem on every test (O(rows x references)): as a
broadcast of a (unit, test) matrix against a (problem, reference, test) tensor
when each unit has one row per test, otherwise over explicit (row, reference)
pairs; both in bounded-memory chunks of whole units.

Custom aggregators
------------------
``register_aggregator(name, func, description=..., formula=...)`` with
``func(ctx: AggregationContext) -> ndarray`` of ``ctx.n_groups`` scores
(lower = faster, NaN when undefined). ``ctx`` exposes the optimization-test
rows (``ctx.cells``), ``ctx.codes`` (unit of every row), ``ctx.n_groups`` and
per-row arrays ``percentile``, ``ok``, ``duration``, ``penalized_duration``,
``ref_median``, ``ref_mad``, ``ref_min``, ``ref_max``, ``ref_n``, plus the
helpers ``ctx.mean(values, mask=None, weights=None)`` and
``ctx.sorted_within_units(key, mask=None)``. Example::

    register_aggregator("p90_pct", lambda ctx: ctx.quantile(ctx.percentile, 0.9),
                        description="90th percentile of r_t", formula="quantile_0.9(r_t)")
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType

import numpy as np
import pandas as pd

from stats._groups import first_rows, group_codes, grouped_median, grouped_order
from stats._ties import pool_less_equal, snap, tail_weights
from stats.bootstrap import check_n_boot
from stats.coverage import unmeasured_problems
from stats.discriminability import sandbox_floor
from stats.ranking import (
    joint_codes,
    percentile_table,
    pool_join,
    reference_pools,
    require_single_run,
    test_percentiles,
)

__all__ = ["Aggregator", "AggregationContext", "AGGREGATORS", "DEFAULT_AGGREGATOR", "register_aggregator",
           "get_aggregator", "list_aggregators", "aggregate", "reference_percentile", "floor_from_rows",
           "floors_by_language", "AggregatorComparison", "compare_aggregators", "AggregatorProblemValues",
           "aggregator_problem_values", "combine_aggregator_values"]

DEFAULT_AGGREGATOR = "mean_pct"
FAIL_FACTOR = 2.0          # a failed test counts as >= 2x the slowest reference
MAD_TO_SD = 1.482602218505602  # 1 / Phi^-1(3/4): MAD -> sd of a normal (scipy scale="normal")
MIN_RELATIVE_SCALE = 0.01  # robust z: scale >= 1 % of the reference median
FLOOR_FACTOR = 2.0         # floor_pct keeps tests with m_t >= 2 f
CLIP_RANGE = (10.0, 90.0)
_PAIR_CHUNK = 4_000_000    # loss_rate: (row, reference) pairs per chunk


@dataclass(frozen=True)
class Aggregator:
    """A named aggregator.

    Attributes
    ----------
    name : str
    description : str
        One line.
    formula : str
        The definition in plain notation (see the module docstring).
    func : callable
        ``func(ctx: AggregationContext) -> ndarray`` of ``ctx.n_groups`` scores,
        lower = faster.
    builtin : bool
    """

    name: str
    description: str
    formula: str
    func: Callable[["AggregationContext"], np.ndarray]
    builtin: bool = False

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "formula": self.formula,
                "builtin": self.builtin}


def _is(column: pd.Series, value: str) -> np.ndarray:
    """Boolean array ``column == value``; compares categorical codes directly (no object strings)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        cats = column.cat.categories
        if value not in cats:
            return np.zeros(len(column), dtype=bool)
        return column.cat.codes.to_numpy() == cats.get_loc(value)
    return np.array(column.astype(object) == value, dtype=bool)  # a writable copy


# ----------------------------------------------------------------------------
# Ranking helper (shared with the comparison)
# ----------------------------------------------------------------------------

def tie_rank(x_group: np.ndarray, x_value: np.ndarray, p_group: np.ndarray, p_value: np.ndarray,
             n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts of pool values below / equal to each x within its group.

    Returns ``(less, equal, n)``: #{pool_g < x}, #{pool_g == x} and the pool
    size of x's group g. Non-finite pool values (NaN) are dropped; +inf is an
    ordinary (largest) value. The counts come from one batched binary search
    per x inside its group's sorted block (:func:`stats._ties.pool_less_equal`).
    """
    x_group = np.asarray(x_group, dtype=np.int64)
    p_group = np.asarray(p_group, dtype=np.int64)
    x_value = np.asarray(x_value, dtype=float)
    p_value = np.asarray(p_value, dtype=float)
    keep = ~np.isnan(p_value)
    p_group, p_value = p_group[keep], p_value[keep]
    x_clean = np.where(np.isnan(x_value), 0.0, x_value)
    less, equal = pool_less_equal(p_group, p_value, x_group, x_clean, n_groups)
    n = np.bincount(p_group, minlength=n_groups)[x_group]
    return less.astype(float), equal.astype(float), n.astype(float)


def _percentile_from_counts(less, equal, n, x_value):
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100.0 * (less + 0.5 * equal) / n
    pct[(n <= 0) | np.isnan(x_value)] = np.nan
    return pct


def _self_out_percentile(x_group, x_sol, x_value, p_group, p_sol, p_value, n_groups, n_sol_groups):
    """Tie-averaged percentile of x among its group's pool, without the pool
    entries of x's own solution (``*_sol`` = joint (group, solution) codes;
    negative x_sol = no own entries to remove)."""
    less, equal, n = tie_rank(x_group, x_value, p_group, p_value, n_groups)
    has = x_sol >= 0
    if has.any():
        l2, e2, n2 = tie_rank(x_sol[has], x_value[has], p_sol, p_value, n_sol_groups)
        less[has] -= l2
        equal[has] -= e2
        n[has] -= n2
    return _percentile_from_counts(less, equal, n, x_value)


# ----------------------------------------------------------------------------
# Context
# ----------------------------------------------------------------------------

class AggregationContext:
    """Everything an aggregator needs, computed lazily and cached.

    Build it with :func:`aggregation_context`. Rows are the optimization-test
    rows of the input (``ctx.cells``, index reset); ``ctx.codes[i]`` is the unit
    (0..n_groups-1) of row i. Per-row arrays are computed on first use.
    """

    def __init__(self, cells: pd.DataFrame, pools: pd.DataFrame, codes: np.ndarray, n_groups: int,
                 *, floor_s: float | np.ndarray = 0.0):
        self.cells = cells
        self.pools = pools
        self.codes = codes
        self.n_groups = n_groups
        # one floor, or one per row (the floor of the row's language)
        self.floor_s = np.asarray(floor_s, dtype=float) if np.ndim(floor_s) else float(floor_s)

    # -- row arrays ---------------------------------------------------------
    @cached_property
    def duration(self) -> np.ndarray:
        return self.cells["duration_s"].to_numpy(dtype=float)

    @cached_property
    def ok(self) -> np.ndarray:
        return _is(self.cells["status"], "ok") & np.isfinite(self.duration)

    @cached_property
    def percentile(self) -> np.ndarray:
        if "percentile" in self.cells.columns:
            return self.cells["percentile"].to_numpy(dtype=float)
        return test_percentiles(self.cells, self.pools, leave_self_out="solution" in self.cells.columns)

    @cached_property
    def _tests(self) -> tuple[np.ndarray, np.ndarray, int]:
        if len(self.pools) == 0:
            return np.zeros(len(self.cells), np.int64), np.zeros(0, np.int64), 1
        cells, keys = pool_join(self.cells, self.pools)  # per-language pools: the row's own language's
        return joint_codes(cells, self.pools, keys)

    @cached_property
    def _pool_stats(self) -> dict[str, np.ndarray]:
        _, pool_test, n_tests = self._tests
        d = self.pools["duration_s"].to_numpy(dtype=float)
        good = np.isfinite(d)
        pool_test, d = pool_test[good], d[good]
        n = np.bincount(pool_test, minlength=n_tests)
        median = grouped_median(pool_test, d, n_tests)
        mad = grouped_median(pool_test, np.abs(d - median[pool_test]), n_tests)
        lo = np.full(n_tests, np.inf)
        hi = np.full(n_tests, -np.inf)
        _grouped_extreme(lo, pool_test, d, np.minimum)
        _grouped_extreme(hi, pool_test, d, np.maximum)
        lo[n == 0] = np.nan
        hi[n == 0] = np.nan
        return {"n": n, "median": median, "mad": mad, "min": lo, "max": hi}

    def _row(self, key: str) -> np.ndarray:
        return self._pool_stats[key][self._tests[0]]

    @cached_property
    def ref_n(self) -> np.ndarray:
        return self._row("n")

    @cached_property
    def ref_median(self) -> np.ndarray:
        return self._row("median")

    @cached_property
    def ref_mad(self) -> np.ndarray:
        return self._row("mad")

    @cached_property
    def ref_min(self) -> np.ndarray:
        return self._row("min")

    @cached_property
    def ref_max(self) -> np.ndarray:
        return self._row("max")

    @cached_property
    def penalized_duration(self) -> np.ndarray:
        """d_t for ok rows; max(d_t, timeout_s, 2 x slowest reference) otherwise (NaN without a pool)."""
        d = np.where(np.isfinite(self.duration), self.duration, 0.0)
        fail = np.maximum(d, FAIL_FACTOR * self.ref_max)
        if "timeout_s" in self.cells.columns:
            limit = self.cells["timeout_s"].to_numpy(dtype=float)
            fail = np.where(np.isfinite(limit), np.maximum(fail, limit), fail)
        out = np.where(self.ok, self.duration, fail)
        out[self.ref_n == 0] = np.nan
        return out

    @cached_property
    def unit_first_row(self) -> np.ndarray:
        return first_rows(self.codes, self.n_groups)

    # -- helpers ------------------------------------------------------------
    def mean(self, values: np.ndarray, mask: np.ndarray | None = None,
             weights: np.ndarray | None = None) -> np.ndarray:
        """Per-unit (weighted) mean of ``values`` over rows in ``mask`` with finite values."""
        use = np.isfinite(values)
        if mask is not None:
            use &= mask
        codes = self.codes[use]  # one gather for both sums
        if weights is None:  # unweighted: the count is exact as an integer, the sum needs no product
            terms = values[use]
            den = np.bincount(codes, minlength=self.n_groups).astype(float)
        else:
            w = np.asarray(weights, dtype=float)[use]
            terms = w * values[use]
            den = np.bincount(codes, weights=w, minlength=self.n_groups)
        num = np.bincount(codes, weights=terms, minlength=self.n_groups)
        if (terms < 0).any():  # signed terms cancel: a sum's last bits then depend on the order of the rows
            num = _cancelled(num, np.bincount(codes, weights=np.abs(terms), minlength=self.n_groups),
                             np.bincount(codes, minlength=self.n_groups))
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    def sorted_within_units(self, key: np.ndarray, mask: np.ndarray | None = None):
        """Rows sorted by (unit, key), with each row's rank inside its unit.

        Returns ``rows`` (row indices in sorted order, only rows in ``mask``
        with finite ``key``), ``rank`` (0-based position within the unit),
        ``count`` (rows per unit, length n_groups) and ``start`` (offset of each
        unit's block in ``rows``). Ties keep the input order (stable).
        """
        cache_key = None
        if mask is None:
            cache_key = ("percentile" if key is self.percentile else
                         "-ref_median" if key is self._neg_ref_median else None)
        if cache_key is not None and cache_key in self._sort_cache:
            return self._sort_cache[cache_key]
        use = np.isfinite(key)
        if mask is not None:
            use &= mask
        if self._unit_table is not None:
            rows, rank, count = self._sorted_in_table(key, use)
            start = np.concatenate(([0], np.cumsum(count)[:-1]))
        else:
            idx = np.flatnonzero(use)
            order = grouped_order(key[idx], self.codes[idx])
            rows = idx[order]
            codes = self.codes[rows]
            count = np.bincount(codes, minlength=self.n_groups)
            start = np.concatenate(([0], np.cumsum(count)[:-1]))
            rank = np.arange(len(rows)) - start[codes]
        if cache_key is not None:
            self._sort_cache[cache_key] = (rows, rank, count, start)
        return rows, rank, count, start

    @cached_property
    def _unit_table(self) -> np.ndarray | None:
        """Row indices by unit: row u holds unit u's rows in input order, padded with -1 to the widest unit.

        A unit is one solution's tests (x one repeat), so units are narrow and about equally wide: sorting
        each unit's row of this table (numpy sorts the rows of a 2-D array one by one) replaces a sort of
        all rows by (unit, key) -- 5*10^6 rows in 250,000 units: 0.09 s against 1.9 s for the two-key sort
        (2026-12-06). None when the table would hold more than twice the rows plus 1,024 cells (units of
        very different sizes): then the two-key sort is used.
        """
        count = np.bincount(self.codes, minlength=self.n_groups)
        width = int(count.max()) if len(count) else 0
        if self.n_groups * width > 2 * len(self.codes) + 1024:
            return None
        order = np.argsort(self.codes, kind="stable")
        start = np.concatenate(([0], np.cumsum(count)[:-1]))
        column = np.arange(len(order)) - start[self.codes[order]]
        table = np.full((self.n_groups, width), -1, dtype=np.int64)
        table[self.codes[order], column] = order
        return table

    def _sorted_in_table(self, key: np.ndarray, use: np.ndarray):
        """:meth:`sorted_within_units`' rows, ranks and counts through :attr:`_unit_table`: the same
        permutation as the (unit, key) sort, ties in input order (a stable sort of each unit's row, its rows
        left out by ``use`` set to NaN, which sorts after every value and keeps the padding after them)."""
        table = self._unit_table
        taken = table >= 0
        taken[taken] = use[table[taken]]
        values = np.full(table.shape, np.nan)
        values[taken] = key[table[taken]]
        order = np.argsort(values, axis=1, kind="stable")
        count = taken.sum(axis=1)
        first = np.arange(table.shape[1])[None, :] < count[:, None]   # each unit's used rows, sorted
        rows = np.take_along_axis(table, order, axis=1)[first]
        rank = np.broadcast_to(np.arange(table.shape[1]), table.shape)[first]
        return rows, rank, count

    @cached_property
    def _sort_cache(self) -> dict:
        """Sorts shared by several aggregators (by percentile; by decreasing reference median)."""
        return {}

    @cached_property
    def _neg_ref_median(self) -> np.ndarray:
        """-m_t where r_t is defined (NaN elsewhere): sort key of the heaviest-test aggregators."""
        return np.where(np.isfinite(self.percentile), -self.ref_median, np.nan)

    def quantile(self, values: np.ndarray, q: float, mask: np.ndarray | None = None) -> np.ndarray:
        """Per-unit quantile (linear interpolation, numpy's default) of ``values``."""
        rows, _, count, start = self.sorted_within_units(values, mask)
        out = np.full(self.n_groups, np.nan)
        has = count > 0
        pos = q * (count[has] - 1)
        lo = np.floor(pos).astype(np.int64)
        hi = np.minimum(lo + 1, count[has] - 1)
        v = values[rows]
        frac = pos - lo
        out[has] = v[start[has] + lo] * (1 - frac) + v[start[has] + hi] * frac
        return out


def _cancelled(total: np.ndarray, magnitude: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sums of ``n`` signed terms, 0 where the sum is within its own rounding error of 0.

    ``magnitude`` is the sum of the terms' absolute values (or a bound of the sum's rounding error of that
    size). :func:`stats._ties.snap` rounds a score relative to itself, which cannot merge two float copies of
    0: a sum of signed terms that cancel exactly (a coarse timer: one unit's robust z-scores 0.1, 0.2 and -0.3)
    came out as 5.6e-17 in one row order and 2.8e-17 in another, and the two ranked apart. A float sum of n
    terms is within about n 2^-53 of their absolute sum of the exact one (recursive summation), so a sum below
    n 2^-52 times it cannot be told from 0 and is set to 0; every other sum is kept as it is (and snapped).

    >>> a = np.array([0.1 + 0.2 + -0.3, -0.3 + 0.2 + 0.1])
    >>> bool(a[0] == a[1]), _cancelled(a, np.array([0.6, 0.6]), np.array([3, 3])).tolist()
    (False, [0.0, 0.0])
    """
    total = np.asarray(total, dtype=float)
    tolerance = np.asarray(n, dtype=float) * np.finfo(float).eps * np.asarray(magnitude, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(total) <= tolerance, 0.0, total)


def _grouped_extreme(out: np.ndarray, codes: np.ndarray, values: np.ndarray, ufunc) -> None:
    """out[g] = ufunc-reduce of values in group g (sort once, reduceat)."""
    if len(values) == 0:
        return
    order = np.argsort(codes, kind="stable")
    c, v = codes[order], values[order]
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    out[c[starts]] = ufunc(out[c[starts]], ufunc.reduceat(v, starts))


# ----------------------------------------------------------------------------
# The built-in aggregators
# ----------------------------------------------------------------------------

def _mean_pct(ctx: AggregationContext) -> np.ndarray:
    """mean_t r_t (non-ok -> 100)."""
    return ctx.mean(ctx.percentile)


def _median_pct(ctx: AggregationContext) -> np.ndarray:
    """median_t r_t (mean of the two middle values for even T)."""
    return ctx.quantile(ctx.percentile, 0.5)


def _trimmed(prop: float) -> Callable[[AggregationContext], np.ndarray]:
    def trimmed(ctx: AggregationContext) -> np.ndarray:
        rows, rank, count, _ = ctx.sorted_within_units(ctx.percentile)
        codes = ctx.codes[rows]
        cut = np.floor(prop * count + 1e-9).astype(np.int64)  # = int(prop * T), as scipy
        keep = (rank >= cut[codes]) & (rank < count[codes] - cut[codes])
        mask = np.zeros(len(ctx.codes), dtype=bool)
        mask[rows[keep]] = True
        return ctx.mean(ctx.percentile, mask)
    trimmed.__doc__ = f"Mean of r_t after cutting int({prop} T) values at each end (scipy.stats.trim_mean)."
    return trimmed


def _winsorized(limit: float) -> Callable[[AggregationContext], np.ndarray]:
    def winsorized(ctx: AggregationContext) -> np.ndarray:
        rows, rank, count, start = ctx.sorted_within_units(ctx.percentile)
        codes = ctx.codes[rows]
        low = np.floor(limit * count + 1e-9).astype(np.int64)
        high = count - np.floor(limit * count + 1e-9).astype(np.int64) - 1
        clipped_rank = np.clip(rank, low[codes], np.maximum(high[codes], low[codes]))
        sorted_values = ctx.percentile[rows]
        values = sorted_values[start[codes] + clipped_rank]
        sums = np.bincount(codes, weights=values, minlength=ctx.n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(count > 0, sums / np.maximum(count, 1), np.nan)
    winsorized.__doc__ = (f"Mean of r_t winsorised at {limit:.0%} each side: the int({limit} T) lowest values "
                          "become the next one up, likewise at the top (scipy.stats.mstats.winsorize).")
    return winsorized


def _clip_pct(ctx: AggregationContext) -> np.ndarray:
    """mean_t clip(r_t, 10, 90): a single test cannot move the score by more than 80/T."""
    return ctx.mean(np.clip(ctx.percentile, *CLIP_RANGE))


def _worst_pct(ctx: AggregationContext) -> np.ndarray:
    """max_t r_t."""
    return ctx.quantile(ctx.percentile, 1.0)


def _heaviest_mean(ctx: AggregationContext, k_of) -> np.ndarray:
    """Mean r_t over the k = ``k_of(T)`` tests of each unit with the largest m_t (T: its tests with an r_t and an
    m_t), tests whose m_t ties across the cut sharing it (:func:`stats._ties.tail_weights`): a coarse timer
    gives two tests the same reference median, and which of them is "the heaviest" must not be decided by the
    order of the rows (it was: the first row on ties)."""
    key = ctx._neg_ref_median
    use = np.flatnonzero(np.isfinite(key))
    codes = ctx.codes[use]
    count = np.bincount(codes, minlength=ctx.n_groups)
    k = k_of(count)
    heavy, _ = tail_weights(codes, key[use], k)
    num = np.bincount(codes, weights=heavy * ctx.percentile[use], minlength=ctx.n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, num / np.maximum(k, 1), np.nan)


def _heaviest_pct(ctx: AggregationContext) -> np.ndarray:
    """r_t of the test with the largest reference median m_t (the mean r_t of the tests tied there)."""
    return _heaviest_mean(ctx, lambda count: np.minimum(count, 1))


def _heavy_half_pct(ctx: AggregationContext) -> np.ndarray:
    """Mean r_t over the ceil(T/2) tests with the largest m_t (tests tied across the cut share it)."""
    return _heaviest_mean(ctx, lambda count: (count + 1) // 2)


def _weighted_pct(ctx: AggregationContext) -> np.ndarray:
    """sum_t m_t r_t / sum_t m_t: tests weigh by their reference median duration."""
    valid = np.isfinite(ctx.ref_median)
    return ctx.mean(ctx.percentile, valid, weights=np.where(valid, ctx.ref_median, 0.0))


def _total_pct(ctx: AggregationContext) -> np.ndarray:
    """Tie-averaged percentile of D = sum_t d_t (penalised) among the totals of the
    references that have a pool duration on every test of the problem that the
    units' rows cover (leave-self-out by solution)."""
    d = ctx.penalized_duration
    use = np.isfinite(d)
    totals = np.bincount(ctx.codes[use], weights=d[use], minlength=ctx.n_groups)
    n_used = np.bincount(ctx.codes[use], minlength=ctx.n_groups)
    # sums, snapped before they are ranked (stats._ties rule 1): the same durations summed in another row order
    # differ in the last bit, so a unit whose durations equal a reference's (a coarse timer) tied it or not by
    # the order of the rows
    totals = snap(np.where(n_used > 0, totals, np.nan))
    t = _reference_totals(ctx)
    return _self_out_percentile(t["unit_problem"], t["unit_ps"], totals, t["ref_problem"], t["ref_ps"],
                                snap(t["ref_total"]), t["n_problems"], t["n_ps"])


def _log_ratio_terms(ctx: AggregationContext, log) -> np.ndarray:
    """log(d_t / m_t) per row (d_t penalised): -inf when d_t = 0 < m_t; NaN when m_t = 0 or without a pool.

    A coarse timer reads a program shorter than its resolution as 0 s. d_t / m_t is then 0 and its log -inf,
    which the means over the unit's tests left out as "not finite": a solution 0 s on one test and equal to
    another on the rest scored as if it had skipped that test, slower than the other (geo_ratio 1.0 against
    0.79). The unit's mean now takes the limit, -inf (:func:`_mean_with_limits`): exp gives a geo_ratio of 0.
    A test whose reference median is 0 has no ratio for any unit (0 / 0 or d / 0): left out of every unit alike.
    """
    d, m = ctx.penalized_duration, ctx.ref_median
    with np.errstate(invalid="ignore", divide="ignore"):
        return log(np.where(m > 0, d / m, np.nan))


def _mean_with_limits(ctx: AggregationContext, values: np.ndarray) -> np.ndarray:
    """Per-unit mean of ``values`` where a unit with an infinite value takes its limit (-inf or +inf; NaN with
    both); other units as :meth:`AggregationContext.mean` (over their finite values)."""
    out = ctx.mean(values)
    low = np.bincount(ctx.codes[values == -np.inf], minlength=ctx.n_groups) > 0
    high = np.bincount(ctx.codes[values == np.inf], minlength=ctx.n_groups) > 0
    out[low] = -np.inf
    out[high] = np.inf
    out[low & high] = np.nan
    return out


def _geo_ratio(ctx: AggregationContext) -> np.ndarray:
    """exp(mean_t log(d_t / m_t)), d_t penalised for non-ok tests (0 when some d_t = 0 < m_t)."""
    return np.exp(_mean_with_limits(ctx, _log_ratio_terms(ctx, np.log)))


def _log_ratio(ctx: AggregationContext) -> np.ndarray:
    """mean_t log2(d_t / m_t): 0 = as fast as the typical reference, -1 = twice as fast (-inf when some
    d_t = 0 < m_t)."""
    return _mean_with_limits(ctx, _log_ratio_terms(ctx, np.log2))


def _mean_ratio(ctx: AggregationContext) -> np.ndarray:
    """mean_t d_t / m_t (arithmetic: one slow test weighs in linearly)."""
    return ctx.mean(ctx.penalized_duration / ctx.ref_median)


def _robust_z(ctx: AggregationContext) -> np.ndarray:
    """mean_t (d_t - m_t) / s_t, s_t = max(1.4826 MAD_t, 0.01 m_t)."""
    scale = np.maximum(MAD_TO_SD * ctx.ref_mad, MIN_RELATIVE_SCALE * ctx.ref_median)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = (ctx.penalized_duration - ctx.ref_median) / scale
    return ctx.mean(z)


def _slope(ctx: AggregationContext) -> np.ndarray:
    """OLS slope b of log d_t = a + b log m_t across the unit's tests (NaN when the
    m_t do not vary): how the solution's time grows with the references' workload."""
    x = np.log(ctx.ref_median)
    y = np.log(ctx.penalized_duration)
    use = np.isfinite(x) & np.isfinite(y)
    c, x, y = ctx.codes[use], x[use], y[use]
    n = np.bincount(c, minlength=ctx.n_groups).astype(float)
    sx = np.bincount(c, weights=x, minlength=ctx.n_groups)
    sy = np.bincount(c, weights=y, minlength=ctx.n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = sx / n, sy / n
        xc = x - mx[c]
        sxx = np.bincount(c, weights=xc * xc, minlength=ctx.n_groups)
        sxy = np.bincount(c, weights=xc * (y - my[c]), minlength=ctx.n_groups)
        # a slope of 0 (durations equal on every test, a coarse timer) is a sum that cancels, within the rounding
        # of terms of size |xc| (|y| + |mean y|) (y - mean y carries the rounding of the mean)
        sxy = _cancelled(sxy, np.bincount(c, weights=np.abs(xc) * (np.abs(y) + np.abs(my[c])),
                                          minlength=ctx.n_groups), 2 * n)
        slope = sxy / sxx
    slope[~(sxx > 1e-12)] = np.nan
    return slope


def _floor_pct(ctx: AggregationContext) -> np.ndarray:
    """mean r_t over tests with m_t >= 2 f; a unit with no such test falls back to mean_pct.

    With a ``language`` column, f is the floor of the row's language and m_t the median of
    its language's pool (when the pools are per language)."""
    keep = ctx.ref_median >= FLOOR_FACTOR * ctx.floor_s
    above = ctx.mean(ctx.percentile, keep)
    return np.where(np.isfinite(above), above, ctx.mean(ctx.percentile))


def _loss_rate(ctx: AggregationContext) -> np.ndarray:
    """100 (1 - W). Against reference j the unit wins when it is faster on more than half
    of the tests both have (a test tie counts 1/2; a tie overall counts 1/2); W = mean over
    references (not itself) of those wins. Non-ok tests are losses (penalised duration)."""
    return 100.0 * (1.0 - _win_rate(ctx))


# -- helpers for the problem-level aggregators ---------------------------------

def _problem_solution_codes(ctx: AggregationContext, unit_keys: pd.DataFrame, pool: pd.DataFrame):
    """Joint codes of problem and of (problem, solution) for unit_keys rows and pool rows.

    Without a ``solution`` column in the cells, the units get (problem, solution)
    code -1 (nothing to leave out)."""
    u_prob, p_prob, n_prob = joint_codes(unit_keys, pool, ["problem"])
    if "solution" in unit_keys.columns:
        u_ps, p_ps, n_ps = joint_codes(unit_keys, pool, ["problem", "solution"])
    else:
        p_ps, n_ps = group_codes(pool, ["problem", "solution"])
        u_ps = np.full(len(unit_keys), -1, dtype=np.int64)
    return u_prob, p_prob, n_prob, u_ps, p_ps, n_ps


def _reference_totals(ctx: AggregationContext) -> dict:
    """Total pool duration of every complete reference and the matching unit codes.

    The "problem" codes returned are the problem's pool: with per-language pools (a problem whose references
    mix languages, :func:`stats.ranking.reference_pools`) a unit is ranked among its own language's
    references, and a reference is complete with a duration on every test of its own pool (a Python reference
    never has one on the C++ pool's tests)."""
    row_test, pool_test, n_tests = ctx._tests
    covered = np.zeros(n_tests, dtype=bool)
    covered[row_test[np.isfinite(ctx.penalized_duration)]] = True
    d = ctx.pools["duration_s"].to_numpy(dtype=float)
    use = covered[pool_test] & np.isfinite(d) if len(d) else np.zeros(0, dtype=bool)
    sub = ctx.pools.loc[use]
    sub_test, sub_d = pool_test[use], d[use]
    unit_keys = ctx.cells.iloc[ctx.unit_first_row]
    _, _, _, u_ps, s_ps, n_ps = _problem_solution_codes(ctx, unit_keys, sub)
    unit_keys, keys = pool_join(unit_keys, ctx.pools)
    u_prob, s_prob, n_prob = joint_codes(unit_keys, sub, [k for k in keys if k != "test"])
    test_problem = np.full(n_tests, -1, dtype=np.int64)
    test_problem[sub_test] = s_prob
    tests_in_problem = np.bincount(test_problem[test_problem >= 0], minlength=n_prob)
    total = np.bincount(s_ps, weights=sub_d, minlength=n_ps)
    count = np.bincount(s_ps, minlength=n_ps)
    ps_problem = np.full(n_ps, -1, dtype=np.int64)
    ps_problem[s_ps] = s_prob
    complete = (count > 0) & (count == tests_in_problem[np.maximum(ps_problem, 0)])
    ref = np.flatnonzero(complete)
    return {"unit_problem": u_prob, "unit_ps": u_ps, "n_problems": n_prob, "n_ps": n_ps,
            "ref_total": total[ref], "ref_problem": ps_problem[ref], "ref_ps": ref}


def _win_rate(ctx: AggregationContext) -> np.ndarray:
    """Share W of the references (not itself) that each unit beats on most tests, in
    bounded-memory chunks of whole units (a loop over chunks, not problems)."""
    d = ctx.penalized_duration
    row_test, pool_test, n_tests = ctx._tests
    out = np.full(ctx.n_groups, np.nan)
    pool_d = ctx.pools["duration_s"].to_numpy(dtype=float)
    p_idx = np.flatnonzero(np.isfinite(pool_d))
    if len(p_idx) == 0:
        return out
    p_idx = p_idx[np.argsort(pool_test[p_idx], kind="stable")]
    p_test, p_dur = pool_test[p_idx], pool_d[p_idx]
    block_n = np.bincount(p_test, minlength=n_tests)
    block_start = np.concatenate(([0], np.cumsum(block_n)[:-1]))
    p_sub = ctx.pools.iloc[p_idx]
    row_prob, p_prob, n_prob, row_ps, p_ps, n_ps = _problem_solution_codes(ctx, ctx.cells, p_sub)
    # Local slot of each reference within its problem (0..refs-1), for compact pair keys.
    present = np.flatnonzero(np.bincount(p_ps, minlength=n_ps) > 0)
    ps_problem = np.zeros(n_ps, dtype=np.int64)
    ps_problem[p_ps] = p_prob
    prob_of = ps_problem[present]
    order = np.lexsort((present, prob_of))
    per_problem = np.bincount(prob_of)
    starts = np.concatenate(([0], np.cumsum(per_problem)[:-1]))
    slot = np.zeros(n_ps, dtype=np.int64)
    slot[present[order]] = np.arange(len(present)) - starts[prob_of[order]]
    n_slots = int(per_problem.max())
    p_slot = slot[p_ps]

    rows = np.flatnonzero(np.isfinite(d) & (block_n[row_test] > 0))
    if len(rows) == 0:
        return out
    in_pool = np.zeros(n_ps, dtype=bool)
    in_pool[p_ps] = True
    dense = _win_rate_dense(ctx, rows, d[rows], row_test[rows], row_prob[rows], row_ps[rows], p_test, p_dur,
                            p_prob, p_slot, n_prob, n_slots, np.where(in_pool, slot, -1), n_tests)
    if dense is not None:
        return dense
    rows = rows[np.argsort(ctx.codes[rows], kind="stable")]
    unit = ctx.codes[rows]
    pairs = block_n[row_test[rows]]
    cum = np.cumsum(pairs)
    unit_begin = np.flatnonzero(np.r_[True, unit[1:] != unit[:-1]])
    unit_stop = np.r_[unit_begin[1:], len(rows)]          # exclusive row end of each unit
    cum_at_stop = cum[unit_stop - 1]
    a = 0
    while a < len(unit_begin):
        base = cum[unit_begin[a] - 1] if unit_begin[a] else 0
        b = max(int(np.searchsorted(cum_at_stop, base + _PAIR_CHUNK, side="right")), a + 1)
        lo, hi = unit_begin[a], unit_stop[b - 1]
        r = rows[lo:hi]
        counts = pairs[lo:hi]
        owner = np.repeat(np.arange(len(r)), counts)
        offset = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        pos = block_start[row_test[r]][owner] + offset
        mine = d[r][owner]
        theirs = p_dur[pos]
        win = (mine < theirs) + 0.5 * (mine == theirs)
        unit_local = np.repeat(np.arange(b - a), unit_stop[a:b] - unit_begin[a:b])
        key = unit_local[owner] * n_slots + p_slot[pos]
        other = p_ps[pos] != row_ps[r][owner]
        size = (b - a) * n_slots
        w = np.bincount(key[other], weights=win[other], minlength=size)
        n = np.bincount(key[other], minlength=size)
        has = n > 0
        frac = np.where(has, w / np.maximum(n, 1), 0.0)
        beat = ((frac > 0.5) + 0.5 * (frac == 0.5)) * has
        n_refs = has.reshape(b - a, n_slots).sum(axis=1)
        beaten = beat.reshape(b - a, n_slots).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[unit[unit_begin[a:b]]] = np.where(n_refs > 0, beaten / np.maximum(n_refs, 1), np.nan)
        a = b
    return out


def _win_rate_dense(ctx, rows, d, row_test, row_prob, row_ps, p_test, p_dur, p_prob, p_slot, n_prob, n_slots,
                    slot_of_ps, n_tests, max_cells=50_000_000):
    """Fast path of the win rate when every unit has at most one row per test: units as a
    (unit, test) matrix and the pool as a (problem, reference, test) tensor, compared in
    contiguous chunks of units by broadcasting. None when the layout does not apply (several
    rows per (unit, test), or the padded arrays would exceed ``max_cells``)."""
    test_prob = np.full(n_tests, -1, dtype=np.int64)
    test_prob[p_test] = p_prob
    tests = np.flatnonzero(test_prob >= 0)
    order = tests[np.lexsort((tests, test_prob[tests]))]
    per_problem = np.bincount(test_prob[tests], minlength=n_prob)
    starts = np.concatenate(([0], np.cumsum(per_problem)[:-1]))
    t_local = np.full(n_tests, -1, dtype=np.int64)
    t_local[order] = np.arange(len(order)) - starts[test_prob[order]]
    width = int(per_problem.max())
    if n_prob * n_slots * width > max_cells or ctx.n_groups * width > max_cells:
        return None
    unit = ctx.codes[rows]
    col = t_local[row_test]
    occupied = np.zeros(ctx.n_groups * width, dtype=bool)
    occupied[unit * width + col] = True
    if np.count_nonzero(occupied) != len(unit):   # several rows on one (unit, test)
        return None
    del occupied
    # test-major layout: summing booleans over the first axis adds contiguous (units, refs) slabs
    D = np.full((width, ctx.n_groups), np.nan)
    D[col, unit] = d
    pool = np.full((width, n_prob, n_slots), np.nan)
    pool[t_local[p_test], p_prob, p_slot] = p_dur
    unit_prob = np.full(ctx.n_groups, -1, dtype=np.int64)
    unit_prob[unit] = row_prob
    self_slot = np.full(ctx.n_groups, -1, dtype=np.int64)
    has_self = row_ps >= 0
    self_slot[unit[has_self]] = slot_of_ps[row_ps[has_self]]
    units = np.flatnonzero(unit_prob >= 0)
    gaps = bool(np.isnan(pool).any() or np.isnan(D[:, units]).any())
    out = np.full(ctx.n_groups, np.nan)
    step = max(1, _PAIR_CHUNK // max(n_slots * width, 1))
    for lo in range(0, len(units), step):  # a loop over chunks of units, never per problem
        uu = units[lo:lo + step]
        mine = D[:, uu][:, :, None]
        theirs = pool[:, unit_prob[uu], :]
        # twice the wins: #{<} + #{<=} = 2 #{<} + #{=}; integer arithmetic, no rounding
        wins2 = (mine < theirs).sum(axis=0, dtype=np.int32) + (mine <= theirs).sum(axis=0, dtype=np.int32)
        if gaps:
            n = (~np.isnan(mine) & ~np.isnan(theirs)).sum(axis=0, dtype=np.int32)
        else:
            n = np.full(wins2.shape, width, dtype=np.int32)
        own = self_slot[uu]
        n[np.flatnonzero(own >= 0), own[own >= 0]] = 0
        has = n > 0
        beat = ((wins2 > n) + 0.5 * (wins2 == n)) * has
        n_refs = has.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[uu] = np.where(n_refs > 0, beat.sum(axis=1) / np.maximum(n_refs, 1), np.nan)
    return out


# ----------------------------------------------------------------------------
# Registry
# ----------------------------------------------------------------------------

_BUILTINS: list[tuple[str, Callable, str, str]] = [
    ("mean_pct", _mean_pct, "mean of the per-test percentiles (the default; = 100 q)", "mean_t r_t"),
    ("median_pct", _median_pct, "median of the per-test percentiles", "median_t r_t"),
    ("trim10_pct", _trimmed(0.10), "10 % trimmed mean of the per-test percentiles",
     "mean of sorted r_t[k:T-k], k = int(0.10 T)"),
    ("trim25_pct", _trimmed(0.25), "25 % trimmed mean of the per-test percentiles",
     "mean of sorted r_t[k:T-k], k = int(0.25 T)"),
    ("winsor20_pct", _winsorized(0.20), "mean of the per-test percentiles winsorised at 20 % each side",
     "mean_t r_t with the k lowest/highest set to r_(k)/r_(T-k-1), k = int(0.20 T)"),
    ("clip_pct", _clip_pct, "mean of the per-test percentiles clipped to [10, 90]", "mean_t clip(r_t, 10, 90)"),
    ("worst_pct", _worst_pct, "percentile on the worst test", "max_t r_t"),
    ("heaviest_pct", _heaviest_pct, "percentile on the heaviest test only (largest reference median)",
     "r_t*, t* = argmax_t m_t"),
    ("heavy_half_pct", _heavy_half_pct, "mean percentile over the heaviest half of the tests",
     "mean of r_t over the ceil(T/2) tests with the largest m_t"),
    ("weighted_pct", _weighted_pct, "reference-duration-weighted mean of the per-test percentiles",
     "sum_t m_t r_t / sum_t m_t"),
    ("total_pct", _total_pct, "total duration ranked against the references' totals",
     "100 (#{R_j < D} + 0.5 #{R_j = D}) / n, D = sum_t d_t, R_j = sum_t P_jt"),
    ("geo_ratio", _geo_ratio, "geometric mean of the ratio to the reference median",
     "exp(mean_t log(d_t / m_t))"),
    ("log_ratio", _log_ratio, "mean log2-ratio to the reference median", "mean_t log2(d_t / m_t)"),
    ("mean_ratio", _mean_ratio, "arithmetic mean of the ratio to the reference median", "mean_t d_t / m_t"),
    ("robust_z", _robust_z, "mean robust z-score against the reference durations (median / MAD)",
     "mean_t (d_t - m_t) / max(1.4826 MAD_t, 0.01 m_t)"),
    ("loss_rate", _loss_rate, "pairwise loss rate against the references (100 - win rate), majority of tests",
     "100 (1 - mean_j [#{t: d_t < P_jt} + 0.5 #{=} > T_j/2] (ties 1/2))"),
    ("slope", _slope, "scaling slope: OLS slope of log duration on log reference median across tests",
     "b in log d_t = a + b log m_t"),
    ("floor_pct", _floor_pct, "mean percentile over tests whose reference median is >= 2x the sandbox floor",
     "mean of r_t over {t: m_t >= 2 f} (all tests if none)"),
]

_REGISTRY: dict[str, Aggregator] = {
    name: Aggregator(name, description, formula, func, builtin=True)
    for name, func, description, formula in _BUILTINS
}
AGGREGATORS: Mapping[str, Aggregator] = MappingProxyType(_REGISTRY)


def register_aggregator(name: str, func: Callable[[AggregationContext], np.ndarray], *, description: str,
                        formula: str, overwrite: bool = False) -> Aggregator:
    """Add an aggregator to :data:`AGGREGATORS`.

    Parameters
    ----------
    name : str
        Identifier (letters, digits, ``_``, ``-``).
    func : callable
        ``func(ctx: AggregationContext) -> ndarray`` of ``ctx.n_groups`` scores, lower = faster.
    description, formula : str
        One line each; shown by :func:`list_aggregators` and in reports.
    overwrite : bool, default False
        Replace an existing custom aggregator of that name (built-ins are never replaced).

    Examples
    --------
    >>> agg = register_aggregator("p75_pct", lambda ctx: ctx.quantile(ctx.percentile, 0.75),
    ...     description="75th percentile of r_t", formula="quantile_0.75 r_t", overwrite=True)
    >>> agg.name in AGGREGATORS
    True
    """
    if not isinstance(name, str) or not name or not all(ch.isalnum() or ch in "_-" for ch in name):
        raise ValueError(f"aggregator name must be a non-empty identifier (letters, digits, _ or -), got {name!r}")
    if not callable(func):
        raise TypeError(f"aggregator {name!r}: func must be callable(ctx) -> array, got {type(func).__name__}")
    if not description or not formula:
        raise ValueError(f"aggregator {name!r}: give a one-line description and its formula")
    existing = _REGISTRY.get(name)
    if existing is not None and (existing.builtin or not overwrite):
        why = "is a built-in" if existing.builtin else "already exists (pass overwrite=True to replace it)"
        raise ValueError(f"aggregator {name!r} {why}")
    agg = Aggregator(name, description, formula, func, builtin=False)
    _REGISTRY[name] = agg
    return agg


def get_aggregator(name: str) -> Aggregator:
    """The aggregator called ``name``; a ValueError lists the known names otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown aggregator {name!r}; known: {', '.join(_REGISTRY)}") from None


def list_aggregators() -> pd.DataFrame:
    """Table of the registered aggregators: name, description, formula, builtin."""
    return pd.DataFrame([a.to_dict() for a in _REGISTRY.values()],
                        columns=["name", "description", "formula", "builtin"])


# ----------------------------------------------------------------------------
# Entry points
# ----------------------------------------------------------------------------

def floors_by_language(frame: pd.DataFrame) -> dict[str, float]:
    """Floor of each language of one run: :func:`stats.discriminability.sandbox_floor` per ``language``
    ({} without a ``language`` column or floor rows)."""
    if "role" not in frame.columns or "language" not in frame.columns:
        return {}
    floors = sandbox_floor(frame.loc[frame["language"].notna().to_numpy()])
    return {str(lang): float(f) for lang, f in zip(floors["language"], floors["floor_s"])}


def _row_floors(cells: pd.DataFrame, floors: dict[str, float], fallback: float) -> np.ndarray | float:
    """Per-row floor (the floor of the row's language; ``fallback`` for a language without one)."""
    if not floors or "language" not in cells.columns:
        return fallback
    lang = cells["language"].astype(object).where(cells["language"].notna(), "").astype(str)
    return lang.map(floors).fillna(fallback).to_numpy(dtype=float)


def floor_from_rows(frame: pd.DataFrame) -> float | None:
    """Sandbox floor: median duration of the ``ok`` rows with role ``floor`` (None when there are none)."""
    if "role" not in frame.columns:
        return None
    mask = _is(frame["role"], "floor")
    if "status" in frame.columns:
        mask &= _is(frame["status"], "ok")
    d = frame["duration_s"].to_numpy(dtype=float)[mask]
    d = d[np.isfinite(d)]
    return float(np.median(d)) if len(d) else None


def _default_by(cells: pd.DataFrame) -> list[str]:
    return ["problem", "solution"] + (["repeat"] if "repeat" in cells.columns else [])


def aggregation_context(cells: pd.DataFrame, pools: pd.DataFrame, *, by: Sequence[str] | None = None,
                        floor_s: float | dict | None = None) -> tuple[AggregationContext, pd.DataFrame]:
    """Build the shared context for ``cells`` (several aggregators can reuse it).

    ``floor_s``: one floor, or ``{language: floor}`` (each row gets its
    language's; default: from the ``floor`` rows of ``cells``, per language
    when they have a ``language`` column).

    Returns the context and the unit table (by-columns, role/correct when
    present, ``n_tests`` = optimization tests of the unit).
    """
    if not isinstance(cells, pd.DataFrame) or not isinstance(pools, pd.DataFrame):
        raise TypeError("cells and pools must be DataFrames (see stats.ranking.percentile_table / reference_pools)")
    by = _default_by(cells) if by is None else list(by)
    missing = [c for c in set(by) | {"problem", "test", "duration_s", "status"} if c not in cells.columns]
    if missing:
        raise ValueError(f"aggregate: cells lack column(s) {sorted(missing)}; expected the output of "
                         "stats.ranking.percentile_table (problem, test, solution, duration_s, status, percentile)")
    if "problem" not in by:
        raise ValueError(f"aggregate: by={by} must include 'problem' (a score is always within one problem)")
    pool_missing = [c for c in ("problem", "test", "solution", "duration_s") if c not in pools.columns]
    if pool_missing:
        raise ValueError(f"aggregate: pools lack column(s) {pool_missing}; pass stats.ranking.reference_pools(...)")
    if floor_s is None:
        floor_s = floors_by_language(cells) or floor_from_rows(cells) or 0.0
    language_floors = dict(floor_s) if isinstance(floor_s, dict) else {}
    pooled = float(np.median(list(language_floors.values()))) if language_floors else floor_s
    for value in [pooled, *language_floors.values()]:
        if not (np.isfinite(value) and value >= 0):
            raise ValueError(f"floor_s must be a finite duration >= 0 seconds, got {value}")
    keep = np.ones(len(cells), dtype=bool)
    if "role" in cells.columns:
        keep &= ~_is(cells["role"], "floor")
    if "test_kind" in cells.columns:
        keep &= _is(cells["test_kind"], "optimization")
    opt = cells.loc[keep].reset_index(drop=True)
    codes, n_groups = group_codes(opt, by)
    first = first_rows(codes, n_groups)
    cols = list(dict.fromkeys(by + [c for c in ("role", "correct") if c in opt.columns]))
    units = opt.iloc[first][cols].reset_index(drop=True)
    units["n_tests"] = np.bincount(codes, minlength=n_groups)
    ctx = AggregationContext(opt, pools, codes, n_groups, floor_s=_row_floors(opt, language_floors, pooled))
    return ctx, units


def aggregate(cells: pd.DataFrame, pools: pd.DataFrame, *, name: str = DEFAULT_AGGREGATOR,
              by: Sequence[str] | None = None, floor_s: float | None = None) -> pd.DataFrame:
    """Score every unit with one aggregator (lower = faster).

    Parameters
    ----------
    cells : DataFrame
        Per-test rows as from ``stats.ranking.percentile_table(..., per_repeat=True|False)``:
        problem, test, solution[, repeat], duration_s, status, test_kind, percentile
        (computed from ``pools`` when absent). Only optimization tests are used;
        ``floor`` rows are dropped (and give the floor when ``floor_s`` is None).
    pools : DataFrame
        ``stats.ranking.reference_pools(...)`` of the same environment and campaign.
    name : str, default "mean_pct"
        A key of :data:`AGGREGATORS`.
    by : sequence of str, optional
        Units; default problem, solution (+ repeat when present). Must include problem.
    floor_s : float, optional
        Sandbox floor in seconds for ``floor_pct``; default from the ``floor`` rows, else 0.

    Returns
    -------
    DataFrame
        by-columns, ``role``/``correct`` when present, ``n_tests`` and ``score``.

    Examples
    --------
    >>> import pandas as pd
    >>> pools = pd.DataFrame({"problem": "p", "test": ["a", "a", "b", "b"], "solution": ["r1", "r2"] * 2,
    ...                       "duration_s": [1.0, 3.0, 10.0, 30.0]})
    >>> cells = pd.DataFrame({"problem": "p", "test": ["a", "b"], "solution": "x",
    ...                       "duration_s": [2.0, 40.0], "status": "ok", "percentile": [50.0, 100.0]})
    >>> aggregate(cells, pools)["score"].tolist()            # (50 + 100) / 2
    [75.0]
    >>> aggregate(cells, pools, name="heaviest_pct")["score"].tolist()  # test b: m = 20 > 2
    [100.0]
    """
    agg = get_aggregator(name)
    ctx, units = aggregation_context(cells, pools, by=by, floor_s=floor_s)
    units["score"] = _run(agg, ctx)
    return units


def _run(agg: Aggregator, ctx: AggregationContext) -> np.ndarray:
    if ctx.n_groups == 0:
        return np.zeros(0)
    scores = np.asarray(agg.func(ctx), dtype=float)
    if scores.shape != (ctx.n_groups,):
        raise ValueError(f"aggregator {agg.name!r} returned shape {scores.shape}, expected ({ctx.n_groups},)")
    # One documented rounding (12 significant digits, stats._ties.snap) before any
    # ranking: scores built from percentiles are rationals, and equal rationals
    # reached through different test sets must compare equal.
    return snap(scores)


def reference_percentile(scores: pd.DataFrame, *, score: str = "score", by: Sequence[str] = ("problem",),
                         reference_mask: np.ndarray | None = None, pool: pd.DataFrame | None = None,
                         solution: str | None = "solution") -> np.ndarray:
    """Every score as a within-problem percentile among the references' scores (0-100).

    r = 100 (#{pool < s} + 0.5 #{pool = s}) / n over the pool of the row's
    ``by`` group, with the pool entries of the row's own solution left out
    (leave-self-out); lower score = faster = lower percentile. NaN scores and
    empty pools give NaN; NaN pool entries are ignored.

    Parameters
    ----------
    scores : DataFrame
        Output of :func:`aggregate`.
    by : sequence of str, default ("problem",)
    reference_mask : bool array, optional
        Which rows of the pool source are references; default role == "reference"
        and correct (when those columns exist), else every row.
    pool : DataFrame, optional
        Scores to rank against (e.g. references scored on repeat-collapsed
        durations); default: ``scores`` itself. ``reference_mask`` applies to it.
    solution : str or None, default "solution"
        Column that identifies "self"; None disables leave-self-out.

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"problem": "p", "solution": ["a", "b", "c", "x"], "score": [1.0, 2.0, 3.0, 2.0],
    ...                   "role": ["reference"] * 3 + ["candidate"]})
    >>> reference_percentile(s).tolist()   # a vs {2, 3}; b vs {1, 3}; c vs {1, 2}; x vs {1, 2, 3}
    [0.0, 50.0, 100.0, 50.0]
    """
    source = scores if pool is None else pool
    for frame, what in ((scores, "scores"), (source, "pool")):
        missing = [c for c in list(by) + [score] if c not in frame.columns]
        if missing:
            raise ValueError(f"reference_percentile: {what} lack column(s) {missing}")
    if reference_mask is None:
        reference_mask = np.ones(len(source), dtype=bool)
        if "role" in source.columns:
            reference_mask &= _is(source["role"], "reference")
        if "correct" in source.columns:
            reference_mask &= source["correct"].to_numpy(dtype=bool)
    reference_mask = np.asarray(reference_mask, dtype=bool)
    if reference_mask.shape != (len(source),):
        raise ValueError(f"reference_mask has shape {reference_mask.shape}, expected ({len(source)},)")
    ref = source.loc[reference_mask]
    by = list(by)
    x_group, p_group, n_groups = joint_codes(scores, ref, by)
    x_value = scores[score].to_numpy(dtype=float)
    p_value = ref[score].to_numpy(dtype=float)
    if solution is not None and solution in scores.columns and solution in ref.columns:
        x_sol, p_sol, n_sol = joint_codes(scores, ref, by + [solution])
    else:
        x_sol, p_sol, n_sol = np.full(len(scores), -1, np.int64), np.zeros(len(ref), np.int64), 1
    return _self_out_percentile(x_group, x_sol, x_value, p_group, p_sol, p_value, n_groups, n_sol)


# ----------------------------------------------------------------------------
# Comparison: stability vs dynamic range
# ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AggregatorComparison:
    """Stability and dynamic range of aggregators on one environment and campaign.

    Attributes
    ----------
    table : DataFrame
        One row per aggregator: ``stability`` (mean over problems of the mean
        |score(repeat i) - score(repeat j)|, in reference-percentile points),
        ``stability_sd`` (sd over problems), ``dynamic_range`` (mean over
        problems of slowest-quartile minus fastest-quartile mean score),
        ``dynamic_range_sd``, ``ratio`` = stability / dynamic_range, each with
        ``*_low`` / ``*_high`` bootstrap bounds over problems; ``n_problems``;
        ``pareto`` (no other aggregator is at least as stable and at least as
        separating, and strictly better in one; point estimates); ``dominated_by``;
        ``dominated_by_confident`` (those that dominate it in >= ``level`` of the
        paired bootstrap resamples);
        ``p_better_than_default`` (bootstrap share of resamples in which its
        ratio is below the default's); ``same_as`` (an earlier aggregator
        whose percentiles are identical on every unit, e.g. log_ratio ~ geo_ratio).
    per_problem : DataFrame
        aggregator, problem, stability, dynamic_range.
    """

    table: pd.DataFrame
    per_problem: pd.DataFrame
    n_problems: int
    n_repeats: int
    quartile_repeat: object
    level: float = 0.95
    default: str = DEFAULT_AGGREGATOR

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    @property
    def recommended(self) -> str | None:
        """The Pareto-optimal aggregator with the lowest stability / range ratio."""
        front = self.table[self.table["pareto"] & np.isfinite(self.table["ratio"])]
        if front.empty:
            return None
        return str(front.sort_values(["ratio", "stability"]).iloc[0]["aggregator"])

    def to_dict(self) -> dict:
        aggregators = {}
        for row in self.table.to_dict(orient="records"):
            name = row.pop("aggregator")
            aggregators[name] = row
        return {"aggregators": aggregators, "n_problems": self.n_problems, "n_repeats": self.n_repeats,
                "quartile_repeat": self.quartile_repeat, "level": self.level, "default": self.default,
                "recommended": self.recommended}

    def summary(self) -> str:
        """The table as text: a figure the corpus cannot give is ``n/a`` (reasons below the table), an interval
        without resamples (one problem, or ``n_boot = 0``) is ``(no CI)``; never ``nan``."""
        t = self.table.sort_values("ratio")
        lines = [f"{'aggregator':15s} {'stability':>22s} {'dynamic range':>22s} {'ratio':>7s}  pareto"]
        for row in t.itertuples():
            lines.append(
                f"{row.aggregator:15s} {_with_ci(row.stability, row.stability_low, row.stability_high)}"
                f" {_with_ci(row.dynamic_range, row.dynamic_range_low, row.dynamic_range_high)}"
                f" {_number(row.ratio, 7, 3)}  {'*' if row.pareto else ''}")
        lines.append(f"(percentile points among references; n = {self.n_problems} problems, {self.n_repeats} repeat indices, "
                     f"quartiles from repeat {self.quartile_repeat}; {self.level:.0%} bootstrap CIs over problems)")
        unscored: dict[str, list[str]] = {}  # one line per reason: often every aggregator shares it
        for row in self.table.itertuples():
            if why := _unscored_reason(row):
                unscored.setdefault(why, []).append(row.aggregator)
        lines += [f"n/a: {', '.join(names)}: {why}" for why, names in unscored.items()]
        return "\n".join(lines)


def _number(value: float, width: int, digits: int) -> str:
    return f"{value:{width}.{digits}f}" if np.isfinite(value) else f"{'n/a':>{width}}"


def _with_ci(value: float, low: float, high: float) -> str:
    """``value [low, high]`` in 22 columns; ``(no CI)`` when the interval is undefined."""
    if not np.isfinite(value):
        return f"{'n/a':>22}"
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{value:6.2f} {'(no CI)':>15}"
    return f"{value:6.2f} [{low:6.2f},{high:6.2f}]"


def _unscored_reason(row) -> str:
    """Why an aggregator's stability or dynamic range is n/a ('' when both are measured): the conditions of
    :func:`compare_aggregators`, steps 3 and 4."""
    why = []
    if not np.isfinite(row.stability):
        why.append("no correct solution of any problem has this score on two repeats (stability)")
    if not np.isfinite(row.dynamic_range):
        why.append("no problem has >= 4 correct references with this score on the quartile repeat and on "
                   "another (dynamic range)")
    return "; ".join(why)


def mean_pairwise_abs_diff(codes: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: mean |x_i - x_j| over all pairs i < j (NaN below 2 finite values).

    For the group's sorted values x_(1) <= ... <= x_(n),
    sum_{i<j} (x_(j) - x_(i)) = sum_k (2k - n - 1) x_(k), divided by n(n-1)/2.

    Examples
    --------
    >>> mean_pairwise_abs_diff(np.array([0, 0, 0, 1]), np.array([1.0, 4.0, 2.0, 5.0]), 2).tolist()
    [2.0, nan]
    """
    use = np.isfinite(values)
    codes, values = codes[use], values[use]
    order = grouped_order(values, codes)
    c, v = codes[order], values[order]
    n = np.bincount(c, minlength=n_groups)
    start = np.concatenate(([0], np.cumsum(n)[:-1]))
    k = np.arange(len(c)) - start[c] + 1
    total = np.bincount(c, weights=(2 * k - n[c] - 1) * v, minlength=n_groups)
    pairs = n * (n - 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n >= 2, total / np.maximum(pairs, 1), np.nan)


def _pareto(stability: np.ndarray, spread: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """Non-dominated points for (low stability, high spread); who dominates each point."""
    m = len(stability)
    ok = np.isfinite(stability) & np.isfinite(spread)
    s, r = stability[:, None], spread[:, None]
    # dominates[i, j]: i dominates j
    dominates = ((s <= s.T) & (r >= r.T) & ((s < s.T) | (r > r.T))) & ok[:, None] & ok[None, :]
    dominated_by = [list(np.flatnonzero(dominates[:, j])) for j in range(m)]
    front = ok & ~dominates.any(axis=0)
    return front, dominated_by


def _paired_bootstrap(per_problem: np.ndarray, *, n_boot: int, seed: int | None) -> np.ndarray:
    """Resampled means over problems, one index matrix shared by every row.

    ``per_problem`` has shape (k, P) (NaN = problem not available); returns
    (k, n_boot) means. One shared matrix keeps aggregators paired, and a ratio
    of two rows uses the same resample for its numerator and denominator -
    which stats.bootstrap.bootstrap_ci (one array at a time) cannot offer.
    """
    k, n = per_problem.shape
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    valid = np.isfinite(per_problem)
    filled = np.where(valid, per_problem, 0.0)
    out = np.empty((k, n_boot))
    for i in range(k):  # one vectorised resample per aggregator (k ~ 18), never per problem
        with np.errstate(invalid="ignore", divide="ignore"):
            out[i] = filled[i][idx].sum(axis=1) / valid[i][idx].sum(axis=1)
    return out


def _share(hit: np.ndarray, defined: np.ndarray, *, empty: float) -> np.ndarray:
    """Share of ``hit`` among the ``defined`` entries along the last axis (``empty`` where none is defined)."""
    n = defined.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, (hit & defined).sum(axis=-1) / np.maximum(n, 1), empty)


def compare_aggregators(
    runs: pd.DataFrame,
    *,
    names: Sequence[str] | None = None,
    pools: pd.DataFrame | None = None,
    floor_s: float | None = None,
    quartile_repeat=None,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    tables: tuple[pd.DataFrame, pd.DataFrame] | None = None,
    leave_out: Collection[str] | None = None,
) -> AggregatorComparison:
    """Compare aggregators on stability (across repeats) and dynamic range.

    Procedure (DESIGN.md, "Aggregators"):

    1. The duration pool is fixed: :func:`stats.ranking.reference_pools` of
       ``runs`` (median of each reference's ok repeats).
    2. Every aggregator scores each (problem, solution, repeat) from that
       repeat's durations, and each reference once more from its
       repeat-collapsed durations (the *score pool*). Each repeat score becomes a
       within-problem percentile among the score pool (leave-self-out), so all
       aggregators live on 0-100.
    3. Stability of a correct solution = mean over pairs of repeats of
       |s_i - s_j|; per problem the mean over its correct solutions; reported as
       the mean and sd over problems.
    4. Dynamic range of a problem (>= 4 correct references): the repeat
       ``quartile_repeat`` (default: the first) ranks the references by their
       score; k = floor(n/4) fastest and k slowest form the quartiles; range =
       mean score over the *other* repeats of the slowest k minus that of the
       fastest k (an independent repeat, so a noisy aggregator cannot select its
       own lucky extremes). References tied across a quartile cut share it
       (tie-averaged weights, :func:`stats._ties.tail_weights`); scores are
       snapped to 12 significant digits (:func:`stats._ties.snap`) first.
    5. ratio = stability / dynamic range (lower = better); Pareto front on
       (low stability, high range); paired percentile-bootstrap CIs over problems.

    Parameters
    ----------
    runs : DataFrame
        Executions of one environment and one campaign with >= 2 repeats
        (``floor`` rows allowed: they give the floor for ``floor_pct``).
    names : sequence of str, optional
        Aggregators to compare (default: all registered).
    pools : DataFrame, optional
        Duration pool to rank against (default: built from ``runs``).
    floor_s : float, optional
        Sandbox floor; default the median of the ``floor`` rows (0 without any).
    quartile_repeat : optional
        Repeat value that defines the quartiles (default: the smallest).
    n_boot, level, seed
        Bootstrap over problems.
    tables : (DataFrame, DataFrame), optional
        The per-repeat and per-cell percentile tables of ``runs`` (without its ``floor`` rows) against
        ``pools``, when already computed (:func:`aggregator_problem_values`); default: computed.
    leave_out : collection of str, optional
        Problems whose rows are left out before anything is scored. Default: the problems ``runs`` cannot
        measure (:func:`stats.coverage.unmeasured_problems`: no optimization test, no correct reference, or
        every execution of its correct references timed out), as the aggregation audit leaves them out: such a
        problem's references all score 100 in every repeat, so it would add a stability and a range of 0 and
        a column to the bootstrap. ``()`` keeps every problem.

    Returns
    -------
    AggregatorComparison
    """
    if not isinstance(runs, pd.DataFrame):
        raise TypeError("runs must be a DataFrame of executions (one environment and campaign)")
    require_single_run(runs, "compare_aggregators")
    if "repeat" not in runs.columns:
        raise ValueError("compare_aggregators needs a 'repeat' column: stability compares repeats of the same cell")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    n_boot = check_n_boot(n_boot)  # 0: no resamples, every interval NaN, point estimates still computed
    names = list(_REGISTRY) if names is None else [get_aggregator(n).name for n in names]
    if floor_s is None:  # each language's own floor when the rows say which language they are
        floor_s = floors_by_language(runs) or floor_from_rows(runs) or 0.0
    if "role" in runs.columns:
        is_floor = _is(runs["role"], "floor")
        if is_floor.any():  # no copy of rows that have none
            runs = runs.loc[~is_floor]
    repeats = np.unique(runs["repeat"].to_numpy())
    if len(repeats) < 2:
        raise ValueError(f"compare_aggregators needs >= 2 repeats per cell; the runs have repeat values "
                         f"{repeats.tolist()}. Re-run the campaign with --repeats 2 or more.")
    if quartile_repeat is None:
        quartile_repeat = repeats[0]
    elif quartile_repeat not in set(repeats.tolist()):
        raise ValueError(f"quartile_repeat={quartile_repeat!r} is not among the repeats {repeats.tolist()}")
    if pools is None:
        pools = reference_pools(runs)

    if leave_out is None:
        leave_out = [problem for problem, _ in unmeasured_problems(runs)]
    values = aggregator_problem_values(runs, names=names, pools=pools, floor_s=floor_s,
                                       quartile_repeat=quartile_repeat, tables=tables, leave_out=leave_out)
    return combine_aggregator_values(values, n_repeats=len(repeats), quartile_repeat=quartile_repeat,
                                     n_boot=n_boot, level=level, seed=seed)


@dataclass(frozen=True)
class AggregatorProblemValues:
    """The per-problem part of :func:`compare_aggregators`: every figure of the comparison is a function of these.

    Computed from whole problems (all of a run's, or one partition's: :mod:`audits.engine.partitioned`) by
    :func:`aggregator_problem_values`; :func:`combine_aggregator_values` turns them into the comparison
    (means over problems, paired bootstrap, Pareto front).

    Attributes
    ----------
    names : tuple of str
        The aggregators, in comparison order.
    problems : ndarray of str
        The problems, in the order of the columns below.
    stability, dynamic_range : ndarray, shape (len(names), len(problems))
        Per problem: the mean over its correct solutions of the mean |s_i - s_j| over repeat pairs, and the
        slowest-minus-fastest reference quartile (NaN where undefined).
    digests : tuple of tuple of bytes
        Per aggregator, one BLAKE2 digest per part of its per-unit percentiles (rounded to 9 digits, NaN as -1):
        two aggregators are rank-identical (``same_as``) when every part's digests agree.
    """

    names: tuple
    problems: np.ndarray
    stability: np.ndarray
    dynamic_range: np.ndarray
    digests: tuple

    @classmethod
    def concat(cls, parts: Sequence["AggregatorProblemValues"]) -> "AggregatorProblemValues":
        """The values of several parts (disjoint problems, the same aggregators), columns in problem-name order.

        Problem-name order is the order of the problems' codes in a loaded dataset (its name categories are
        sorted), so the bootstrap over problems draws the same problems as the in-memory comparison, whatever
        the order or grouping of the parts.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("no per-problem values to combine")
        names = parts[0].names
        if any(p.names != names for p in parts):
            raise ValueError("per-problem values of different aggregators cannot be combined")
        problems = np.concatenate([p.problems for p in parts]).astype(object)
        order = np.argsort(problems.astype(str), kind="stable")
        if len(np.unique(problems.astype(str))) != len(problems):
            raise ValueError("the same problem is in two parts: a partition must hold whole problems")
        return cls(names=names, problems=problems[order],
                   stability=np.concatenate([p.stability for p in parts], axis=1)[:, order],
                   dynamic_range=np.concatenate([p.dynamic_range for p in parts], axis=1)[:, order],
                   digests=tuple(tuple(d for p in parts for d in p.digests[i]) for i in range(len(names))))


def _digest(pct: np.ndarray) -> bytes:
    """A digest of per-unit percentiles, equal exactly when the rounded arrays are equal (``same_as``).

    BLAKE2 rather than ``hash()``: the digests of the partitions are computed in other processes, where the
    hash of a bytes object differs (Python salts it per process)."""
    return hashlib.blake2b(np.round(np.nan_to_num(pct, nan=-1.0), 9).tobytes(), digest_size=16).digest()


def _with_limits(runs: pd.DataFrame, rep_cells: pd.DataFrame, col_cells: pd.DataFrame):
    """The two percentile tables with each row's time limit (``timeout_s``), which the penalty of a non-``ok``
    execution reads (:attr:`AggregationContext.penalized_duration`: max(d_t, timeout_s, 2 x slowest reference)).

    :func:`stats.ranking.percentile_table` keeps the key columns only, so the limit was never used: a timeout
    recorded with its duration (the limit, as the schema asks) was penalised at it, one recorded without
    (NaN: the loader allows it on non-``ok`` rows) only at twice the slowest reference, and a cell of
    ``runs`` that timed out in most repeats (its duration the median of its ``ok`` ones) likewise. The per-repeat
    table has one row per row of ``runs``, in order (its row's limit); a cell takes the largest limit of its
    rows. Tables that already carry ``timeout_s``, or a ``runs`` without it, are returned as they are.
    """
    if "timeout_s" not in runs.columns:
        return rep_cells, col_cells
    limit = runs["timeout_s"].to_numpy(dtype=float)
    if not np.isfinite(limit).any():
        return rep_cells, col_cells
    if "timeout_s" not in rep_cells.columns and len(rep_cells) == len(runs):
        rep_cells = rep_cells.assign(timeout_s=limit)
    if "timeout_s" not in col_cells.columns and len(col_cells):
        keys = [c for c in ("problem", "test", "solution") if c in col_cells.columns]
        cell_code, row_code, n_cells = joint_codes(col_cells, runs, keys)
        finite = np.isfinite(limit)
        cell_limit = np.full(n_cells, -np.inf)
        _grouped_extreme(cell_limit, row_code[finite], limit[finite], np.maximum)
        cell_limit[np.isneginf(cell_limit)] = np.nan
        col_cells = col_cells.assign(timeout_s=cell_limit[cell_code])
    return rep_cells, col_cells


def _without_problems(frame: pd.DataFrame, problems: set[str]) -> pd.DataFrame:
    """``frame`` without the rows of ``problems`` (names), index reset; ``frame`` itself when it has none."""
    column = frame["problem"]
    if isinstance(column.dtype, pd.CategoricalDtype):  # one test per category, not per row
        named = np.append(column.cat.categories.astype(str).isin(problems), False)  # code -1: not named
        drop = named[column.cat.codes.to_numpy()]
    else:
        drop = column.astype(str).isin(problems).to_numpy()
    return frame.loc[~drop].reset_index(drop=True) if drop.any() else frame


def aggregator_problem_values(runs: pd.DataFrame, *, names: Sequence[str], pools: pd.DataFrame,
                              floor_s: float | dict, quartile_repeat,
                              tables: tuple[pd.DataFrame, pd.DataFrame] | None = None,
                              leave_out: Collection[str] = ()) -> AggregatorProblemValues:
    """Per-problem stability and dynamic range of every aggregator (steps 1-4 of :func:`compare_aggregators`).

    ``runs``: the run's executions without its ``floor`` rows (whole problems: all of the run's, or a
    partition's); ``pools`` their reference pools; ``floor_s`` and ``quartile_repeat`` those of the whole run
    (the floor from the run's ``floor`` rows, the smallest repeat of the run), so that a partition scores
    its problems exactly as the whole run would. ``tables``: ``(percentile_table(runs, per_repeat=True,
    pools=pools), percentile_table(runs, pools=pools))`` when already computed (a run context's); default:
    computed here. ``leave_out``: problems (names) whose rows are left out before anything is scored, as if the
    run had none of their rows: the audit's problems the run cannot measure (:mod:`stats.coverage`).
    """
    names = tuple(names)
    if tables is None:
        tables = (percentile_table(runs, per_repeat=True, pools=pools), percentile_table(runs, pools=pools))
    rep_cells, col_cells = _with_limits(runs, *tables)
    leave_out = {str(p) for p in leave_out}
    if leave_out:  # each problem's values are its own rows' (a partition's are the whole run's): drop the rows
        rep_cells, col_cells, pools = (_without_problems(f, leave_out) for f in (rep_cells, col_cells, pools))
    ctx_rep, units_rep = aggregation_context(rep_cells, pools, by=["problem", "solution", "repeat"], floor_s=floor_s)
    ctx_col, units_col = aggregation_context(col_cells, pools, by=["problem", "solution"], floor_s=floor_s)

    def _flag(units, role_ok):
        m = np.ones(len(units), dtype=bool)
        if "correct" in units.columns:
            m &= units["correct"].to_numpy(dtype=bool)
        if "role" in units.columns:
            m &= units["role"].isin(role_ok).to_numpy()
        return m

    pool_mask = _flag(units_col, ["reference"])
    ref_units = units_col.loc[pool_mask]
    x_group, p_group, n_g = joint_codes(units_rep, ref_units, ["problem"])
    x_sol, p_sol, n_sol = joint_codes(units_rep, ref_units, ["problem", "solution"])

    # Stability population: correct solutions (references and candidates); range: correct references.
    stab_mask = _flag(units_rep, ["reference", "candidate"])
    ref_mask = _flag(units_rep, ["reference"])
    problem_code = x_group                                  # problem of every unit_rep row
    ps_code = x_sol                                         # (problem, solution) of every unit_rep row
    ps_problem = np.full(n_sol, -1, dtype=np.int64)
    ps_problem[ps_code] = problem_code
    is_q0 = (units_rep["repeat"].to_numpy() == quartile_repeat)
    # A problem whose quartile repeat timed no correct reference (every one of its executions there ended other
    # than ok: every reference scores the failure penalty, all tied) has no quartiles, and one whose other
    # repeats timed none has no scores to compare them on: its dynamic range is undefined, not 0 (the run-level
    # rule of stats.coverage, applied to the repeats the range reads).
    unit_ok = np.bincount(ctx_rep.codes[ctx_rep.ok], minlength=len(units_rep)) > 0
    timed_q0 = np.bincount(problem_code[ref_mask & is_q0 & unit_ok], minlength=n_g) > 0
    timed_q0 &= np.bincount(problem_code[ref_mask & ~is_q0 & unit_ok], minlength=n_g) > 0
    problem_names = np.empty(n_g, dtype=object)
    problem_names[problem_code] = units_rep["problem"].astype(str).to_numpy()

    stab_pp, range_pp, digests = [], [], []
    for name in names:
        agg = _REGISTRY[name]
        s_rep = _run(agg, ctx_rep)                  # snapped: equal rational scores compare equal
        s_col = _run(agg, ctx_col)[pool_mask]
        pct = _self_out_percentile(x_group, x_sol, s_rep, p_group, p_sol, s_col, n_g, n_sol)
        digests.append((_digest(pct),))

        # stability
        v = np.where(stab_mask, pct, np.nan)
        per_solution = mean_pairwise_abs_diff(ps_code, v, n_sol)
        has = np.isfinite(per_solution)
        num = np.bincount(ps_problem[has], weights=per_solution[has], minlength=n_g)
        den = np.bincount(ps_problem[has], minlength=n_g)
        with np.errstate(invalid="ignore", divide="ignore"):
            stab_pp.append(np.where(den > 0, num / np.maximum(den, 1), np.nan))

        # dynamic range: quartiles from the quartile repeat, scores from the others
        first_score = np.full(n_sol, np.nan)
        sel = ref_mask & is_q0 & np.isfinite(pct)
        first_score[ps_code[sel]] = pct[sel]
        other = ref_mask & ~is_q0 & np.isfinite(pct)
        later_sum = np.bincount(ps_code[other], weights=pct[other], minlength=n_sol)
        later_n = np.bincount(ps_code[other], minlength=n_sol)
        with np.errstate(invalid="ignore", divide="ignore"):
            later = np.where(later_n > 0, later_sum / np.maximum(later_n, 1), np.nan)
        eligible = np.flatnonzero(np.isfinite(first_score) & np.isfinite(later))
        prob = ps_problem[eligible]
        n_ref = np.bincount(prob, minlength=n_g)
        k = n_ref // 4
        # Tie-averaged quartiles (stats._ties.tail_weights): references whose
        # quartile-repeat scores tie across the cut share it, never input order.
        fast, slow = tail_weights(prob, first_score[eligible], k)
        fast_mean = np.bincount(prob, weights=fast * later[eligible], minlength=n_g) / np.maximum(k, 1)
        slow_mean = np.bincount(prob, weights=slow * later[eligible], minlength=n_g) / np.maximum(k, 1)
        range_pp.append(np.where((n_ref >= 4) & timed_q0, slow_mean - fast_mean, np.nan))

    return AggregatorProblemValues(names=names, problems=problem_names,
                                   stability=np.array(stab_pp).reshape(len(names), n_g),
                                   dynamic_range=np.array(range_pp).reshape(len(names), n_g), digests=tuple(digests))


def combine_aggregator_values(values: AggregatorProblemValues, *, n_repeats: int, quartile_repeat,
                              n_boot: int = 1000, level: float = 0.95, seed: int | None = 0) -> AggregatorComparison:
    """The comparison from per-problem values (step 5 of :func:`compare_aggregators`, which calls it).

    ``values``: :func:`aggregator_problem_values` of a run, or the :meth:`AggregatorProblemValues.concat` of its
    partitions' (the Dask path, :mod:`audits.engine.partitioned`: the same code on the same numbers in the same order,
    hence the same comparison); ``n_repeats`` and ``quartile_repeat`` those of the whole run.
    """
    names = list(values.names)
    stab_pp, range_pp, problem_names = values.stability, values.dynamic_range, values.problems
    n_g = len(problem_names)
    same_as, first_with = [], {}
    for name, key in zip(names, values.digests):  # rank-identical: the same percentiles on every unit
        same_as.append(first_with.get(key))
        first_with.setdefault(key, name)
    # One problem: every resample is that problem, so resampled "confidence" would be certainty: no resamples.
    resamples = check_n_boot(n_boot) if n_g >= 2 else 0
    boot_stab = _paired_bootstrap(stab_pp, n_boot=resamples, seed=seed)
    boot_range = _paired_bootstrap(range_pp, n_boot=resamples, seed=seed)   # same seed = same index matrix
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_ratio = boot_stab / boot_range
    alpha = (1 - level) / 2

    def ci(draws, measured):
        if not resamples:  # no interval without resamples
            return np.full(len(draws), np.nan), np.full(len(draws), np.nan)
        draws = np.asarray(draws, dtype=float)
        low, high = np.full(len(draws), np.nan), np.full(len(draws), np.nan)
        # an all-NaN row has no interval (NaN), and no numpy warning; neither has a figure measured on one problem:
        # every resample that defines it holds that problem only, so the "interval" is the point itself (a real
        # archive's geo_ratio read 66.7 [66.7, 66.7] over 1 problem), as the one-problem rule above says
        some = np.isfinite(draws).any(axis=1) & (measured >= 2)
        if some.any():
            low[some], high[some] = np.nanquantile(draws[some], [alpha, 1 - alpha], axis=1)
        return low, high

    with np.errstate(invalid="ignore", divide="ignore"):
        stability = np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in stab_pp])
        spread = np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan for r in range_pp])
        ratio = stability / spread
    sd = lambda rows: np.array([np.nanstd(r, ddof=1) if np.isfinite(r).sum() > 1 else np.nan for r in rows])  # noqa: E731
    front, dominated_by = _pareto(stability, spread)
    # Domination that survives resampling: b strictly dominates a in >= level of the paired resamples.
    with np.errstate(invalid="ignore"):
        sb, sa = boot_stab[:, None, :], boot_stab[None, :, :]
        rb, ra = boot_range[:, None, :], boot_range[None, :, :]
        # shares among the resamples where both are defined: a resample whose problems give one of them no
        # stability or range (NaN: e.g. none with >= 4 correct references) says nothing about which is better,
        # and a comparison with NaN is False, which counted it as "not better" (the CIs leave it out likewise)
        defined = np.isfinite(sb) & np.isfinite(sa) & np.isfinite(rb) & np.isfinite(ra)
        strict = (_share(((sb <= sa) & (rb >= ra) & ((sb < sa) | (rb > ra))), defined, empty=0.0) if resamples
                  else np.zeros((len(names), len(names))))   # [b, a]; no resamples: no confident domination
    confident_by = [[names[b] for b in np.flatnonzero(strict[:, a] >= level)] for a in range(len(names))]
    default = DEFAULT_AGGREGATOR if DEFAULT_AGGREGATOR in names else names[0]
    d_i = names.index(default)
    p_better = (_share(boot_ratio < boot_ratio[d_i][None, :],
                       np.isfinite(boot_ratio) & np.isfinite(boot_ratio[d_i][None, :]), empty=np.nan)
                if resamples else np.full(len(names), np.nan))
    n_stab, n_range = np.isfinite(stab_pp).sum(axis=1), np.isfinite(range_pp).sum(axis=1)
    s_lo, s_hi = ci(boot_stab, n_stab)
    r_lo, r_hi = ci(boot_range, n_range)
    q_lo, q_hi = ci(boot_ratio, np.minimum(n_stab, n_range))
    table = pd.DataFrame({
        "aggregator": names,
        "description": [_REGISTRY[n].description for n in names],
        "stability": stability, "stability_low": s_lo, "stability_high": s_hi, "stability_sd": sd(stab_pp),
        "dynamic_range": spread, "dynamic_range_low": r_lo, "dynamic_range_high": r_hi,
        "dynamic_range_sd": sd(range_pp),
        "ratio": ratio, "ratio_low": q_lo, "ratio_high": q_hi,
        "n_problems": n_stab,
        "n_problems_range": n_range,
        "pareto": front,
        "dominated_by": [[names[j] for j in d] for d in dominated_by],
        "dominated_by_confident": confident_by,
        "p_better_than_default": p_better,
        "same_as": same_as,
    })
    per_problem = pd.DataFrame({
        "aggregator": np.repeat(names, n_g),
        "problem": np.tile(problem_names, len(names)),
        "stability": stab_pp.ravel(),
        "dynamic_range": range_pp.ravel(),
    })
    return AggregatorComparison(table=table, per_problem=per_problem, n_problems=int(n_g),
                                n_repeats=int(n_repeats), quartile_repeat=quartile_repeat, level=level,
                                default=default)
