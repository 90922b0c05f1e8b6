"""stats._ties' grouped ranks against scipy's ranks group by group, on ties, NaN and signed zeros.

``_less_equal`` (one grouped sort, then runs of equal values) is what ``grouped_midranks``,
``tail_weights`` and ``smallest_by_half_inclusion`` count with; these tests pin it to an independent
computation: ``scipy.stats.rankdata`` within each group, and a brute-force count per value.
"""

import numpy as np
import pytest
import scipy.stats as sps

from stats._ties import _less_equal, grouped_midranks


def _values(rng, n):
    v = np.round(rng.random(n) * 20, 0) / 4            # many ties
    v[rng.random(n) < 0.05] = np.nan
    zeros = rng.random(n) < 0.05
    v[zeros] = np.where(rng.random(zeros.sum()) < 0.5, 0.0, -0.0)   # -0.0 ties 0.0
    return v


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grouped_midranks_equal_scipy_rankdata_within_each_group(seed):
    rng = np.random.default_rng(seed)
    n, k = 3000, 17
    groups, values = rng.integers(0, k, n), _values(rng, n)
    got = grouped_midranks(groups, values)
    want = np.full(n, np.nan)
    for g in range(k):
        rows = np.flatnonzero((groups == g) & np.isfinite(values))
        want[rows] = sps.rankdata(values[rows], method="average")
    np.testing.assert_array_equal(got, want)


def test_less_equal_counts_by_brute_force_with_nan_equal_to_nan():
    rng = np.random.default_rng(5)
    n, k = 400, 6
    groups, values = rng.integers(0, k, n), _values(rng, n)
    less, equal, sizes = _less_equal(groups, values, k + 2)
    for i in range(n):
        peers = values[groups == groups[i]]
        if np.isnan(values[i]):
            want_less, want_equal = np.sum(np.isfinite(peers)), np.sum(np.isnan(peers))  # NaN sorts last
        else:
            want_less, want_equal = np.sum(peers < values[i]), np.sum(peers == values[i])
        assert (less[i], equal[i]) == (want_less, want_equal), i
    np.testing.assert_array_equal(sizes, np.bincount(groups, minlength=k + 2))


def test_less_equal_ignores_row_order():
    rng = np.random.default_rng(7)
    n, k = 2000, 11
    groups, values = rng.integers(0, k, n), _values(rng, n)
    perm = rng.permutation(n)
    less, equal, _ = _less_equal(groups, values, k)
    less_p, equal_p, _ = _less_equal(groups[perm], values[perm], k)
    np.testing.assert_array_equal(less[perm], less_p)
    np.testing.assert_array_equal(equal[perm], equal_p)
