"""The calibration audit's intervals do not depend on the problems' names.

stats.calibration numbered the problems by sorted name (never by first appearance, so row order decided nothing),
and every bootstrap over problems (the parameters' CIs, the held-out R^2 and log-RMSE, Bland-Altman, the
percentile agreement, campaign_drift's shared resamples) drew its counts in that order: the same rows with the
problems renamed into another sort order read other intervals (busy vs quiet below: the calibrated Bland-Altman
bias CI [-0.177, 0.265] or [-0.184, 0.246]; campaign_drift's c1 slope [0.6240, 0.6325] or [0.6246, 0.6321]). The
problems are now numbered in the order of a hash of their own pairs, so a renamed and shuffled copy gives the
same figures (to the last bits of sums taken in row order).
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.checks.calibration import run_calibration_audit
from audits.corpus.synthetic import synthesize
from stats.calibration import campaign_drift
from tests.edges.test_draw_names import _figures, _same, renamed


def _one_problem_renamed(frame, seed=0):
    names = sorted(frame["problem"].unique())
    mapping = {n: f"Ω{len(names) - i} 🙂" for i, n in enumerate(names)}  # reversed sort order
    out = frame.assign(problem=frame["problem"].map(mapping))
    return out.iloc[np.random.default_rng(seed).permutation(len(out))].reset_index(drop=True)


@pytest.fixture(scope="module")
def busy():
    corpus = synthesize(busy=True, n_problems=10, seed=3).corpus
    for column in ("problem", "test", "solution"):
        corpus[column] = corpus[column].astype(str)
    return corpus


def test_calibration_audit_figures_do_not_depend_on_names(busy):
    audits = [run_calibration_audit(frame, source="busy", target="quiet", n_boot=200, n_boot_rank=30)
              for frame in (busy, renamed(busy)[0])]
    figures = [_figures(a, ci=False) + _figures(a, ci=True) for a in audits]
    intervals = [v for p, v in figures[0] if "ci" in p.rsplit("/", 1)[-1] and isinstance(v, float)]
    assert sum(np.isfinite(intervals)) >= 20
    _same(*figures, rel=1e-9)
    ba = [a.to_dict()["bland_altman"]["calibrated"]["bias"] for a in audits]
    assert ba[0]["ci_low"] < ba[0]["ci_high"]  # a real interval
    assert ba[0]["ci_low"] == pytest.approx(ba[1]["ci_low"], rel=1e-9)


def test_campaign_drift_does_not_depend_on_problem_names():
    corpus = synthesize(n_problems=10, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053), ("c2", 0.6, 0.05))).corpus
    corpus["problem"] = corpus["problem"].astype(str)
    a, b = (campaign_drift(frame, anchor="c0", n_boot=200) for frame in (corpus, _one_problem_renamed(corpus)))
    assert np.isfinite(a["ci_low"].to_numpy(float)).all() and np.isfinite(a["change_low"].to_numpy(float)[2:]).all()
    for column in ("estimate", "ci_low", "ci_high", "change", "change_low", "change_high"):
        np.testing.assert_allclose(a[column].to_numpy(float), b[column].to_numpy(float), rtol=1e-12, atol=1e-15,
                                   err_msg=column)
