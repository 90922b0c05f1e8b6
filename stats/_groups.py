"""Vectorised group keys shared by the estimators.

pandas' multi-column ``groupby`` is general but slow at 10^7 rows with several
categorical keys. These helpers turn any set of key columns into one dense
``int64`` code per row (a mixed-radix number of the columns' own codes, then
compacted with :func:`pandas.factorize`), so that grouped reductions become
``np.bincount`` / sorted ``searchsorted`` calls.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def column_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes (0..k-1, -1 for missing) of one column and k."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, k = _narrow_codes(column)
        return codes.astype(np.int64, copy=False), k
    values = column.to_numpy() if column.dtype.kind in "iu" else None
    if values is not None and len(values):
        # Integers (``repeat``, ``run``) in a small range: their rank among the present values from a presence
        # table, the codes factorize(sort=True) gives, without hashing 10^7 values.
        low = values.min()
        if int(values.max()) - int(low) <= 4 * len(values) + (1 << 20):
            shifted = values - low
            rank = np.cumsum(np.bincount(shifted) > 0) - 1
            return rank[shifted].astype(np.int64, copy=False), int(rank[-1]) + 1
    # sort=True: codes follow the values' order, not their first appearance, so
    # every group numbering (and what is derived from it) ignores row order.
    codes, uniques = pd.factorize(column, sort=True)
    return codes.astype(np.int64, copy=False), len(uniques)


def _content_rank(categories: pd.Index) -> np.ndarray | None:
    """Rank of every category among the sorted categories (None when they are sorted already).

    Group numbers follow the categories' *content*, not their order in the dtype: two corpora holding the same
    ids with the categories listed in another order (re-coded) number their groups alike, so every per-group
    array, bootstrap cluster and tie-break is the same (set semantics; issue 24). Mixed types sort as text.
    """
    if categories.is_monotonic_increasing:
        return None
    try:
        order = np.argsort(categories.to_numpy(), kind="stable")
    except TypeError:  # e.g. ints and strings in one categorical
        order = np.argsort(categories.astype(str).to_numpy(), kind="stable")
    rank = np.empty(len(categories), dtype=np.int64)
    rank[order] = np.arange(len(categories))
    return rank


def _narrow_codes(column: pd.Series) -> tuple[np.ndarray, int]:
    """:func:`column_codes` without widening a categorical's codes to int64 (the caller adds them in place).

    Categorical codes are renumbered by the sorted categories (:func:`_content_rank`) when the categories are
    not in sorted order; missing values keep -1.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes, categories = column.cat.codes.to_numpy(), column.cat.categories
        rank = _content_rank(categories)
        if rank is not None:
            lookup = np.append(rank, -1).astype(codes.dtype if len(categories) < np.iinfo(codes.dtype).max
                                                else np.int64)
            codes = lookup[codes]  # code -1 (missing) reads the appended -1
        return codes, len(categories)
    return column_codes(column)


