"""The offline simulator: does a reward environment pay more for faster programs? (DESIGN.md "Offline simulator")

Human reference solutions stand in for rollouts. For every correct reference
solution s of problem p (and, with ``include_incorrect``, every incorrect one)
and every ordered pair of distinct repeats (a, b):

* its **quality** u in [0, 1] (0 = fastest) is its within-problem rank by q
  (``mean_pct``, no filter, no limit) measured on repeat a, tie-averaged:
  u = (#{q' < q} + (#{q' = q} - 1)/2) / (n_p - 1)   (0.5 when n_p = 1);
* its **reward** R in [-1, 1] is what the environment pays for repeat b
  (:func:`stats.rewards.apply_environment` + :func:`stats.rewards.environment_rewards`).

Using two repeats puts measurement noise in play: a noisy sandbox shuffles
quality and reward independently. Repeat pairs are (r_i, r_{i+1 mod R}) over the
sorted repeats (R pairs; with a single repeat, quality and reward share it).

**Reward-vs-quality curve**: u is cut into ``n_bins`` equal bins; per bin the
mean reward rescaled to [0, 1], curve = (mean R + 1)/2. The ideal is the
diagonal 1 - u (the fastest always paid, the slowest never). Diagnostics of the
pooled curve (bins with no sample are ignored):

* ``auc`` = mean of the curve over bins (near 0: sparse; near 1: saturated; the diagonal: 0.5);
* ``monotonicity`` = Spearman of bin vs reward over the *samples*, normalised
  by the best value the same rewards could reach:
  rho_s(bin, R) / rho_s(bin, R*), where R* hands the same multiset of rewards
  out in the ideal order (the highest rewards to the fastest bins). +1 = rewards
  ordered exactly by measured quality (good; a sharp binary gate can reach it),
  0 = unrelated (or a constant reward), < 0 = slower programs paid more. It
  falls when measurement noise shuffles rewards across quality, even if the
  bin means remain ordered. (Continuous rewards are rounded to 0.01 for it when
  they take more than 201 distinct values.)
* ``curve_monotonicity`` = -Spearman(u_mid, curve) over the bins (+1 = the bin
  means fall strictly as u rises; 0 for a flat curve). Reported, not judged:
  with many samples per bin it stays near 1 under heavy noise;
* ``steepness`` = -slope of the least-squares line curve ~ u_mid (the diagonal: 1);
* ``diagonal_deviation`` = mean |curve - (1 - u_mid)|;
* ``curve_noise`` = mean over bins of the sd (ddof=1) of the per-pair curves.

Every diagnostic but ``curve_noise`` carries a bootstrap CI over problems.

**GRPO groups**: a group is G rollouts drawn i.i.d. for one problem from its
samples with weights w(u) (the quality distribution: ``"uniform"`` or
``("beta", a, b)``). With p_v the weight share of reward value v in the
problem, exactly (no Monte Carlo):

    P(zero advantage) = sum_v p_v^G,  P(all negative) = (sum_{v<0} p_v)^G,
    P(all positive) = (sum_{v>0} p_v)^G,

averaged over problems. For a binary reward with success probability p this is
p^G + (1 - p)^G. :func:`sample_group_statistics` draws groups instead (a check).

**Fallback exposure** P = 1 - (1 - f)^n: the chance that a rollout of n
executions meets at least one affected execution when each one is affected
independently with probability f (e.g. f = the share of executions the limit
turned into timeouts, n = tests per rollout).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps
from scipy.stats import rankdata

from stats._groups import first_rows, group_codes, label_mask
from stats._ties import grouped_midranks
from stats.declarations import DegeneracyThresholds
from stats.ranking import problem_scores, reference_pools, test_percentiles
from stats.rewards import (
    Environment,
    EnvironmentRun,
    ScoringBase,
    apply_environment,
    base_percentiles,
    environment_rewards,
    row_lookup,
)

__all__ = ["DegeneracyThresholds", "SimulationResult", "repeat_quality", "simulate", "SimulationProblems",
           "simulate_problems", "combine_simulation", "simulate_grid", "rank_environments"]

DIAGNOSTICS = ("auc", "monotonicity", "steepness", "diagonal_deviation", "curve_noise", "zero_advantage_rate",
               "curve_monotonicity")


# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------

def within_group_rank(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Tie-averaged rank in [0, 1] of every value within its group (0 = smallest).

    u = (#{v' < v} + (#{v' = v} - 1)/2) / (n_g - 1); 0.5 in a group of one;
    NaN values get NaN and do not count. One sort, no loop over groups.

    Examples
    --------
    >>> within_group_rank(np.array([0, 0, 0, 1]), np.array([3.0, 1.0, 1.0, 7.0])).tolist()
    [1.0, 0.25, 0.25, 0.5]
    """
    groups = np.asarray(groups, dtype=np.int64)
    mid = grouped_midranks(groups, values)          # 1-based mid-ranks among the group's finite values
    ok = np.isfinite(mid)
    n = np.bincount(groups[ok], minlength=int(groups.max()) + 1 if len(groups) else 0)[groups].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ok, np.where(n > 1, (mid - 1.0) / (n - 1.0), 0.5), np.nan)


def repeat_quality(runs: pd.DataFrame, *, pools: pd.DataFrame | None = None,
                   include_incorrect: bool = False, percentiles: np.ndarray | None = None) -> pd.DataFrame:
    """q (``mean_pct``, no filter or limit) of every correct reference solution on every repeat.

    ``pools`` (``stats.ranking.reference_pools(runs)``) may be passed when already computed.
    With ``include_incorrect`` the incorrect references are scored too (their
    failed tests count as percentile 100, so they rank as slow programs).
    Each execution is ranked against the pool of its test (of its language, where the pool is split by
    language: :func:`stats.ranking.pool_join`). ``percentiles``: those per-test percentiles of every row of
    ``runs`` (aligned with its rows, e.g. the run context's per-repeat table) when already computed.

    Returns
    -------
    DataFrame with ``problem, solution, repeat, q``.
    """
    mask = np.ones(len(runs), dtype=bool)
    if "role" in runs.columns:
        mask &= (runs["role"] == "reference").to_numpy()
    if pools is None:
        pools = reference_pools(runs.loc[mask])
    if "correct" in runs.columns and not include_incorrect:
        mask &= runs["correct"].to_numpy(dtype=bool)
    cols = [c for c in ("problem", "test", "solution", "repeat", "duration_s", "status", "test_kind", "language")
            if c in runs.columns]
    frame = runs.loc[mask, cols].reset_index(drop=True)
    if "repeat" not in frame.columns:
        frame["repeat"] = 0
    frame["percentile"] = (test_percentiles(frame, pools) if percentiles is None
                           else np.asarray(percentiles, dtype=float)[mask])
    scores = problem_scores(frame, by=["problem", "solution", "repeat"])
    return scores[["problem", "solution", "repeat", "q"]]


