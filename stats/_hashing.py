"""64-bit hashes of data, for keys that depend on values and never on names or row order.

Random draws keyed by these (:mod:`stats.noise`'s posterior draws, :mod:`stats.rewards`' noise_gate and multitask
draws, :mod:`stats.bootstrap`'s cluster order) give every cell, problem or cluster the same draws whatever it is
called and however the rows are ordered. splitmix64's finaliser is written here because numpy has no vectorised
64-bit hash of integers (``np.random`` seeds one generator at a time, ``hashlib`` one bytes object at a time).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

__all__ = ["GOLDEN", "finalize64", "mix64", "set_hash", "text_hash", "dense_ranks_within"]

#: splitmix64's increment (2^64 / golden ratio)
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def finalize64(z: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of every entry (uint64, wrapping), without the generator's increment."""
    z = np.asarray(z, dtype=np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's output for every entry as its state (uint64, wrapping): a 64-bit hash of a 64-bit value."""
    return finalize64(np.asarray(x, dtype=np.uint64) + GOLDEN)


def set_hash(values: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """A hash of each group's multiset of (already hashed) ``values``: the wrapping sum of their mixes, mixed.
    The same values in any order give the same key, as the rows of a corpus are a set."""
    total = np.zeros(n, dtype=np.uint64)
    np.add.at(total, np.asarray(codes, dtype=np.int64), mix64(values))  # uint64 addition wraps
    return mix64(total)


def text_hash(column: pd.Series) -> np.ndarray:
    """A 64-bit hash of each entry's text (one BLAKE2b per distinct value): role, test kind."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # the categories' texts once, the codes per row
        values = np.array([str(c) for c in column.cat.categories] + ["\x00<missing>"], dtype=object)
        inverse = column.cat.codes.to_numpy(dtype=np.int64)  # -1 (missing): the last entry
    else:
        codes, uniques = pd.factorize(column, use_na_sentinel=True)
        values = np.array([str(u) for u in uniques] + ["\x00<missing>"], dtype=object)
        inverse = np.asarray(codes, dtype=np.int64)
    keys = np.array([int.from_bytes(hashlib.blake2b(v.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                                    "little") for v in values], dtype=np.uint64)
    return keys[inverse]


def dense_ranks_within(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each value's dense rank (0, 1, ...; equal values one rank, NaN last) among the values of its group."""
    values = np.asarray(values, dtype=np.float64)
    groups = np.asarray(groups, dtype=np.int64)
    out = np.zeros(len(values), dtype=np.uint64)
    if not len(values):
        return out
    nan = np.isnan(values)
    order = np.lexsort((np.where(nan, 0.0, values), nan, groups))
    v, g, n = values[order], groups[order], nan[order]
    new_group = np.r_[True, g[1:] != g[:-1]]
    new_value = new_group | np.r_[True, (v[1:] != v[:-1]) & ~(n[1:] & n[:-1])] | np.r_[True, n[1:] != n[:-1]]
    step = np.cumsum(new_value)
    start = np.maximum.accumulate(np.where(new_group, step, 0))
    out[order] = (step - start).astype(np.uint64)
    return out