def mixed_radix_key(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """One ``int64`` per row that is equal exactly when the rows' ``columns`` are equal.

    The columns' codes are combined as a mixed-radix number
    (key = (...(c1 * (k2+1) + c2) * (k3+1) + c3 ...), codes shifted by one so that
    missing values stay distinct); when the radix would overflow int64, the key
    built so far is first compacted with :func:`pandas.factorize`.
    """
    # In place, straight from the columns' own (int8/16/32) codes: the key of 10^7 rows was the single
    # largest cost of the whole audit (15 s of 134 s under cProfile, 223 calls), mostly temporaries.
    combined = None
    radix = 1
    for name in columns:
        codes, k = _narrow_codes(frame[name])
        k = max(k, 1)
        if combined is None:
            combined = codes.astype(np.int64)
            combined += 1
            radix = k + 1
            continue
        if radix > (2**62) // (k + 1):
            combined, uniques = pd.factorize(combined, sort=True)
            combined = combined.astype(np.int64, copy=False)
            radix = max(len(uniques), 1)
        combined *= k + 1
        combined += codes
        combined += 1
        radix *= k + 1
    if combined is None:
        combined = np.zeros(len(frame), dtype=np.int64)
    return combined


def dense_range(keys: np.ndarray) -> bool:
    """Whether non-negative integer ``keys`` span a range small enough for a presence table (<= 4 n + 2^20)."""
    return len(keys) > 0 and int(keys.min()) >= 0 and int(keys.max()) <= 4 * len(keys) + (1 << 20)


def unique_ints(keys: np.ndarray) -> np.ndarray:
    """``np.unique`` of an integer array (sorted distinct values), without hashing.

    numpy 2's ``np.unique`` hashes first; on 10^6-10^7 mostly distinct keys the hash table misses cache
    and was the single largest cost of the run table (measured 1.3 s per call at 10^6 rows). Keys in a
    small non-negative range use a presence table (``np.bincount``), others one sort.

    Examples
    --------
    >>> unique_ints(np.array([5, 1, 5, 3])).tolist()
    [1, 3, 5]
    """
    keys = np.asarray(keys)
    if dense_range(keys):
        return np.flatnonzero(np.bincount(keys)).astype(keys.dtype, copy=False)
    ordered = np.sort(keys)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def dense_ranks(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``np.unique(values, return_inverse=True)``'s inverse and the number of distinct values.

    Integers in a small non-negative range are ranked through a presence table (no sort, no hash: numpy 2's
    ``unique`` hashes, 0.09 s on the 10^6 cluster codes of one bootstrap); anything else goes to ``np.unique``.

    >>> dense_ranks(np.array([7, 3, 7, 5]))[0].tolist(), dense_ranks(np.array([7, 3, 7, 5]))[1]
    ([2, 0, 2, 1], 3)
    """
    values = np.asarray(values)
    if values.dtype.kind in "iu" and dense_range(values):
        rank = np.cumsum(np.bincount(values) > 0) - 1
        return rank[values].astype(np.int64, copy=False), int(rank[-1]) + 1
    uniques, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64, copy=False), len(uniques)


def group_codes(frame: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, int]:
    """Dense code per row for the combination of ``columns``.

    Returns
    -------
    codes : ndarray of int64
        ``codes[i]`` identifies the group of row ``i``; groups are numbered
        0..n_groups-1 in the sorted order of their keys (categoricals by their
        sorted categories' content, :func:`_content_rank`), never by first appearance.
    n_groups : int
    """
    if len(columns) == 0:
        return np.zeros(len(frame), dtype=np.int64), 1 if len(frame) else 0
    key = mixed_radix_key(frame, columns)
    if dense_range(key):
        # The keys' rank among the present keys (what factorize(sort=True) numbers them), from a presence
        # table: O(rows + range), no hashing (factorize was a sixth of the whole audit at 10^6 rows).
        present = np.bincount(key) > 0
        rank = np.cumsum(present) - 1
        return rank[key].astype(np.int64, copy=False), int(rank[-1]) + 1
    dense, uniques = pd.factorize(key, sort=True)
    return dense.astype(np.int64, copy=False), len(uniques)


def subset_codes(codes: np.ndarray, n_groups: int, mask: np.ndarray) -> tuple[np.ndarray, int]:
    """:func:`group_codes` of the rows ``mask`` selects, from the codes of every row (no second pass).

    Groups are numbered by sorted content, so the groups a subset keeps keep their order: renumbering the
    present codes 0..k-1 gives what ``group_codes(frame.loc[mask], columns)`` gives (same dtypes).

    >>> subset_codes(np.array([0, 2, 1, 2]), 3, np.array([True, True, False, True]))[0].tolist()
    [0, 1, 1]
    """
    kept = codes[mask]
    present = np.zeros(n_groups, dtype=bool)
    present[kept] = True
    rank = np.cumsum(present) - 1
    return rank[kept].astype(np.int64, copy=False), int(present.sum())


def first_rows(codes: np.ndarray, n_groups: int) -> np.ndarray:
    """Index of the first row of every group (groups numbered 0..n_groups-1)."""
    first = np.full(n_groups, -1, dtype=np.int64)
    order = np.arange(len(codes) - 1, -1, -1)
    first[codes[order]] = order
    return first


def grouped_order(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``np.lexsort((values, codes))``: row positions by group code, then by value, ties in row order.

    The same permutation, built as two stable sorts (values, then codes) instead of lexsort's: when the codes
    span fewer than 2^16 values the second sort is numpy's radix sort of 16-bit keys. Written here because
    neither numpy nor pandas offers a faster two-key stable sort: on 2*10^6 rows of 1,000 groups it measured
    1.0 s for lexsort against 0.34 s (stable value sort plus radix sort of the codes; 2026-12-03, loaded box).
    NaN values sort last within their group, as with lexsort.

    >>> v, c = np.array([3.0, 1.0, 2.0, 1.0]), np.array([1, 0, 1, 0])
    >>> grouped_order(v, c).tolist() == np.lexsort((v, c)).tolist() == [1, 3, 2, 0]
    True
    """
    values, codes = np.asarray(values), np.asarray(codes)
    if len(codes) == 0 or codes.dtype.kind not in "iu":
        return np.lexsort((values, codes))
    low = int(codes.min())
    if int(codes.max()) - low >= 1 << 16:
        return np.lexsort((values, codes))
    by_value = np.argsort(values, kind="stable")
    narrow = (codes[by_value] - low).astype(np.uint16)
    return by_value[np.argsort(narrow, kind="stable")]


def grouped_median(codes: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Median of ``values`` within each group (groups without values get NaN).

    Delegates to pandas' cythonised grouped median on the integer codes: it
    needs no (group, value) sort, which at 10^7 rows is ~10x faster than a
    ``np.lexsort`` of both keys. NaN values are ignored.
    """
    out = np.full(n_groups, np.nan)
    if len(values) == 0:
        return out
    medians = pd.Series(values, copy=False).groupby(codes, sort=False).median()
    out[medians.index.to_numpy(dtype=np.int64)] = medians.to_numpy(dtype=float)
    return out


def present_labels(column: pd.Series) -> list[str]:
    """Distinct labels present in ``column``, as ``str``.

    Categoricals are read from their codes (category order, no per-row string
    conversion: at 10^7 rows ``astype(object)`` costs seconds); other columns
    sorted (not in first-seen order, which would depend on row order). Missing
    values are left out.
    """
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.unique(column.cat.codes.to_numpy())
        categories = column.cat.categories
        return [str(categories[c]) for c in codes if c >= 0]
    return sorted(str(v) for v in pd.unique(column.dropna()))


def label_mask(column: pd.Series, value: str) -> np.ndarray:
    """Writable boolean array ``column == value`` (on category codes for categoricals)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        if value not in categories:
            return np.zeros(len(column), dtype=bool)
        return column.cat.codes.to_numpy() == categories.get_loc(value)
    return np.array(column == value, dtype=bool)


def canonical_order(frame: pd.DataFrame, columns: Sequence[str], value: str = "duration_s") -> np.ndarray:
    """Row positions that sort ``frame`` by its group key (then ``repeat``/``run``, then ``value``).

    Grouped floating-point sums (``np.bincount`` with weights, pandas' grouped
    std) add values in row order, so a shuffled corpus gives results that differ
    in the last bit. Reducing in this order instead makes every such sum a
    function of the rows as a set. Within a group, rows are ordered by
    ``repeat`` and ``run`` when present (an execution's key is unique, so this
    is one integer sort); only when rows still share a key is ``value`` used
    to break the tie (rows equal in both are interchangeable for any reduction
    of ``value``).
    """
    keys = [c for c in columns if c in frame.columns]
    keys += [c for c in ("repeat", "run") if c in frame.columns and c not in keys]
    codes, n_groups = group_codes(frame, keys)
    if n_groups == len(frame) or value not in frame.columns:
        return np.argsort(codes, kind="stable")
    return grouped_order(frame[value].to_numpy(dtype=float), codes)