def curve_diagnostics(curve: np.ndarray, u_mid: np.ndarray) -> dict:
    """AUC, curve monotonicity, steepness and diagonal deviation of one curve (NaN bins ignored).

    Examples
    --------
    >>> u = (np.arange(10) + 0.5) / 10
    >>> d = curve_diagnostics(1 - u, u)
    >>> [round(d[k], 3) for k in ("auc", "curve_monotonicity", "steepness", "diagonal_deviation")]
    [0.5, 1.0, 1.0, 0.0]
    """
    curve = np.asarray(curve, dtype=float)
    u_mid = np.asarray(u_mid, dtype=float)
    ok = np.isfinite(curve)
    if ok.sum() == 0:
        return {"auc": np.nan, "curve_monotonicity": np.nan, "steepness": np.nan, "diagonal_deviation": np.nan}
    c, u = curve[ok], u_mid[ok]
    if ok.sum() < 2:  # every sample in one quality bin: no order of quality to follow, no diagonal to compare with
        return {"auc": float(c.mean()), "curve_monotonicity": np.nan, "steepness": np.nan, "diagonal_deviation": np.nan}
    if np.ptp(c) > 0:
        rho = sps.spearmanr(u, c).statistic
        slope = np.polyfit(u, c, 1)[0]
    else:
        rho, slope = 0.0, 0.0  # a flat curve does not order programs at all
    return {"auc": float(c.mean()), "curve_monotonicity": float(-rho), "steepness": float(-slope),
            "diagonal_deviation": float(np.abs(c - (1 - u)).mean())}


