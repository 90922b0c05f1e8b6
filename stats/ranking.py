"""Percentile engine: reference pools, per-test percentiles, and q, c, g.

Definitions (DESIGN.md, "Definitions"):

* The **reference pool** of test t holds one duration per correct reference
  solution: the median of its ``ok`` repeats on t (one environment, one campaign).
* The **per-test percentile** of a duration d against a pool of n_t durations is
  the tie-averaged rank

      r_t(d) = 100 * (#{pool < d} + 0.5 * #{pool == d}) / n_t

  (0 = faster than every reference, 100 = slower than all). A non-``ok``
  execution gets 100. A solution scored against its own pool is left out of it
  (leave-self-out); when that empties the pool, r_t is undefined (NaN).
* **q** = mean over the problem's optimization tests of r_t / 100.
* **c** = every correctness and optimization test ``ok`` (a timeout counts as a
  failure unless ``timeout_fails_c=False``).
* **g** = q <= tau/100 and no optimization test failed hard (any non-``ok``).

Everything is vectorised over all problems and tests: one sort of the pool and
two ``searchsorted`` calls, no Python loop per problem or row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from stats._groups import column_codes, first_rows, group_codes, grouped_median, subset_codes
from stats._ties import pool_less_equal, snap

__all__ = ["STATUSES", "select_runs", "solution_cells", "reference_pools", "test_percentiles", "percentile_table",
           "problem_scores", "pool_join", "pool_languages", "POOLS_ATTR", "joint_codes", "require_single_run"]

#: The estimators' input contract: the statuses they know, ``ok`` first (their codes index this
#: tuple). stats imports nothing of audits, so the corpus schema (``audits.corpus.schema.STATUSES``)
#: states them for the corpus and a test (tests/corpus/test_schema.py) checks that the two agree.
STATUSES = ("ok", "wrong_answer", "timeout", "runtime_error", "memory_limit", "checker_error")


def status_codes(frame: pd.DataFrame) -> np.ndarray:
    """Index into :data:`STATUSES` of every row's status (no per-row Python objects)."""
    status = frame["status"]
    if isinstance(status.dtype, pd.CategoricalDtype):
        labels = [str(c) for c in status.cat.categories]
        position = np.array([STATUSES.index(c) if c in STATUSES else -1 for c in labels] + [-1], dtype=np.int64)
        codes = position[status.cat.codes.to_numpy(dtype=np.int64)]  # code -1 (missing) -> last entry, -1
    else:
        codes = pd.Categorical(status, categories=STATUSES).codes.astype(np.int64)
    if (codes < 0).any():
        bad = sorted({str(v) for v in status[codes < 0].unique()})[:5]
        raise ValueError(f"unknown status values {bad}; expected one of {list(STATUSES)}")
    return codes


def _is_kind(frame: pd.DataFrame, column: str, value: str, default: bool) -> np.ndarray:
    """Boolean mask ``frame[column] == value`` computed on category codes when possible."""
    if column not in frame.columns:
        return np.full(len(frame), default)
    return (frame[column] == value).to_numpy(dtype=bool)


