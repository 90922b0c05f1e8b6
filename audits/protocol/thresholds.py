"""Thresholds: one shape for every audit, one override syntax, judged in one place.

Every audit's limits are a frozen dataclass on :class:`Thresholds`. A *limit*
is a pair of fields ``NAME_warn`` / ``NAME_fail`` (numbers); its direction is
declared by the class (``lower_is_worse``: the names judged "lower is worse",
e.g. an ICC; every other limit is "higher is worse", e.g. a CV). Any other
field is a plain *parameter* (e.g. ``robust_cv``, ``min_problems``).

Overrides (the command line's ``--threshold``, parsed once by
:func:`parse_overrides`, and the ``thresholds=`` mapping of every
``run_*_audit``) use one syntax:

* ``NAME=VALUE`` sets both levels of limit ``NAME`` (or the parameter ``NAME``);
* ``NAME.warn=VALUE`` / ``NAME.fail=VALUE`` sets one level;
* the field name itself (``NAME_warn=VALUE``) is accepted too.

:meth:`Thresholds.judge` turns a value into a level; findings are judged once,
by the audit, and everything downstream (CLI summary, JSON, the report's
narrative) reads the findings' levels.

Examples
--------
>>> from audits.checks.reliability import ReliabilityThresholds
>>> t = ReliabilityThresholds.coerce({"repeat_cv": 0.2, "icc.fail": 0.5})
>>> (t.repeat_cv_warn, t.repeat_cv_fail, t.icc_warn, t.icc_fail)
(0.2, 0.2, 0.9, 0.5)
>>> t.judge("icc", 0.6), t.text("icc")
('warn', 'warn <= 0.9, fail <= 0.5')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import ClassVar

from audits.errors import UserError

__all__ = ["Thresholds", "ThresholdError", "parse_overrides", "PROFILES"]

_LEVELS = ("warn", "fail")

#: Verdict profiles. ``reward``: the study's reward sandbox (the defaults of every audit). ``benchmark``: a
#: benchmark machine, judged by pyperf's practice (``pyperf check`` warns when the standard deviation is more
#: than 10 % of the mean); the reward gates (findings about ranking programs for a reward: rank drift of q,
#: filterable problems, aggregators, reward environments...) are not judged under it.
PROFILES = ("reward", "benchmark")


class ThresholdError(UserError, ValueError):
    """An unknown threshold name, a value that is not a number, or limits in the wrong order."""


@dataclass(frozen=True)
class Thresholds:
    """Base of every audit's thresholds (see the module docstring).

    Subclasses are frozen dataclasses of numbers; they set ``audit`` (its name in messages) and
    ``lower_is_worse`` (the limits whose fail level lies below their warn level).
    """

    #: The verdict profile these limits belong to (:data:`PROFILES`); set by :meth:`for_profile`.
    profile: str = "reward"

    audit: ClassVar[str] = "audit"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset()
    #: Per profile, the defaults that differ from the ``reward`` ones (field name -> value).
    profiles: ClassVar[dict[str, dict[str, float]]] = {}
    #: Metrics of findings that gate a reward; not judged (left out) under the ``benchmark`` profile
    #: (``"*"``: every finding of the audit).
    reward_gates: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self):
        if self.profile not in PROFILES:
            raise ThresholdError(f"unknown verdict profile {self.profile!r}; choose from {', '.join(PROFILES)}")
        for f in fields(self):
            if f.name == "profile":
                continue
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ThresholdError(f"{type(self).__name__}.{f.name} must be a finite number, got {value!r}")
        for name in self.limits():
            warn, fail = getattr(self, f"{name}_warn"), getattr(self, f"{name}_fail")
            if name in self.lower_is_worse and warn < fail:
                raise ThresholdError(f"{type(self).__name__}: {name}_warn must be >= {name}_fail (lower is worse), "
                                     f"got warn {warn:g}, fail {fail:g}")
            if name not in self.lower_is_worse and warn > fail:
                raise ThresholdError(f"{type(self).__name__}: {name}_warn must be <= {name}_fail, "
                                     f"got warn {warn:g}, fail {fail:g}")

    @classmethod
    def limits(cls) -> tuple[str, ...]:
        """Names of the warn / fail pairs, in field order."""
        names = [f.name for f in fields(cls)]
        return tuple(n[: -len("_warn")] for n in names if n.endswith("_warn") and n[: -len("_warn")] + "_fail"
                     in names)

    @classmethod
    def parameters(cls) -> tuple[str, ...]:
        """Names of the plain parameters (fields that are not part of a limit)."""
        paired = {f"{n}_{lv}" for n in cls.limits() for lv in _LEVELS}
        return tuple(f.name for f in fields(cls) if f.name not in paired and f.name != "profile")

    @classmethod
    def for_profile(cls, profile: str | None = None):
        """The default limits of verdict ``profile`` (``None``: ``reward``).

        >>> from audits.checks.reliability import ReliabilityThresholds
        >>> ReliabilityThresholds.for_profile("benchmark").repeat_cv_warn   # pyperf: std dev > 10 % of the mean
        0.1
        """
        profile = profile or "reward"
        if profile not in PROFILES:
            raise ThresholdError(f"unknown verdict profile {profile!r}; choose from {', '.join(PROFILES)}")
        return cls(profile=profile, **cls.profiles.get(profile, {}))

    def judged(self, findings) -> list:
        """The findings this profile judges: under ``benchmark`` the reward gates are left out."""
        if self.profile == "reward":
            return list(findings)
        if "*" in self.reward_gates:  # the whole audit is about a reward
            return []
        return [f for f in findings if f.metric not in self.reward_gates]

    def judge(self, name: str, value, *, nan: str = "warn") -> str:
        """Level of ``value`` against limit ``name`` (see :func:`audits.protocol.findings.judge`)."""
        # deferred: numpy and pandas stay out of `speedaudit --help`, which builds every audit's Thresholds
        from audits.protocol.findings import judge

        return judge(value, warn=getattr(self, f"{name}_warn"), fail=getattr(self, f"{name}_fail"),
                     higher_is_worse=name not in self.lower_is_worse, nan=nan)

    def text(self, name: str) -> str:
        """``"warn >= 0.12, fail >= 0.25"``: the limit as shown in a finding."""
        op = "<=" if name in self.lower_is_worse else ">="
        return f"warn {op} {getattr(self, f'{name}_warn'):g}, fail {op} {getattr(self, f'{name}_fail'):g}"

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def override(self, overrides: Mapping[str, float] | Iterable[tuple[str, float]]) -> Thresholds:
        """A copy with ``overrides`` applied (``NAME``, ``NAME.warn``, ``NAME.fail`` or field names)."""
        items = overrides.items() if isinstance(overrides, Mapping) else overrides
        limits, params = set(self.limits()), set(self.parameters())
        field_names = {f.name for f in fields(self)} - {"profile"}
        changes: dict[str, float] = {}
        for key, value in items:
            key = str(key).strip()
            name, dot, level = key.partition(".")
            if isinstance(value, Mapping) and key in limits:  # {"lopo_r2": {"fail": 0.8}}
                targets = [(f"{key}_{lv}", v) for lv, v in value.items() if lv in _LEVELS]
                if len(targets) != len(value):
                    raise ThresholdError(f"threshold {key!r} takes 'warn' and/or 'fail', got {dict(value)!r}")
            elif dot and name in limits and level in _LEVELS:
                targets = [(f"{name}_{level}", value)]
            elif not dot and key in limits:
                targets = [(f"{key}_{lv}", value) for lv in _LEVELS]
            elif not dot and (key in params or key in field_names):
                targets = [(key, value)]
            else:
                raise ThresholdError(f"unknown {self.audit} threshold {key!r}; limits (NAME, NAME.warn, NAME.fail): "
                                     f"{', '.join(sorted(limits))}"
                                     + (f"; parameters: {', '.join(sorted(params))}" if params else ""))
            for target, v in targets:
                try:
                    number = float(v)
                except (TypeError, ValueError) as exc:
                    raise ThresholdError(f"threshold {key!r}: {v!r} is not a number") from exc
                current = getattr(self, target)
                changes[target] = int(number) if isinstance(current, int) and number.is_integer() else number
        return replace(self, **changes)

    @classmethod
    def coerce(cls, value=None, *, profile: str | None = None):
        """``None`` (defaults of ``profile``), an instance, or a mapping of overrides of the defaults of
        ``profile`` (see :meth:`override` and :meth:`for_profile`)."""
        if isinstance(value, Mapping) and "profile" in value:  # {"profile": "benchmark", "icc": 0.8}
            value = dict(value)
            profile = profile or value.pop("profile")
        if value is None:
            return cls.for_profile(profile)
        if isinstance(value, cls):
            return value if profile is None or profile == value.profile else replace(value, profile=profile)
        if isinstance(value, Mapping):
            return cls.for_profile(profile).override(value)
        raise TypeError(f"thresholds must be a {cls.__name__} or a mapping of overrides, got {type(value).__name__}")

    @classmethod
    def describe(cls) -> str:
        """One line per limit and parameter with its default, for ``--help`` epilogs."""
        d = cls()
        parts = [f"{n} ({d.text(n)})" for n in cls.limits()] + [f"{p}={getattr(d, p):g}" for p in cls.parameters()]
        return ", ".join(parts)


def parse_overrides(items: Iterable[str] | None, *, option: str = "--threshold") -> dict[str, float]:
    """``["icc=0.8", "repeat_cv.fail=0.3"]`` -> ``{"icc": 0.8, "repeat_cv.fail": 0.3}`` (values as numbers).

    Names are checked against an audit's thresholds by :meth:`Thresholds.override`.

    >>> parse_overrides(["icc=0.8", "repeat_cv.fail = 0.3"])
    {'icc': 0.8, 'repeat_cv.fail': 0.3}
    """
    out: dict[str, float] = {}
    for item in items or ():
        name, sep, value = str(item).partition("=")
        name = name.strip()
        if not sep or not name:
            raise ThresholdError(f"{option} {item!r}: write NAME=VALUE (both levels), NAME.warn=VALUE or "
                                 "NAME.fail=VALUE")
        try:
            out[name] = float(value)
        except ValueError as exc:
            raise ThresholdError(f"{option} {item!r}: {value.strip()!r} is not a number") from exc
    return out
