"""``compare`` on a campaign of one repeat per cell, where some executions timed out.

With one repeat no cell has a variance estimate, so every comparison of two ok cells is undefined and left out;
the comparisons against a timeout are still decided (a timeout is the slower). On such a corpus the win rate
rested on the timeouts alone and was judged ``pass`` ("A is faster: the 95 % CI excludes 1/2") from a handful of
the comparisons, the rest silently dropped. It cannot be measured there: ``n/a`` with the counts and what to do.
"""

from __future__ import annotations

import pandas as pd

from audits.checks.compare import run_compare_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA


def _planted(n_repeats: int) -> pd.DataFrame:
    corpus = synthesize(n_problems=6, n_repeats=n_repeats, n_candidates=2, seed=4).corpus.copy()
    candidate = corpus["role"].astype(str) == "candidate"
    first = sorted(corpus.loc[candidate & (corpus["test_kind"].astype(str) == "optimization"), "test"].astype(str))[0]
    slow = candidate & (corpus["test"].astype(str) == first)  # every candidate times out on one test
    corpus["status"] = pd.Categorical(corpus["status"].astype(str).where(~slow, "timeout"),
                                      categories=corpus["status"].cat.categories)
    corpus["duration_s"] = corpus["duration_s"].where(~slow, corpus["timeout_s"])
    return corpus


def _win_rate(corpus):
    audit = run_compare_audit(corpus, a="reference", b="candidate", by="role", n_boot=50)
    (found,) = [f for f in audit.findings if f.metric == "win_rate"]
    return audit.runs[0].result, found


def test_one_repeat_with_timeouts_is_not_a_verdict():
    result, found = _win_rate(_planted(1))
    assert result.n_undefined > 0 and result.n_comparisons > 0  # the timeouts' comparisons alone are defined
    assert found.level == NA, (found.level, found.message)
    assert f"{result.n_undefined:,} of {result.n_undefined + result.n_comparisons:,}" in found.reason
    assert "collect at least 2 repeats" in found.reason


def test_two_repeats_of_the_same_corpus_are_judged():
    result, found = _win_rate(_planted(2))
    assert result.n_undefined == 0 and found.level in ("pass", "warn"), (found.level, found.message)
