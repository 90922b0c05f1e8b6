"""Contention evidence of a campaign: the load average per execution, CPU pinning seen from inside.

Real Kattis packages, real programs in the real default sandbox. A program reports the
cores it may run on through its exit status (``100 + 10 * len(cores) + min(cores)``), so
the test reads the pinning from inside the program, not from the runner's bookkeeping.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from audits.collect.background_load import LoadSpec
from audits.collect.campaign import CampaignError, CampaignSpec, manifest_path_for, plan_campaign, run_campaign
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite
from audits.corpus.io import load_corpus
from tests.collect.test_campaign import ADD, make_suite

# Run alone (`make test`'s serial pass): these tests read the machine's load average and the wall/CPU
# ratio of their own executions, and two of them start 2 spinners per core; a test running beside them
# would both change what they measure and be slowed by their load.
pytestmark = pytest.mark.serial

REPORT_CORES = ("import os, sys\ncores = os.sched_getaffinity(0)\n"
                "sys.exit(100 + 10 * len(cores) + min(cores))\n")
ALLOWED = sorted(os.sched_getaffinity(0))
# about 0.3 s of CPU before the answer: the wall/CPU ratio reads executions of >= 0.1 s CPU only
# (audits.checks.clocks.CONTENTION_MIN_CPU_S; shorter ones measure start-up cost)
SPIN = "s = sum(range(20_000_000))\n" + ADD
# Two spinners per core the tests may use: a program then gets about a third of a core whatever the
# machine's core count (wall/CPU ~3; warn at 1.3), where one spinner per core would leave it half.
BUSY = LoadSpec.parse(f"cpu={2 * len(ALLOWED)}")


def _campaign(tmp_path, **spec):
    suite_dir = make_suite(tmp_path / "suite", accepted={"add.py": ADD, "spin.py": SPIN},
                           run_time_error={"cores.py": REPORT_CORES}, n_secret=2)
    suite = load_suite(suite_dir, n_largest_optimization=2)
    plan = plan_campaign(suite, CampaignSpec(repeats=2, limits=Limits(wall_s=5.0, memory_bytes=256 << 20), **spec))
    out = tmp_path / "corpus.parquet"
    result = run_campaign(plan, out=out, progress=False)
    assert result.out == out and not result.errors
    return result, load_corpus(out)


def _reported(corpus):
    """(number of cores, lowest core) each cores.py execution saw, from its exit status."""
    rows = corpus[corpus["solution"].astype(str).str.endswith("cores.py")]
    codes = rows["exit_code"].astype(int).to_numpy() - 100
    return rows, codes // 10, codes % 10


def test_every_execution_records_the_load_average_and_its_cpu_time(tmp_path):
    before = os.getloadavg()[0]
    result, corpus = _campaign(tmp_path)
    after = os.getloadavg()[0]
    load = corpus["load_1m"].to_numpy(dtype=float)
    assert np.isfinite(load).all() and (load >= 0).all()
    # the 1-minute average moves slowly: every job's value lies near the ones read around the campaign
    assert load.min() >= min(before, after) - 3 and load.max() <= max(before, after) + 3
    ok = corpus[corpus["status"] == "ok"]
    ratio = ok["duration_s"] / ok["cpu_s"]
    assert (ok["cpu_s"] > 0).all() and np.isfinite(ratio).all()
    assert "cpu" not in corpus.columns and result.pinning == "unpinned"
    rows, n_cores, _ = _reported(corpus)
    assert len(rows) and (n_cores == len(ALLOWED)).all()  # unpinned: the program may run on every core
    manifest = json.loads(manifest_path_for(result.out).read_text())
    assert manifest["pin_cpus"] is None and manifest["load_1m"]["max"] == pytest.approx(load.max())


@pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning one worker away from the load needs two cores")
def test_pin_cpus_runs_every_program_on_its_workers_core_and_records_it(tmp_path):
    result, corpus = _campaign(tmp_path, pin_cpus="auto", workers=1, load=LoadSpec.parse("cpu=1"))
    core = ALLOWED[-1]
    rows, n_cores, lowest = _reported(corpus)
    assert len(rows) == 2 * 3  # 2 repeats x (1 sample + 2 secret)
    assert (n_cores == 1).all() and (lowest == core).all()  # seen from inside the program
    assert (corpus["cpu"] == core).all()
    assert f"worker 0 on core {core}" in result.pinning and "background load on cores" in result.pinning
    manifest = json.loads(manifest_path_for(result.out).read_text())
    assert manifest["pin_cpus"] == [core] and manifest["pinning"] == result.pinning


def test_pin_cpus_refuses_more_workers_than_cores_and_foreign_cores():
    with pytest.raises(CampaignError, match="need"):
        CampaignSpec(pin_cpus="auto", workers=len(ALLOWED) + 1)
    with pytest.raises(CampaignError, match="distinct cores"):
        CampaignSpec(pin_cpus=(max(ALLOWED) + 1,), workers=1)
    with pytest.raises(CampaignError, match="scheduler"):
        CampaignSpec(pin_cpus="auto", scheduler="tls://127.0.0.1:1", security=object())


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """The corpus of one campaign under :data:`BUSY` (2 spinners per core), read by the two tests below.

    Each ran the same campaign for itself: a second campaign under the same load, both cores spun for its
    whole length in ``make test``'s serial pass, for the same kind of corpus. Both tests only read it (what
    they change, they change in copies: ``assign``)."""
    return _campaign(tmp_path_factory.mktemp("busy"), load=BUSY)[1]


def test_a_campaign_under_real_background_load_is_flagged_contended_and_a_quiet_one_is_not(busy):
    from audits.checks.clocks import CONTENTION_WARN, contention

    found = contention(busy)
    assert found.level in ("warn", "fail") and found.median_wall_cpu >= CONTENTION_WARN
    assert "contended" in found.message and "--pin-cpus" in found.message and "--measure cpu_s" in found.message
    ok = busy[(busy["status"] == "ok") & (busy["role"] != "floor") & (busy["cpu_s"] >= 0.1)]
    assert len(ok) and found.n_single == len(ok)  # the spin.py executions
    assert found.median_wall_cpu == pytest.approx(float(np.median(ok["duration_s"] / ok["cpu_s"])))
    assert found.median_load_1m == pytest.approx(float(np.median(busy["load_1m"])))
    # The quiet case cannot be collected here: this machine is shared by other sessions (load average
    # several times its 2 cores), so a campaign without --load is contended too. It is constructed
    # from the recorded columns instead: CPU times 5 % below the wall times and a load average of
    # 0.1, as an idle machine records them.
    quiet = busy.assign(cpu_s=busy["duration_s"] / 1.05, load_1m=0.1)
    calm = contention(quiet)
    assert calm.level == "pass" and calm.median_wall_cpu == pytest.approx(1.05) and calm.median_load_1m == 0.1
    # without CPU times: not measurable, never a pass
    assert contention(busy.drop(columns="cpu_s")).level == "n/a"


def test_the_reliability_audit_flags_the_loaded_run_per_run_with_its_figures(busy):
    """The contention finding is part of the reliability audit: per run, with the ratio and the load."""
    import pandas as pd

    from audits.checks.reliability import run_reliability_audit

    busy = busy.assign(environment="busy")
    calm = busy.assign(environment="calm", cpu_s=busy["duration_s"] / 1.05, load_1m=0.1)  # as above
    audit = run_reliability_audit(pd.concat([busy, calm], ignore_index=True), n_boot=20)
    found = {f.environment: f for f in audit.findings if f.metric == "contention"}
    ok = busy[(busy["status"] == "ok") & (busy["role"] != "floor") & (busy["cpu_s"] >= 0.1)]
    assert found["busy"].level in ("warn", "fail")
    assert found["busy"].value == pytest.approx(float(np.median(ok["duration_s"] / ok["cpu_s"])))
    assert "contended" in found["busy"].message and "load average" in found["busy"].message
    assert found["calm"].level == "pass" and found["calm"].value == pytest.approx(1.05)
    runs = {d["environment"]: d for d in audit.to_dict()["runs"]}
    rows = busy[busy["role"] != "floor"]
    assert runs["busy"]["contention"]["median_load_1m"] == pytest.approx(float(np.median(rows["load_1m"])))
    # a stricter limit turns the calm run into a warning: the finding uses the audit's thresholds
    strict = run_reliability_audit(calm, n_boot=20, thresholds={"wall_cpu.warn": 1.01})
    assert [f.level for f in strict.findings if f.metric == "contention"] == ["warn"]
    # without CPU times: n/a with the reason, never a pass
    blind = run_reliability_audit(busy.drop(columns="cpu_s"), n_boot=20)
    (na,) = [f for f in blind.findings if f.metric == "contention"]
    assert na.level == "n/a" and "cpu_s" in na.message
