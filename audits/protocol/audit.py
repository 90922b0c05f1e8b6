"""The Audit protocol: what every registered audit declares and the steps the engine runs.

An audit (:mod:`audits.checks.registered`) is a class with

* ``name``, ``title``: its name (the command ``speedaudit audit NAME``, the key in ``audit all``'s JSON);
* ``Options``: a frozen :class:`audits.protocol.params.Options` dataclass whose constraints are data
  (the command line's flags and ``--help`` are generated from it);
* ``Thresholds``: its :class:`audits.protocol.thresholds.Thresholds` (one shape; the ``reward`` and
  ``benchmark`` profiles apply to every audit);
* the steps: :meth:`Audit.plan` chooses, over a plan context (the in-memory
  :class:`audits.protocol.context.AuditContext`, or the Dask engine's from its first pass), what it covers (its
  runs, or its pairs of runs, by the one rule of :mod:`audits.corpus.runs`, with what the parts need to know of the
  whole corpus); then the *partition steps* (:mod:`audits.protocol.partition`): :meth:`Audit.partition_part` makes
  the per-problem tables of one partition for each of the plan's :meth:`Audit.pieces`, :meth:`Audit.combine`
  makes a piece's result from every partition's part and :meth:`Audit.assemble` the audit's result from its pieces'.
  In memory the corpus is one partition (:meth:`Audit.compute`, :func:`audits.protocol.partition.compute_in_memory`);
  the Dask engine (:mod:`audits.engine.partitioned.whole`) maps the same part over the partitions and calls the
  same combine, so a fix in either step reaches both paths. :meth:`Audit.facts_part` is what the plan needs to
  know of each partition beyond the run table and the floor rows. An audit without partition steps (``dask``
  says why) overrides :meth:`Audit.compute`. :meth:`Audit.findings` are the verdicts; :meth:`Audit.run` chains
  them. An audit that the corpus or the options cannot support raises
  :class:`Skip` from :meth:`Audit.plan` or :meth:`Audit.compute` (the engine records the reason; never reported as passing).
* ``dask``: ``None`` when the Dask engine (:mod:`audits.engine.partitioned`) runs it through its partition steps,
  else why not;
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
    def plan(self, ctx, options):
        """What this audit covers on the plan context ``ctx`` (runs or pairs of runs, by the rule of
        :mod:`audits.corpus.runs`, and what its parts need to know of the whole corpus); the same for the
        in-memory and the Dask engine. Raises :class:`Skip` with the reason when there is nothing it can cover."""
        raise NotImplementedError

    def facts_part(self, part, options):
        """What :meth:`plan` needs to know of one partition (an AuditContext of its rows) beyond the run table and
        the floor rows; the plan reads every partition's through ``ctx.facts(self, options)``. Default: nothing."""
        return None

    def pieces(self, plan) -> tuple:
        """The plan's pieces, each combined on its own (its parts gathered, combined and dropped before the next):
        default the plan itself."""
        return (plan,)

    def partition_part(self, part, piece, options, thresholds):
        """The per-problem tables of one partition (an :class:`~audits.protocol.context.AuditContext` of whole
        problems; in memory, the whole corpus) for one piece of the plan."""
        raise NotImplementedError

    def combine(self, parts: list, piece, options, thresholds, ctx):
        """One piece's result from every partition's :meth:`partition_part`, in partition order (``parts`` may be
        emptied as its tables are joined); ``ctx``: the plan context (its ``map`` re-reads the partitions)."""
        raise NotImplementedError

    def assemble(self, results: list, plan):
        """The audit's result from its pieces' results, in :meth:`pieces` order: default the one piece's."""
        (result,) = results
        return result

    def compute(self, ctx, plan, options, thresholds) -> Any:
        """The result of ``plan`` on ``ctx`` in memory: the corpus as one partition
        (:func:`audits.protocol.partition.compute_in_memory`; the Dask engine runs the same part and combine)."""
        # deferred: numpy and pandas stay out of `speedaudit --help` (audits.cli._common imports Skip from here)
        from audits.protocol.partition import compute_in_memory

        return compute_in_memory(self, ctx, plan, options, thresholds)

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
        # deferred: numpy and pandas stay out of `speedaudit --help` (audits.cli._common imports Skip from here)
        from audits.corpus.memory import small_pages
        from audits.protocol.context import audit_context

        with small_pages():
            ctx = audit_context(ctx)
            options = self.options(options)
            thresholds = self.thresholds(thresholds, profile=profile)
            return self.compute(ctx, self.plan(ctx, options), options, thresholds)

    def __repr__(self) -> str:
        return f"<audit {self.name}>"
