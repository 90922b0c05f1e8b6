"""A run whose every test reads one duration is not a quiet sandbox: nothing of its repeats or its order is judged.

Planted truth: six solutions per test, each repeat varying by a small fraction of the clock's step. Read on that
clock every duration of a test is one value (all solutions, all repeats). No step between two values is seen within
a test, so the coarse-clock rule (the smallest step bounds a tied cell's CV, cf0c797) has nothing to bound: with
every duration the same, or the tests a step apart on durations a thousand steps long, the median repeat CV read
0.0 % "pass", the rank drift 0 "pass" and repeats_needed "pass", and with every duration exactly 0 (a frame may
hold a coarse timer's zeros) the CV said "no cell has two ok repeats" and the drift passed. Now every repeat-based
finding is n/a, saying that the clock does not tell the repeats or the programs apart. Checked on nanosecond and
ten-second programs and with every duration times 1e6 (the same verdicts).
"""

from __future__ import annotations

import pandas as pd
import pytest

from audits.checks.declared.reliability import ReliabilityThresholds
from audits.checks.reliability import run_reliability_audit
from audits.corpus.table import normalize
from tests.edges.coarse_clock_corpora import on_clock, reference_grid

BLIND = ("median_repeat_cv", "mean_rank_sd", "mean_rank_range", "p95_rank_range", "icc", "significant_share",
         "repeats_needed")
PYPERF = ("unstable_share", "outlier_share", "too_few_processes_share")
SAID = "does not tell the repeats or the programs apart"


def _levels(corpus: pd.DataFrame, profile: str = "reward") -> dict:
    audit = run_reliability_audit(corpus, n_boot=20, thresholds=ReliabilityThresholds.for_profile(profile))
    return {f.metric: f for f in audit.findings}


def _one_value_per_test(base: float, tick: float, *, by_test: float) -> pd.DataFrame:
    """Programs of about ``base`` seconds on a clock of resolution ``tick``: solutions 1 % of a tick apart, noise
    a hundredth of a tick, tests ``by_test`` ticks apart; every test reads one value on that clock."""
    r = tick / base
    frame = reference_grid(lambda s, t: base * (1 + 0.01 * r * s) * (1 + by_test * r * t), sigma=0.01 * r)
    return normalize(on_clock(frame, tick))


def _assert_one_value_per_test(corpus: pd.DataFrame) -> None:
    per_test = corpus.groupby(["problem", "test"], observed=True)["duration_s"].nunique()
    assert (per_test == 1).all()


def _assert_blind(found: dict, metrics=BLIND) -> None:
    for metric in metrics:
        assert found[metric].level == "n/a", (metric, found[metric].level, found[metric].message)
        # the ICC and the share keep their own reasons when they have one (constant durations, every pair tied)
        assert SAID in found[metric].reason or metric in ("icc", "significant_share"), (metric, found[metric].reason)


@pytest.mark.parametrize(("base", "tick"), [(1e-8, 1e-9), (0.02, 0.001), (10.0, 0.01)])
def test_every_duration_one_value_is_not_judged(base, tick):
    corpus = _one_value_per_test(base, tick, by_test=0.0)
    assert corpus["duration_s"].nunique() == 1  # every duration of the run is one value: no step to read
    found = _levels(corpus)
    _assert_blind(found)
    assert f"{corpus['duration_s'].iloc[0]:.3g} s" in found["median_repeat_cv"].reason
    scaled = corpus.assign(duration_s=corpus["duration_s"] * 1e6)
    assert {m: f.level for m, f in _levels(scaled).items()} == {m: f.level for m, f in found.items()}


@pytest.mark.parametrize(("base", "tick"), [(1e-8, 1e-9), (1.0, 0.001), (10.0, 0.01)])
def test_every_test_one_value_is_not_judged(base, tick):
    corpus = _one_value_per_test(base, tick, by_test=1.0)
    _assert_one_value_per_test(corpus)
    assert corpus["duration_s"].nunique() == 3  # the tests differ by one step: a step is seen between tests only
    found = _levels(corpus)
    _assert_blind(found)
    assert "18 optimization tests" in found["median_repeat_cv"].reason  # 6 problems x 3 tests, each one value
    scaled = corpus.assign(duration_s=corpus["duration_s"] * 1e6)
    assert {m: f.level for m, f in _levels(scaled).items()} == {m: f.level for m, f in found.items()}


def test_the_benchmark_profile_says_so_too():
    found = _levels(_one_value_per_test(1.0, 0.001, by_test=1.0), profile="benchmark")
    _assert_blind(found, ("median_repeat_cv",) + PYPERF)


def test_every_duration_zero_is_not_judged():
    corpus = _one_value_per_test(0.02, 0.001, by_test=0.0)
    corpus["duration_s"] = 0.0  # a coarse timer's zeros, in a frame (the loader refuses them in a file)
    found = _levels(corpus)
    _assert_blind(found)
    assert "reads 0 s" in found["median_repeat_cv"].reason


def test_one_test_that_separates_the_programs_is_judged():
    """The rule needs every test to read one value: a run with one test whose programs differ by steps keeps its
    findings to the other rules (this one: a clock step between solutions, read from the values)."""
    corpus = _one_value_per_test(1.0, 0.001, by_test=1.0)
    corpus = corpus.astype({"duration_s": float})
    spread = (corpus["problem"] == "p0").to_numpy() & (corpus["test"] == "t0").to_numpy()
    corpus.loc[spread, "duration_s"] += 0.001 * corpus.loc[spread, "solution"].str[1:].astype(int).to_numpy()
    found = _levels(corpus)
    assert all(SAID not in (found[m].reason or "") for m in BLIND)


def test_a_deterministic_measure_of_one_build_per_test_keeps_its_pass():
    """One solution per problem (a pyperf import of one build: every test one value), counted by a deterministic
    measure whose values differ between tests by a tiny step: the clock's step is read between the tests' values
    and the CV of 0 stands (cf0c797's rule), as it did before."""
    frame = reference_grid(lambda s, t: 0.02 * (1 + 0.02 * t), sigma=0.05)
    frame = frame.loc[frame["solution"] == "s0"].copy()
    frame["duration_s"] = frame.groupby(["problem", "test"])["duration_s"].transform("median")
    corpus = normalize(frame)
    _assert_one_value_per_test(corpus)
    assert corpus["duration_s"].nunique() == 18
    found = _levels(corpus)
    assert found["median_repeat_cv"].level == "pass"
    assert all(SAID not in (f.reason or "") for f in found.values())
