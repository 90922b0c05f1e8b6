"""The reward-environment audit, environment files, the CLI and the figures.

Done-when checks of issue 8: on a synthetic corpus an impossible environment is
flagged sparse, tau = 100 saturated, a reasonable one passes; on the busy-worker
environment monotonicity drops and the verdict says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from matplotlib.figure import Figure

from audits.cli import main
from audits.corpus.io import save_corpus
from audits.checks.reward_environments import EnvironmentFileError, expand_grid, load_environment, load_environments, load_grid
from audits.report.plots.simulation import reward_curves, zero_advantage_by_group_size
from audits.checks.simulation import run_simulation_audit, score_candidates
from audits.corpus.synthetic import synthesize
from audits.protocol.params import OptionError
from stats.rewards import Environment, apply_environment, pass_at_k

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "environments"


@pytest.fixture(scope="module")
def synth():
    return synthesize(n_problems=16, n_tests=6, n_correctness_tests=1, n_solutions=12, n_incorrect=1,
                      n_candidates=3, n_repeats=3, busy=True, seed=5)


def _env(name, **sections):
    return Environment.from_dict({"name": name, **sections})


ENVS = [
    _env("reasonable", post={"tau": 50}),
    _env("tiny_tau", post={"tau": 0.5}),
    _env("timeout_below_all", limit={"kind": "uniform", "seconds": 1e-5}, post={"tau": 100}),
    _env("tau100", post={"tau": 100}),
]


@pytest.fixture(scope="module")
def quiet_audit(synth):
    return run_simulation_audit(synth.corpus, reward_environments=ENVS, environment="quiet", n_boot=100)


@pytest.fixture(scope="module")
def busy_audit(synth):
    return run_simulation_audit(synth.corpus, reward_environments=ENVS[:1], environment="busy", n_boot=100)


def test_degenerate_environments_are_flagged_and_a_reasonable_one_passes(quiet_audit):
    d = quiet_audit.diagnostics.set_index("reward_environment")
    assert d.loc["reasonable", "verdict"] == "pass"
    for name in ("tiny_tau", "timeout_below_all"):
        assert d.loc[name, "level"] == "fail" and "sparse" in d.loc[name, "verdict"]
        assert d.loc[name, "auc"] <= 0.05
    assert d.loc["tau100", "level"] == "fail" and "saturated" in d.loc["tau100", "verdict"]
    assert "sparse" not in d.loc["tau100", "verdict"]
    # The reasonable one ranks first; each degenerate one carries a failing finding naming it.
    assert quiet_audit.diagnostics["reward_environment"].iloc[0] == "reasonable"
    failing = {(f.subject, f.metric) for f in quiet_audit.findings if f.level == "fail"}
    assert ("tiny_tau", "auc") in failing and ("tau100", "auc") in failing
    passing = [f for f in quiet_audit.findings if f.subject == "reasonable"]
    assert [f.level for f in passing] == ["pass"]


def test_a_finding_names_its_check_without_repeating_metric_and_value(quiet_audit):
    # A finding's line is "metric = value (threshold ...): message"; the message says which check failed, its CI
    # and what to do, and does not say "auc = 0.951" a second time (it did, 2026-12-06).
    judged = [f for f in quiet_audit.findings if f.level in ("warn", "fail")]
    assert {f.metric for f in judged} >= {"auc"}
    for f in judged:
        assert f"{f.metric} =" not in f.message and f"{f.metric}:" not in f.message, f.message
        assert f.message.split(" ")[0].rstrip(",;") in {"sparse", "saturated", "non-monotone", "off-diagonal",
                                                        "dead", "noisy"}, f.message
        assert "CI" in f.message or "n = " in f.message, f.message


def test_busy_worker_lowers_monotonicity_and_the_verdict_says_so(quiet_audit, busy_audit):
    quiet = quiet_audit.diagnostics.set_index("reward_environment").loc["reasonable"]
    busy = busy_audit.diagnostics.set_index("reward_environment").loc["reasonable"]
    assert busy["monotonicity"] < quiet["monotonicity"] - 0.15
    assert busy["monotonicity_ci_high"] < quiet["monotonicity_ci_low"]
    assert "non-monotone" in busy["verdict"] and "non-monotone" not in quiet["verdict"]
    finding = [f for f in busy_audit.findings if f.metric == "monotonicity"]
    assert finding and "noise" in finding[0].message and finding[0].subject == "reasonable"


def test_audit_tables_and_json_shape(quiet_audit):
    out = quiet_audit.to_dict()
    assert out["environment"] == "quiet" and out["campaign"] == "c0"
    for name in ("reasonable", "tiny_tau", "timeout_below_all", "tau100"):
        entry = out["reward_environments"][name]
        for key in ("auc", "monotonicity", "steepness", "diagonal_deviation", "curve_noise", "zero_advantage_rate",
                    "verdict"):
            assert key in entry
    json.dumps(out, allow_nan=False)
    groups = quiet_audit.groups
    assert set(groups["group_size"]) == {2, 4, 8, 16}
    # The zero-advantage rate can only fall as G grows.
    for _, g in groups.groupby("reward_environment"):
        assert np.all(np.diff(g.sort_values("group_size")["zero_advantage_rate"].to_numpy()) <= 1e-12)
    assert len(quiet_audit.curves) == 4 * 10
    text = quiet_audit.summary()
    assert "reasonable" in text and "reward environments flagged" in text


def test_audit_input_errors(synth):
    with pytest.raises(ValueError, match="several environments"):
        run_simulation_audit(synth.corpus, reward_environments=ENVS[:1])
    with pytest.raises(ValueError, match="no run has environment 'loud'"):
        run_simulation_audit(synth.corpus, reward_environments=ENVS[:1], environment="loud")
    with pytest.raises(ValueError, match="no reward environment"):
        run_simulation_audit(synth.corpus, environment="quiet")
    # what SimulationOptions allows (one message format), under the option's name and under its old name
    for bad in ([], ["top30"]):
        for keyword in ("reward_environments", "environments"):
            with pytest.raises(OptionError, match=r"simulation option reward_environments must be a non-empty list "
                                                  r"of stats\.rewards\.RewardEnvironment or None \(--reward-env\)"):
                run_simulation_audit(synth.corpus, environment="quiet", **{keyword: bad})
    with pytest.raises(TypeError, match="once"):
        run_simulation_audit(synth.corpus, reward_environments=ENVS[:1], environments=ENVS[:1], environment="quiet")


# ------------------------------------------------------------------ environment files

def test_every_fixture_environment_loads():
    names = {p.stem for p in FIXTURES.glob("*.yaml")} - {"grid"}
    assert names >= {"top30", "uniform_timeout", "ranked_worst_p80", "duration_filter_2s", "duration_filter_0.5s",
                     "duration_filter_0.1s", "length_filter_1k"}
    for name in names:
        env = load_environment(FIXTURES / f"{name}.yaml")
        assert env.name == name
    assert load_environment(FIXTURES / "duration_filter_0.5s.yaml").pre.max_reference_s == 0.5
    assert load_environment(FIXTURES / "ranked_worst_p80.yaml").limit.fastest_percent == 80
    assert load_environment(FIXTURES / "length_filter_1k.yaml").pre.max_input_chars == 1000


def test_grid_file_expands_to_the_cartesian_product_plus_includes():
    envs = load_grid(FIXTURES / "grid.yaml")
    spec = yaml.safe_load((FIXTURES / "grid.yaml").read_text())
    n_product = np.prod([len(v) for v in spec["vary"].values()])
    assert len(envs) == n_product + len(spec["include"])
    by_name = {e.name: e for e in envs}
    member = by_name["rank[tau=10,scheme=two_gate]"]
    assert member.post.tau == 10 and member.reward.scheme == "two_gate"
    envs = expand_grid({"base": {"name": "b", "post": {"tau": 30}},
                        "vary": {"limit": [{"kind": "uniform", "seconds": 2}, {"kind": "none"}]}})
    assert [e.name for e in envs] == ["b[limit=uniform/2]", "b[limit=none]"]


@pytest.mark.parametrize("text,words", [
    ("name: x\npost: {tau: 30}\nlimit: {kind: sometimes}\n", ["bad.yaml", "limit.kind", "uniform"]),
    ("name: x\npost: {tau: 300}\n", ["bad.yaml", "post.tau", "[0, 100]"]),
    ("name: x\nlimit: {kind: uniform, seconds: 1}\n", ["bad.yaml", "post", "required"]),
    ("name: x\npost: {tau: 30\n", ["bad.yaml", "not valid YAML"]),
    ("- 1\n- 2\n", ["bad.yaml", "mapping"]),
    ("base: {post: {tau: 30}}\nvary: {post.tau: [10]}\n", ["grid file", "--grid"]),
])
def test_bad_environment_files_name_the_file_and_key(tmp_path, text, words):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(EnvironmentFileError) as info:
        load_environment(path)
    for word in words:
        assert word in str(info.value)


def test_json_environment_and_name_checks(tmp_path):
    path = tmp_path / "fast.json"
    path.write_text(json.dumps({"post": {"tau": 20}, "reward": {"scheme": "two_gate_graded"}}))
    env = load_environment(path)
    assert env.name == "fast" and env.reward.scheme == "two_gate_graded"
    with pytest.raises(EnvironmentFileError, match="unique"):
        load_environments([path, path])
    with pytest.raises(EnvironmentFileError, match="no such environment file"):
        load_environment(tmp_path / "missing.yaml")
    bad_grid = tmp_path / "g.yaml"
    bad_grid.write_text("base: {post: {tau: 30}}\nvary: {post.tau: [10, 500]}\n")
    with pytest.raises(EnvironmentFileError, match=r"g.yaml \(member g\[tau=500\]\).*post.tau"):
        load_grid(bad_grid)


# ------------------------------------------------------------------ p_tau of candidates

def test_score_candidates_matches_an_independent_count(synth):
    env = load_environment(FIXTURES / "top30.yaml")
    result = score_candidates(synth.corpus, env=env, environment="quiet", n_boot=200)
    runs = synth.corpus[(synth.corpus["environment"] == "quiet")]
    scores = apply_environment(runs, env, per_repeat=False, roles=("candidate",)).scores
    assert set(scores["role"]) == {"candidate"} and len(scores) == 16 * 3
    table = result.table.set_index("tau")
    for tau in (100, 50, 30, 10):
        ok = scores["c"] & ((scores["q"] <= tau / 100) | (tau == 100))
        per_problem = ok.groupby(scores["problem"], observed=True).mean()   # pass@1 = m / n
        assert table.loc[tau, "estimate"] == pytest.approx(100 * per_problem.mean())
        assert table.loc[tau, "ci_low"] <= table.loc[tau, "estimate"] <= table.loc[tau, "ci_high"]
    k2 = score_candidates(synth.corpus, env=env, environment="quiet", k=2, taus=(30,), n_boot=10).table
    m = (scores["c"] & (scores["q"] <= 0.3)).groupby(scores["problem"], observed=True).sum()
    assert k2["estimate"].iloc[0] == pytest.approx(100 * pass_at_k(np.full(len(m), 3), m.to_numpy(), 2).mean())
    assert "p30" in result.to_dict()["p_tau"]


def test_score_without_candidates_says_so(synth):
    corpus = synth.corpus[synth.corpus["role"] != "candidate"]
    with pytest.raises(ValueError, match="no candidate solutions"):
        score_candidates(corpus, env=ENVS[0], environment="quiet")


# ------------------------------------------------------------------ CLI and figures

def test_cli_simulate_and_score(tmp_path, synth, capsys):
    corpus_path = save_corpus(synth.corpus, tmp_path / "c.parquet")
    out = tmp_path / "sim.json"
    env_file = tmp_path / "tiny.yaml"
    env_file.write_text("name: tiny\npost: {tau: 0.5}\n")
    code = main(["simulate", str(corpus_path), "--environment", "quiet", "--reward-env", str(FIXTURES / "top30.yaml"),
                 "--reward-env", str(env_file), "--json", str(out), "--n-boot", "50", "--strict"])
    printed = capsys.readouterr().out
    assert code == 1  # --strict: the tiny environment fails
    data = json.loads(out.read_text())
    assert set(data["reward_environments"]) == {"top30", "tiny"}
    assert "sparse" in data["reward_environments"]["tiny"]["verdict"] and "tiny" in printed
    assert main(["simulate", str(corpus_path), "--environment", "quiet", "--reward-env", str(env_file)]) == 0
    capsys.readouterr()

    code = main(["simulate", str(corpus_path), "--environment", "quiet", "--reward-env", str(tmp_path / "nope.yaml")])
    assert code == 1 and "no such environment file" in capsys.readouterr().err

    # `score` as a real process, the way users run it.
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "score", str(corpus_path), "--environment", "quiet",
                           "--reward-env", str(FIXTURES / "top30.yaml"), "--n-boot", "50"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    for label in ("p100", "p50", "p30", "p10"):
        assert label in proc.stdout
    no_cand = save_corpus(synth.corpus[synth.corpus["role"] != "candidate"], tmp_path / "nc.parquet")
    assert main(["score", str(no_cand), "--environment", "quiet", "--reward-env", str(FIXTURES / "top30.yaml")]) == 1
    assert "no candidate solutions" in capsys.readouterr().err


def test_figures_draw_the_audit(quiet_audit):
    fig = reward_curves(quiet_audit)
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4                         # one panel per reward environment, in rank order
    for ax, name in zip(panels, quiet_audit.diagnostics["reward_environment"]):
        diagonal, curve = ax.get_lines()            # the diagonal + this environment's curve
        assert np.allclose(diagonal.get_ydata(), [1, 0])
        expected = quiet_audit.curves[quiet_audit.curves["reward_environment"] == name]["curve"].to_numpy()
        assert np.allclose(curve.get_ydata(), expected, equal_nan=True)
    fig2 = zero_advantage_by_group_size(quiet_audit, reward_environments=["tau100"])
    y = fig2.axes[0].get_lines()[0].get_ydata()
    assert np.allclose(y, 1.0)                      # every group of a saturated reward is all +1
    with pytest.raises(ValueError, match="unknown reward environment"):
        reward_curves(quiet_audit, reward_environments=["nope"])
