"""The same campaign on a real dask.distributed LocalCluster over TCP on loopback."""

from __future__ import annotations

import pandas as pd
import pytest
from distributed import LocalCluster

from test_campaign import ADD, make_suite

from audits.collect.campaign import CampaignError, CampaignSpec, plan_campaign, run_campaign
from audits.corpus.io import KEY
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite


@pytest.fixture(scope="module")
def scheduler():
    # processes=False keeps it quick (workers are threads of this process) while the
    # client still talks to the scheduler over a real TCP socket.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        yield cluster.scheduler_address


def test_dask_campaign_gives_the_same_jobs_and_statuses_as_the_local_one(tmp_path, scheduler):
    suite = load_suite(make_suite(tmp_path / "suite", wrong_answer={"zero.py": "print(0)\n"},
                                  run_time_error={"crash.py": "raise SystemExit(2)\n"}), n_largest_optimization=2)
    limits = Limits(wall_s=5, memory_bytes=256 << 20)
    local = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits)), out=tmp_path / "local.parquet",
                         progress=False)
    remote = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits, scheduler=scheduler)),
                          out=tmp_path / "dask.parquet", progress=False)
    assert remote.out is not None and not remote.errors
    a, b = pd.read_parquet(local.out), pd.read_parquet(remote.out)
    key = ["problem", "test", "solution", "repeat"]
    assert len(b) == len(a) and not b.duplicated(list(KEY)).any()
    merged = a[key + ["status", "order"]].astype(str).merge(b[key + ["status", "order"]].astype(str), on=key,
                                                             suffixes=("_local", "_dask"))
    assert len(merged) == len(a)
    assert (merged["status_local"] == merged["status_dask"]).all()
    assert (merged["order_local"] == merged["order_dask"]).all()  # same seeded plan
    assert set(b["status"].astype(str)) == {"ok", "wrong_answer", "runtime_error"}
    assert (b.loc[b["status"] == "ok", "cpu_s"] > 0).all()


def test_a_campaign_started_locally_is_finished_on_dask_with_one_row_per_job(tmp_path, scheduler):
    suite = load_suite(make_suite(tmp_path / "suite", accepted={"a.py": ADD, "b.py": ADD}), n_largest_optimization=2)
    limits = Limits(wall_s=5, memory_bytes=256 << 20)
    out = tmp_path / "c.parquet"
    plan = plan_campaign(suite, CampaignSpec(repeats=2, limits=limits))
    run_campaign(plan, out=out, progress=False, stop_after=7)
    # the scheduler is an execution detail, not part of the campaign's identity
    finished = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits, scheduler=scheduler)),
                            out=out, progress=False)
    assert finished.resumed == 7 and finished.ran == len(plan.jobs) - 7
    corpus = pd.read_parquet(out)
    assert len(corpus) == len(plan.jobs) and not corpus.duplicated(list(KEY)).any()


def test_unreachable_scheduler_is_a_clear_error(tmp_path, monkeypatch):
    import audits.collect.campaign

    monkeypatch.setattr(audits.collect.campaign, "DASK_CONNECT_TIMEOUT", "1s")
    suite = load_suite(make_suite(tmp_path / "suite", n_secret=1), n_largest_optimization=1)
    spec = CampaignSpec(repeats=1, scheduler="tcp://127.0.0.1:9", limits=Limits(wall_s=2))
    with pytest.raises(CampaignError, match="cannot connect"):
        run_campaign(plan_campaign(suite, spec), out=tmp_path / "x.parquet", progress=False)