def select_runs(
    corpus: pd.DataFrame,
    *,
    environment: str | None = None,
    campaign: str | None = None,
    roles: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Rows of one environment and campaign (and optionally some roles).

    ``None`` keeps every value, but a pool must come from exactly one
    (environment, campaign): :func:`reference_pools` checks that.
    """
    mask = np.ones(len(corpus), dtype=bool)
    if environment is not None:
        mask &= (corpus["environment"] == environment).to_numpy()
    if campaign is not None:
        mask &= (corpus["campaign"] == campaign).to_numpy()
    if roles is not None:
        mask &= corpus["role"].isin(list(roles)).to_numpy()
    return corpus.loc[mask]


def require_single_run(frame: pd.DataFrame, what: str) -> None:
    for column in ("environment", "campaign"):
        if column in frame.columns:
            col = frame[column]
            if isinstance(col.dtype, pd.CategoricalDtype):
                present = np.unique(col.cat.codes.to_numpy())
                values = [str(col.cat.categories[i]) for i in present if i >= 0]
            else:
                values = pd.unique(col)
            if len(values) > 1:
                raise ValueError(
                    f"{what}: the rows span several {column} values {sorted(map(str, values))[:5]}; "
                    f"a reference pool comes from one environment and one campaign. "
                    f"Filter first, e.g. stats.ranking.select_runs(corpus, {column}=...)."
                )


def solution_cells(executions: pd.DataFrame, *, by: Sequence[str] = ("problem", "test", "solution"),
                   codes: tuple[np.ndarray, int] | None = None) -> pd.DataFrame:
    """Collapse repeats: one row per ``by`` cell.

    ``duration_s`` is the median of the cell's ``ok`` repeats (NaN when none is
    ok); ``status`` is ``ok`` when at least half of the repeats are ok, else
    the most frequent non-ok status; ``n_ok`` / ``n_runs`` count repeats. Other
    descriptive columns (role, correct, test_kind) are taken from the first row.

    ``codes``: ``group_codes(executions, by)`` when the caller already has them (a run context computes
    them once per run); default: computed here.
    """
    if codes is None:
        codes = group_codes(executions, list(by))
    return _collapse(executions, list(by), *codes)


def cell_codes(executions: pd.DataFrame) -> tuple[np.ndarray, int]:
    """``group_codes`` of the (problem, test, solution) cells: what :func:`solution_cells` and
    :func:`reference_pools` accept as ``codes=`` to skip that grouping pass."""
    return group_codes(executions, ["problem", "test", "solution"])


def _collapse(executions: pd.DataFrame, by: list, codes: np.ndarray, n_groups: int) -> pd.DataFrame:
    """:func:`solution_cells` of ``executions`` grouped by ``codes`` (``n_groups`` dense codes of ``by``)."""
    status_code = status_codes(executions)
    is_ok = status_code == 0
    durations = executions["duration_s"].to_numpy(dtype=float)
    ok_rows = np.flatnonzero(is_ok & np.isfinite(durations))
    median = grouped_median(codes[ok_rows], durations[ok_rows], n_groups)
    n_runs = np.bincount(codes, minlength=n_groups)
    n_ok = np.bincount(codes[ok_rows], minlength=n_groups)

    first = np.full(n_groups, -1, dtype=np.int64)
    rev = np.arange(len(codes) - 1, -1, -1)
    first[codes[rev]] = rev
    out = executions.iloc[first].reset_index(drop=True)
    keep = [c for c in dict.fromkeys(by + ["role", "correct", "test_kind", "language"]) if c in out.columns]
    out = out[keep].copy()
    out["duration_s"] = median
    out["n_runs"] = n_runs
    out["n_ok"] = n_ok

    # Cell status: ok by majority; otherwise the commonest failure (ties: the
    # first in STATUSES order), counted with one bincount over (cell, status).
    k = len(STATUSES)
    tally = np.bincount(codes * k + status_code, minlength=n_groups * k).reshape(n_groups, k)
    tally[:, 0] = -1  # ok is decided by the majority rule, not here
    cell_status = np.where(2 * n_ok >= n_runs, 0, tally.argmax(axis=1))
    out["status"] = pd.Categorical.from_codes(cell_status, categories=STATUSES)
    return out


#: ``corpus.attrs[POOLS_ATTR] = "one"`` merges the languages' pools (the CLI's ``--one-pool``).
POOLS_ATTR = "speedaudit.reference_pools"


def pool_languages(rows: pd.DataFrame, *, by_language: bool | None = None) -> pd.Categorical | None:
    """The language of the reference pool each row belongs to (``""``: its problem's one pool), or None without a
    ``language`` column or with one pool per problem asked for.

    The one rule of the pools (:func:`reference_pools` reads it, and so does every estimator of differences
    between references: :func:`stats.reliability.log_duration_icc`, :func:`stats.reliability.variance_partials`):
    with a ``language`` column, a problem whose ``rows`` hold more than one language has one pool per language
    (``by_language=None``, the default), ``True`` splits every problem, ``False`` or ``rows.attrs[POOLS_ATTR] ==
    "one"`` (the command line's ``--one-pool``) keeps one pool. A row of a problem with one pool reads ``""``, as
    does a row without a language. Give it the rows the pools are built from: ``ok`` runs of correct references.

    Examples
    --------
    >>> rows = pd.DataFrame({"problem": ["p", "p", "q"], "language": ["cpp", "python", "cpp"]})
    >>> list(pool_languages(rows)), list(pool_languages(rows.iloc[2:])), pool_languages(rows, by_language=False)
    (['cpp', 'python', ''], [''], None)
    """
    if by_language is None and rows.attrs.get(POOLS_ATTR) == "one":
        by_language = False
    if by_language is False or "language" not in rows.columns or not len(rows):
        return None
    language = rows["language"].astype("category")
    codes, _ = column_codes(language)  # -1: no language (its own value, "" as reference_pools writes it)
    if by_language:
        split = np.ones(len(rows), dtype=bool)
    else:  # distinct (problem, language) pairs per problem, from codes (no per-row text at 10^7 rows)
        problem, n_problems = group_codes(rows, ["problem"])
        pair, n_pairs = group_codes(rows.assign(language=language), ["problem", "language"])
        split = (np.bincount(problem[first_rows(pair, n_pairs)], minlength=n_problems) > 1)[problem]
    names = ["" if pd.isna(c) else str(c) for c in language.cat.categories]
    labels = sorted(set(names) | {""})
    index = np.array([labels.index(n) for n in names] + [labels.index("")], dtype=np.int64)
    return pd.Categorical.from_codes(np.where(split, index[codes], labels.index("")), categories=labels)


def reference_pools(corpus: pd.DataFrame, *, by_language: bool | None = None,
                    codes: tuple[np.ndarray, int] | None = None) -> pd.DataFrame:
    """Reference pool of every (problem, test).

    Parameters
    ----------
    corpus : DataFrame
        Executions of one environment and one campaign (see :func:`select_runs`).
    by_language : bool, optional
        With a ``language`` column: ``None`` (default) gives a problem whose
        references mix languages one pool per language (a Python candidate is
        ranked among the Python references: a C++ and a Python program differ
        by the interpreter, not by the idea), and every other problem one pool;
        ``True`` splits every problem by language; ``False`` keeps one pool.
        ``corpus.attrs[POOLS_ATTR] == "one"`` means ``False`` when None is given.
    codes : (ndarray, int), optional
        :func:`cell_codes` of ``corpus`` when already computed; the pool's cells are then numbered from
        them (:func:`stats._groups.subset_codes`) instead of a second grouping pass. Default: computed.

    Returns
    -------
    DataFrame
        Columns ``problem, test, solution, duration_s``: one row per correct
        reference solution with at least one ``ok`` repeat on the test, its
        duration the median of those repeats. When some problem's pool is split
        by language, also ``pool_language`` (the language of the pool the row
        belongs to, ``""`` for a problem with one pool); :func:`test_percentiles`
        then ranks each execution in the pool of its own ``language``, and an
        execution of a language with no reference there gets NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "a", "b"],
    ...     "duration_s": [1.0, 3.0, 5.0], "status": "ok", "role": "reference",
    ...     "correct": True, "repeat": [0, 1, 0]})
    >>> reference_pools(runs)["duration_s"].tolist()
    [2.0, 5.0]
    """
    require_single_run(corpus, "reference_pools")
    mask = (corpus["status"] == "ok").to_numpy() & np.isfinite(corpus["duration_s"].to_numpy(dtype=float))
    if "role" in corpus.columns:
        mask &= (corpus["role"] == "reference").to_numpy()
    if "correct" in corpus.columns:
        mask &= corpus["correct"].to_numpy(dtype=bool)
    if by_language is None and corpus.attrs.get(POOLS_ATTR) == "one":
        by_language = False
    split = by_language is not False and "language" in corpus.columns
    refs = corpus.loc[mask, ["problem", "test", "solution", "duration_s", "status"] + (["language"] if split else [])]
    by = ["problem", "test", "solution"]
    cells = _collapse(refs, by, *(group_codes(refs, by) if codes is None else subset_codes(*codes, mask)))
    out = cells[["problem", "test", "solution", "duration_s"]].reset_index(drop=True)
    pools = pool_languages(cells, by_language=by_language) if split else None
    if pools is not None and (pools != "").any():
        out["pool_language"] = np.asarray(pools, dtype=object).astype(str)
    return out


def pool_join(executions: pd.DataFrame, pools: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The columns that join executions to their pool, and the executions with them.

    ``["problem", "test"]``; when some pool is split by language (``pools``
    has ``pool_language``, see :func:`reference_pools`) and the executions have
    a ``language``, also ``pool_language``: an execution of such a problem
    joins the pool of its own language, every other one the problem's single
    pool. Returns ``(executions, keys)`` (a shallow copy with the column added
    when it is needed).
    """
    keys = ["problem", "test"]
    if "pool_language" in pools.columns and "language" in executions.columns:
        split_problems = pd.unique(pools.loc[(pools["pool_language"] != "").to_numpy(), "problem"].astype(str))
        in_split = executions["problem"].astype(str).isin(split_problems).to_numpy()
        language = executions["language"].astype(object).where(executions["language"].notna(), "").astype(str)
        executions = executions.assign(pool_language=np.where(in_split, language.to_numpy(), ""))
        keys.append("pool_language")
    return executions, keys


