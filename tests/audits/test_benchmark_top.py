"""The worst benchmarks named by the benchmark profile: only the rows that can be among them are labelled
(a label per cell was 10^7 strings per run at 10^8 executions), and the result is the full sort's.

Checked against an independent pandas sort of every flagged row by (-|value|, label), on tables with ties at
the k-th value, values missing, fewer valued rows than k, and shuffled copies of each."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.reliability import _label_columns, _top


def _table(rng, n: int, *, n_values: int, nan_share: float) -> pd.DataFrame:
    values = rng.integers(0, n_values, n).astype(float) * rng.choice([-1.0, 1.0], n)  # few values: many ties
    values[rng.random(n) < nan_share] = np.nan
    return pd.DataFrame({"problem": rng.choice(["p/1", "p 2", "ä3"], n), "test": rng.choice(["t1", "t2"], n),
                         "solution": [f"s{i}" for i in rng.permutation(n)], "value": values,
                         "flag": rng.random(n) < 0.7})


def _expected(table: pd.DataFrame, k: int) -> list[tuple[str, float]]:
    rows = table.loc[table["flag"]].copy()
    cols = ["problem"] + [c for c in ("test", "solution") if table[c].nunique() > 1]
    rows["name"] = rows[cols].astype(str).agg(" · ".join, axis=1)
    rows["key"] = -rows["value"].abs()
    rows = rows.sort_values(["key", "name"], na_position="last", kind="mergesort")
    return [(n, float(v)) for n, v in zip(rows["name"][:k], rows["value"][:k])]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 3, 5])
def test_top_equals_the_full_sort_with_ties_and_missing_values(seed, k):
    rng = np.random.default_rng(seed)
    for n, n_values, nan_share in [(400, 4, 0.1), (50, 2, 0.0), (8, 3, 0.6), (3, 5, 0.5), (0, 1, 0.0)]:
        table = _table(rng, n, n_values=n_values, nan_share=nan_share)
        expected = _expected(table, k)
        for shuffled in (table, table.sample(frac=1.0, random_state=seed).reset_index(drop=True)):
            got = _top(shuffled, "flag", "value", k, _label_columns(shuffled))
            assert [g[0] for g in got] == [e[0] for e in expected]
            np.testing.assert_array_equal([g[1] for g in got], [e[1] for e in expected])


def test_a_tie_at_the_kth_value_is_broken_by_name_among_every_tied_row():
    table = pd.DataFrame({"problem": ["z", "b", "a", "c", "y"], "value": [9.0, 5.0, 5.0, -5.0, 1.0],
                          "flag": True})
    assert _top(table, "flag", "value", 3, ["problem"]) == [("z", 9.0), ("a", 5.0), ("b", 5.0)]
