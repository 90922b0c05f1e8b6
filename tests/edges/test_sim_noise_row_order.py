"""The repeat-noise model and the noise-aware scores are the same, bit for bit, for a shuffled copy of the rows.

fit_noise summed each cell's log durations in the rows' order (about its first row's value), so the last bits of
a cell's mean and variance moved with the row order (differences of 7e-18) and, through them, E[q]: `speedaudit
score` under a reward environment with a pre-filter wrote a candidate's q_expected as 0.6808231818617726 in file
order and 0.6808231818617727 shuffled (DESIGN.md: every figure a function of the rows as a set, the JSON identical
character for character). Now each cell's values are summed in one order, by value.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from audits.checks.simulation import score_candidates
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import to_jsonable
from stats.noise import fit_noise
from stats.rewards import RewardEnvironment


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=6, n_tests=4, n_solutions=7, n_repeats=3, n_candidates=3, n_incorrect=2,
                       seed=5).corpus
    return whole[whole["environment"] == "quiet"].reset_index(drop=True)


def _shuffled(frame, seed):
    return frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_model_is_bit_identical(corpus, seed):
    base, other = fit_noise(corpus).cells, fit_noise(_shuffled(corpus, seed)).cells
    for column in ("log_mean", "log_var", "pooled_var", "shrunk_var", "se", "df"):
        np.testing.assert_array_equal(base[column].to_numpy(float), other[column].to_numpy(float), err_msg=column)


@pytest.mark.parametrize("spec", [
    {"name": "half", "pre": {"max_reference_quantile": 0.5}, "post": {"tau": 30}},
    {"name": "top30", "post": {"tau": 30}},
])
def test_score_json_is_identical_for_shuffled_rows(corpus, spec):
    env = RewardEnvironment.from_dict(spec)

    def text(frame):
        result = score_candidates(frame, env=env, environment="quiet", n_boot=50, n_draws=200)
        return json.dumps(to_jsonable(result.to_dict()), sort_keys=True, default=str)

    assert text(corpus) == text(_shuffled(corpus, 0))
