"""A polynomial's bootstrap resample that loses source values does not count in its parameter CIs.

stats.calibration.bootstrap_params resampled the problems and refitted poly2/poly3 on every resample, also on one
that kept no more distinct source durations than the polynomial has coefficients (the problems that alone held
the other values were not drawn): there the curve is not determined (0c6b7f2 made the point fit and the held-out
check n/a on such pairs), yet its coefficients (the curve through the per-value means, or one of infinitely
many) entered the percentile interval. Now such a resample is left out, and when they are more than the share
(1 - level) / 2 each end of the interval cuts off, the interval is n/a with the reason.

Planted: every problem holds source durations of its own, so a resample holding few problems holds few values.
The resamples are counted by hand (numpy's multinomial draws of the problems, Python sets of their values), and
the kept resamples' coefficients are refitted with numpy.polyfit on the resampled rows themselves.
"""

from __future__ import annotations

import numpy as np
import pytest

from stats.calibration import _group_index, bootstrap_params

SEED, N_BOOT, LEVEL = 3, 1000, 0.95


def _planted(n_problems: int, values_per_problem: int, scale: float):
    """Each problem its own source durations (4 pairs at each), targets on a planted parabola plus noise."""
    rng = np.random.default_rng(11)
    x = np.repeat(scale * (1.0 + np.arange(n_problems * values_per_problem)), 4)
    groups = np.repeat(np.arange(n_problems), 4 * values_per_problem)
    y = scale * (0.05 + 0.9 * x / scale + 0.01 * (x / scale) ** 2) * np.exp(rng.normal(0, 0.05, len(x)))
    return x, y, groups


def _hand_counts(groups, x, y, k):
    """Per resample: its problem counts (the bootstrap over problems: multinomial draws, one seeded stream, one
    count per problem in the order of the problems' own pairs, stats.calibration._group_index) and whether the
    problems drawn hold <= k distinct source durations."""
    codes, n = _group_index(groups, x, y)
    counts = np.random.default_rng(SEED).multinomial(n, np.full(n, 1.0 / n), size=N_BOOT)
    values = {g: set(x[codes == g].tolist()) for g in range(n)}
    short = np.array([len(set().union(*(values[g] for g in np.flatnonzero(c)))) <= k for c in counts])
    return counts, short


@pytest.mark.parametrize("scale", [1e-8, 10.0])  # nanosecond and ten-second programs
def test_resamples_that_lose_values_are_left_out(scale):
    x, y, groups = _planted(8, 1, scale)  # 8 problems, one source value each: a resample of <= 3 problems is short
    counts, short = _hand_counts(groups, x, y, k=3)
    codes = _group_index(groups, x, y)[0]
    assert 0 < short.sum() <= 0.025 * N_BOOT  # a few, fewer than the 2.5 % each end of the interval cuts off
    ci = bootstrap_params(x, y, groups, "poly2", n_boot=N_BOOT, level=LEVEL, seed=SEED).set_index("param")
    assert (ci["n_resamples"] == N_BOOT - short.sum()).all()
    assert (ci["ci_reason"] == "").all()
    # the kept resamples refitted on their rows by numpy.polyfit: the interval is their percentiles
    fits = []
    for c in counts[~short]:
        rows = np.concatenate([np.flatnonzero(codes == g) for g in range(len(c)) for _ in range(c[g])])
        fits.append(np.polyfit(x[rows], y[rows], 2)[::-1])  # c0, c1, c2
    fits = np.array(fits)
    alpha = (1 - LEVEL) / 2
    for i, name in enumerate(("c0", "c1", "c2")):
        low, high = np.quantile(fits[:, i], [alpha, 1 - alpha])
        np.testing.assert_allclose([ci.loc[name, "ci_low"], ci.loc[name, "ci_high"]], [low, high], rtol=1e-6,
                                   err_msg=name)


def test_too_many_short_resamples_make_the_interval_na():
    x, y, groups = _planted(6, 1, 1e-3)  # 6 problems: a quarter of the resamples hold <= 3 of them
    _, short = _hand_counts(groups, x, y, k=3)
    assert short.mean() > 0.025
    ci = bootstrap_params(x, y, groups, "poly2", n_boot=N_BOOT, level=LEVEL, seed=SEED)
    assert np.isfinite(ci["estimate"]).all()  # six values: the point fit is determined
    assert ci["ci_low"].isna().all() and ci["ci_high"].isna().all()
    assert (ci["n_resamples"] == 0).all()
    reason = ci["ci_reason"].iloc[0]
    assert f"{int(short.sum())} of {N_BOOT} bootstrap resamples" in reason and "<= 3 distinct" in reason, reason


def test_a_problem_rich_in_values_keeps_every_resample():
    """Every problem holds 5 values (more than poly3's 4 coefficients): no resample is short, none is left out."""
    x, y, groups = _planted(6, 5, 1e-3)
    _, short = _hand_counts(groups, x, y, k=4)
    assert not short.any()
    ci = bootstrap_params(x, y, groups, "poly3", n_boot=N_BOOT, level=LEVEL, seed=SEED)
    assert (ci["n_resamples"] == N_BOOT).all() and ci["ci_low"].notna().all()
