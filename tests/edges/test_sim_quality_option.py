"""`--quality beta:A,B` refuses parameters that are not finite numbers > 0.

Before, `beta:nan,1` and `beta:inf,1` passed the check (NaN <= 0 is false) and every GRPO weight was NaN: the
zero-advantage rate of every reward environment read "n/a ... undefined (NaN) on this run's 1200 samples", a
property of the option read as one of the corpus. The Python option (stats.simulator.quality_weights) refuses
them too. A valid Beta is checked against scipy's density.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from stats.simulator import quality_weights
from tests.cli_process import synth_corpus

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("quality") / "synth.parquet"
    return synth_corpus(path)


@pytest.mark.parametrize("value", ["beta:nan,1", "beta:1,inf", "beta:-inf,2", "beta:0,1"])
def test_a_bad_beta_is_refused_as_the_option(corpus, value):
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "simulate", str(corpus), "--environment", "quiet",
                           "--reward-env", str(ROOT / "fixtures" / "environments" / "top30.yaml"), "--n-boot", "0",
                           "--quality", value], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "argument --quality: expected 'uniform' or 'beta:A,B' with finite A, B > 0" in proc.stderr


@pytest.mark.parametrize("params", [(float("nan"), 1.0), (1.0, float("inf"))])
def test_the_python_option_refuses_them(params):
    with pytest.raises(ValueError, match="finite and > 0"):
        quality_weights(np.array([0.2, 0.5]), ("beta", *params))


def test_a_valid_beta_is_scipy_density():
    u = np.array([0.0, 0.25, 0.5, 1.0])
    np.testing.assert_allclose(quality_weights(u, ("beta", 2.0, 3.0)),
                               sps.beta.pdf(np.clip(u, 1e-3, 1 - 1e-3), 2.0, 3.0))
