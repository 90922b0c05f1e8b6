"""Audit results shared by the report pages: each audit computed once per ``speedaudit report``.

The overview page shows every audit's verdicts and each other page shows one
audit's figures; before this module each page ran its audits again (every
audit twice per report). Now :func:`audits.report.render.render_reports`
computes every audit once, on one :class:`audits.protocol.context.AuditContext`
(:class:`ReportResults`), and as soon as a page's results are computed writes
them to a versioned JSON file of that page in the output folder
(:mod:`audits.protocol.saved`) and starts the page with the file's path as its
``results_path`` parameter, so pages render while the next audits are
computed; a page reads the results it shows from it (:func:`page_results`).

Each result is stored with the parameters it was computed from
(:data:`PARAMETERS`). A page uses a stored result only when its own values of
those parameters are equal; otherwise (a page rendered on its own, in
JupyterLab, or with different parameters) it computes that result itself, so
a page never shows figures of other parameters than its own.

A file of *saved* results (``speedaudit audit all --json FILE``, rendered with
``speedaudit report --results FILE``) is taken as it is: its results were
computed with the parameters it records, the report hands those to the pages,
and a page never computes anything; a result the file does not hold is a
:class:`NotSaved` (an ``n/a`` finding saying so).

Examples
--------
>>> results = page_results(None, corpus, n_boot=50, seed=0, campaign=None,   # doctest: +SKIP
...                        reliability_thresholds={})
>>> results.reliability.findings                                             # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from audits.checks.registered import EXAMPLE_REWARD_ENVIRONMENTS
from audits.checks.reward_environments import load_reward_environments
from audits.corpus.counts import corpus_counts
from audits.corpus.runs import runs_of
from audits.protocol import registry
from audits.protocol.audit import Skip
from audits.protocol.context import AuditContext, audit_context
from audits.protocol.findings import Finding
from audits.protocol.saved import SavedResults, dump_results, read_results
from audits.report import narrative
from audits.report.inputs import (
    PAIR_PARAMETERS,
    CalibrationSkipped,
    calibrate_pairs,
    load_corpora,
    named_pairs,
    resolve_files,
)

__all__ = ["PARAMETERS", "RESULTS_FILE", "CorpusSummary", "NotSaved", "ReportResults", "page_results"]

RESULTS_FILE = "audit-results.json"

#: The template parameters each result is computed from (besides the corpus).
PARAMETERS: dict[str, tuple[str, ...]] = {
    "reliability": ("campaign", "n_boot", "seed", "reliability_thresholds", "profile"),
    "discriminability": ("floor_s", "campaign", "n_boot", "seed", "discriminability_thresholds", "profile"),
    # every calibration pair: those the parameters name (audits.report.inputs.PAIR_PARAMETERS), else the default ones
    "pairs": ("pairs", "stored_run", "fresh_run", "source_run", "target_run", "calibration_family", "n_boot",
              "n_boot_rank", "seed", "calibration_thresholds", "profile"),
    "aggregation": ("aggregation_environment", "aggregation_campaign", "n_boot", "seed", "aggregation_thresholds", "profile"),
    "simulation": ("reward_environment_files", "grid_files", "simulation_environment", "simulation_campaign",
                   "group_sizes", "seed", "simulation_thresholds", "n_boot", "profile"),
    "clocks": ("campaign", "clocks_measures", "n_boot", "seed"),
    "compare": ("compare_a", "compare_b", "compare_by", "compare_confidence", "n_boot", "seed"),
    # what every page says about the corpus (its description and run table): computed once too, so that a
    # page whose results are all stored never loads the corpus (at 10^7 rows that was 15 s per page)
    "corpus_summary": ("corpora",),
}


@dataclass(frozen=True)
class CorpusSummary:
    """What a page shows about its corpus: :func:`audits.report.narrative.describe_corpus` (``description``)
    and :func:`audits.report.narrative.corpus_overview` (``overview``)."""

    description: str
    overview: pd.DataFrame = field(repr=False)

    @classmethod
    def of(cls, corpus: pd.DataFrame, corpora, *, runs=None) -> CorpusSummary:
        """The summary of ``corpus`` (read from the files ``corpora``): one count of its rows and one run table
        (``runs``, default :func:`audits.corpus.runs.runs_of`) for both halves."""
        return cls.from_counts(runs if runs is not None else runs_of(corpus), corpus_counts(corpus), corpora)

    @classmethod
    def from_counts(cls, runs: pd.DataFrame, counts, corpora) -> CorpusSummary:
        """The summary from a run table and the corpus's counts (:func:`audits.corpus.counts.corpus_counts`)
        without the rows: what :meth:`of` computes, and what a partitioned dataset's whole audit carries
        (``WholeAudit.corpus_facts``)."""
        return cls(description=narrative.describe_counts(runs, counts, corpora),
                   overview=narrative.run_table(runs, counts))


@dataclass(frozen=True)
class NotSaved:
    """Stands in for a result a saved results file does not hold (``speedaudit report --results FILE``):
    ``n/a``, with why; nothing is computed in its place."""

    name: str
    path: str
    skipped: bool = True
    why: str | None = None  # the reason the saving run skipped it (the file's meta.skipped), when it says

    @property
    def reason(self) -> str:
        if self.why:
            return f"{self.name} is not in the saved results {self.path}: the audit that saved them skipped it ({self.why})"
        return (f"{self.name} is not in the saved results {self.path} (speedaudit audit all does not compute it); "
                f"render from the corpus (speedaudit report CORPUS) to include it")

    @property
    def findings(self) -> tuple:
        return (Finding.not_available(self.name, self.reason, threshold="a saved result"),)


#: How each result's template parameters map onto the registered audit's Options (audits.protocol.registry):
#: ``{result: (audit, {option: parameter})}``; the thresholds are ``<audit>_thresholds`` under ``profile``.
_OPTIONS = {
    "reliability": ("reliability", {"campaign": "campaign", "n_boot": "n_boot", "seed": "seed"}),
    "discriminability": ("discriminability", {"floor_s": "floor_s", "campaign": "campaign", "n_boot": "n_boot",
                                              "seed": "seed"}),
    "aggregation": ("aggregation", {"environment": "aggregation_environment", "campaign": "aggregation_campaign",
                                    "n_boot": "n_boot", "seed": "seed"}),
    "simulation": ("simulation", {"environment": "simulation_environment", "campaign": "simulation_campaign",
                                  "group_sizes": "group_sizes", "seed": "seed", "n_boot": "n_boot"}),
    "clocks": ("clocks", {"campaign": "campaign", "measures": "clocks_measures", "n_boot": "n_boot", "seed": "seed"}),
    "compare": ("compare", {"a": "compare_a", "b": "compare_b", "by": "compare_by",
                            "confidence": "compare_confidence", "n_boot": "n_boot", "seed": "seed"}),
}


def _given(options: Mapping[str, object]) -> dict:
    """The options a page's parameters give: a parameter left at None is the audit's own default (its Options
    field, the one place a default is written), so the report computes what ``speedaudit audit`` computes.

    Exact, because every option that takes None as a value has None as its default (audits/checks/declared):
    leaving it out gives that same None."""
    return {option: value for option, value in options.items() if value is not None}


def _reward_environments_of(p: Mapping[str, object]) -> tuple:
    """The reward environments a page's ``reward_environment_files`` and ``grid_files`` name."""
    return tuple(load_reward_environments(resolve_files(p["reward_environment_files"]), resolve_files(p["grid_files"])))


