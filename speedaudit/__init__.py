"""speedaudit: audit the measurement chain behind runtime-based rewards for code.

The public API, a handful of names (the modules of :mod:`audits` and :mod:`stats` are the
implementation; their names may move):

* :func:`load_corpus` -- read and validate a timing corpus (Parquet, CSV, JSON lines);
* :func:`run_audit` -- one audit by name (:data:`AUDITS`); :func:`run_all` -- every audit once on one
  shared run context (what ``speedaudit audit all`` runs);
* :func:`render_report` -- the HTML report pages and their index (``speedaudit report``);
* :func:`collect` -- time a suite's submissions in a sandbox and write a corpus (``speedaudit collect``);
* :func:`dump_results` / :func:`load_results` -- results as versioned JSON and back into the result types;
* the result types: :class:`Finding`, :class:`WholeAudit` and one class per audit.

The names are imported when first used (``import speedaudit`` itself loads no scientific library).

Examples
--------
>>> import speedaudit
>>> corpus = speedaudit.load_corpus("fixtures/corpora/quiet-a.parquet")   # doctest: +SKIP
>>> audit = speedaudit.run_audit("reliability", corpus, n_boot=100)          # doctest: +SKIP
>>> audit.findings[0].level                                                 # doctest: +SKIP
'pass'
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from audits import version as _version

__version__ = _version()

#: Where each public name lives (imported on first use, see :func:`__getattr__`).
_NAMES = {
    "load_corpus": "audits.corpus.io",
    "run_audit": "speedaudit._api",
    "run_all": "speedaudit._api",
    "render_report": "speedaudit._api",
    "collect": "speedaudit._api",
    "AUDITS": "speedaudit._api",
    "dump_results": "audits.protocol.saved",
    "load_results": "audits.protocol.saved",
    "Finding": "audits.protocol.findings",
    "WholeAudit": "audits.engine.whole_audit",
    "ReliabilityAudit": "audits.checks.reliability",
    "DiscriminabilityAudit": "audits.checks.discriminability",
    "CalibrationAudit": "audits.checks.calibration",
    "AggregationAudit": "audits.checks.aggregation",
    "SimulationAudit": "audits.checks.simulation",
    "ClocksAudit": "audits.checks.clocks",
    "CampaignResult": "audits.collect.campaign",
    "ReportIndex": "audits.report.render",
}

__all__ = ["__version__", "load_corpus", "run_audit", "run_all", "render_report", "collect", "AUDITS", "dump_results",
           "load_results", "Finding", "WholeAudit", "ReliabilityAudit", "DiscriminabilityAudit", "CalibrationAudit",
           "AggregationAudit", "SimulationAudit", "ClocksAudit", "CampaignResult", "ReportIndex"]  # = _NAMES (tested)

if TYPE_CHECKING:  # for readers and type checkers; at run time the names are imported on first use
    from audits.checks.aggregation import AggregationAudit
    from audits.checks.calibration import CalibrationAudit
    from audits.checks.clocks import ClocksAudit
    from audits.checks.discriminability import DiscriminabilityAudit
    from audits.checks.reliability import ReliabilityAudit
    from audits.checks.simulation import SimulationAudit
    from audits.collect.campaign import CampaignResult
    from audits.corpus.io import load_corpus
    from audits.engine.whole_audit import WholeAudit
    from audits.protocol.findings import Finding
    from audits.report.render import ReportIndex
    from audits.protocol.saved import dump_results, load_results
    from speedaudit._api import AUDITS, collect, render_report, run_all, run_audit


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'speedaudit' has no attribute {name!r}")
    value = getattr(importlib.import_module(_NAMES[name]), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__():
    return sorted(__all__)
