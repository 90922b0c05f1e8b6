"""The ICC and the significant share are not judged when a clock's step decides them.

Planted truth: six solutions per test, spaced by a fraction of the clock's step, with repeat noise below a step.
Timed by a fine clock their ICC(A,1) and the share of significantly ordered pairs pass. Read on a clock whose step
is comparable to the spread between the solutions, the values of a test fall on a few ticks: a program near a tick's
edge flips between two ticks and one in the middle of a tick ties, so the ICC of the clock's values is judged
otherwise than the planted one (pingouin computes both here), and most pairs of solutions tie and leave the share to
the few that a tick separates. Both findings were judged as if the clock were fine (ICC "warn", share "pass" over
the pairs that did not tie); now the ICC is n/a when the clock's rounding variance, taken out of or put into each
test's repeat noise, moves its median across a limit, and the share is n/a when the tied pairs, all significant or
none, would move it across one. The rule is relative to the durations: nanosecond and ten-second programs, and
every duration times 1e6, give the same verdicts; a clock whose step is small next to the solutions' spread (or a
fine clock) keeps both judged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin
import pytest

from audits.checks.declared.reliability import ReliabilityThresholds
from audits.checks.reliability import run_reliability_audit
from audits.corpus.table import normalize
from tests.edges.coarse_clock_corpora import on_clock, reference_grid, reliability_in_partitions

# pingouin 0.7 calls DataFrame.dropna(inplace=True), which pandas deprecates; not this project's code
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.dropna")


def _grid(base: float, tick: float, *, spacing: float, noise: float, seed: int = 0) -> pd.DataFrame:
    """Programs of about ``base`` seconds, solutions ``spacing`` ticks apart, repeat noise of ``noise`` ticks
    (sd of log duration), tests 2 % apart."""
    r = tick / base
    return reference_grid(lambda s, t: base * (1 + spacing * r * s) * (1 + 0.02 * t), sigma=noise * r, seed=seed)


def _found(frame: pd.DataFrame, *, scale: float = 1.0) -> dict:
    corpus = normalize(frame)
    corpus["duration_s"] = corpus["duration_s"] * scale  # scaled after loading: ten-second programs x 1e6
    return {f.metric: f for f in run_reliability_audit(corpus, n_boot=20).findings}


def _pingouin_icc(frame: pd.DataFrame) -> float:
    """The median over tests of pingouin's ICC2 (ICC(A,1)) of log duration, solutions x repeats."""
    values = []
    for _, table in frame.assign(y=np.log(frame["duration_s"])).groupby(["problem", "test"]):
        icc = pingouin.intraclass_corr(table, targets="solution", raters="repeat", ratings="y")
        values.append(float(icc.set_index("Type").loc["ICC(A,1)", "ICC"]))
    values = np.asarray(values)
    return float(np.median(values[np.isfinite(values)]))


def _judge_icc(value: float) -> str:
    """ReliabilityThresholds' default ICC limits (docs/reliability.md: warn <= 0.9, fail <= 0.75)."""
    return "fail" if value <= 0.75 else "warn" if value <= 0.9 else "pass"


@pytest.mark.parametrize(("base", "tick"), [(1e-8, 1e-9), (0.02, 0.002), (10.0, 0.01)])
def test_an_icc_the_clock_decides_is_not_judged(base, tick):
    fine = _grid(base, tick, spacing=0.3, noise=0.1)
    coarse = on_clock(fine, tick)
    planted, read = _pingouin_icc(fine), _pingouin_icc(coarse)
    assert _judge_icc(planted) == "pass" and _judge_icc(read) != "pass", (planted, read)  # the clock moved it
    assert _found(fine)["icc"].level == "pass"
    found = _found(coarse)
    assert found["icc"].level == "n/a", (found["icc"].level, found["icc"].message)
    assert f"{tick:.3g} s" in found["icc"].reason and "rounding variance" in found["icc"].reason
    assert _found(coarse, scale=1e6)["icc"].level == "n/a"
    assert {m: f.level for m, f in _found(coarse, scale=1e6).items()} == {m: f.level for m, f in found.items()}


@pytest.mark.parametrize("scale", [1e-6, 1.0, 500.0])
def test_a_share_over_the_few_untied_pairs_is_not_judged(scale):
    base, tick = 0.02 * scale, 0.01 * scale  # 20 ns, 20 ms and 10 s programs; clocks of 10 ns, 10 ms and 5 s
    fine = _grid(base, tick, spacing=0.1, noise=0.04)
    coarse = on_clock(fine, tick)
    medians = coarse.groupby(["problem", "test", "solution"])["duration_s"].median()
    tied = sum(int(np.sum(np.triu(v.to_numpy()[:, None] == v.to_numpy()[None, :], 1)))
               for _, v in medians.groupby(level=["problem", "test"]))
    assert tied > 0.5 * 18 * 15  # most of the 15 pairs of each of the 18 tests read one median duration
    assert _found(fine)["significant_share"].level == "pass"
    found = _found(coarse)
    share = found["significant_share"]
    assert share.level == "n/a", (share.level, share.message)
    assert "pairs of references tie" in share.reason and f"{tick:.3g} s" in share.reason
    assert {m: f.level for m, f in _found(coarse, scale=1e6).items()} == {m: f.level for m, f in found.items()}


@pytest.mark.parametrize(("base", "tick"), [(1e-8, 1e-9), (10.0, 0.01)])
def test_a_clock_finer_than_the_spread_between_programs_keeps_both_judged(base, tick):
    """Solutions ten steps apart, noise below a step: the clock separates the programs, so its ICC and share are
    judged (as pingouin's ICC of the same values reads)."""
    coarse = on_clock(_grid(base, tick, spacing=10.0, noise=0.1), tick)
    found = _found(coarse)
    assert found["icc"].level == _judge_icc(_pingouin_icc(coarse)) == "pass"
    assert found["significant_share"].level == "pass"


def test_partitions_of_problems_read_the_same():
    """The partition steps (what the Dask engine runs) over partitions of two problems give the in-memory findings:
    the step, the rounding variance and the tied pairs are read from whole problems."""
    corpus = normalize(on_clock(_grid(0.02, 0.01, spacing=0.1, noise=0.04), 0.01))
    options = dict(thresholds=ReliabilityThresholds(), n_boot=20, seed=0, target_reliability=0.9,
                   target_precision=0.05, max_pairs=200_000)
    split = reliability_in_partitions(corpus, **options)
    memory = run_reliability_audit(corpus, **options)
    assert [(f.metric, f.level, f.message) for f in split.findings] == \
        [(f.metric, f.level, f.message) for f in memory.findings]
    assert {f.metric for f in split.findings if f.level == "n/a"} >= {"icc", "significant_share"}