def _compute(name: str, ctx, p: Mapping[str, object]):
    """One result from the template parameters ``p``: the registered audit run by the engine's steps
    (:meth:`audits.protocol.audit.Audit.run`) with the options the parameters name, on the shared context."""
    if name == "corpus_summary":
        return CorpusSummary.of(ctx.corpus, p["corpora"], runs=ctx.runs)
    if name == "pairs":  # every pair the calibration audit chooses (or the skipped note), audits.report.inputs
        return calibrate_pairs(ctx, named_pairs(**{k: p[k] for k in PAIR_PARAMETERS}),
                               thresholds={"profile": p["profile"], **p["calibration_thresholds"]},
                               **_given({"calibration_family": p["calibration_family"], "n_boot": p["n_boot"],
                                         "n_boot_rank": p["n_boot_rank"], "seed": p["seed"]}))
    if name not in _OPTIONS:
        raise KeyError(name)
    audit_name, parameters = _OPTIONS[name]
    audit = registry.get(audit_name)
    options = _given({option: p[parameter] for option, parameter in parameters.items()})
    if audit_name == "simulation":
        options["reward_environments"] = _reward_environments_of(p)
    if options.get("measures") is not None:
        options["measures"] = tuple(options["measures"])
    if options.get("group_sizes") is not None:
        options["group_sizes"] = tuple(options["group_sizes"])
    overrides = dict(p.get(f"{audit_name}_thresholds") or {})
    try:
        return audit.run(ctx, audit.options(options), audit.thresholds(overrides, profile=p.get("profile")))
    except Skip as exc:  # a page asks for this audit: the full reason, as the audit gives it
        if audit_name == "compare":  # the page shows why the comparison is n/a (the sets are not here)
            return str(exc)
        raise (exc.__cause__ or exc) from None


