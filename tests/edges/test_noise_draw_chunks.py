"""The repeat-noise model's posterior draws are made in chunks (stats.noise._simulate: at most 4 M elements at a
time), and every chunk gives every unit its draws.

Before, the loop reused the name of the rows' undefined-variance mask for the per-unit counts of its first chunk,
so from the second chunk on ``r[:, undefined]`` indexed columns by those counts (0 and 1): the first two scored
rows got NaN draws, their units NaN P(q <= tau), and since 11084e8 the noise_gate reward of *every* problem with
more than one chunk was "not measured" (the shipped quiet-a and busy-a campaigns: noise_gate n/a for all 12
problems). Checked on a planted corpus big enough for several chunks, against the same model in one chunk (the
probabilities agree within Monte Carlo error), and on the shipped campaign.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stats import noise
from stats.noise import fit_noise, noise_aware_scores


def _runs(n_solutions=40, n_tests=3, n_repeats=5, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_solutions):
        level = rng.normal(0, 0.5)
        for t in range(n_tests):
            for r in range(n_repeats):
                rows.append({"problem": "p", "test": f"t{t}", "solution": f"s{s:02d}", "repeat": r, "status": "ok",
                             "correct": True, "role": "reference", "test_kind": "optimization",
                             "duration_s": float(np.exp(level + t + rng.normal(0, 0.1)))})
    return pd.DataFrame(rows)


def _chunks(runs, n_draws):
    """How many chunks _simulate makes for these rows (its own rule, read from its arguments)."""
    s = noise._scored(fit_noise(runs), runs, None, None)
    width = len(s.pool_m) + len(s.m) + len(noise._pairs(s)[0])
    chunk = max(1, min(n_draws, 4_000_000 // max(width, 1)))
    return -(-n_draws // chunk)


@pytest.mark.parametrize("n_draws", [2000, 4000])
def test_every_unit_gets_its_draws_in_every_chunk(n_draws):
    runs = _runs()
    assert _chunks(runs, n_draws) >= 2  # the planted corpus needs several chunks
    out = noise_aware_scores(fit_noise(runs), tau=30, roles=None, executions=runs, n_draws=n_draws, seed=1).scores
    assert len(out) == 40 * 5
    assert np.isfinite(out["p_gate"]).all(), out.loc[~np.isfinite(out["p_gate"])].head()
    assert np.isfinite(out["q_ci_low"]).all() and np.isfinite(out["q_ci_high"]).all()


def test_chunked_draws_agree_with_one_chunk(monkeypatch):
    runs = _runs(n_solutions=30)
    model = fit_noise(runs)
    chunked = noise_aware_scores(model, tau=30, roles=None, executions=runs, n_draws=2000, seed=3).scores
    original = noise._simulate
    monkeypatch.setattr(noise, "_simulate", lambda *a, **k: original(*a, **{**k, "max_elements": 10**12}))
    whole = noise_aware_scores(model, tau=30, roles=None, executions=runs, n_draws=2000, seed=3).scores
    assert np.isfinite(whole["p_gate"]).all()
    se = np.sqrt(np.maximum(whole["p_gate"] * (1 - whole["p_gate"]), 1 / 2000) / 2000)
    assert (np.abs(chunked["p_gate"] - whole["p_gate"]) <= 6 * np.sqrt(2) * se).all()
    # the closed form does not depend on the draws at all
    assert np.allclose(chunked["q_expected"], whole["q_expected"], rtol=0, atol=1e-12)


def test_the_shipped_quiet_campaign_measures_the_noise_gate():
    """quiet-a (fixtures/corpora/designs/, 5 repeats of 12 problems): noise_gate is judged, not n/a."""
    from audits.checks.reward_environments import load_reward_environments, shipped_environments_dir
    from audits.checks.simulation import run_simulation_audit
    from fixtures.corpora.designs import load_designs, run_of

    corpus = load_designs()
    environment, campaign = run_of(corpus, "quiet-a")
    run = corpus.loc[((corpus["environment"].astype(str) == environment)
                      & (corpus["campaign"].astype(str) == campaign)).to_numpy()]
    envs = load_reward_environments([shipped_environments_dir() / "noise_gate.yaml"])
    audit = run_simulation_audit(run, reward_environments=envs, environment=environment, campaign=campaign,
                                 group_sizes=(2, 4, 8, 16), n_boot=20)
    verdict = {f.metric: f for f in audit.findings}["verdict"]
    assert verdict.level in ("pass", "warn", "fail"), verdict.message
    assert np.isfinite(audit.diagnostics.set_index("reward_environment").loc["noise_gate", "diagonal_deviation"])
