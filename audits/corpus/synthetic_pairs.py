"""A synthetic corpus of two candidate sets with a planted paired win rate (for ``speedaudit compare``).

Every problem has references and two sets of candidates, ``A/...`` and ``B/...`` (the set is the
solution id's prefix, as ``collect --candidates A=DIR`` writes it), run in one interleaved campaign.
Each problem is of one kind, drawn without replacement in planted proportions:

* ``a``: every A candidate is truly faster than every B candidate (log gap ``gap`` on every test);
* ``b``: every B candidate is faster by the same gap;
* ``tie``: A and B candidates have the same true duration on every test.

The planted win rate (mean over problems of the share of A x B comparisons A truly wins, a tie
counting 1/2) is share(a) + share(tie)/2. Repeats are lognormal around the truth with sd ``noise``
(log scale). ``n_fail_a``/``n_fail_b`` candidates of each set per problem give a wrong answer on the
correctness test (they fail c), so the planted pass rates are 1 - n_fail/n.

Example
-------
>>> synth = synthesize_pairs(n_problems=8, share_a=0.5, share_tie=0.25, seed=1)
>>> synth.planted_win_rate, sorted(synth.truth["kind"].value_counts().items())
(0.625, [('a', 4), ('b', 2), ('tie', 2)])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["SyntheticPairs", "synthesize_pairs"]


@dataclass(frozen=True)
class SyntheticPairs:
    """The corpus, the kind of every problem (``truth``) and the planted win rate and pass rates."""

    corpus: pd.DataFrame
    truth: pd.DataFrame
    planted_win_rate: float
    planted_pass_rate_a: float
    planted_pass_rate_b: float


def synthesize_pairs(*, n_problems: int = 40, share_a: float = 0.65, share_tie: float = 0.2, n_a: int = 2,
                     n_b: int = 2, n_references: int = 4, n_tests: int = 3, n_repeats: int = 4,
                     noise: float = 0.03, gap: float = 0.4, n_fail_a: int = 0, n_fail_b: int = 0,
                     sequential: bool = False, seed: int = 0) -> SyntheticPairs:
    """Build the corpus (see the module docstring); ``sequential``: every A execution runs before every B one
    (the ``order`` column), instead of one shuffled campaign."""
    rng = np.random.default_rng(seed)
    n_kind_a = int(round(share_a * n_problems))
    n_tie = int(round(share_tie * n_problems))
    if n_kind_a + n_tie > n_problems or min(n_kind_a, n_tie) < 0:
        raise ValueError("share_a + share_tie must lie in [0, 1]")
    kinds = np.array(["a"] * n_kind_a + ["tie"] * n_tie + ["b"] * (n_problems - n_kind_a - n_tie))
    kinds = kinds[rng.permutation(n_problems)]
    rows = []
    width = len(str(n_problems - 1))
    for i, kind in enumerate(kinds):
        problem = f"p{i:0{width}d}"
        workload = np.log(rng.uniform(0.05, 0.5, n_tests))
        offset = {"a": (0.0, gap), "b": (gap, 0.0), "tie": (0.0, 0.0)}[kind]
        solutions = [(f"accepted/r{k}.py", "reference", workload + rng.uniform(-0.6, 0.6), False)
                     for k in range(n_references)]
        for side, n, n_fail, off in (("A", n_a, n_fail_a, offset[0]), ("B", n_b, n_fail_b, offset[1])):
            solutions += [(f"{side}/s{k}.py", "candidate", workload + off, k < n_fail) for k in range(n)]
        for solution, role, mu, fails in solutions:
            for r in range(n_repeats):
                rows.append({"problem": problem, "test": "c0", "solution": solution, "repeat": r, "role": role,
                             "test_kind": "correctness", "status": "wrong_answer" if fails else "ok",
                             "duration_s": 0.01})
                for t in range(n_tests):
                    rows.append({"problem": problem, "test": f"o{t}", "solution": solution, "repeat": r,
                                 "role": role, "test_kind": "optimization", "status": "ok",
                                 "duration_s": float(np.exp(mu[t] + rng.normal(0.0, noise)))})
    corpus = pd.DataFrame(rows)
    corpus["correct"] = True  # candidates carry no dataset label: their correctness is their statuses
    side = corpus["solution"].str[0].to_numpy()
    key = rng.permutation(len(corpus)) + (np.where(side == "B", len(corpus), 0) if sequential else 0)
    corpus["order"] = np.argsort(np.argsort(key))
    corpus.insert(0, "campaign", "c0")
    corpus.insert(0, "environment", "synthetic")
    truth = pd.DataFrame({"problem": [f"p{i:0{width}d}" for i in range(n_problems)], "kind": kinds})
    planted = (float(np.sum(kinds == "a")) + 0.5 * float(np.sum(kinds == "tie"))) / n_problems
    return SyntheticPairs(corpus=corpus, truth=truth, planted_win_rate=planted,
                          planted_pass_rate_a=1 - n_fail_a / n_a, planted_pass_rate_b=1 - n_fail_b / n_b)
