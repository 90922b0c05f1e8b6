"""The noise-aware draws and every figure built on them are functions of the data, not of the names.

stats.noise gave each cell its posterior draws by its position among the cells sorted by (problem, test, solution)
labels, so renaming the tests or the solutions of the same rows handed the cells other draws: P(gate) moved by up
to 0.03, and the simulation audit's noise_gate figures (AUC, curves, mean reward) moved with it. Each cell's draws
now follow a key hashed from its data (its values, its test's, its solution's and its problem's), so a copy of a
corpus with every problem, test and solution renamed (odd unicode, another sort order) and its rows shuffled gives
the same values. Compared here through the public audit (run_audits), ``speedaudit score`` (score_candidates) and
the noise_gate reward (apply_environment).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from audits.checks.simulation import NOISE_COLUMNS, score_candidates
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits
from stats.noise import fit_noise, noise_aware_scores
from stats.ranking import select_runs
from stats.rewards import RewardEnvironment, apply_environment

ENVS = (RewardEnvironment.from_dict({"name": "ng", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}}),
        RewardEnvironment.from_dict({"name": "na", "post": {"tau": 30}, "reward": {"scheme": "noise_aware"}}))
ODD = ["Ωx", "🙂 p", "ق-مسألة", "p\x00nul", " ", "e\u0301 \"q\" a/b\\c", "zz", "AAA", "é", "0", "~", "ß"]
KEYS = ("problem", "test", "solution")


@pytest.fixture(scope="module")
def corpus():
    whole = synthesize(n_problems=5, n_tests=3, n_solutions=6, n_repeats=3, n_candidates=3, seed=2).corpus
    whole = whole[whole["environment"] == "quiet"].reset_index(drop=True)
    for column in KEYS:
        whole[column] = whole[column].astype(str)
    return whole


def renamed(frame, seed=0):
    """Every problem, test and solution under another name (in another sort order), the rows shuffled; and the
    maps back to the old names."""
    out, back = frame.copy(), {}
    for column in KEYS:
        names = sorted(frame[column].unique())
        mapping = {name: f"{ODD[i % len(ODD)]}{len(names) - i}" for i, name in enumerate(names)}
        assert sorted(mapping.values()) != [mapping[n] for n in names]  # the sort order changes
        out[column] = frame[column].map(mapping)
        back[column] = {v: k for k, v in mapping.items()}
    out = out.iloc[np.random.default_rng(seed).permutation(len(out))].reset_index(drop=True)
    return out, back


def _figures(audit, ci: bool) -> list:
    """(path, value) of every figure of the audit's JSON: the bootstrap intervals (``ci``) or every other one."""
    out = []

    def walk(value, path):
        if isinstance(value, dict):
            for key in sorted(value):
                walk(value[key], f"{path}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]")
        elif ("_ci_" in path) == ci:
            out.append((path, value))

    walk(json.loads(json.dumps(audit.to_dict(), default=str)), "")
    return out


def _same(a, b, rel=1e-12):
    assert [p for p, _ in a] == [p for p, _ in b]
    for (path, x), (_, y) in zip(a, b):
        if isinstance(x, float) and isinstance(y, float):
            assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=rel, abs_tol=rel), (path, x, y)
        else:
            assert x == y, (path, x, y)


def _audit(frame):
    options = {"simulation": {"reward_environments": ENVS, "n_boot": 20}}
    return run_audits(frame, ["simulation"], options=options).results["simulation"]


def test_simulation_audit_figures_do_not_depend_on_names(corpus):
    base = _audit(corpus)
    other = _audit(renamed(corpus)[0])
    figures = _figures(base, ci=False)
    # noise_gate's judged figures are there, and finite
    assert np.isfinite(base.diagnostics["auc"]).all() and len(figures) > 50
    _same(figures, _figures(other, ci=False))


def _by_old_names(frame, back, keys):
    frame = frame.copy()
    for column in keys:
        frame[column] = frame[column].astype(str).map(back[column]) if column in back else frame[column]
    return frame.sort_values(keys).reset_index(drop=True)


