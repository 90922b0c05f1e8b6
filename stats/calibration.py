"""Calibration between two environments or two campaigns (DESIGN.md, "Calibration").

A source x and a target y are paired per (problem, test, solution) on the
median of ``ok`` repeats; a family f is fitted so that y ~ f(x):

=================  ==========================  ================================
family             model                       fitted as
=================  ==========================  ================================
``multiplicative`` y = slope * x               OLS of log y - log x (mean log ratio)
``affine``         y = slope * x + intercept   OLS
``power``          y = a * x ** b              OLS of log y on log x
``poly2``          y = c0 + c1 x + c2 x^2      OLS
``poly3``          y = c0 + ... + c3 x^3       OLS
``deming``         y = slope * x + intercept   Deming regression (errors in x and y)
=================  ==========================  ================================

Validity is leave-one-problem-out (LOPO): each problem's pairs are predicted
by the fit on all other problems, and all out-of-fold predictions are pooled:

    R^2_LOPO = 1 - sum_i (y_i - yhat_i)^2 / sum_i (y_i - mean(y))^2

with the mean over *all* pairs (never the mean of per-fold R^2), plus the
out-of-fold error on the log-ratio scale, sqrt(mean (log yhat_i - log y_i)^2).

Multiplicative and power are fitted in log space, so their predictions are
always positive; a family is unusable only for held-out predictions that are
non-finite, <= 0, or below a floor relative to the data
(:func:`prediction_floor`: a tenth of the smallest target duration), never an
absolute duration: benchmarks of 40 ns are as real as tests of 4 s.
For the least-squares families this is closed form: with basis phi(x) and
per-problem sufficient statistics A_p = sum phi phi^T, b_p = sum phi t, the fold
without problem p solves (A - A_p) beta = (b - b_p); all folds are one stacked
``np.linalg.solve``. Deming uses the per-problem first and second moments the
same way. Parameter CIs bootstrap problems with multinomial weights on the same
per-problem statistics (no refit loop).

The robust option (``robust="huber"``: :class:`sklearn.linear_model.HuberRegressor`;
``robust="theilsen"``: :func:`scipy.stats.theilslopes`) has no sufficient
statistics: it is fitted on at most ``max_points`` pairs (a seeded sample),
validated by K-fold over problems (K = min(10, problems), reported in the
``cv`` field) and bootstrapped with a refit loop.

Everything here is pure: tidy frames and arrays in, frames and frozen
dataclasses out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from math import comb

import numpy as np
import pandas as pd
from scipy.stats import theilslopes

from stats._groups import first_rows, group_codes
from stats._hashing import mix64, set_hash
from stats._ties import grouped_midranks, snap
from stats.bootstrap import Interval
from stats.declarations import FAMILIES, ROBUST_METHODS
from stats.ranking import problem_scores, reference_pools, solution_cells, test_percentiles

__all__ = [
    "FAMILIES",
    "FLOOR_SHARE",
    "prediction_floor",
    "share_off",
    "identity_log_rmse",
    "ROBUST_METHODS",
    "Pairing",
    "Fit",
    "LopoResult",
    "BlandAltman",
    "PercentileAgreement",
    "distinct_values",
    "resolve_key",
    "pair_medians",
    "pair_cells",
    "side_cells",
    "ptau_sides",
    "fit_family",
    "lopo_predictions",
    "lopo_r2",
    "undetermined_reason",
    "WithinProblemAgreement",
    "within_problem_spearman",
    "compare_families",
    "choose_family",
    "bootstrap_params",
    "bland_altman",
    "percentile_agreement",
    "campaign_drift",
    "ptau_sensitivity",
]

_PARAM_NAMES = {
    "multiplicative": ("slope",),
    "affine": ("intercept_s", "slope"),
    "power": ("a", "b"),
    "poly2": ("c0", "c1", "c2"),
    "poly3": ("c0", "c1", "c2", "c3"),
    "deming": ("intercept_s", "slope"),
}
_KEYS = ("environment", "campaign")


# ----------------------------------------------------------------------------- pairing

def distinct_values(values: pd.Series) -> list[str]:
    """Sorted distinct values as str (cheap on categoricals: no conversion of every row)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = np.unique(values.cat.codes.to_numpy())
        cats = values.cat.categories
        return sorted(str(cats[c]) for c in codes if c >= 0)
    return sorted(map(str, pd.unique(values)))


def resolve_key(corpus: pd.DataFrame, *, source: str, target: str, key: str = "auto") -> str:
    """Which column (``environment`` or ``campaign``) holds the names ``source`` and ``target``.

    ``key="auto"`` picks the one column in which both names occur and raises
    ``ValueError`` (listing the available values) when none or both do.

    Examples
    --------
    >>> frame = pd.DataFrame({"environment": ["quiet", "quiet"], "campaign": ["c0", "c1"]})
    >>> resolve_key(frame, source="c0", target="c1")
    'campaign'
    """
    if key not in ("auto",) + _KEYS:
        raise ValueError(f"key must be 'auto', 'environment' or 'campaign', got {key!r}")
    if source == target:
        raise ValueError(f"source and target are both {source!r}: name two different environments or campaigns")
    available = {c: distinct_values(corpus[c]) for c in _KEYS if c in corpus.columns}
    listing = "; ".join(f"{c}s: {', '.join(v[:20])}" for c, v in available.items())
    if key != "auto":
        if key not in available:
            raise ValueError(f"the corpus has no {key!r} column")
        missing = [n for n in (source, target) if n not in available[key]]
        if missing:
            raise ValueError(f"{key} {missing[0]!r} is not in the corpus ({listing})")
        return key
    holds = [c for c, values in available.items() if source in values and target in values]
    if len(holds) == 1:
        return holds[0]
    if len(holds) > 1:
        raise ValueError(f"{source!r} and {target!r} are names of both an environment and a campaign; "
                         f"say which with key='environment' or key='campaign' ({listing})")
    missing = [n for n in (source, target) if not any(n in v for v in available.values())]
    if missing:
        raise ValueError(f"{missing[0]!r} is neither an environment nor a campaign of the corpus ({listing})")
    raise ValueError(f"{source!r} and {target!r} are not both environments or both campaigns; "
                     f"calibration pairs two values of one column ({listing})")


@dataclass(frozen=True)
class Pairing:
    """Paired medians of a source and a target, and the cells that could not be paired.

    Attributes
    ----------
    frame : DataFrame
        One row per pair: the cell key (``problem, test, solution`` plus the
        ``within`` column when pairs are matched inside it), ``role``,
        ``correct``, ``test_kind``, ``x`` (source median, s), ``y`` (target
        median, s), ``n_ok_x``, ``n_ok_y``.
    lost : DataFrame
        ``reason, n_cells``: cells seen on either side but not paired.
    source_cells, target_cells : DataFrame
        Every cell of each side (:func:`stats.ranking.solution_cells`), kept
        so that later steps (:func:`percentile_agreement`) need not recompute them.
    """

    frame: pd.DataFrame = field(repr=False)
    lost: pd.DataFrame = field(repr=False)
    source: str = ""
    target: str = ""
    key: str = "campaign"
    within: str | None = None
    source_cells: pd.DataFrame | None = field(default=None, repr=False, compare=False)
    target_cells: pd.DataFrame | None = field(default=None, repr=False, compare=False)

    @property
    def n_pairs(self) -> int:
        return len(self.frame)

    @property
    def n_lost(self) -> int:
        return int(self.lost["n_cells"].sum()) if len(self.lost) else 0

    @property
    def n_problems(self) -> int:
        return int(self.frame["problem"].nunique()) if len(self.frame) else 0

    def to_dict(self) -> dict:
        return {"source": self.source, "target": self.target, "key": self.key, "within": self.within,
                "n_pairs": self.n_pairs, "n_problems": self.n_problems, "n_lost": self.n_lost,
                "lost": {r: int(n) for r, n in zip(self.lost["reason"], self.lost["n_cells"])}}

    def to_frame(self) -> pd.DataFrame:
        return self.frame

    def summary(self) -> str:
        lost = ", ".join(f"{r} {n:,}" for r, n in zip(self.lost["reason"], self.lost["n_cells"]) if n) or "none"
        return (f"{self.key} {self.source} -> {self.target}: {self.n_pairs:,} pairs over {self.n_problems:,} "
                f"problems; lost: {lost}")


_LOST_REASONS = ("role_excluded", "only_in_source", "only_in_target", "no_ok_repeat_source",
                 "no_ok_repeat_target", "non_positive_duration")


def pair_medians(
    corpus: pd.DataFrame,
    *,
    source: str,
    target: str,
    key: str = "auto",
    roles: Sequence[str] = ("reference", "candidate"),
) -> Pairing:
    """Pair the median ``ok`` duration of every (problem, test, solution) across two runs.

    Parameters
    ----------
    corpus : DataFrame
        A timing corpus (several environments / campaigns).
    source, target : str
        Names of two environments or two campaigns (the column is found by
        :func:`resolve_key`).
    key : {"auto", "environment", "campaign"}
    roles : sequence of str
        Roles whose cells are paired; ``floor`` rows (the empty program) are
        excluded by default and counted as ``role_excluded``.

    Returns
    -------
    Pairing
        When the other column (e.g. campaign, when pairing environments) has
        the same several values on both sides, pairs are matched within each of
        them (``within``); when each side has one value it is ignored.

    Notes
    -----
    A cell is lost for the first of: its role is excluded; it exists on one
    side only; it has no ``ok`` repeat on the source / target side; a median
    is <= 0 (logs are undefined).

    Examples
    --------
    >>> runs = pd.DataFrame({"campaign": ["c0", "c0", "c1", "c1"], "environment": "e",
    ...     "problem": "p", "test": "t", "solution": "s", "repeat": [0, 1, 0, 1],
    ...     "duration_s": [1.0, 3.0, 4.0, 6.0], "status": "ok", "role": "reference"})
    >>> pair_medians(runs, source="c0", target="c1").frame[["x", "y"]].values.tolist()
    [[2.0, 5.0]]
    """
    key = resolve_key(corpus, source=source, target=target, key=key)
    src, tgt, within, n_role_excluded = side_cells(corpus, source=source, target=target, key=key, roles=roles)
    return pair_cells(src, tgt, source=source, target=target, key=key, within=within,
                      n_role_excluded=n_role_excluded)


