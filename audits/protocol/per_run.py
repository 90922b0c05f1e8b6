"""The result shape of an audit that covers every run side by side (reliability, discriminability).

Such a result holds ``runs`` (each :class:`~audits.corpus.runs.Run` mapped to its per-run result, which has
``headline()`` and ``to_dict()``), ``findings``, ``thresholds`` and ``run_rule``; :class:`PerRunAudit` gives it
the lookup of one run, the table of headlines and the JSON, written once for every such audit.
"""

from __future__ import annotations

from typing import ClassVar

import pandas as pd

from audits.protocol.findings import to_jsonable

__all__ = ["PerRunAudit"]


def one_result(results: dict, environment: str, campaign: str | None):
    """The one result of ``results`` (``{Run: result}``) in ``environment`` (and ``campaign``, if given).

    Raises KeyError naming the runs there are when none or several match."""
    matches = [res for run, res in results.items()
               if run.environment == environment and (campaign is None or run.campaign == campaign)]
    if len(matches) != 1:
        have = ", ".join(str(r) for r in results)
        raise KeyError(f"{len(matches)} results for environment {environment!r}"
                       + (f", campaign {campaign!r}" if campaign is not None else "") + f"; runs: {have}")
    return matches[0]


class PerRunAudit:
    """Mixin of a per-run audit result (a frozen dataclass with ``runs``, ``findings``, ``thresholds``,
    ``run_rule``); ``audit_name`` is the audit's registered name, written into its JSON."""

    audit_name: ClassVar[str]

    def result(self, environment: str, campaign: str | None = None):
        """The result of one run (``campaign`` may be left out when the environment has one run here)."""
        return one_result(self.runs, environment, campaign)

    def to_frame(self) -> pd.DataFrame:
        """One row per run with the headline metrics."""
        return pd.DataFrame([res.headline() for res in self.runs.values()])

    def to_dict(self) -> dict:
        return to_jsonable({
            "audit": self.audit_name,
            "run_rule": self.run_rule,
            "runs": [res.to_dict() for res in self.runs.values()],
            "findings": [f.to_dict() for f in self.findings],
            "thresholds": self.thresholds.to_dict(),
        })
