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
from typing import TYPE_CHECKING

from audits.corpus._json import to_jsonable  # the one converter (lives in the lowest layer)
from audits.corpus.io import atomic_write

if TYPE_CHECKING:  # pandas is not imported here: the command line's --help imports this module (issue 26's 0.3 s)
    import pandas as pd

__all__ = ["interval_text", "frame_text", "where_label", "unmeasured_finding", "unmeasured_causes", "measured_scores", "LEVELS", "NA", "ALL_LEVELS", "Finding", "worst_level", "findings_table",
           "to_jsonable", "write_json", "judge"]

#: The judged levels, best first.
LEVELS = ("pass", "warn", "fail")
#: Not measurable on this corpus (with the reason): never counted as pass, ignored by :func:`worst_level`.
NA = "n/a"
ALL_LEVELS = LEVELS + (NA,)


@dataclass(frozen=True)
class Finding:
    """One verdict.

    Attributes
    ----------
    level : {"pass", "warn", "fail", "n/a"}
        ``n/a``: the corpus cannot measure it (``reason`` says why); never a pass. A finding constructed
        with a NaN ``value`` is ``n/a`` whatever level it was given (its value None, the reason given or
        "undefined (NaN) on this corpus"): the one place NaN is turned into n/a for every audit.
    metric : str
        Name of the measured quantity (e.g. ``median_repeat_cv``).
    value : float
    threshold : float or str
        The limit it was held to (a number, or a short text such as ``"<= 0.10 warn, <= 0.20 fail"``).
    message : str
        What it means and what to do.
    environment : str, optional
        Which environment (or pair) it concerns.
    campaign : str, optional
        Which campaign of that environment (the finding concerns the run (environment, campaign)).
    subject : str, optional
        What else it concerns, as a display label: a reward environment, a calibration pair of runs.
    reason : str, optional
        Why it is ``n/a`` (required for that level).
    """

    level: str
    metric: str
    value: float | None
    threshold: float | str | None
    message: str
    environment: str | None = None
    campaign: str | None = None
    reason: str | None = None
    subject: str | None = None

    def __post_init__(self):
        if self.level not in ALL_LEVELS:
            raise ValueError(f"Finding level must be one of {ALL_LEVELS}, got {self.level!r}")
        if self.level != NA and _is_nan(self.value):
            # The one place NaN becomes n/a: a value that could not be computed (an empty sample, one value,
            # no interval) is never a verdict, whichever audit judged it; JSON, terminal and report read this.
            reason = self.reason or (f"{self.metric} is undefined (NaN) on this corpus: its sample is empty or too "
                                     "small to compute it")
            object.__setattr__(self, "level", NA)
            object.__setattr__(self, "value", None)
            object.__setattr__(self, "reason", reason)
            object.__setattr__(self, "message", f"not measured: {reason}")
        if self.level == NA and not self.reason:
            raise ValueError("an n/a finding needs the reason it cannot be measured")

    @classmethod
    def not_available(cls, metric: str, reason: str, *, threshold: float | str | None = None,
                      environment: str | None = None, campaign: str | None = None,
                      subject: str | None = None) -> Finding:
        """An ``n/a`` finding: ``metric`` cannot be measured on this corpus because of ``reason``.

        >>> Finding.not_available("icc", "one repeat per cell").level
        'n/a'
        """
        return cls(NA, metric, None, threshold, f"not measured: {reason}", environment, campaign, reason, subject)

    @property
    def where(self) -> str:
        """Display label of what it concerns (``environment · campaign · subject``, the parts it has)."""
        return where_label(self.environment, self.campaign, self.subject)

    def to_dict(self) -> dict:
        return to_jsonable(asdict(self))


def where_label(environment=None, campaign=None, subject=None) -> str:
    """The display label of what a finding concerns, ``environment · campaign · subject`` (the parts it has):
    :attr:`Finding.where`, and the index page's label of a finding it reads back from a notebook as a dict.

    >>> where_label("quiet", "001"), where_label("quiet", "1"), where_label(None, None, "p0")
    ('quiet · 001', 'quiet · 1', 'p0')
    """
    return " · ".join(str(v) for v in (environment, campaign, subject) if v is not None)


def _is_nan(value) -> bool:
    """True for a float NaN (numpy's too); False for None, numbers, text."""
    if value is None or isinstance(value, (str, bool)):
        return False
    try:
        return bool(math.isnan(value))
    except (TypeError, ValueError):
        return False


