"""significant_share is a function of the scores, not of the names, when the pairs are a sample.

With more pairs than ``max_pairs`` a seeded sample of them is tested; the sample took positions in the order of
the problems' and solutions' names, so renaming the same rows tested other pairs: 0.867, 0.833 or 0.767 of 30
sampled pairs for one corpus (168 pairs). The pairs are now enumerated in the order of their data (a hash of
each solution's sorted repeat scores; problems by their solutions' keys), and the bootstrap over problems too.
Renamed (odd unicode, another order) and shuffled copies test the same pairs and give the same share and CI;
each tested pair's p-value is scipy's exact one-sided Mann-Whitney U of the two solutions' repeat scores.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from audits.corpus.synthetic import synthesize
from stats.reliability import pairwise_significance, per_repeat_scores

MAX_PAIRS = 30


@pytest.fixture(scope="module")
def scores():
    corpus = synthesize(n_problems=6, n_tests=3, n_solutions=8, n_repeats=6, n_candidates=0, n_incorrect=0,
                        seed=4).corpus
    corpus = corpus.loc[(corpus["environment"] == "quiet").to_numpy()].reset_index(drop=True)
    out = per_repeat_scores(corpus)
    for column in ("problem", "solution"):
        out[column] = out[column].astype(str)
    return out


def _renamed(scores, column: str, seed: int):
    names = sorted(scores[column].unique())
    perm = np.random.default_rng(seed).permutation(len(names))
    mapping = {n: f"\u00e9\u0301{perm[i]:03d}\U0001F600 {n[::-1]}" for i, n in enumerate(names)}
    out = scores.copy()
    out[column] = out[column].map(mapping)
    return out, {v: k for k, v in mapping.items()}


def _tested(sig, back: dict | None = None, column: str | None = None) -> set:
    pairs = sig.pairs
    name = (lambda v, c: back.get(v, v) if c == column else v) if back else (lambda v, c: v)
    return {(name(p, "problem"), name(f, "solution"), name(s, "solution"))
            for p, f, s in zip(pairs["problem"], pairs["faster"], pairs["slower"])}


def _figures(sig):
    return sig.share.estimate, sig.share.low, sig.share.high, sig.n_tested


def test_sample_is_a_function_of_the_scores(scores):
    n_solutions = scores.groupby("problem")["solution"].nunique()
    assert int((n_solutions * (n_solutions - 1) // 2).sum()) > MAX_PAIRS  # the pairs are a sample
    base = pairwise_significance(scores, max_pairs=MAX_PAIRS, n_boot=200)
    for column, seed in (("problem", 1), ("solution", 2), ("problem", 3)):
        renamed, back = _renamed(scores, column, seed)
        other = pairwise_significance(renamed, max_pairs=MAX_PAIRS, n_boot=200)
        assert _figures(other) == _figures(base), column
        assert _tested(other, back, column) == _tested(base)
    shuffled = pairwise_significance(scores.sample(frac=1.0, random_state=5), max_pairs=MAX_PAIRS, n_boot=200)
    assert _figures(shuffled) == _figures(base) and _tested(shuffled) == _tested(base)


def test_tested_pairs_match_scipy(scores):
    sig = pairwise_significance(scores, max_pairs=MAX_PAIRS, n_boot=0)
    values = scores.set_index(["problem", "solution"])["q"]
    for row in sig.pairs.itertuples():
        fast = values.loc[(row.problem, row.faster)].to_numpy(dtype=float)
        slow = values.loc[(row.problem, row.slower)].to_numpy(dtype=float)
        expected = mannwhitneyu(fast, slow, alternative="less", method="exact").pvalue
        assert row.pvalue == pytest.approx(expected, rel=1e-9, abs=1e-12)
