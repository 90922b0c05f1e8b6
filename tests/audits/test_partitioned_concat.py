"""Joining per-partition tables on the client (``audits.protocol.partition.concat_tables``, what the Dask engine's
combines join with).

Categorical columns are joined on their codes. The reference here is the straightforward join through values
(every categorical column as objects, concatenated, then categorised again on the sorted union of the
categories): the two must give equal frames (values, dtypes, categories and their order, column order), also
when partitions have different categories, missing values, no rows, or lack a column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pandas.api.types import union_categoricals

from audits.protocol.partition import concat_tables


def _through_values(frames: list[pd.DataFrame]) -> pd.DataFrame:
    cats = {c for f in frames for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)}
    out = pd.concat([f.astype({c: object for c in cats if c in f.columns}) for f in frames], ignore_index=True)
    for c in cats:
        union = union_categoricals([f[c] for f in frames if c in f.columns], sort_categories=True)
        out[c] = pd.Categorical(out[c], categories=union.categories)
    return out


def _partition(rng, n: int, columns: list[str]) -> pd.DataFrame:
    data = {}
    for c in columns:
        if c in ("problem", "solution"):  # each partition its own few names (any character), some missing
            names = [f"{c} {i}/ä" for i in rng.integers(0, 9, 3)]
            data[c] = pd.Categorical(rng.choice(np.array(names + [None], dtype=object), n),
                                     categories=pd.Index(sorted(set(names)), dtype="str"))
        elif c == "x":
            data[c] = rng.random(n)
        else:
            data[c] = rng.integers(0, 5, n)
    return pd.DataFrame(data)


@pytest.mark.parametrize("seed", range(5))
def test_the_join_on_codes_equals_the_join_through_values(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        frames = [_partition(rng, int(rng.integers(0, 7)),
                             [c for c in ("problem", "x", "solution", "n") if c == "x" or rng.random() < 0.8])
                  for _ in range(int(rng.integers(1, 5)))]
        pd.testing.assert_frame_equal(concat_tables(frames), _through_values(frames))


def test_categories_are_the_sorted_union_and_codes_follow_them():
    a = pd.DataFrame({"problem": pd.Categorical(["b", "a", None]), "x": [1.0, 2.0, 3.0]})
    b = pd.DataFrame({"problem": pd.Categorical(["c", "a"]), "x": [4.0, 5.0]})
    c = pd.DataFrame({"x": [6.0]})  # a partition without the column: a missing value
    out = concat_tables([a, b, c])
    assert list(out["problem"].cat.categories) == ["a", "b", "c"]
    assert out["problem"].cat.codes.tolist() == [1, 0, -1, 2, 0, -1]
    assert list(out.columns) == ["problem", "x"] and out["x"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