def judge(value: float, *, warn: float, fail: float, higher_is_worse: bool = True, nan: str = "warn") -> str:
    """Level of ``value`` against a warn and a fail threshold.

    With ``higher_is_worse`` the value fails when ``value >= fail`` and warns
    when ``value >= warn``; otherwise the comparisons are reversed. A missing
    or NaN value gets ``nan`` (default ``"warn"``; ``"n/a"`` where the value is
    undefined by construction).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return nan
    if higher_is_worse:
        return "fail" if value >= fail else "warn" if value >= warn else "pass"
    return "fail" if value <= fail else "warn" if value <= warn else "pass"


def worst_level(findings: Iterable[Finding]) -> str:
    """The worst judged level; ``n/a`` findings are ignored (``"n/a"`` when nothing was judged but some
    were n/a, ``"pass"`` for no findings)."""
    levels = [f.level for f in findings]
    for level in reversed(LEVELS):
        if level in levels:
            return level
    return NA if NA in levels else "pass"


def level_counts(findings: Iterable[Finding]) -> dict[str, int]:
    """Findings per level, every level present: ``{"pass": ., "warn": ., "fail": ., "n/a": .}``."""
    counts = dict.fromkeys(ALL_LEVELS, 0)
    for f in findings:
        counts[f.level] += 1
    return counts


def findings_table(findings: Iterable[Finding]) -> str:
    """Plain-text table of findings for the terminal."""
    rows = list(findings)
    if not rows:
        return "(no findings)"
    marks = {"pass": "PASS", "warn": "WARN", "fail": "FAIL", NA: "n/a"}
    lines = []
    for f in rows:
        value = "" if f.value is None else (f"{f.value:.4g}" if isinstance(f.value, (int, float)) else str(f.value))
        where = f"[{f.where}] " if f.where else ""
        if f.level == NA:
            lines.append(f"{marks[f.level]:4}  {where}{f.metric}: {f.message}")
            continue
        lines.append(f"{marks[f.level]:4}  {where}{f.metric} = {value} (threshold {f.threshold}): {f.message}")
    return "\n".join(lines)


def write_json(obj, path: str | os.PathLike) -> Path:
    """Write ``obj`` as JSON atomically (temporary file, then rename)."""
    text = json.dumps(to_jsonable(obj), indent=2, allow_nan=False)

    def writer(tmp):
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")

    return atomic_write(path, writer)


def measured_scores(scores, summary):
    """``scores`` (per-repeat scores of one run, a ``problem`` column) without the run's not-measured problems.

    Their scores say nothing about the sandbox: with no timed correct reference, a non-``ok`` execution scores
    100 in every repeat, so a problem whose every execution timed out added a strong-weak gap of 0 to the run's
    mean (half the problems timed out: the gap halved, a ``warn`` judged ``fail``).
    """
    problems = [p for p, _ in getattr(summary, "unmeasured", ())]
    if not problems or not len(scores):
        return scores
    return scores.loc[~scores["problem"].isin(problems).to_numpy()]


def unmeasured_causes(summary, *, shown: int = 10) -> str:
    """A run's not-measured problems with their causes as text, the first ``shown`` then "and K more"."""
    problems = getattr(summary, "unmeasured", ())
    more = f"; and {len(problems) - shown} more" if len(problems) > shown else ""
    return "; ".join(f"{p}: {cause}" for p, cause in problems[:shown]) + more


def unmeasured_finding(summary) -> tuple[Finding, ...]:
    """The ``n/a`` finding that names a run's not-measured problems with their causes (an empty tuple when
    there are none or ``summary`` is None).

    Every per-run audit adds it to its findings, so what a corpus cannot measure is said where the verdicts
    are (the problems themselves drop out of every estimator: they have no scored reference on an
    optimization test).
    """
    problems = getattr(summary, "unmeasured", ())
    if not problems:
        return ()
    reason = f"{len(problems)} of {summary.problems} problems not measured ({unmeasured_causes(summary)})"
    return (Finding("n/a", "unmeasured_problems", None, None,
                    f"{reason}: every estimator of this run leaves them out; 'speedaudit suite' on the package "
                    f"says the same before collecting", environment=summary.environment,
                    campaign=summary.campaign, reason=reason),)


def frame_text(frame: pd.DataFrame, *, spec: str = ".4g") -> str:
    """An audit's table for the terminal (its ``summary()``): numbers to ``spec``, a NaN or infinite figure (not
    measured: no solution scored twice, no between-solution variance) as ``n/a``, as its finding says, never
    ``NaN`` or ``inf``; ``(no data)`` for an empty table.

    >>> import pandas as pd
    >>> print(frame_text(pd.DataFrame({"run": ["a", "b"], "icc": [0.91234, float("nan")]})))
    run    icc
      a 0.9123
      b    n/a
    """
    if not len(frame):
        return "(no data)"
    return frame.to_string(index=False, na_rep="n/a",
                           float_format=lambda v: format(v, spec) if math.isfinite(v) else "n/a")


def interval_text(low: float | None, high: float | None, spec: str = ".3g") -> str:
    """A confidence interval as a finding's message writes it: ``[low, high]``, or ``(no CI)`` when either bound
    is undefined (one problem, or no resamples), never ``[undefined, undefined]`` or ``[nan, nan]``.

    >>> interval_text(0.25, 0.5, ".1%"), interval_text(float("nan"), float("nan"))
    ('[25.0%, 50.0%]', '(no CI)')
    """
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return "(no CI)"
    return f"[{format(low, spec)}, {format(high, spec)}]"