def test_score_noise_aware_values_do_not_depend_on_names(corpus):
    env = RewardEnvironment.from_dict({"name": "t50", "post": {"tau": 50}})
    copy, back = renamed(corpus, seed=1)
    results = [score_candidates(frame, env=env, environment="quiet", n_boot=0, n_draws=500)
               for frame in (corpus, copy)]
    keys = ["problem", "solution"]
    a = _by_old_names(results[0].samples, {}, keys)
    b = _by_old_names(results[1].samples, back, keys)
    assert ((a["p_gate"] > 0.01) & (a["p_gate"] < 0.99)).sum() >= 3  # the draws matter on several candidates
    pd.testing.assert_frame_equal(a[keys].astype(str), b[keys].astype(str))
    # a draw's q* and E[q] sum their tests in label order: the last bit may move, never a count of draws
    np.testing.assert_array_equal(a["p_gate"].to_numpy(float), b["p_gate"].to_numpy(float))
    for column in NOISE_COLUMNS:
        np.testing.assert_allclose(a[column].to_numpy(float), b[column].to_numpy(float), rtol=1e-12, atol=1e-12,
                                   err_msg=column)
    for column in ("noise_aware", "noise_ci_low", "noise_ci_high"):
        np.testing.assert_allclose(results[0].table[column].to_numpy(float), results[1].table[column].to_numpy(float),
                                   rtol=1e-12, atol=1e-12, err_msg=column)


@pytest.mark.parametrize("per_repeat", (True, False))
def test_noise_gate_reward_does_not_depend_on_names(corpus, per_repeat):
    runs = select_runs(corpus, environment="quiet", campaign="c0")
    runs = runs[runs["role"].astype(str) != "floor"].reset_index(drop=True)
    copy, back = renamed(runs, seed=2)
    env = RewardEnvironment.from_dict({"name": "ng", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}})
    keys = ["problem", "solution"] + (["repeat"] if per_repeat else [])
    out = [apply_environment(frame, env, per_repeat=per_repeat).scores for frame in (runs, copy)]
    a, b = _by_old_names(out[0], {}, keys), _by_old_names(out[1], back, keys)
    assert ((a["p_gate"] > 0) & (a["p_gate"] < 1)).sum() >= 3
    pd.testing.assert_frame_equal(a[keys].astype(str), b[keys].astype(str))
    np.testing.assert_array_equal(a["p_gate"].to_numpy(float), b["p_gate"].to_numpy(float))


def test_cells_with_the_same_values_draw_independently():
    """Keys from data could hand two cells with the same values the same draws (then they would tie in every draw,
    though their true speeds are two unknowns, not one). Two candidates with the same repeats on the one test of a
    problem: their q* differ in as many draws as an independent simulation of the model's posterior (scipy's t
    draws of every cell's mu, 200,000 of them) says (a shared stream: never), and either is first as often."""
    rng = np.random.default_rng(4)
    refs = [np.exp(m + rng.normal(0, 0.1, 3)) for m in (0.0, 0.05, 0.1, 0.15)]
    same = np.exp(0.07 + rng.normal(0, 0.1, 3))
    rows = [{"problem": "p", "test": "t", "solution": name, "repeat": r, "duration_s": float(v), "status": "ok",
             "role": role, "correct": True, "test_kind": "optimization"}
            for name, values, role in [*[(f"r{i}", v, "reference") for i, v in enumerate(refs)],
                                       ("a", same, "candidate"), ("b", same, "candidate")]
            for r, v in enumerate(values)]
    model = fit_noise(pd.DataFrame(rows))
    out = noise_aware_scores(model, n_draws=4000, keep_draws=True)
    assert out.scores["solution"].tolist() == ["a", "b"]
    a, b = out.draws[:, 0], out.draws[:, 1]
    # the same posterior by scipy: mu = m + se T(df), independent over the six cells; q* = share of references below
    cells = model.cells.set_index("solution")
    check = np.random.default_rng(11)
    mu = {name: cells.loc[name, "log_mean"] + cells.loc[name, "se"] * stats.t.rvs(
        cells.loc[name, "df"], size=200_000, random_state=check) for name in cells.index}
    ref = np.column_stack([mu[f"r{i}"] for i in range(4)])
    qa, qb = ((ref < mu[x][:, None]).mean(axis=1) for x in ("a", "b"))
    differ = np.mean(qa != qb)
    assert differ > 0.3
    assert abs(np.mean(a != b) - differ) < 4 * np.sqrt(differ * (1 - differ) / len(a))
    assert abs(np.mean(a < b) - np.mean(b < a)) < 4 * np.sqrt(differ / len(a))
