"""The unit check (durations that look like another unit) and what `validate` summarises."""

from __future__ import annotations

import glob
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import CorpusError, load_corpus, normalize, summarize, unit_warnings

CLI = [sys.executable, "-m", "audits.cli"]


def _corpus(durations, floor=None):
    """Two problems x 2 tests x 2 solutions x len(durations) // 8 repeats, plus optional floor rows."""
    rows = []
    values = iter(durations)
    n = len(durations) // 8
    for p in ("p1", "p2"):
        for t in ("t1", "t2"):
            for s in ("a", "b"):
                for r in range(n):
                    rows.append((p, t, s, next(values), "ok", r, "reference"))
    for r, value in enumerate(floor or []):
        rows.append(("_floor", "empty", "python", value, "ok", r, "floor"))
    return pd.DataFrame(rows, columns=["problem", "test", "solution", "duration_s", "status", "repeat", "role"])


RNG = np.random.default_rng(7)
MS_FLOAT = _corpus(list(RNG.uniform(40.0, 900.0, 24)), floor=[9.9, 10.1, 9.7])       # milliseconds, floor 9.9 ms
MS_INT = _corpus(list(RNG.integers(1200, 5000, 24).astype(float)))                    # whole milliseconds
US_INT = _corpus(list(RNG.integers(20_000, 80_000, 24).astype(float)))                # whole microseconds
NS_INT = _corpus(list(RNG.integers(8_000_000, 20_000_000, 24).astype(float)))         # whole ns: over a day as s
SECONDS = _corpus(list(RNG.uniform(0.04, 0.9, 24)), floor=[0.0099, 0.0101, 0.0097])  # seconds: nothing to say


def test_floor_over_a_second_suggests_the_unit():
    (warning,) = unit_warnings(normalize(MS_FLOAT), source="runs.csv")
    assert warning.startswith("runs.csv: the floor (the empty program, role 'floor') takes a median of 9.9 s")
    assert "--unit ms (the floor would be 0.0099 s)" in warning
    assert unit_warnings(normalize(MS_FLOAT, unit="ms"), unit="ms") == ()


def test_a_counted_floor_over_a_second_is_the_counter_s_start_up_not_another_unit():
    """collect --measure instructions runs the floor under valgrind (1.7 s for Python here): those floor rows
    carry an instruction count and say nothing about the unit; the same floor without counts still warns."""
    counted = _corpus(list(RNG.uniform(2.0, 9.0, 24)), floor=[1.72, 1.69, 1.75])
    counted["instructions"] = np.where(counted["role"] == "floor", 2.9e7, 4.1e9)
    assert unit_warnings(normalize(counted)) == ()
    plain = counted.drop(columns="instructions")
    (warning,) = unit_warnings(normalize(plain))
    assert "the floor (the empty program, role 'floor') takes a median of 1.72 s" in warning
    # a floor whose count is missing (n/a: e.g. a fork) is judged as any uncounted floor
    counted.loc[counted["role"] == "floor", "instructions"] = np.nan
    assert len(unit_warnings(normalize(counted))) == 1


@pytest.mark.parametrize("frame, unit", [(MS_INT, "ms"), (US_INT, "us")])
def test_whole_numbers_above_1000_suggest_the_unit(frame, unit):
    (warning,) = unit_warnings(normalize(frame))
    assert "every ok duration is a whole number of at least 1,000 s" in warning
    expected = float(np.median(frame["duration_s"])) * {"ms": 1e-3, "us": 1e-6}[unit]
    assert f"--unit {unit} (the median would be {expected:.3g} s)" in warning
    assert unit_warnings(normalize(frame, unit=unit), unit=unit) == ()  # read in the right unit: no warning


def test_over_a_day_is_an_error_that_names_the_unit():
    with pytest.raises(CorpusError, match=r"(?s)above one day .*with --unit ns"):
        normalize(NS_INT)
    assert len(normalize(NS_INT, unit="ns")) == len(NS_INT)


def test_no_warning_on_seconds_or_fractional_values():
    assert unit_warnings(normalize(SECONDS)) == ()
    assert unit_warnings(normalize(MS_INT.assign(duration_s=MS_INT["duration_s"] + 0.5))) == ()
    for path in sorted(glob.glob("fixtures/corpora/*.parquet")):  # corpora collected in seconds
        assert unit_warnings(load_corpus(path)) == (), path


def test_validate_and_audits_print_the_warning(tmp_path):
    src = tmp_path / "ms.csv"
    MS_FLOAT.to_csv(src, index=False)
    proc = subprocess.run(CLI + ["validate", str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning: " in proc.stdout and "--unit ms" in proc.stdout
    proc = subprocess.run(CLI + ["audit", "reliability", str(src), "--n-boot", "20"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "speedaudit: warning: " in proc.stderr and "--unit ms" in proc.stderr
    proc = subprocess.run(CLI + ["validate", str(src), "--unit", "ms"], capture_output=True, text=True)
    assert proc.returncode == 0 and "warning" not in proc.stdout + proc.stderr


def test_summary_leaves_out_the_floor_and_counts_repeats_per_cell_and_runs():
    frame = pd.concat([
        MS_FLOAT.assign(environment="quiet", campaign="monday"),
        # a second run where one cell has one repeat more and another one less
        MS_FLOAT.assign(environment="busy", campaign="monday"),
        pd.DataFrame({"problem": ["p1"], "test": ["t1"], "solution": ["a"], "duration_s": [50.0], "status": ["ok"],
                      "repeat": [3], "role": ["reference"], "environment": ["busy"], "campaign": ["monday"]}),
    ], ignore_index=True)
    frame = frame.drop(index=frame.index[(frame.environment == "busy") & (frame.problem == "p2") & (frame.test == "t2")
                                         & (frame.solution == "b") & (frame.repeat == 2)])
    s = summarize(normalize(frame))
    real = frame.loc[frame.role != "floor"]
    per_cell = real.groupby(["environment", "campaign", "problem", "test", "solution"])["repeat"].nunique()
    assert (s.problems, s.tests, s.solutions) == (2, 4, 4)  # the floor pseudo-problem is not a problem
    assert s.floor_rows == 6 and s.floor_problems == ("_floor",)
    assert s.repeats_per_cell == (per_cell.min(), per_cell.median(), per_cell.max()) == (2, 3.0, 4)
    counts = frame.groupby(["environment", "campaign"]).size()
    assert s.runs == tuple((e, c, int(n)) for (e, c), n in sorted(counts.items()))
    text = s.summary()
    assert "problems      2  (+ the floor: 6 rows of the empty program, problem '_floor', not counted)" in text
    assert "repeats       2-4, median 3 per solution cell" in text
    assert "runs          2 (environment, campaign): 'busy', 'monday' (" in text