def _curve_diagnostics_batch(curves: np.ndarray, u_mid: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`curve_diagnostics` of every row of ``curves`` (bootstrap replicates), vectorised.

    The same formulas on the same values: Spearman as the Pearson correlation of tie-averaged ranks
    (what ``scipy.stats.spearmanr`` computes), the slope as the closed-form least-squares slope (what
    ``np.polyfit(u, c, 1)`` fits); rows are grouped by which bins are finite. Equal to the row-by-row
    version up to float rounding (checked in tests/stats/test_simulator.py). Replaced a Python loop that
    called scipy once per replicate: 12 % of the whole audit at 10^6 rows.
    """
    curves = np.asarray(curves, dtype=float)
    u_mid = np.asarray(u_mid, dtype=float)
    n = len(curves)
    out = {name: np.full(n, np.nan) for name in ("auc", "curve_monotonicity", "steepness", "diagonal_deviation")}
    ok = np.isfinite(curves)
    patterns, which = np.unique(ok, axis=0, return_inverse=True)
    for k, pattern in enumerate(patterns):  # a loop over the few patterns of empty bins, not over replicates
        rows = np.flatnonzero(which.ravel() == k)
        if not pattern.any():
            continue
        c, u = curves[rows][:, pattern], u_mid[pattern]
        out["auc"][rows] = c.mean(axis=1)
        if pattern.sum() < 2:  # one quality bin: as curve_diagnostics, only the AUC is defined
            continue
        out["diagonal_deviation"][rows] = np.abs(c - (1 - u)).mean(axis=1)
        rho = np.zeros(len(rows))
        slope = np.zeros(len(rows))  # a flat curve does not order programs at all
        varies = (np.ptp(c, axis=1) > 0) if c.shape[1] >= 2 else np.zeros(len(rows), dtype=bool)
        if varies.any():
            cv = c[varies]
            rc = rankdata(cv, axis=1)
            ru = rankdata(u)
            rc_c = rc - rc.mean(axis=1, keepdims=True)
            ru_c = ru - ru.mean()
            rho[varies] = (rc_c * ru_c).sum(axis=1) / np.sqrt((rc_c ** 2).sum(axis=1) * (ru_c ** 2).sum())
            uc = u - u.mean()
            slope[varies] = ((cv - cv.mean(axis=1, keepdims=True)) * uc).sum(axis=1) / (uc ** 2).sum()
        out["curve_monotonicity"][rows] = -rho
        out["steepness"][rows] = -slope
    return out


def spearman_from_table(table: np.ndarray) -> float:
    """Spearman correlation (tie-averaged ranks) of two ordinal variables given their count table.

    ``table[i, j]`` counts samples with the i-th smallest x and the j-th smallest
    y. Equals ``scipy.stats.spearmanr`` on the expanded samples: the Pearson
    correlation of the mid-ranks r_i = N_<i + (n_i + 1)/2.
    """
    t = np.asarray(table, dtype=float)
    n = t.sum()
    if n <= 0:
        return float("nan")
    nx, ny = t.sum(axis=1), t.sum(axis=0)
    rx = np.cumsum(nx) - nx + (nx + 1) / 2
    ry = np.cumsum(ny) - ny + (ny + 1) / 2
    m = (n + 1) / 2
    var_x = (nx * (rx - m) ** 2).sum()
    var_y = (ny * (ry - m) ** 2).sum()
    if var_x <= 0 or var_y <= 0:
        return float("nan")
    return float(((rx - m)[:, None] * (ry - m)[None, :] * t).sum() / np.sqrt(var_x * var_y))


def _ideal_spearman(table: np.ndarray) -> float:
    """Spearman of the ideal coupling of the table's margins: largest y to the smallest x."""
    t = np.asarray(table, dtype=float)
    n = t.sum()
    nx, ny = t.sum(axis=1), t.sum(axis=0)
    if n <= 0 or (nx > 0).sum() < 2 or (ny > 0).sum() < 2:
        return float("nan")
    rx = np.cumsum(nx) - nx + (nx + 1) / 2
    ry = np.cumsum(ny) - ny + (ny + 1) / 2
    m = (n + 1) / 2
    cx, cy = np.cumsum(nx), np.cumsum(ny[::-1])
    ends = np.union1d(cx, cy)
    ends = ends[ends > 0]
    starts = np.concatenate(([0.0], ends[:-1]))
    mid = (starts + ends) / 2
    ix = np.minimum(np.searchsorted(cx, mid), len(nx) - 1)
    iy = len(ny) - 1 - np.minimum(np.searchsorted(cy, mid), len(ny) - 1)
    cov = ((ends - starts) * (rx[ix] - m) * (ry[iy] - m)).sum()
    return float(cov / np.sqrt((nx * (rx - m) ** 2).sum() * (ny * (ry - m) ** 2).sum()))


def table_monotonicity(table: np.ndarray) -> float:
    """rho_s(bin, R) / rho_s(bin, R*) from a (bins x reward values) count table (see the module docstring).

    0 when the rewards are constant (nothing to order); NaN for an empty table (no sample: nothing measured,
    never a verdict) and when every sample is in one quality bin (the rollouts of each problem tied in quality:
    whether the reward follows quality cannot be measured, never a "non-monotone" verdict).

    Examples
    --------
    >>> table_monotonicity(np.array([[5, 0], [0, 5]])[:, ::-1])   # fast bin all +1, slow bin all -1
    1.0
    >>> table_monotonicity(np.array([[3, 3], [3, 3]]))
    0.0
    >>> table_monotonicity(np.zeros((2, 2)))
    nan
    >>> table_monotonicity(np.array([[0, 0], [3, 3]]))   # one quality bin
    nan
    """
    if not np.asarray(table).sum() > 0 or (np.asarray(table).sum(axis=1) > 0).sum() < 2:
        return float("nan")
    ideal = _ideal_spearman(table)
    if not np.isfinite(ideal) or ideal >= 0:
        return 0.0
    rho = spearman_from_table(table)
    return float(rho / ideal) + 0.0 if np.isfinite(rho) else 0.0


def quality_weights(u: np.ndarray, quality="uniform") -> np.ndarray:
    """Sampling weight of every sample under the rollout quality distribution.

    ``"uniform"``: every sample equally likely. ``("beta", a, b)``: density of
    Beta(a, b) at u (clipped into [0.001, 0.999]); e.g. ("beta", 1, 3) favours
    fast programs, ("beta", 3, 1) slow ones.
    """
    u = np.asarray(u, dtype=float)
    if isinstance(quality, str) and quality == "uniform":
        return np.ones(len(u))
    if isinstance(quality, (tuple, list)) and len(quality) == 3 and quality[0] == "beta":
        a, b = float(quality[1]), float(quality[2])
        if not (np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0):  # NaN passed "<= 0": NaN weights
            raise ValueError(f"beta quality parameters must be finite and > 0, got {a}, {b}")
        return sps.beta.pdf(np.clip(u, 1e-3, 1 - 1e-3), a, b)
    raise ValueError(f"quality must be 'uniform' or ('beta', a, b), got {quality!r}")


def _group_inputs(problems, rewards, weights):
    problems = np.asarray(problems)
    rewards = np.asarray(rewards, dtype=float)
    weights = np.ones(len(rewards)) if weights is None else np.asarray(weights, dtype=float)
    if not (len(problems) == len(rewards) == len(weights)):
        raise ValueError("problems, rewards and weights must have the same length")
    ok = np.isfinite(rewards) & np.isfinite(weights) & (weights > 0)
    return problems[ok], rewards[ok], weights[ok]


def group_statistics(problems, rewards, *, weights=None, group_sizes: Sequence[int] = (2, 4, 8, 16)) -> pd.DataFrame:
    """Exact GRPO group statistics (see the module docstring), averaged over problems.

    Parameters
    ----------
    problems : array
        Problem of every sample.
    rewards : array of float
    weights : array of float, optional
        Sampling weight of every sample (:func:`quality_weights`); default equal.

    Returns
    -------
    DataFrame with ``group_size, zero_advantage_rate, all_negative, all_positive, n_problems``.

    Examples
    --------
    >>> group_statistics(["a"] * 4, [1, -1, -1, -1], group_sizes=(2,))["zero_advantage_rate"].tolist()
    [0.625]
    """
    return _group_frame(*problem_group_rates(problems, rewards, weights=weights, group_sizes=group_sizes)[1:],
                        group_sizes=group_sizes)


def problem_group_rates(problems, rewards, *, weights=None, group_sizes: Sequence[int] = (2, 4, 8, 16)):
    """The per-problem part of :func:`group_statistics`: ``(problems, equal, negative, positive)``.

    ``problems`` each once, in their sorted order (those with a usable sample); ``equal[i, j]`` = P(zero
    advantage) of problem j at ``group_sizes[i]``; ``negative[j]``, ``positive[j]`` its weight shares of
    negative and positive rewards. :func:`group_statistics` is their means over problems, so the rates of
    disjoint sets of problems can be computed apart and combined (:mod:`audits.engine.partitioned`).
    """
    problems, rewards, weights = _group_inputs(problems, rewards, weights)
    for g in group_sizes:
        if int(g) != g or g < 1:
            raise ValueError(f"group sizes must be positive integers, got {g!r}")
    frame = pd.DataFrame({"problem": problems, "value": np.round(rewards, 12)})
    prob, n_prob = group_codes(frame, ["problem"])
    cell, n_cell = group_codes(frame, ["problem", "value"])
    total = np.bincount(prob, weights=weights, minlength=n_prob)
    cell_w = np.bincount(cell, weights=weights, minlength=n_cell)
    cell_prob = prob[first_rows(cell, n_cell)]
    share = cell_w / total[cell_prob]
    neg = np.bincount(prob, weights=weights * (rewards < 0), minlength=n_prob) / total
    pos = np.bincount(prob, weights=weights * (rewards > 0), minlength=n_prob) / total
    equal = np.array([np.bincount(cell_prob, weights=share ** g, minlength=n_prob) for g in group_sizes])
    return problems[first_rows(prob, n_prob)], equal.reshape(len(group_sizes), n_prob), neg, pos


def _group_frame(equal: np.ndarray, neg: np.ndarray, pos: np.ndarray, *, group_sizes: Sequence[int]) -> pd.DataFrame:
    """:func:`group_statistics` from the per-problem rates of :func:`problem_group_rates`."""
    n_prob = len(neg)
    rows = []
    for i, g in enumerate(group_sizes):
        rows.append({"group_size": int(g), "zero_advantage_rate": float(equal[i].mean()) if n_prob else np.nan,
                     "all_negative": float((neg ** g).mean()) if n_prob else np.nan,
                     "all_positive": float((pos ** g).mean()) if n_prob else np.nan, "n_problems": n_prob})
    return pd.DataFrame(rows)


def sample_group_statistics(problems, rewards, *, weights=None, group_sizes: Sequence[int] = (2, 4, 8, 16),
                            n_groups: int = 2000, seed: int | None = 0) -> pd.DataFrame:
    """Monte Carlo version of :func:`group_statistics`: draw ``n_groups`` groups per problem.

    Each group draws G samples of one problem with replacement, with probability
    proportional to ``weights`` (inverse-CDF on the per-problem cumulative weights).
    """
    problems, rewards, weights = _group_inputs(problems, rewards, weights)
    frame = pd.DataFrame({"problem": problems})
    prob, n_prob = group_codes(frame, ["problem"])
    order = np.argsort(prob, kind="stable")
    r_sorted, w_sorted, p_sorted = rewards[order], weights[order], prob[order]
    cum = np.cumsum(w_sorted)
    total = np.bincount(p_sorted, weights=w_sorted, minlength=n_prob)
    end = np.cumsum(total)
    start = end - total
    rng = np.random.default_rng(seed)
    rows = []
    for g in group_sizes:
        target = start[:, None, None] + rng.random((n_prob, n_groups, int(g))) * total[:, None, None]
        idx = np.minimum(np.searchsorted(cum, target, side="right"), len(cum) - 1)
        drawn = r_sorted[idx]
        rows.append({"group_size": int(g),
                     "zero_advantage_rate": float((drawn == drawn[..., :1]).all(axis=-1).mean()),
                     "all_negative": float((drawn < 0).all(axis=-1).mean()),
                     "all_positive": float((drawn > 0).all(axis=-1).mean()), "n_problems": n_prob})
    return pd.DataFrame(rows)


def fallback_exposure(f, n) -> np.ndarray:
    """P = 1 - (1 - f)^n: chance that at least one of n independent executions is affected.

    Examples
    --------
    >>> float(fallback_exposure(0.01, 20).round(4))
    0.1821
    """
    f = np.asarray(f, dtype=float)
    if np.any((f < 0) | (f > 1)):
        raise ValueError("f must lie in [0, 1]")
    return 1.0 - (1.0 - f) ** np.asarray(n, dtype=float)


# --------------------------------------------------------------------------------------------
# Thresholds and verdicts
# --------------------------------------------------------------------------------------------

_CHECKS = (
    # label, metric, warn attr, fail attr, higher_is_worse
    ("sparse", "auc", "auc_sparse_warn", "auc_sparse_fail", False),
    ("saturated", "auc", "auc_saturated_warn", "auc_saturated_fail", True),
    ("non-monotone", "monotonicity", "monotonicity_warn", "monotonicity_fail", False),
    ("off-diagonal", "diagonal_deviation", "deviation_warn", "deviation_fail", True),
    ("dead groups", "zero_advantage_rate", "zero_advantage_warn", "zero_advantage_fail", True),
    ("noisy", "curve_noise", "noise_warn", "noise_fail", True),
)


def classify(diagnostics: dict, thresholds: DegeneracyThresholds | dict | None = None) -> list[tuple]:
    """Check one environment's diagnostics: list of (label, metric, value, level, threshold text).

    Level is ``pass``/``warn``/``fail``, or ``n/a`` for a NaN value (nothing measured: no sample, or
    ``curve_noise`` with one repeat pair), never a verdict.
    """
    th = DegeneracyThresholds.from_any(thresholds)
    out = []
    for label, metric, warn_attr, fail_attr, higher in _CHECKS:
        value = diagnostics.get(metric, np.nan)
        warn, fail = getattr(th, warn_attr), getattr(th, fail_attr)
        if value is None or not np.isfinite(value):
            level = "n/a"
        elif higher:
            level = "fail" if value >= fail else "warn" if value >= warn else "pass"
        else:
            level = "fail" if value <= fail else "warn" if value <= warn else "pass"
        op = ">=" if higher else "<="
        out.append((label, metric, value, level, f"{label} when {metric} {op} {warn:g} (warn), {op} {fail:g} (fail)"))
    return out


def _verdict(checks: list[tuple]) -> tuple[str, str]:
    levels = [c[3] for c in checks]
    if levels and all(level == "n/a" for level in levels):
        return "n/a", "n/a: nothing measurable"
    level = "fail" if "fail" in levels else "warn" if "warn" in levels else "pass"
    labels = [c[0] for c in checks if c[3] == level] if level != "pass" else []
    return level, (level if not labels else f"{level}: {', '.join(labels)}")


# --------------------------------------------------------------------------------------------
# The simulation
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SimulationResult:
    """The offline simulation of one environment.

    Attributes
    ----------
    environment : Environment
    curve : DataFrame
        Pooled curve: ``bin, u_low, u_high, u_mid, n, mean_reward, curve, ideal, sd_pairs``.
    pair_curves : DataFrame
        ``pair, bin, u_mid, n, curve`` per repeat pair.
    diagnostics : dict
        The DIAGNOSTICS plus ``<name>_ci_low/_ci_high`` (absent without a CI: ``ci_reason`` says why),
        ``n_problems`` (with >= 1 sample), ``n_problems_total`` (with a rollout), ``n_solutions``,
        ``n_pairs``, ``mean_reward``, ``limited_share``, ``kept_test_share``, ``exposure``,
        ``headline_group_size``, ``level`` and ``verdict``.
    groups : DataFrame
        :func:`group_statistics` at every group size.
    checks : tuple
        :func:`classify` output.
    """

    environment: Environment
    curve: pd.DataFrame
    pair_curves: pd.DataFrame
    diagnostics: dict
    groups: pd.DataFrame
    checks: tuple = field(default=())

    @property
    def verdict(self) -> str:
        return self.diagnostics["verdict"]

    def to_frame(self) -> pd.DataFrame:
        return self.curve

    def to_dict(self) -> dict:
        return {"environment": self.environment.to_dict(), "diagnostics": dict(self.diagnostics),
                "curve": self.curve.to_dict(orient="records"), "groups": self.groups.to_dict(orient="records")}

    def summary(self) -> str:
        d = self.diagnostics
        lines = [f"environment {self.environment.name}: {self.environment.describe()}",
                 f"  verdict {d['verdict']}  (n = {problems_text(d)}, {d['n_solutions']} solutions, "
                 f"{d['n_pairs']} repeat pairs)" + (f"; {d['ci_reason']}" if d.get("ci_reason") else "")]
        for name in DIAGNOSTICS:
            lo, hi = d.get(f"{name}_ci_low", np.nan), d.get(f"{name}_ci_high", np.nan)
            ci = f" [{lo:.3f}, {hi:.3f}]" if np.isfinite(lo) else ""
            lines.append(f"  {name:20s} {d[name]:.3f}{ci}")
        return "\n".join(lines)


def _pools(runs: pd.DataFrame) -> pd.DataFrame:
    """Reference pools of ``runs`` without its floor rows (what apply_environment would build)."""
    if "role" in runs.columns:
        runs = runs.loc[(runs["role"] != "floor").to_numpy()]
    return reference_pools(runs)


def _repeat_pairs(repeats: np.ndarray) -> list[tuple[int, int]]:
    r = len(repeats)
    if r == 1:
        return [(0, 0)]
    return [(i, (i + 1) % r) for i in range(r)]


def problems_text(diagnostics: dict) -> str:
    """The problems a simulation's figures rest on, as text: ``2 problems with samples``, or ``1 problem with
    samples, of 2 with rollouts`` when some problems gave no sample.

    Examples
    --------
    >>> problems_text({"n_problems": 1, "n_problems_total": 2})
    '1 problem with samples, of 2 with rollouts'
    """
    n = int(diagnostics["n_problems"])
    total = int(diagnostics.get("n_problems_total", n))
    text = f"{n} problem{'' if n == 1 else 's'} with samples"
    return text if total == n else f"{text}, of {total} with rollouts"


def ci_reason(n_sampled: int, n_boot: int, n_total: int | None = None) -> str | None:
    """Why the diagnostics have no bootstrap CI (None: they have one): fewer than 2 problems with samples (every
    resample would be that problem) or no resample asked for. ``n_total``: the problems with rollouts.

    Examples
    --------
    >>> ci_reason(1, 200, 2)
    'no CI: 1 problem with samples, of 2 with rollouts; a bootstrap over problems needs >= 2'
    >>> ci_reason(5, 200) is None
    True
    """
    if n_sampled < 2:
        counts = {"n_problems": n_sampled, "n_problems_total": n_sampled if n_total is None else n_total}
        return f"no CI: {problems_text(counts)}; a bootstrap over problems needs >= 2"
    if n_boot < 1:
        return "no CI: n_boot = 0 draws no bootstrap resample"
    return None


def _boot_diagnostics(sums: np.ndarray, counts: np.ndarray, tables: np.ndarray, u_mid: np.ndarray, n_boot: int,
                      level: float, seed) -> dict:
    """Percentile-bootstrap CIs of the diagnostics, resampling problems (rows of sums/counts/tables)."""
    n_prob = sums.shape[0]
    out = {}
    if n_prob < 2 or n_boot < 1:
        return out
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n_prob, np.full(n_prob, 1.0 / n_prob), size=n_boot).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        curves = ((draws @ sums) / (draws @ counts) + 1.0) / 2.0
    boot_tables = (draws @ tables.reshape(n_prob, -1)).reshape((n_boot,) + tables.shape[1:])
    stats = _curve_diagnostics_batch(curves, u_mid)
    stats["monotonicity"] = np.array([table_monotonicity(t) for t in boot_tables])
    alpha = (1 - level) / 2
    for name, values in stats.items():
        values = values[np.isfinite(values)]
        if len(values):
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = (float(x) for x in np.quantile(values, [alpha, 1 - alpha]))
    return out


