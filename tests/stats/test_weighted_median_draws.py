"""The cluster bootstrap's weighted medians, blocked, equal the running sum of every resample.

``stats.bootstrap._weighted_median_positions`` finds each resample's weighted median through block totals
(one matrix product) and one block summed point by point; the straightforward computation is a running sum
over all points per resample. Weights are integer counts times multiples of 1/64, as the 64-point sketch
makes them, so the two must agree exactly, on ties, on one cluster per point, and where the blocks are
larger than 1,024 points and the resamples come in chunks.
"""

import numpy as np
import pytest

from stats.bootstrap import _weighted_median_positions, cluster_bootstrap_ci


def _loop(cluster_of, w, counts):
    out = []
    for b in range(len(counts)):
        cum = np.cumsum(w * counts[b, cluster_of])
        out.append(np.searchsorted(cum, 0.5 * cum[-1]))
    return np.array(out)


@pytest.mark.parametrize("k,n_boot,max_size", [(1, 5, 3), (3, 50, 5), (50, 300, 40), (1000, 40, 10_000),
                                                (9000, 4, 2)])
def test_blocked_weighted_medians_equal_the_running_sums(k, n_boot, max_size):
    rng = np.random.default_rng(k)
    m = 64
    sizes = rng.integers(1, max_size + 1, k)
    cluster_of = rng.permutation(np.repeat(np.arange(k), m))
    w = (sizes / m)[cluster_of]
    counts = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    want = _loop(cluster_of, w, counts)
    np.testing.assert_array_equal(_weighted_median_positions(cluster_of, w, counts), want)
    np.testing.assert_array_equal(_weighted_median_positions(cluster_of, w, counts, chunk_cells=3000), want)


def test_cluster_median_interval_covers_the_planted_median():
    rng = np.random.default_rng(3)
    clusters = np.repeat(np.arange(200), 50)
    values = rng.normal(10.0, 1.0, len(clusters)) + rng.normal(0.0, 0.5, 200)[clusters]
    ci = cluster_bootstrap_ci(values, clusters, statistic="median", n_boot=400, seed=0)
    assert ci.low < 10.0 < ci.high
    assert ci.low < ci.estimate < ci.high
