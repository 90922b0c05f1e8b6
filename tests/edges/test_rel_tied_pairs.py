"""significant_share's n/a reason when every pair of references ties: not "needs >= 2 references ... repeats".

Four references per problem, five repeats, every duration equal (equally fast programs, or a clock that cannot
separate them): no pair has a faster member, so nothing is tested and the share is n/a. Its reason said "no pair
could be tested (needs >= 2 references per problem with >= 2 repeats)", which the corpus has, sending the reader
to collect what is there. Now it says every pair ties; a corpus of one reference per problem keeps the old
reason. The pair counts are checked by hand (C(4, 2) pairs per problem).
"""

from __future__ import annotations

import math

from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize


def _corpus(n_solutions: int):
    corpus = synthesize(n_problems=3, n_tests=2, n_solutions=n_solutions, n_repeats=5, n_candidates=0,
                        n_incorrect=0, seed=1).corpus
    return corpus.loc[(corpus["environment"] == "quiet").to_numpy()].reset_index(drop=True)


def _significance(corpus):
    return next(f for f in run_reliability_audit(corpus, n_boot=10).findings if f.metric == "significant_share")


def test_every_pair_tied_says_so():
    corpus = _corpus(4)
    corpus["duration_s"] = 0.05
    found = _significance(corpus)
    assert found.level == "n/a"
    pairs = 3 * math.comb(4, 2)
    assert f"every one of the {pairs} pairs" in found.message and "5 repeats" in found.message
    assert "needs >= 2 references" not in found.message


def test_one_reference_per_problem_keeps_its_reason():
    found = _significance(_corpus(1))
    assert found.level == "n/a" and "needs >= 2 references per problem" in found.message
