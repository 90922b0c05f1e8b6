"""Differences between references are read within their reference pool: a C++ and a Python reference differ by
the interpreter, not by the idea.

DESIGN gives a problem whose references mix languages one pool per language, and every score ranks a solution in
its own language's pool. The ICC(A,1) of log durations (reliability, clocks, discriminability's column) and the
variance components behind ``repeats_needed`` still compared every reference of a problem with every other: on a
real archive collected by ``speedaudit collect`` (oj-lab/problem-packages: one accepted solution per problem,
and one problem with a C++ and a Python one) the audit said ``icc = 0.9955 PASS`` and ``repeats_needed = 1 PASS``
from that single C++/Python pair, a 30x gap that no score ever sees. Both now work per pool
(``stats.ranking.pool_languages``, the rule the pools use): checked against pingouin on each language's rows, and
against the same corpus with every (problem, language) made a problem of its own.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin
import pytest

from audits.checks.reliability import run_reliability_audit
from audits.corpus.synthetic import synthesize
from stats.ranking import POOLS_ATTR
from stats.reliability import correct_reference_rows, log_duration_icc, variance_components

N_BOOT = 30


def _mixed(n_solutions: int, *, seed: int = 4) -> pd.DataFrame:
    """A corpus whose references are half C++ and half Python (the Python ones 30x slower), other rows C++."""
    corpus = synthesize(n_problems=6, n_tests=3, n_solutions=n_solutions, n_incorrect=0, n_candidates=0,
                        n_repeats=3, seed=seed).corpus.copy()
    odd = {name: name.startswith("ref-") and int(name[4:]) % 2 == 1  # ref-001, ref-003, ...
           for name in corpus["solution"].astype(str).unique()}
    python = (corpus["role"] == "reference").to_numpy() & corpus["solution"].astype(str).map(odd).to_numpy(bool)
    corpus["language"] = pd.Categorical(np.where(python, "python", "cpp"))
    corpus.loc[python, "duration_s"] = corpus.loc[python, "duration_s"] * 30.0
    return corpus


def _pingouin_icc2(rows: pd.DataFrame) -> float:
    """ICC(A,1) of log durations, solutions x repeats, by pingouin."""
    data = pd.DataFrame({"solution": rows["solution"].astype(str).to_numpy(), "repeat": rows["repeat"].to_numpy(),
                         "y": np.log(rows["duration_s"].to_numpy(dtype=float))})
    table = pingouin.intraclass_corr(data, targets="solution", raters="repeat", ratings="y")
    return float(table.set_index("Type").loc["ICC(A,1)", "ICC"])


def test_each_language_pool_has_its_own_icc_equal_to_pingouin():
    corpus = _mixed(4)
    refs = correct_reference_rows(corpus)
    table = log_duration_icc(refs)
    assert len(table) == 6 * 3 * 2 and set(table["pool_language"]) == {"cpp", "python"}
    for row in table.itertuples():
        rows = refs.loc[(refs["problem"] == row.problem) & (refs["test"] == row.test)
                        & (refs["language"] == row.pool_language)]
        assert row.n_targets == 2
        assert row.ICC2 == pytest.approx(_pingouin_icc2(rows), abs=1e-12)
    audit = run_reliability_audit(corpus, n_boot=N_BOOT)
    (run,) = audit.runs.values()
    assert run.icc_agreement.estimate == pytest.approx(float(np.median(table["ICC2"])), abs=1e-12)


def test_one_cross_language_pair_per_problem_is_not_measured():
    """Two references per problem, one C++ and one Python: no pool holds two solutions."""
    audit = run_reliability_audit(_mixed(2), n_boot=N_BOOT)
    levels = {f.metric: f.level for f in audit.findings}
    assert levels["icc"] == "n/a" and levels["repeats_needed"] == "n/a", levels
    merged = _mixed(2)
    merged.attrs[POOLS_ATTR] = "one"  # --one-pool: one pool per problem, the languages compared as before
    levels = {f.metric: f.level for f in run_reliability_audit(merged, n_boot=N_BOOT).findings}
    assert levels["icc"] == "pass" and levels["repeats_needed"] == "pass", levels


def test_variance_components_are_those_of_one_problem_per_pool():
    corpus = _mixed(4)
    alone = corpus.assign(problem=corpus["problem"].astype(str) + "/" + corpus["language"].astype(str))
    alone = alone.drop(columns="language")
    split = variance_components(correct_reference_rows(corpus)).table
    apart = variance_components(correct_reference_rows(alone)).table
    pd.testing.assert_frame_equal(split, apart, rtol=1e-12, atol=1e-15)
    same_language = corpus.assign(language=pd.Categorical(["cpp"] * len(corpus)))
    pd.testing.assert_frame_equal(variance_components(correct_reference_rows(same_language)).table,
                                  variance_components(correct_reference_rows(corpus.drop(columns="language"))).table,
                                  rtol=0, atol=0)


def test_significance_pairs_solutions_of_one_pool_only():
    """Whether one reference is faster than another is asked within a pool: every pair of a problem's references
    of one language (whose median scores differ), never a C++ one with a Python one."""
    corpus = _mixed(4)
    (run,) = run_reliability_audit(corpus, n_boot=N_BOOT).runs.values()
    pairs = run.significance.pairs
    solutions = corpus.drop_duplicates(["problem", "solution"])
    language = dict(zip(zip(solutions["problem"].astype(str), solutions["solution"].astype(str)),
                        solutions["language"].astype(str)))
    faster, slower = ([language[p, s] for p, s in zip(pairs["problem"].astype(str), pairs[side].astype(str))]
                      for side in ("faster", "slower"))
    assert len(pairs) and faster == slower
    assert run.significance.n_pairs + run.significance.n_tied == 6 * 2  # one pair per language per problem
