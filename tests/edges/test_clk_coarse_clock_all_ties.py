"""A clock so coarse that every cell's repeats tie is not a quiet sandbox, and rank drift on tied timings is not
judged.

Planted truth: six solutions of 20, 30, ... 70 ms (per problem and test), each repeat varying by 1 % (lognormal):
a fine clock passes the median repeat CV. Timed by a clock of 10 ms resolution every cell's five repeats read one
value: there is no step between two repeats anywhere, so the rule that reads the clock's step from the repeats
(e786040) kept the CV of 0 as if the measure were deterministic, "pass" at any noise below a tick. The step is now
read from the differences between the cells' values (a multiple of the tick; checked here with numpy on the
planted values), and with every tied cell at step / mean the median is judged otherwise, so the finding is n/a
naming that step. A deterministic measure over many cells (continuous values: a tiny step) keeps its pass.

Rank drift has no such bound: with most cells tied (the coarse clock of tests/edges/test_rel_coarse_clock_ties.py,
a clock of 20 ms on 20 ms programs of 15 % noise) its findings are n/a with the clock's step, while the fine
clock's are judged. Checked on programs of nanoseconds and of ten seconds (the same data scaled, the clock too).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.table import normalize
from tests.edges.coarse_clock_corpora import on_clock, reference_grid

DRIFT = ("mean_rank_sd", "mean_rank_range", "p95_rank_range")


def _corpus(seed=0, sigma=0.01, base=0.02, spacing=0.01, by_test=0.0) -> pd.DataFrame:
    return reference_grid(lambda s, t: (base + spacing * s) * (1 + by_test * t), seed=seed, sigma=sigma)


def _findings(frame: pd.DataFrame) -> dict:
    return {f.metric: f for f in run_reliability_audit(normalize(frame), n_boot=20).findings}


@pytest.mark.parametrize("scale", [1.0, 1e-6, 500.0])
def test_every_cell_tied_on_a_coarse_clock_is_not_judged(scale):
    frame = _corpus()
    frame["duration_s"] *= scale
    assert _findings(frame)["median_repeat_cv"].level == "pass"  # the fine clock: 1 % noise
    ticked = on_clock(frame, 0.01 * scale)
    per_cell = ticked.groupby(["problem", "test", "solution"])["duration_s"]
    assert (per_cell.nunique() == 1).all()  # every cell's repeats tie: no step between two repeats
    values = np.unique(ticked["duration_s"].to_numpy())
    step = np.diff(values).min()
    assert np.isclose(step, 0.01 * scale, rtol=1e-6)
    found = _findings(ticked)
    cv = found["median_repeat_cv"]
    assert cv.level == "n/a", (cv.level, cv.value, cv.message)
    assert f"{step:.3g} s" in cv.reason and "between two values" in cv.reason
    assert all(found[m].level == "n/a" and f"{step:.3g} s" in found[m].reason for m in DRIFT)


def test_a_shuffled_renamed_copy_reads_the_same():
    ticked = on_clock(_corpus(), 0.01)
    base = _findings(ticked)
    other = ticked.sample(frac=1.0, random_state=5).reset_index(drop=True)
    names = sorted(other["solution"].unique())
    other["solution"] = other["solution"].map({n: f"\u05d0{'z' * (9 - i)} {n}" for i, n in enumerate(names)})
    found = _findings(other)
    # levels and the n/a reasons (the messages of judged findings name the worst solution, renamed here)
    assert [(m, f.level, f.reason) for m, f in sorted(found.items())] == \
        [(m, f.level, f.reason) for m, f in sorted(base.items())]
    assert found["median_repeat_cv"].level == "n/a"


def test_a_deterministic_measure_over_many_cells_keeps_its_verdicts():
    frame = _corpus(sigma=0.15, by_test=0.02)
    frame["duration_s"] = frame.groupby(["problem", "test", "solution"])["duration_s"].transform("median")
    values = np.unique(frame["duration_s"].to_numpy())
    assert np.diff(values).min() / values.min() < 0.01  # continuous values: the smallest difference is tiny
    found = _findings(frame)
    assert found["median_repeat_cv"].level == "pass"
    assert all(found[m].level != "n/a" for m in DRIFT)


@pytest.mark.parametrize("scale", [1.0, 1e-6, 500.0])
def test_rank_drift_on_mostly_tied_timings_is_not_judged(scale):
    frame = _corpus(sigma=0.15, base=0.02, spacing=0.001, by_test=0.02)  # test_rel_coarse_clock_ties's programs
    frame["duration_s"] *= scale
    fine = _findings(frame)
    assert all(fine[m].level != "n/a" for m in DRIFT)
    ticked = on_clock(frame, 0.02 * scale)
    cells = ticked.groupby(["problem", "test", "solution"])["duration_s"]
    steps = cells.apply(lambda v: np.diff(np.unique(v.to_numpy())).min() if v.nunique() > 1 else np.nan)
    assert (cells.nunique() == 1).sum() > len(steps) / 2  # most cells tie
    found = _findings(ticked)
    assert found["median_repeat_cv"].level == "n/a"
    step = f"{steps.min():.3g} s"
    assert all(found[m].level == "n/a" and step in found[m].reason and "between two repeats" in found[m].reason
               for m in DRIFT), [(m, found[m].level, found[m].message) for m in DRIFT]
