"""Findings: numbers turned into pass / warn / fail verdicts, and JSON output.

Every audit returns a result object with ``findings`` (a tuple of
:class:`Finding`), ``to_dict()`` for JSON and ``summary()`` for the terminal.
A finding says what was measured, the value, the threshold it was held to and
what to do about it.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["LEVELS", "Finding", "worst_level", "findings_table", "to_jsonable", "write_json", "judge"]

LEVELS = ("pass", "warn", "fail")


@dataclass(frozen=True)
class Finding:
    """One verdict.

    Attributes
    ----------
    level : {"pass", "warn", "fail"}
    metric : str
        Name of the measured quantity (e.g. ``median_repeat_cv``).
    value : float
    threshold : float or str
        The limit it was held to (a number, or a short text such as ``"<= 0.10 warn, <= 0.20 fail"``).
    message : str
        What it means and what to do.
    environment : str, optional
        Which environment (or pair) it concerns.
    """

    level: str
    metric: str
    value: float | None
    threshold: float | str | None
    message: str
    environment: str | None = None

    def __post_init__(self):
        if self.level not in LEVELS:
            raise ValueError(f"Finding level must be one of {LEVELS}, got {self.level!r}")

    def to_dict(self) -> dict:
        return to_jsonable(asdict(self))


def judge(value: float, *, warn: float, fail: float, higher_is_worse: bool = True) -> str:
    """Level of ``value`` against a warn and a fail threshold.

    With ``higher_is_worse`` the value fails when ``value >= fail`` and warns
    when ``value >= warn``; otherwise the comparisons are reversed. NaN warns.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "warn"
    if higher_is_worse:
        return "fail" if value >= fail else "warn" if value >= warn else "pass"
    return "fail" if value <= fail else "warn" if value <= warn else "pass"


def worst_level(findings: Iterable[Finding]) -> str:
    levels = [f.level for f in findings]
    for level in reversed(LEVELS):
        if level in levels:
            return level
    return "pass"


def findings_table(findings: Iterable[Finding]) -> str:
    """Plain-text table of findings for the terminal."""
    rows = list(findings)
    if not rows:
        return "(no findings)"
    marks = {"pass": "PASS", "warn": "WARN", "fail": "FAIL"}
    lines = []
    for f in rows:
        value = "" if f.value is None else (f"{f.value:.4g}" if isinstance(f.value, (int, float)) else str(f.value))
        where = f"[{f.environment}] " if f.environment else ""
        lines.append(f"{marks[f.level]:4}  {where}{f.metric} = {value} (threshold {f.threshold}): {f.message}")
    return "\n".join(lines)


def to_jsonable(obj):
    """Convert numpy / pandas values (and NaN) to plain JSON types."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Finding):
        return obj.to_dict()
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


def write_json(obj, path: str | os.PathLike) -> Path:
    """Write ``obj`` as JSON atomically (temporary file, then rename)."""
    from audits.corpus.io import atomic_write

    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False)

    def writer(tmp):
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")

    return atomic_write(path, writer)
