"""NaN is n/a (issue 24, item 3): a value that cannot be computed is never a verdict, in JSON, terminal and
report alike, and without an interval ``drifted`` is null, not true."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from audits.checks.calibration import run_calibration_audit
from audits.checks.reward_environments import load_reward_environments
from audits.checks.simulation import run_simulation_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA, Finding, findings_table, worst_level
from stats.calibration import campaign_drift

TOP30 = "fixtures/environments/top30.yaml"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=600)


@pytest.mark.parametrize("level", ["pass", "warn", "fail"])
def test_a_finding_with_a_nan_value_is_na_in_json_and_terminal(level):
    f = Finding(level, "auc", np.float64("nan"), "warn <= 0.15", "sparse: auc = nan")
    assert f.level == NA and f.value is None and "NaN" in f.reason
    assert f.to_dict()["level"] == NA and json.dumps(f.to_dict(), allow_nan=False)
    assert findings_table([f]).startswith("n/a") and "sparse" not in findings_table([f])
    assert worst_level([f, Finding("pass", "x", 1.0, 1, "ok")]) == "pass"
    given = Finding(level, "icc", math.nan, 0.9, "m", reason="one repeat per cell")
    assert given.level == NA and given.reason == "one repeat per cell"
    assert Finding(level, "x", 0.0, 1, "m").level == level  # a number keeps its verdict


def test_drifted_is_null_without_an_interval():
    corpus = synthesize(campaigns=(("c0", 1.0, 0.0), ("c1", 1.0, 0.0), ("c2", 1.0, 0.0)), n_problems=6,
                        seed=3).corpus
    table = campaign_drift(corpus, anchor="c0", n_boot=0)
    assert len(table) and table["drifted"].isna().all() and not table["drifted"].eq(True).any()
    assert table.loc[table["campaign"] == "c2", "changed"].isna().all()  # a change without a CI: not measured
    with_ci = campaign_drift(corpus, anchor="c0", n_boot=200)
    assert with_ci["drifted"].map(lambda v: isinstance(v, bool)).all()
    audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=0, n_boot_rank=0)
    drift = audit.to_dict()["drift"]
    assert drift and all(row["drifted"] is None for row in drift)


def _one_reference():
    """Every problem has a single correct reference: scored against an empty pool (leave-self-out)."""
    return synthesize(n_problems=4, n_solutions=1, n_repeats=3, seed=1).corpus


def test_simulator_nan_auc_is_na_never_sparse_saturated_or_non_monotone(tmp_path):
    envs = load_reward_environments([TOP30])
    audit = run_simulation_audit(_one_reference(), reward_environments=envs, n_boot=20)
    row = audit.diagnostics.iloc[0]
    assert math.isnan(row["auc"]) and math.isnan(row["monotonicity"]) and row["level"] == NA
    assert all(f.level == NA for f in audit.findings) and audit.findings
    assert {f.metric for f in audit.findings} >= {"auc", "monotonicity", "verdict"}
    assert all("no rollout was scored" in f.reason for f in audit.findings)
    path = tmp_path / "one.parquet"
    save_corpus(_one_reference(), path)
    for profile in ("reward", "benchmark"):
        out = tmp_path / f"{profile}.json"
        proc = _cli("simulate", path, "--reward-env", TOP30, "--n-boot", "20", "--profile", profile, "--json", out)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        data = json.loads(out.read_text())
        levels = {f["level"] for f in data["findings"]}
        assert levels <= {NA}
        for word in ("WARN", "FAIL", "fail:", "sparse", "saturated", "non-monotone"):
            assert word not in proc.stdout, (profile, word, proc.stdout)
        if profile == "benchmark":  # the JSON leaves every finding out, and so does the terminal
            assert data["findings"] == [] and "N/A" not in proc.stdout and "not judged" in proc.stdout


def test_benchmark_profile_terminal_and_json_agree_on_a_flagged_reward_environment(tmp_path):
    corpus = synthesize(n_problems=6, n_repeats=3, seed=1).corpus
    path = tmp_path / "c.parquet"
    save_corpus(corpus, path)
    env = tmp_path / "tau5.yaml"
    env.write_text("name: tau5\npost: {tau: 5}\n")  # a 5 % gate: sparse and off the diagonal
    texts = {}
    for profile in ("reward", "benchmark"):
        out = tmp_path / f"{profile}.json"
        proc = _cli("simulate", path, "--reward-env", env, "--n-boot", "20", "--profile", profile, "--json", out)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(out.read_text())
        judged = [f for f in data["findings"] if f["level"] in ("warn", "fail")]
        texts[profile] = (proc.stdout, judged, data["reward_environments"]["tau5"]["verdict"])
    stdout, judged, verdict = texts["reward"]
    assert judged and all(f["metric"] in stdout for f in judged) and verdict.split(":")[0] in ("warn", "fail")
    stdout, judged, verdict = texts["benchmark"]
    assert judged == [] and verdict == "not judged" and "WARN" not in stdout and "FAIL" not in stdout
