"""stats._groups' sort helper against numpy's own two-key sort (the permutation, not only the values)."""
from __future__ import annotations

import numpy as np
import pytest

from stats._groups import grouped_order


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("span", [1, 7, 1000, (1 << 16) - 1, 1 << 16, 1 << 20])
def test_grouped_order_is_lexsort(seed, span):
    """Ties in both keys (rounded values, few groups), NaN, negative codes and codes wider than the radix path."""
    rng = np.random.default_rng(seed)
    n = 20_000
    codes = rng.integers(-3, span, n) if span > 1 else np.zeros(n, dtype=np.int64)
    values = np.round(rng.lognormal(size=n), 1)
    values[rng.random(n) < 0.01] = np.nan
    np.testing.assert_array_equal(grouped_order(values, codes), np.lexsort((values, codes)))
    np.testing.assert_array_equal(grouped_order(values, codes.astype(np.int32)), np.lexsort((values, codes)))


def test_grouped_order_edges():
    empty = np.zeros(0)
    assert grouped_order(empty, empty.astype(np.int64)).tolist() == []
    values = np.array([2.0, 1.0, 2.0])
    labels = np.array(["b", "a", "b"])  # non-integer codes: lexsort itself
    assert grouped_order(values, labels).tolist() == np.lexsort((values, labels)).tolist()


@pytest.mark.parametrize("values", [np.array([5, 1, 5, 3]), np.array([-2, 4, -2]), np.array([2.5, 1.0, 2.5]),
                                    np.arange(10**4) * 997 % 4093, np.array([0, 10**12, 0])])
def test_dense_ranks_is_unique_inverse(values):
    from stats._groups import dense_ranks

    uniques, inverse = np.unique(values, return_inverse=True)
    codes, k = dense_ranks(values)
    np.testing.assert_array_equal(codes, inverse)
    assert k == len(uniques)
