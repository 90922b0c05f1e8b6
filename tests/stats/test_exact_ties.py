"""Equal rationals compare equal (DESIGN.md, "Set semantics"; stats._ties).

The case from issue 16: two units whose q is exactly 1/18, reached through different test sets
(pool sizes 2, 2, 3 with half-ranks 0, 0, 1; pool sizes 2, 9, 9 with half-ranks 0, 1, 2). Plain float
means give 0.05555555555555556 and 0.055555555555555546 and rank the units 2 and 1; q must be equal and
every rank-based estimator downstream must see a tie.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from stats._ties import snap, tail_weights
from stats.aggregation import aggregate
from stats.discriminability import strong_weak_gap
from stats.ranking import percentile_table, problem_scores, reference_pools
from stats.reliability import pairwise_significance
from stats.simulator import within_group_rank


def _one_eighteenth_corpus() -> pd.DataFrame:
    """Two problems; candidate A (p1) and B (p2) both have q = 1/18 through different pools.

    p1: tests t1, t2 have a pool of 2 references (r3 times out there), t3 a pool of 3; A is faster than
    every reference on t1 and t2 and ties the fastest on t3: percentiles 0, 0, 100*(0.5)/3.
    p2: t1 has a pool of 2 (r3..r9 time out), t2 and t3 a pool of 9; B is fastest on t1, ties the fastest
    on t2 (50/9) and lies between the two fastest on t3 (100/9).
    """
    rows = []

    def add(problem, test, solution, d, role="reference", status="ok"):
        rows.append(dict(problem=problem, test=test, solution=solution, duration_s=d, status=status, role=role,
                         correct=True, test_kind="optimization", repeat=0))

    for test in ("t1", "t2", "t3"):
        for i in (1, 2, 3):
            add("p1", test, f"r{i}", 0.1 * i, status="timeout" if (i == 3 and test != "t3") else "ok")
        for i in range(1, 10):
            add("p2", test, f"r{i}", 0.1 * i, status="timeout" if (i >= 3 and test == "t1") else "ok")
    for test, a, b in (("t1", 0.05, 0.05), ("t2", 0.05, 0.1), ("t3", 0.1, 0.15)):
        add("p1", test, "A", a, "candidate")
        add("p2", test, "B", b, "candidate")
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def scored():
    corpus = _one_eighteenth_corpus()
    table = percentile_table(corpus)
    return corpus, table, problem_scores(table, by=["problem", "solution"])


def test_the_two_units_reach_one_eighteenth_through_different_pools(scored):
    _, table, _ = scored
    cand = table[table.role == "candidate"].sort_values(["solution", "test"])
    expected = {"A": [0.0, 0.0, 100 * 0.5 / 3], "B": [0.0, 100 * 0.5 / 9, 100 * 1.0 / 9]}
    for unit, pct in expected.items():
        got = cand.loc[cand.solution == unit, "percentile"].to_numpy()
        np.testing.assert_allclose(got, pct, rtol=1e-15)
        assert sum(Fraction(p).limit_denominator(1000) for p in pct) / 300 == Fraction(1, 18)
    # The hazard is real: plain float means of these percentiles differ.
    means = {u: cand.loc[cand.solution == u, "percentile"].mean() / 100 for u in expected}
    assert means["A"] != means["B"]


def test_equal_rationals_give_equal_q(scored):
    _, _, scores = scored
    q = scores.set_index("solution")["q"]
    assert q["A"] == q["B"]
    assert q["A"] == pytest.approx(1 / 18, rel=1e-12)


def test_pooled_ranks_of_q_tie_as_scipy_ranks_the_exact_fractions(scored):
    """Spearman-style pooled ranks (percentile agreement ranks q over all units): ours = scipy's on exact q."""
    _, table, scores = scored
    exact = table.assign(f=[Fraction(p).limit_denominator(1000) for p in table.percentile])  # p = 50 h / n exactly
    exact = exact.groupby(["problem", "solution"], observed=True)["f"].agg(lambda s: sum(s) / len(s) / 100)
    truth = np.array([exact[(p, s)] for p, s in zip(scores.problem, scores.solution)], dtype=object)
    want = sps.rankdata(truth, method="average")           # scipy ranking Python Fractions: no float at all
    got = sps.rankdata(scores.q.to_numpy(), method="average")
    np.testing.assert_array_equal(got, want)
    ranks = dict(zip(scores.solution, got))
    assert ranks["A"] == ranks["B"]


