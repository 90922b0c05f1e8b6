"""`speedaudit score`'s noise-aware values do not depend on the problems' names.

The posterior draws of the candidates (stats.noise.noise_aware_scores, one seeded stream) follow the cells' sorted
labels, so renaming the problems into another order handed each problem other draws: with 500 draws a candidate's
P(gate) moved by up to 0.054 and the noise-aware p50 read 50.49 % or 51.20 % for the same rows (synthesize(seed=2),
tau 50). The draws now follow the problems' data (stats.rewards.problem_data_seed), so renamed and shuffled copies
give identical values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.checks.simulation import NOISE_COLUMNS, score_candidates
from stats.rewards import RewardEnvironment
from tests.edges.named_corpora import quiet_run

ODD = ["Ωx", "🙂 p", "ق-مسألة", "p\x00nul", " ", "zz", "AAA", "é"]
ENV = RewardEnvironment.from_dict({"name": "t50", "post": {"tau": 50}})


@pytest.fixture(scope="module")
def corpus():
    return quiet_run(n_problems=6, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=3, seed=2)


def _score(frame):
    result = score_candidates(frame, env=ENV, environment="quiet", n_boot=0, n_draws=500)
    samples = result.samples.assign(problem=result.samples["problem"].astype(str),
                                    solution=result.samples["solution"].astype(str))
    return result, samples


def test_renamed_shuffled_problems_keep_every_noise_aware_value(corpus):
    base, samples = _score(corpus)
    assert ((samples["p_gate"] > 0.01) & (samples["p_gate"] < 0.99)).any()  # the draws matter somewhere
    names = sorted(corpus["problem"].unique())
    mapping = dict(zip(names, ODD[:len(names)][::-1]))  # other names in another sort order
    renamed = corpus.assign(problem=corpus["problem"].map(mapping))
    renamed = renamed.iloc[np.random.default_rng(1).permutation(len(renamed))].reset_index(drop=True)
    other, other_samples = _score(renamed)
    back = {v: k for k, v in mapping.items()}
    other_samples = other_samples.assign(problem=other_samples["problem"].map(back))
    keys = ["problem", "solution"]
    a = samples.sort_values(keys).reset_index(drop=True)
    b = other_samples.sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[keys], b[keys])
    for column in ("q", *NOISE_COLUMNS):
        np.testing.assert_array_equal(a[column].to_numpy(float), b[column].to_numpy(float), err_msg=column)
    for column in ("estimate", "noise_aware", "noise_ci_low", "noise_ci_high"):
        np.testing.assert_array_equal(base.table[column].to_numpy(float), other.table[column].to_numpy(float),
                                      err_msg=column)


def test_the_bootstrap_interval_of_p_tau_does_not_depend_on_the_names(corpus):
    """p_tau's bootstrap over problems resampled positions in the problems' name order: renamed problems (same
    rows) read p30 [20.8, 54.2] or [24.9, 54.2] (synthesize(n_problems=8, seed=2)). Checked against a bootstrap
    of the per-problem pass@1 values computed here, in sorted order, with the same seed."""
    from stats.bootstrap import bootstrap_ci

    names = sorted(corpus["problem"].unique())
    renamed = corpus.assign(problem=corpus["problem"].map(dict(zip(names, ODD[:len(names)][::-1]))))
    tables = [score_candidates(frame, env=ENV, environment="quiet", n_boot=300, n_draws=0).table
              for frame in (corpus, renamed.sample(frac=1.0, random_state=4))]
    for column in ("estimate", "ci_low", "ci_high"):
        np.testing.assert_array_equal(tables[0][column].to_numpy(float), tables[1][column].to_numpy(float),
                                      err_msg=column)
    # pass@1 of a problem = the share of its candidates correct and within tau, here by hand
    samples = score_candidates(corpus, env=ENV, environment="quiet", n_boot=0, n_draws=0).samples
    for tau in (50.0, 30.0):
        hit = samples["c"].astype(bool) & (samples["q"] <= tau / 100 + 1e-12)
        per = hit.groupby(samples["problem"].astype(str), observed=True).mean().to_numpy() * 100
        ci = bootstrap_ci(np.sort(per), n_boot=300, seed=0)
        row = tables[0].set_index("tau").loc[tau]
        assert (row["estimate"], row["ci_low"], row["ci_high"]) == pytest.approx((ci.estimate, ci.low, ci.high))
