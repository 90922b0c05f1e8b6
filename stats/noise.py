"""Noise-aware scores: per-test percentiles, q and the gate with their measurement uncertainty.

Today's point values (:mod:`stats.ranking`) rank the median of a cell's
repeats as if it were the program's true speed. Here every (problem, test,
solution) cell keeps its repeat noise, and the scores become probabilities.

The model of repeat noise
-------------------------
Work on log durations y = log d of a cell's ``ok`` repeats (so noise is
multiplicative and a CV of 10 % is a sd of ~0.1 whatever the test's scale).
Within one run (environment, campaign), for cell c on test t with n_c ok repeats:

* y_ci ~ Normal(mu_c, sigma_c^2), independent over repeats i. mu_c is the
  cell's *true* log duration, the quantity a noise-free sandbox would rank.
* Cells differ in noise, but a cell with 2-3 repeats cannot estimate its own:
  sigma_c^2 ~ Scaled-Inv-chi^2(nu_0, s_t^2), a prior whose scale is the
  **pooled per-test variance** s_t^2, estimated from the test's cells with
  d_c = n_c - 1 >= 1 as in limma (Smyth 2004), from the law of log s_c^2:

      log s_t^2 = mean_c [log s_c^2 - psi(d_c/2) + log(d_c/2)] + psi(nu_0/2) - log(nu_0/2)

  (s_c^2: the cell's sample variance, ddof 1; psi the digamma; cells with
  s_c^2 = 0 are left out, and a test whose repeats are all identical gets 0).
  With ``prior_df=inf`` every cell of the test shares one variance and s_t^2 is
  the classic pooled variance sum_c (n_c - 1) s_c^2 / sum_c (n_c - 1). (The plain
  pooled variance estimates E[sigma_c^2] = s_t^2 nu_0/(nu_0 - 2), twice the
  scale at nu_0 = 4: using it as the scale made P(faster) too timid, measured.)
  When no cell of the test has two ok repeats, its problem's cells are used,
  then the run's; with none anywhere the variance is undefined (NaN).
  ``prior_df`` = nu_0 (default 4) says how many degrees of freedom the prior is
  worth against the cell's own.
* With a flat prior on mu_c, the posterior of the true log duration is the
  conjugate normal-inverse-chi^2 result, a location-scale Student t:

      mu_c | data ~ m_c + se_c * T(df_c),
      m_c = mean of the y_ci,    df_c = nu_0 + n_c - 1,
      sigma_hat_c^2 = (nu_0 s_t^2 + (n_c - 1) s_c^2) / (nu_0 + n_c - 1)    (shrunk variance),
      se_c = sigma_hat_c / sqrt(n_c).

  (df_c = inf, a normal, when ``prior_df=inf``.) A single execution (a rollout
  scored per repeat) is a cell with n_c = 1: m_c = y, se_c = s_t, df_c = nu_0.

Scores
------
The **reference pool** is as in DESIGN.md: every correct reference with at
least one ok repeat on t, here with its (m_r, se_r, df_r); leave-self-out.

* **P(faster)** of scored cell c against reference r = P(mu_c < mu_r | data)
  = P(se_c T_c + se_r T_r < m_r - m_c) with independent T_c ~ t(df_c),
  T_r ~ t(df_r): the Behrens-Fisher law, computed by quadrature
  (:func:`sum_of_t_cdf`; Phi((m_r - m_c) / sqrt(se_c^2 + se_r^2)) when both df
  are infinite). When both se are 0 it is the step 1[m_c < m_r] + 1/2 1[m_c = m_r]
  (the point rule). A non-ok cell is slower than every reference (P = 0), as a
  non-ok execution gets percentile 100.
* The **true per-test percentile** r*_t = 100 #{r : mu_r < mu_c} / n_t (ties have
  probability 0); its expectation **E[r_t]** = 100/n_t sum_r (1 - P(faster_r))
  is exact given the pairwise probabilities (no simulation).
* **E[q]** = mean over the unit's optimization tests of E[r_t]/100 (by
  linearity; NaN tests ignored, as in q).
* Intervals of r*_t and q* and **P(q <= tau/100)** come from simulating the joint
  posterior: ``n_draws`` draws of every cell's mu (seeded, in the order of keys hashed
  from the cells' data, :func:`_draw_keys`, never from their labels, so the result does
  not depend on row order, names or the unit of time), each draw ranked
  exactly like a point corpus (tie-averaged, leave-self-out; vectorised over
  draws and (cell, reference) pairs). The Monte Carlo standard error of a
  probability p is sqrt(p (1 - p) / n_draws) (reported as ``p_gate_se``).
  ``P(gate)`` = P(q <= tau/100) when no optimization test failed, else 0
  (failures are treated as certain; flaky failures are not modelled).

The closed-form E[r_t] and the simulation use the same model (the quadrature
is exact to ~1e-4 in probability, tested against scipy's own integration and
against simulation). The probabilities are statements about the true speeds
mu, and are checked against resampling from planted truth in
tests/stats/test_noise.py (and docs/noise.md): at a true tie P(faster) is
uniform, intervals cover the planted r*_t and q* at their level, and gate
decisions taken at confidence c are wrong at most a share 1 - c of the time.

Adaptive repeats
----------------
:func:`adaptive_plan`: a unit's gate is **decided** at confidence c when
P(gate) >= c (pass) or <= 1 - c (fail), **ambiguous** in between; with
``target="rank"`` a cell is ambiguous while any P(faster) against its pool lies
in (1 - c, c). Cells to re-execute are the ambiguous units' optimization cells
whose percentile is still uncertain (and the reference cells they cannot yet be
ordered against), by priority Var(r*_t) / (n + 1): the posterior variance of
the cell's percentile times the share 1/(n + 1) of its location variance
(se^2 = sigma^2/n) one more repeat removes. Cells already at ``max_repeats``
are not proposed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from stats._groups import group_codes
from stats._hashing import dense_ranks_within, mix64, set_hash, text_hash
from stats.pass_at_k import pass_at_k
from stats.ranking import (POOLS_ATTR, STATUSES, joint_codes, require_single_run, pool_join, solution_cells,
                           status_codes)

__all__ = ["DEFAULT_PRIOR_DF", "NoiseModel", "fit_noise", "sum_of_t_cdf", "expected_percentiles", "NoiseAwareScores",
           "noise_aware_scores", "noise_aware_p_tau", "AdaptivePlan", "adaptive_plan"]

DEFAULT_PRIOR_DF = 4.0
CELL_KEYS = ("problem", "test", "solution")
POOL_KEYS = ("problem", "test", "pool_language")  # a reference pool: one test (and language, when split)
_TARGETS = ("gate", "rank")


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NoiseModel:
    """Per-cell repeat noise of one run (see the module docstring for the model).

    Attributes
    ----------
    cells : DataFrame
        One row per (problem, test, solution), sorted by those labels:
        ``role, correct, test_kind, status`` (majority rule, as
        :func:`stats.ranking.solution_cells`), ``n_runs, n_ok``, ``point`` (the
        median of the ok repeats: today's point value), ``log_mean`` (m),
        ``log_var`` (s_c^2, NaN below 2 ok repeats), ``pooled_var`` (s_t^2),
        ``pooled_df``, ``pooled_from`` (``test``/``problem``/``run``/``none``),
        ``shrunk_var`` (sigma_hat^2), ``df`` (posterior df) and ``se``;
        ``in_pool`` marks the reference pool.
    tests : DataFrame
        ``problem, test, pooled_var, pooled_df, pooled_from``.
    prior_df : float
    measure : str
        The duration column the model was fitted on.
    """

    cells: pd.DataFrame
    tests: pd.DataFrame
    prior_df: float
    measure: str = "duration_s"
    #: The key of each cell's posterior draws (aligned with ``cells``) and of each test (aligned with ``tests``):
    #: hashes of their data, never of their names (:func:`_draw_keys`); None: from the cells' summaries.
    draw_keys: np.ndarray | None = field(default=None, repr=False, compare=False)
    test_keys: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_frame(self) -> pd.DataFrame:
        return self.cells

    def summary(self) -> str:
        c = self.cells
        ok = c["n_ok"] > 0
        cv = np.sqrt(np.expm1(c.loc[ok, "shrunk_var"].to_numpy(dtype=float)))
        cv = cv[np.isfinite(cv)]
        median_cv = f"{100 * np.median(cv):.1f} %" if len(cv) else "n/a (no cell has two ok repeats)"
        return (f"noise model on log {self.measure}: {len(c)} cells ({int(c['in_pool'].sum())} in reference pools), "
                f"{int(ok.sum())} with ok repeats (median {np.median(c.loc[ok, 'n_ok']) if ok.any() else 0:g}); "
                f"variance shrunk toward the per-test pooled value with prior_df = {self.prior_df:g}; "
                f"median per-cell CV {median_cv}")


def _sorted_cells(frame: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by the labels of ``by`` (categories in category order): a row-order-free order."""
    return frame.sort_values(list(by), kind="stable").reset_index(drop=True)


def fit_noise(
    executions: pd.DataFrame,
    *,
    prior_df: float = DEFAULT_PRIOR_DF,
    measure: str = "duration_s",
    by_language: bool | None = None,
    widest: str = "run",
) -> NoiseModel:
    """Fit the repeat-noise model of one run: per-cell log mean and shrunk variance.

    Parameters
    ----------
    executions : DataFrame
        Executions of one environment and campaign (corpus schema), any roles;
        ``floor`` rows are ignored.
    prior_df : float, default 4
        nu_0 of the module docstring: the weight, in degrees of freedom, of the
        per-test pooled variance against a cell's own sample variance
        (``np.inf``: the pooled variance alone, treated as known).
    measure : str, default ``duration_s``
        A positive duration column (e.g. ``cpu_s``).
    by_language : bool, optional
        Per-language reference pools, as :func:`stats.ranking.reference_pools`
        (default: one pool per language in problems whose references mix
        languages, unless ``executions.attrs[POOLS_ATTR] == "one"``). A cell's
        pool, and the cells its prior variance is pooled over, are those of its
        (problem, test, ``pool_language``).
    widest : {"run", "problem"}, default "run"
        The widest set of cells a test without a variance estimate borrows from: its problem, then the run
        (``"run"``), or its problem only (``"problem"``: every problem's model from its own rows, whatever else
        ``executions`` holds, as a partition of whole problems sees it; a problem without two ok repeats of any
        cell has no variance, NaN).

    Returns
    -------
    NoiseModel

    Formula
    -------
    sigma_hat_c^2 = (nu_0 s_t^2 + (n_c - 1) s_c^2) / (nu_0 + n_c - 1),
    log s_t^2 = mean_c [log s_c^2 - psi(d_c/2) + log(d_c/2)] + psi(nu_0/2) - log(nu_0/2)
    over the test's cells (the pooled sum_c (n_c - 1) s_c^2 / sum_c (n_c - 1) when nu_0 = inf);
    se_c = sigma_hat_c / sqrt(n_c), df_c = nu_0 + n_c - 1.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "a", "b", "b"],
    ...     "repeat": [0, 1, 0, 1], "duration_s": np.exp([0.0, 0.2, 1.0, 1.4]), "status": "ok"})
    >>> m = fit_noise(runs, prior_df=2)   # s_t^2 = exp(mean log s_c^2 - psi(1/2) + log(1/2) + psi(1)) = 0.08
    >>> m.cells[["solution", "log_mean", "log_var", "pooled_var", "shrunk_var", "df"]].round(4).values.tolist()
    [['a', 0.1, 0.02, 0.08, 0.06, 3.0], ['b', 1.2, 0.08, 0.08, 0.08, 3.0]]
    >>> fit_noise(runs, prior_df=np.inf).cells["shrunk_var"].round(4).tolist()   # one pooled variance
    [0.05, 0.05]
    """
    prior_df = float(prior_df)
    if by_language is None and executions.attrs.get(POOLS_ATTR) == "one":
        by_language = False
    if not prior_df > 0:
        raise ValueError(f"prior_df must be > 0 (np.inf: the pooled variance alone), got {prior_df}")
    missing = [c for c in (*CELL_KEYS, measure, "status") if c not in executions.columns]
    if missing:
        raise ValueError(f"the executions lack column(s) {missing} needed by the noise model")
    require_single_run(executions, "fit_noise")  # repeats of one run: a cell never mixes campaigns
    if "role" in executions.columns:
        executions = executions.loc[(executions["role"] != "floor").to_numpy()]
    d = executions[measure].to_numpy(dtype=float)
    ok = (status_codes(executions) == 0) & np.isfinite(d)
    bad = ok & (d <= 0)
    if bad.any():
        first = executions.loc[bad].iloc[0]
        raise ValueError(f"the noise model works on log {measure}: {int(bad.sum())} ok execution(s) have "
                         f"{measure} <= 0 (first: problem {first['problem']!r}, test {first['test']!r}, solution "
                         f"{first['solution']!r}); fix the timer or drop them")
    frame = executions if measure == "duration_s" else executions.assign(duration_s=d)
    # solution_cells numbers cells by group_codes: the same codes align our moments with its rows.
    cells = solution_cells(frame, by=CELL_KEYS)
    codes, n_cells = group_codes(frame, list(CELL_KEYS))
    y = np.log(d[ok])
    cy = codes[ok]
    # The moments are sums over each cell's repeats, and a float sum depends on its order (the last bits of a
    # cell's mean moved when the rows were shuffled, and with them E[q] in the JSON): every cell's values are
    # summed in one order, by cell and value, whatever the rows' order (sorted already: no sort).
    if len(cy) > 1 and not (np.all(cy[1:] >= cy[:-1]) and np.all((cy[1:] > cy[:-1]) | (y[1:] >= y[:-1]))):
        order = np.lexsort((y, cy))
        y, cy = y[order], cy[order]
    n_ok = np.bincount(cy, minlength=n_cells)
    # Moments about each cell's first (smallest) ok value: identical repeats give exactly zero variance.
    shift = np.zeros(n_cells)
    shift[cy[::-1]] = y[::-1]
    dy = y - shift[cy]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_dy = np.bincount(cy, weights=dy, minlength=n_cells) / n_ok
        mean = shift + mean_dy
        ss = np.bincount(cy, weights=(dy - mean_dy[cy]) ** 2, minlength=n_cells)  # two-pass: no cancellation
        var = np.where(n_ok >= 2, ss / np.maximum(n_ok - 1, 1), np.nan)
    cells = cells.rename(columns={"duration_s": "point"})
    cells["log_mean"] = mean
    cells["log_var"] = var
    for column in ("role", "correct", "test_kind"):
        if column not in cells.columns:
            cells[column] = {"role": "reference", "correct": True, "test_kind": "optimization"}[column]
    cells["correct"] = cells["correct"].to_numpy(dtype=bool)
    is_ref = (cells["role"] == "reference").to_numpy()
    in_pool = is_ref & cells["correct"].to_numpy(dtype=bool) & (n_ok > 0)
    cells["pool_language"] = ""
    if by_language is not False and "language" in cells.columns and len(cells):
        language = cells["language"].astype(object).where(cells["language"].notna(), "").astype(str).to_numpy()
        if by_language:
            split = np.ones(len(cells), dtype=bool)
        else:  # problems whose pool mixes languages (as stats.ranking.reference_pools)
            n_lang = pd.Series(language[in_pool]).groupby(cells["problem"].to_numpy()[in_pool]).nunique()
            split = cells["problem"].isin(n_lang.index[n_lang.to_numpy() > 1]).to_numpy()
        cells["pool_language"] = np.where(split, language, "")

    # Prior scale s_t^2 of the test (else its problem, else the run), from the cells with >= 2 ok repeats.
    df_c = np.maximum(n_ok - 1, 0).astype(float)
    ss_c = np.where(n_ok >= 2, ss, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = np.where(n_ok >= 2, ss_c / np.maximum(df_c, 1), np.nan)
        positive = np.isfinite(s2) & (s2 > 0)
        # E[log s^2] = log s0^2 + psi(d/2) - log(d/2) - psi(nu0/2) + log(nu0/2) under the model
        e = np.where(positive, np.log(np.where(positive, s2, 1.0)) - special.digamma(df_c / 2) + np.log(df_c / 2), 0.0)
    pooled = np.full(n_cells, np.nan)
    pooled_df = np.zeros(n_cells)
    source = np.full(n_cells, "none", dtype=object)
    if widest not in ("run", "problem"):
        raise ValueError(f"widest must be 'run' or 'problem', got {widest!r}")
    levels = (("run", []), ("problem", ["problem"]), ("test", list(POOL_KEYS)))
    for level, keys in levels[1:] if widest == "problem" else levels:
        g, n_g = group_codes(cells, keys)
        df_g = np.bincount(g, weights=df_c, minlength=n_g)
        has = df_g[g] > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            if np.isinf(prior_df):  # one common variance: the classic pooled estimate
                value = np.bincount(g, weights=ss_c, minlength=n_g) / df_g
            else:  # the scale of the Scaled-Inv-chi^2(nu0) prior, limma's log-moment estimate
                n_pos = np.bincount(g, weights=positive.astype(float), minlength=n_g)
                mean_e = np.bincount(g, weights=e, minlength=n_g) / n_pos
                value = np.where(n_pos > 0, np.exp(mean_e + special.digamma(prior_df / 2) - np.log(prior_df / 2)),
                                 0.0)  # every repeat identical: no noise
        pooled = np.where(has, value[g], pooled)
        pooled_df = np.where(has, df_g[g], pooled_df)
        source = np.where(has, level, source)
    cells["pooled_var"] = pooled
    cells["pooled_df"] = pooled_df
    cells["pooled_from"] = source
    if np.isinf(prior_df):
        shrunk = pooled.copy()
        post_df = np.full(n_cells, np.inf)
    else:
        own = np.where(n_ok >= 2, ss, 0.0)
        shrunk = (prior_df * pooled + own) / (prior_df + df_c)
        post_df = prior_df + df_c
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.where(n_ok > 0, np.sqrt(shrunk / np.maximum(n_ok, 1)), np.nan)
    cells["shrunk_var"] = np.where(n_ok > 0, shrunk, np.nan)
    cells["df"] = np.where(n_ok > 0, post_df, np.nan)
    cells["se"] = se
    cells["in_pool"] = in_pool
    cell_key, test_key = _draw_keys(frame, codes, cells)
    cells["_draw_key"], cells["_test_key"] = cell_key, test_key
    cells = _sorted_cells(cells, CELL_KEYS)
    tests = cells.drop_duplicates(list(POOL_KEYS))[[*POOL_KEYS, "pooled_var", "pooled_df", "pooled_from",
                                                     "_test_key"]].reset_index(drop=True)
    return NoiseModel(cells=cells.drop(columns=["_draw_key", "_test_key"]), tests=tests.drop(columns="_test_key"),
                      prior_df=prior_df, measure=measure, draw_keys=cells["_draw_key"].to_numpy(dtype=np.uint64),
                      test_keys=tests["_test_key"].to_numpy(dtype=np.uint64))


def _draw_keys(rows: pd.DataFrame, codes: np.ndarray, cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The key of every cell's posterior draws and of its test, from the data alone (never a name).

    :func:`_simulate` gives the cells their draws in the order of these keys, so renaming problems, tests or
    solutions (any characters, any order) or shuffling the rows hands every cell the same draws. A cell's own
    values are the multiset of its rows' (status, rank) pairs (``codes``: each row's cell, a row of ``cells``), the
    rank of a row's value among the values of its problem (equal values one rank; a missing one the last): so the
    keys are also those of the same corpus in another unit of time, or with every duration of a problem doubled.
    :func:`_context_keys` adds what tells the cell apart from the other cells of its problem.
    """
    rank = dense_ranks_within(rows["duration_s"].to_numpy(dtype=np.float64), group_codes(rows, ["problem"])[0])
    row = mix64(rank) ^ mix64(status_codes(rows).astype(np.uint64) + np.uint64(1))
    return _context_keys(set_hash(row, codes, len(cells)), cells)


def _context_keys(values: np.ndarray, cells: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Draw keys of ``cells`` (and of their tests) from each cell's hashed values and its place in its problem.

    A cell's own key is its values with its role, correctness and test kind; a test's key is the multiset of its
    cells' own keys, a solution's the multiset of its cells' own keys each with its test's key, a problem's the
    multiset of its tests' keys. The draw key hashes the cell's own key with its test's, its solution's and its
    problem's: two cells tie only when their problem cannot tell them apart (two solutions, or two tests, with
    the same values everywhere), and only then does the label order decide which of the two takes which draws
    (they are exchangeable: a unit's q, a mean over its tests, does not move when two identical tests swap).
    """
    n = len(cells)
    attrs = np.zeros(n, dtype=np.uint64)
    for column in ("role", "correct", "test_kind"):
        if column in cells.columns:
            attrs = mix64(attrs ^ text_hash(cells[column]))
    own = mix64(np.asarray(values, dtype=np.uint64) ^ attrs)
    t_codes, n_t = group_codes(cells, ["problem", "test"])
    s_codes, n_s = group_codes(cells, ["problem", "solution"])
    p_codes, n_p = group_codes(cells, ["problem"])
    test = set_hash(own, t_codes, n_t)
    solution = set_hash(mix64(own ^ test[t_codes]), s_codes, n_s)
    first_test = np.full(n_t, -1, dtype=np.int64)
    first_test[t_codes[::-1]] = np.arange(n - 1, -1, -1)
    problem = set_hash(test, p_codes[first_test], n_p)
    key = mix64(mix64(mix64(own ^ test[t_codes]) ^ solution[s_codes]) ^ problem[p_codes])
    return key, mix64(test[t_codes] ^ problem[p_codes])


# --------------------------------------------------------------------------------------------
# Scored units and their pools (arrays)
# --------------------------------------------------------------------------------------------

@dataclass
class _Scored:
    """Scored rows against a model's pool, as aligned arrays (internal)."""

    frame: pd.DataFrame          # keys + descriptive columns of the scored rows
    test: np.ndarray             # test code of each scored row (into the pool's test codes)
    m: np.ndarray
    se: np.ndarray
    df: np.ndarray
    ok: np.ndarray
    self_pool: np.ndarray        # index into the pool of the row's own solution, -1 if none
    shared_draw: bool            # True: a scored cell *is* its pool cell (same posterior draw)
    pool_test: np.ndarray        # sorted by test code
    pool_m: np.ndarray
    pool_se: np.ndarray
    pool_df: np.ndarray
    pool_solution: np.ndarray
    pool_start: np.ndarray       # per test code: first pool index
    pool_size: np.ndarray
    key: np.ndarray              # draw key of each scored row (data only, :func:`_draw_keys`)
    pool_key: np.ndarray


def _role_mask(frame: pd.DataFrame, roles: Sequence[str] | None) -> np.ndarray:
    if roles is None or "role" not in frame.columns:
        return np.ones(len(frame), dtype=bool)
    return frame["role"].isin(list(roles)).to_numpy()


def _model_keys(model: NoiseModel) -> tuple[np.ndarray, np.ndarray]:
    """The draw keys of the model's cells and tests (from the cells' summaries for a model built without them)."""
    if model.draw_keys is not None and model.test_keys is not None:
        return model.draw_keys, model.test_keys
    cells = model.cells
    values = np.zeros(len(cells), dtype=np.uint64)
    for column in ("n_runs", "n_ok", "status", "log_mean", "log_var", "point"):
        if column in cells.columns:
            v = (status_codes(cells).astype(np.float64) if column == "status"
                 else cells[column].to_numpy(dtype=np.float64) + 0.0)
            values = mix64(values ^ np.where(np.isnan(v), -1.0, v).view(np.uint64))
    keys, test = _context_keys(values, cells)
    a, b, n = joint_codes(cells, model.tests, list(POOL_KEYS))
    where = np.zeros(n, dtype=np.uint64)
    where[a] = test
    return keys, where[b]


def _scored(model: NoiseModel, executions: pd.DataFrame | None, roles: Sequence[str] | None,
            subset: pd.DataFrame | None = None) -> _Scored:
    cell_keys, test_keys = _model_keys(model)
    cells = model.cells.assign(_draw_key=cell_keys)
    pool = cells.loc[cells["in_pool"].to_numpy()].reset_index(drop=True)
    if executions is not None and subset is not None:
        raise ValueError("pass executions (single executions to score) or cells (model cells to score), not both")
    if executions is None:
        frame = cells.loc[_role_mask(cells, roles)].reset_index(drop=True)
        if subset is not None:  # only these cells, with their status (e.g. after a reward environment's limit)
            missing = [c for c in (*CELL_KEYS, "status") if c not in subset.columns]
            if missing:
                raise ValueError(f"the cells to score lack column(s) {missing}")
            a, b, n = joint_codes(frame, subset, list(CELL_KEYS))
            where = np.full(n, -1, dtype=np.int64)
            where[b] = np.arange(len(subset))
            row = where[a]
            keep = row >= 0
            frame = frame.loc[keep].reset_index(drop=True)
            frame["status"] = pd.Categorical.from_codes(status_codes(subset)[row[keep]], categories=STATUSES)
        m = frame["log_mean"].to_numpy(dtype=float)
        se = frame["se"].to_numpy(dtype=float)
        df = frame["df"].to_numpy(dtype=float)
        ok = (status_codes(frame) == 0) & np.isfinite(m)
        shared = True
        key = frame.pop("_draw_key").to_numpy(dtype=np.uint64)
    else:
        missing = [c for c in (*CELL_KEYS, model.measure, "status") if c not in executions.columns]
        if missing:
            raise ValueError(f"the executions to score lack column(s) {missing}")
        frame = executions.loc[_role_mask(executions, roles)]
        keep = [c for c in (*CELL_KEYS, "repeat", model.measure, "status", "role", "correct", "test_kind",
                            "language") if c in frame.columns]
        frame = frame[keep]
        sort_by = [c for c in (*CELL_KEYS, "repeat") if c in frame.columns]
        frame = frame.sort_values(sort_by, kind="stable").reset_index(drop=True)
        d = frame[model.measure].to_numpy(dtype=float)
        ok = (status_codes(frame) == 0) & np.isfinite(d) & (d > 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.where(ok, np.log(np.where(ok, d, 1.0)), np.nan)
        # One execution: n = 1, so sigma_hat^2 = the test's pooled variance and df = nu_0.
        frame, _ = pool_join(frame, cells)  # the pool of the execution's own language, where split
        if "pool_language" not in frame.columns:
            frame = frame.assign(pool_language="")
        t_exec, t_model, n_t = joint_codes(frame, model.tests, list(POOL_KEYS))
        pooled = np.full(n_t, np.nan)
        pooled[t_model] = model.tests["pooled_var"].to_numpy(dtype=float)
        var = pooled[t_exec]
        se = np.sqrt(var)
        df = np.full(len(frame), model.prior_df)
        shared = False
        # An execution's draws: its cell's key (its test's, for an execution of a cell the model lacks) with its
        # own status and rank; repeats of one cell with the same value tie, and keep the order of their repeats.
        c_exec, c_model, n_c = joint_codes(frame, cells, list(CELL_KEYS))
        own_cell = np.zeros(n_c, dtype=np.uint64)
        own_cell[c_model] = cell_keys
        by_test = np.zeros(n_t, dtype=np.uint64)
        by_test[t_model] = test_keys
        rank = dense_ranks_within(d, c_exec)  # its value's rank among the cell's scored executions (unit-free)
        key = mix64(mix64(np.where(own_cell[c_exec] != 0, own_cell[c_exec], by_test[t_exec]) ^ mix64(rank))
                   ^ status_codes(frame).astype(np.uint64))

    # Test codes shared by scored rows and the pool.
    t_sc, t_pool, n_tests = joint_codes(frame, pool, list(POOL_KEYS))
    order = np.argsort(t_pool, kind="stable")
    pool = pool.iloc[order].reset_index(drop=True)
    t_pool = t_pool[order]
    pool_size = np.bincount(t_pool, minlength=n_tests)
    pool_start = np.concatenate(([0], np.cumsum(pool_size)[:-1])).astype(np.int64)
    # Own pool entry of each scored row (leave-self-out).
    c_sc, c_pool, n_c = joint_codes(frame, pool, list(CELL_KEYS))
    where = np.full(n_c, -1, dtype=np.int64)
    where[c_pool] = np.arange(len(pool))
    return _Scored(frame=frame, test=t_sc, m=m, se=se, df=df, ok=ok, self_pool=where[c_sc], shared_draw=shared,
                   pool_test=t_pool, pool_m=pool["log_mean"].to_numpy(dtype=float),
                   pool_se=pool["se"].to_numpy(dtype=float), pool_df=pool["df"].to_numpy(dtype=float),
                   pool_solution=pool["solution"].to_numpy(), pool_start=pool_start, pool_size=pool_size,
                   key=key, pool_key=pool["_draw_key"].to_numpy(dtype=np.uint64))


def _pairs(s: _Scored) -> tuple[np.ndarray, np.ndarray]:
    """(scored index, pool index) of every scored row against every other member of its test's pool."""
    size = s.pool_size[s.test]
    scored = np.repeat(np.arange(len(s.test)), size)
    offset = np.arange(len(scored)) - np.repeat(np.cumsum(size) - size, size)
    pool = s.pool_start[s.test][scored] + offset
    keep = pool != s.self_pool[scored]
    return scored[keep], pool[keep]


def _t_cdf_integer(x: np.ndarray, nu: int) -> np.ndarray:
    """Student t cdf for a whole number of df, in closed form (Abramowitz & Stegun 26.7.3-4).

    Hand-written because scipy's ``stdtr`` costs ~1 us per value (13 million
    calls: 12.6 s, measured) while this is a few vector operations per term; it
    equals ``stdtr`` to 1e-13 (tested). theta = arctan(x / sqrt(nu));
    even nu: A = sin(theta) sum_{k=0}^{nu/2-1} c_k cos^{2k}(theta), c_k = prod_{i<=k} (2i-1)/(2i);
    odd nu: A = (2/pi)(theta + sin(theta) sum_{k=1}^{(nu-1)/2} d_k cos^{2k-1}(theta)), d_k = prod_{2<=i<=k} (2i-2)/(2i-1);
    F = (1 + A)/2.
    """
    theta = np.arctan(x / np.sqrt(nu))
    cos2 = np.cos(theta) ** 2
    if nu % 2 == 0:
        term = np.ones_like(x)
        total = term.copy()
        for k in range(1, nu // 2):
            term = term * (2 * k - 1) / (2 * k) * cos2
            total += term
        a = np.sin(theta) * total
    else:
        total = np.zeros_like(x)
        if nu > 1:
            term = np.cos(theta)
            total = term.copy()
            for k in range(2, (nu - 1) // 2 + 1):
                term = term * (2 * k - 2) / (2 * k - 1) * cos2
                total += term
        a = 2 / np.pi * (theta + np.sin(theta) * total)
    return (1 + a) / 2


def _t_cdf(x: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Student t cdf with df = inf meaning the normal; whole df up to 60 in closed form, others by ``stdtr``."""
    x, df = np.broadcast_arrays(np.asarray(x, dtype=float), np.asarray(df, dtype=float))
    out = special.ndtr(x)
    finite = np.isfinite(df)
    if finite.any():
        values = np.unique(df[finite])
        for nu in values:  # a loop over the few distinct df (nu_0 + n - 1), vectorised inside
            where = df == nu
            if nu == int(nu) and 1 <= nu <= 60:
                out[where] = _t_cdf_integer(x[where], int(nu))
            else:
                out[where] = special.stdtr(nu, x[where])
    return out


def _t_ppf(u: np.ndarray, df: np.ndarray) -> np.ndarray:
    u, df = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(df, dtype=float))
    out = special.ndtri(u)
    finite = np.isfinite(df)
    if finite.any():
        out[finite] = special.stdtrit(df[finite], u[finite])
    return out


# Nodes and weights on (0, 1) for the Behrens-Fisher integral: 32-point Gauss-Legendre in v with
# u = (1 - cos(pi v))/2, which crowds the nodes into the heavy tails (max error 1.3e-4 against 600
# plain nodes over df 3-12 and scale ratios up to e^4, measured; plain 48 nodes: 4e-4).
_GL_X, _GL_W = np.polynomial.legendre.leggauss(32)
_GL_U = (1 - np.cos(np.pi * (_GL_X + 1) / 2)) / 2
_GL_W = _GL_W / 2 * np.pi / 2 * np.sin(np.pi * (_GL_X + 1) / 2)


def sum_of_t_cdf(x, se_a, df_a, se_b, df_b) -> np.ndarray:
    """P(se_a T_a + se_b T_b < x) for independent Student t variables (the Behrens-Fisher law).

    Exact for two normals (df = inf): Phi(x / sqrt(se_a^2 + se_b^2)). Otherwise
    P = int_0^1 F_B((x + se_S Q_S(u)) / se_B) du, with B the term with the larger
    scale and S the other (Q_S its quantile function, F_B the cdf of B), by
    32-point Gauss-Legendre quadrature in v, u = (1 - cos(pi v))/2 (nodes crowded
    into the tails): the integrand stays smooth as se_S -> 0, where it tends to
    the constant F_B(x / se_B). When one scale is 0
    it is F_B(x / se_B); when both are, the step 1[x > 0] + 1/2 1[x = 0].

    Examples
    --------
    >>> round(float(sum_of_t_cdf(0.3, 0.2, np.inf, 0.1, np.inf)[()]), 6)   # Phi(0.3 / sqrt(0.05))
    0.910144
    >>> round(float(sum_of_t_cdf(0.1, 0.0, 5.0, 0.1, 5.0)[()]), 6)         # t_5 cdf at 1
    0.818391
    """
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, se_a, df_a, se_b, df_b)))
    shape = arrays[0].shape
    x, se_a, df_a, se_b, df_b = (np.ravel(a) for a in arrays)
    a_big = se_a >= se_b
    se_big, df_big = np.where(a_big, se_a, se_b), np.where(a_big, df_a, df_b)
    se_small, df_small = np.where(a_big, se_b, se_a), np.where(a_big, df_b, df_a)
    out = np.where(x > 0, 1.0, np.where(x < 0, 0.0, 0.5))
    normal = np.isinf(df_big) & np.isinf(df_small) & (se_big > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(normal, special.ndtr(x / np.sqrt(se_big**2 + se_small**2)), out)
        one = ~normal & (se_big > 0) & (se_small == 0)
        if one.any():
            out[one] = _t_cdf(x[one] / se_big[one], df_big[one])
    quad = np.flatnonzero(~normal & (se_big > 0) & (se_small > 0))
    for lo in range(0, len(quad), 50_000):  # chunks bound the (pairs x nodes) memory
        idx = quad[lo:lo + 50_000]
        dfs, which = np.unique(df_small[idx], return_inverse=True)  # few distinct df: one quantile row each
        q = _t_ppf(_GL_U[None, :], dfs[:, None])[which]
        arg = (x[idx, None] + se_small[idx, None] * q) / se_big[idx, None]
        out[idx] = _t_cdf(arg, np.broadcast_to(df_big[idx, None], arg.shape)) @ _GL_W
    out = np.where(x == 0, 0.5, out)  # exact by symmetry (no quadrature rounding at a tie)
    nan = ~(np.isfinite(se_a) & np.isfinite(se_b) & np.isfinite(x))
    return np.where(nan, np.nan, out).reshape(shape)


def _faster(s: _Scored, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(mu_i < mu_j) for scored rows i against pool members j, and the scale of the difference."""
    gap = s.pool_m[j] - s.m[i]
    # mu_j - mu_i = gap + se_j T_j - se_i T_i, symmetric: P(mu_i < mu_j) = P(se_i T_i + se_j T_j < gap).
    p = sum_of_t_cdf(np.where(np.isfinite(gap), gap, 0.0), s.se[i], s.df[i], s.pool_se[j], s.pool_df[j])
    p = np.where(s.ok[i], p, 0.0)  # a failed cell is slower than every reference
    return p, np.sqrt(s.se[i] ** 2 + s.pool_se[j] ** 2)


def faster_probabilities(
    model: NoiseModel,
    *,
    roles: Sequence[str] | None = ("candidate",),
    executions: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """P(the scored solution is truly faster than each reference) on every test.

    Parameters
    ----------
    model : NoiseModel
        :func:`fit_noise` of the run; its reference pool is the comparison.
    roles : sequence of str or None, default ("candidate",)
        Roles of the model's cells to score (None: every cell).
    executions : DataFrame, optional
        Score these executions one by one instead (each a cell of one repeat,
        se = the test's pooled sd; what a single rollout offers).

    Returns
    -------
    DataFrame
        One row per (scored row, other reference of its test's pool): the keys,
        ``reference``, ``p_faster`` = P(mu_c < mu_r | data), ``log_gap`` =
        m_r - m_c and ``scale`` = sqrt(se_c^2 + se_r^2).

    Formula
    -------
    p_faster = P(se_c T_c + se_r T_r < m_r - m_c), T_c ~ t(df_c), T_r ~ t(df_r)
    independent (:func:`sum_of_t_cdf`; Phi((m_r - m_c) / sqrt(se_c^2 + se_r^2)) for
    infinite df).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "a", "x", "x"],
    ...     "repeat": [0, 1, 0, 1], "duration_s": np.exp([0.0, 0.2, 0.1, 0.3]), "status": "ok",
    ...     "role": ["reference", "reference", "candidate", "candidate"], "correct": True})
    >>> out = faster_probabilities(fit_noise(runs, prior_df=np.inf))
    >>> round(float(out["p_faster"].iloc[0]), 4)   # Phi((0.1 - 0.2) / sqrt(0.02/2 + 0.02/2))
    0.2398
    """
    s = _scored(model, executions, roles)
    i, j = _pairs(s)
    p, scale = _faster(s, i, j)
    keys = [c for c in (*CELL_KEYS, "repeat") if c in s.frame.columns]
    out = s.frame.iloc[i][keys].reset_index(drop=True)
    out["reference"] = s.pool_solution[j]
    out["p_faster"] = p
    out["log_gap"] = s.pool_m[j] - s.m[i]
    out["scale"] = scale
    return out


def _expected(s: _Scored) -> np.ndarray:
    """E[r_t] in percentile points of every scored row (closed form, NaN for an empty pool)."""
    i, j = _pairs(s)
    p, _ = _faster(s, i, j)
    n = np.bincount(i, minlength=len(s.m)).astype(float)
    slower_than = np.bincount(i, weights=1.0 - p, minlength=len(s.m))  # sum_r P(mu_r < mu_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 100.0 * slower_than / n
    out[n == 0] = np.nan
    out[~s.ok & (n > 0)] = 100.0
    return out


def expected_percentiles(
    model: NoiseModel,
    *,
    roles: Sequence[str] | None = ("candidate",),
    executions: pd.DataFrame | None = None,
    cells: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """E[r_t] of every scored cell (or execution): the expected true per-test percentile.

    E[r_t] = 100/n_t * sum_r P(mu_r < mu_c | data), over the test's pool without
    the solution itself; a non-ok cell gets 100, an empty pool NaN.

    Parameters
    ----------
    model : NoiseModel
    roles : sequence of str or None, default ("candidate",)
    executions : DataFrame, optional
        Score these single executions (see :func:`faster_probabilities`).
    cells : DataFrame, optional
        Score only these (problem, test, solution) cells of the model, with
        their ``status`` (e.g. a reward environment's kept and limited cells: a
        cell the limit turned into a timeout gets 100).

    Returns
    -------
    DataFrame
        The scored rows' keys and descriptive columns, ``log_mean``, ``se``, ``df``
        and ``expected_percentile``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": list("aabbx"),
    ...     "repeat": [0, 1, 0, 1, 0], "duration_s": [1.0, 1.0, 3.0, 3.0, 2.0], "status": "ok",
    ...     "role": ["reference"] * 4 + ["candidate"], "correct": True})
    >>> expected_percentiles(fit_noise(runs))["expected_percentile"].tolist()  # no noise: the point rule
    [50.0]
    """
    s = _scored(model, executions, roles, cells)
    out = s.frame.copy()
    out["log_mean"] = s.m
    out["se"] = s.se
    out["df"] = s.df
    out["expected_percentile"] = _expected(s)
    return out


# --------------------------------------------------------------------------------------------
# Simulation of the joint posterior
# --------------------------------------------------------------------------------------------

def _draw(rng: np.random.Generator, m: np.ndarray, se: np.ndarray, df: np.ndarray, n: int) -> np.ndarray:
    """``n`` draws of m + se * T(df) (df = inf: normal); shape (n, len(m))."""
    z = rng.standard_normal((n, len(m)))
    finite = np.isfinite(df)
    if finite.any():
        chi = rng.chisquare(np.where(finite, df, 1.0), size=(n, len(m)))
        z = np.where(finite, z / np.sqrt(chi / np.where(finite, df, 1.0)), z)
    # se = 0 (no noise) gives m exactly; NaN se propagates to NaN percentiles.
    return m + np.where(se > 0, se, 0.0) * z + np.where(np.isfinite(se), 0.0, np.nan)


def _ranked_draws(s: _Scored, pairs: tuple[np.ndarray, np.ndarray], pool_draws: np.ndarray,
                  scored_draws: np.ndarray) -> np.ndarray:
    """Twice the tie-averaged count, 2 #{pool < v} + #{pool = v}, per (draw, scored row), leave-self-out.

    Exact comparisons of every scored row's draw with each other member of its
    test's pool (the pairs of :func:`_pairs`, contiguous per scored row), summed
    with one ``np.add.reduceat`` per chunk of draws: O(draws x pairs) with no
    sort (a sort of all draws was ~5x slower at 12,000 cells x 1000 draws, measured).
    """
    i, j = pairs
    k = scored_draws.shape[0]
    out = np.zeros((k, scored_draws.shape[1]), dtype=np.int32)
    if len(i) == 0:
        return out
    own = scored_draws[:, i]
    other = pool_draws[:, j]
    twice = 2 * (other < own).astype(np.int8) + (other == own).astype(np.int8)
    starts = np.flatnonzero(np.r_[True, i[1:] != i[:-1]])
    out[:, i[starts]] = np.add.reduceat(twice, starts, axis=1, dtype=np.int32)
    return out


def _simulate(s: _Scored, units: np.ndarray, n_units: int, is_opt: np.ndarray, n_draws: int, seed,
              max_elements: int = 4_000_000):
    """Per-draw r*_t (as 2x counts) of every scored row and q* of every unit.

    Returns (twice_count (n_draws, n_sc) int32, n (n_sc,), q (n_draws, n_units) float64).
    """
    n_sc = len(s.m)
    n_pool = len(s.pool_m)
    n_minus_self = s.pool_size[s.test] - (s.self_pool >= 0)
    rng = np.random.default_rng(seed)
    pairs = _pairs(s)
    chunk = int(max(1, min(n_draws, max_elements // max(n_pool + n_sc + len(pairs[0]), 1))))
    twice = np.empty((n_draws, n_sc), dtype=np.int32)
    q = np.empty((n_draws, n_units))
    use = is_opt
    # Undefined variance (NaN se) of the row or of any pool member of its test: r*_t undefined.
    bad_test = np.bincount(s.pool_test, weights=(~np.isfinite(s.pool_se)).astype(float),
                           minlength=len(s.pool_size)) > 0
    undefined = s.ok & (~np.isfinite(s.se) | bad_test[s.test])
    # Every unknown mu (the pool's, and the scored rows' that are not a pool cell: a scored cell in the pool is
    # the same mu and shares its draws) takes its column of each chunk in the order of its data key (stable: a tie
    # keeps the label order), never of its labels, so renamed problems, tests or solutions get the same draws.
    has = (s.self_pool >= 0) if s.shared_draw else np.zeros(n_sc, dtype=bool)
    own = np.flatnonzero(~has)
    order = np.argsort(np.concatenate((s.pool_key, s.key[own])), kind="stable")
    m_all, se_all, df_all = (np.concatenate((a, b[own]))[order]
                             for a, b in ((s.pool_m, s.m), (s.pool_se, s.se), (s.pool_df, s.df)))
    for lo in range(0, n_draws, chunk):  # a loop over chunks of draws (memory), vectorised inside
        k = min(chunk, n_draws - lo)
        drawn = np.empty((k, len(order)))
        drawn[:, order] = _draw(rng, m_all, se_all, df_all, k)
        pool_draws = drawn[:, :n_pool]
        own_draws = np.empty((k, n_sc))
        own_draws[:, own] = drawn[:, n_pool:]
        own_draws[:, has] = pool_draws[:, s.self_pool[has]]
        counts = _ranked_draws(s, pairs, pool_draws, own_draws)
        twice[lo:lo + k] = counts
        with np.errstate(invalid="ignore", divide="ignore"):
            r = 100.0 * (counts / 2.0) / n_minus_self
        r[:, n_minus_self <= 0] = np.nan
        r[:, ~s.ok & (n_minus_self > 0)] = 100.0
        r[:, undefined] = np.nan
        flat = (np.arange(k)[:, None] * n_units + units[None, :])
        valid = use[None, :] & np.isfinite(r)
        sums = np.bincount(flat[valid], weights=r[valid], minlength=k * n_units).reshape(k, n_units)
        cnt = np.bincount(flat[valid], minlength=k * n_units).reshape(k, n_units)
        with np.errstate(invalid="ignore", divide="ignore"):
            q[lo:lo + k] = np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan) / 100.0
        # (its own name: ``undefined`` is the rows' mask above, which every chunk of draws reads again)
        undefined_units = np.bincount(flat[use[None, :] & s.ok[None, :] & ~np.isfinite(r)], minlength=k * n_units)
        q[lo:lo + k][undefined_units.reshape(k, n_units) > 0] = np.nan
    return twice, n_minus_self, q


# --------------------------------------------------------------------------------------------
# Noise-aware scores
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NoiseAwareScores:
    """Noise-aware per-test percentiles and problem scores of one run.

    Attributes
    ----------
    tests : DataFrame
        One row per scored (problem, test, solution[, repeat]): ``status, n_ok,
        log_mean, se, df, expected_percentile`` (E[r_t], closed form),
        ``percentile_ci_low/high`` (central ``level`` interval of r*_t) and
        ``percentile_sd`` (posterior sd of r*_t, simulated).
    scores : DataFrame
        One row per unit (problem, solution[, repeat]): ``role, correct``,
        ``q_expected`` (E[q], closed form), ``q_ci_low/high``, ``p_q_le_tau``
        (P(q* <= tau/100)), ``p_gate`` (0 when an optimization test failed),
        ``p_gate_se`` (Monte Carlo), ``hard_fail``, ``n_opt_tests``.
    tau, level, n_draws, seed, prior_df : parameters used.
    """

    tests: pd.DataFrame
    scores: pd.DataFrame
    tau: float
    level: float
    n_draws: int
    seed: int | None
    prior_df: float
    measure: str = "duration_s"
    draws: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_frame(self) -> pd.DataFrame:
        return self.scores

    def summary(self) -> str:
        s = self.scores
        finite = np.isfinite(s["p_gate"].to_numpy(dtype=float))
        return (f"noise-aware scores of {len(s)} units on log {self.measure} (prior_df {self.prior_df:g}, "
                f"{self.n_draws} posterior draws, seed {self.seed}): median E[q] "
                f"{np.nanmedian(s['q_expected']) if len(s) else float('nan'):.3f}, mean P(gate at tau = "
                f"{self.tau:g}) {s.loc[finite, 'p_gate'].mean() if finite.any() else float('nan'):.3f}; "
                f"{100 * self.level:g} % posterior intervals")


def _units(frame: pd.DataFrame, by: Sequence[str]) -> tuple[np.ndarray, int, pd.DataFrame]:
    codes, n = group_codes(frame, list(by))
    first = np.full(n, -1, dtype=np.int64)
    rev = np.arange(len(codes) - 1, -1, -1)
    first[codes[rev]] = rev
    keep = [c for c in (*by, "role", "correct") if c in frame.columns]
    return codes, n, frame.iloc[first][keep].reset_index(drop=True)


def noise_aware_scores(
    model: NoiseModel,
    *,
    tau: float = 30.0,
    roles: Sequence[str] | None = ("candidate",),
    executions: pd.DataFrame | None = None,
    cells: pd.DataFrame | None = None,
    level: float = 0.95,
    n_draws: int = 2000,
    seed: int | None = 0,
    keep_draws: bool = False,
) -> NoiseAwareScores:
    """E[r_t], E[q] with intervals and P(q <= tau/100) of every scored unit.

    Parameters
    ----------
    model : NoiseModel
    tau : float, default 30
        Gate threshold in percentile points (0-100).
    roles : sequence of str or None, default ("candidate",)
        Roles of the model's cells to score (None: all; the pool is always the
        correct references, leave-self-out).
    executions : DataFrame, optional
        Score single executions (units per repeat) instead of the model's cells.
    cells : DataFrame, optional
        Score only these cells, with their ``status`` (:func:`expected_percentiles`).
    level : float, default 0.95
        Central posterior interval level.
    n_draws : int, default 2000
        Posterior draws (Monte Carlo error of a probability <= 0.5/sqrt(n_draws));
        0: the closed forms only (E[r_t], E[q]; intervals and probabilities NaN).
    seed : int or None, default 0
    keep_draws : bool, default False
        Keep the (n_draws, n_units) q* draws in ``.draws``.

    Returns
    -------
    NoiseAwareScores

    Formula
    -------
    E[q] = mean_t E[r_t] / 100;  P(q <= tau/100) = #{s : q*^(s) <= tau/100} / n_draws,
    q*^(s) = mean_t r*_t^(s)/100 with r*_t^(s) the tie-averaged rank of draw s of mu_c
    among draw s of the pool's mu_r.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": np.repeat(list("abcx"), 3),
    ...     "repeat": np.tile([0, 1, 2], 4), "status": "ok", "correct": True,
    ...     "duration_s": np.exp(np.repeat([0.0, 1.0, 2.0, 0.5], 3) + rng.normal(0, 0.05, 12)),
    ...     "role": ["reference"] * 9 + ["candidate"] * 3})
    >>> out = noise_aware_scores(fit_noise(runs), tau=40, n_draws=500)
    >>> out.scores[["q_expected", "p_gate"]].round(3).values.tolist()   # x beats a only: q = 1/3
    [[0.333, 1.0]]
    """
    if not 0 <= tau <= 100:
        raise ValueError(f"tau must lie in [0, 100] percentile points, got {tau}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    if isinstance(n_draws, bool) or int(n_draws) != n_draws or n_draws < 0:
        raise ValueError(f"n_draws must be a non-negative integer, got {n_draws!r}")
    n_draws = int(n_draws)
    s = _scored(model, executions, roles, cells)
    frame = s.frame
    by = ["problem", "solution"] + (["repeat"] if executions is not None and "repeat" in frame.columns else [])
    units, n_units, unit_frame = _units(frame, by)
    is_opt = (frame["test_kind"] == "optimization").to_numpy() if "test_kind" in frame.columns \
        else np.ones(len(frame), dtype=bool)
    expected = _expected(s)
    alpha = (1 - level) / 2
    n_minus_self = s.pool_size[s.test] - (s.self_pool >= 0)
    if n_draws:
        twice, _, q_draws = _simulate(s, units, n_units, is_opt, n_draws, seed)
    else:  # closed forms only
        twice, q_draws = None, np.full((0, n_units), np.nan)

    tests = frame.copy()
    tests["log_mean"] = s.m
    tests["se"] = s.se
    tests["df"] = s.df
    tests["expected_percentile"] = expected
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(n_minus_self > 0, 50.0 / np.maximum(n_minus_self, 1), np.nan)
    if twice is not None:
        r_lo = np.quantile(twice, alpha, axis=0, method="inverted_cdf") * scale
        r_hi = np.quantile(twice, 1 - alpha, axis=0, method="inverted_cdf") * scale
        r_sd = twice.std(axis=0) * scale
    else:
        r_lo = r_hi = r_sd = np.full(len(s.m), np.nan)
    fixed = ~s.ok & (n_minus_self > 0)
    undefined = ~np.isfinite(expected)
    for name, values in (("percentile_ci_low", r_lo), ("percentile_ci_high", r_hi), ("percentile_sd", r_sd)):
        values = np.where(fixed, 100.0 if name != "percentile_sd" else 0.0, values)
        tests[name] = np.where(undefined, np.nan, values)

    use = is_opt & np.isfinite(expected)
    sums = np.bincount(units[use], weights=expected[use], minlength=n_units)
    cnt = np.bincount(units[use], minlength=n_units)
    undefined_unit = np.bincount(units[is_opt & s.ok & ~np.isfinite(expected)], minlength=n_units) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        q_expected = np.where((cnt > 0) & ~undefined_unit, sums / np.maximum(cnt, 1), np.nan) / 100.0
    hard = np.bincount(units, weights=(is_opt & ~s.ok).astype(float), minlength=n_units) > 0
    finite_q = np.isfinite(q_draws).all(axis=0) & (n_draws > 0)
    with np.errstate(invalid="ignore"):
        below = (100.0 * q_draws <= tau + 1e-9).mean(axis=0) if n_draws else np.full(n_units, np.nan)
    p_q = np.where(finite_q & np.isfinite(q_expected), below, np.nan)
    p_gate = np.where(hard, 0.0, p_q)
    scores = unit_frame
    scores["q_expected"] = q_expected
    q_lo = np.full(n_units, np.nan)
    q_hi = np.full(n_units, np.nan)
    if finite_q.any():
        q_lo[finite_q] = np.quantile(q_draws[:, finite_q], alpha, axis=0, method="inverted_cdf")
        q_hi[finite_q] = np.quantile(q_draws[:, finite_q], 1 - alpha, axis=0, method="inverted_cdf")
    scores["q_ci_low"] = np.where(np.isfinite(q_expected), q_lo, np.nan)
    scores["q_ci_high"] = np.where(np.isfinite(q_expected), q_hi, np.nan)
    scores["p_q_le_tau"] = p_q
    scores["p_gate"] = p_gate
    scores["p_gate_se"] = np.where(hard, 0.0, np.sqrt(p_q * (1 - p_q) / max(n_draws, 1)))
    scores["hard_fail"] = hard
    scores["n_opt_tests"] = np.bincount(units[is_opt], minlength=n_units)
    # Units in label order (row-order free).
    order = scores.sort_values(by, kind="stable").index.to_numpy()
    scores = scores.iloc[order].reset_index(drop=True)
    q_kept = q_draws[:, order] if keep_draws else None
    return NoiseAwareScores(tests=tests, scores=scores, tau=float(tau), level=float(level), n_draws=n_draws,
                            seed=seed, prior_df=model.prior_df, measure=model.measure, draws=q_kept)


def noise_aware_p_tau(
    samples: pd.DataFrame,
    draws: np.ndarray,
    *,
    taus: Sequence[float] = (100, 50, 30, 10),
    k: int = 1,
    level: float = 0.95,
) -> pd.DataFrame:
    """p_tau under the repeat-noise model: its posterior mean and interval from measurement noise.

    Parameters
    ----------
    samples : DataFrame
        One row per sample (candidate program): ``problem`` and ``c``, aligned with
        the columns of ``draws``.
    draws : ndarray, shape (n_draws, n_samples)
        Posterior draws of each sample's q* (``noise_aware_scores(..., keep_draws=True).draws``).
    taus, k : as :func:`stats.rewards.p_tau`.
    level : float, default 0.95

    Returns
    -------
    DataFrame
        ``tau, k, expected, noise_ci_low, noise_ci_high, n_problems`` (percent): the mean over
        draws of p_tau^(s) and its central ``level`` interval. The interval is the
        spread due to *timing noise* only (the bootstrap CI of the point p_tau is
        over problems).

    Formula
    -------
    p_tau^(s) = mean over problems with n >= k of 1 - C(n - m^(s), k)/C(n, k),
    m^(s) = #{c = 1 and q*^(s) <= tau/100} (tau >= 100: #{c = 1}).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> samples = pd.DataFrame({"problem": ["a", "a"], "c": [True, True]})
    >>> draws = np.array([[0.1, 0.5], [0.4, 0.2]])   # two draws of two candidates' q*
    >>> noise_aware_p_tau(samples, draws, taus=(30,))["expected"].tolist()   # (50 % + 50 %) / 2
    [50.0]
    """
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 2 or draws.shape[1] != len(samples):
        raise ValueError(f"draws must have shape (n_draws, {len(samples)} samples), got {draws.shape}")
    codes, n_prob = group_codes(samples, ["problem"])
    c = samples["c"].to_numpy(dtype=bool)
    n = np.bincount(codes, minlength=n_prob)
    used = n >= k
    n_draws = draws.shape[0]
    flat = (np.arange(n_draws)[:, None] * n_prob + codes[None, :]).ravel()
    alpha = (1 - level) / 2
    rows = []
    for tau in taus:  # a loop over the few thresholds, vectorised over draws and problems
        if not 0 <= tau <= 100:
            raise ValueError(f"tau must lie in [0, 100] percentile points, got {tau}")
        with np.errstate(invalid="ignore"):
            ok = np.broadcast_to(c, draws.shape) if tau >= 100 else c[None, :] & (100.0 * draws <= tau + 1e-9)
        m = np.bincount(flat, weights=ok.ravel().astype(float), minlength=n_draws * n_prob).reshape(n_draws, n_prob)
        # each draw's mean over problems sums their values in sorted order: the same whatever the problems' names
        per_draw = 100.0 * np.sort(pass_at_k(np.broadcast_to(n, m.shape)[:, used], m[:, used], k), axis=1).mean(
            axis=1) if used.any() else np.full(n_draws, np.nan)
        lo, hi = (np.quantile(per_draw, [alpha, 1 - alpha]) if n_draws and used.any() else (np.nan, np.nan))
        rows.append({"tau": float(tau), "k": k, "expected": float(per_draw.mean()) if n_draws else np.nan,
                     "noise_ci_low": float(lo), "noise_ci_high": float(hi), "n_problems": int(used.sum())})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# Adaptive repeats: which cells are still ambiguous
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AdaptivePlan:
    """Which units are decided at a confidence, and which cells to re-execute next.

    Attributes
    ----------
    units : DataFrame
        ``problem, solution, p_gate, decision`` (``pass``, ``fail``, ``ambiguous``,
        ``futile`` (ambiguous, and ``max_repeats`` cannot decide it: not re-executed),
        or ``undefined`` when the model cannot say: no pool, or no variance yet)
        and ``n_ambiguous_pairs`` (pairs with P(faster) in (1 - c, c)).
    cells : DataFrame
        The cells to re-execute, highest ``priority`` first: ``problem, test,
        solution, role, n_runs, n_ok, priority, reason``.
    at_max : DataFrame
        Ambiguous cells that already have ``max_repeats`` executions.
    confidence, tau, target, max_repeats : parameters.
    """

    units: pd.DataFrame
    cells: pd.DataFrame
    at_max: pd.DataFrame
    confidence: float
    tau: float
    target: str
    max_repeats: int | None

    @property
    def done(self) -> bool:
        """Nothing left to re-execute (every unit decided, or the ambiguous ones at max repeats)."""
        return self.cells.empty

    def to_frame(self) -> pd.DataFrame:
        return self.cells

    def summary(self) -> str:
        counts = self.units["decision"].value_counts()
        parts = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("pass", "fail", "ambiguous", "futile", "undefined")
                          if k != "futile" or counts.get(k, 0))
        return (f"adaptive repeats at confidence {self.confidence:g} ({self.target}, tau = {self.tau:g}): "
                f"{len(self.units)} units: {parts}; {len(self.cells)} cells to re-execute"
                f"{f', {len(self.at_max)} ambiguous cells at max_repeats = {self.max_repeats}' if len(self.at_max) else ''}")


def _futile(units: pd.DataFrame, opt_tests: pd.DataFrame, *, confidence: float, max_repeats: int,
            min_n: float = 1.0) -> np.ndarray:
    """``units["decision"]`` with ``futile`` for the ambiguous units N repeats cannot decide (adaptive_plan)."""
    n = opt_tests.groupby(["problem", "solution"], observed=True)["n_ok"].mean().rename("_n").reset_index()
    n = units[["problem", "solution"]].merge(n, on=["problem", "solution"], how="left")["_n"].to_numpy(dtype=float)
    p = np.clip(units["p_gate"].to_numpy(dtype=float), 1e-12, 1 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        reach = np.abs(special.ndtri(p)) * np.sqrt(max_repeats / n)
    dec = units["decision"].to_numpy(dtype=object).copy()
    dec[(dec == "ambiguous") & (n >= max(min_n, 1.0)) & (reach < special.ndtri(confidence))] = "futile"
    return dec


def adaptive_plan(
    executions: pd.DataFrame | NoiseModel,
    *,
    tau: float = 30.0,
    confidence: float = 0.95,
    max_repeats: int | None = None,
    target: str = "gate",
    roles: Sequence[str] | None = None,
    reexecute_roles: Sequence[str] | None = None,
    prior_df: float = DEFAULT_PRIOR_DF,
    measure: str = "duration_s",
    n_draws: int = 2000,
    seed: int | None = 0,
    futility_from: int | None = None,
    pool_members: bool = True,
) -> AdaptivePlan:
    """The adaptive-repeat decision rule: which units are still ambiguous, which cells to run again.

    Parameters
    ----------
    executions : DataFrame or NoiseModel
        The executions of one run so far (or their :func:`fit_noise`).
    tau : float, default 30
        Gate threshold in percentile points.
    confidence : float, default 0.95
        c in (0.5, 1): a unit is decided when P(gate) >= c (pass) or <= 1 - c (fail).
    max_repeats : int, optional
        Cells with this many executions (any status) are not proposed again.
    target : {"gate", "rank"}
        ``gate``: ambiguity of each unit's gate decision. ``rank``: a cell is
        ambiguous while any P(faster) against its pool lies in (1 - c, c).
    roles : sequence of str or None
        Roles of the units to decide (default: every role; references are scored
        leave-self-out against the other references).
    reexecute_roles : sequence of str or None
        Roles whose cells may be re-executed (default: every role, so the pool
        members a cell cannot yet be ordered against are proposed too).
    futility_from : int, optional
        With ``max_repeats`` (``target="gate"``): once a unit's optimization cells
        have on average at least this many ok executions, stop it if the remaining
        repeats cannot reach a decision (decision ``futile``, see Formula); its cells
        are not proposed. Such a unit sits so close to tau that its gate is a coin
        flip at any affordable number of repeats, and so is a reference's. None: never.
    pool_members : bool, default True
        ``target="gate"``: also propose the pool members an ambiguous unit's cells
        cannot yet be ordered against. False: only the ambiguous units' own cells.

    Returns
    -------
    AdaptivePlan

    Formula
    -------
    decision = pass if P(gate) >= c, fail if P(gate) <= 1 - c, else ambiguous;
    priority of a cell = Var(r*_t) / (n_ok + 1) (``target="rank"``: the number of
    ambiguous pairs / (n_ok + 1)).

    Futility (``futility_from=m``): with z = Phi^-1(P(gate)), n the mean number of
    ok executions of the unit's optimization cells and N = ``max_repeats``, the
    posterior z of a fixed speed difference grows like sqrt(n); an ambiguous unit
    with n >= m is ``futile`` when |z| sqrt(N / n) < Phi^-1(c), i.e. even N
    repeats at today's estimate would leave it ambiguous. Example: c = 0.95, N = 5, n = 2:
    P(gate) = 0.6 gives 0.253 * 1.581 = 0.40 < 1.645 (futile); P(gate) = 0.9 gives
    1.282 * 1.581 = 2.03 (still worth repeating).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> mu = {"a": 0.0, "b": 1.0, "c": 2.0, "x": 0.5, "y": 1.02}
    >>> runs = pd.DataFrame([{"problem": "p", "test": "t", "solution": s, "repeat": r, "status": "ok",
    ...     "duration_s": float(np.exp(m + rng.normal(0, 0.05))), "correct": True,
    ...     "role": "candidate" if s in "xy" else "reference"} for s, m in mu.items() for r in range(3)])
    >>> plan = adaptive_plan(runs, tau=50, roles=["candidate"], n_draws=500)
    >>> plan.units[["solution", "decision"]].values.tolist()  # y sits on b: its gate at 50 is a coin flip
    [['x', 'pass'], ['y', 'ambiguous']]
    >>> sorted(set(plan.cells["solution"]))
    ['b', 'y']
    """
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence}")
    if target not in _TARGETS:
        raise ValueError(f"target must be one of {_TARGETS}, got {target!r}")
    if max_repeats is not None and (isinstance(max_repeats, bool) or int(max_repeats) != max_repeats
                                    or max_repeats < 1):
        raise ValueError(f"max_repeats must be a positive integer, got {max_repeats!r}")
    model = executions if isinstance(executions, NoiseModel) else fit_noise(executions, prior_df=prior_df,
                                                                             measure=measure)
    result = noise_aware_scores(model, tau=tau, roles=roles, level=0.95, n_draws=n_draws, seed=seed)
    units = result.scores[["problem", "solution", "p_gate"]].copy()
    p = units["p_gate"].to_numpy(dtype=float)
    decision = np.where(p >= confidence, "pass", np.where(p <= 1 - confidence, "fail", "ambiguous"))
    decision = np.where(np.isfinite(p), decision, "undefined")
    tests = result.tests
    cells = model.cells

    pairs = faster_probabilities(model, roles=roles)
    pf = pairs["p_faster"].to_numpy(dtype=float)
    open_pair = (pf > 1 - confidence) & (pf < confidence)
    # Bernoulli variance of one pair's indicator on its cell's percentile scale, (100/n)^2 p (1 - p).
    n_pool = pairs.groupby(list(CELL_KEYS), observed=True, sort=False)["reference"].transform("size")
    pair_var = (100.0 / n_pool.to_numpy(dtype=float)) ** 2 * pf * (1 - pf)
    units["decision"] = decision
    is_opt = (tests["test_kind"] == "optimization").to_numpy() if "test_kind" in tests.columns \
        else np.ones(len(tests), dtype=bool)
    nan_var = ~np.isfinite(tests["se"].to_numpy(dtype=float)) & (tests["n_ok"].to_numpy() > 0)
    if futility_from is not None and max_repeats is not None and target == "gate":
        units["decision"] = _futile(units, tests.loc[is_opt], confidence=confidence, max_repeats=int(max_repeats),
                                    min_n=float(futility_from))

    if target == "gate":
        # The optimization cells of ambiguous units whose percentile is still uncertain, by Var(r*_t);
        # units undefined for lack of a variance estimate: every such cell (one more repeat gives one).
        u_codes, u_units, _ = joint_codes(tests, units, ["problem", "solution"])
        lookup = np.full(max(int(u_units.max(initial=-1)) + 1, 1), "", dtype=object)
        lookup[u_units] = units["decision"].to_numpy()
        unit_dec = lookup[u_codes]
        var = tests["percentile_sd"].to_numpy(dtype=float) ** 2
        pick = is_opt & (((unit_dec == "ambiguous") & (var > 0)) | ((unit_dec == "undefined") & nan_var))
        chosen = tests.loc[pick, list(CELL_KEYS)].assign(
            priority=np.where(nan_var[pick], np.inf, var[pick]),
            reason=np.where(nan_var[pick], "no variance yet", "gate ambiguous"))
        hit = pairs[list(CELL_KEYS)].merge(chosen[list(CELL_KEYS)].assign(_hit=True), on=list(CELL_KEYS),
                                           how="left")["_hit"].notna().to_numpy()
        ref_pairs = hit & open_pair & bool(pool_members)
    else:
        # Cells with an unresolved order against a pool member, and those pool members.
        ref_pairs = open_pair
        per_cell = pairs.loc[open_pair, list(CELL_KEYS)].assign(priority=pair_var[open_pair])
        chosen = per_cell.groupby(list(CELL_KEYS), observed=True, sort=False)["priority"].sum().reset_index()
        chosen["reason"] = "rank ambiguous"
        empty = tests.loc[nan_var & is_opt, list(CELL_KEYS)].assign(priority=np.inf, reason="no variance yet")
        chosen = pd.concat([chosen, empty], ignore_index=True)
    refs = pairs.loc[ref_pairs, ["problem", "test", "reference"]].rename(columns={"reference": "solution"})
    refs = refs.assign(priority=pair_var[ref_pairs]).groupby(list(CELL_KEYS), observed=True, sort=False)[
        "priority"].sum().reset_index().assign(reason="pool member ambiguous against a cell")
    proposed = pd.concat([chosen, refs], ignore_index=True)

    # One row per cell: the highest priority and its reason.
    proposed = proposed.sort_values(["priority"], ascending=False, kind="stable")
    proposed = proposed.drop_duplicates(list(CELL_KEYS), keep="first")
    info = cells[[*CELL_KEYS, "role", "n_runs", "n_ok"]]
    proposed = proposed.merge(info, on=list(CELL_KEYS), how="left")
    proposed = proposed.loc[_role_mask(proposed, reexecute_roles)]
    n_now = proposed["n_runs"].to_numpy(dtype=float)
    proposed = proposed.assign(priority=proposed["priority"].to_numpy(dtype=float) / (proposed["n_ok"].to_numpy() + 1.0))
    full = np.zeros(len(proposed), dtype=bool) if max_repeats is None else n_now >= max_repeats
    order_cols = ["priority", *CELL_KEYS]
    at_max = proposed.loc[full].sort_values(order_cols, ascending=[False, True, True, True], kind="stable")
    todo = proposed.loc[~full].sort_values(order_cols, ascending=[False, True, True, True], kind="stable")
    cols = [*CELL_KEYS, "role", "n_runs", "n_ok", "priority", "reason"]
    amb = pairs.assign(_open=open_pair).groupby(["problem", "solution"], observed=True)["_open"].sum()
    units = units.merge(amb.rename("n_ambiguous_pairs").reset_index(), on=["problem", "solution"], how="left")
    units["n_ambiguous_pairs"] = units["n_ambiguous_pairs"].fillna(0).astype(int)
    return AdaptivePlan(units=units.reset_index(drop=True), cells=todo[cols].reset_index(drop=True),
                        at_max=at_max[cols].reset_index(drop=True), confidence=float(confidence), tau=float(tau),
                        target=target, max_repeats=None if max_repeats is None else int(max_repeats))
