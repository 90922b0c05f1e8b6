"""Plain JSON values from numpy / pandas ones: the one converter every layer writes JSON with.

It lives in the corpus layer, the lowest of audits (it imports nothing of audits above it, a contract in
pyproject.toml), so that the corpus (the synthetic generator's truth file) and the audits, findings and
report above it share one converter; :mod:`audits.protocol.findings` re-exports it as
:func:`audits.protocol.findings.to_jsonable`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["to_jsonable"]


def to_jsonable(obj):
    """Convert numpy / pandas values (and NaN, inf) to plain JSON types, recursively.

    Objects with a ``to_dict()`` (results, findings, intervals) are converted through it; NaN and
    infinities become ``None`` (JSON has neither).

    >>> to_jsonable({"a": np.float64(0.5), "b": [np.int64(2), float("nan")], "c": np.array([True])})
    {'a': 0.5, 'b': [2, None], 'c': [True]}
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "to_dict") and not isinstance(obj, (pd.DataFrame, pd.Series)):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, pd.DataFrame):
        return to_jsonable(obj.to_dict(orient="records"))
    if isinstance(obj, pd.Series):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return None if math.isnan(value) or math.isinf(value) else value
    return obj
