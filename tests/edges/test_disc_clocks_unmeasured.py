"""The clocks audit reads the figures the reliability and discriminability audits read, by the same rules.

Its table puts each run's rank drift (mean sd of 100*q across repeats) and strong-weak gap under each clock
"side by side" with what the other audits report. Two rules of theirs were missing:

* a problem whose every correct-reference execution timed out is not measured (its references all score
  100 in every repeat): the other audits leave it out; the clocks audit averaged in its rank sd of 0 and its
  gap of 0, so a run with half its problems timed out read half the gap and half the drift;
* with one repeat per cell the rank sd is not measured (the reliability audit's mean_rank_sd is n/a); the
  clocks audit reported 0.0 for both clocks and then recommended the clock "not less noisy" on it.

Planted: 4 problems, 3 tests, 5 references whose speeds differ by 30 % steps, 3 repeats; the hand-worked gap
of a perfectly ordered problem of 5 references (k = 1 fastest and slowest, each scored against the 4 others):
100 * (4/4 - 0/4) = 100 points.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import speedaudit
from audits.checks.clocks import run_clocks_audit
from audits.corpus.io import normalize


def _corpus(*, repeats: int = 3, timed_out: tuple[str, ...] = ()) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for p in ("p0", "p1", "p2", "p3"):
        for t in range(3):
            for s in range(5):
                for r in range(repeats):
                    d = 0.2 * (1 + t) * 1.3 ** s * np.exp(rng.normal(0, 0.01))
                    rows.append({"environment": "e", "campaign": "c", "problem": p, "test": f"t{t}",
                                 "solution": f"s{s}", "repeat": r, "duration_s": d, "cpu_s": 0.95 * d,
                                 "status": "timeout" if p in timed_out else "ok", "role": "reference",
                                 "correct": True, "test_kind": "optimization"})
    return normalize(pd.DataFrame(rows))


def _row(audit, measure="duration_s"):
    t = audit.table
    return t.loc[t["measure"] == measure].iloc[0]


def test_timed_out_problems_are_left_out():
    corpus = _corpus(timed_out=("p2", "p3"))
    clocks = run_clocks_audit(corpus, n_boot=20)
    disc = speedaudit.run_audit("discriminability", corpus, n_boot=20)
    rel = speedaudit.run_audit("reliability", corpus, n_boot=20)
    (d,), (r,) = disc.runs.values(), rel.runs.values()
    for measure in ("duration_s", "cpu_s"):
        row = _row(clocks, measure)
        assert row["strong_weak_gap"] == pytest.approx(100.0), row  # hand-worked: the measured problems only
        assert row["strong_weak_gap"] == pytest.approx(d.gap.gap.estimate)
    assert _row(clocks)["mean_rank_sd"] == pytest.approx(r.drift.mean_sd.estimate)
    # the same figures as on the corpus without the timed-out problems
    alone = run_clocks_audit(corpus.loc[corpus["problem"].isin(["p0", "p1"])].reset_index(drop=True), n_boot=20)
    for column in ("strong_weak_gap", "mean_rank_sd", "filterable_share"):
        assert _row(clocks)[column] == pytest.approx(_row(alone)[column]), column


def test_one_repeat_has_no_rank_sd():
    audit = run_clocks_audit(_corpus(repeats=1), n_boot=20)
    for measure in ("duration_s", "cpu_s"):
        assert math.isnan(_row(audit, measure)["mean_rank_sd"])
    rel = speedaudit.run_audit("reliability", _corpus(repeats=1), n_boot=20)
    assert {f.metric: f.level for f in rel.findings}["mean_rank_sd"] == "n/a"
    (finding,) = audit.findings
    assert "not less noisy" not in finding.message, finding.message


def test_a_run_of_timeouts_is_not_the_quietest():
    good = _corpus()
    dead = _corpus(timed_out=("p0", "p1", "p2", "p3")).assign(campaign="dead")
    good["load_1m"], dead["load_1m"] = 2.0, 0.1  # the run with nothing timed had the idler machine
    audit = run_clocks_audit(normalize(pd.concat([good, dead], ignore_index=True)), n_boot=20)
    assert audit.quietest == ("e", "c")
    (finding,) = audit.findings
    assert finding.level == "pass", finding
