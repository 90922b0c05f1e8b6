"""stats.bootstrap's intervals depend on the problems' values, not on the order or the labels they come in.

bootstrap_ci resampled positions of the per-problem values in the order the caller passed them (the problems'
names: the discriminability audit, stats.compare), and cluster_bootstrap_ci drew its multinomial counts over the
clusters in the order of their labels (the problems' names: every reliability CI), so the same values for renamed
problems read other intervals. Now bootstrap_ci resamples the sorted values and cluster_bootstrap_ci numbers the
clusters by a hash of their own values.
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits
from stats.bootstrap import bootstrap_ci, cluster_bootstrap_ci
from tests.edges.test_draw_names import _figures, _same


@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_bootstrap_ci_of_the_values_in_any_order(statistic):
    values = np.random.default_rng(0).lognormal(0, 1, 25)
    base = bootstrap_ci(values, statistic=statistic, n_boot=500, seed=2)
    assert base.low < base.estimate < base.high
    for seed in range(3):
        other = bootstrap_ci(np.random.default_rng(seed).permutation(values), statistic=statistic, n_boot=500,
                             seed=2)
        assert (other.estimate, other.low, other.high) == (base.estimate, base.low, base.high)


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_cluster_bootstrap_ci_of_relabelled_shuffled_clusters(statistic):
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(12), rng.integers(3, 9, 12))
    values = rng.normal(0, 1, 12)[clusters] + rng.normal(0, 0.5, len(clusters))
    base = cluster_bootstrap_ci(values, clusters, statistic=statistic, n_boot=400, seed=5)
    assert base.low < base.estimate < base.high
    relabel = rng.permutation(12) * 7 + 100  # other labels, in another order
    order = rng.permutation(len(values))
    other = cluster_bootstrap_ci(values[order], relabel[clusters][order], statistic=statistic, n_boot=400, seed=5)
    assert other.low == pytest.approx(base.low, rel=1e-12) and other.high == pytest.approx(base.high, rel=1e-12)
    assert other.estimate == pytest.approx(base.estimate, rel=1e-12)


def test_discriminability_and_reliability_audits_do_not_depend_on_problem_names():
    corpus = synthesize(n_problems=10, n_tests=3, n_repeats=3, noise_cv=0.2, seed=6).corpus
    corpus["problem"] = corpus["problem"].astype(str)
    names = sorted(corpus["problem"].unique())
    mapping = {n: f"Ω{len(names) - i} 🙂" for i, n in enumerate(names)}
    renamed = corpus.assign(problem=corpus["problem"].map(mapping))
    renamed = renamed.iloc[np.random.default_rng(0).permutation(len(renamed))].reset_index(drop=True)
    for audit in ("discriminability", "reliability"):
        results = [run_audits(frame, [audit], options={audit: {"n_boot": 100}}).results[audit]
                   for frame in (corpus, renamed)]
        # the findings' values and every interval but the per-problem tables (keyed by name)
        figures = [sorted((p, v) for p, v in _figures(r, ci=False) + _figures(r, ci=True)
                          if "/problems" not in p and not isinstance(v, str)) for r in results]
        assert sum(1 for p, v in figures[0] if ("ci" in p or "low" in p) and v == v and v is not None) >= 5
        _same(*figures, rel=1e-9)