def simulate(
    runs: pd.DataFrame,
    env: Environment,
    *,
    quality: pd.DataFrame | None = None,
    pools: pd.DataFrame | None = None,
    percentiles: np.ndarray | None = None,
    floor_durations: np.ndarray | None = None,
    base: ScoringBase | None = None,
    include_incorrect: bool = False,
    n_bins: int = 10,
    group_sizes: Sequence[int] = (2, 4, 8, 16),
    headline_group_size: int | None = None,
    quality_distribution="uniform",
    thresholds: DegeneracyThresholds | dict | None = None,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int | None = 0,
) -> SimulationResult:
    """Run the offline simulator for one environment.

    Parameters
    ----------
    runs : DataFrame
        Executions of one sandbox environment and one campaign (corpus schema) with
        several repeats; the correct ``reference`` solutions are the simulated rollouts.
    env : Environment
    quality : DataFrame, optional
        :func:`repeat_quality` of ``runs`` (pass it when simulating many environments).
    pools : DataFrame, optional
        ``stats.ranking.reference_pools`` of ``runs`` without its ``floor`` rows (likewise).
    percentiles : ndarray, optional
        ``stats.rewards.base_percentiles(runs, pools=pools, roles=("reference",))``
        (likewise: one ranking pass for every environment).
    floor_durations : ndarray, optional
        The durations of the run's ``floor`` rows when ``runs`` comes without them
        (:func:`stats.rewards.apply_environment`; :func:`simulate_grid` strips them once).
    base : ScoringBase, optional
        ``stats.rewards.ScoringBase(runs, pools=pools, roles=("reference",))`` of ``runs`` without floor rows
        (likewise: the test table, scored rows and units built once for every environment).
    include_incorrect : bool, default False
        Also use the incorrect references as rollouts (ranked by their q, failed
        tests at percentile 100). Only then can schemes that ignore correctness
        (``optimization``, ``additive``) be told apart from gated ones.
    n_bins : int, default 10
        Quality bins of the curve.
    group_sizes : sequence of int
        GRPO group sizes G.
    headline_group_size : int, optional
        G of the reported ``zero_advantage_rate`` (default: the largest of ``group_sizes``).
    quality_distribution : "uniform" or ("beta", a, b)
        Rollout quality distribution of the GRPO groups (:func:`quality_weights`).
    thresholds : DegeneracyThresholds or dict, optional
    n_boot : int, default 200
        Bootstrap replicates over problems for the diagnostics' CIs.

    Returns
    -------
    SimulationResult
    """
    group_sizes, headline = checked_group_sizes(group_sizes, headline_group_size, n_bins)
    if "repeat" not in runs.columns:
        runs = runs.assign(repeat=0)
    if pools is None:
        pools = _pools(runs)
    if quality is None:
        quality = repeat_quality(runs, pools=pools, include_incorrect=include_incorrect)
    part = simulate_problems(runs, env, repeats=np.sort(pd.unique(quality["repeat"].to_numpy())), quality=quality,
                             pools=pools, percentiles=percentiles, n_bins=n_bins, group_sizes=group_sizes,
                             quality_distribution=quality_distribution, floor_durations=floor_durations,
                             base=base)
    return combine_simulation(part, env, headline_group_size=headline, group_sizes=group_sizes,
                              thresholds=thresholds, n_boot=n_boot, level=level, seed=seed)


