"""The clocks audit's reference run: a name the corpus lacks is refused with advice naming the reference options.

``speedaudit audit clocks --reference-environment E --reference-campaign C`` names the run whose clock is the
truth of ``faithfulness``. A run the corpus does not hold, or a campaign held by several environments, was
refused with the run table's generic advice "pass --environment NAME and/or --campaign NAME" / "choose it with
--environment NAME": those select the audited runs, not the reference, so following the advice left the error
in place. The message now names --reference-environment / --reference-campaign.
"""

from __future__ import annotations

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from tests.cli_process import speedaudit


def _cli(*args):
    return speedaudit(*args)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    frame = synthesize(n_problems=3, n_tests=3, n_solutions=4, n_repeats=2, busy=True, seed=2).corpus
    frame["cpu_s"] = frame["duration_s"] * 0.9
    path = tmp_path_factory.mktemp("clocks") / "two environments.parquet"
    save_corpus(frame, path)
    return path


@pytest.mark.parametrize("names", [
    ("--reference-environment", "nowhere", "--reference-campaign", "c0"),   # no such run
    ("--reference-campaign", "c0"),                                          # c0 is in quiet and in busy
])
def test_reference_run_advice(corpus, names):
    done = _cli("audit", "clocks", corpus, "--n-boot", "5", *names)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr
    assert "reference" in done.stderr and "--reference-environment" in done.stderr, done.stderr
    assert "pass --environment NAME" not in done.stderr and "with --environment NAME" not in done.stderr, done.stderr


def test_reference_run_named_works(corpus):
    done = _cli("audit", "clocks", corpus, "--n-boot", "5", "--reference-environment", "quiet",
                "--reference-campaign", "c0")
    assert done.returncode == 0, done.stderr