def side_cells(corpus: pd.DataFrame, *, source: str, target: str, key: str,
               roles: Sequence[str] = ("reference", "candidate")) -> tuple[pd.DataFrame, pd.DataFrame, str | None,
                                                                           int]:
    """The cells :func:`pair_medians` pairs: ``(source cells, target cells, within, cells excluded by role)``
    (``key`` resolved; a corpus of some problems gives the cells of those problems)."""
    other = "campaign" if key == "environment" else "environment"
    is_src = (corpus[key] == source).to_numpy().copy()
    is_tgt = (corpus[key] == target).to_numpy().copy()
    within = None
    if other in corpus.columns:
        src_vals = set(distinct_values(corpus.loc[is_src, other]))
        tgt_vals = set(distinct_values(corpus.loc[is_tgt, other]))
        if len(src_vals) > 1 or len(tgt_vals) > 1:
            if src_vals != tgt_vals:
                raise ValueError(
                    f"{key} {source!r} spans {other}s {sorted(src_vals)} and {target!r} spans {sorted(tgt_vals)}; "
                    f"pairs are matched within one {other}: select rows of one {other} first")
            within = other
    cell_key = ["problem", "test", "solution"] + ([within] if within else [])
    n_role_excluded = 0
    if "role" in corpus.columns:
        role_ok = corpus["role"].isin(list(roles)).to_numpy()
        excluded = corpus.loc[(is_src | is_tgt) & ~role_ok]
        if len(excluded):
            n_role_excluded = group_codes(excluded, cell_key + [key])[1]
        is_src &= role_ok
        is_tgt &= role_ok
    cols = [c for c in cell_key + ["repeat", "duration_s", "status", "role", "correct", "test_kind"]
            if c in corpus.columns]
    src = solution_cells(corpus.loc[is_src, cols], by=cell_key)
    tgt = solution_cells(corpus.loc[is_tgt, cols], by=cell_key)
    return src, tgt, within, n_role_excluded


def pair_cells(src: pd.DataFrame, tgt: pd.DataFrame, *, source: str, target: str, key: str,
               within: str | None = None, n_role_excluded: int = 0) -> Pairing:
    """:func:`pair_medians` from the two sides' cells (:func:`stats.ranking.solution_cells` by problem, test,
    solution and ``within``), e.g. computed partition by partition and concatenated in problem order;
    ``n_role_excluded`` counts the cells left out for their role."""
    cell_key = ["problem", "test", "solution"] + ([within] if within else [])
    both = pd.concat([src[cell_key], tgt[cell_key]], ignore_index=True)
    codes, n_codes = group_codes(both, cell_key)
    src_code, tgt_code = codes[: len(src)], codes[len(src):]
    tgt_row = np.full(n_codes, -1, dtype=np.int64)
    tgt_row[tgt_code] = np.arange(len(tgt))
    src_row = np.full(n_codes, -1, dtype=np.int64)
    src_row[src_code] = np.arange(len(src))
    match = tgt_row[src_code]
    in_both = match >= 0
    only_src = int((~in_both).sum())
    only_tgt = int((src_row[tgt_code] < 0).sum())

    x = src["duration_s"].to_numpy(dtype=float)[in_both]
    y = tgt["duration_s"].to_numpy(dtype=float)[match[in_both]]
    no_x = ~np.isfinite(x)
    no_y = np.isfinite(x) & ~np.isfinite(y)
    non_pos = np.isfinite(x) & np.isfinite(y) & ((x <= 0) | (y <= 0))
    good = ~(no_x | no_y | non_pos)

    frame = src.loc[in_both].reset_index(drop=True).loc[good]
    frame = frame.drop(columns=[c for c in ("duration_s", "status", "n_runs", "n_ok") if c in frame.columns])
    frame["x"] = x[good]
    frame["y"] = y[good]
    frame["n_ok_x"] = src["n_ok"].to_numpy()[in_both][good]
    frame["n_ok_y"] = tgt["n_ok"].to_numpy()[match[in_both]][good]
    frame = frame.reset_index(drop=True)
    counts = [n_role_excluded, only_src, only_tgt, int(no_x.sum()), int(no_y.sum()), int(non_pos.sum())]
    lost = pd.DataFrame({"reason": list(_LOST_REASONS), "n_cells": counts})
    return Pairing(frame=frame, lost=lost, source=source, target=target, key=key, within=within,
                   source_cells=src, target_cells=tgt)


# ----------------------------------------------------------------------------- families

