"""compare --by COLUMN: a row without a value in the column is in neither set; the text "None" is a value like any.

Found by the calibration helper (2026-12-07): the labels of ``--by`` were ``astype(str)`` of the column with missing
values as None, which pandas before 3.0 turns into the text "None" (``--a None`` then selected the rows without a
value, merged with a solution whose value really is "None") and pandas 3 keeps as NaN, which the error of a set that
names nothing listed as a value "nan" (naming it selects nothing). The labels now keep a missing value as None on
every pandas, in neither set, and the error counts those rows instead of listing them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.compare import resolve_sides
from audits.errors import UserError


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"problem": "p", "solution": ["s1", "s2", "s3", "s4", "s5"],
                         "build": ["x", "y", "None", None, np.nan]})


def test_missing_values_are_in_no_set_and_none_is_a_value():
    sides = resolve_sides(_frame(), "None", "x", by="build")
    assert sides.tolist() == ["b", "", "a", "", ""]


def test_a_set_of_nothing_lists_the_values_and_counts_the_missing():
    with pytest.raises(UserError) as info:
        resolve_sides(_frame(), "zzz", "x", by="build")
    said = str(info.value)
    assert "build values: None, x, y" in said and "2 rows without a value" in said
