"""Bootstrap resamples in which a ratio is undefined do not count as "not better".

Found on a corpus of 8 problems of which only 2 have >= 4 correct references (the others have no dynamic
range): about (6/8)^8 = 10 % of the resamples over problems draw neither, so every aggregator's range, and its
stability / range ratio, is NaN there. The CIs leave those resamples out (nanquantile) and
``p_better_than_default`` meant to (np.nanmean), but ``NaN < NaN`` is False, not NaN: each such resample counted
as "the best is not better than the default", capping the share near 90 % whatever the data. total_pct beat
mean_pct in every resample where both were defined and was reported "better in 90 % of resamples", so
default_aggregator passed ("within bootstrap noise") instead of warning; confident domination had the same cap.
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize

N_BOOT = 200


@pytest.fixture(scope="module")
def audit():
    corpus = synthesize(n_problems=8, n_tests=4, n_repeats=3, seed=3, noise_cv=0.15, n_solutions=8).corpus
    solution, problem = corpus["solution"].astype(str), corpus["problem"].astype(str)
    # six problems keep 3 correct references (ref-000 .. ref-002): no dynamic range there
    dropped = (~problem.isin(["p0000", "p0001"]) & solution.str.startswith("ref-") & (solution.str[-3:] >= "003")
               & corpus["correct"])
    return run_aggregation_audit(corpus.loc[~dropped.to_numpy()].reset_index(drop=True), n_boot=N_BOOT, seed=0)


def _resampled_ratios(comp, seed=0):
    """The paired bootstrap restated: the same index matrix over the problems, the ratio of the resampled means
    of the per-problem stability and range (NaN where a resample has no defined value)."""
    pp = comp.per_problem
    problems = list(dict.fromkeys(pp["problem"]))
    idx = np.random.default_rng(seed).integers(0, len(problems), size=(N_BOOT, len(problems)))
    out = {}
    for name, rows in pp.groupby("aggregator", sort=False):
        rows = rows.set_index("problem").loc[problems]
        stab, rng_ = rows["stability"].to_numpy()[idx], rows["dynamic_range"].to_numpy()[idx]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = (np.nansum(stab, axis=1) / np.isfinite(stab).sum(axis=1)) / \
                (np.nansum(rng_, axis=1) / np.isfinite(rng_).sum(axis=1))
    return out


def test_p_better_is_the_share_of_the_resamples_where_both_are_defined(audit):
    comp = audit.comparison()
    ratios = _resampled_ratios(comp)
    default = ratios["mean_pct"]
    undefined = ~np.isfinite(default)
    assert undefined.mean() > 0.05  # the premise: a tenth of the resamples draw no problem with a range
    table = comp.table.set_index("aggregator")
    for name, r in ratios.items():
        both = np.isfinite(r) & np.isfinite(default)
        assert table.loc[name, "p_better_than_default"] == pytest.approx((r[both] < default[both]).mean(), abs=1e-12)


def test_the_default_is_judged_on_the_defined_resamples(audit):
    best = audit.recommended
    found = {f.metric: f for f in audit.findings}["default_aggregator"]
    assert best != "mean_pct"
    assert audit.comparison().table.set_index("aggregator").loc[best, "p_better_than_default"] == 1.0
    assert found.level == "warn", found.message