def checked_group_sizes(group_sizes: Sequence[int], headline_group_size: int | None, n_bins: int):
    """The checked group sizes (the headline one added when missing) and the headline G."""
    if n_bins < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins}")
    if not group_sizes:
        raise ValueError("group_sizes must name at least one group size")
    headline = int(max(group_sizes) if headline_group_size is None else headline_group_size)
    if headline not in [int(g) for g in group_sizes]:
        group_sizes = tuple(group_sizes) + (headline,)
    return tuple(group_sizes), headline


@dataclass(frozen=True)
class SimulationProblems:
    """The per-problem part of :func:`simulate` for one environment: every figure of the simulation is a
    function of these (:func:`combine_simulation`), so they can be computed for disjoint sets of whole
    problems apart (the partitions of a dataset, :mod:`audits.engine.partitioned`) and concatenated.

    Attributes
    ----------
    problems : ndarray of str
        The problems (those with a scored unit), in sorted order: the order of every per-problem array.
    sums, counts : ndarray, shape (problems, repeat pairs, bins)
        Sum of the rewards and number of samples per problem, repeat pair and quality bin.
    table9, table2 : dict of ndarray
        The samples counted per (problem, bin, reward value) with the value rounded to 9 and to 2 digits
        (``problem`` an index into ``problems``; ``value``, ``bin``, ``count``); ``table9`` is None when the
        part alone has more than 201 distinct values (the monotonicity then rounds to 2 digits anyway).
    group_problems : ndarray of str
        The problems of the GRPO group rates; ``equal`` (group sizes x problems), ``negative``, ``positive``
        are :func:`problem_group_rates`.
    n_units, n_tests, n_opt_tests, n_opt_kept, n_executions, n_limited : int
        Solutions simulated; (problem, test) pairs, of them optimization tests and kept optimization tests;
        executions scored after the filter and how many of them the limit turned into timeouts.
    """

    problems: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    table9: dict | None
    table2: dict
    group_problems: np.ndarray
    equal: np.ndarray
    negative: np.ndarray
    positive: np.ndarray
    n_units: int
    n_tests: int
    n_opt_tests: int
    n_opt_kept: int
    n_executions: int
    n_limited: int

    @classmethod
    def concat(cls, parts: Sequence["SimulationProblems"]) -> "SimulationProblems":
        """Several parts (disjoint problems, the same repeat pairs and bins) as one, problems in name order
        (the order of a loaded dataset's problem codes; the bootstrap over problems reorders them by their
        figures, :func:`_data_order`, so the names decide nothing)."""
        parts = list(parts)
        if len(parts) == 1:
            return parts[0]
        names = np.concatenate([p.problems for p in parts]).astype(str)
        order = np.argsort(names, kind="stable")
        if len(np.unique(names)) != len(names):
            raise ValueError("the same problem is in two parts: a partition must hold whole problems")
        position = np.empty(len(names), dtype=np.int64)
        position[order] = np.arange(len(names))  # new index of every part-local problem, parts stacked
        offsets = np.cumsum([0] + [len(p.problems) for p in parts])

        def table(key):
            if any(getattr(p, key) is None for p in parts):
                return None
            t = [getattr(p, key) for p in parts]
            return {"problem": np.concatenate([position[o + x["problem"]] for o, x in zip(offsets, t)]),
                    **{c: np.concatenate([x[c] for x in t]) for c in ("bin", "value", "count")}}

        group_names = np.concatenate([p.group_problems for p in parts]).astype(str)
        group_order = np.argsort(group_names, kind="stable")
        return cls(problems=names[order],
                   sums=np.concatenate([p.sums for p in parts])[order],
                   counts=np.concatenate([p.counts for p in parts])[order],
                   table9=table("table9"), table2=table("table2"),
                   group_problems=group_names[group_order],
                   equal=np.ascontiguousarray(np.concatenate([p.equal for p in parts], axis=1)[:, group_order]),
                   negative=np.concatenate([p.negative for p in parts])[group_order],
                   positive=np.concatenate([p.positive for p in parts])[group_order],
                   **{k: int(sum(getattr(p, k) for p in parts)) for k in
                      ("n_units", "n_tests", "n_opt_tests", "n_opt_kept", "n_executions", "n_limited")})


