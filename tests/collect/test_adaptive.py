"""Adaptive repeats on a small real suite: clear cells stop at the first round, ambiguous ones get more,
and a SIGKILLed adaptive campaign resumes with one row per execution.

Two real Kattis packages in a temp dir, real programs in the default sandbox:
``clear`` has a fast and a ~10x slower solution (every gate at tau = 30 is decided after
the first round); ``near`` has copies of one program (:data:`NEAR_COPIES`), so every gate stays a coin flip and the rule keeps asking for repeats. Every program also sleeps a random
0-40 ms (drawn anew by each execution): without that noise, on an idle machine the copies' durations
differed by the campaign's fixed interleaved order more than by the (tiny, pooled) repeat noise, three
repeats ordered them with confidence and the test failed 2 of 8 runs; with it, 16 of 16 passed.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from audits.collect.campaign import CampaignError, CampaignSpec, journal_path_for, plan_campaign, run_campaign
from audits.collect.sandbox import Limits, scratch_root
from audits.collect.suite import load_suite
from audits.corpus.io import KEY, load_corpus
from tests.collect.test_campaign import ADD, ROOT, make_suite

LOOP = "s = 0\nfor i in range({n}):\n    s += i\n" + ADD
COIN = "import random, time\ntime.sleep(random.uniform(0.0, 0.04))\n"  # the same noise in every program
START, MAX = 3, 7
#: Copies of one program in ``near``. With three, every gate was sometimes decided after the first round by
#: chance (the copies are exchangeable, but 3 repeats each can still look ordered at confidence 0.95: 1 failure in
#: about 20 runs on the idle machine, 2026-12-04); each added copy must also look decided for the test to fail.
NEAR_COPIES = 6


def two_problems(root: Path) -> Path:
    suite = root / "suite"
    suite.mkdir()
    near = COIN + LOOP.format(n=150_000)
    packages = {"clear": {"fast.py": COIN + ADD, "slow.py": COIN + LOOP.format(n=3_000_000)},
                "near": {f"{chr(ord('a') + k)}.py": near for k in range(NEAR_COPIES)}}
    for name, accepted in packages.items():
        make_suite(root / name, accepted=accepted, n_secret=1, n_sample=0)
        shutil.move(root / name / "add", suite / name)
    return suite


def runs_per_cell(corpus: pd.DataFrame) -> pd.Series:
    real = corpus[corpus["role"] != "floor"]
    return real.groupby(["problem", "solution"], observed=True).size()


def assert_one_row_per_execution(corpus: pd.DataFrame) -> None:
    assert not corpus.duplicated(list(KEY)).any()
    for _, cell in corpus.groupby(["problem", "test", "solution"], observed=True):  # repeats 0..n-1, no gap
        assert sorted(cell["repeat"]) == list(range(len(cell)))


def test_adaptive_campaign_stops_early_on_clear_cells_and_spends_on_ambiguous_ones(tmp_path):
    suite = load_suite(two_problems(tmp_path), n_largest_optimization=1)
    spec = CampaignSpec(repeats=START, adaptive=True, max_repeats=MAX, confidence=0.95, tau=30.0,
                        test_kinds=("optimization",), limits=Limits(wall_s=10.0, memory_bytes=256 << 20))
    plan = plan_campaign(suite, spec)
    result = run_campaign(plan, out=tmp_path / "adaptive.parquet", progress=False)
    assert result.out is not None and not result.errors
    corpus = load_corpus(result.out)
    assert_one_row_per_execution(corpus)
    n = runs_per_cell(corpus)
    assert (n.loc["clear"] == START).all()  # decided after the first round: never re-executed
    assert n.loc["near"].sum() > NEAR_COPIES * START  # the coin flips got more
    assert (n <= MAX).all()
    assert result.rounds >= 2 and result.n_jobs == len(corpus) < result.max_jobs == len(plan.jobs)
    assert "adaptive:" in result.summary()


def test_adaptive_options_are_checked():
    with pytest.raises(CampaignError, match="max-repeats"):
        CampaignSpec(repeats=5, adaptive=True, max_repeats=4)
    with pytest.raises(CampaignError, match="confidence"):
        CampaignSpec(adaptive=True, confidence=1.0)
    with pytest.raises(CampaignError, match="repeats >= 2"):
        CampaignSpec(repeats=1, adaptive=True)
    # the parameters are part of the campaign's identity: a journal of other settings is refused
    a, b = (CampaignSpec(adaptive=True, confidence=c).fingerprint_fields() for c in (0.9, 0.95))
    assert a != b and "adaptive" not in CampaignSpec().fingerprint_fields()


# Serial: it watches the journal every 50 ms to SIGKILL the campaign. It kills inside the first round, once
# half of it is journaled: a kill inside the second round (as before) depended on there being one, and on an
# idle machine the (then three) copies of ``near`` were sometimes ordered with confidence after three repeats (the
# campaign's fixed interleaved order makes one copy run after the floor runs, ...), every gate is decided and
# the campaign ends after 18 jobs (measured: 1 of 13 runs; it failed CI once). The resumed run must still
# finish that round from the journal and then plan the adaptive rounds from all of its rows.
@pytest.mark.serial
def test_adaptive_campaign_resumes_after_sigkill_with_one_row_per_execution(tmp_path, request):
    suite = two_problems(tmp_path)
    out = tmp_path / "crash.parquet"
    work = scratch_root("speedaudit-test-adaptive-")  # a SIGKILLed run cannot remove its own work dir
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    cmd = [sys.executable, "-m", "audits.cli", "collect", str(suite), "--out", str(out), "--adaptive",
           "--repeats", str(START), "--max-repeats", str(MAX), "--confidence", "0.95", "--tests", "optimization",
           "--n-largest", "1", "--timeout", "10", "--memory", "256M", "--no-progress", "--work-dir", str(work)]
    journal = journal_path_for(out)
    first_round = (2 + NEAR_COPIES) * START + START  # the units x START, and START Python floor runs
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # wait until half the first round is journaled, then kill
            if journal.exists() and len(journal.read_text().splitlines()) > 1 + first_round // 2:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert not out.exists()
    before = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    before = [r for r in before if r.get("type") == "row"]
    assert first_round // 2 < len(before) < first_round + 1  # killed inside the first round

    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert f"{len(before):,} from the journal" in done.stdout
    corpus = load_corpus(out)
    assert_one_row_per_execution(corpus)
    assert len(corpus) >= first_round  # the interrupted first round was finished, then the rounds planned
    kept = corpus.merge(pd.DataFrame(before)[["problem", "test", "solution", "repeat", "duration_s"]],
                        on=["problem", "test", "solution", "repeat"], suffixes=("", "_before"))
    assert len(kept) == len(before) and (kept["duration_s"] == kept["duration_s_before"]).all()
    n = runs_per_cell(corpus)
    assert (n.loc["clear"] == START).all() and (n <= MAX).all()