class ReportResults:
    """The results a page shows: taken from the shared file when computed with the page's parameters,
    else computed (once, on one shared context) on first access.

    ``corpus`` is a DataFrame, an :class:`~audits.protocol.context.AuditContext`, or the corpus files (loaded with
    :func:`audits.report.inputs.load_corpora` only when some result has to be computed here).
    """

    def __init__(self, corpus, parameters: Mapping[str, object], stored: Mapping[str, tuple] | None = None):
        self._source = corpus
        self._parameters = dict(parameters)
        self._stored = stored if isinstance(stored, SavedResults) else SavedResults(dict(stored or {}))
        self._values: dict[str, object] = {}
        self.computed: list[str] = []  # names computed here rather than read from the shared file

    @cached_property
    def _ctx(self):
        source = self._source
        if not isinstance(source, (pd.DataFrame, AuditContext)):
            source = load_corpora(source)
        return audit_context(source)

    @property
    def saved(self) -> bool:
        """Whether these are saved results (``speedaudit report --results FILE``): nothing is computed here."""
        return bool(self._stored.meta.get("saved"))

    @property
    def corpus(self) -> pd.DataFrame:
        """The corpus (loaded on first use when the results were given the corpus files)."""
        return self._ctx.corpus

    def _used(self, name: str) -> dict:
        return {k: self._parameters[k] for k in PARAMETERS[name]}

    def get(self, name: str):
        if name not in self._values:
            if self.saved:  # a saved audit: taken as it is, never recomputed
                skipped = self._stored.meta.get("skipped")
                why = skipped.get(name) if isinstance(skipped, Mapping) else None
                self._values[name] = (self._stored.value(name) if name in self._stored.names()
                                      else NotSaved(name, str(self._stored.path), why=why if isinstance(why, str) else None))
            elif self._stored.parameters(name) == self._used(name):
                self._values[name] = self._stored.value(name)
            else:
                self._values[name] = _compute(name, self._ctx, self._used(name))
                self.computed.append(name)
        return self._values[name]

    def entry(self, name: str):
        """``(parameters used, result)`` of ``name``, computed on this object's shared context, or None when the
        computation raises: the page that shows it then computes it itself and fails in its own cell, with the
        notebook, the cell and the parameters named, while the other pages still render. What
        :func:`audits.report.render.render_reports` writes, through :func:`audits.protocol.saved.encoded_entry`
        and :func:`audits.protocol.saved.write_entries`, into a page's results file."""
        try:
            return self._used(name), self.get(name)
        except Exception:  # noqa: BLE001 -- reported by the page that needs it, see above
            return None

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in PARAMETERS:
            raise AttributeError(name)
        return self.get(name)


