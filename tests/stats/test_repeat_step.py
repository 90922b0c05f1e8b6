"""``repeat_cv``'s ``step_s``: the smallest positive difference between two ok repeats of a cell.

Checked against an independent computation (each cell's distinct values with pandas, the smallest gap between
neighbours), on cells of every size from 1 to 20 values (both of the estimator's paths), with ties, nanosecond and
ten-second scales, failed repeats, and the same rows shuffled.
"""

import numpy as np
import pandas as pd
import pytest

from stats.reliability import repeat_cv


def _corpus(rng: np.random.Generator, scale: float, decimals: int) -> pd.DataFrame:
    rows = []
    for cell in range(120):
        size = int(rng.integers(1, 21))
        values = np.round(rng.random(size) * 10.0, decimals) * scale  # rounding plants ties (a coarse clock)
        for k, value in enumerate(values):
            rows.append({"problem": f"p{cell % 7}", "test": f"t{cell}", "solution": "s", "repeat": k,
                         "duration_s": value, "status": "ok" if rng.random() > 0.1 else "timeout"})
    return pd.DataFrame(rows)


def _independent(frame: pd.DataFrame) -> pd.Series:
    def smallest(values: pd.Series) -> float:
        distinct = np.unique(values.to_numpy())
        return float(np.diff(distinct).min()) if len(distinct) > 1 else np.nan

    ok = frame[frame["status"] == "ok"]
    return ok.groupby(["problem", "test", "solution"])["duration_s"].apply(smallest)


@pytest.mark.parametrize("scale", [1e-9, 1.0, 10.0])
@pytest.mark.parametrize("decimals", [1, 2, 6])
def test_step_is_the_smallest_positive_difference(scale, decimals):
    rng = np.random.default_rng(int(scale * 1e9) % 97 + decimals)
    frame = _corpus(rng, scale, decimals)
    expected = _independent(frame)
    for rows in (frame, frame.sample(frac=1.0, random_state=3)):
        got = repeat_cv(rows).set_index(["problem", "test", "solution"])["step_s"]
        got = got.loc[expected.index]
        assert np.array_equal(got.to_numpy(), expected.to_numpy(), equal_nan=True)
        assert got.isna().sum() < len(got)  # the corpus has measured steps, not only NaN