def _within_problem_frame():
    """One problem, per-repeat scores: A and B at 1/18 (through the two test sets), C and D elsewhere."""
    pct_a = np.array([0.0, 0.0, 100 * 0.5 / 3])
    pct_b = np.array([0.0, 100 * 0.5 / 9, 100 * 1.0 / 9])
    rows = []
    for rep in range(4):
        for unit, pct in (("A", pct_a), ("B", pct_b), ("C", np.array([60.0, 70.0, 80.0])),
                          ("D", np.array([90.0, 95.0, 100.0 - rep]))):
            for t, p in enumerate(pct):
                rows.append(dict(problem="p", solution=unit, repeat=rep, test=f"t{t}", percentile=p, status="ok",
                                 test_kind="optimization"))
    return problem_scores(pd.DataFrame(rows), by=["problem", "solution", "repeat"])


def test_within_problem_ranks_tie():
    scores = _within_problem_frame()
    first = scores[scores.repeat == 0].reset_index(drop=True)
    u = within_group_rank(np.zeros(len(first), dtype=np.int64), first.q.to_numpy())
    by = dict(zip(first.solution, u))
    assert by["A"] == by["B"] == pytest.approx(1 / 6)   # ranks 1.5 and 1.5 of 4 -> (0.5)/(3)


def test_significance_does_not_test_a_pair_with_equal_medians():
    scores = _within_problem_frame()
    sig = pairwise_significance(scores, n_boot=10)
    pairs = {frozenset((f, s)) for f, s in zip(sig.pairs.faster, sig.pairs.slower)}
    assert frozenset(("A", "B")) not in pairs      # equal medians: no "faster" of the two
    assert len(pairs) == 5                         # every other pair of 4 units has a strict order


def test_strong_weak_gap_shares_a_tied_cut():
    # Four references; the ranking repeats (even positions) tie A and B at the fastest-quartile cut (k = 1).
    scores = _within_problem_frame()
    gap = strong_weak_gap(scores, n_boot=10).per_problem.iloc[0]
    s = scores.groupby(["solution", scores.repeat % 2], observed=True)["q"].mean().unstack()
    # fastest quartile: k=1 slot shared by A and B (tie), each weight 1/2; slowest: D.
    want_fast = 100 * (s.loc["A", 1] + s.loc["B", 1]) / 2
    assert gap["fast_mean"] == pytest.approx(want_fast, rel=1e-12)
    assert gap["slow_mean"] == pytest.approx(100 * s.loc["D", 1], rel=1e-12)


def test_mean_pct_aggregator_scores_the_two_units_equal(scored):
    corpus, table, _ = scored
    pools = reference_pools(corpus)
    out = aggregate(table, pools, by=["problem", "solution"]).set_index("solution")["score"]
    assert out["A"] == out["B"]


def test_snap_and_tail_weights_by_definition():
    assert snap(0.05555555555555556) == snap(0.055555555555555546)
    assert snap(0.1) != snap(0.1 + 1e-9)                        # different values stay different
    low, high = tail_weights(np.array([0, 0, 0, 0, 1, 1]), np.array([1.0, 1.0, 1.0, 2.0, 5.0, 4.0]),
                             np.array([1, 1]))
    np.testing.assert_allclose(low, [1 / 3, 1 / 3, 1 / 3, 0, 0, 1])
    np.testing.assert_allclose(high, [0, 0, 0, 1, 1, 0])
