"""Straightforward baselines: the same computations written the way one writes them first.

Each function takes a loaded corpus (the benchmark geometry of
:mod:`benchmarks.corpora`: one environment, campaigns c0 and c1) and returns a
small dict of results that :mod:`benchmarks.run` compares with the fast
implementation before any time is reported.

* percentiles: pandas groupby over (problem, test) and, for every execution,
  ``scipy.stats.percentileofscore(pool without its own solution, d, kind="mean")``.
* reliability: repeat CV by ``groupby(...).apply``, per-repeat q from the
  baseline percentiles and rank drift by groupby-apply, ICC per test with
  ``pingouin.intraclass_corr`` (targets = solutions, raters = repeats, on log
  duration), a ``scipy.stats.mannwhitneyu`` per pair of solutions with
  Benjamini-Hochberg (statsmodels). It leaves out the variance components and
  the bootstrap CIs the fast audit also computes, so its time is a lower bound.
* discriminability: per-test reference medians and per-problem robust CV
  (IQR / median) by groupby-apply, the strong-weak gap in a per-problem loop.
* calibration: pairs by groupby median, leave-one-problem-out predictions with
  scikit-learn ``cross_val_predict(..., cv=LeaveOneGroupOut())`` for the five
  least-squares families, pooled R^2, and per family a 1,000-resample bootstrap
  over problems of the pooled R^2 and of the fit (a refit per resample).
* aggregation: a Python loop over problems calling the library's 17+
  aggregators on that problem's rows (``stats.aggregation.aggregate``), each
  repeat score turned into a percentile among the references' collapsed scores
  with ``scipy.stats.percentileofscore`` (leave-self-out), stability (mean
  |s_i - s_j| over pairs of repeats) by groupby-apply. It leaves out the
  dynamic range, the Pareto front and the bootstraps.
* simulation: a Python loop over environments and problems calling
  ``stats.rewards.apply_environment`` on that problem's rows.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import percentileofscore

__all__ = ["BASELINES", "percentiles", "reliability", "discriminability", "calibration", "aggregation", "simulation"]

KEYS = ["problem", "test", "solution", "repeat"]


def _run(corpus: pd.DataFrame, campaign: str = "c0") -> pd.DataFrame:
    rows = corpus[(corpus["campaign"].astype(str) == campaign) & (corpus["role"].astype(str) != "floor")]
    rows = rows.copy()
    for column in ("problem", "test", "solution"):
        rows[column] = rows[column].astype(str)
    return rows.reset_index(drop=True)


def _pool(run: pd.DataFrame) -> pd.DataFrame:
    refs = run[(run["role"] == "reference") & run["correct"] & (run["status"] == "ok")]
    return refs.groupby(["problem", "test", "solution"])["duration_s"].apply(np.median).reset_index()


def _percentile_rows(run: pd.DataFrame, pool: pd.DataFrame) -> pd.Series:
    pools = {key: (g["solution"].to_numpy(), g["duration_s"].to_numpy())
             for key, g in pool.groupby(["problem", "test"])}
    out = np.full(len(run), np.nan)
    empty = (np.zeros(0, dtype=object), np.zeros(0))
    for key, group in run.groupby(["problem", "test"]):
        pool_s, pool_d = pools.get(key, empty)
        for index, solution, d, status in zip(group.index, group["solution"], group["duration_s"], group["status"]):
            if status != "ok":
                out[index] = 100.0
                continue
            others = pool_d[pool_s != solution]  # leave-self-out
            out[index] = percentileofscore(others, d, kind="mean") if len(others) else np.nan
    return pd.Series(out, index=run.index)


def percentiles(corpus: pd.DataFrame) -> dict:
    """Per-test percentile of every c0 execution (sorted by problem, test, solution, repeat)."""
    run = _run(corpus)
    run["percentile"] = _percentile_rows(run, _pool(run))
    run = run.sort_values(KEYS)
    return {"percentile": run["percentile"].to_numpy()}


def reliability(corpus: pd.DataFrame) -> dict:
    import pingouin

    rows = corpus[corpus["role"].astype(str) == "reference"].copy()
    for column in ("campaign", "problem", "test", "solution"):
        rows[column] = rows[column].astype(str)
    ok = rows[(rows["status"] == "ok") & (rows["campaign"] == "c0")]  # the audit reports each run on its own
    cv = ok.groupby(["campaign", "problem", "test", "solution"])["duration_s"].apply(lambda d: d.std() / d.mean())
    run = _run(corpus)
    run["percentile"] = _percentile_rows(run, _pool(run))
    q = run.groupby(["problem", "solution", "repeat"])["percentile"].mean().reset_index()
    drift = q.groupby(["problem", "solution"])["percentile"].apply(lambda s: pd.Series(
        {"range": s.max() - s.min(), "sd": s.std()})).unstack()
    logs = run[run["status"] == "ok"].assign(log_d=lambda f: np.log(f["duration_s"]))
    iccs = {}
    for key, group in logs.groupby(["problem", "test"]):
        table = pingouin.intraclass_corr(group, targets="solution", raters="repeat", ratings="log_d")
        iccs[key] = table["ICC"].iloc[1]  # row 1 = ICC2, two-way random, absolute agreement ("ICC(A,1)")
    icc = pd.Series(iccs).sort_index()
    return {"median_repeat_cv": float(cv.median()), "mean_rank_range": float(drift["range"].mean()),
            "icc2": icc.to_numpy(dtype=float), "significant_share": _significant_share(q)}


def _significant_share(q: pd.DataFrame, alpha: float = 0.05) -> float:
    """Share of (faster, slower) reference pairs whose repeats differ: one scipy Mann-Whitney per pair, then BH."""
    from scipy.stats import mannwhitneyu
    from statsmodels.stats.multitest import multipletests

    pvalues = []
    for _, group in q.groupby("problem"):  # per-problem loop, then every pair of solutions
        per_solution = {s: g["percentile"].to_numpy() for s, g in group.groupby("solution")}
        for a, b in itertools.combinations(per_solution, 2):
            xa, xb = per_solution[a], per_solution[b]
            if np.median(xa) == np.median(xb):
                continue
            if np.median(xb) < np.median(xa):
                xa, xb = xb, xa
            pvalues.append(mannwhitneyu(xa, xb, alternative="less", method="exact").pvalue)
    if not pvalues:
        return float("nan")
    return float(np.mean(multipletests(pvalues, alpha=alpha, method="fdr_bh")[0]))


def discriminability(corpus: pd.DataFrame) -> dict:
    run = _run(corpus)
    pool = _pool(run)
    medians = pool.groupby(["problem", "test"])["duration_s"].apply(np.median).reset_index()
    rcv = medians.groupby("problem")["duration_s"].apply(
        lambda m: (np.percentile(m, 75) - np.percentile(m, 25)) / np.median(m))
    run["percentile"] = _percentile_rows(run, pool)
    q = run.groupby(["problem", "solution", "repeat"])["percentile"].mean().reset_index()
    gaps = {}
    for problem, group in q.groupby("problem"):  # per-problem loop: quartiles from even repeats, scores from odd
        even = group[group["repeat"] % 2 == 0].groupby("solution")["percentile"].mean().sort_values(kind="stable")
        odd = group[group["repeat"] % 2 == 1].groupby("solution")["percentile"].mean()
        k = len(even) // 4
        if k:
            gaps[problem] = odd.reindex(even.index[-k:]).mean() - odd.reindex(even.index[:k]).mean()
    return {"robust_cv": rcv.sort_index().to_numpy(dtype=float), "mean_gap": float(np.mean(list(gaps.values())))}


def _lopo_models():
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures

    from sklearn.dummy import DummyRegressor

    # (model, space): "linear" fits y on x, "log" log y on log x, "ratio" log(y / x) by its mean (the
    # multiplicative map fitted in log space, docs/calibration.md: y = slope * x with log slope = mean log ratio)
    return {
        "multiplicative": (DummyRegressor(strategy="mean"), "ratio"),
        "affine": (LinearRegression(), "linear"),
        "power": (LinearRegression(), "log"),
        "poly2": (make_pipeline(PolynomialFeatures(2, include_bias=False), LinearRegression()), "linear"),
        "poly3": (make_pipeline(PolynomialFeatures(3, include_bias=False), LinearRegression()), "linear"),
    }


def calibration_pairs(corpus: pd.DataFrame) -> pd.DataFrame:
    rows = corpus[(corpus["role"].astype(str) == "reference") & (corpus["status"] == "ok")].copy()
    for column in ("campaign", "problem", "test", "solution"):
        rows[column] = rows[column].astype(str)
    med = rows.groupby(["campaign", "problem", "test", "solution"])["duration_s"].median().reset_index()
    x = med[med["campaign"] == "c0"].drop(columns="campaign").rename(columns={"duration_s": "x"})
    y = med[med["campaign"] == "c1"].drop(columns="campaign").rename(columns={"duration_s": "y"})
    return x.merge(y, on=["problem", "test", "solution"]).sort_values(["problem", "test", "solution"])


def calibration(corpus: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """LOPO R^2 of five families (sklearn), with the bootstraps over problems the audit also reports."""
    from sklearn.base import clone
    from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict

    pairs = calibration_pairs(corpus)
    x, y, groups = pairs["x"].to_numpy(), pairs["y"].to_numpy(), pairs["problem"].to_numpy()
    rng = np.random.default_rng(seed)
    problems = np.unique(groups)
    by_problem = {p: np.flatnonzero(groups == p) for p in problems}
    resamples = [np.concatenate([by_problem[p] for p in rng.choice(problems, len(problems))]) for _ in range(n_boot)]
    r2, r2_ci, params_ci = {}, {}, {}
    for family, (model, space) in _lopo_models().items():
        features = np.log(x)[:, None] if space == "log" else x[:, None]
        target = {"linear": y, "log": np.log(y), "ratio": np.log(y) - np.log(x)}[space]
        pred = cross_val_predict(model, features, target, groups=groups, cv=LeaveOneGroupOut())
        pred = {"linear": pred, "log": np.exp(pred), "ratio": x * np.exp(pred)}[space]
        r2[family] = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
        # CI of the pooled R^2 (resample problems' out-of-fold predictions) and of the fitted
        # parameters (a refit per resample)
        draws, coefs = [], []
        for idx in resamples:
            draws.append(1 - np.sum((y[idx] - pred[idx]) ** 2) / np.sum((y[idx] - y[idx].mean()) ** 2))
            fitted = clone(model).fit(features[idx], target[idx])
            last = fitted[-1] if hasattr(fitted, "steps") else fitted
            coefs.append(np.ravel(last.coef_)[0] if hasattr(last, "coef_") else np.nan)
        r2_ci[family] = [float(np.quantile(draws, 0.025)), float(np.quantile(draws, 0.975))]
        params_ci[family] = [float(np.quantile(coefs, 0.025)), float(np.quantile(coefs, 0.975))]
    return {"lopo_r2": r2, "lopo_r2_ci": r2_ci, "slope_ci": params_ci["affine"]}


def aggregation(corpus: pd.DataFrame) -> dict:
    """Stability of every aggregator, per campaign: a loop over problems, scipy for the score percentiles."""
    from stats.aggregation import AGGREGATORS, aggregate
    from stats.ranking import percentile_table, reference_pools

    stability = {}
    for campaign in ("c0", "c1"):
        rows = corpus[corpus["campaign"].astype(str) == campaign]
        is_floor = rows["role"].astype(str) == "floor"
        floor_s = float(rows.loc[is_floor, "duration_s"].median()) if is_floor.any() else 0.0
        run = rows[~is_floor]
        per_problem = {name: [] for name in AGGREGATORS}
        for problem in run["problem"].astype(str).unique():  # the per-problem loop
            part = run[run["problem"].astype(str) == problem]
            pools = reference_pools(part)
            rep = percentile_table(part, per_repeat=True, pools=pools)
            col = percentile_table(part, per_repeat=False, pools=pools)
            for name in AGGREGATORS:
                s_rep = aggregate(rep, pools, name=name, floor_s=floor_s)
                s_col = aggregate(col, pools, name=name, floor_s=floor_s)
                pool = dict(zip(s_col["solution"].astype(str), s_col["score"]))
                pct = []
                for solution, score in zip(s_rep["solution"].astype(str), s_rep["score"]):
                    others = np.array([v for k, v in pool.items() if k != solution and np.isfinite(v)])
                    pct.append(percentileofscore(others, score, kind="mean")
                               if len(others) and np.isfinite(score) else np.nan)
                s_rep = s_rep.assign(pct=pct, solution=s_rep["solution"].astype(str))
                diffs = s_rep.groupby("solution")["pct"].apply(
                    lambda v: np.mean([abs(a - b) for a, b in itertools.combinations(v.dropna().to_numpy(), 2)])
                    if v.notna().sum() >= 2 else np.nan)
                per_problem[name].append(diffs.mean())
        stability[campaign] = {name: float(np.nanmean(v)) for name, v in per_problem.items()}
    return {"stability": stability}


def simulation(corpus: pd.DataFrame, environments) -> dict:
    from stats.rewards import apply_environment

    run = corpus[(corpus["campaign"].astype(str) == "c0")]
    problems = run["problem"].astype(str)
    out, curves = {}, {}
    for env in environments:
        frames = []
        for problem in problems[problems != "_floor"].unique():  # the per-problem loop
            part = run[(problems == problem).to_numpy() | (run["role"].astype(str) == "floor").to_numpy()]
            frames.append(apply_environment(part, env).scores)
        scores = pd.concat(frames, ignore_index=True)
        scores = scores[scores["role"].astype(str) == "reference"]
        # the offline curve: quality u from repeat 0 (within-problem rank), reward (g and c) from repeat 1
        first = scores[scores["repeat"] == 0].copy()
        first["u"] = first.groupby("problem")["q"].rank(pct=True)
        second = scores[scores["repeat"] == 1][["problem", "solution", "c", "g"]]
        paired = first[["problem", "solution", "u"]].merge(second, on=["problem", "solution"]).dropna(subset=["u"])
        paired["bin"] = np.minimum((paired["u"] * 10).astype(int), 9)
        paired["paid"] = (paired["c"] & paired["g"]).astype(float)
        curve = paired.groupby("bin")["paid"].mean()
        out[env.name] = {"mean_q": float(scores["q"].mean()), "share_g": float(scores["g"].mean()),
                         "share_c": float(scores["c"].mean())}
        curves[env.name] = curve.tolist()
    return {"environments": out, "curves": curves}


BASELINES = {
    "percentiles": percentiles,
    "reliability": reliability,
    "discriminability": discriminability,
    "calibration": calibration,
    "aggregation": aggregation,
    "simulation": simulation,
}
