"""A non-ok execution recorded without a duration (NaN) is penalised at its time limit, as one recorded with it.

The loader allows NaN durations on non-ok rows. The penalty of a non-ok execution is documented as
max(d_t, timeout_s, 2 x slowest reference), but the percentile tables the comparison scores keep the key
columns only, so ``timeout_s`` never reached it: a timeout recorded at its limit was penalised at the limit
(through d_t), the same timeout recorded as NaN only at twice the slowest reference. On a busy run with a
sixth of the rows timed out, blanking the non-ok durations moved geo_ratio's dynamic range by 1.3 points and
confident domination (dominated_aggregators 10 -> 8). A wrong answer after 5 ms is likewise penalised at the
limit now, as documented, not at twice the slowest reference.
"""

from __future__ import annotations

import json

import numpy as np

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize


def _audit(corpus) -> str:
    return json.dumps(run_aggregation_audit(corpus, n_boot=40).to_dict(), sort_keys=True, default=str)


def test_blank_durations_of_non_ok_rows_change_nothing():
    corpus = synthesize(n_problems=8, n_tests=4, n_repeats=3, noise_cv=0.2, seed=5, timeout_s=0.4, busy=True).corpus
    failed = (corpus["status"].astype(str) != "ok").to_numpy()
    assert failed.mean() > 0.1
    blank = corpus.copy()
    blank.loc[failed, "duration_s"] = np.nan
    assert _audit(blank) == _audit(corpus)