def _value_table(p: np.ndarray, bins: np.ndarray, values: np.ndarray, n_bins: int) -> dict:
    """Samples counted per (problem, bin, value): one ``np.unique`` of a combined key."""
    uniq, code = np.unique(values, return_inverse=True)
    n_values = max(len(uniq), 1)
    key, count = np.unique((p * n_bins + bins) * n_values + code.reshape(-1), return_counts=True)
    return {"problem": key // n_values // n_bins, "bin": key // n_values % n_bins, "value": uniq[key % n_values],
            "count": count}


def simulate_problems(
    runs: pd.DataFrame,
    env: Environment,
    *,
    repeats: np.ndarray,
    quality: pd.DataFrame,
    pools: pd.DataFrame,
    percentiles: np.ndarray | None = None,
    n_bins: int = 10,
    group_sizes: Sequence[int] = (2, 4, 8, 16),
    quality_distribution="uniform",
    floor_durations: np.ndarray | None = None,
    base: ScoringBase | None = None,
    run_medians: np.ndarray | None = None,
) -> SimulationProblems:
    """The per-problem part of :func:`simulate` (which calls it on every problem of the run).

    ``runs`` holds whole problems (all of the run's, or a partition's, with the run's ``floor`` rows);
    ``repeats`` are the sorted repeat values of the whole run's ``quality`` (they define the repeat pairs; a
    ``multitask`` reward's coins are keyed by each rollout's data, :func:`stats.rewards.multitask_uniforms`, so a
    part draws what the whole run draws). ``base``: a
    :class:`stats.rewards.ScoringBase` of these ``runs`` (without floor rows: ``floor_durations`` given),
    ``pools``, the references, per repeat, shared by every environment simulated on them. ``run_medians``: the
    whole run's :func:`stats.rewards.reference_medians` when ``runs`` is a partition (None: ``runs`` is the whole
    run), for a reward environment relative to them.
    """
    outcome: EnvironmentRun = apply_environment(runs, env, per_repeat=True, roles=("reference",), pools=pools,
                                                percentiles=percentiles, floor_durations=floor_durations, base=base,
                                                run_medians=run_medians)
    scores = outcome.scores
    scores = scores.assign(reward=environment_rewards(scores, env.reward))

    # Units x repeats matrices (quality from the unfiltered q, reward from the environment).
    units_code, n_units = group_codes(quality, ["problem", "solution"])
    rep_index = np.searchsorted(repeats, quality["repeat"].to_numpy())
    q_mat = np.full((n_units, len(repeats)), np.nan)
    q_mat[units_code, rep_index] = quality["q"].to_numpy(dtype=float)
    first = first_rows(units_code, n_units)
    unit_problem = quality["problem"].to_numpy()[first]
    prob_code, n_prob = group_codes(pd.DataFrame({"problem": unit_problem}), ["problem"])
    problem_names = np.asarray(unit_problem[first_rows(prob_code, n_prob)]).astype(str)

    row = row_lookup(quality, scores, ["problem", "solution", "repeat"])
    r_mat = np.full((n_units, len(repeats)), np.nan)
    found = row >= 0
    r_mat[units_code[found], rep_index[found]] = scores["reward"].to_numpy(dtype=float)[row[found]]

    pairs = _repeat_pairs(repeats)
    u_parts, r_parts, p_parts, pair_parts = [], [], [], []
    for k, (a, b) in enumerate(pairs):  # a loop over the few repeat pairs, vectorised inside
        u = within_group_rank(prob_code, q_mat[:, a])
        r = r_mat[:, b]
        ok = np.isfinite(u) & np.isfinite(r)
        u_parts.append(u[ok])
        r_parts.append(r[ok])
        p_parts.append(prob_code[ok])
        pair_parts.append(np.full(ok.sum(), k))
    u = np.concatenate(u_parts)
    r = np.concatenate(r_parts)
    p = np.concatenate(p_parts)
    pair = np.concatenate(pair_parts)
    bins = np.minimum((u * n_bins).astype(np.int64), n_bins - 1)
    n_pairs = len(pairs)
    cell = (p * n_pairs + pair) * n_bins + bins
    size = n_prob * n_pairs * n_bins
    sums = np.bincount(cell, weights=r, minlength=size).reshape(n_prob, n_pairs, n_bins)
    counts = np.bincount(cell, minlength=size).reshape(n_prob, n_pairs, n_bins)
    values9 = np.round(r, 9)
    table9 = None if len(np.unique(values9)) > 201 else _value_table(p, bins, values9, n_bins)
    group_problems, equal, negative, positive = problem_group_rates(
        problem_names[p], r, weights=quality_weights(u, quality_distribution), group_sizes=group_sizes)
    tests = outcome.tests
    is_opt = tests["test_kind"].to_numpy() == "optimization"
    return SimulationProblems(
        problems=problem_names, sums=sums, counts=counts, table9=table9,
        table2=_value_table(p, bins, np.round(r, 2), n_bins), group_problems=np.asarray(group_problems).astype(str),
        equal=equal, negative=negative, positive=positive, n_units=int(n_units), n_tests=len(tests),
        n_opt_tests=int(is_opt.sum()), n_opt_kept=int((tests["kept"].to_numpy() & is_opt).sum()),
        n_executions=int(outcome.n_executions), n_limited=int(outcome.n_limited))


