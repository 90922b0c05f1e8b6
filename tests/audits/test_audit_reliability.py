"""Reliability and discriminability audits, their CLI and figures, on real files and planted truth."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from audits.cli import main
from audits.corpus.io import save_corpus
from audits.checks.discriminability import DiscriminabilityThresholds, run_discriminability_audit
from audits.report.plots.reliability import (
    near_floor_shares,
    rank_drift_ranges,
    repeat_cv_distributions,
    robust_cv_per_problem,
    variance_shares,
)
from audits.checks.reliability import ReliabilityThresholds, run_reliability_audit
from audits.corpus.synthetic import synthesize

RELIABILITY_KEYS = {"median_repeat_cv", "median_abs_sd_ms", "mean_rank_range", "mean_rank_sd", "worst_rank_range", "p95_rank_range",
                    "icc", "repeats_needed"}
DISCRIMINABILITY_KEYS = {"filterable_share", "median_robust_cv", "strong_weak_gap", "problems"}


@pytest.fixture(scope="module")
def synth():
    return synthesize(n_problems=25, busy=True, seed=21)


@pytest.fixture(scope="module")
def rel(synth):
    return run_reliability_audit(synth.corpus, n_boot=200)


@pytest.fixture(scope="module")
def dis(synth):
    return run_discriminability_audit(synth.corpus, n_boot=200)


def _levels(audit, env):
    return {f.metric: f.level for f in audit.findings if f.environment == env}


def test_busy_environment_is_flagged_and_quiet_passes(rel, synth):
    quiet, busy = _levels(rel, "quiet"), _levels(rel, "busy")
    # the synthetic corpus records no CPU time: contention cannot be measured, and says so
    assert quiet.pop("contention") == "n/a" and busy.pop("contention") == "n/a"
    assert set(quiet.values()) == {"pass"}, quiet
    for metric in ("median_repeat_cv", "mean_rank_sd", "icc", "significant_share"):
        assert busy[metric] == "fail", (metric, busy)
    q = rel.result("quiet")
    assert q.median_repeat_cv.estimate == pytest.approx(synth.truth["noise"]["median_cell_cv"], rel=0.10)


def test_reliability_frame_puts_environments_side_by_side(rel):
    frame = rel.to_frame().set_index("environment")
    assert set(frame.index) == {"quiet", "busy"}
    assert frame.loc["busy", "median_repeat_cv"] > 5 * frame.loc["quiet", "median_repeat_cv"]
    assert frame.loc["busy", "mean_rank_range"] > frame.loc["quiet", "mean_rank_range"]
    assert frame.loc["quiet", "icc"] > 0.9 > frame.loc["busy", "icc"]
    text = rel.summary()
    assert "FAIL  [busy · c0] median_repeat_cv" in text and "PASS  [quiet · c0] icc" in text
    assert "runs: " in text and "quiet · c0 (5 repeats)" in text


def test_reliability_json_has_the_documented_keys(rel, tmp_path):
    data = json.loads(json.dumps(rel.to_dict(), allow_nan=False))
    by_env = {entry["environment"]: entry for entry in data["runs"]}
    for env in ("quiet", "busy"):
        assert RELIABILITY_KEYS <= set(by_env[env]) and by_env[env]["campaign"] == "c0"
        assert by_env[env]["median_repeat_cv"] == pytest.approx(rel.result(env).median_repeat_cv.estimate)
    assert {"level", "metric", "value", "threshold", "message"} <= set(data["findings"][0])
    assert len(data["findings"]) == len(rel.findings)


def test_thresholds_are_overridable_and_validated(synth):
    lenient = ReliabilityThresholds(repeat_cv_warn=0.8, repeat_cv_fail=0.9)
    audit = run_reliability_audit(synth.corpus, thresholds=lenient, n_boot=50)
    assert _levels(audit, "busy")["median_repeat_cv"] == "pass"
    with pytest.raises(ValueError, match="repeat_cv_warn"):
        ReliabilityThresholds(repeat_cv_warn=0.5, repeat_cv_fail=0.2)
    with pytest.raises(ValueError, match="no run has campaign 'nope'"):
        run_reliability_audit(synth.corpus, campaign="nope")


def test_discriminability_flags_noise_inflated_span_and_recovers_truth(dis, synth):
    quiet, busy = _levels(dis, "quiet"), _levels(dis, "busy")
    assert quiet["noise_inflated_filterable_share"] == "pass"
    assert busy["noise_inflated_filterable_share"] in ("warn", "fail")
    assert quiet["strong_weak_gap"] == "pass" and busy["strong_weak_gap"] in ("warn", "fail")
    env = dis.result("quiet")
    assert env.filterable_share.estimate == pytest.approx(synth.truth["filterable_share"], abs=0.05)
    assert env.floor_source == "floor rows" and env.floor_s == pytest.approx(0.02, rel=0.1)


def test_discriminability_json_has_per_problem_entries(dis):
    data = json.loads(json.dumps(dis.to_dict(), allow_nan=False))
    env = next(entry for entry in data["runs"] if entry["environment"] == "quiet")
    assert DISCRIMINABILITY_KEYS <= set(env)
    frame = dis.result("quiet").problems.set_index("problem")
    assert set(env["problems"]) == set(frame.index.astype(str))
    for pid, entry in env["problems"].items():
        assert entry["filterable"] == bool(frame.loc[pid, "filterable"])
        if entry["robust_cv"] is not None:
            assert entry["robust_cv"] == pytest.approx(frame.loc[pid, "robust_cv"])
    flagged = [p for p, e in env["problems"].items() if e["near_floor"]]
    assert sorted(flagged) == sorted(env["near_floor_problems"])


def test_floor_given_or_missing(synth):
    no_floor = synth.corpus.loc[(synth.corpus["role"] != "floor").to_numpy()]
    audit = run_discriminability_audit(no_floor, n_boot=50)
    finding = [f for f in audit.findings if f.metric == "near_floor_test_share" and f.environment == "quiet"][0]
    assert finding.level == "n/a" and "no floor rows" in finding.reason  # not measurable: never a pass
    given = run_discriminability_audit(no_floor, floor_s=10.0, n_boot=50)  # every test is "near" a 10 s floor
    env = given.result("quiet")
    assert env.floor_source == "given" and env.near_floor_test_share == 1.0
    assert len(env.flagged_problems) == len(env.problems)
    strict = DiscriminabilityThresholds(near_floor_share_warn=1.0, near_floor_share_fail=1.0)
    assert _levels(run_discriminability_audit(no_floor, floor_s=10.0, thresholds=strict, n_boot=20),
                   "quiet")["near_floor_test_share"] == "fail"
    with pytest.raises(ValueError, match="floor_s"):
        run_discriminability_audit(no_floor, floor_s=-1)


def _edge_corpus(case: str) -> pd.DataFrame:
    spec = dict(n_problems=3, n_tests=4, n_solutions=5, n_incorrect=1, n_candidates=1, n_repeats=3, seed=3)
    if case == "one_repeat":
        spec["n_repeats"] = 1
    if case == "one_reference":
        spec["n_solutions"] = 1
    if case == "one_opt_test":
        spec["n_tests"] = 1
    corpus = synthesize(**spec).corpus.copy()
    not_floor = (corpus["role"] != "floor").to_numpy()
    if case == "constant":
        corpus.loc[not_floor, "duration_s"] = 0.5
    if case == "all_failures":
        status = np.array(corpus["status"].astype(object), dtype=object)
        status[not_floor] = "runtime_error"
        corpus["status"] = pd.Categorical(status, categories=corpus["status"].cat.categories)
    return corpus


@pytest.mark.parametrize("case", ["one_repeat", "one_reference", "constant", "all_failures", "one_opt_test"])
def test_edge_cases_run_through_both_audits(case):
    corpus = _edge_corpus(case)
    rel = run_reliability_audit(corpus, n_boot=20)
    dis = run_discriminability_audit(corpus, n_boot=20)
    r = rel.to_dict()["runs"][0]
    d = dis.to_dict()["runs"][0]
    assert (r["environment"], d["environment"]) == ("quiet", "quiet")
    json.dumps(rel.to_dict(), allow_nan=False)
    json.dumps(dis.to_dict(), allow_nan=False)
    levels = _levels(rel, "quiet")
    if case == "one_repeat":
        assert r["median_repeat_cv"] is None and levels["median_repeat_cv"] == "n/a"  # not measurable: no pass
        assert r["mean_rank_range"] == 0.0 and r["icc"] is None and r["repeats_needed"] is None
        assert d["strong_weak_gap"] is None
    elif case == "one_reference":
        assert r["mean_rank_range"] == 0.0  # only the candidate is scored; it has a pool of one
        assert r["significant_share"] is None and d["strong_weak_gap"] is None
    elif case == "constant":
        assert r["median_repeat_cv"] == 0.0 and r["mean_rank_range"] == 0.0 and r["icc"] is None
        assert d["median_robust_cv"] == 0.0 and d["filterable_share"] == 0.0
    elif case == "all_failures":
        assert r["median_repeat_cv"] is None and r["n_problems"] == 0 and r["mean_rank_range"] is None
        assert d["filterable_share"] is None and d["problems"] == {}
    elif case == "one_opt_test":
        assert r["median_repeat_cv"] is not None and d["filterable_share"] is None
        assert all(p["robust_cv"] is None and p["filterable"] is False for p in d["problems"].values())


def test_cli_prints_tables_and_writes_json(tmp_path, capsys):
    synth = synthesize(n_problems=6, busy=True, seed=5)
    path = save_corpus(synth.corpus, tmp_path / "corpus.parquet")
    out_json = tmp_path / "rel.json"
    assert main(["audit", "reliability", str(path), "--json", str(out_json), "--n-boot", "50"]) == 0
    printed = capsys.readouterr().out
    assert "Reliability audit" in printed and "[busy · c0] median_repeat_cv" in printed
    data = json.loads(out_json.read_text())
    assert RELIABILITY_KEYS <= set(next(r for r in data["runs"] if r["environment"] == "busy"))
    assert main(["audit", "reliability", str(path), "--n-boot", "20", "--strict"]) == 1
    assert main(["audit", "discriminability", str(path), "--json", str(tmp_path / "d.json"), "--floor-ms", "25",
                 "--method", "mad", "--threshold", "gap_warn=60", "--n-boot", "20"]) == 0
    data = json.loads((tmp_path / "d.json").read_text())
    quiet = next(r for r in data["runs"] if r["environment"] == "quiet")
    assert quiet["floor_s"] == pytest.approx(0.025)
    assert data["thresholds"]["gap_warn"] == 60.0
    assert quiet["robust_cv_method"] == "mad"
    capsys.readouterr()
    assert main(["audit", "reliability", str(path), "--threshold", "nope=1"]) == 1
    err = capsys.readouterr().err
    assert "--threshold: unknown reliability threshold 'nope'" in err and "repeat_cv" in err


def test_console_script_runs_as_a_real_process(tmp_path):
    path = save_corpus(synthesize(n_problems=4, seed=2).corpus, tmp_path / "c.parquet")
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "discriminability", str(path),
                           "--n-boot", "20"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Discriminability audit" in proc.stdout and "strong_weak_gap" in proc.stdout


def test_cli_reports_a_missing_file_cleanly(tmp_path, capsys):
    assert main(["audit", "reliability", str(tmp_path / "missing.csv")]) == 1
    err = capsys.readouterr().err
    assert "missing.csv" in err and "Traceback" not in err


def test_figures_draw_every_environment(rel, dis):
    fig = repeat_cv_distributions(rel)
    assert isinstance(fig, Figure) and len(fig.axes[0].lines) == 2 + 2  # two ECDFs + warn/fail lines
    fig = rank_drift_ranges(rel)
    assert len(fig.axes) == 2 and len(fig.axes[1].lines) == 2
    fig = robust_cv_per_problem(dis)
    assert len(fig.axes[0].lines) == 2 * 2 + 1
    fig = variance_shares(rel)
    heights = np.array([[p.get_height() for p in c] for c in fig.axes[0].containers])
    np.testing.assert_allclose(heights.sum(axis=0), 1.0, atol=1e-9)  # shares of each environment sum to 1
    fig = near_floor_shares(dis)
    assert len(fig.axes[0].patches) > 0
    import matplotlib.pyplot as plt

    plt.close("all")


def test_per_run_results_share_one_shape():
    """Reliability and discriminability results are both :class:`audits.protocol.per_run.PerRunAudit`: one run
    by name (an ambiguous or absent one is a KeyError naming the runs there are), the headline table and the JSON
    with the audit's own name."""
    corpus = synthesize(n_problems=4, seed=2, campaigns=(("c0", 1.0, 0.0), ("c1", 1.0, 0.0))).corpus
    for run, name in ((run_reliability_audit, "reliability"), (run_discriminability_audit, "discriminability")):
        audit = run(corpus, n_boot=20)
        assert audit.to_dict()["audit"] == name
        assert [r["campaign"] for r in audit.to_dict()["runs"]] == list(audit.to_frame()["campaign"]) == ["c0", "c1"]
        assert audit.result("quiet", "c1") is list(audit.runs.values())[1]
        with pytest.raises(KeyError, match=r"2 results for environment 'quiet'; runs: quiet · c0, quiet · c1"):
            audit.result("quiet")
