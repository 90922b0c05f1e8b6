"""compare's shared_execution when a set has no timestamp: n/a naming the column and the set.

The interleaving of the two sets is read from ``timestamp`` (else ``order``). A corpus that has the column but
no value there for one set's executions (set B merged in from a file without times) was n/a with "no timestamp
or order column: when each execution ran is unknown", which denies the column the user can see. The reason now
names the column and the set without values.
"""

from __future__ import annotations

import pandas as pd

from audits.checks.compare import run_compare_audit
from audits.corpus.io import normalize
from audits.corpus.synthetic_pairs import synthesize_pairs


def _shared(frame):
    audit = run_compare_audit(normalize(frame), a="A", b="B", n_boot=50)
    return {f.metric: f for f in audit.findings}["shared_execution"]


def test_timestamp_missing_for_one_set():
    corpus = synthesize_pairs(n_problems=6, share_a=0.7, share_tie=0.2, seed=0).corpus.drop(columns=["order"])
    start = pd.Timestamp("2026-01-01", tz="UTC")
    corpus["timestamp"] = [start + pd.Timedelta(seconds=i) for i in range(len(corpus))]
    b = corpus["solution"].astype(str).str.startswith("B/").to_numpy()
    corpus.loc[b, "timestamp"] = pd.NaT
    finding = _shared(corpus)
    assert finding.level == "n/a"
    assert "timestamp" in finding.message and "set B" in finding.message, finding.message
    assert "no timestamp or order column" not in finding.message


def test_no_column_keeps_its_reason():
    corpus = synthesize_pairs(n_problems=6, share_a=0.7, share_tie=0.2, seed=0).corpus.drop(columns=["order"])
    finding = _shared(corpus)
    assert finding.level == "n/a" and "no timestamp or order column" in finding.message, finding.message
