"""A coarse clock's ties are not a quiet sandbox: the median repeat CV is n/a, not pass, when they decide it.

Planted truth: programs of about 20 ms whose repeats vary with a CV of 15 % (lognormal noise, sd of log 0.15):
the reward profile's limits (warn >= 0.12, fail >= 0.25) warn. Timed by a clock of 20 ms resolution (every
duration a multiple of the tick, as /usr/bin/time's 10 ms or Windows' 15.6 ms give), most cells read three
identical repeats, a CV of 0, and the median repeat CV read 0.0 % "pass" for that noisy sandbox. Now a tied cell
counts as "below one step of the clock" (its CV below step / mean, the step read from the corpus's own repeats),
and when the median with the tied cells at that bound is judged otherwise than with them at 0 the finding is n/a
with that reason. Checked at programs of 20 ns (clock of 20 ns) and of 10 s (clock of 10 s): the same verdict; on
a shuffled, renamed copy: the same; a deterministic measure (every cell's repeats equal, no step in any cell)
keeps its pass, and the fine clock keeps the planted warn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.declared.reliability import ReliabilityThresholds
from audits.checks.reliability import run_reliability_audit
from audits.corpus.table import normalize
from tests.edges.coarse_clock_corpora import on_clock, reference_grid, reliability_in_partitions

TICK = 0.02
SIGMA = 0.15  # sd of log duration: a CV of sqrt(exp(0.15^2) - 1) = 15.1 %


def _corpus(seed: int = 0, sigma: float = SIGMA) -> pd.DataFrame:
    return reference_grid(lambda s, t: 0.02 * (1 + 0.05 * s) * (1 + 0.02 * t), seed=seed, sigma=sigma)


def _finding(frame: pd.DataFrame):
    audit = run_reliability_audit(normalize(frame), n_boot=20)
    return next(f for f in audit.findings if f.metric == "median_repeat_cv")


def _cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Per cell, computed here with pandas: the ok values' sd, mean and smallest positive step."""
    def step(v):
        d = np.diff(np.sort(v.to_numpy()))
        d = d[d > 0]
        return d.min() if len(d) else np.nan
    g = frame.groupby(["problem", "test", "solution"])["duration_s"]
    return pd.DataFrame({"sd": g.std(ddof=1), "mean": g.mean(), "step": g.apply(step)})


def test_the_fine_clock_warns_as_planted():
    level = _finding(_corpus()).level
    assert level == "warn"


@pytest.mark.parametrize("scale", [1.0, 1e-6, 500.0])
def test_ties_of_a_coarse_clock_are_not_judged(scale):
    frame = _corpus()
    frame["duration_s"] *= scale
    ticked = on_clock(frame, TICK * scale)
    cells = _cells(ticked)
    tied = (cells["sd"] == 0).sum()
    assert tied > len(cells) / 2  # the ties decide the median: it read 0.0 % (pass) before
    found = _finding(ticked)
    assert found.level == "n/a", (found.level, found.value, found.message)
    step = cells["step"].min()
    assert np.isclose(step, TICK * scale, rtol=1e-6)
    assert f"{step:.3g} s" in found.message and f"{tied:,} of {len(cells):,} cells" in found.message


def test_a_shuffled_renamed_copy_reads_the_same():
    ticked = on_clock(_corpus(), TICK)
    base = _finding(ticked)
    other = ticked.sample(frac=1.0, random_state=3).reset_index(drop=True)
    names = sorted(other["problem"].unique())
    other["problem"] = other["problem"].map({n: f"\u00e9\u0301{'z' * (9 - i)}\U0001F600 {n}"
                                             for i, n in enumerate(names)})
    found = _finding(other)
    assert (found.level, found.message) == (base.level, base.message)


def test_a_deterministic_measure_keeps_its_pass():
    frame = _corpus()
    # every cell's repeats equal (instruction counts): no step in any cell, the CV of 0 is the truth
    frame["duration_s"] = frame.groupby(["problem", "test", "solution"])["duration_s"].transform("median")
    assert _cells(frame)["step"].isna().all()
    assert _finding(frame).level == "pass"


def test_partitions_of_problems_read_the_same():
    """The audit's partition steps (what the Dask engine runs on each partition) over partitions of two problems
    give the in-memory findings: the clock step is read from whole cells, so no partition sees another's."""
    corpus = normalize(on_clock(_corpus(), TICK))
    options = dict(thresholds=ReliabilityThresholds.for_profile("benchmark"), n_boot=20, seed=0,
                   target_reliability=0.9, target_precision=0.05, max_pairs=200_000)
    split = reliability_in_partitions(corpus, **options)
    memory = run_reliability_audit(corpus, **options)
    assert [(f.metric, f.level, f.message) for f in split.findings] == \
        [(f.metric, f.level, f.message) for f in memory.findings]
    assert any(f.metric == "median_repeat_cv" and f.level == "n/a" for f in split.findings)