def _tables(part: SimulationProblems, n_bins: int) -> np.ndarray:
    """(problems x bins x reward values) counts for the monotonicity: values rounded to 9 digits, or to 2
    when there are more than 201 distinct ones (see the module docstring)."""
    t = part.table9
    if t is None or len(np.unique(t["value"])) > 201:
        t = part.table2
    uniq = np.unique(t["value"])
    n_values = max(len(uniq), 1)
    flat = np.bincount((t["problem"] * n_bins + t["bin"]) * n_values + np.searchsorted(uniq, t["value"]),
                       weights=t["count"], minlength=len(part.problems) * n_bins * n_values)
    return flat.reshape(len(part.problems), n_bins, n_values)


def _data_order(part: SimulationProblems, tables: np.ndarray) -> np.ndarray:
    """The problems of ``part`` in the order of a key of their figures: their sample counts per repeat pair and
    bin, their sums of rewards (to 6 decimals, so the last bit of a sum in another order moves nothing) and
    their counts per bin and reward value (``tables``), hashed with BLAKE2b. Two problems with the same figures
    tie (the stable sort keeps their order): they are interchangeable in every statistic of the bootstrap.
    """
    n = len(part.problems)
    if n < 2:
        return np.arange(n, dtype=np.int64)
    counts = np.ascontiguousarray(part.counts.reshape(n, -1), dtype="<i8")
    sums = np.ascontiguousarray(np.round(part.sums.reshape(n, -1), 6) + 0.0, dtype="<f8")
    tabs = np.ascontiguousarray(tables.reshape(n, -1), dtype="<f8")
    keys = [hashlib.blake2b(counts[i].tobytes() + sums[i].tobytes() + tabs[i].tobytes(), digest_size=8).digest()
            for i in range(n)]
    return np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)


