"""Nested repeats: values inside processes (a ``run`` column, as pyperf writes) -- issue 16, item 6.

Variance components split between-process and within-process variance (checked against statsmodels'
MixedLM, REML, on a planted nested corpus), repeats-needed counts processes, and significance treats
processes as the unit (checked against scipy's Mann-Whitney on process-level scores, and by the false
discoveries that treating values as independent would make).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps
import statsmodels.formula.api as smf

from stats.reliability import (
    pairwise_significance,
    per_repeat_scores,
    process_level,
    repeats_for_reliability,
    variance_components,
)

SD_PROCESS, SD_VALUE = 0.03, 0.015          # log-scale: 80 % of the repeat variance is between processes


def _nested(*, n_problems=6, n_solutions=5, n_processes=8, n_values=3, seed=0, equal_solutions=False):
    """One test per problem; solution speeds differ (or not); process offsets and value noise on log scale."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_problems):
        base = rng.uniform(np.log(1e-3), np.log(1e-1))
        for s in range(n_solutions):
            speed = 0.0 if equal_solutions else rng.normal(0, 0.3)
            for k in range(n_processes):
                offset = rng.normal(0, SD_PROCESS)
                for j in range(n_values):
                    rows.append(dict(environment="m", campaign="c", problem=f"p{p}", test="benchmark",
                                     solution=f"s{s}", run=k, repeat=k * n_values + j,
                                     duration_s=float(np.exp(base + speed + offset + rng.normal(0, SD_VALUE))),
                                     status="ok", role="reference", correct=True, test_kind="optimization"))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def planted():
    return _nested(n_problems=10, n_solutions=6, n_processes=10, n_values=3, seed=1)


def test_nested_components_equal_statsmodels_mixedlm(planted):
    vc = variance_components(planted)
    assert vc.nested and vc.values_per_run == 3
    frame = planted.assign(y=np.log(planted.duration_s), cell=planted.problem + "/" + planted.solution,
                           process=planted.problem + "/" + planted.solution + "/" + planted.run.astype(str))
    # Cells as fixed effects, a random intercept per process: its variance is the between-process
    # component, the residual the within-process one (balanced design: ANOVA = REML when positive).
    model = smf.mixedlm("y ~ C(cell)", frame, groups=frame["process"]).fit(reml=True)
    assert vc.variance("run") == pytest.approx(float(model.cov_re.iloc[0, 0]), rel=2e-3)
    assert vc.variance("repeat") == pytest.approx(float(model.scale), rel=2e-3)
    # and both near the planted truth (df: 600 processes, 1200 within-process values)
    assert np.sqrt(vc.variance("run")) == pytest.approx(SD_PROCESS, rel=0.1)
    assert np.sqrt(vc.variance("repeat")) == pytest.approx(SD_VALUE, rel=0.1)
    assert set(vc.table.component) >= {"run", "repeat", "solution"}


def test_without_a_run_column_nothing_is_split(planted):
    vc = variance_components(planted.drop(columns="run"))
    assert not vc.nested and "run" not in set(vc.table.component)
    # the lumped repeat variance mixes both levels: about s2_process + s2_value
    assert vc.variance("repeat") == pytest.approx(SD_PROCESS**2 + SD_VALUE**2, rel=0.2)


def test_repeats_needed_counts_processes(planted):
    vc = variance_components(planted)
    T = vc.mean_tests
    sig = vc.variance("solution") + np.nan_to_num(vc.variance("test:solution")) / T
    err = vc.variance("run") + vc.variance("repeat") / vc.values_per_run
    want = max(1, int(np.ceil(0.99 * err / (0.01 * T * sig) - 1e-9)))
    assert repeats_for_reliability(vc, target=0.99) == want
    # Treating the 30 values as independent repeats would promise far fewer processes' worth of noise.
    flat = variance_components(planted.drop(columns="run"))
    assert flat.variance("repeat") / 3 < err


def test_process_level_scores_one_repeat_per_process(planted):
    scores = per_repeat_scores(planted)
    per_unit = scores.groupby(["problem", "solution"], observed=True)["repeat"].nunique()
    assert set(per_unit) == {10}                           # 10 processes, not 30 values
    cells = process_level(planted)
    manual = planted.groupby(["problem", "solution", "run"], observed=True)["duration_s"].median()
    got = cells.set_index(["problem", "solution", "repeat"])["duration_s"]
    for key, value in manual.items():
        assert got[key] == value


def test_significance_uses_processes_as_the_unit(planted):
    scores = per_repeat_scores(planted)
    sig = pairwise_significance(scores, n_boot=20)
    assert sig.n_repeats == 10
    row = sig.pairs.iloc[0]
    a = scores[(scores.problem == row.problem) & (scores.solution == row.faster)].q.to_numpy()
    b = scores[(scores.problem == row.problem) & (scores.solution == row.slower)].q.to_numpy()
    assert len(a) == len(b) == 10
    want = sps.mannwhitneyu(a, b, alternative="less", method="exact").pvalue
    assert row.pvalue == pytest.approx(want, rel=1e-12)


def test_equal_builds_are_not_called_different_when_processes_are_the_unit():
    """All solutions equally fast: only process offsets differ. Process-level tests make few false
    discoveries; the same values treated as 24 independent repeats make many (the issue's pyperf case)."""
    corpus = _nested(n_problems=12, n_solutions=4, n_processes=8, n_values=3, seed=5, equal_solutions=True)
    # Scores of one value each: rank every value on its own (what a corpus without `run` would do).
    by_process = pairwise_significance(per_repeat_scores(corpus), n_boot=20)
    by_value = pairwise_significance(per_repeat_scores(corpus.drop(columns="run")), n_boot=20)
    assert by_value.n_repeats == 24 and by_process.n_repeats == 8
    assert by_process.share.estimate <= 0.1
    assert by_value.share.estimate > by_process.share.estimate + 0.15
