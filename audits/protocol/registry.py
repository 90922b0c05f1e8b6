"""The registry of audits: every orchestrator (``audit all``, the report, the command line, the Dask engine,
the tests) iterates it instead of naming audits (in the spirit of scikit-learn's ``all_estimators``).

:func:`declared` gives an audit's declarations (``Options``, ``Thresholds``) without importing its statistics
(``speedaudit --help`` reads them); :func:`get` and :func:`all_audits` give the :class:`audits.protocol.audit.Audit`
objects (:mod:`audits.checks.registered`), which import numpy and pandas.

Examples
--------
>>> names()
('reliability', 'discriminability', 'calibration', 'aggregation', 'simulation', 'clocks', 'compare')
>>> declared("reliability").ReliabilityOptions().target_reliability
0.9
"""

from __future__ import annotations

import importlib
from types import ModuleType

from audits.errors import UserError

__all__ = ["names", "get", "options_of", "thresholds_of"]

#: The registered audits, in the order ``audit all`` runs them and its JSON lists them. Each NAME has its
#: declarations in ``audits.checks.declared.NAME`` and its Audit class in :mod:`audits.checks.registered`.
REGISTERED = ("reliability", "discriminability", "calibration", "aggregation", "simulation", "clocks", "compare")


def names() -> tuple[str, ...]:
    return REGISTERED


def _check(name: str) -> str:
    if name not in REGISTERED:
        raise UserError(f"unknown audit {name!r}; registered: {', '.join(REGISTERED)}")
    return name


def declared(name: str) -> ModuleType:
    """The module declaring audit ``name``'s options and thresholds (no numpy, no pandas)."""
    return importlib.import_module(f"audits.checks.declared.{_check(name)}")


def options_of(name: str) -> type:
    """Audit ``name``'s Options dataclass (without importing its statistics)."""
    module = declared(name)
    return next(getattr(module, n) for n in module.__all__ if n.endswith("Options"))


def thresholds_of(name: str) -> type:
    """Audit ``name``'s Thresholds class (without importing its statistics)."""
    module = declared(name)
    return next(getattr(module, n) for n in module.__all__ if n.endswith("Thresholds") and n != "Thresholds")


def get(name: str):
    """The registered :class:`~audits.protocol.audit.Audit` ``name``."""
    registered = importlib.import_module("audits.checks.registered")
    return registered.AUDITS[_check(name)]


def all_audits() -> list:
    """Every registered audit, in :data:`REGISTERED` order."""
    return [get(n) for n in REGISTERED]
