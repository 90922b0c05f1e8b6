"""Ties and order (issue 24, item 8): one rounding before any ranking, cuts by value, one key for the primary run.

* Two references whose ranking score is exactly 250/3 -- (75 + 91.67) / 2 and (83.33 + 83.33) / 2 -- tie in the
  strong-weak gap's ranking (averaging already-rounded per-repeat q and rounding again split them into
  83.3333333333 and 83.3333333334, so one took the whole tail slot).
* The ranked-worst limit's "fastest 80 %" cut: references tied in q at the cut are in together when at least
  half of them fit, else out together -- swapping their names changes no limit.
* The aggregation audit's ``primary`` run and the tables shown with it come from one key, whatever the
  order of the categories.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from stats._ties import snap
from stats.discriminability import strong_weak_gap
from stats.ranking import problem_scores
from stats.rewards import Environment, apply_environment

# per reference: (ranking repeats 0 and 2: per-test percentiles), scoring repeats 1 and 3: one percentile
REFS = {
    "F": ([[0, 0, 0], [0, 0, 0]], 5.0),
    "A": ([[75, 75, 75], [100, 100, 75]], 20.0),      # q 0.75 then 0.91666...: mean 250/3 points
    "B": ([[100, 75, 75], [75, 100, 75]], 80.0),      # q 0.8333... twice: mean 250/3 points
    **{f"S{i}": ([[95 + i] * 3, [95 + i] * 3], 90.0 + i) for i in range(5)},
}


def _scores() -> pd.DataFrame:
    rows = []
    for solution, (ranking, scoring) in REFS.items():
        for repeat in range(4):
            pcts = ranking[repeat // 2] if repeat % 2 == 0 else [scoring] * 3
            for t, pct in enumerate(pcts):
                rows.append({"problem": "p", "solution": solution, "repeat": repeat, "test": f"t{t}",
                             "percentile": float(pct), "status": "ok", "test_kind": "optimization"})
    return problem_scores(pd.DataFrame(rows), by=["problem", "solution", "repeat"])


def test_two_references_at_exactly_250_over_3_share_the_tail():
    scores = _scores()
    ranking = scores[scores["repeat"].isin([0, 2])]
    # the case is real: averaging the rounded q and rounding again splits the two
    twice = ranking.groupby("solution")["q"].mean().mul(100).pipe(lambda s: pd.Series(snap(s.to_numpy()), s.index))
    assert twice["A"] != twice["B"]
    gap = strong_weak_gap(scores, n_boot=0).per_problem.iloc[0]
    # 8 references, k = 2: F, then A and B share the second slot (weight 1/2 each)
    assert gap["fast_mean"] == pytest.approx((5.0 + 0.5 * 20.0 + 0.5 * 80.0) / 2, abs=1e-9)
    assert gap["slow_mean"] == pytest.approx((94.0 + 93.0) / 2, abs=1e-9)
    # the rounding once: without the unrounded column (the old path) the tie is broken, one takes the slot
    old = strong_weak_gap(scores.drop(columns="q_unrounded"), n_boot=0).per_problem.iloc[0]
    assert old["fast_mean"] != pytest.approx(gap["fast_mean"], abs=1e-6)
    # and names do not decide: A and B swapped, the same gap
    swapped = scores.assign(solution=scores["solution"].replace({"A": "B", "B": "A"}))
    assert strong_weak_gap(swapped, n_boot=0).per_problem.iloc[0]["gap"] == pytest.approx(gap["gap"], abs=1e-12)


def _limit_corpus(durations: dict[str, list[float]]) -> pd.DataFrame:
    rows = [{"problem": "p", "test": f"t{t}", "solution": s, "repeat": 0, "duration_s": d, "status": "ok",
             "role": "reference", "correct": True, "test_kind": "optimization"}
            for s, ds in durations.items() for t, d in enumerate(ds)]
    return pd.DataFrame(rows)


def _limits(corpus: pd.DataFrame, percent: float) -> list[float]:
    env = Environment.from_dict({"name": "rw", "limit": {"kind": "ranked_worst", "fastest_percent": percent},
                                 "post": {"tau": 100}})
    tests = apply_environment(corpus, env).tests.sort_values("test")
    return tests["limit_s"].tolist()


@pytest.mark.parametrize("swap", [False, True])
def test_ranked_worst_cut_keeps_a_tie_that_half_fits(swap):
    # 5 references, fastest 80 %: 4 slots. r4 and r5 tie in q (87.5 each, through opposite tests) in slots 4-5:
    # half of the block fits, so both are in and each test's limit is the slowest of all five.
    durations = {"r1": [1.0, 1.0], "r2": [2.0, 2.0], "r3": [3.0, 3.0], "r4": [5.0, 4.0], "r5": [4.0, 5.0]}
    if swap:
        durations["r4"], durations["r5"] = durations["r5"], durations["r4"]
    assert _limits(_limit_corpus(durations), 80) == [5.0, 5.0]


@pytest.mark.parametrize("order", [(3.0, 4.0, 5.0), (5.0, 4.0, 3.0)])
def test_ranked_worst_cut_drops_a_tie_that_does_not_half_fit(order):
    # 6 references, fastest 50 %: 3 slots. r3, r4, r5 tie in q (60 each: 40/60/80 in rotation) in slots 3-5:
    # one of three fits, so none is in and the limits come from r1 and r2 alone.
    a, b, c = order
    durations = {"r1": [1.0] * 3, "r2": [2.0] * 3, "r3": [a, b, c], "r4": [b, c, a], "r5": [c, a, b],
                 "r6": [9.0] * 3}
    assert _limits(_limit_corpus(durations), 50) == [2.0, 2.0, 2.0]


def test_aggregation_primary_and_its_tables_follow_one_key():
    corpus = synthesize(n_problems=5, n_tests=3, n_solutions=6, n_repeats=3,
                        campaigns=(("c0", 1.0, 0.0), ("c1", 0.8, 0.01)), seed=4).corpus
    corpus = corpus.loc[corpus["environment"] == "quiet"].copy()
    reversed_ = corpus.iloc[::-1].copy()
    reversed_["campaign"] = reversed_["campaign"].astype("category").cat.reorder_categories(["c1", "c0"])
    outs = [run_aggregation_audit(c, n_boot=20).to_dict() for c in (corpus, reversed_)]
    for out in outs:
        primary = out["primary"]
        assert primary == {"environment": "quiet", "campaign": "c0"}  # equal problem counts: the first by name
        shown = out["environments"]["quiet"]["c0"]
        assert out["aggregators"] == shown["aggregators"] and out["recommended"] == shown["recommended"]
    assert outs[0]["aggregators"] == outs[1]["aggregators"]
    assert np.isfinite(outs[0]["aggregators"]["mean_pct"]["stability"])