def joint_codes(a: pd.DataFrame, b: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Codes of ``columns`` that agree between two frames."""
    parts = []
    for name in columns:
        left, right = a[name], b[name]
        same_categories = (
            isinstance(left.dtype, pd.CategoricalDtype)
            and isinstance(right.dtype, pd.CategoricalDtype)
            and left.cat.categories.equals(right.cat.categories)
        )
        if same_categories:
            parts.append(pd.concat([left, right], ignore_index=True))
        else:
            parts.append(pd.concat([left.astype(str), right.astype(str)], ignore_index=True))
    joined = pd.concat(parts, axis=1, keys=list(columns))
    codes, n = group_codes(joined, list(columns))
    return codes[: len(a)], codes[len(a):], n


def test_percentiles(
    executions: pd.DataFrame,
    pools: pd.DataFrame,
    *,
    leave_self_out: bool = True,
) -> np.ndarray:
    """Per-test percentile of every execution against its test's pool.

    r = 100 * (#{pool < d} + 0.5 * #{pool == d}) / n, with the execution's own
    solution removed from the pool when ``leave_self_out``; non-``ok`` (or
    missing-duration) executions get 100; an empty pool gives NaN.

    Parameters
    ----------
    executions : DataFrame
        Columns ``problem, test, solution, duration_s, status``.
    pools : DataFrame
        Output of :func:`reference_pools`.
    leave_self_out : bool, default True

    Returns
    -------
    ndarray of float, aligned with ``executions``' rows.

    Examples
    --------
    >>> import pandas as pd
    >>> pools = pd.DataFrame({"problem": "p", "test": "t", "solution": ["a", "b", "c"],
    ...                       "duration_s": [1.0, 2.0, 2.0]})
    >>> runs = pd.DataFrame({"problem": "p", "test": "t", "solution": ["x", "a"],
    ...                      "duration_s": [2.0, 1.0], "status": "ok"})
    >>> test_percentiles(runs, pools).tolist()  # x: (1 + 0.5*2)/3; a vs {2, 2}: 0
    [66.66666666666667, 0.0]
    """
    n_exec = len(executions)
    result = np.full(n_exec, 100.0)
    if n_exec == 0:
        return result
    durations = executions["duration_s"].to_numpy(dtype=float)
    ok = (executions["status"] == "ok").to_numpy() & np.isfinite(durations)

    executions, keys = pool_join(executions, pools)
    exec_test, pool_test, n_tests = joint_codes(executions, pools, keys)
    pool_d = pools["duration_s"].to_numpy(dtype=float)
    exec_d = np.where(ok, durations, 0.0)
    pool_size = np.bincount(pool_test, minlength=n_tests)
    less, equal = pool_less_equal(pool_test, pool_d, exec_test, exec_d, n_tests)
    n = pool_size[exec_test].astype(float)
    less = less.astype(float)
    equal = equal.astype(float)

    if leave_self_out and len(pools):
        exec_cell, pool_cell, n_cells = joint_codes(executions, pools, ["problem", "test", "solution"])
        self_value = np.full(n_cells, np.nan)
        self_value[pool_cell] = pool_d
        own = self_value[exec_cell]
        has_self = np.isfinite(own)
        d = durations
        less -= has_self & (own < d)
        equal -= has_self & (own == d)
        n -= has_self

    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100.0 * (less + 0.5 * equal) / n
    pct[n <= 0] = np.nan
    result[ok] = pct[ok]
    return result


test_percentiles.__test__ = False  # not a pytest test, despite its name


def percentile_table(
    corpus: pd.DataFrame,
    *,
    per_repeat: bool = False,
    leave_self_out: bool = True,
    pools: pd.DataFrame | None = None,
    by_language: bool | None = None,
    cells: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per-test percentiles of every solution in one environment and campaign.

    Parameters
    ----------
    corpus : DataFrame
        Executions of one environment and campaign.
    per_repeat : bool, default False
        ``False``: one row per (problem, test, solution), its duration the
        median of ``ok`` repeats (see :func:`solution_cells`). ``True``: one row
        per execution, each repeat ranked against the fixed pool (rank drift).
    pools : DataFrame, optional
        A pool to rank against (e.g. a stored campaign's); default: built from
        ``corpus``.
    by_language : bool, optional
        Per-language pools, as in :func:`reference_pools` (when ``pools`` is not given).
    cells : DataFrame, optional
        ``solution_cells(corpus)`` when already computed (with ``per_repeat=False``); default: computed.

    Returns
    -------
    DataFrame with the key columns, ``duration_s``, ``status``, ``role``,
    ``correct``, ``test_kind`` and ``percentile``.
    """
    require_single_run(corpus, "percentile_table")
    if pools is None:
        pools = reference_pools(corpus, by_language=by_language)
    if per_repeat:
        cols = [c for c in ("problem", "test", "solution", "repeat", "duration_s", "status", "role", "correct", "test_kind",
                            "language")
                if c in corpus.columns]
        frame = corpus[cols].reset_index(drop=True)
    else:
        frame = solution_cells(corpus) if cells is None else cells
    # a shallow copy: under pandas' copy-on-write adding the column never writes into ``corpus`` (the deep
    # copy this was cost one copy of every scored execution, 10^7-row peak RSS)
    frame = frame.copy(deep=False)
    frame["percentile"] = test_percentiles(frame, pools, leave_self_out=leave_self_out)
    return frame


def problem_scores(
    percentiles: pd.DataFrame,
    *,
    tau: float | None = None,
    timeout_fails_c: bool = True,
    by: Sequence[str] | None = None,
    codes: tuple[np.ndarray, int] | None = None,
) -> pd.DataFrame:
    """Problem-level q, c and g of every solution (default aggregator ``mean_pct``).

    q = mean over optimization tests of r_t/100 (NaN tests ignored), rounded
    to 12 significant digits (:func:`stats._ties.snap`) so that equal
    rationals reached through different test sets compare equal;
    c = all correctness and optimization tests ok;
    g = (q <= tau/100) and no optimization test non-ok.

    Parameters
    ----------
    percentiles : DataFrame
        Output of :func:`percentile_table`.
    tau : float, optional
        Speed threshold in percentile points (0-100). Without it, ``g`` is not
        computed.
    timeout_fails_c : bool, default True
        Whether a timeout makes c = 0 (the environment's choice).
    by : sequence of str, optional
        Score units; default (problem, solution) plus ``repeat`` when present.
    codes : (ndarray, int), optional
        ``group_codes(percentiles, by)`` when the caller already has them (e.g. from
        :func:`stats._groups.subset_codes` of a larger table's); default: computed here.

    Returns
    -------
    DataFrame
        One row per unit with ``q``, ``c``, ``g`` (when tau is given),
        ``n_opt_tests``, ``n_tests`` and the solution's ``role``/``correct``;
        ``q_unrounded`` is q before the rounding, for figures that average q
        over repeats first (they round their average once, :func:`stats._ties.snap`,
        instead of averaging rounded values and rounding again).

    Examples
    --------
    >>> import pandas as pd
    >>> pct = pd.DataFrame({"problem": "p", "solution": "s", "test": ["a", "b", "c"],
    ...     "status": ["ok", "ok", "ok"], "percentile": [10.0, 30.0, 100.0],
    ...     "test_kind": ["optimization", "optimization", "correctness"]})
    >>> problem_scores(pct, tau=30)[["q", "c", "g"]].to_dict("records")
    [{'q': 0.2, 'c': True, 'g': True}]
    """
    if by is None:
        by = ["problem", "solution"] + (["repeat"] if "repeat" in percentiles.columns else [])
    by = list(by)
    codes, n_groups = group_codes(percentiles, by) if codes is None else codes
    if len(codes) != len(percentiles):
        raise ValueError(f"problem_scores: {len(codes)} codes for {len(percentiles)} rows")
    is_opt = _is_kind(percentiles, "test_kind", "optimization", default=True)
    status = status_codes(percentiles)
    ok = status == 0
    fails_c = ~ok if timeout_fails_c else ~(ok | (status == STATUSES.index("timeout")))
    pct = percentiles["percentile"].to_numpy(dtype=float)

    use = is_opt & np.isfinite(pct)
    sums = np.bincount(codes[use], weights=pct[use], minlength=n_groups)
    counts = np.bincount(codes[use], minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_pct = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    # One documented rounding (stats._ties.snap, 12 significant digits): q is a
    # rational (a mean of multiples of 50/n_t), and equal rationals reached
    # through different test sets must compare equal in every later ranking.
    q_unrounded = mean_pct / 100.0  # kept for averages over repeats, which are rounded once after averaging
    mean_pct = snap(mean_pct)
    q = mean_pct / 100.0
    c = np.bincount(codes, weights=fails_c.astype(float), minlength=n_groups) == 0
    hard_fail = np.bincount(codes, weights=(is_opt & ~ok).astype(float), minlength=n_groups) > 0

    first = np.full(n_groups, -1, dtype=np.int64)
    rev = np.arange(len(codes) - 1, -1, -1)
    first[codes[rev]] = rev
    keep = [col for col in by + ["role", "correct"] if col in percentiles.columns]
    out = percentiles.iloc[first][keep].reset_index(drop=True)
    out["q"] = q
    out["q_unrounded"] = q_unrounded
    out["c"] = c
    if tau is not None:
        if not 0 <= tau <= 100:
            raise ValueError(f"tau must lie in [0, 100] percentile points, got {tau}")
        # Compared in percentile points with a 1e-9 slack: percentiles are multiples of
        # 50/n, so a mean that equals tau exactly must not fail on rounding.
        out["g"] = (mean_pct <= tau + 1e-9) & ~hard_fail
    out["n_opt_tests"] = np.bincount(codes[is_opt], minlength=n_groups)
    out["n_tests"] = np.bincount(codes, minlength=n_groups)
    return out
