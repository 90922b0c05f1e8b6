"""The Audit protocol: what every registered audit declares and the steps the engine runs.

An audit (:mod:`audits.checks.registered`) is a class with

* ``name``, ``title``: its name (the command ``speedaudit audit NAME``, the key in ``audit all``'s JSON);
* ``Options``: a frozen :class:`audits.protocol.params.Options` dataclass whose constraints are data
  (the command line's flags and ``--help`` are generated from it);
* ``Thresholds``: its :class:`audits.protocol.thresholds.Thresholds` (one shape; the ``reward`` and
  ``benchmark`` profiles apply to every audit);
* the steps: :meth:`Audit.plan` chooses, over the :class:`audits.protocol.context.AuditContext`, the units it
  covers (its runs, or its pairs of runs) by the one rule of :mod:`audits.corpus.runs`; :meth:`Audit.compute`
  makes the result from them (through :meth:`Audit.part` per unit where units are independent: calibration's
  pairs); :meth:`Audit.findings` are the verdicts. :meth:`Audit.run` chains them. An audit that the corpus or the options cannot support raises
  :class:`Skip` from :meth:`Audit.plan` or :meth:`Audit.compute` (the engine records the reason; never reported as passing).
* ``dask``: ``None`` when the Dask engine (:mod:`audits.engine.partitioned`) runs it, else why not;
  ``report``: the report results (:mod:`audits.report.results`) it provides.

The declarations (``Options``, ``Thresholds``) import neither numpy nor pandas: the registry
(:mod:`audits.protocol.registry`) hands them out without importing any audit's statistics.
"""

from __future__ import annotations

from typing import Any, ClassVar

from audits.errors import UserError

__all__ = ["Audit", "Skip"]


class Skip(UserError):
    """This corpus or these options cannot support the audit (the message is the reason, for ``skipped``)."""


class Audit:
    """Base of every registered audit (see the module docstring)."""

    name: ClassVar[str]
    title: ClassVar[str]
    Options: ClassVar[type]
    Thresholds: ClassVar[type]
    #: None: the Dask engine runs this audit through its per-problem parts; else the reason it does not.
    dask: ClassVar[str | None] = None
    #: The report results this audit provides (names in :data:`audits.report.results.PARAMETERS`).
    report: ClassVar[tuple[str, ...]] = ()

    def options(self, value=None, **changes):
        """This audit's :attr:`Options` from an instance, a mapping or None (the defaults), validated."""
        return self.Options.coerce(value, **changes)

    def thresholds(self, value=None, *, profile: str | None = None):
        """This audit's :attr:`Thresholds` (an instance, overrides, or None) under ``profile``."""
        return self.Thresholds.coerce(value, profile=profile)

    # --- the steps ----------------------------------------------------------------------------------------
    def plan(self, ctx, options) -> tuple:
        """The units this audit covers on ``ctx`` (runs or pairs of runs, by the rule of :mod:`audits.corpus.runs`);
        raises :class:`Skip` with the reason when there is none it can cover."""
        raise NotImplementedError

    def part(self, ctx, unit, options, thresholds) -> Any:
        """The audit's computation on one unit of :meth:`plan` (audits whose units are independent)."""
        raise NotImplementedError

    def compute(self, ctx, units: tuple, options, thresholds) -> Any:
        """The result on every unit of :meth:`plan` (in memory; the Dask engine runs the per-problem parts
        of :mod:`audits.engine.partitioned` with the same options)."""
        raise NotImplementedError

    def findings(self, result) -> tuple:
        """The verdicts of a result."""
        return tuple(result.findings)

    def results(self, result) -> tuple:
        """The result objects (one, or one per calibration pair) whose ``to_dict`` the JSON holds."""
        return (result,)

    def to_json(self, result):
        """The JSON value of ``result`` in ``audit all`` (equal to the separate command's ``--json``)."""
        return result.to_dict()

    def run(self, ctx, options=None, thresholds=None, *, profile: str | None = None):
        """plan, each part, combine: the audit's result on ``ctx`` (an AuditContext or a corpus)."""
        from audits.protocol.context import audit_context

        ctx = audit_context(ctx)
        options = self.options(options)
        thresholds = self.thresholds(thresholds, profile=profile)
        return self.compute(ctx, self.plan(ctx, options), options, thresholds)

    def __repr__(self) -> str:
        return f"<audit {self.name}>"
