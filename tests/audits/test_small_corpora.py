"""Too few problems or repeats is n/a, never an error or a verdict (issue 16, gaps 1, 2 and 4).

Every audit on a 1-problem, a 2-problem and a 1-repeat corpus: it runs, the findings that need more
problems (leave-one-problem-out, intervals over problems, resampled comparisons) or more repeats are
``n/a`` with the reason, and what the corpus does measure is still reported, checked against an
independent computation (numpy, scipy, sklearn) on the same rows. ``n_boot=0`` means no intervals: every
interval NaN, the point estimates equal to those of a bootstrapped run, nothing judged against resamples.
Nested repeats: the repeats needed for a precise mean count processes (hand computation on a planted
corpus). The command line exits with a message, never a traceback.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sps

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import run_discriminability_audit
from audits.protocol.findings import NA
from audits.protocol.params import OptionError
from audits.checks.reliability import run_reliability_audit
from audits.checks.simulation import run_simulation_audit
from audits.engine.whole_audit import run_whole_audit
from stats.reliability import process_level
from stats.rewards import RewardEnvironment
import tests.stats.test_nested_repeats as nested_module
from tests.stats.test_nested_repeats import _nested

N_BOOT = 40
DRIFT = (("c0", 1.0, 0.0), ("c1", 0.63, 0.053))      # planted: c1 = 0.63 c0 + 53 ms
TOP30 = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


def _by_metric(findings):
    return {f.metric: f for f in findings}


def _corpus(n_problems, n_repeats=3, seed=0, **kw):
    return synthesize(n_problems=n_problems, n_tests=4, n_solutions=8, n_repeats=n_repeats, seed=seed, **kw).corpus


# --- calibration ------------------------------------------------------------------------------------------

NEEDS_PROBLEMS = ("unusable_families", "best_lopo_log_rmse", "within_problem_spearman", "best_lopo_r2",
                  "multiplicative_gap", "affine_intercept_ms", "affine_slope_change", "spearman_calibrated",
                  "ptau_swing_pp", "drift_changes")


def test_calibration_on_one_problem_is_na_where_it_needs_problems_and_measures_the_rest():
    corpus = _corpus(1, campaigns=DRIFT, seed=1)
    audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=N_BOOT, n_boot_rank=10)
    found = _by_metric(audit.findings)
    assert audit.pairing.n_problems == 1 and audit.pairing.n_pairs > 2
    for metric in NEEDS_PROBLEMS:
        f = found[metric]
        assert f.level == NA, (metric, f.level)
        assert f.reason.startswith("1 problem pair up") and "needs >= 2" in f.reason and "Time the same" in f.reason
    assert found["pairs_lost_share"].level != NA          # measured: how many cells pair up
    assert audit.best_family is None and audit.level != NA  # judged findings remain
    # what is measured equals an independent computation on the paired medians
    x, y = audit.pairing.frame["x"].to_numpy(), audit.pairing.frame["y"].to_numpy()
    slope, intercept = np.polyfit(x, y, 1)
    aff = audit.params.query("family == 'affine'").set_index("param")
    assert aff.loc["slope", "estimate"] == pytest.approx(slope, rel=1e-9)
    assert aff.loc["intercept_s", "estimate"] == pytest.approx(intercept, rel=1e-6, abs=1e-12)
    assert aff[["ci_low", "ci_high"]].isna().all().all()   # no interval over one problem
    assert audit.bland_altman.bias.estimate == pytest.approx(np.mean(np.log(y) - np.log(x)))
    assert math.isnan(audit.bland_altman.bias.low)
    # rank agreement needs no held-out problem: it is judged, and equals scipy's Spearman on its units
    assert found["spearman_raw"].level != NA
    agree = audit.agreement
    rho = sps.spearmanr(agree["q_raw"], agree["q_fresh"]).statistic
    assert audit.spearman_raw.estimate == pytest.approx(rho, abs=1e-12)
    assert audit.fits["lopo_r2"].isna().all()
    json.dumps(audit.to_dict())                             # NaN -> null everywhere
    assert "1 problem" in audit.summary() or "n/a" in audit.summary()


def test_calibration_on_two_problems_validates_leave_one_problem_out():
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import LeaveOneGroupOut, cross_val_predict

    corpus = _corpus(2, campaigns=DRIFT, seed=2)
    audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=N_BOOT, n_boot_rank=10)
    found = _by_metric(audit.findings)
    assert audit.pairing.n_problems == 2
    assert found["best_lopo_log_rmse"].level != NA and found["best_lopo_r2"].level != NA
    frame = audit.pairing.frame
    pred = cross_val_predict(LinearRegression(), frame[["x"]].to_numpy(), frame["y"].to_numpy(),
                             groups=frame["problem"].astype(str).to_numpy(), cv=LeaveOneGroupOut())
    y = frame["y"].to_numpy()
    r2 = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
    assert audit.fits.set_index("name").loc["affine", "lopo_r2"] == pytest.approx(r2, rel=1e-9)


def test_calibration_with_no_pair_fits_nothing_and_says_so():
    corpus = _corpus(2, campaigns=DRIFT, seed=3)
    keep = ~(((corpus["campaign"] == "c0") & (corpus["problem"] == "p0000"))
             | ((corpus["campaign"] == "c1") & (corpus["problem"] == "p0001")))
    audit = run_calibration_audit(corpus.loc[keep.to_numpy()], source="c0", target="c1", n_boot=N_BOOT,
                                  n_boot_rank=10)
    found = _by_metric(audit.findings)
    assert audit.pairing.n_pairs == 0 and len(audit.fits) == 0 and audit.bland_altman is None
    assert all(found[m].level == NA and "fit no map" in found[m].reason for m in NEEDS_PROBLEMS)
    assert found["pairs_lost_share"].level == "fail"       # measured: nothing pairs up


def test_calibration_cli_on_one_problem_exits_with_findings_not_a_traceback(tmp_path):
    path = tmp_path / "one problem.parquet"
    save_corpus(_corpus(1, campaigns=DRIFT, seed=1), path)
    proc = _cli("audit", "calibration", path, "--environment", "quiet", "--source-campaign", "c0",
                "--target-campaign", "c1", "--n-boot", "20", "--n-boot-rank", "5", "--json", tmp_path / "c.json")
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    levels = {f["metric"]: f["level"] for f in json.loads((tmp_path / "c.json").read_text())["findings"]}
    assert levels["best_lopo_log_rmse"] == "n/a" and levels["pairs_lost_share"] != "n/a"


# --- aggregation ------------------------------------------------------------------------------------------

def test_aggregation_with_one_repeat_is_na_not_an_exception(tmp_path):
    corpus = _corpus(6, n_repeats=1)
    audit = run_aggregation_audit(corpus, n_boot=N_BOOT)
    assert audit.comparisons == () and audit.primary is None and audit.recommended is None and audit.table.empty
    found = _by_metric(audit.findings)
    for metric in ("repeats", "recommended_aggregator", "default_aggregator"):
        assert found[metric].level == NA and "one repeat" in found[metric].reason
    data = json.loads(json.dumps(audit.to_dict()))
    assert data["primary"] is None and data["recommended"] is None
    assert "n/a" in audit.summary()
    path = tmp_path / "one.parquet"
    save_corpus(corpus, path)
    proc = _cli("audit", "aggregation", path, "--n-boot", "20")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "n/a" in proc.stdout and "one repeat only" in proc.stdout


def test_aggregation_on_one_problem_does_not_judge_against_resamples():
    audit = run_aggregation_audit(_corpus(1), n_boot=N_BOOT)
    comp = audit.comparison()
    assert comp.n_problems == 1
    table = comp.table
    assert table[["stability_low", "stability_high", "ratio_low", "ratio_high"]].isna().all().all()
    assert table["dominated_by_confident"].map(len).eq(0).all() and table["p_better_than_default"].isna().all()
    found = _by_metric(audit.findings)
    assert found["dominated_aggregators"].level == NA
    assert found["dominated_aggregators"].reason.startswith("1 problem; this figure needs >= 2")
    if comp.recommended != comp.default:
        assert found["default_aggregator"].level == NA
    best = comp.recommended
    assert found[f"stability[{best}]"].level != NA          # measured on the one problem's repeats
    # the point estimates are the one problem's values
    per = comp.per_problem.set_index("aggregator")
    assert table.set_index("aggregator")["stability"].to_dict() == pytest.approx(per["stability"].to_dict(),
                                                                                 nan_ok=True)


def test_aggregation_on_two_problems_resamples_and_judges():
    found = _by_metric(run_aggregation_audit(_corpus(2, seed=4), n_boot=N_BOOT).findings)
    assert found["dominated_aggregators"].level != NA and found["default_aggregator"].level != NA
    assert found["n_problems"].level == "warn" and found["n_problems"].value == 2


# --- reliability, discriminability, simulation --------------------------------------------------------

def test_reliability_and_discriminability_on_one_problem_measure_what_they_can():
    corpus = _corpus(1)
    rel = run_reliability_audit(corpus, n_boot=N_BOOT)
    res = next(iter(rel.runs.values()))
    assert res.n_problems == 1 and math.isnan(res.median_repeat_cv.low)
    refs = corpus.loc[(corpus["role"] == "reference") & corpus["correct"] & (corpus["test_kind"] == "optimization")
                      & (corpus["status"] == "ok")]
    cv = refs.groupby(["problem", "test", "solution"])["duration_s"].agg(lambda d: d.std(ddof=1) / d.mean())
    assert res.median_repeat_cv.estimate == pytest.approx(float(np.median(cv)), rel=1e-9)
    assert _by_metric(rel.findings)["median_repeat_cv"].level != NA
    disc = run_discriminability_audit(corpus, n_boot=N_BOOT)
    assert len(next(iter(disc.runs.values())).problems) == 1
    assert "filterable_share" in _by_metric(disc.findings)


def test_simulation_with_one_repeat_is_na_on_noise_not_a_warning():
    audit = run_simulation_audit(_corpus(6, n_repeats=1), reward_environments=[TOP30], n_boot=N_BOOT)
    found = _by_metric(audit.findings)
    assert "n_pairs" not in found
    assert found["curve_noise"].level == NA and "one repeat" in found["curve_noise"].reason
    one_problem = run_simulation_audit(_corpus(1), reward_environments=[TOP30], n_boot=N_BOOT)
    assert int(one_problem.diagnostics["n_problems"].iloc[0]) == 1


def test_whole_audit_on_one_repeat_runs_every_audit(tmp_path):
    path = tmp_path / "one.parquet"
    save_corpus(_corpus(5, n_repeats=1), path)
    proc = _cli("audit", "all", path, "--n-boot", "20")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    whole = run_whole_audit(_corpus(5, n_repeats=1), n_boot=20)
    assert whole.aggregation is not None and whole.aggregation.comparisons == ()


# --- n_boot = 0: no intervals ---------------------------------------------------------------------------

def _estimates(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[[c for c in frame.columns if not c.endswith(("_low", "_high"))]]


def test_n_boot_zero_gives_no_intervals_and_the_same_point_estimates():
    corpus = _corpus(6, campaigns=DRIFT, seed=5)
    one_run = corpus.loc[(corpus["campaign"] == "c0").to_numpy()]
    rel0, rel = run_reliability_audit(one_run, n_boot=0), run_reliability_audit(one_run, n_boot=N_BOOT)
    pd.testing.assert_frame_equal(_estimates(rel0.to_frame()), _estimates(rel.to_frame()))
    assert rel0.to_frame()[["median_repeat_cv_low", "median_repeat_cv_high", "mean_rank_sd_low"]].isna().all().all()
    disc0, disc = run_discriminability_audit(one_run, n_boot=0), run_discriminability_audit(one_run, n_boot=N_BOOT)
    r0, r = next(iter(disc0.runs.values())), next(iter(disc.runs.values()))
    assert r0.filterable_share.estimate == r.filterable_share.estimate and math.isnan(r0.filterable_share.low)
    agg0, agg = run_aggregation_audit(one_run, n_boot=0), run_aggregation_audit(one_run, n_boot=N_BOOT)
    cols = ["aggregator", "stability", "dynamic_range", "ratio", "pareto"]
    pd.testing.assert_frame_equal(agg0.table[cols], agg.table[cols])
    assert agg0.table[["stability_low", "ratio_high"]].isna().all().all()
    dominated = _by_metric(agg0.findings)["dominated_aggregators"]
    assert dominated.level == NA and "n_boot = 0" in dominated.reason
    cal0 = run_calibration_audit(corpus, source="c0", target="c1", n_boot=0, n_boot_rank=0)
    cal = run_calibration_audit(corpus, source="c0", target="c1", n_boot=N_BOOT, n_boot_rank=10)
    assert cal0.fits["lopo_log_rmse"].tolist() == pytest.approx(cal.fits["lopo_log_rmse"].tolist())
    assert cal0.best_family == cal.best_family and cal0.params["ci_low"].isna().all()
    intercept = _by_metric(cal0.findings)["affine_intercept_ms"]
    assert intercept.level == NA and "n_boot = 0" in intercept.reason
    sim0 = run_simulation_audit(one_run, reward_environments=[TOP30], n_boot=0)
    sim = run_simulation_audit(one_run, reward_environments=[TOP30], n_boot=N_BOOT)
    assert sim0.diagnostics["auc"].tolist() == pytest.approx(sim.diagnostics["auc"].tolist())
    assert math.isnan(sim0.results[0].diagnostics.get("auc_ci_low", math.nan))
    assert math.isfinite(sim.results[0].diagnostics["auc_ci_low"])


@pytest.mark.parametrize("audit", ["reliability", "discriminability", "aggregation", "simulation", "calibration"])
def test_negative_n_boot_is_a_value_error_naming_the_parameter(audit):
    corpus = _corpus(3, campaigns=DRIFT)
    run = {"reliability": lambda: run_reliability_audit(corpus, n_boot=-1),
           "discriminability": lambda: run_discriminability_audit(corpus, n_boot=-1),
           "aggregation": lambda: run_aggregation_audit(corpus, n_boot=-1),
           "simulation": lambda: run_simulation_audit(corpus, reward_environments=[TOP30], campaign="c0", n_boot=-1),
           "calibration": lambda: run_calibration_audit(corpus, source="c0", target="c1", n_boot=-1)}[audit]
    with pytest.raises(OptionError, match=rf"^{audit} option n_boot must be an integer >= 0 \(--n-boot\), got -1$"):
        run()  # the audit's Options validate it (one message format), an OptionError being a ValueError


def test_n_boot_zero_and_negative_on_the_command_line(tmp_path):
    path = tmp_path / "c.parquet"
    save_corpus(_corpus(4), path)
    for command in (["audit", "reliability"], ["audit", "discriminability"], ["audit", "aggregation"]):
        proc = _cli(*command, path, "--n-boot", "0")
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (command, proc.stderr)
    proc = _cli("audit", "reliability", path, "--n-boot", "-1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "n_boot must be an integer >= 0" in proc.stderr


# --- nested repeats: precision counts processes -------------------------------------------------------

def test_repeats_for_precision_counts_processes_by_hand(monkeypatch):
    # values noisy inside a process (log sd 0.2) around process offsets (0.05): the CV of one value and that
    # of a process median differ clearly, so counting values instead of processes cannot match by chance
    monkeypatch.setattr(nested_module, "SD_PROCESS", 0.05)
    monkeypatch.setattr(nested_module, "SD_VALUE", 0.2)
    planted = _nested(n_problems=6, n_solutions=5, n_processes=8, n_values=3, seed=2)
    res = next(iter(run_reliability_audit(planted, n_boot=0).runs.values()))
    assert res.variance.nested and res.n_repeats == 8
    # by hand: the median of each process's values, the CV of those across a cell's processes, the median
    # over cells, then n = ceil(4 z^2 cv^2 / w^2) with w = 5 %, z = 1.959964
    medians = planted.groupby(["problem", "test", "solution", "run"])["duration_s"].median()
    cells = medians.groupby(["problem", "test", "solution"]).agg(lambda m: m.std(ddof=1) / m.mean())
    cv = float(np.median(cells))
    z = sps.norm.ppf(0.975)
    assert res.repeats_for_precision == math.ceil(4 * z ** 2 * cv ** 2 / 0.05 ** 2)
    # counting values as repeats would use the CV of all 24 values of a cell: a different figure
    pooled = float(np.median(planted.groupby(["problem", "test", "solution"])["duration_s"]
                             .agg(lambda d: d.std(ddof=1) / d.mean())))
    assert math.ceil(4 * z ** 2 * pooled ** 2 / 0.05 ** 2) != res.repeats_for_precision
    assert len(process_level(planted)) == len(medians)
    assert "processes" in _by_metric(
        run_reliability_audit(planted, n_boot=0).findings)["repeats_needed"].message.split("for a 5%")[0]
