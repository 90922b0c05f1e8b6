"""`speedaudit score --k K`: a k above every problem's candidate count is n/a with the reason, never "nan %".

Before: with 4 candidates per problem, `--k 100` printed "p30    nan %  [  n/a ]  n = 0 problems" for every tau,
and `--k 0` was refused as "synth.parquet: k must be a positive integer" (the corpus file named for an option).
The p_tau printed for a k that fits is checked against scipy's binomials on the JSON's own samples.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import comb

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "audits.cli"]
ENV = str(ROOT / "fixtures" / "environments" / "top30.yaml")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("score") / "synth.parquet"
    subprocess.run([*CLI, "synth", "--out", str(path), "--seed", "3"], check=True, capture_output=True, timeout=300)
    return path


def _score(corpus, *args):
    return subprocess.run([*CLI, "score", str(corpus), "--environment", "quiet", "--reward-env", ENV,
                           "--n-draws", "50", "--n-boot", "50", *args], capture_output=True, text=True, timeout=300)


def test_k_above_the_candidates_is_na_with_the_reason(corpus):
    proc = _score(corpus, "--k", "100")
    assert proc.returncode == 0, proc.stderr
    assert "nan" not in proc.stdout.lower()
    assert proc.stdout.count("n/a    (pass@100 needs >= 100 candidates of a problem; these have 4-4") == 4


def test_k_zero_is_refused_as_the_option(corpus):
    proc = _score(corpus, "--k", "0")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "argument --k: expected a whole number >= 1, got '0'" in proc.stderr


def test_p_tau_matches_scipy_binomials(corpus, tmp_path):
    out = tmp_path / "score.json"
    proc = _score(corpus, "--k", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    samples = result["noise_aware"]["candidates"]
    problems = sorted({s["problem"] for s in samples})
    for name, row in result["p_tau"].items():
        tau = row["tau"]
        per = []
        for p in problems:
            mine = [s for s in samples if s["problem"] == p]
            m = sum(1 for s in mine if s["c"] and (tau >= 100 or (s["q"] is not None and s["q"] <= tau / 100)))
            per.append(1 - comb(len(mine) - m, 2, exact=True) / comb(len(mine), 2, exact=True))
        assert row["estimate"] == pytest.approx(100 * np.mean(per), abs=1e-9), name


@pytest.mark.parametrize("taus", ["30,30", "30,30.0,50"])
def test_a_tau_given_twice_is_refused(corpus, taus):
    """Before: the line printed twice and the JSON, keyed by tau, kept one ('p30')."""
    proc = _score(corpus, "--taus", taus)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert f"argument --taus: expected each threshold once like 100,50,30,10, got '{taus}'" in proc.stderr
