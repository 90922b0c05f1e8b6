"""Calibration drift across three campaigns: a campaign that cannot be mapped onto the anchor is said, not dropped.

``drift_changes`` counts the campaigns whose affine map against the anchor (the source campaign) changed from
the previous campaign's. A campaign whose cells pair with the anchor's in fewer than 2 problems (every execution
timed out, or it timed one problem) has no map; it was left out of the drift table, and with two campaigns
besides the anchor the finding then vanished from the audit: no verdict and no n/a. It is now n/a naming the
campaign, and a judged finding names the campaigns it could not map.

Planted (audits.corpus.synthetic): c0 (anchor), c1 = 1.1 c0, c2 = 1.3 c0 + 10 ms, 6 problems.
"""

from __future__ import annotations

import pandas as pd
import pytest

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import normalize
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=6, n_tests=3, n_solutions=5, n_repeats=2,
                      campaigns=(("c0", 1.0, 0.0), ("c1", 1.1, 0.0), ("c2", 1.3, 0.01)), seed=1).corpus


def _drift(frame: pd.DataFrame):
    audit = run_calibration_audit(normalize(frame), source=Run("quiet", "c0"), target=Run("quiet", "c1"), n_boot=50,
                                  n_boot_rank=10)
    found = [f for f in audit.findings if f.metric == "drift_changes"]
    assert len(found) == 1, [f.metric for f in audit.findings]
    return found[0]


def test_all_three_mapped_is_judged(corpus):
    finding = _drift(corpus)
    assert finding.level in ("pass", "warn", "fail")
    assert "c2" in finding.message  # its map changed: 1.1 -> 1.3 and +10 ms


def test_timed_out_campaign_is_named(corpus):
    frame = corpus.copy()
    frame.loc[(frame["campaign"] == "c2").to_numpy(), "status"] = "timeout"
    finding = _drift(frame)
    assert finding.level == "n/a", finding
    assert "c2" in finding.message, finding.message


def test_one_problem_campaign_is_named(corpus):
    first = corpus["problem"].iloc[0]
    keep = (corpus["campaign"] != "c2") | (corpus["problem"] == first) | (corpus["role"] == "floor")
    finding = _drift(corpus.loc[keep.to_numpy()])
    assert finding.level == "n/a", finding
    assert "c2" in finding.message, finding.message


def test_a_judged_finding_names_the_unmapped(corpus):
    c3 = corpus.loc[(corpus["campaign"] == "c1").to_numpy()].assign(campaign="c3", status="timeout")
    finding = _drift(pd.concat([corpus, c3], ignore_index=True))
    assert finding.level in ("pass", "warn", "fail")
    assert "c3" in finding.message, finding.message