def combine_simulation(
    parts,
    env: Environment,
    *,
    group_sizes: Sequence[int],
    headline_group_size: int,
    thresholds: DegeneracyThresholds | dict | None = None,
    n_boot: int = 200,
    level: float = 0.95,
    seed: int | None = 0,
) -> SimulationResult:
    """The :class:`SimulationResult` from per-problem parts (:func:`simulate_problems`; one, or a sequence
    concatenated with :meth:`SimulationProblems.concat`): the curves, the diagnostics and their bootstrap over
    problems, the GRPO group statistics and the verdict. :func:`simulate` ends here, and so does the Dask path.

    ``n_problems`` counts the problems with at least one sample (a (quality, reward) pair), the ones every figure
    rests on; ``n_problems_total`` every problem with a rollout (a problem whose only correct reference is scored
    against an empty pool has rollouts but no sample). The bootstrap resamples the problems with samples only.
    *Decision*: with fewer than 2 of them the CIs are undefined (absent, ``ci_reason`` says why) but the verdict
    stands: the checks judge point figures (AUC, monotonicity, deviation, the zero-advantage rate, curve noise)
    against thresholds, and a point figure over one problem is measured; only figures judged against bootstrap
    resamples are n/a with fewer than 2 problems (the rule of the aggregation audit, whose point figures are
    judged with one problem too). The findings say on how many problems a verdict stands.
    """
    part = SimulationProblems.concat(parts if isinstance(parts, (list, tuple)) else [parts])
    n_prob, n_pairs, n_bins = part.sums.shape
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    u_mid = (edges[:-1] + edges[1:]) / 2
    tables = _tables(part, n_bins)
    # every sum over problems and the bootstrap's resampling take the problems in the order of their figures,
    # never of their names (renaming the problems into another sort order drew other bootstrap replicates and
    # moved every CI)
    by_data = _data_order(part, tables)
    sums, counts, tables = part.sums[by_data], part.counts[by_data], tables[by_data]
    pc_sum = sums.sum(axis=0)
    pc_n = counts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_curve = (pc_sum / pc_n + 1.0) / 2.0
        total_n = pc_n.sum(axis=0)
        mean_reward = pc_sum.sum(axis=0) / total_n
    curve = (mean_reward + 1.0) / 2.0
    sd_pairs = np.full(n_bins, np.nan)
    if n_pairs > 1:
        with np.errstate(invalid="ignore", divide="ignore"):
            valid = np.isfinite(pair_curve).sum(axis=0) > 1
            if valid.any():
                sd_pairs[valid] = np.nanstd(pair_curve[:, valid], axis=0, ddof=1)
    curve_frame = pd.DataFrame({"bin": np.arange(n_bins), "u_low": edges[:-1], "u_high": edges[1:], "u_mid": u_mid,
                                "n": total_n, "mean_reward": mean_reward, "curve": curve, "ideal": 1.0 - u_mid,
                                "sd_pairs": sd_pairs})
    pair_frame = pd.DataFrame({"pair": np.repeat(np.arange(n_pairs), n_bins), "bin": np.tile(np.arange(n_bins), n_pairs),
                               "u_mid": np.tile(u_mid, n_pairs), "n": pc_n.ravel(), "curve": pair_curve.ravel()})

    diag = curve_diagnostics(curve, u_mid)
    diag["curve_noise"] = float(np.nanmean(sd_pairs)) if np.isfinite(sd_pairs).any() else float("nan")
    diag["monotonicity"] = table_monotonicity(tables.sum(axis=0))
    prob_bin_sum = sums.sum(axis=1)
    prob_bin_n = counts.sum(axis=1)
    # the bootstrap resamples the problems with samples only: a problem without one (a single correct reference,
    # scored against an empty pool) adds nothing to any figure, and resampling it only thinned the others (with one
    # problem with samples every interval collapsed onto the point value: "95% CI 0.46-0.46, n = 2 problems")
    sampled = prob_bin_n.sum(axis=1) > 0
    n_sampled = int(sampled.sum())
    diag.update(_boot_diagnostics(prob_bin_sum[sampled], prob_bin_n[sampled].astype(float), tables[sampled], u_mid,
                                  n_boot, level, seed))

    # each group rate's mean over problems sums them in sorted order (not the names')
    groups = _group_frame(np.sort(part.equal, axis=1), np.sort(part.negative), np.sort(part.positive),
                          group_sizes=group_sizes)
    head = groups.loc[groups["group_size"] == headline_group_size].iloc[0]
    diag["zero_advantage_rate"] = float(head["zero_advantage_rate"]) if part.counts.sum() else float("nan")
    diag["all_negative_rate"] = float(head["all_negative"])
    diag["all_positive_rate"] = float(head["all_positive"])
    diag["headline_group_size"] = headline_group_size
    diag["kept_test_share"] = part.n_opt_kept / max(part.n_opt_tests, 1)
    limited_share = part.n_limited / part.n_executions if part.n_executions else float("nan")
    diag["limited_share"] = float(limited_share)
    tests_per_problem = part.n_tests / max(n_prob, 1)
    diag["exposure"] = float(fallback_exposure(min(max(limited_share, 0.0), 1.0), tests_per_problem)) \
        if np.isfinite(limited_share) else float("nan")
    n_samples = int(part.counts.sum())
    diag["mean_reward"] = float(sums.sum() / n_samples) if n_samples else float("nan")
    diag["n_problems"] = n_sampled  # problems with >= 1 sample: those every figure and the bootstrap rest on
    diag["n_problems_total"] = int(n_prob)  # problems with a rollout (a correct reference), samples or not
    diag["ci_reason"] = ci_reason(n_sampled, n_boot, int(n_prob))
    diag["n_solutions"] = int(part.n_units)
    diag["n_pairs"] = n_pairs
    diag["n_samples"] = n_samples
    diag["n_optimization_tests"] = int(part.n_opt_tests)
    diag["n_quality_bins"] = int((total_n > 0).sum())  # bins of u holding a sample (< 2: quality not ordered)
    checks = classify(diag, thresholds)
    diag["level"], diag["verdict"] = _verdict(checks)
    return SimulationResult(environment=env, curve=curve_frame, pair_curves=pair_frame, diagnostics=diag,
                            groups=groups, checks=tuple(checks))


def rank_environments(results: Sequence[SimulationResult]) -> pd.DataFrame:
    """One row per environment, best first.

    Order: verdict level (pass, warn, fail), then diagonal deviation (smaller
    first: the diagnostic that tracked online p30 best in the study), then
    monotonicity (larger first). Columns: ``rank, environment, description``,
    the diagnostics (with CIs), ``level, verdict``.
    """
    rows = []
    for res in results:
        row = {"environment": res.environment.name, "description": res.environment.describe()}
        row.update({k: v for k, v in res.diagnostics.items()})
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    order = {"pass": 0, "warn": 1, "fail": 2, "n/a": 3}  # nothing measured ranks last
    frame["_level"] = frame["level"].map(order)
    frame["_dev"] = frame["diagonal_deviation"].fillna(np.inf)
    frame["_mono"] = -frame["monotonicity"].fillna(-np.inf)
    frame = frame.sort_values(["_level", "_dev", "_mono"], kind="stable").drop(columns=["_level", "_dev", "_mono"])
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame.reset_index(drop=True)


def check_unique_names(environments: Sequence[Environment]) -> None:
    """A ValueError naming the reward environments given more than once (their names key every table)."""
    names = [env.name for env in environments]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"environment names must be unique; repeated: {duplicates}")


def simulate_grid(runs: pd.DataFrame, environments: Sequence[Environment], **options) -> tuple[pd.DataFrame, list]:
    """Simulate many environments on the same runs (quality computed once) and rank them.

    Returns
    -------
    (ranking, results) : :func:`rank_environments` frame and the :class:`SimulationResult` list
    (in the input order).
    """
    check_unique_names(environments)
    if "repeat" not in runs.columns:
        runs = runs.assign(repeat=0)
    if "role" in runs.columns and "floor_durations" not in options:
        # The run without its floor rows, once: each environment copied it again (7 copies of 5*10^6 rows,
        # 5.7 s of the whole audit at 10^7); the floor rows only give their durations (a floor-relative score).
        is_floor = label_mask(runs["role"], "floor")
        if is_floor.any():
            options["floor_durations"] = runs["duration_s"].to_numpy(dtype=float)[is_floor]
            runs = runs.loc[~is_floor]
    pools = options.pop("pools", None)
    if pools is None:
        pools = _pools(runs)
    quality = options.pop("quality", None)
    if quality is None:
        quality = repeat_quality(runs, pools=pools, include_incorrect=options.get("include_incorrect", False))
    percentiles = options.pop("percentiles", None)
    if percentiles is None:
        percentiles = base_percentiles(runs, pools=pools, roles=("reference",))
    if "base" not in options and not ("role" in runs.columns and label_mask(runs["role"], "floor").any()):
        options["base"] = ScoringBase(runs, pools=pools, roles=("reference",), per_repeat=True)
    results = [simulate(runs, env, quality=quality, pools=pools, percentiles=percentiles, **options)
               for env in environments]
    return rank_environments(results), results
