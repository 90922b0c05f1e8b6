"""A coarse timer ties everywhere: the aggregation audit must not read the row order.

Found on synthetic corpora with their durations rounded to a timer's resolution (1 ms on programs of 2-5 ms,
10 ms on programs of 50-500 ms): the same rows in another order gave another audit. On the first the
recommended aggregator changed (heaviest_pct became total_pct) and the default's verdict with it (pass became
warn); on the second 90 figures of the JSON moved. Six aggregators read the order:

* ``heaviest_pct`` took "the first such row on ties" when two tests had the same reference median, and
  ``heavy_half_pct`` cut its ceil(T/2) heaviest tests inside a tied block by row order;
* ``total_pct`` ranked float sums unsnapped: 0.1 + 0.2 + 0.3 in one row order is not 0.3 + 0.2 + 0.1 in
  another, so a solution whose durations equal a reference's tied it or not by the order of the rows
  (stats._ties rule 1: every score is snapped before it is ranked);
* ``robust_z``, ``log_ratio`` and ``slope`` sum signed terms: a unit whose terms cancel exactly scored 0 in one
  row order and 5.6e-17 in another, which snap (relative to the value) cannot merge, and the two rank apart.
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from stats.aggregation import AGGREGATORS, aggregate
from stats.ranking import percentile_table, reference_pools

N_BOOT = 40


def _rows(durations: dict, order: list) -> pd.DataFrame:
    """One problem, tests a, b, c; ``durations[solution] = (a, b, c)``; rows in ``order`` of (solution, test)."""
    rows = [dict(problem="p", test=t, solution=s, repeat=0, duration_s=durations[s]["abc".index(t)], status="ok",
                 role="candidate" if s.startswith("x") else "reference", correct=True, test_kind="optimization",
                 timeout_s=10.0) for s, t in order]
    return pd.DataFrame(rows)


def _scores(runs: pd.DataFrame, name: str) -> dict:
    pools = reference_pools(runs)
    cells = percentile_table(runs, per_repeat=True, pools=pools)
    out = aggregate(cells, pools, name=name)
    return dict(zip(out["solution"].astype(str), out["score"]))


ORDERS = {"forward": lambda sols: [(s, t) for s in sols for t in "abc"],
          "backward": lambda sols: [(s, t) for s in sols[::-1] for t in "cba"]}


def test_tests_tied_at_the_heaviest_share_it():
    # tests a and b have the same reference median (4 ms), c is lighter (2 ms)
    durations = {"r1": (0.004, 0.004, 0.001), "r2": (0.003, 0.003, 0.002), "r3": (0.005, 0.005, 0.003),
                 "x": (0.0035, 0.0045, 0.0015)}
    r_a, r_b = 100 / 3, 200 / 3  # x beats two of the three references on a, one on b
    for order, make in ORDERS.items():
        got = _scores(_rows(durations, make(list(durations))), "heaviest_pct")["x"]
        assert got == pytest.approx((r_a + r_b) / 2, rel=1e-12), order


def test_heavy_half_splits_a_tie_straddling_its_cut():
    # medians a 4 ms, b and c 3 ms: the heavy half (ceil(3/2) = 2 tests) is a and half of each of b and c
    durations = {"r1": (0.004, 0.003, 0.003), "r2": (0.005, 0.002, 0.002), "r3": (0.003, 0.004, 0.004),
                 "x": (0.0035, 0.0045, 0.0025)}
    r_a, r_b, r_c = 100 / 3, 100.0, 100 / 3
    for order, make in ORDERS.items():
        got = _scores(_rows(durations, make(list(durations))), "heavy_half_pct")["x"]
        assert got == pytest.approx((r_a + (r_b + r_c) / 2) / 2, rel=1e-12), order


def test_equal_totals_tie_whatever_the_row_order():
    # x's durations are r1's: their totals are equal as decimals, but 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1 as floats
    durations = {"r1": (0.1, 0.2, 0.3), "r2": (0.2, 0.3, 0.4), "r3": (0.05, 0.1, 0.1), "x": (0.1, 0.2, 0.3)}
    assert 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1
    exact = {s: sum(Fraction(str(v)) for v in d) for s, d in durations.items()}
    below = sum(exact[r] < exact["x"] for r in ("r1", "r2", "r3"))
    tied = sum(exact[r] == exact["x"] for r in ("r1", "r2", "r3"))
    want = 100 * (below + 0.5 * tied) / 3
    for order, make in ORDERS.items():
        assert _scores(_rows(durations, make(list(durations))), "total_pct")["x"] == pytest.approx(want, rel=1e-12), order


def _audit(corpus) -> dict:
    out = run_aggregation_audit(corpus, n_boot=N_BOOT).to_dict()
    return json.loads(json.dumps(out))


def _coarse(resolution_s: float, **spec) -> pd.DataFrame:
    corpus = synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.1, seed=7, **spec).corpus
    corpus["duration_s"] = np.round(corpus["duration_s"] / resolution_s) * resolution_s
    return corpus


def _shuffled(corpus: pd.DataFrame) -> pd.DataFrame:
    return corpus.iloc[np.random.default_rng(1).permutation(len(corpus))].reset_index(drop=True)


MILLISECOND = dict(resolution_s=1e-3, base_seconds=(0.002, 0.005), floor_s=0.001)  # programs of 2-5 ms


@pytest.mark.parametrize("name", sorted(AGGREGATORS))
def test_every_score_is_the_same_in_every_row_order(name):
    """Signed scores (robust_z, log_ratio, slope) that cancel to 0 on a coarse timer came out as 0 in one row order
    and +-3e-17 in another, which rank apart (snap rounds relative to the value and cannot merge two zeros)."""
    corpus = _coarse(**MILLISECOND)
    runs = corpus.loc[(corpus["role"].astype(str) != "floor").to_numpy()].reset_index(drop=True)
    got = []
    for rows in (runs, _shuffled(runs)):
        pools = reference_pools(rows)
        for per_repeat in (True, False):
            scores = aggregate(percentile_table(rows, per_repeat=per_repeat, pools=pools), pools, name=name)
            got.append(scores.set_index([c for c in ("problem", "solution", "repeat") if c in scores.columns])
                       ["score"].sort_index())
    for one, other in ((got[0], got[2]), (got[1], got[3])):
        assert one.index.equals(other.index)
        same = (one.to_numpy() == other.to_numpy()) | (np.isnan(one.to_numpy()) & np.isnan(other.to_numpy()))
        assert same.all(), one[~same].head()


@pytest.mark.parametrize("coarse", [MILLISECOND, dict(resolution_s=0.01)], ids=["1ms", "10ms"])
def test_a_coarse_timer_gives_one_audit_in_every_row_order(coarse):
    corpus = _coarse(**coarse)
    assert corpus["duration_s"].nunique() < 80  # ties on every test
    assert _audit(_shuffled(corpus)) == _audit(corpus)
