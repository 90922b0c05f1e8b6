"""The calibration pair's run errors advise options the command has.

Naming the pair by environment on a corpus with two campaigns per environment (``--source-environment quiet
--target-environment busy``), or a campaign the corpus lacks, was refused with the run table's generic advice
"choose it with --environment NAME and --campaign NAME": ``audit calibration`` has no ``--campaign`` (argparse
refuses it), so the advice led nowhere. The message now names the side and its own options.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], capture_output=True, text=True,
                          env=env)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("pair") / "two campaigns.parquet"
    save_corpus(synthesize(n_problems=3, n_repeats=2, campaigns=(("stored", 1.0, 0.0), ("fresh", 1.1, 0.002)),
                              busy=True, seed=2).corpus, path)
    return path


@pytest.mark.parametrize("command", [("audit", "calibration"), ("audit", "all")])
@pytest.mark.parametrize("names, side, option", [
    (("--source-environment", "quiet", "--target-environment", "busy"), "source", "--source-campaign"),
    (("--source-environment", "quiet", "--source-campaign", "stored", "--target-environment", "quiet",
      "--target-campaign", "no such"), "target", "--target-campaign"),
])
def test_a_pair_that_names_no_single_run_says_which_side_and_which_option(corpus, command, names, side, option):
    proc = _cli(*command, corpus, *names, "--n-boot", "0")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert f"the {side} run:" in proc.stderr and option in proc.stderr, proc.stderr
    assert "--campaign NAME" not in proc.stderr.replace(f"-{side}-campaign NAME", ""), proc.stderr
    # the option it advises exists on the command
    assert option in _cli(*command, "--help").stdout