@dataclass(frozen=True)
class _Basis:
    """Standardised basis of a least-squares family: u = (v - center) / scale, v = x or log x.

    Multiplicative is fitted in log space with the slope of log x fixed at 1: its design is a
    column of ones and its target log y - log x, so beta = the mean log ratio (log slope).
    """

    family: str
    center: float
    scale: float

    @property
    def degree(self) -> int:
        return {"multiplicative": 0, "affine": 1, "power": 1, "poly2": 2, "poly3": 3}[self.family]

    @property
    def log(self) -> bool:
        return self.family in ("power", "multiplicative")

    def design(self, x: np.ndarray) -> np.ndarray:
        if self.family == "multiplicative":
            return np.ones((len(x), 1))
        v = np.log(x) if self.log else x
        u = (v - self.center) / self.scale
        return np.vander(u, self.degree + 1, increasing=True)

    def target(self, y: np.ndarray, x: np.ndarray) -> np.ndarray:
        if self.family == "multiplicative":
            return np.log(y) - np.log(x)
        return np.log(y) if self.log else y

    def predict(self, fitted: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Durations from the fitted values of the design (on the target's scale)."""
        if self.family == "multiplicative":
            return x * np.exp(fitted)
        return np.exp(fitted) if self.log else fitted

    def to_natural(self) -> np.ndarray:
        """Matrix M with natural coefficients = M @ beta (coefficients of powers of v)."""
        if self.family == "multiplicative":
            return np.array([[1.0]])
        k = self.degree + 1
        alpha, gamma = -self.center / self.scale, 1.0 / self.scale
        m = np.zeros((k, k))
        for j in range(k):
            for i in range(j + 1):
                m[i, j] = comb(j, i) * alpha ** (j - i) * gamma ** i
        return m


def _no_slope(family: str, x: np.ndarray) -> bool:
    """True when ``family`` has a slope and every source value is the same: no line (curve) is determined.

    Any line through (x0, mean y) fits equally well (scipy's ``linregress`` refuses such x); a fit would divide by
    the float dust of the standard deviation of equal numbers. Multiplicative (a ratio) and Deming (NaN by its
    formula) are defined or undefined on their own.
    """
    return family in ("affine", "power", "poly2", "poly3") and len(x) > 0 and bool(np.ptp(x) == 0)


#: The polynomials' coefficients. A polynomial is judged only on more distinct source durations than it has
#: coefficients: with fewer it is not determined (least squares returns one of infinitely many curves, the
#: smallest in norm), and with exactly as many it passes through the mean target duration at each source value,
#: so nothing in the pairs could reject its curve, and out of fold it wins by that flexibility alone. A count of
#: distinct values (compared after :func:`stats._ties.snap`), never a duration: the same on nanoseconds and seconds.
_CURVE_COEFFICIENTS = {"poly2": 3, "poly3": 4}


def _distinct_codes(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of the distinct source durations (equal after :func:`snap`) and how many there are."""
    codes, uniques = pd.factorize(snap(x), sort=True)
    return codes.astype(np.int64), len(uniques)


#: How many source durations :func:`_more_distinct_than` looks at before counting all of them: real timings are
#: continuous, so a few thousand pairs settle "more than 4 distinct values" without a pass over 10^7 of them. Only
#: a cost bound: the answer is exact either way.
_HEAD = 4096


def _more_distinct_than(x: np.ndarray, k: int) -> bool:
    """Whether ``x`` holds more than ``k`` distinct durations (equal after :func:`snap`), exactly."""
    if len(pd.unique(snap(x[:_HEAD]))) > k:
        return True
    return len(x) > _HEAD and len(pd.unique(snap(x))) > k


def _fold_distinct(x: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group g: the distinct source durations left when g is held out (the values only g holds are lost)."""
    values, n_values = _distinct_codes(x)
    pairs = pd.unique(values * n_groups + groups)  # each (value, group) once
    holders = np.bincount(pairs // n_groups, minlength=n_values)
    only = pairs[holders[pairs // n_groups] == 1] % n_groups  # the group of each value held by one group
    return n_values - np.bincount(only, minlength=n_groups)


def _short_folds(k: int, x: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray | None:
    """Per group, whether holding it out leaves <= ``k`` distinct source durations; None when no fold does.

    When the two largest groups each hold more than ``k`` values, every fold keeps one of them whole: no fold is
    short, found without counting the values of every pair (:func:`_fold_distinct`, the exact count otherwise).
    """
    sizes = np.bincount(groups, minlength=n_groups)
    big = np.argsort(sizes, kind="stable")[-2:]
    if len(big) == 2 and all(_more_distinct_than(x[groups == g], k) for g in big):
        return None
    short = _fold_distinct(x, groups, n_groups) <= k
    return short if short.any() else None


def _too_few_values(family: str, x: np.ndarray) -> bool:
    """A polynomial on no more distinct source durations than its coefficients (:data:`_CURVE_COEFFICIENTS`)."""
    k = _CURVE_COEFFICIENTS.get(family)
    return k is not None and len(x) > 0 and not _more_distinct_than(x, k)


def undetermined_reason(family: str, x, groups=None) -> str:
    """Why ``family`` cannot be fitted and judged on these paired source durations ('' when it can).

    A polynomial needs more distinct source durations than coefficients (:data:`_CURVE_COEFFICIENTS`: poly2 4,
    poly3 5), on all the pairs and, with ``groups`` (problems), in every leave-one-problem-out fold (a problem
    that alone holds a value takes it out of its fold). The other families: ''.

    Examples
    --------
    >>> undetermined_reason("poly2", [1e-9, 2e-9, 3e-9, 1e-9])[:60]
    'the paired source durations take 3 distinct values and poly2'
    >>> undetermined_reason("poly2", [1.0, 2.0, 3.0, 4.0]), undetermined_reason("affine", [1.0, 2.0])
    ('', '')
    """
    k = _CURVE_COEFFICIENTS.get(family)
    x = np.asarray(x, dtype=float)
    if k is None or not len(x):
        return ""
    if not _more_distinct_than(x, k):
        n = len(pd.unique(snap(x)))
        return (f"the paired source durations take {n} distinct value{'s' if n != 1 else ''} and {family} has {k} "
                f"coefficients: it needs at least {k + 1} ("
                + ("with as many it passes through the mean target duration at each, leaving no residual that could "
                   "reject its curve" if n == k else "with fewer it is not determined")
                + "); a line or a factor is judged instead, or time more varied tests")
    if groups is None:
        return ""
    codes, n_groups = _group_index(groups)
    if n_groups < 2:
        return ""
    short = _short_folds(k, x, codes, n_groups)
    if short is None:
        return ""
    left = _fold_distinct(x, codes, n_groups)
    bad = np.flatnonzero(short)
    return (f"holding out {len(bad)} of {n_groups} problems leaves {int(left[bad].min())} distinct source "
            f"durations (each of them alone holds a value), and {family} has {k} coefficients: it cannot be "
            f"validated on those held-out problems; a line or a factor is judged instead, or time more varied tests")


def _make_basis(family: str, x: np.ndarray) -> _Basis:
    if family == "multiplicative":
        return _Basis(family, 0.0, 1.0)
    v = np.log(x) if family == "power" else x
    center = float(np.mean(v))
    scale = float(np.std(v)) or 1.0
    return _Basis(family, center, scale)


def _check_xy(x, y, groups=None):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-d arrays of one length, got shapes {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("x and y must be finite (pair_medians drops cells without ok repeats)")
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != x.shape:
            raise ValueError(f"groups must align with x: shapes {groups.shape} and {x.shape}")
    return x, y, groups


def _check_family(family: str) -> None:
    if family not in FAMILIES:
        raise ValueError(f"unknown calibration family {family!r}; choose one of {', '.join(FAMILIES)}")


def _natural_params(family: str, natural: np.ndarray) -> np.ndarray:
    """Natural coefficient vector(s) -> reported parameters (same order as _PARAM_NAMES)."""
    natural = np.asarray(natural, dtype=float)
    if family in ("power", "multiplicative"):  # [log a, b] -> [a, b]; [log slope] -> [slope]
        out = natural.copy()
        out[..., 0] = np.exp(natural[..., 0])
        return out
    return natural


@dataclass(frozen=True)
class Fit:
    """A fitted calibration map y = f(x).

    Attributes
    ----------
    family : str
    params : dict
        Natural parameters: ``slope`` / ``intercept_s`` (seconds) for the
        linear families, ``a`` / ``b`` for power, ``c0..c3`` (c_i multiplies
        x**i, x in seconds) for the polynomials.
    method : str
        ``ols``, ``deming``, ``huber`` or ``theilsen``.
    n : int
        Pairs used.
    """

    family: str
    params: dict
    method: str = "ols"
    n: int = 0
    variance_ratio: float | None = None

    def predict(self, x) -> np.ndarray:
        """f(x) on the target scale (seconds)."""
        x = np.asarray(x, dtype=float)
        p = self.params
        if self.family == "multiplicative":
            return p["slope"] * x
        if self.family in ("affine", "deming"):
            return p["slope"] * x + p["intercept_s"]
        if self.family == "power":
            with np.errstate(divide="ignore", invalid="ignore"):
                return p["a"] * np.power(x, p["b"])
        coefs = [p[f"c{i}"] for i in range(4) if f"c{i}" in p]
        return np.polynomial.polynomial.polyval(x, coefs)

    def formula(self) -> str:
        p = self.params
        if self.family == "multiplicative":
            return f"y = {p['slope']:.4g} x"
        if self.family in ("affine", "deming"):
            return f"y = {p['slope']:.4g} x {'+' if p['intercept_s'] >= 0 else '-'} {abs(p['intercept_s']):.4g} s"
        if self.family == "power":
            return f"y = {p['a']:.4g} x^{p['b']:.4g}"
        terms = [(p[f"c{i}"], ("", " x", " x^2", " x^3")[i]) for i in range(4) if f"c{i}" in p]
        text = f"y = {terms[0][0]:.4g}{terms[0][1]}"
        for value, power in terms[1:]:
            text += f" {'+' if value >= 0 else '-'} {abs(value):.4g}{power}"
        return text

    def to_dict(self) -> dict:
        return {"family": self.family, "method": self.method, "params": dict(self.params), "n": self.n,
                "formula": self.formula(), "variance_ratio": self.variance_ratio}


def _deming_from_moments(n, sx, sy, sxx, syy, sxy, delta):
    """Deming slope and intercept from (possibly stacked) raw moments.

    slope = (Syy - d Sxx + sqrt((Syy - d Sxx)^2 + 4 d Sxy^2)) / (2 Sxy), with
    centred sums S and d = var(error in y) / var(error in x).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        mx, my = sx / n, sy / n
        cxx = sxx - sx * mx
        cyy = syy - sy * my
        cxy = sxy - sx * my
        diff = cyy - delta * cxx
        slope = (diff + np.sqrt(diff * diff + 4.0 * delta * cxy * cxy)) / (2.0 * cxy)
        intercept = my - slope * mx
    return intercept, slope


def _deming_moments(x, y, codes, n_groups, cx, cy):
    """Per-group [n, sx, sy, sxx, syy, sxy] of the centred values (shape (G, 6))."""
    xc, yc = x - cx, y - cy
    cols = [np.ones_like(xc), xc, yc, xc * xc, yc * yc, xc * yc]
    return np.stack([np.bincount(codes, weights=c, minlength=n_groups) for c in cols], axis=1)


def _deming_params(mom, delta, cx, cy):
    """Natural [intercept, slope] from centred moments (..., 6)."""
    b0c, slope = _deming_from_moments(*(mom[..., i] for i in range(6)), delta)
    intercept = b0c + cy - slope * cx
    return np.stack([intercept, slope], axis=-1)


def fit_family(
    x,
    y,
    family: str,
    *,
    robust: str | None = None,
    variance_ratio: float = 1.0,
    max_points: int = 5000,
    seed: int | None = 0,
) -> Fit:
    """Fit one calibration family y ~ f(x).

    Parameters
    ----------
    x, y : array of float
        Paired source and target durations in seconds (> 0 for ``power``).
    family : {"multiplicative", "affine", "power", "poly2", "poly3", "deming"}
    robust : {None, "huber", "theilsen"}
        Robust alternative to least squares. ``huber``: sklearn's
        ``HuberRegressor(epsilon=1.35, alpha=0)`` on the family's basis;
        ``theilsen``: scipy's ``theilslopes`` (affine and power; multiplicative
        uses the median of y/x). Fitted on a seeded sample of at most
        ``max_points`` pairs (Theil-Sen: at most 2000, it forms all pairwise
        slopes). Not used with ``deming``.
    variance_ratio : float, default 1
        Deming's d = var(error of y) / var(error of x); 1 is orthogonal
        regression, d -> infinity tends to OLS of y on x.

    Returns
    -------
    Fit

    Examples
    --------
    >>> x = np.array([0.1, 0.2, 0.4, 0.8])
    >>> fit = fit_family(x, 0.63 * x + 0.053, "affine")
    >>> round(fit.params["slope"], 6), round(fit.params["intercept_s"], 6), fit.formula()
    (0.63, 0.053, 'y = 0.63 x + 0.053 s')
    """
    _check_family(family)
    x, y, _ = _check_xy(x, y)
    if len(x) < 2:
        raise ValueError(f"fitting {family} needs at least 2 pairs, got {len(x)}")
    if family in ("power", "multiplicative") and ((x <= 0).any() or (y <= 0).any()):
        raise ValueError(f"the {family} family is fitted on logs: durations must be > 0")
    if family == "deming":
        if robust:
            raise ValueError("robust fitting is not available for deming (it already models errors in x)")
        if not variance_ratio > 0:
            raise ValueError(f"variance_ratio must be > 0, got {variance_ratio}")
        cx, cy = float(np.mean(x)), float(np.mean(y))
        mom = _deming_moments(x, y, np.zeros(len(x), dtype=np.int64), 1, cx, cy)[0]
        natural = _deming_params(mom, variance_ratio, cx, cy)
        return Fit(family, dict(zip(_PARAM_NAMES[family], map(float, natural))), "deming", len(x),
                   float(variance_ratio))
    if _no_slope(family, x) or _too_few_values(family, x):  # no parameter (no curve) is determined by the values
        return Fit(family, dict.fromkeys(_PARAM_NAMES[family], np.nan), robust or "ols", len(x))
    basis = _make_basis(family, x)
    if robust is None:
        beta, *_ = np.linalg.lstsq(basis.design(x), basis.target(y, x), rcond=None)
        natural = basis.to_natural() @ beta
        method = "ols"
    else:
        rng = np.random.default_rng(seed)
        natural = _robust_natural(x, y, basis, robust, rng, max_points)
        method = robust
    params = _natural_params(family, natural)
    return Fit(family, dict(zip(_PARAM_NAMES[family], map(float, params))), method, len(x))


def _robust_natural(x, y, basis: _Basis, method: str, rng, max_points: int) -> np.ndarray:
    if method not in ROBUST_METHODS:
        raise ValueError(f"robust must be None or one of {ROBUST_METHODS}, got {method!r}")
    if method == "theilsen":
        max_points = min(max_points, 2000)  # Theil-Sen forms all n^2/2 pairwise slopes
    if len(x) > max_points:
        pick = rng.choice(len(x), size=max_points, replace=False)
        x, y = x[pick], y[pick]
    design, t = basis.design(x), basis.target(y, x)
    if method == "huber":
        # deferred: sklearn (and its import cost) only for the optional robust fit robust="huber"
        from sklearn.linear_model import HuberRegressor

        if basis.family == "multiplicative":
            model = HuberRegressor(epsilon=1.35, alpha=0.0, fit_intercept=False, max_iter=1000).fit(design, t)
            beta = model.coef_
        else:
            model = HuberRegressor(epsilon=1.35, alpha=0.0, max_iter=1000).fit(design[:, 1:], t)
            beta = np.concatenate(([model.intercept_], model.coef_))
        return basis.to_natural() @ beta

    if basis.family == "multiplicative":
        return np.array([np.median(t)])  # the median log ratio
    if basis.degree != 1:
        raise ValueError("theilsen fits a straight line: use it with affine, power or multiplicative")
    v = np.log(x) if basis.log else x
    slope, intercept, *_ = theilslopes(t, v)
    return np.array([intercept, slope])


# ----------------------------------------------------------------------------- LOPO

def _group_index(groups, *data, computed=()) -> tuple[np.ndarray, int]:
    """Codes 0..n-1 of the groups (problems) and n.

    Without data the groups are numbered by name (sorted, never by first appearance: row order decides
    nothing). With ``data`` (arrays aligned with ``groups``: measured values, e.g. the pairs' medians x and y)
    they are numbered in the order of a hash of each group's own rows (:func:`_data_keys`), then of its
    ``computed`` values (e.g. predictions, whose last bits depend on the order of a sum: hashed after
    :func:`snap`), so the bootstrap draws (one count per code) and the folds' sums follow the data and not the
    names: renaming the problems changes no figure. Groups with the same rows tie and keep their name order
    (they are interchangeable).
    """
    codes, uniques = pd.factorize(np.asarray(groups), sort=True)
    codes, n = codes.astype(np.int64), len(uniques)
    if not (data or computed) or n < 2:
        return codes, n
    measured = _data_keys(codes, n, *data) if data else np.zeros(n, dtype=np.uint64)
    tied = len(np.unique(measured)) < n  # the computed values only order groups the measured ones leave tied
    keys = [_data_keys(codes, n, *(np.asarray(snap(np.asarray(c, dtype=np.float64))) for c in computed))
            if computed and tied else np.zeros(n, dtype=np.uint64), measured]
    rank = np.empty(n, dtype=np.int64)
    rank[np.lexsort(keys)] = np.arange(n)  # lexsort is stable: ties keep the name order
    return rank[codes], n


def _data_keys(codes: np.ndarray, n: int, *data) -> np.ndarray:
    """A 64-bit key of each group's multiset of rows (the values of ``data`` in each row, NaN as one value, -0.0
    as 0.0): the wrapping sum of the rows' hashes, so any row order gives the same key, in one pass."""
    row = np.zeros(len(codes), dtype=np.uint64)
    for column in data:
        v = np.asarray(column, dtype=np.float64) + 0.0
        row = mix64(row ^ np.where(np.isnan(v), np.nan, v).view(np.uint64))
    return set_hash(row, codes, n)


def _grouped_normal(design: np.ndarray, t: np.ndarray, codes: np.ndarray, n_groups: int):
    """Per-group normal equations: A (G, k, k) and b (G, k)."""
    k = design.shape[1]
    a = np.empty((n_groups, k, k))
    for i in range(k):
        for j in range(i, k):
            a[:, i, j] = a[:, j, i] = np.bincount(codes, weights=design[:, i] * design[:, j], minlength=n_groups)
    b = np.stack([np.bincount(codes, weights=design[:, i] * t, minlength=n_groups) for i in range(k)], axis=1)
    return a, b


def _solve_stack(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve a stack of small normal equations; singular ones by pseudo-inverse (min-norm)."""
    try:
        return np.linalg.solve(a, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return np.einsum("gij,gj->gi", np.linalg.pinv(a), b)


def lopo_predictions(x, y, groups, family: str, *, variance_ratio: float = 1.0) -> np.ndarray:
    """Leave-one-group-out predictions of y (closed form from grouped sufficient statistics).

    Each pair's prediction comes from the fit on all *other* groups (problems).
    For the least-squares families the fold without group g solves
    (A - A_g) beta_g = (b - b_g) with A_g = sum_{i in g} phi_i phi_i^T and
    b_g = sum_{i in g} phi_i t_i; all folds in one stacked solve. Power is
    fitted on logs and returned as exp(prediction). Deming subtracts the
    group's moments. Equal to sklearn's ``cross_val_predict(..., cv=LeaveOneGroupOut())``.

    Returns
    -------
    ndarray of float aligned with ``x`` (NaN where a fold cannot be fitted,
    e.g. only one group).

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 3.0, 4.0]); y = 2 * x + 1
    >>> lopo_predictions(x, y, ["a", "a", "b", "b"], "affine").round(6).tolist()
    [3.0, 5.0, 7.0, 9.0]
    """
    _check_family(family)
    x, y, groups = _check_xy(x, y, groups)
    codes, n_groups = _group_index(groups, x, y)
    if n_groups < 2:
        return np.full(len(x), np.nan)
    if family == "deming":
        cx, cy = float(np.mean(x)), float(np.mean(y))
        mom = _deming_moments(x, y, codes, n_groups, cx, cy)
        fold = mom.sum(axis=0) - mom
        natural = _deming_params(fold, variance_ratio, cx, cy)[codes]
        return natural[:, 0] + natural[:, 1] * x
    if family in ("power", "multiplicative") and ((x <= 0).any() or (y <= 0).any()):
        raise ValueError(f"the {family} family is fitted on logs: durations must be > 0")
    if _no_slope(family, x) or _too_few_values(family, x):  # every fold's source values are as few
        return np.full(len(x), np.nan)
    basis = _make_basis(family, x)
    design, t = basis.design(x), basis.target(y, x)
    a, b = _grouped_normal(design, t, codes, n_groups)
    beta = _solve_stack(a.sum(axis=0) - a, b.sum(axis=0) - b)
    pred = basis.predict(np.einsum("ik,ik->i", design, beta[codes]), x)
    k = _CURVE_COEFFICIENTS.get(family)
    short = _short_folds(k, x, codes, n_groups) if k is not None else None
    if short is not None:  # a fold left with too few distinct source values fits no judged curve (undetermined_reason)
        pred[short[codes]] = np.nan
    return pred


def _kfold_robust_predictions(x, y, codes, n_groups, family, method, *, max_points, seed, n_folds=10):
    if _no_slope(family, x) or _too_few_values(family, x):
        return np.full(len(x), np.nan)
    basis = _make_basis(family, x)
    rng = np.random.default_rng(seed)
    fold_of_group = rng.permutation(n_groups) % min(n_folds, n_groups)
    fold = fold_of_group[codes]
    pred = np.full(len(x), np.nan)
    for f in range(min(n_folds, n_groups)):
        test = fold == f
        natural = _robust_natural(x[~test], y[~test], basis, method, rng, max_points)
        params = _natural_params(family, natural)
        pred[test] = Fit(family, dict(zip(_PARAM_NAMES[family], params))).predict(x[test])
    return pred


#: A held-out prediction below this share of the smallest observed target duration is unusable
#: (:func:`prediction_floor`).
FLOOR_SHARE = 0.1


def prediction_floor(y, *, share: float = FLOOR_SHARE) -> tuple[float, str]:
    """The smallest usable predicted duration, relative to the data, and the reason for it.

    floor = ``share`` x min(y) over the target durations (default a tenth of the fastest one).
    A prediction below it lies more than 1/``share`` times beneath anything the target measured:
    an extrapolation no ranking should rest on, and clipping it would tie the clipped solutions.
    Relative, never an absolute duration: a benchmark of 40 ns is as real as a test of 4 s.

    Examples
    --------
    >>> prediction_floor([4e-8, 2e-7, 3.0])[0]
    4e-09
    """
    y = np.asarray(y, dtype=float)
    y = y[np.isfinite(y) & (y > 0)]
    if not len(y):
        return np.nan, "no positive target duration to set a floor from"
    floor = float(share * y.min())
    return floor, (f"{share:g} x the smallest target duration ({y.min():.3g} s): a prediction below "
                   f"{floor:.3g} s lies more than {1 / share:g}x beneath anything the target measured")


def share_off(predicted, y, *, factor: float = 2.0) -> float:
    """Share of pairs whose prediction is more than ``factor`` x off the target either way.

    |log(predicted / y)| > log(factor); a non-finite or non-positive prediction counts as off. NaN for no pairs.

    >>> share_off([1.0, 3.0, 0.4], [1.0, 1.0, 1.0])
    0.6666666666666666
    """
    predicted = np.asarray(predicted, dtype=float)
    y = np.asarray(y, dtype=float)
    if not len(y):
        return np.nan
    good = np.isfinite(predicted) & (predicted > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.abs(np.log(np.where(good, predicted, 1.0)) - np.log(y))
    return float(np.mean(~good | (ratio > np.log(factor))))


def identity_log_rmse(x, y) -> float:
    """Log error of using the source as it is (no map): sqrt(mean (log x - log y)^2), the baseline a
    calibration map must beat out of fold.

    >>> round(identity_log_rmse([1.0, 2.0], [2.0, 4.0]), 6)
    0.693147
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    return float(np.sqrt(np.mean((np.log(x) - np.log(y)) ** 2))) if len(x) else np.nan


@dataclass(frozen=True)
class LopoResult:
    """Pooled out-of-fold validity of one family.

    ``r2`` = 1 - SSE/SST (SST about the global mean of y) on seconds: dominated
    by the longest tests. The log-space figures judge the ratio a reward sees:
    with l_i = log yhat_i - log y_i over pairs with yhat_i > 0,

        log_rmse = sqrt(mean l_i^2),   log_bias = mean l_i,
        log_r2   = 1 - sum l_i^2 / sum (log y_i - mean log y)^2.

    ``n_nonfinite`` counts out-of-fold predictions that are not finite,
    ``n_nonpositive`` those <= 0 (no log, no duration) and ``n_below_min``
    those in (0, ``min_duration_s``), the floor relative to the data
    (:func:`prediction_floor`, ``floor_reason`` says why). A family with any of
    them is not ``usable`` for ranking: its log figures describe only the other
    pairs, and clipping would tie the clipped solutions at the floor. CIs
    bootstrap problems over the fixed out-of-fold predictions.
    """

    family: str
    r2: Interval
    log_rmse: Interval
    log_bias: float
    n: int
    n_groups: int
    n_nonpositive: int
    cv: str = "lopo"
    predictions: np.ndarray = field(default=None, repr=False, compare=False)
    log_r2: Interval | None = None
    n_below_min: int = 0
    min_duration_s: float = np.nan
    n_nonfinite: int = 0
    floor_reason: str = ""
    #: Why the family cannot be fitted and judged on these pairs (:func:`undetermined_reason`): the family is then
    #: n/a, never usable, never chosen; '' when it can.
    na_reason: str = ""

    @property
    def usable(self) -> bool:
        """Every out-of-fold prediction is finite and >= ``min_duration_s``, and the log error is finite."""
        return (self.n_nonpositive == 0 and self.n_below_min == 0 and self.n_nonfinite == 0 and self.n > 0
                and not self.na_reason and bool(np.isfinite(self.log_rmse.estimate)))

    def to_dict(self) -> dict:
        return {"family": self.family, "cv": self.cv, "r2": self.r2.to_dict(), "log_rmse": self.log_rmse.to_dict(),
                "log_r2": None if self.log_r2 is None else self.log_r2.to_dict(),
                "log_bias": self.log_bias, "n": self.n, "n_groups": self.n_groups,
                "n_nonfinite": self.n_nonfinite, "n_nonpositive": self.n_nonpositive,
                "n_below_min": self.n_below_min, "min_duration_s": self.min_duration_s,
                "floor_reason": self.floor_reason, "na_reason": self.na_reason, "usable": self.usable}


def _multinomial_counts(n_groups: int, n_boot: int, seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_boot).astype(float)


def _interval(estimate, draws, level, n) -> Interval:
    draws = np.asarray(draws, dtype=float)
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0 or n < 2:
        return Interval(float(estimate), np.nan, np.nan, int(n), level)
    alpha = (1 - level) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return Interval(float(estimate), float(low), float(high), int(n), level)


def lopo_r2(
    x,
    y,
    groups,
    family: str,
    *,
    robust: str | None = None,
    variance_ratio: float = 1.0,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    max_points: int = 5000,
    min_duration_s: float | None = None,
) -> LopoResult:
    """Pooled leave-one-problem-out R^2, log R^2 and log-ratio error of one family.

    R^2 = 1 - sum (y - yhat)^2 / sum (y - mean(y))^2 over all out-of-fold
    predictions together (never the mean of per-fold R^2); in log space
    log R^2 = 1 - sum (log yhat - log y)^2 / sum (log y - mean log y)^2 and
    log-RMSE = sqrt(mean (log yhat - log y)^2), both over the pairs with
    yhat > 0; predictions that are non-finite, <= 0 or below ``min_duration_s``
    are counted (see :class:`LopoResult`; default: :func:`prediction_floor` of
    ``y``, a tenth of the smallest target duration). With ``robust`` the folds are K = min(10, groups)
    groups of problems (``cv`` says so).

    Examples
    --------
    >>> rng = np.random.default_rng(0); x = rng.uniform(0.01, 1, 200)
    >>> y = 0.63 * x + 0.053 + rng.normal(0, 0.001, 200)
    >>> lopo_r2(x, y, np.arange(200) // 10, "affine", n_boot=50).r2.estimate > 0.99
    True
    """
    _check_family(family)
    x, y, groups = _check_xy(x, y, groups)
    codes, n_groups = _group_index(groups, x, y)
    if robust is not None and family != "deming" and n_groups >= 2:  # one problem: no fold to hold out (NaN)
        pred = _kfold_robust_predictions(x, y, codes, n_groups, family, robust, max_points=max_points, seed=seed)
        cv = f"{min(10, n_groups)}-fold over problems"
    else:
        pred = lopo_predictions(x, y, groups, family, variance_ratio=variance_ratio)
        cv = "lopo"
    ok = np.isfinite(pred)
    positive = ok & (pred > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_err = np.where(positive, np.log(np.where(positive, pred, 1.0)) - np.log(y), 0.0)
    sq = np.where(ok, (y - pred) ** 2, 0.0)
    ly = np.where(positive, np.log(y), 0.0)
    per = np.stack([
        np.bincount(codes, weights=sq, minlength=n_groups),
        np.bincount(codes, weights=y * ok, minlength=n_groups),
        np.bincount(codes, weights=y * y * ok, minlength=n_groups),
        np.bincount(codes, weights=ok.astype(float), minlength=n_groups),
        np.bincount(codes, weights=log_err ** 2, minlength=n_groups),
        np.bincount(codes, weights=positive.astype(float), minlength=n_groups),
        np.bincount(codes, weights=ly, minlength=n_groups),
        np.bincount(codes, weights=ly * ly, minlength=n_groups),
    ], axis=1)

    def stats(tot):
        sse, sy, syy, n, sle, npos, sly, slyy = (tot[..., i] for i in range(8))
        with np.errstate(invalid="ignore", divide="ignore"):
            r2 = 1.0 - sse / (syy - sy * sy / n)
            rmse = np.sqrt(sle / npos)
            log_r2 = 1.0 - sle / (slyy - sly * sly / npos)
        return r2, rmse, log_r2

    r2, rmse, log_r2 = stats(per.sum(axis=0))
    if n_boot and n_groups > 1:
        draws = _multinomial_counts(n_groups, n_boot, seed) @ per
        r2_draws, rmse_draws, log_r2_draws = stats(draws)
    else:
        r2_draws = rmse_draws = log_r2_draws = np.array([])
    log_bias = float(log_err[positive].mean()) if positive.any() else np.nan
    if min_duration_s is None:
        min_duration_s, floor_reason = prediction_floor(y)
    else:
        floor_reason = f"given: {min_duration_s:g} s"
    return LopoResult(family=family, r2=_interval(r2, r2_draws, level, n_groups),
                      log_rmse=_interval(rmse, rmse_draws, level, n_groups), log_bias=log_bias, n=int(ok.sum()),
                      n_groups=n_groups, n_nonpositive=int((ok & ~positive).sum()), cv=cv, predictions=pred,
                      log_r2=_interval(log_r2, log_r2_draws, level, n_groups),
                      n_below_min=int((positive & (pred < min_duration_s)).sum()), min_duration_s=min_duration_s,
                      n_nonfinite=int((~ok).sum()) if n_groups >= 2 else 0, floor_reason=floor_reason,
                      na_reason=undetermined_reason(family, x, codes))


@dataclass(frozen=True)
class WithinProblemAgreement:
    """Do solutions keep their order within a problem after calibration?

    ``per_test``: ``problem, test, n_solutions, spearman`` -- Spearman rho of
    the calibrated source durations against the target durations over the
    solutions of one (problem, test) (tie-averaged ranks; NaN with fewer than
    ``min_solutions`` solutions or a constant side). ``per_problem``:
    ``problem, n_tests, spearman`` = mean over the problem's tests. Headline:
    ``mean`` and ``worst`` over problems, ``share_below`` = share of problems
    whose rho < ``threshold``.
    """

    per_test: pd.DataFrame = field(repr=False)
    per_problem: pd.DataFrame = field(repr=False)
    mean: float
    worst: float
    share_below: float
    threshold: float
    n_problems: int

    def to_dict(self) -> dict:
        return {"mean": self.mean, "worst": self.worst, "share_below": self.share_below,
                "threshold": self.threshold, "n_problems": self.n_problems}

    def to_frame(self) -> pd.DataFrame:
        return self.per_problem

    def summary(self) -> str:
        return (f"within-problem Spearman: mean {self.mean:.3f}, worst {self.worst:.3f}, "
                f"{self.share_below:.1%} of {self.n_problems} problems below {self.threshold:g}")


def within_problem_spearman(
    predicted,
    y,
    *,
    problem,
    test=None,
    min_solutions: int = 3,
    threshold: float = 0.8,
) -> WithinProblemAgreement:
    """Within-problem rank agreement of calibrated source durations with the target.

    A reward ranks the solutions of one test against each other, so what a
    calibration must keep is their order. For every (problem, test) with at
    least ``min_solutions`` solutions::

        rho_pt = Pearson(rank(yhat_pt), rank(y_pt))      (Spearman, mid-ranks)

    with both sides snapped to 12 significant digits first (:func:`stats._ties.snap`:
    equal medians tie whatever the fitted map's last bit); rho_p = mean over
    the problem's tests; reported: the mean and the worst rho_p, and the share of problems with rho_p < ``threshold``. A strictly
    increasing map leaves the source ranks unchanged, so for multiplicative,
    affine (slope > 0), power (b > 0) and Deming this equals the raw source's
    agreement; it falls for maps that fold (a polynomial past its turning
    point) and is what shows that a stored pool still orders solutions.

    Parameters
    ----------
    predicted, y : array of float
        Calibrated source durations (e.g. out-of-fold predictions) and target
        durations, one per (problem, test, solution) pair.
    problem, test : array
        Problem and test of every pair (``test=None``: one test per problem).

    Examples
    --------
    >>> yhat = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0]); y = np.array([1.0, 2.0, 3.0, 3.0, 2.0, 1.0])
    >>> w = within_problem_spearman(yhat, y, problem=["a", "a", "a", "b", "b", "b"])
    >>> w.mean, w.worst, w.share_below
    (0.0, -1.0, 0.5)
    """
    predicted = np.asarray(predicted, dtype=float)
    y = np.asarray(y, dtype=float)
    problem = np.asarray(problem)
    test = np.zeros(len(y), dtype=np.int64) if test is None else np.asarray(test)
    if not (predicted.shape == y.shape == problem.shape == test.shape):
        raise ValueError("predicted, y, problem and test must align")
    frame = pd.DataFrame({"problem": problem, "test": test})
    keep = np.isfinite(predicted) & np.isfinite(y)
    frame, predicted, y = frame.loc[keep].reset_index(drop=True), predicted[keep], y[keep]
    g, n_g = group_codes(frame, ["problem", "test"])
    # Ranked after the one documented rounding (stats._ties.snap, 12 significant digits): a fitted factor's
    # last bit moves with the problems' order, and two equal medians ((0.012 + 0.013) / 2 and
    # (0.011 + 0.014) / 2) must tie whatever that bit is.
    ra, rb = grouped_midranks(g, snap(predicted)), grouped_midranks(g, snap(y))
    n = np.bincount(g, minlength=n_g).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ca = ra - (np.bincount(g, weights=ra, minlength=n_g) / n)[g]
        cb = rb - (np.bincount(g, weights=rb, minlength=n_g) / n)[g]
        sab = np.bincount(g, weights=ca * cb, minlength=n_g)
        saa = np.bincount(g, weights=ca * ca, minlength=n_g)
        sbb = np.bincount(g, weights=cb * cb, minlength=n_g)
        rho = np.where((n >= min_solutions) & (saa > 0) & (sbb > 0), sab / np.sqrt(saa * sbb), np.nan)
    rho = np.clip(rho, -1.0, 1.0)
    per_test = frame.iloc[first_rows(g, n_g)].reset_index(drop=True)
    per_test["n_solutions"] = n.astype(np.int64)
    per_test["spearman"] = rho
    p, n_p = group_codes(per_test, ["problem"])
    fin = np.isfinite(rho)
    cnt = np.bincount(p[fin], minlength=n_p)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho_p = np.where(cnt > 0, np.bincount(p[fin], weights=rho[fin], minlength=n_p) / cnt, np.nan)
    per_problem = per_test.iloc[first_rows(p, n_p)][["problem"]].reset_index(drop=True)
    per_problem["n_tests"] = cnt
    per_problem["spearman"] = rho_p
    valid = rho_p[np.isfinite(rho_p)]
    if len(valid) == 0:
        return WithinProblemAgreement(per_test, per_problem, np.nan, np.nan, np.nan, threshold, 0)
    return WithinProblemAgreement(per_test, per_problem, float(np.mean(valid)), float(np.min(valid)),
                                  float(np.mean(valid < threshold)), threshold, int(len(valid)))


_N_PARAMS = {"multiplicative": 1, "affine": 2, "deming": 2, "power": 2, "poly2": 3, "poly3": 4}


def compare_families(
    pairs: pd.DataFrame,
    *,
    families: Sequence[str] = FAMILIES,
    variance_ratio: float = 1.0,
    min_duration_s: float | None = None,
    threshold: float = 0.8,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Held-out validity of every family on linear and log scales, and whether it keeps solution order.

    Parameters
    ----------
    pairs : DataFrame
        ``problem, test, x, y`` (e.g. :attr:`Pairing.frame`).

    Returns
    -------
    DataFrame, one row per family: ``lopo_r2``, ``lopo_log_r2``,
    ``lopo_log_rmse`` (each with ``_low``/``_high``), ``log_bias``,
    ``n_nonpositive``, ``n_below_min``, ``usable``, ``na_reason`` (see :class:`LopoResult`),
    ``within_problem_spearman`` (mean over problems), ``within_problem_worst``,
    ``within_problem_share_below`` (of ``threshold``) from the out-of-fold
    predictions (:func:`within_problem_spearman`), ``n_params`` and ``chosen``
    (:func:`choose_family`).

    Examples
    --------
    >>> rng = np.random.default_rng(0); x = rng.uniform(0.005, 0.5, 300)
    >>> pairs = pd.DataFrame({"problem": np.arange(300) // 10, "test": 0, "x": x,
    ...                       "y": (0.63 * x + 0.053) * np.exp(rng.normal(0, 0.02, 300))})
    >>> table = compare_families(pairs, n_boot=0).set_index("family")
    >>> str(table.index[table["chosen"]][0]) in ("affine", "deming")   # a straight line with an intercept
    True
    >>> bool(table.loc["multiplicative", "lopo_log_rmse"] > 0.2)        # a pure factor misses the 53 ms
    True
    """
    for column in ("problem", "x", "y"):
        if column not in pairs.columns:
            raise ValueError(f"compare_families: pairs lack column {column!r}; pass Pairing.frame")
    x = pairs["x"].to_numpy(dtype=float)
    y = pairs["y"].to_numpy(dtype=float)
    groups = pairs["problem"].astype(str).to_numpy()
    tests = pairs["test"].astype(str).to_numpy() if "test" in pairs.columns else None
    rows = []
    for family in families:
        lopo = lopo_r2(x, y, groups, family, variance_ratio=variance_ratio, n_boot=n_boot, level=level, seed=seed,
                       min_duration_s=min_duration_s)
        agree = within_problem_spearman(lopo.predictions, y, problem=groups, test=tests, threshold=threshold)
        rows.append({
            "family": family, "n_params": _N_PARAMS[family],
            "lopo_r2": lopo.r2.estimate, "lopo_r2_low": lopo.r2.low, "lopo_r2_high": lopo.r2.high,
            "lopo_log_r2": lopo.log_r2.estimate, "lopo_log_r2_low": lopo.log_r2.low,
            "lopo_log_r2_high": lopo.log_r2.high,
            "lopo_log_rmse": lopo.log_rmse.estimate, "lopo_log_rmse_low": lopo.log_rmse.low,
            "lopo_log_rmse_high": lopo.log_rmse.high, "log_bias": lopo.log_bias,
            "n_pairs": lopo.n, "n_problems": lopo.n_groups,
            "n_nonfinite": lopo.n_nonfinite, "n_nonpositive": lopo.n_nonpositive, "n_below_min": lopo.n_below_min,
            "min_duration_s": lopo.min_duration_s, "usable": lopo.usable, "na_reason": lopo.na_reason,
            "within_problem_spearman": agree.mean, "within_problem_worst": agree.worst,
            "within_problem_share_below": agree.share_below,
        })
    table = pd.DataFrame(rows)
    chosen = choose_family(table)
    table["chosen"] = table["family"] == chosen
    return table


def choose_family(table) -> str | None:
    """The family to calibrate with: the lowest held-out log error among the usable ones.

    Rule: among families whose out-of-fold predictions are all >= the
    duration floor (``usable``) and whose ``lopo_log_rmse`` is finite, take the
    smallest ``lopo_log_rmse``; equal errors (compared after
    :func:`stats._ties.snap`) go to the family with fewer parameters, then to
    the name (alphabetical): never to input order. ``None`` when no family is
    usable. Linear R^2 plays no part: it is dominated by the longest tests.

    Parameters
    ----------
    table : DataFrame or mapping of name -> LopoResult
        :func:`compare_families` output (``family, usable, lopo_log_rmse``;
        ``n_params`` optional) or LOPO results by family name.

    Examples
    --------
    >>> t = pd.DataFrame({"family": ["affine", "poly2", "power"], "usable": [False, True, True],
    ...                   "lopo_log_rmse": [0.01, 0.30, 0.05]})
    >>> choose_family(t)
    'power'
    """
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame([{"family": name, "usable": r.usable, "lopo_log_rmse": r.log_rmse.estimate,
                               "n_params": _N_PARAMS.get(r.family, 9)} for name, r in dict(table).items()])
    if len(table) == 0:
        return None
    err = snap(table["lopo_log_rmse"].to_numpy(dtype=float))
    ok = table["usable"].to_numpy(dtype=bool) & np.isfinite(err)
    if not ok.any():
        return None
    n_params = (table["n_params"].to_numpy(dtype=float) if "n_params" in table.columns
                else np.array([_N_PARAMS.get(str(f), 9) for f in table["family"]], dtype=float))
    names = table["family"].astype(str).to_numpy()
    idx = np.flatnonzero(ok)
    best = min(idx, key=lambda i: (err[i], n_params[i], names[i]))
    return str(names[best])


# ----------------------------------------------------------------------------- bootstrap of parameters

def _weighted_draws(x, y, codes, n_groups, family, weights, variance_ratio=1.0) -> np.ndarray:
    """Natural parameters refitted under each row of group ``weights`` (B, G), from sufficient statistics."""
    if family == "deming":
        cx, cy = float(np.mean(x)), float(np.mean(y))
        mom = _deming_moments(x, y, codes, n_groups, cx, cy)
        return _deming_params(weights @ mom, variance_ratio, cx, cy)
    basis = _make_basis(family, x)
    a, b = _grouped_normal(basis.design(x), basis.target(y, x), codes, n_groups)
    beta = _solve_stack(np.tensordot(weights, a, axes=1), weights @ b)
    return _natural_params(family, beta @ basis.to_natural().T)


def bootstrap_params(
    x,
    y,
    groups,
    family: str,
    *,
    robust: str | None = None,
    variance_ratio: float = 1.0,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
    max_points: int = 5000,
) -> pd.DataFrame:
    """Percentile-bootstrap CIs of a family's parameters, resampling problems.

    Least squares and Deming reuse per-problem sufficient statistics: a
    resample with multinomial counts w has A* = sum_p w_p A_p, b* = sum_p w_p b_p,
    solved for all resamples at once. Robust fits refit per resample
    (at most ``min(n_boot, 200)`` resamples, on <= ``min(max_points, 2000)``
    pairs each: a cost cap, since no sufficient statistics exist).

    A polynomial's resample that keeps no more distinct source durations than the polynomial has coefficients
    (the problems that alone held the others were not drawn) has no determined curve, as the point fit has none
    on such pairs (:func:`undetermined_reason`): it does not count. When such resamples are more than the share
    ``(1 - level) / 2`` each end of the interval cuts off, the interval could end anywhere: it is n/a, and
    ``ci_reason`` says why.

    Returns
    -------
    DataFrame
        ``param, estimate, ci_low, ci_high, n_problems, level, n_resamples`` (the resamples the interval is
        taken over) and ``ci_reason`` (why the interval is n/a; '' otherwise).

    Examples
    --------
    >>> rng = np.random.default_rng(1); x = rng.uniform(0.01, 1, 300)
    >>> y = 0.63 * x + 0.053 + rng.normal(0, 0.002, 300)
    >>> ci = bootstrap_params(x, y, np.arange(300) // 10, "affine", n_boot=200).set_index("param")
    >>> bool(ci.loc["slope", "ci_low"] < 0.63 < ci.loc["slope", "ci_high"])
    True
    """
    _check_family(family)
    x, y, groups = _check_xy(x, y, groups)
    codes, n_groups = _group_index(groups, x, y)
    fit = fit_family(x, y, family, robust=robust, variance_ratio=variance_ratio, max_points=max_points, seed=seed)
    names = _PARAM_NAMES[family]
    estimate = np.array([fit.params[n] for n in names])
    short = np.zeros(0, dtype=bool)
    if n_groups < 2 or not n_boot or _no_slope(family, x) or _too_few_values(family, x):
        draws = np.full((0, len(names)), np.nan)
    elif robust is None:
        weights = _multinomial_counts(n_groups, n_boot, seed)
        draws = _weighted_draws(x, y, codes, n_groups, family, weights, variance_ratio)
        short = _short_resamples(family, x, codes, n_groups, weights)
    else:
        rng = np.random.default_rng(seed)
        basis = _make_basis(family, x)
        order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        draws, picks = [], []
        for _ in range(min(n_boot, 200)):  # refit loop over resamples (no sufficient statistics exist)
            pick = rng.integers(0, n_groups, n_groups)
            picks.append(np.bincount(pick, minlength=n_groups))
            rows = order[np.concatenate([np.arange(starts[g], starts[g] + sizes[g]) for g in pick])]
            draws.append(_natural_params(family, _robust_natural(x[rows], y[rows], basis, robust, rng,
                                                                 min(max_points, 2000))))
        draws = np.array(draws)
        short = _short_resamples(family, x, codes, n_groups, np.array(picks))
    reason = ""
    if short.any():  # a resample on too few distinct source values fits no curve: it does not count
        alpha = (1 - level) / 2
        if short.mean() > alpha:
            reason = (f"{int(short.sum())} of {len(short)} bootstrap resamples of the problems keep "
                      f"<= {_CURVE_COEFFICIENTS[family]} distinct source durations, on which {family} "
                      f"({_CURVE_COEFFICIENTS[family]} coefficients) has no determined curve: more than the "
                      f"{alpha:.3g} share each end of the {level:.3g} interval cuts off, so its ends could lie "
                      f"anywhere; time more varied tests")
            draws = np.full((0, len(names)), np.nan)
        else:
            draws = draws[~short]
    rows = []
    for i, name in enumerate(names):
        ci = _interval(estimate[i], draws[:, i] if len(draws) else [], level, n_groups)
        rows.append({"param": name, "estimate": ci.estimate, "ci_low": ci.low, "ci_high": ci.high,
                     "n_problems": n_groups, "level": level, "n_resamples": len(draws), "ci_reason": reason})
    return pd.DataFrame(rows)


def _short_resamples(family: str, x: np.ndarray, codes: np.ndarray, n_groups: int,
                     weights: np.ndarray) -> np.ndarray:
    """Per resample (a row of problem counts ``weights``), whether it keeps no more distinct source durations than
    ``family``'s coefficients (:data:`_CURVE_COEFFICIENTS`, compared after :func:`snap`): its curve is not
    determined there, as :func:`undetermined_reason` says of the pairs. False for the other families.

    A resample that holds one problem with more than k values of its own is never short: the problems are checked
    from the largest down (each by :func:`_more_distinct_than`), and only resamples holding none of the rich ones
    found count their union of values exactly.
    """
    k = _CURVE_COEFFICIENTS.get(family)
    weights = np.asarray(weights)
    if k is None or not len(weights):
        return np.zeros(len(weights), dtype=bool)
    held = weights > 0
    covered = np.zeros(len(weights), dtype=bool)
    sizes = np.bincount(codes, minlength=n_groups)
    for g in np.argsort(-sizes, kind="stable")[:32]:  # the largest problems: usually one of them is in every draw
        if _more_distinct_than(x[codes == g], k):
            covered |= held[:, g]
            if covered.all():
                return np.zeros(len(weights), dtype=bool)
    values, n_values = _distinct_codes(x)
    pairs = pd.unique(values * n_groups + codes)  # each (value, problem) once
    value_of, group_of = pairs // n_groups, pairs % n_groups
    short = np.zeros(len(weights), dtype=bool)
    for b in np.flatnonzero(~covered):  # the few resamples left: the distinct values of their problems, exactly
        short[b] = len(np.unique(value_of[held[b, group_of]])) <= k
    return short


# ----------------------------------------------------------------------------- Bland-Altman

@dataclass(frozen=True)
class BlandAltman:
    """Bland-Altman agreement on the log scale.

    With d_i = log y_i - log x_i: ``bias`` = mean d, limits of agreement
    ``lower/upper`` = bias -+ z * sd(d) (ddof=1, z = 1.96 for 95 %),
    ``proportional`` = slope of d on the pair mean m_i = (log x_i + log y_i)/2
    (0 when the ratio does not depend on the duration). exp(bias) is the
    typical ratio y/x. CIs bootstrap problems.
    """

    bias: Interval
    lower: Interval
    upper: Interval
    sd: float
    proportional: Interval
    n: int
    n_problems: int

    def to_dict(self) -> dict:
        return {"bias": self.bias.to_dict(), "lower": self.lower.to_dict(), "upper": self.upper.to_dict(),
                "sd": self.sd, "ratio": float(np.exp(self.bias.estimate)),
                "ratio_limits": [float(np.exp(self.lower.estimate)), float(np.exp(self.upper.estimate))],
                "proportional": self.proportional.to_dict(), "n": self.n, "n_problems": self.n_problems}

    def summary(self) -> str:
        return (f"log-ratio bias {self.bias} (ratio {np.exp(self.bias.estimate):.3f}), limits of agreement "
                f"[{self.lower.estimate:.3f}, {self.upper.estimate:.3f}] (ratio x{np.exp(self.lower.estimate):.3f}"
                f" .. x{np.exp(self.upper.estimate):.3f}), n={self.n}")


def bland_altman(x, y, groups, *, level: float = 0.95, limits_z: float = 1.96, n_boot: int = 1000,
                 seed: int | None = 0) -> BlandAltman:
    """Bland-Altman bias and limits of agreement of log y against log x, with CIs over problems.

    Examples
    --------
    >>> x = np.array([1.0, 2.0, 4.0, 8.0]); ba = bland_altman(x, 2 * x, [0, 0, 1, 1], n_boot=20)
    >>> round(ba.bias.estimate, 6), round(ba.sd, 6)
    (0.693147, 0.0)
    """
    x, y, groups = _check_xy(x, y, groups)
    if (x <= 0).any() or (y <= 0).any():
        raise ValueError("Bland-Altman on the log scale needs durations > 0")
    codes, n_groups = _group_index(groups, y, computed=(x,))  # x: measured, or a map's predictions
    d = np.log(y) - np.log(x)
    m = 0.5 * (np.log(y) + np.log(x))
    m0 = m.mean()
    mc = m - m0
    per = np.stack([np.bincount(codes, weights=v, minlength=n_groups)
                    for v in (np.ones_like(d), d, d * d, mc, mc * mc, mc * d)], axis=1)

    def stats(tot):
        n, sd_, sdd, sm, smm, smd = (tot[..., i] for i in range(6))
        with np.errstate(invalid="ignore", divide="ignore"):
            bias = sd_ / n
            sd = np.sqrt(np.maximum(sdd - sd_ * bias, 0.0) / (n - 1))
            slope = (smd - sm * sd_ / n) / (smm - sm * sm / n)
        return bias, bias - limits_z * sd, bias + limits_z * sd, slope, sd

    est = stats(per.sum(axis=0))
    draws = stats(_multinomial_counts(n_groups, n_boot, seed) @ per) if n_boot and n_groups > 1 else [[]] * 5
    bias, lower, upper, slope = (_interval(est[i], draws[i], level, n_groups) for i in range(4))
    return BlandAltman(bias=bias, lower=lower, upper=upper, sd=float(est[4]), proportional=slope, n=len(d),
                       n_problems=n_groups)


# ----------------------------------------------------------------------------- percentile agreement

def _runs(corpus, key, name, other, other_value):
    # pandas 3 may hand out a read-only array here (copy-on-write): combine, don't update in place
    mask = (corpus[key] == name).to_numpy()
    if other_value is not None:
        mask = mask & (corpus[other] == other_value).to_numpy()
    return corpus.loc[mask]


def _other_values(corpus, key, source, target):
    other = "campaign" if key == "environment" else "environment"
    if other not in corpus.columns:
        return other, [None]
    src = set(distinct_values(corpus.loc[(corpus[key] == source).to_numpy(), other]))
    tgt = set(distinct_values(corpus.loc[(corpus[key] == target).to_numpy(), other]))
    if len(src) == 1 and len(tgt) == 1:
        return other, [None]
    common = sorted(src & tgt)
    if not common:
        raise ValueError(f"{source!r} and {target!r} share no {other}: select rows of one {other} first")
    return other, common


def _mapped_pool(pool: pd.DataFrame, mapping: Callable | None) -> pd.DataFrame:
    if mapping is None:
        return pool
    out = pool.copy()
    f = mapping.predict if hasattr(mapping, "predict") else mapping
    out["duration_s"] = np.asarray(f(out["duration_s"].to_numpy(dtype=float)), dtype=float)
    return out


@dataclass(frozen=True)
class PercentileAgreement:
    """Rank agreement of per-problem scores against a stored pool vs the fresh pool.

    ``frame`` has one row per re-run reference (problem, solution) with
    ``q_fresh`` (fresh durations vs fresh pool), ``q_raw`` (fresh durations vs
    the stored pool) and ``q_calibrated`` (vs the stored pool mapped onto the
    fresh scale). ``spearman_raw`` / ``spearman_calibrated`` are Spearman rho
    of q_raw / q_calibrated with q_fresh over all units, ``gain`` their
    difference; CIs resample problems (paired).
    """

    frame: pd.DataFrame = field(repr=False)
    spearman_raw: Interval
    spearman_calibrated: Interval | None
    gain: Interval | None
    n_units: int
    n_problems: int

    def to_dict(self) -> dict:
        return {"spearman_raw": self.spearman_raw.to_dict(),
                "spearman_calibrated": None if self.spearman_calibrated is None else self.spearman_calibrated.to_dict(),
                "gain": None if self.gain is None else self.gain.to_dict(),
                "n_units": self.n_units, "n_problems": self.n_problems}

    def to_frame(self) -> pd.DataFrame:
        return self.frame


def _weighted_midranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Average ranks of ``values`` in a sample where unit i appears ``weights[..., i]`` times.

    Equal to ``scipy.stats.rankdata`` (method "average") of the expanded
    sample: a tie block with preceding weight C and own weight W gets
    C + (W + 1) / 2. ``weights`` may be (B, n): one resample per row.
    """
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    block = np.concatenate(([0], np.cumsum(sorted_values[1:] != sorted_values[:-1])))
    starts = np.flatnonzero(np.concatenate(([True], sorted_values[1:] != sorted_values[:-1])))
    w = np.atleast_2d(weights)[:, order]
    block_weight = np.add.reduceat(w, starts, axis=1)
    before = np.cumsum(block_weight, axis=1) - block_weight
    mid = before + (block_weight + 1.0) / 2.0
    ranks = np.empty_like(w)
    ranks[:, order] = mid[:, block]
    return ranks


def _weighted_pearson(a: np.ndarray, b: np.ndarray, w: np.ndarray) -> np.ndarray:
    total = w.sum(axis=1)
    ma = (w * a).sum(axis=1) / total
    mb = (w * b).sum(axis=1) / total
    ca, cb = a - ma[:, None], b - mb[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w * ca * cb).sum(axis=1) / np.sqrt((w * ca * ca).sum(axis=1) * (w * cb * cb).sum(axis=1))


def _spearman_boot(a, b, c, codes, n_groups, n_boot, seed, chunk=64):
    """Spearman rho(a, c) and rho(b, c), on the data and on paired resamples of groups.

    A resample of groups gives every unit a multiplicity (its group's draw
    count); Spearman of the expanded sample = weighted Pearson of weighted
    midranks, so no resample is materialised or sorted again.
    """
    ones = np.ones((1, len(c)))

    def rho(u, v, w):
        return _weighted_pearson(_weighted_midranks(u, w), _weighted_midranks(v, w), w)

    r_a = float(rho(a, c, ones)[0])
    r_b = float(rho(b, c, ones)[0]) if b is not None else np.nan
    out = np.full((n_boot, 2), np.nan)
    if n_boot:
        counts = np.random.default_rng(seed).multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=n_boot)
        for lo in range(0, n_boot, chunk):  # chunks bound memory at chunk x units
            w = counts[lo:lo + chunk][:, codes].astype(float)
            out[lo:lo + chunk, 0] = rho(a, c, w)
            if b is not None:
                out[lo:lo + chunk, 1] = rho(b, c, w)
    return r_a, r_b, out


def percentile_agreement(
    corpus: pd.DataFrame,
    *,
    source: str,
    target: str,
    key: str = "auto",
    mapping: Callable | Fit | None = None,
    pairing: Pairing | None = None,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int | None = 0,
) -> PercentileAgreement:
    """Do stored (source) pools rank fresh (target) runs like the fresh pool does?

    For every correct reference solution re-run in ``target``, its fresh
    durations (cell medians) are scored three ways, each leave-self-out:
    q_fresh against the target pool, q_raw against the source pool, and
    q_calibrated against the source pool with every duration d replaced by
    ``mapping(d)`` (the source -> target calibration). Spearman rho of q_raw
    and q_calibrated with q_fresh is computed over all (problem, solution)
    units; its CI resamples problems (``n_boot`` resamples, ranks recomputed
    on each as weighted midranks).

    A :class:`Pairing` of the same source and target (from
    :func:`pair_medians`, not matched ``within`` another column) may be passed
    to reuse its per-side cells instead of recomputing the medians.

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize  # doctest: +SKIP
    >>> corpus = synthesize(campaigns=(("c0", 1, 0), ("c1", 0.63, 0.053))).corpus  # doctest: +SKIP
    >>> percentile_agreement(corpus, source="c0", target="c1", mapping=lambda d: 0.63 * d + 0.053)  # doctest: +SKIP
    """
    if corpus is not None:  # None: the pairing's cells are all there is (a partitioned corpus)
        key = resolve_key(corpus, source=source, target=target, key=key)
    reuse = (pairing is not None and pairing.within is None and pairing.source_cells is not None
             and (pairing.source, pairing.target, pairing.key) == (source, target, key))
    if corpus is None and not reuse:
        raise ValueError("percentile_agreement without a corpus needs the pairing of the same source, target "
                         "and key, not matched within another column")
    other, values = (None, [None]) if reuse else _other_values(corpus, key, source, target)
    frames = []
    for value in values:  # one iteration per shared environment/campaign (a handful), not per problem
        if reuse:
            src_cells, cells = pairing.source_cells, pairing.target_cells
            src_ref = (src_cells["role"] == "reference").to_numpy() & src_cells["correct"].to_numpy(dtype=bool)
            src_pool = src_cells.loc[src_ref & (src_cells["n_ok"].to_numpy() > 0),
                                     ["problem", "test", "solution", "duration_s"]]
            cells = cells.loc[(cells["role"] == "reference").to_numpy() & cells["correct"].to_numpy(dtype=bool)]
            cells = cells.reset_index(drop=True)
        else:
            src = _runs(corpus, key, source, other, value)
            tgt = _runs(corpus, key, target, other, value)
            src_pool = reference_pools(src)
            refs = tgt.loc[(tgt["role"] == "reference").to_numpy() & tgt["correct"].to_numpy(dtype=bool)]
            cols = [c for c in ("problem", "test", "solution", "repeat", "duration_s", "status", "role", "correct",
                                "test_kind") if c in refs.columns]
            cells = solution_cells(refs[cols])
        # the fresh pool = reference_pools(tgt): cells of correct references with >= 1 ok repeat
        tgt_pool = cells.loc[cells["n_ok"].to_numpy() > 0, ["problem", "test", "solution", "duration_s"]]
        scored = {}
        for name, pool in (("fresh", tgt_pool), ("raw", src_pool), ("calibrated", _mapped_pool(src_pool, mapping))):
            if name == "calibrated" and mapping is None:
                continue
            pct = cells.assign(percentile=test_percentiles(cells, pool, leave_self_out=True))
            scored[name] = problem_scores(pct, by=["problem", "solution"])
        frame = scored["fresh"][["problem", "solution"]].astype(str)
        for name, scores in scored.items():
            frame[f"q_{name}"] = scores["q"].to_numpy()
        if value is not None:
            frame[other] = value
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True)
    cols = [c for c in ("q_fresh", "q_raw", "q_calibrated") if c in frame.columns]
    frame = frame.loc[np.isfinite(frame[cols].to_numpy(dtype=float)).all(axis=1)].reset_index(drop=True)
    if len(frame) < 3:
        raise ValueError(f"percentile agreement needs >= 3 re-run reference solutions with scores on both sides, "
                         f"found {len(frame)}")
    codes, n_groups = _group_index(frame["problem"].to_numpy(),
                                   computed=[frame[c].to_numpy(dtype=float) for c in cols])  # q: means of ranks
    b = frame["q_calibrated"].to_numpy() if mapping is not None else None
    r_raw, r_cal, draws = _spearman_boot(frame["q_raw"].to_numpy(), b, frame["q_fresh"].to_numpy(), codes,
                                         n_groups, n_boot if n_groups > 1 else 0, seed)
    raw = _interval(r_raw, draws[:, 0], level, n_groups)
    cal = gain = None
    if mapping is not None:
        cal = _interval(r_cal, draws[:, 1], level, n_groups)
        gain = _interval(r_cal - r_raw, draws[:, 1] - draws[:, 0], level, n_groups)
    return PercentileAgreement(frame=frame, spearman_raw=raw, spearman_calibrated=cal, gain=gain,
                               n_units=len(frame), n_problems=n_groups)


# ----------------------------------------------------------------------------- drift

def campaign_drift(
    corpus: pd.DataFrame,
    *,
    anchor: str,
    campaigns: Sequence[str] | None = None,
    family: str = "affine",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Per-campaign calibration against an anchor campaign, with drift and changes flagged.

    Every campaign c != anchor (in ``campaigns`` order, default sorted) is
    paired with the anchor inside each environment and ``family`` is fitted
    (y = campaign c, x = anchor). All campaigns of an environment share the
    same bootstrap resamples of problems, so differences are paired:

    * ``drifted``: the no-drift value (slope 1, intercept 0; power a 1, b 1)
      lies outside the parameter's CI; None (JSON null) without a CI
      (``n_boot=0``): not measured, never True;
    * ``change`` = estimate minus the previous campaign's estimate, with the
      CI of that difference (``change_low``, ``change_high``); ``changed``:
      the CI of the change excludes 0 (False for the first campaign, which has
      no previous one; None when the change has no CI).

    Returns
    -------
    DataFrame
        ``environment, campaign, param, estimate, ci_low, ci_high, identity,
        drifted, change, change_low, change_high, changed, n_pairs, n_problems``.
    """
    if family not in ("multiplicative", "affine", "power", "deming"):
        raise ValueError("drift is tracked with a two-parameter family: multiplicative, affine, power or deming")
    all_campaigns = distinct_values(corpus["campaign"])
    if anchor not in all_campaigns:
        raise ValueError(f"anchor campaign {anchor!r} is not in the corpus (campaigns: {', '.join(all_campaigns)})")
    campaigns = [c for c in (campaigns or all_campaigns) if c != anchor]
    unknown = [c for c in campaigns if c not in all_campaigns]
    if unknown:
        raise ValueError(f"campaign {unknown[0]!r} is not in the corpus (campaigns: {', '.join(all_campaigns)})")
    sides = {}
    for env in distinct_values(corpus["environment"]):  # environments x campaigns: a handful each
        sub = corpus.loc[(corpus["environment"] == env).to_numpy()]
        present = set(distinct_values(sub["campaign"]))
        if anchor not in present:
            continue
        sides[env] = (distinct_values(sub["problem"]),
                      {camp: pair_medians(sub, source=anchor, target=camp, key="campaign")
                       for camp in campaigns if camp in present})
    return drift_from_pairings(sides, campaigns=campaigns, family=family, n_boot=n_boot, level=level, seed=seed)


def _problems_by_pairs(problems: pd.Index, pairings: Sequence) -> pd.Index:
    """``problems`` in the order of a hash of their pairs in ``pairings`` (x, y and the pairing's position), not of
    their names: the shared bootstrap resamples (one count per problem) then follow the data, so renaming the
    problems changes no interval. Problems with the same pairs tie and keep their name order."""
    if len(problems) < 2 or not pairings:
        return problems
    frames = [p.frame for p in pairings]
    codes = np.concatenate([problems.get_indexer(f["problem"].astype(str)) for f in frames]).astype(np.int64)
    x = np.concatenate([f["x"].to_numpy(dtype=float) for f in frames])
    y = np.concatenate([f["y"].to_numpy(dtype=float) for f in frames])
    which = np.concatenate([np.full(len(f), i, dtype=float) for i, f in enumerate(frames)])
    keep = codes >= 0
    keys = _data_keys(codes[keep], len(problems), x[keep], y[keep], which[keep])
    return problems[np.argsort(keys, kind="stable")]


def drift_from_pairings(sides: Mapping[str, tuple], *, campaigns: Sequence[str], family: str = "affine",
                        n_boot: int = 1000, level: float = 0.95, seed: int | None = 0) -> pd.DataFrame:
    """:func:`campaign_drift`'s table from its pairings: ``sides[environment] = (problems, {campaign: Pairing
    of the anchor onto that campaign})``, ``problems`` the environment's distinct problems sorted as str,
    ``campaigns`` the non-anchor campaigns in order. The Dask engine builds the pairings from per-partition
    cells (:func:`side_cells`, :func:`pair_cells`); in memory :func:`campaign_drift` builds them from the rows."""
    identity = {"slope": 1.0, "intercept_s": 0.0, "a": 1.0, "b": 1.0}
    names = _PARAM_NAMES[family]
    alpha = (1 - level) / 2
    rows = []
    for env, (problem_names, pairings) in sides.items():
        problems = _problems_by_pairs(pd.Index(problem_names), [pairings[c] for c in campaigns if c in pairings])
        weights = _multinomial_counts(len(problems), n_boot, seed) if n_boot and len(problems) > 1 else None
        previous = None
        for camp in campaigns:
            if camp not in pairings:
                continue
            pairing = pairings[camp]
            if pairing.n_problems < 2:
                continue
            f = pairing.frame
            x, y = f["x"].to_numpy(dtype=float), f["y"].to_numpy(dtype=float)
            codes = problems.get_indexer(f["problem"].astype(str)).astype(np.int64)
            fit = fit_family(x, y, family)
            estimate = np.array([fit.params[n] for n in names])
            draws = (_weighted_draws(x, y, codes, len(problems), family, weights) if weights is not None
                     else np.full((0, len(names)), np.nan))
            for i, name in enumerate(names):
                ci = _interval(estimate[i], draws[:, i] if len(draws) else [], level, pairing.n_problems)
                change = change_low = change_high = np.nan
                if previous is not None:
                    change = float(estimate[i] - previous[0][i])
                    diff = draws[:, i] - previous[1][:, i] if len(draws) else np.array([])
                    diff = diff[np.isfinite(diff)]
                    if len(diff):
                        change_low, change_high = (float(v) for v in np.quantile(diff, [alpha, 1 - alpha]))
                rows.append({
                    "environment": env, "campaign": camp, "param": name, "estimate": ci.estimate,
                    "ci_low": ci.low, "ci_high": ci.high, "identity": identity[name],
                    # no interval (n_boot = 0, too few problems): not measured, None (null), never True
                    "drifted": (bool(not ci.low <= identity[name] <= ci.high)
                                if np.isfinite([ci.low, ci.high]).all() else None),
                    "change": change, "change_low": change_low, "change_high": change_high,
                    "changed": (bool(not change_low <= 0.0 <= change_high) if np.isfinite([change_low, change_high]).all()
                                else None if previous is not None else False),
                    "n_pairs": pairing.n_pairs, "n_problems": pairing.n_problems})
            previous = (estimate, draws)
    columns = ["environment", "campaign", "param", "estimate", "ci_low", "ci_high", "identity", "drifted", "change",
               "change_low", "change_high", "changed", "n_pairs", "n_problems"]
    return pd.DataFrame(rows, columns=columns)


# ----------------------------------------------------------------------------- sensitivity

def _ptau_sides(corpus: pd.DataFrame, *, source: str, target: str, key: str, roles: Sequence[str]):
    """(shared value of the other column, source pool, target cells of ``roles``) for :func:`ptau_sensitivity`."""
    key = resolve_key(corpus, source=source, target=target, key=key)
    other, values = _other_values(corpus, key, source, target)
    for value in values:  # a handful of shared environments/campaigns
        src = _runs(corpus, key, source, other, value)
        tgt = _runs(corpus, key, target, other, value)
        yield (value, *ptau_sides(src, tgt, roles=roles))


def ptau_sides(src: pd.DataFrame, tgt: pd.DataFrame, *, roles: Sequence[str] = ("candidate",)):
    """``(source pool, target cells of roles)`` that :func:`ptau_sensitivity` scores, from the rows of the
    source and of the target (of some problems: a partition's give that partition's pools and cells).

    The cells keep the solutions' ``language``: where the source pool is split by language
    (:func:`stats.ranking.reference_pools`) a candidate is ranked in the pool of its own language, as every
    other percentile is (without it, a problem's languages' pools were merged into one for the candidates).
    A cell is one (problem, test, solution): a solution id names one program, so one language."""
    scored = tgt.loc[tgt["role"].isin(list(roles)).to_numpy()]
    cols = [c for c in ("problem", "test", "solution", "repeat", "duration_s", "status", "role", "correct",
                        "test_kind", "language") if c in scored.columns]
    return reference_pools(src), solution_cells(scored[cols])


def ptau_sensitivity(
    corpus: pd.DataFrame,
    *,
    source: str,
    target: str,
    slope: float,
    intercepts: Sequence[float],
    key: str = "auto",
    taus: Sequence[float] = (10.0, 30.0),
    roles: Sequence[str] = ("candidate",),
    timeout_fails_c: bool = True,
    sides: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """p_tau pass rate of fresh candidates ranked against a calibrated stored pool, per intercept.

    The stored (source) pool is mapped with d -> slope * d + intercept for each
    intercept (e.g. the affine intercept's CI ends and estimate); the fresh
    (target) cells of solutions with ``roles`` are scored against it and the
    pass rate = share of (problem, solution) with c = 1 and q <= tau/100.

    Returns
    -------
    DataFrame
        ``tau, intercept_s, pass_rate, n_solutions`` (one row per tau x intercept).

    ``sides``: the source pool (:func:`stats.ranking.reference_pools`) and the target cells of ``roles``
    (:func:`stats.ranking.solution_cells`) of one pair of runs, given instead of reading them from ``corpus``
    (which may then be None; a partitioned corpus computes them partition by partition).

    Examples
    --------
    >>> # rows = ptau_sensitivity(corpus, source="c0", target="c1", slope=0.63,
    >>> #                         intercepts=[0.045, 0.053, 0.061])
    """
    for tau in taus:
        if not 0 <= tau <= 100:
            raise ValueError(f"tau must lie in [0, 100] percentile points, got {tau}")
    rows = []
    for value, pool, cells in ([(None, *sides)] if sides is not None else
                               _ptau_sides(corpus, source=source, target=target, key=key, roles=roles)):
        for intercept in intercepts:
            mapped = _mapped_pool(pool, lambda d, b=intercept: slope * d + b)
            pct = cells.assign(percentile=test_percentiles(cells, mapped, leave_self_out=True))
            scores = problem_scores(pct, by=["problem", "solution"], timeout_fails_c=timeout_fails_c)
            for tau in taus:
                passed = scores["c"].to_numpy(dtype=bool) & (scores["q"].to_numpy() <= tau / 100.0)
                rows.append({"group": value, "tau": float(tau), "intercept_s": float(intercept),
                             "n_pass": int(passed.sum()), "n_solutions": len(scores)})
    table = pd.DataFrame(rows, columns=["group", "tau", "intercept_s", "n_pass", "n_solutions"])
    table = table.groupby(["tau", "intercept_s"], as_index=False, sort=True)[["n_pass", "n_solutions"]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        table["pass_rate"] = table["n_pass"] / table["n_solutions"]
    return table[["tau", "intercept_s", "pass_rate", "n_pass", "n_solutions"]]
