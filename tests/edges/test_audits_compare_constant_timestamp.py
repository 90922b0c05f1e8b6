"""``compare``'s shared-execution finding on a timestamp that tells no order.

Found with a corpus whose every row carries one timestamp (an export that stamps each row with its file's
date): every A and B execution "ran at the same time", the AUC was exactly 1/2 and the finding passed as
"interleaved", though when each execution ran is unknown. Such a column is skipped for the next one
(``order``) and, without one, the finding is ``n/a`` with the reason.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from audits.checks.compare import run_compare_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA


def _shared(corpus):
    audit = run_compare_audit(corpus, a="candidate", b="reference", by="role", n_boot=20)
    (found,) = [f for f in audit.findings if f.metric == "shared_execution"]
    return audit.runs[0], found


def _corpus():
    corpus = synthesize(n_problems=4, n_repeats=2, n_candidates=2, seed=8).corpus.copy()
    corpus["timestamp"] = pd.Timestamp("2026-12-07 08:00", tz="UTC")
    return corpus


def test_one_timestamp_for_every_execution_is_not_interleaving():
    run, found = _shared(_corpus())
    assert found.level == NA, (found.level, found.message)
    assert "same timestamp" in found.reason and run.order_column == "timestamp"


def test_the_order_column_is_read_when_the_timestamp_tells_nothing():
    corpus = _corpus()
    # the candidates ran after every reference: one set after the other
    corpus["order"] = np.where(corpus["role"].astype(str) == "candidate", len(corpus), 0) + np.arange(len(corpus))
    run, found = _shared(corpus)
    assert run.order_column == "order" and run.interleaving_auc == 0.0
    assert found.level == "fail", (found.level, found.message)
