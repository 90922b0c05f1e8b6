"""A corpus DataFrame given to the audits directly keeps the loader's duration rules (one path).

Found (helper session, 2026-12-07): the command line refuses an ok execution without a duration (the loader,
``audits.corpus.table.normalize``), but ``speedaudit.run_all(frame)`` and the audit functions took the frame as it
was and ranked the NaN: on a synthetic corpus with every 7th reference execution blanked, p95_rank_range read 129
points (a percentile range cannot pass 100) and failed, mean_rank_range and total_pct's stability failed, and the
strong-weak gap fell from pass to warn. Now every path refuses it as the loader does, naming the rows.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import speedaudit
from audits.checks.reliability import run_reliability_audit
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.paths import CorpusError
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=4, n_tests=2, n_repeats=3, seed=2).corpus


def _broken(corpus, value):
    out = corpus.copy()
    rows = np.flatnonzero((out["role"] == "reference").to_numpy())[::7]
    out.loc[rows, "duration_s"] = value
    return out


@pytest.mark.parametrize(("value", "said"), [(np.nan, "missing (NaN) duration on ok rows"),
                                             (-1.0, "negative durations"), (np.inf, "infinite durations")])
def test_every_entry_refuses_what_the_loader_refuses(corpus, value, said, tmp_path):
    broken = _broken(corpus, value)
    for call in (lambda: speedaudit.run_all(broken), lambda: run_audits(broken),
                 lambda: run_reliability_audit(broken, n_boot=10)):
        with pytest.raises(CorpusError, match=re.escape(said)) as info:
            call()
        assert "first offending rows" in str(info.value) and "ref-" in str(info.value)
    path = tmp_path / "c.csv"  # the loader says the same of the file
    broken.to_csv(path, index=False)
    with pytest.raises(CorpusError, match=re.escape(said)):
        load_corpus(path)


def test_a_frame_may_hold_a_coarse_timers_zeros(corpus):
    """A zero on an ok row (a coarse timer's reading) is the file reader's judgement, not the frame's: accepted."""
    run_audits(_broken(corpus, 0.0), ["reliability"])


def test_non_ok_rows_may_have_no_duration(corpus, tmp_path):
    """A timeout or crash recorded without a duration stays allowed (the penalty reads its limit)."""
    out = corpus.copy()
    rows = np.flatnonzero((out["role"] == "reference").to_numpy())[::7]
    out.loc[rows, "status"] = "timeout"
    out.loc[rows, "duration_s"] = np.nan
    run_audits(out, ["reliability"])
    save_corpus(out, tmp_path / "t.parquet")
    assert load_corpus(tmp_path / "t.parquet")["duration_s"].isna().sum() == len(rows)