def page_results(results_path, corpus, namespace: Mapping[str, object] | None = None, **parameters) -> ReportResults:
    """The results of one page: read from ``results_path`` (a file or a list of files written by ``speedaudit
    report``) where they
    were computed with the page's parameter values, computed here otherwise (``results_path`` None: all).

    The values are ``parameters``, or taken from ``namespace`` (a page passes ``globals()``: its own
    parameter values, so every template calls this the same way) for the names :data:`PARAMETERS` uses.
    ``corpus`` is the corpus or its files (a page passes ``corpora``): files are loaded only when a result
    is computed here, so a page of ``speedaudit report`` whose results are all stored never reads the
    corpus; without ``results_path`` they are loaded at once (a bad file fails in the page's first cell).
    """
    wanted = {k for keys in PARAMETERS.values() for k in keys}
    parameters = {**{k: v for k, v in (namespace or {}).items() if k in wanted}, **parameters}
    if not results_path:
        results = ReportResults(corpus, parameters)
        results.corpus  # noqa: B018 -- nothing is stored: load the corpus now, so a bad file fails in this cell
        return results
    paths = [results_path] if isinstance(results_path, (str, os.PathLike)) else list(results_path)
    files = [read_results(path) for path in paths]
    return ReportResults(corpus, parameters, files[0] if len(files) == 1 else SavedResults.union(files))


