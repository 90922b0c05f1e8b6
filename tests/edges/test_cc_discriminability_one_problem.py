"""Discriminability with fewer than 2 measured problems: the figures over problems are n/a with the reason.

The filterable share (share of problems whose robust CV across their optimization tests is >= 0.3), its
noise-aware inflation and the strong-weak gap are means over problems, each with a bootstrap CI over problems.
With one problem the share is 0 or 100 % and there is no interval; the audit judged pass/fail from it anyway,
while calibration (MIN_PROBLEMS = 2: a held-out problem) and compare's win rate (n/a with one problem) say the
corpus cannot measure the question. Now discriminability says so too, in memory and on Dask alike, on nanosecond
and ten-second timings (a count of problems, not a duration). Two problems are judged again, and the judged share
is the one numpy computes from the reference medians.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.discriminability import run_discriminability_audit
from audits.corpus.dataset import save_dataset
from audits.corpus.synthetic import synthesize

FIGURES = ("filterable_share", "noise_inflated_filterable_share", "strong_weak_gap")


def _corpus(n_problems: int, scale: float) -> pd.DataFrame:
    corpus = synthesize(n_problems=n_problems, n_tests=4, n_solutions=8, n_repeats=4, seed=3).corpus
    corpus["duration_s"] = corpus["duration_s"].to_numpy(dtype=float) * scale
    return corpus


def _levels(audit) -> dict:
    return {f.metric: f for f in audit.findings if f.metric in FIGURES}


def _hand_filterable_share(corpus: pd.DataFrame) -> float:
    """Share of problems with IQR / median >= 0.3 of their optimization tests' reference medians (numpy)."""
    refs = corpus.loc[(corpus["role"] == "reference") & (corpus["status"] == "ok")
                      & (corpus["test_kind"] == "optimization") & corpus["correct"].astype(bool)]
    per_solution = refs.groupby(["problem", "test", "solution"], observed=True)["duration_s"].median()
    per_test = per_solution.groupby(["problem", "test"], observed=True).median()
    flags = []
    for _, medians in per_test.groupby(level="problem", observed=True):
        q1, q2, q3 = np.percentile(medians.to_numpy(), [25, 50, 75])
        flags.append((q3 - q1) / q2 >= 0.3)
    return float(np.mean(flags))


@pytest.mark.parametrize("scale", [1e-6, 1.0, 500.0])  # ~20 ns, ~20 ms and ~10 s programs
def test_one_problem_is_not_judged(scale):
    corpus = _corpus(1, scale)
    found = _levels(run_discriminability_audit(corpus, n_boot=200))
    assert set(found) == set(FIGURES)
    for finding in found.values():
        assert finding.level == "n/a", finding
        assert "1 problem" in finding.message and ">= 2" in finding.message, finding.message


@pytest.mark.parametrize("scale", [1e-6, 500.0])
def test_two_problems_are_judged(scale):
    corpus = _corpus(2, scale)
    found = _levels(run_discriminability_audit(corpus, n_boot=200))
    assert found["filterable_share"].level in ("pass", "warn", "fail")
    assert found["strong_weak_gap"].level in ("pass", "warn", "fail")
    assert found["filterable_share"].value == pytest.approx(_hand_filterable_share(corpus))


def test_dask_says_what_memory_says(tmp_path):
    from audits.engine.partitioned import dask_client, run_partitioned_discriminability

    corpus = _corpus(1, 1.0)
    memory = run_discriminability_audit(corpus, n_boot=50)
    ds = save_dataset(corpus, tmp_path / "one problem", problems_per_partition=1)
    with dask_client(n_workers=1) as client:
        dask = run_partitioned_discriminability(ds, client=client, n_boot=50)
    a, b = _levels(memory), _levels(dask)
    assert {m: (f.level, f.message) for m, f in a.items()} == {m: (f.level, f.message) for m, f in b.items()}
    assert all(f.level == "n/a" for f in b.values())
