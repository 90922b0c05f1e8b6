"""Per-test percentiles from the batched binary search, against scipy and a brute-force count.

``stats._ties.pool_less_equal`` counts, for every execution, the pool values of its test below and
equal to its duration by one binary search per needle inside its test's block. These tests hold it to
``scipy.stats.percentileofscore(kind="mean")`` (= 100 (#< + #<=) / 2n) test by test, on ties, signed
zeros, NaN pool values, tests without a pool and blocks of very different sizes.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from stats._ties import pool_less_equal
from stats.ranking import test_percentiles


def _case(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.choice([0, 1, 2, 5, 64, 300], size=40)
    pool_group = np.repeat(np.arange(40), sizes)
    pool_value = np.round(rng.lognormal(0, 1, len(pool_group)), 1)   # ties
    pool_value[rng.random(len(pool_value)) < 0.03] = np.nan
    pool_value[rng.random(len(pool_value)) < 0.03] = -0.0
    group = rng.integers(0, 40, 5000)
    value = np.round(rng.lognormal(0, 1, 5000), 1)
    value[rng.random(5000) < 0.05] = 0.0
    return rng.permutation(len(pool_group)), pool_group, pool_value, group, value


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_equal_a_brute_force_count(seed):
    perm, pool_group, pool_value, group, value = _case(seed)
    below, equal = pool_less_equal(pool_group[perm], pool_value[perm], group, value, 40)
    for i in range(len(value)):
        peers = pool_value[pool_group == group[i]]
        assert (below[i], equal[i]) == (np.sum(peers < value[i]), np.sum(peers == value[i])), i


def test_percentiles_equal_scipy_percentileofscore_per_test():
    rng = np.random.default_rng(4)
    _, pool_group, pool_value, group, value = _case(4)
    finite = np.isfinite(pool_value)
    pools = pd.DataFrame({"problem": "p", "test": pool_group[finite].astype(str),
                          "solution": [f"r{i}" for i in range(finite.sum())], "duration_s": pool_value[finite]})
    runs = pd.DataFrame({"problem": "p", "test": group.astype(str), "solution": "x", "duration_s": value,
                         "status": np.where(rng.random(len(value)) < 0.05, "timeout", "ok")})
    got = test_percentiles(runs, pools, leave_self_out=False)
    for i in range(len(runs)):
        peers = pools.loc[pools["test"] == runs.at[i, "test"], "duration_s"].to_numpy()
        if runs.at[i, "status"] != "ok":
            want = 100.0
        elif len(peers) == 0:
            want = np.nan
        else:
            want = sps.percentileofscore(peers, value[i], kind="mean")
        np.testing.assert_allclose(got[i], want, rtol=1e-12, err_msg=str(i))
