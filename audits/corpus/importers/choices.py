"""The choices of the importers' options, without numpy or pandas (``speedaudit import pyperf --help`` lists them)."""

__all__ = ["CAMPAIGN_FROM", "SOLUTION_FROM"]

#: ``--campaign-from`` / ``--solution-from`` choices (the first is the default; see the module docstring).
CAMPAIGN_FROM = ("date", "file", "build")
SOLUTION_FROM = ("build", "benchmark-suite")