def save_whole_audit(whole, corpus, path: str | os.PathLike, *, corpora, n_boot: int, seed: int, campaign=None,
                     environment=None, floor_s=None, reward_environment_files=(), compare_options=None,
                     extra=None) -> Path:
    """Write a whole audit (:class:`audits.engine.whole_audit.WholeAudit`) as saved results a report renders
    from without recomputing (``speedaudit report --results FILE``): each audit under the name a page reads
    it by (:data:`PARAMETERS`), with the parameters it was computed from; every calibration pair the whole audit
    chose (named, else the default pairs) as the pages' ``pairs``, each with its rule; the corpus summary (computed here,
    from the rows the audit read, or with ``corpus=None`` from the whole audit's ``corpus_facts``: a
    partitioned dataset's run table and counts) so that no page reads the corpus again; the comparison (or
    the reason it was skipped) with ``compare_options``, the options it ran with (default: the declared
    ones). ``extra`` adds top-level keys
    (``speedaudit audit all --json`` keeps every audit's plain JSON there).
    """
    corpora = [str(Path(c).resolve()) for c in corpora]
    common = {"n_boot": n_boot, "seed": seed, "profile": "reward"}
    if corpus is not None:
        summary = CorpusSummary.of(corpus, corpora)
    elif whole.corpus_facts is not None:  # a partitioned dataset's run table and counts (audit all --dask)
        summary = CorpusSummary.from_counts(*whole.corpus_facts, corpora)
    else:
        raise ValueError("save_whole_audit: give the corpus, or a whole audit that carries its corpus_facts")
    results = {"reliability": whole.reliability, "discriminability": whole.discriminability,
               "corpus_summary": summary}
    parameters = {"reliability": {**common, "campaign": campaign, "reliability_thresholds": {}},
                  "discriminability": {**common, "campaign": campaign, "floor_s": floor_s,
                                       "discriminability_thresholds": {}},
                  "corpus_summary": {"corpora": corpora}}
    pairs = tuple(whole.calibration)
    named = [[[r.environment, r.campaign] for r in (a.source_runs[0], a.target_runs[0])] for a in pairs
             if a.pair_rule == "named" and len(a.source_runs) == 1 and len(a.target_runs) == 1]
    page = {"campaign": campaign, "floor_s": floor_s, "n_boot": n_boot, "seed": seed,
            "pairs": named or None, "stored_run": None, "fresh_run": None, "source_run": None, "target_run": None}
    if not pairs:
        why = whole.skipped.get("calibration", "the whole audit calibrated no pair")
        pairs = (CalibrationSkipped(None, None, f"not in the saved audit: {why}"),)
    results["pairs"] = pairs  # every pair, each with the rule that chose it (pair_rule)
    parameters["pairs"] = {**common, **{k: page[k] for k in ("pairs", "stored_run", "fresh_run", "source_run",
                                                               "target_run")},
                           "n_boot_rank": None, "calibration_thresholds": {}, "calibration_family": None}
    if whole.aggregation is not None:
        results["aggregation"] = whole.aggregation
        page.update(aggregation_environment=environment, aggregation_campaign=campaign)
        parameters["aggregation"] = {**common, "aggregation_environment": environment,
                                     "aggregation_campaign": campaign, "aggregation_thresholds": {}}
    if whole.simulation is not None:
        results["simulation"] = whole.simulation
        page.update(simulation_environment=whole.simulation.environment,
                    simulation_campaign=whole.simulation.campaign,
                    reward_environment_files=[str(f) for f in reward_environment_files])
        parameters["simulation"] = {"seed": seed, "simulation_environment": whole.simulation.environment,
                                    "simulation_campaign": whole.simulation.campaign,
                                    "reward_environment_files": page["reward_environment_files"]}
    clocks = whole.clocks
    if clocks is not None:
        results["clocks"] = clocks
        page["clocks_measures"] = list(clocks.measures) or None
        parameters["clocks"] = {"campaign": campaign, "clocks_measures": page["clocks_measures"], "n_boot": n_boot,
                                "seed": seed}
    if whole.compare is not None or "compare" in whole.skipped:
        o = registry.get("compare").options(compare_options)
        used = {"compare_a": o.a, "compare_b": o.b, "compare_by": o.by, "compare_confidence": o.confidence,
                "n_boot": o.n_boot, "seed": o.seed}
        results["compare"] = whole.compare if whole.compare is not None else whole.skipped["compare"]
        parameters["compare"] = used
        page.update({k: v for k, v in used.items() if k.startswith("compare_")})
    meta = {"saved": True, "source": "speedaudit audit all", "corpora": corpora, "parameters": page,
            "skipped": dict(whole.skipped)}
    return dump_results(results, path, parameters=parameters, meta=meta, extra=extra)


def save_audit_all(whole, corpus, path: str | os.PathLike, *, corpora=(), reward_environment_files=None,
                   extra=None) -> Path:
    """Write a whole audit as ``speedaudit audit all --json`` does, from the validated Options it ran with
    (``whole.options``, ``{audit name: Options}``, as the engine -- in memory or on Dask -- resolved them): the one
    place both that command and :func:`speedaudit.run_all` (``save=``) turn options into :func:`save_whole_audit`'s
    parameters.

    ``reward_environment_files``: the files the simulation read (default: the shipped examples it reads when
    none is given). ``extra``: top-level keys beside the results (default: every audit's plain JSON,
    ``whole.to_dict()``).
    """
    if reward_environment_files is None:
        reward_environment_files = [f"fixtures/environments/{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS]

    options = whole.options

    def shared(name):  # a shared option as the audits that declare it received it (one value: one declaration)
        return next((getattr(o, name) for o in options.values() if hasattr(o, name)), None)

    discriminability = options.get("discriminability")
    return save_whole_audit(whole, corpus, path, corpora=list(corpora), n_boot=shared("n_boot"),
                            seed=shared("seed"), campaign=shared("campaign"), environment=shared("environment"),
                            floor_s=None if discriminability is None else discriminability.floor_s,
                            reward_environment_files=reward_environment_files,
                            compare_options=options.get("compare"),
                            extra=whole.to_dict() if extra is None else extra)
