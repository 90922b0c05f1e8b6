"""Figures of millions of cells draw a bounded number of points that still lie on the full curve."""

from __future__ import annotations

import numpy as np

from audits.report.plots.reliability import ecdf_steps


def test_thinned_ecdf_lies_on_the_full_ecdf_within_its_resolution():
    values = np.random.default_rng(0).lognormal(size=100_003)
    x, share = ecdf_steps(values, max_steps=1600)
    assert len(x) <= 1600 and x[0] == values.min() and x[-1] == values.max() and share[-1] == 1.0
    full = np.searchsorted(np.sort(values), x, side="right") / len(values)
    assert np.array_equal(full, share)  # each drawn point is a point of the exact ECDF (no ties here)
    assert np.diff(share).max() <= 1 / 1600 + 1 / len(values)  # the resolution the docstring promises
    small = values[:50]
    xs, ys = ecdf_steps(small, max_steps=1600)
    assert np.array_equal(xs, np.sort(small)) and np.array_equal(ys, np.arange(1, 51) / 50)  # all kept
