"""Audit results shared by the report pages: each audit computed once per ``speedaudit report``.

The overview page shows every audit's verdicts and each other page shows one
audit's figures; before this module each page ran its audits again (every
audit twice per report). Now :func:`audits.report.render.render_reports`
computes every audit once, on one :class:`audits.context.AuditContext`
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
from pathlib import Path

__all__ = ["PARAMETERS", "RESULTS_FILE", "ReportResults", "compute_results", "write_results", "page_results"]

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
}


def _compute(name: str, ctx, p: Mapping[str, object]):
    """One result from the template parameters ``p``, exactly as the pages computed it."""
    if name == "reliability":
        from audits.reliability import ReliabilityThresholds, run_reliability_audit

        return run_reliability_audit(ctx, campaign=p["campaign"], n_boot=p["n_boot"], seed=p["seed"],
                                     thresholds=ReliabilityThresholds.coerce(p["reliability_thresholds"], profile=p["profile"]))
    if name == "discriminability":
        from audits.discriminability import DiscriminabilityThresholds, run_discriminability_audit

        return run_discriminability_audit(
            ctx, floor_s=p["floor_s"], campaign=p["campaign"], n_boot=p["n_boot"], seed=p["seed"],
            thresholds=DiscriminabilityThresholds.coerce(p["discriminability_thresholds"], profile=p["profile"]))
    if name in ("stored", "across"):
        from audits.report.render import calibrate_runs

        src, tgt = ("stored_run", "fresh_run") if name == "stored" else ("source_run", "target_run")
        return calibrate_runs(ctx, p[src], p[tgt], calibration_family=p["calibration_family"], n_boot=p["n_boot"],
                              n_boot_rank=p["n_boot_rank"], seed=p["seed"], thresholds={"profile": p["profile"], **p["calibration_thresholds"]})
    if name == "aggregation":
        from audits.aggregation import run_aggregation_audit

        return run_aggregation_audit(ctx, environment=p["aggregation_environment"],
                                     campaign=p["aggregation_campaign"], n_boot=p["n_boot"], seed=p["seed"],
                                     thresholds={"profile": p["profile"], **p["aggregation_thresholds"]})
    if name == "simulation":
        from audits.report.render import resolve_files
        from audits.reward_environments import load_reward_environments
        from audits.simulation import run_simulation_audit

        reward_environments = load_reward_environments(resolve_files(p["reward_environment_files"]),
                                                       resolve_files(p["grid_files"]))
        return run_simulation_audit(ctx, reward_environments=reward_environments,
                                    environment=p["simulation_environment"], campaign=p["simulation_campaign"],
                                    group_sizes=p["group_sizes"], seed=p["seed"],
                                    thresholds={"profile": p["profile"], **p["simulation_thresholds"]}, n_boot=p["n_boot"])
    if name == "clocks":
        from audits.clocks import run_clocks_audit
        from audits.corpus.runs import select_rows

        corpus = ctx.corpus
        if p["campaign"] is not None:  # only the runs of this campaign, as on the reliability page
            corpus = select_rows(corpus, ctx.runs.select(campaign=p["campaign"]))  # RunError names the runs
        return run_clocks_audit(corpus, measures=p["clocks_measures"], n_boot=p["n_boot"], seed=p["seed"])
    raise KeyError(name)


class ReportResults:
    """The results a page shows: taken from the shared file when computed with the page's parameters,
    else computed (once, on one shared context) on first access."""

    def __init__(self, corpus, parameters: Mapping[str, object], stored: Mapping[str, tuple] | None = None):
        from audits.context import audit_context

        self._ctx = audit_context(corpus)
        self._parameters = dict(parameters)
        self._stored = dict(stored or {})
        self._values: dict[str, object] = {}
        self.computed: list[str] = []  # names computed here rather than read from the shared file

    def _used(self, name: str) -> dict:
        return {k: self._parameters[k] for k in PARAMETERS[name]}

    def get(self, name: str):
        if name not in self._values:
            shared = self._stored.get(name)
            if shared is not None and shared[0] == self._used(name):
                self._values[name] = shared[1]
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


def write_results(results: Mapping[str, tuple], out_dir: str | os.PathLike) -> Path:
    """Pickle ``results`` into ``out_dir`` (atomically) and return the path."""
    from audits.corpus.io import atomic_write

    def writer(tmp):
        with open(tmp, "wb") as fh:
            pickle.dump(dict(results), fh, protocol=pickle.HIGHEST_PROTOCOL)

    return atomic_write(Path(out_dir) / RESULTS_FILE, writer)


def page_results(results_path, corpus, namespace: Mapping[str, object] | None = None, **parameters) -> ReportResults:
    """The results of one page: read from ``results_path`` (written by ``speedaudit report``) where they
    were computed with the page's parameter values, computed here otherwise (``results_path`` None: all).

    The values are ``parameters``, or taken from ``namespace`` (a page passes ``globals()``: its own
    parameter values, so every template calls this the same way) for the names :data:`PARAMETERS` uses.
    """
    wanted = {k for keys in PARAMETERS.values() for k in keys}
    parameters = {**{k: v for k, v in (namespace or {}).items() if k in wanted}, **parameters}
    stored = None
    if results_path:
        with open(results_path, "rb") as fh:
            stored = pickle.load(fh)  # written by this report run (render_reports), never user input
    return ReportResults(corpus, parameters, stored)
