"""Calibration on benchmark results written by pyperf itself (issue 24, item 1).

Six machines (``tests/conftest.py``: :func:`write_pyperf_machines`) time one build's benchmarks from 40 ns to
10 s; the files are written with ``pyperf.BenchmarkSuite.dump`` and imported with ``speedaudit import pyperf``.
The held-out error of the family the audit chooses is checked against a leave-one-benchmark-out fit of log y on
log x computed here with numpy from the pyperf files themselves (``pyperf.BenchmarkSuite.load``,
``Benchmark.median()``), and its verdict against the documented thresholds (docs/calibration.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from audits.checks.calibration import DEFAULT_THRESHOLDS, calibration_advice, run_calibration_audit
from audits.corpus.io import load_corpus
from audits.report.narrative import describe_calibration
from stats.calibration import FAMILIES


def _medians(path) -> pd.Series:
    import pyperf

    suite = pyperf.BenchmarkSuite.load(str(path))
    return pd.Series({b.get_name(): b.median() for b in suite.get_benchmarks()})


def _independent(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Leave-one-benchmark-out held-out log-RMSE of log-log fits: free slope (power) and slope 1 (a factor)."""
    lx, ly = np.log(x), np.log(y)
    power, factor = np.empty(len(x)), np.empty(len(x))
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        b, a = np.polyfit(lx[keep], ly[keep], 1)
        power[i] = a + b * lx[i]
        factor[i] = lx[i] + np.mean(ly[keep] - lx[keep])
    return {"power": float(np.sqrt(np.mean((power - ly) ** 2))),
            "multiplicative": float(np.sqrt(np.mean((factor - ly) ** 2)))}


def _judge(value: float) -> str:
    t = DEFAULT_THRESHOLDS
    return "fail" if value >= t.log_rmse_fail else "warn" if value >= t.log_rmse_warn else "pass"


@pytest.fixture(scope="module")
def machines(pyperf_machines):
    _, path, files = pyperf_machines
    corpus = load_corpus(path)
    envs = {e.split(" / ")[0]: e for e in corpus["environment"].astype(str).unique()}
    medians = {f.stem: _medians(f) for f in files}
    return corpus, envs, medians, path


def test_chosen_family_equals_an_independent_leave_one_benchmark_out_fit(machines):
    corpus, envs, medians, _ = machines
    levels = []
    for target in ("bench-b", "bench-c", "bench-d", "bench-e", "bench-f"):
        audit = run_calibration_audit(corpus, source=envs["bench-a"], target=envs[target], n_boot=0, n_boot_rank=0)
        names = medians["bench-a"].index
        x, y = medians["bench-a"].to_numpy(), medians[target].loc[names].to_numpy()
        assert x.min() < 1e-7 and y.max() > 1.0  # nanosecond- and second-scale benchmarks in one pair
        independent = _independent(x, y)
        fits = audit.fits.set_index("name")
        # log-space families can never be unusable for sign; with a relative floor they are never ruled out
        for family in ("multiplicative", "power"):
            assert bool(fits.loc[family, "usable"]) and int(fits.loc[family, "n_nonpositive"]) == 0
            assert fits.loc[family, "lopo_log_rmse"] == pytest.approx(independent[family], abs=1e-9)
        chosen = audit.calibration_family
        assert chosen == min(independent, key=lambda f: (round(independent[f], 12), f != "multiplicative"))
        assert fits.loc[chosen, "lopo_log_rmse"] == pytest.approx(independent[chosen], abs=1e-9)
        usable = fits.loc[fits["usable"].astype(bool), "lopo_log_rmse"].astype(float)
        assert usable.min() == pytest.approx(independent[chosen], abs=1e-12)  # the lowest held-out log error
        head = {f.metric: f for f in audit.findings}["best_lopo_log_rmse"]
        assert head.level == _judge(independent[chosen])
        levels.append(head.level)
        advice = calibration_advice(audit)
        text = describe_calibration(audit)
        assert advice in text.replace("**", "") or advice[:60] in text
        assert "validates" not in text
        if head.level == "fail":  # never "calibrate" beside a failing map
            assert "cannot stand in" in advice and "speedaudit calibrate" not in advice
        else:
            assert "cannot stand in" not in advice
    assert set(levels) == {"pass", "warn", "fail"}  # the planted machines span every verdict


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def _share_2x_off(pred: pd.Series, target: pd.Series) -> float:
    ratio = np.abs(np.log(pred.to_numpy() / target.loc[pred.index].to_numpy()))
    return float(np.mean(ratio > np.log(2.0)))


@pytest.mark.parametrize("target,families", [("bench-f", [None, *FAMILIES]), ("bench-d", [None]),
                                             ("bench-b", [None, "power"])])
def test_calibrate_never_increases_the_share_more_than_2x_off(machines, tmp_path, target, families):
    corpus, envs, medians, path = machines
    before = _share_2x_off(medians["bench-a"], medians[target])
    written = 0
    for family in families:
        out = tmp_path / f"{family}.parquet"
        proc = _cli("calibrate", path, "--source", envs["bench-a"], "--target", envs[target], "--out", out,
                    *(["--family", family] if family else []))
        assert "Traceback" not in proc.stderr and "RuntimeWarning" not in proc.stderr
        if proc.returncode != 0:  # refused: says why and how to insist; nothing written
            assert "--force" in proc.stderr or "--clip" in proc.stderr, proc.stderr
            assert not out.exists()
            continue
        written += 1
        mapping = json.loads(out.with_name(f"{family}.calibration.json").read_text())
        assert f"held-out log error: {mapping['family']}" in proc.stdout
        assert "pairs more than 2x off: before" in proc.stdout
        assert mapping["lopo_log_rmse"] <= mapping["identity_log_rmse"]
        calibrated = load_corpus(out)
        src = calibrated.loc[calibrated["environment"] == envs["bench-a"]]
        after = _share_2x_off(src.groupby("problem", observed=True)["duration_s"].median(), medians[target])
        assert after <= before
        assert mapping["share_2x_off_before"] == pytest.approx(before, abs=1e-12)
        assert mapping["share_2x_off_after_in_sample"] == pytest.approx(after, abs=1e-12)
    assert written >= 1  # the chosen family at least is written (the map beats the raw timings)
