"""The noise_gate reward's draws do not depend on the unit of time.

stats.rewards.problem_data_seed seeded each problem's posterior draws by a hash of its raw durations, so the same
timings read in milliseconds (``--unit ms``) or in seconds drew other numbers and the noise_gate rewards (P(gate),
the simulation's curves and diagnostics) moved. The noise model itself is unit-free (log-scale variances, ranks;
stats.noise keys each cell's draws by ranks), so the same data in any unit must give the same rewards. Checked on
nanosecond programs and ten-second ones, each file read in two units, and against a shuffled, renamed copy (the
seed still follows the data, not the row order or names).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import speedaudit
from stats.rewards import RewardEnvironment, apply_environment, environment_rewards

GATE = RewardEnvironment.from_dict({"name": "gate", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}})


def _table(scale: float, seed: int = 3) -> pd.DataFrame:
    """Three problems, five correct references on three tests, three repeats; 10 % lognormal repeat noise."""
    rng = np.random.default_rng(seed)
    rows = [{"problem": f"p{p}", "test": f"t{t}", "solution": f"s{s}", "repeat": r,
             "duration_s": scale * (1 + s + p) * (1 + t) * float(np.exp(0.1 * rng.standard_normal())), "status": "ok"}
            for p in range(3) for s in range(5) for t in range(3) for r in range(3)]
    return pd.DataFrame(rows)


def _gate_rewards(corpus: pd.DataFrame) -> pd.DataFrame:
    out = apply_environment(corpus, GATE, per_repeat=True, roles=("reference",)).scores
    out = out.assign(reward=environment_rewards(out, GATE.reward))
    return out.sort_values(["problem", "solution", "repeat"]).reset_index(drop=True)[
        ["problem", "solution", "repeat", "p_gate", "reward"]]


@pytest.mark.parametrize("numbers", [1e-5, 10.0], ids=["10ns-10us", "10ms-10s"])
def test_the_same_timings_in_another_unit_draw_the_same(tmp_path, numbers):
    path = tmp_path / "t.csv"
    _table(numbers).to_csv(path, index=False)
    in_ms = speedaudit.load_corpus(path, unit="ms")  # 10 ns programs, or 10 ms ones
    as_s = speedaudit.load_corpus(path, unit="s")  # the same numbers read as seconds: every duration x1000
    ratio = as_s["duration_s"].to_numpy() / in_ms["duration_s"].to_numpy()
    assert np.allclose(ratio, 1e3, rtol=1e-12)
    a, b = _gate_rewards(in_ms), _gate_rewards(as_s)
    # P(gate) is a share of 2,000 draws: strictly inside (0, 1) for some rollouts, so the draws decide it
    assert ((a["p_gate"] > 0.02) & (a["p_gate"] < 0.98)).sum() >= 3
    pd.testing.assert_frame_equal(a, b, check_exact=True)


def test_the_simulation_audit_in_another_unit_is_the_same(tmp_path):
    path = tmp_path / "t.csv"
    _table(1e-5).to_csv(path, index=False)
    audits = [speedaudit.run_audit("simulation", speedaudit.load_corpus(path, unit=u), n_boot=50,
                                   reward_environments=[GATE]) for u in ("us", "s")]
    envs = [json.loads(json.dumps(a.to_dict()))["reward_environments"]["gate"] for a in audits]
    assert envs[0] == envs[1]
    assert np.isfinite(envs[0]["auc"])


def test_renamed_and_shuffled_rows_draw_the_same():
    corpus = _table(1e-3)
    other = corpus.sample(frac=1.0, random_state=1).reset_index(drop=True)
    other["problem"] = other["problem"].map({"p0": "zz", "p1": "a", "p2": "m"})
    other["solution"] = "x" + other["solution"].str[::-1]
    a, b = _gate_rewards(corpus), _gate_rewards(other)
    a["problem"] = a["problem"].map({"p0": "zz", "p1": "a", "p2": "m"})
    a["solution"] = "x" + a["solution"].str[::-1]
    key = ["problem", "solution", "repeat"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True), b.sort_values(key).reset_index(drop=True),
                                  check_exact=True)
