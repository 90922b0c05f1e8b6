"""Audit results shared by the report pages: each audit computed once per ``speedaudit report``.

The overview page shows every audit's verdicts and each other page shows one
audit's figures; before this module each page ran its audits again (every
audit twice per report). Now :func:`audits.report.render.render_reports`
computes every audit once, on one :class:`audits.protocol.context.AuditContext`
(:func:`compute_results`), writes them to one pickle file in the output folder
and passes its path to every page as the ``results_path`` parameter; a page
reads the results it shows from it (:func:`page_results`).

Each result is stored with the parameters it was computed from
(:data:`PARAMETERS`). A page uses a stored result only when its own values of
those parameters are equal; otherwise (a page rendered on its own, in
JupyterLab, or with different parameters) it computes that result itself, so
a page never shows figures of other parameters than its own.

Examples
--------
>>> results = page_results(None, corpus, n_boot=50, seed=0, campaign=None,   # doctest: +SKIP
...                        reliability_thresholds={})
>>> results.reliability.findings                                             # doctest: +SKIP
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

__all__ = ["PARAMETERS", "RESULTS_FILE", "CorpusSummary", "ReportResults", "compute_results", "write_results",
           "page_results"]

RESULTS_FILE = "audit-results.pkl"

#: The template parameters each result is computed from (besides the corpus).
PARAMETERS: dict[str, tuple[str, ...]] = {
    "reliability": ("campaign", "n_boot", "seed", "reliability_thresholds", "profile"),
    "discriminability": ("floor_s", "campaign", "n_boot", "seed", "discriminability_thresholds", "profile"),
    "stored": ("stored_run", "fresh_run", "calibration_family", "n_boot", "n_boot_rank", "seed",
               "calibration_thresholds", "profile"),
    "across": ("source_run", "target_run", "calibration_family", "n_boot", "n_boot_rank", "seed",
               "calibration_thresholds", "profile"),
    "aggregation": ("aggregation_environment", "aggregation_campaign", "n_boot", "seed", "aggregation_thresholds", "profile"),
    "simulation": ("reward_environment_files", "grid_files", "simulation_environment", "simulation_campaign",
                   "group_sizes", "seed", "simulation_thresholds", "n_boot", "profile"),
    "clocks": ("campaign", "clocks_measures", "n_boot", "seed"),
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


def _compute(name: str, ctx, p: Mapping[str, object]):
    """One result from the template parameters ``p``, exactly as the pages computed it."""
    if name == "corpus_summary":
        from audits.report import narrative

        return CorpusSummary(description=narrative.describe_corpus(ctx.corpus, p["corpora"]),
                             overview=narrative.corpus_overview(ctx.corpus))
    if name == "reliability":
        from audits.checks.reliability import ReliabilityThresholds, run_reliability_audit

        return run_reliability_audit(ctx, campaign=p["campaign"], n_boot=p["n_boot"], seed=p["seed"],
                                     thresholds=ReliabilityThresholds.coerce(p["reliability_thresholds"], profile=p["profile"]))
    if name == "discriminability":
        from audits.checks.discriminability import DiscriminabilityThresholds, run_discriminability_audit

        return run_discriminability_audit(
            ctx, floor_s=p["floor_s"], campaign=p["campaign"], n_boot=p["n_boot"], seed=p["seed"],
            thresholds=DiscriminabilityThresholds.coerce(p["discriminability_thresholds"], profile=p["profile"]))
    if name in ("stored", "across"):
        from audits.report.render import calibrate_runs

        src, tgt = ("stored_run", "fresh_run") if name == "stored" else ("source_run", "target_run")
        return calibrate_runs(ctx, p[src], p[tgt], calibration_family=p["calibration_family"], n_boot=p["n_boot"],
                              n_boot_rank=p["n_boot_rank"], seed=p["seed"], thresholds={"profile": p["profile"], **p["calibration_thresholds"]})
    if name == "aggregation":
        from audits.checks.aggregation import run_aggregation_audit

        return run_aggregation_audit(ctx, environment=p["aggregation_environment"],
                                     campaign=p["aggregation_campaign"], n_boot=p["n_boot"], seed=p["seed"],
                                     thresholds={"profile": p["profile"], **p["aggregation_thresholds"]})
    if name == "simulation":
        from audits.report.render import resolve_files
        from audits.checks.reward_environments import load_reward_environments
        from audits.checks.simulation import run_simulation_audit

        reward_environments = load_reward_environments(resolve_files(p["reward_environment_files"]),
                                                       resolve_files(p["grid_files"]))
        return run_simulation_audit(ctx, reward_environments=reward_environments,
                                    environment=p["simulation_environment"], campaign=p["simulation_campaign"],
                                    group_sizes=p["group_sizes"], seed=p["seed"],
                                    thresholds={"profile": p["profile"], **p["simulation_thresholds"]}, n_boot=p["n_boot"])
    if name == "clocks":
        from audits.checks.clocks import run_clocks_audit
        from audits.corpus.runs import select_rows

        corpus = ctx.corpus
        if p["campaign"] is not None:  # only the runs of this campaign, as on the reliability page
            corpus = select_rows(corpus, ctx.runs.select(campaign=p["campaign"]))  # RunError names the runs
        return run_clocks_audit(corpus, measures=p["clocks_measures"], n_boot=p["n_boot"], seed=p["seed"])
    raise KeyError(name)


class ReportResults:
    """The results a page shows: taken from the shared file when computed with the page's parameters,
    else computed (once, on one shared context) on first access.

    ``corpus`` is a DataFrame, an :class:`~audits.protocol.context.AuditContext`, or the corpus files (loaded with
    :func:`audits.report.render.load_corpora` only when some result has to be computed here).
    """

    def __init__(self, corpus, parameters: Mapping[str, object], stored: Mapping[str, tuple] | None = None):
        self._source = corpus
        self._parameters = dict(parameters)
        self._stored = stored if isinstance(stored, _StoredResults) else _StoredResults(dict(stored or {}))
        self._values: dict[str, object] = {}
        self.computed: list[str] = []  # names computed here rather than read from the shared file

    @cached_property
    def _ctx(self):
        from audits.protocol.context import AuditContext, audit_context

        source = self._source
        if not isinstance(source, (pd.DataFrame, AuditContext)):
            from audits.report.render import load_corpora

            source = load_corpora(source)
        return audit_context(source)

    @property
    def corpus(self) -> pd.DataFrame:
        """The corpus (loaded on first use when the results were given the corpus files)."""
        return self._ctx.corpus

    def _used(self, name: str) -> dict:
        return {k: self._parameters[k] for k in PARAMETERS[name]}

    def get(self, name: str):
        if name not in self._values:
            if self._stored.parameters(name) == self._used(name):
                self._values[name] = self._stored.value(name)
            else:
                self._values[name] = _compute(name, self._ctx, self._used(name))
                self.computed.append(name)
        return self._values[name]

    def __getattr__(self, name: str):
        if name.startswith("_") or name not in PARAMETERS:
            raise AttributeError(name)
        return self.get(name)


def compute_results(corpus, parameters: Mapping[str, object], names=tuple(PARAMETERS)) -> dict[str, tuple]:
    """``{name: (parameters used, result)}`` of every named result, on one shared context.

    A result whose computation raises is left out: the page that shows it then computes it itself and
    fails in its own cell, with the notebook, the cell and the parameters named (as before), while the
    other pages still render.
    """
    missing = sorted({k for name in names for k in PARAMETERS[name]} - set(parameters))
    if missing:  # a caller's mistake, not a page's failure: say so rather than leave the results out
        raise KeyError(f"compute_results: parameters missing: {', '.join(missing)}")
    results = ReportResults(corpus, parameters)
    out = {}
    for name in names:
        try:
            out[name] = (results._used(name), results.get(name))
        except Exception:  # noqa: BLE001 -- reported by the page that needs it, see above
            continue
    return out


class _StoredResults:
    """The shared results of one report run: ``{name: (parameters used, result)}``, each result unpickled
    only when a page asks for it (the overview page does not need the reliability page's cell tables)."""

    def __init__(self, entries: Mapping[str, tuple], path: Path | None = None, base: int = 0):
        self._entries = dict(entries)  # name -> (parameters, result) in memory, or (parameters, (start, size))
        self._path, self._base = path, base

    def parameters(self, name: str):
        entry = self._entries.get(name)
        return None if entry is None else entry[0]

    def value(self, name: str):
        used, payload = self._entries[name]
        if self._path is None:
            return payload
        start, size = payload
        with open(self._path, "rb") as fh:
            fh.seek(self._base + start)
            return pickle.loads(fh.read(size))  # written by this report run (render_reports), never user input

    @classmethod
    def read(cls, path) -> "_StoredResults":
        """The index of a file :func:`write_results` wrote (the results stay on disk until asked for)."""
        with open(path, "rb") as fh:
            index = pickle.load(fh)  # written by this report run (render_reports), never user input
            return cls(index, Path(path), fh.tell())


def write_results(results: Mapping[str, tuple], out_dir: str | os.PathLike) -> Path:
    """Pickle ``results`` into ``out_dir`` (atomically) and return the path.

    The file is an index (``{name: (parameters, (offset, size))}``, one pickle) followed by every result
    pickled on its own, so that a page reads only the results it shows (:func:`page_results`).
    """
    from audits.corpus.io import atomic_write

    payloads = {name: pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL) for name, (_, result) in results.items()}
    index, offset = {}, 0
    for name, (used, _) in results.items():
        index[name] = (used, (offset, len(payloads[name])))
        offset += len(payloads[name])

    def writer(tmp):
        with open(tmp, "wb") as fh:
            pickle.dump(index, fh, protocol=pickle.HIGHEST_PROTOCOL)
            for name in index:
                fh.write(payloads[name])

    return atomic_write(Path(out_dir) / RESULTS_FILE, writer)


def page_results(results_path, corpus, namespace: Mapping[str, object] | None = None, **parameters) -> ReportResults:
    """The results of one page: read from ``results_path`` (written by ``speedaudit report``) where they
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
    return ReportResults(corpus, parameters, _StoredResults.read(results_path))
