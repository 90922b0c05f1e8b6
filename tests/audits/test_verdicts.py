"""Verdicts about what was measured (issue 16, items 3-5 and 7).

* what a corpus cannot measure is ``n/a`` with the reason, never ``pass`` (one repeat, one test per problem,
  no floor rows), in the result, the terminal table and the JSON;
* calibration is judged on held-out log error: the family is chosen by it, a map that goes negative is
  reported with its count and not chosen, ``speedaudit calibrate`` refuses such a map without ``--clip``;
* verdict profiles: ``benchmark`` judges a benchmark machine by pyperf's practice and drops the reward gates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd

from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import run_discriminability_audit
from audits.protocol.findings import NA
from audits.checks.reliability import run_reliability_audit
from stats.calibration import choose_family, lopo_r2

REPEAT_METRICS = {"median_repeat_cv", "mean_rank_sd", "mean_rank_range", "p95_rank_range",
                  "icc", "significant_share", "repeats_needed"}


def _cli(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd)


def _levels(findings):
    return {f.metric: f for f in findings}


# --- item 3: not measurable is not a pass -------------------------------------------------------------------

def test_one_repeat_corpus_is_na_for_every_repeat_based_finding():
    corpus = synthesize(n_problems=6, n_repeats=1, seed=1).corpus
    audit = run_reliability_audit(corpus, n_boot=20)
    found = _levels(audit.findings)
    assert REPEAT_METRICS <= set(found)
    for metric in REPEAT_METRICS:
        f = found[metric]
        assert f.level == NA, (metric, f.level, f.message)
        assert "repeat" in f.reason
    # the same corpus with two repeats measures them: the n/a comes from the repeat count, not the metric
    two = run_reliability_audit(synthesize(n_problems=6, n_repeats=2, seed=1).corpus, n_boot=20)
    assert {f.metric for f in two.findings if f.level != NA} >= {"median_repeat_cv", "mean_rank_sd"}


def test_one_test_per_problem_and_no_floor_rows_are_na_not_pass():
    corpus = synthesize(n_problems=6, n_tests=1, n_correctness_tests=0, floor_rows=0, seed=2).corpus
    found = _levels(run_discriminability_audit(corpus, n_boot=20).findings)
    for metric in ("filterable_share", "noise_inflated_filterable_share"):
        assert found[metric].level == NA and "one optimization test" in found[metric].reason
    assert found["near_floor_test_share"].level == NA and "floor" in found["near_floor_test_share"].reason
    # with several tests and floor rows the same findings are judged
    judged = _levels(run_discriminability_audit(synthesize(n_problems=6, seed=2).corpus, n_boot=20).findings)
    assert all(judged[m].level != NA for m in ("filterable_share", "near_floor_test_share"))


def test_one_repeat_shows_na_in_the_terminal_and_the_json(tmp_path):
    path = tmp_path / "one repeat.parquet"
    save_corpus(synthesize(n_problems=5, n_repeats=1, seed=3).corpus, path)
    out = tmp_path / "r.json"
    proc = _cli("audit", "reliability", path, "--n-boot", "20", "--json", out)
    assert proc.returncode == 0, proc.stderr
    lines = [ln for ln in proc.stdout.splitlines() if "mean_rank_sd" in ln and ln.startswith(("PASS", "WARN", "FAIL", "n/a"))]
    assert lines and all(ln.startswith("n/a") for ln in lines), proc.stdout
    data = json.loads(out.read_text())
    by_metric = {f["metric"]: f for f in data["findings"]}
    for metric in REPEAT_METRICS:
        assert by_metric[metric]["level"] == "n/a" and by_metric[metric]["reason"]
    assert not any(f["level"] == "pass" and f["metric"] in REPEAT_METRICS for f in data["findings"])


# --- item 4: calibration on the right scale -----------------------------------------------------------------

def _planted_intercept():
    return synthesize(campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), n_problems=10, seed=4).corpus


def test_planted_intercept_is_not_a_pure_speed_factor():
    audit = run_calibration_audit(_planted_intercept(), source="c0", target="c1", n_boot=50, n_boot_rank=10)
    texts = " ".join(f.message for f in audit.findings)
    assert "pure speed factor is enough" not in texts
    found = _levels(audit.findings)
    assert found["multiplicative_gap"].level == "fail"
    fits = audit.fits.set_index("name")
    # the family used is the one with the lowest held-out log error among usable families
    assert audit.calibration_family in ("affine", "deming")
    usable = fits.loc[fits["usable"]]
    assert audit.calibration_family == usable["lopo_log_rmse"].astype(float).idxmin()
    assert fits.loc["multiplicative", "lopo_log_rmse"] > 5 * fits.loc[audit.calibration_family, "lopo_log_rmse"]


def _curved():
    """Target = 30 x^2 (seconds) of the source: a power law; a straight line fitted to it predicts below 0 for
    the shortest tests."""
    corpus = synthesize(campaigns=(("c0", 1.0, 0.0), ("c1", 1.0, 0.0)), n_problems=10, floor_rows=0,
                        seed=5).corpus.copy()
    target = (corpus["campaign"] == "c1").to_numpy()
    d = corpus["duration_s"].to_numpy(dtype=float).copy()
    d[target] = 30.0 * d[target] ** 2
    corpus["duration_s"] = np.maximum(d, 1e-5)
    return corpus


def test_affine_going_negative_is_counted_and_another_family_chosen():
    corpus = _curved()
    audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=20, n_boot_rank=10)
    fits = audit.fits.set_index("name")
    # independent count: the affine fit's own out-of-fold predictions
    pairs = audit.pairing.frame
    lopo = lopo_r2(pairs["x"].to_numpy(float), pairs["y"].to_numpy(float), pairs["problem"].astype(str).to_numpy(),
                   "affine", n_boot=0)
    bad = int(np.sum(~(lopo.predictions >= 1e-6)))
    assert bad > 0
    assert int(fits.loc["affine", "n_nonpositive"] + fits.loc["affine", "n_below_min"]) == bad
    assert not bool(fits.loc["affine", "usable"])
    assert audit.calibration_family != "affine" and audit.calibration_family == "power"
    unusable = _levels(audit.findings)["unusable_families"]
    assert "affine" in unusable.message and f"{bad:,}" in unusable.message
    table = pd.DataFrame({"family": fits.index, "usable": fits["usable"], "lopo_log_rmse": fits["lopo_log_rmse"]})
    assert choose_family(table.loc[fits["method"].eq("ols").to_numpy() | fits.index.isin(["deming"])]) == \
        audit.calibration_family


def test_calibrate_refuses_a_negative_map_without_clip(tmp_path):
    path = tmp_path / "curved.parquet"
    save_corpus(_curved(), path)
    out = tmp_path / "calibrated.parquet"
    proc = _cli("calibrate", path, "--source", "c0", "--target", "c1", "--family", "affine", "--out", out)
    # a straight line through a power law is worse out of fold than no map at all: refused, --force named
    assert proc.returncode != 0 and "--force" in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()
    proc = _cli("calibrate", path, "--source", "c0", "--target", "c1", "--family", "affine", "--force", "--out", out)
    assert proc.returncode != 0 and "--clip" in proc.stderr and "Traceback" not in proc.stderr  # and it goes < floor
    assert not out.exists()
    proc = _cli("calibrate", path, "--source", "c0", "--target", "c1", "--family", "affine", "--force", "--clip",
                "--out", out)
    assert proc.returncode == 0, proc.stderr
    mapping = json.loads(out.with_name("calibrated.calibration.json").read_text())
    assert mapping["rows_clipped"] > 0 and mapping["family"] == "affine" and mapping["force"]
    out2 = tmp_path / "chosen.parquet"
    proc = _cli("calibrate", path, "--source", "c0", "--target", "c1", "--out", out2)
    assert proc.returncode == 0, proc.stderr
    mapping = json.loads(out2.with_name("chosen.calibration.json").read_text())
    assert mapping["family"] == "power" and mapping["rows_clipped"] == 0 and mapping["chosen_by"]
    assert mapping["lopo_log_rmse"] <= mapping["identity_log_rmse"]
    assert mapping["share_2x_off_after"] <= mapping["share_2x_off_before"]
    assert "held-out log error: power" in proc.stdout and "pairs more than 2x off: before" in proc.stdout


# --- item 5: verdicts that do not depend on the repeat count -------------------------------------------------

def test_same_planted_noise_at_3_5_10_repeats_gets_the_same_verdicts():
    # cell CV 13.5 %: above the 12 % warn limit; the raw median of sample CVs is biased low at 3 repeats
    # (would pass) and the raw rank range grows with the repeat count (would pass at 3, fail at 10)
    levels, raw_cv, raw_range = {}, {}, {}
    for repeats in (3, 5, 10):
        corpus = synthesize(n_problems=30, n_repeats=repeats, noise_cv=0.135, noise_add_s=0.0, n_candidates=0,
                            floor_rows=0, seed=11).corpus
        audit = run_reliability_audit(corpus, n_boot=20)
        result = next(iter(audit.runs.values()))
        found = _levels(audit.findings)
        levels[repeats] = tuple(found[m].level for m in ("median_repeat_cv", "mean_rank_sd", "mean_rank_range"))
        raw_cv[repeats], raw_range[repeats] = result.median_repeat_cv.estimate, result.drift.mean_range.estimate
    assert levels[3] == levels[5] == levels[10] == ("warn", "warn", "warn")
    t = audit.thresholds
    assert raw_cv[3] < t.repeat_cv_warn  # the raw figure would have passed at 3 repeats
    assert raw_range[3] < t.rank_range_warn and raw_range[10] >= t.rank_range_fail


# --- item 7: verdict profiles --------------------------------------------------------------------------------

def _benchmark_like():
    """Builds of one program on a benchmark machine: one test per benchmark, builds 0.5 % apart, 1 % repeat CV,
    no floor rows, no candidates."""
    return synthesize(n_problems=10, n_tests=1, n_correctness_tests=0, n_solutions=8, n_incorrect=0,
                      n_candidates=0, constant_sd=0.005, exponent_range=(1.0, 1.0), noise_cv=0.01, noise_add_s=0.0,
                      floor_rows=0, seed=7).corpus


def test_benchmark_profile_judges_a_benchmark_machine_without_reward_gates():
    from audits.report.narrative import describe_overview

    corpus = _benchmark_like()
    verdicts = {}
    for profile in ("reward", "benchmark"):
        rel = run_reliability_audit(corpus, n_boot=20, thresholds={"profile": profile})
        dis = run_discriminability_audit(corpus, n_boot=20, thresholds={"profile": profile})
        verdicts[profile] = {"reliability": rel.findings, "discriminability": dis.findings}
        assert rel.to_dict()["thresholds"]["profile"] == profile
    reward = [f for fs in verdicts["reward"].values() for f in fs]
    bench = [f for fs in verdicts["benchmark"].values() for f in fs]
    assert any(f.level == "fail" and f.metric == "mean_rank_sd" for f in reward)  # the reward gate fails
    assert not any(f.level == "fail" for f in bench)
    assert _levels(bench)["median_repeat_cv"].level == "pass"
    assert not {"mean_rank_sd", "mean_rank_range", "strong_weak_gap"} & {f.metric for f in bench}
    assert "cannot be trusted" in describe_overview(verdicts["reward"])
    text = describe_overview(verdicts["benchmark"], profile="benchmark")
    assert "cannot be trusted" not in text and "benchmark" in text


def test_profile_option_on_the_command_line(tmp_path):
    path = tmp_path / "bench.parquet"
    save_corpus(_benchmark_like(), path)
    out = tmp_path / "r.json"
    proc = _cli("audit", "reliability", path, "--n-boot", "20", "--profile", "benchmark", "--strict", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["thresholds"]["profile"] == "benchmark" and data["thresholds"]["repeat_cv_warn"] == 0.10
    assert "FAIL" not in proc.stdout
    proc = _cli("audit", "reliability", path, "--n-boot", "20", "--strict")
    assert proc.returncode == 1 and "FAIL" in proc.stdout
