"""The report templates speedaudit renders: names, titles, what each needs (no numpy, no pandas: the command
line's ``--help`` lists them). :mod:`audits.report.render` renders them and re-exports :data:`REPORTS`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ReportSpec", "REPORTS"]


@dataclass(frozen=True)
class ReportSpec:
    """One report template: its name (= notebook file stem), title and one-line description."""

    name: str
    title: str
    description: str
    requires: tuple[str, ...] = ()  # modules the notebook imports (to leave it out until they exist)


REPORTS: dict[str, ReportSpec] = {spec.name: spec for spec in (
    ReportSpec("overview", "Overview: verdicts of every audit",
               "All audits on this corpus, worst verdicts first, with what to do."),
    ReportSpec("reliability", "Sandbox reliability and discriminability",
               "Repeat CV per environment, rank drift, floor share, duration-filterable problems.",
               ("audits.checks.reliability", "audits.checks.discriminability")),
    ReportSpec("clocks", "The choice of clock: wall time, CPU time, ...",
               "The same figures per run under each clock, their rank agreement, and which clock to trust.",
               ("audits.checks.clocks",)),
    ReportSpec("calibration", "Calibration of stored reference timings",
               "Fitted families with leave-one-problem-out R², Bland-Altman, percentile agreement.",
               ("audits.checks.calibration",)),
    ReportSpec("aggregation", "Aggregation of per-test timings",
               "Stability vs dynamic range of the aggregators, with the Pareto front.",
               ("audits.checks.aggregation",)),
    ReportSpec("simulation", "Reward learnability (offline simulator)",
               "Reward-vs-quality curves, diagnostics, zero-advantage rate vs GRPO group size.",
               ("audits.checks.simulation",)),
    ReportSpec("compare", "Paired comparison of two candidate sets",
               "Paired speed win rate of set A over set B in one campaign, ties by the noise model, pass rates.",
               ("audits.checks.compare",)),
)}
