"""The engine: any list of registered audits over one shared run context, in one process.

:func:`run_audits` iterates the registry (:mod:`audits.protocol.registry`): for each audit it validates its
:class:`~audits.protocol.params.Options` (the declared defaults, changed only by what the caller gives), its
thresholds (under one verdict profile), runs its plan step (the runs or pairs it covers, by the rule of
:mod:`audits.corpus.runs`) and its compute step on one :class:`audits.protocol.context.AuditContext`, so the
run table, each run's rows, reference pool, collapsed cells and per-repeat scores are computed once for all
of them. The compute step of an audit the Dask engine runs is its partition steps with the corpus as one
partition (:func:`audits.protocol.partition.compute_in_memory`): the part and combine the Dask engine
(:mod:`audits.engine.partitioned.whole`) maps over partitions. ``speedaudit audit all`` prints its summary and writes its JSON; the report computes its results
through it (:func:`audits.report.results._compute`).

An audit that the corpus or the options cannot support (no calibration pair named or by default, no run to
simulate)
is *skipped* with the reason (:class:`audits.protocol.audit.Skip`), recorded in :attr:`WholeAudit.skipped`
and in the JSON; it is never reported as passing.

:func:`run_whole_audit` is the keyword form kept for callers of the whole audit (the benchmark, the tests):
its keywords are options *shared* by the audits that declare them (``n_boot``, ``seed``, ``floor_s``, the run
selection) or one audit's (``pairs``, ``simulation_run``, ``simulation_n_boot``...); a keyword not given
keeps every audit's declared default.

Examples
--------
>>> from audits.corpus.synthetic import synthesize
>>> corpus = synthesize(n_problems=6, n_repeats=3, seed=1, campaigns=(("c0", 1, 0), ("c1", 0.6, 0.05))).corpus
>>> whole = run_whole_audit(corpus, pairs=[(("quiet", "c0"), ("quiet", "c1"))], simulation_run=("quiet", "c0"),
...                         n_boot=50)                                                   # doctest: +SKIP
>>> sorted(whole.audits())                                                               # doctest: +SKIP
['aggregation', 'calibration', 'clocks', 'discriminability', 'reliability', 'simulation']
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields

from audits.checks import registered
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run
from audits.protocol import registry
from audits.protocol.audit import Skip
from audits.protocol.context import AuditContext, audit_context
from audits.protocol.findings import Finding, findings_table, to_jsonable, worst_level

__all__ = ["WholeAudit", "run_audits", "run_whole_audit", "resolve_options", "legacy_options"]

#: The registered audits (:func:`audits.protocol.registry.names`).
AUDITS = registry.names()


def __getattr__(name):  # the shipped examples live with the simulation audit (audits.checks.registered)
    if name in ("EXAMPLE_REWARD_ENVIRONMENTS", "example_reward_environments", "_example_reward_environments"):
        return getattr(registered, name.lstrip("_"))
    raise AttributeError(name)


class WholeAudit:
    """Every audit's result by name (an audit skipped or not run is absent) and why any was skipped.

    The results are attributes too (``whole.reliability``; ``None`` when absent, ``()`` for calibration).
    ``corpus_facts``: ``(run table, audits.corpus.counts.CorpusCounts)`` of the corpus audited, what a saved
    audit's corpus summary is written from when the rows are not at hand (the Dask engine's, from its first pass).
    ``options``: ``{audit name: validated Options}`` each audit ran (or was skipped) with, what a saved whole audit
    records as its parameters (:func:`audits.report.results.save_audit_all`).
    """

    def __init__(self, results: Mapping[str, object] | None = None, skipped: Mapping[str, str] | None = None,
                 *, corpus_facts: tuple | None = None, options: Mapping[str, object] | None = None, **by_name):
        given = {**dict(results or {}), **by_name}
        unknown = sorted(set(given) - set(registry.names()))
        if unknown:
            raise TypeError(f"WholeAudit: unknown audits {unknown}")
        self.results = {n: given[n] for n in registry.names() if given.get(n) is not None
                        and not (isinstance(given[n], tuple) and not given[n])}
        self.skipped = dict(skipped or {})
        self.corpus_facts = corpus_facts
        self.options = dict(options or {})

    def __getattr__(self, name):
        if name in registry.names():
            return self.__dict__.get("results", {}).get(name, () if name == "calibration" else None)
        raise AttributeError(name)

    def audits(self) -> dict:
        """name -> result of every audit that ran (calibration: the tuple of pairs)."""
        return dict(self.results)

    def _each(self):
        for name, result in self.results.items():
            yield registry.get(name), result

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for audit, result in self._each() for f in audit.findings(result))

    def to_dict(self) -> dict:
        out = {"audit": "all"}
        for audit, result in self._each():
            out[audit.name] = audit.to_json(result)
        out["skipped"] = dict(self.skipped)
        out["worst"] = worst_level(self.findings) if self.findings else None
        return to_jsonable(out)

    def summary(self) -> str:
        parts = [one.summary() for audit, result in self._each() for one in audit.results(result)]
        parts.extend(f"{name}: skipped ({reason})" for name, reason in self.skipped.items())
        parts.append("All findings\n" + findings_table(self.findings))
        return "\n\n".join(parts)


def resolve_options(names: Iterable[str], *, shared: Mapping[str, object] | None = None,
                    options: Mapping[str, Mapping] | None = None) -> dict:
    """Each audit's validated Options: its declared defaults, then ``shared`` values (set in every audit that
    declares the field as shared), then ``options[name]`` (that audit's own values).

    >>> resolve_options(["reliability", "simulation"], shared={"n_boot": 50})["simulation"].n_boot   # not shared
    200
    """
    shared = {k: v for k, v in dict(shared or {}).items() if v is not None}
    own = dict(options or {})
    out = {}
    for name in names:
        cls = registry.options_of(name)
        values = {f.name: shared[f.name] for f in fields(cls) if f.name in shared and f.metadata.get("shared", True)}
        given = own.get(name)
        if isinstance(given, cls):
            out[name] = cls.coerce(given, **{k: v for k, v in values.items() if k not in given.changed()})
            continue
        out[name] = cls.coerce({**values, **dict(given or {})})
    return out


@small_pages()
def run_audits(corpus, names: Sequence[str] | None = None, *, options: Mapping[str, object] | None = None,
               thresholds: Mapping[str, object] | None = None, profile: str | None = None,
               timings: dict | None = None) -> WholeAudit:
    """Run the registered audits ``names`` (default: every one) on one shared context.

    Parameters
    ----------
    corpus : DataFrame or AuditContext
    names : sequence of str, optional
        Registered audit names (:func:`audits.protocol.registry.names`), run in registry order.
    options : mapping name -> Options or mapping, optional
        Each audit's options (:func:`resolve_options` gives them from shared values).
    thresholds : mapping name -> Thresholds or overrides, optional
    profile : {"reward", "benchmark"}, optional
        The verdict profile of every audit's thresholds.
    timings : dict, optional
        Filled with each audit's wall seconds (``time.perf_counter``), for the benchmark.
    """
    chosen = [n for n in registry.names() if names is None or n in set(names)]
    if names is not None:
        for n in names:
            registry.get(n)  # an unknown name fails with the registered ones
    ctx: AuditContext = audit_context(corpus)
    options = dict(options or {})
    th = dict(thresholds or {})
    clock = timings if timings is not None else {}
    results, skipped, used = {}, {}, {}
    for name in chosen:
        audit = registry.get(name)
        t0 = time.perf_counter()
        opts = used[name] = audit.options(options.get(name))
        limits = audit.thresholds(th.get(name), profile=profile)
        try:  # the plan, or the computation (the compare sets are resolved on the rows), may skip
            results[name] = audit.compute(ctx, audit.plan(ctx, opts), opts, limits)
        except Skip as exc:
            skipped[name] = str(exc)
        clock[name] = time.perf_counter() - t0
    return WholeAudit(results, skipped, options=used)


def legacy_options(*, environment=None, campaign=None, pairs=(), simulation_run=None, reward_environments=None,
                   floor_s=None, n_boot=None, n_boot_rank=None, simulation_n_boot=None, seed=None,
                   calibration_options=None, simulation_options=None, names=None) -> dict:
    """The Options of each audit from :func:`run_whole_audit`'s keywords (see the module docstring)."""
    own: dict[str, dict] = {"calibration": {**dict(calibration_options or {})},
                            "simulation": {**dict(simulation_options or {})}}
    if pairs:
        own["calibration"]["pairs"] = tuple(tuple(p) for p in pairs)
    if n_boot_rank is not None:
        own["calibration"]["n_boot_rank"] = n_boot_rank
    if simulation_run is not None:
        own["simulation"].update(run_names(simulation_run))
    if reward_environments is not None:
        own["simulation"]["reward_environments"] = tuple(reward_environments)
    if simulation_n_boot is not None:
        own["simulation"]["n_boot"] = simulation_n_boot
    shared = {"environment": environment, "campaign": campaign, "floor_s": floor_s, "n_boot": n_boot, "seed": seed}
    return resolve_options(names if names is not None else registry.names(), shared=shared, options=own)


def run_whole_audit(corpus, *, audits: Sequence[str] | None = None, profile: str | None = None,
                    thresholds: Mapping[str, object] | None = None, timings: dict | None = None,
                    **keywords) -> WholeAudit:
    """Run every registered audit (or ``audits``) once on one shared context (see the module docstring).

    Parameters
    ----------
    corpus : DataFrame or AuditContext
    audits : sequence of str, optional
        Registered audit names (default: every one).
    environment, campaign : str, optional
        The runs of every audit that covers every run (reliability, discriminability, aggregation, clocks).
    pairs : sequence of (source, target)
        Calibration pairs, each run a :class:`~audits.corpus.runs.Run` or (environment, campaign); none: the
        default pairs (:func:`audits.corpus.selection.choose_pairs`), skipped with the reason when there are none.
    simulation_run : Run or (environment, campaign), optional
        The run whose timings stand in for rollouts (either half may be None); default: the simulation's
        own rule (:func:`audits.corpus.runs.one_run`), skipped with the reason when it cannot choose.
    reward_environments : sequence of RewardEnvironment, optional
        Default: the shipped example environments.
    floor_s, n_boot, seed : shared by the audits that declare them; n_boot_rank (calibration),
        simulation_n_boot, calibration_options, simulation_options: one audit's.
    thresholds : mapping name -> Thresholds or overrides, optional
    profile : {"reward", "benchmark"}, optional
    timings : dict, optional
        Filled with each audit's wall seconds.
    """
    names = registry.names() if audits is None else tuple(audits)
    return run_audits(corpus, names, options=legacy_options(names=names, **keywords), thresholds=thresholds,
                      profile=profile, timings=timings)


def run_names(run) -> dict:
    """``{"environment": ..., "campaign": ...}`` of a Run or an (environment, campaign) pair (halves may be None)."""
    if isinstance(run, (tuple, list)) and None in tuple(run):
        environment, campaign = run
        return {"environment": environment, "campaign": campaign}
    r = Run.coerce(run)
    return {"environment": r.environment, "campaign": r.campaign}
