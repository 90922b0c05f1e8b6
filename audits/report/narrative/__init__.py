"""Prose and display helpers for the report notebooks.

Everything a report *says* about its numbers comes from a function here, so a
unit test can reach it (the notebooks only call these). Two kinds of helpers:

* **verdict display**: :func:`show_findings` renders a list of
  :class:`~audits.protocol.findings.Finding` as an HTML table and, beside it, as a
  machine-readable output (mimetype :data:`FINDINGS_MIMETYPE`) that
  :mod:`audits.report.render` reads back from the executed notebook to build the
  index page's headline verdicts;
* **interpretation**: small functions that turn an audit's numbers into one
  or two sentences (``describe_*``), always quoting the number, its interval
  and n, and saying what to do when a threshold is crossed.

Examples
--------
>>> from audits.protocol.findings import Finding
>>> f = [Finding("warn", "median_repeat_cv", 0.12, "<= 0.05 pass", "Timing is noisy.", "busy")]
>>> verdict_sentence(f)
'Verdict: WARN (0 fail, 1 warn, 0 pass). Worst: [busy] median_repeat_cv = 0.12 - Timing is noisy.'
"""

from __future__ import annotations

from audits.report.narrative.common import (FINDINGS_MIMETYPE, show_findings, format_value, Markdown, show_figure,
                                            show_plot, describe_run_rule)
from audits.report.narrative.corpus import corpus_overview, describe_corpus, describe_counts, run_table
from audits.report.narrative.calibration import (describe_calibration_pairs, calibration_verdicts,
                                                 show_calibration_findings, show_calibration_pairs)
from audits.report.narrative.reliability import (reliability_table, describe_reliability, discriminability_table,
                                                 describe_discriminability, contention_table, describe_contention)
from audits.report.narrative.aggregation import aggregation_table, describe_aggregation
from audits.report.narrative.simulation import simulation_table, describe_simulation
from audits.report.narrative.overview import describe_overview, describe_profile, show_verdicts, describe_not_measured
from audits.report.narrative.clocks import (CLOCK_AGREEMENT, CLOCK_FIGURES, clocks_table, clock_agreement_table,
                                            describe_clocks, show_clocks_plot, clocks_headline)
# Reached through the package by the unit tests (tests/report) and this docstring's example, not exported (nothing
# else uses them: tests/test_public_surface.py):
from audits.report.narrative.common import (findings_frame, rank_findings, verdict_sentence,  # noqa: F401
                                            format_interval, figure_notes)  # noqa: F401
from audits.report.narrative.overview import verdict_overview  # noqa: F401
from audits.report.narrative.calibration import calibration_fit_table, describe_calibration  # noqa: F401

__all__ = ["FINDINGS_MIMETYPE", "show_findings", "format_value", "Markdown", "show_figure", "corpus_overview",
           "describe_corpus", "describe_counts", "run_table", "reliability_table", "describe_reliability", "discriminability_table", "describe_discriminability",
           "aggregation_table", "describe_aggregation", "simulation_table", "describe_simulation", "describe_overview",
           "describe_profile", "show_plot", "show_verdicts", "contention_table", "describe_contention",
           "CLOCK_AGREEMENT", "CLOCK_FIGURES", "clocks_table", "clock_agreement_table", "describe_clocks",
           "show_clocks_plot", "clocks_headline", "describe_not_measured", "describe_run_rule",
           "describe_calibration_pairs", "calibration_verdicts", "show_calibration_findings", "show_calibration_pairs"]
