"""A share of bootstrap resamples judged against 95 % needs at least 20 resamples to be anything but "all of them".

Found with ``n_boot=1``: default_aggregator warned that total_pct "does better in 100% of bootstrap resamples"
and dominated_aggregators listed aggregators "dominated in >= 95% of bootstrap resamples" -- from one resample
(with 19, one disagreeing resample is 5.3 % of them, so >= 95 % still means every one). n_boot = 0 was already
n/a; now so is every n_boot below 1 / (1 - 0.95) = 20, with the reason, and 20 is judged.
"""

from __future__ import annotations

import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA

JUDGED_ON_SHARES = ("default_aggregator", "dominated_aggregators")


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=12, n_tests=4, n_repeats=3, seed=3, noise_cv=0.15).corpus


def _found(corpus, n_boot):
    audit = run_aggregation_audit(corpus, n_boot=n_boot)
    assert audit.recommended != "mean_pct"  # default_aggregator is judged on resamples, not "it is the best"
    return {f.metric: f for f in audit.findings}


@pytest.mark.parametrize("n_boot", [1, 3, 19])
def test_too_few_resamples_are_not_judged(corpus, n_boot):
    found = _found(corpus, n_boot)
    for metric in JUDGED_ON_SHARES:
        assert found[metric].level == NA, (metric, found[metric].message)
        assert f"{n_boot} resample" in found[metric].reason and ">= 20 needed" in found[metric].reason
    assert found["recommended_aggregator"].level == "pass"  # point estimates are still used


def test_twenty_resamples_are_judged(corpus):
    found = _found(corpus, 20)
    assert all(found[metric].level != NA for metric in JUDGED_ON_SHARES)
