"""The same campaign on a real dask.distributed LocalCluster, over TLS on loopback.

The cluster's traffic uses Dask's TLS security with certificates made for this test
(``Security.temporary()``, which needs the ``cryptography`` package): a client without
them cannot connect, and a program under test that tries ``Client(...).run`` (root on
every worker, before issue 14) fails and reaches nothing.
"""

from __future__ import annotations

import os
import traceback

import pandas as pd
import pytest
from distributed import Client
from distributed.security import Security

from test_campaign import ADD, make_suite

from audits.collect.campaign import CampaignError, CampaignSpec, plan_campaign, run_campaign
from audits.corpus.io import KEY
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite


# `cluster` (a real LocalCluster over TLS on loopback, and its Security) is a fixture of tests/conftest.py.


def test_dask_campaign_gives_the_same_jobs_and_statuses_as_the_local_one(tmp_path, cluster):
    address, security = cluster
    suite = load_suite(make_suite(tmp_path / "suite", wrong_answer={"zero.py": "print(0)\n"},
                                  run_time_error={"crash.py": "raise SystemExit(2)\n"}), n_largest_optimization=2)
    limits = Limits(wall_s=5, memory_bytes=256 << 20)
    local = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits)), out=tmp_path / "local.parquet",
                         progress=False)
    remote = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits, scheduler=address,
                                                            security=security)),
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


def test_a_campaign_started_locally_is_finished_on_dask_with_one_row_per_job(tmp_path, cluster):
    address, security = cluster
    suite = load_suite(make_suite(tmp_path / "suite", accepted={"a.py": ADD, "b.py": ADD}), n_largest_optimization=2)
    limits = Limits(wall_s=5, memory_bytes=256 << 20)
    out = tmp_path / "c.parquet"
    plan = plan_campaign(suite, CampaignSpec(repeats=2, limits=limits))
    run_campaign(plan, out=out, progress=False, stop_after=7)
    # the scheduler is an execution detail, not part of the campaign's identity
    finished = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, limits=limits, scheduler=address,
                                                              security=security)), out=out, progress=False)
    assert finished.resumed == 7 and finished.ran == len(plan.jobs) - 7
    corpus = pd.read_parquet(out)
    assert len(corpus) == len(plan.jobs) and not corpus.duplicated(list(KEY)).any()


ROOT_VIA_DASK = '''
import glob, os, socket, sys
HOST, PORT, MARKER = {host!r}, {port}, {marker!r}
for site in glob.glob("/work/*/.venv/lib/python3*/site-packages") + glob.glob("/usr/lib/python3/dist-packages"):
    sys.path.insert(0, site)
try:
    s = socket.create_connection((HOST, PORT), timeout=2)
    print("connected")
except OSError as exc:
    print("no socket", exc.errno)
from distributed import Client          # the venv is not in the program's view: ModuleNotFoundError
def payload():
    open(MARKER, "w").write(open("/etc/shadow").read()[:20])
Client("tls://%s:%d" % (HOST, PORT), timeout=2).run(payload)
print("ran as root on the workers")
''' + ADD


def test_a_program_calling_client_run_fails_and_reaches_no_worker(tmp_path, cluster):
    address, security = cluster
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    marker = tmp_path / "rooted.txt"
    hostile = ROOT_VIA_DASK.format(host=host, port=int(port), marker=str(marker))
    suite = load_suite(make_suite(tmp_path / "suite", run_time_error={"rootkit.py": hostile}, n_secret=1),
                       n_largest_optimization=1)
    for sandbox in ("local", "bwrap"):
        out = tmp_path / f"{sandbox}.parquet"
        result = run_campaign(plan_campaign(suite, CampaignSpec(repeats=1, sandbox=sandbox, scheduler=address,
                                                                security=security,
                                                                limits=Limits(wall_s=5, memory_bytes=256 << 20))),
                              out=out, progress=False)
        assert result.out is not None and not result.errors
        corpus = pd.read_parquet(out)
        rootkit = corpus[corpus["solution"] == "run_time_error/rootkit.py"]
        assert len(rootkit) == 2 and set(rootkit["status"].astype(str)) == {"runtime_error"}
        assert not marker.exists()


def _connect_error(address: str, **kwargs) -> BaseException | None:
    """What ``Client(address, timeout=2, **kwargs)`` raised, or None when it connected.

    A Client first starts its IO-loop thread and waits at most 10 s for it (distributed.utils.LoopRunner), then
    connects. In the CI of 2026-12-07 (load 5-6 on 2 cores) that thread did not start in time once: distributed
    asserts ``loop is not None`` before any connection is tried, which says nothing about the certificates. That
    failure, and only that one (its last frame is in distributed/utils.py), is tried again, up to 3 times."""
    for _ in range(3):
        try:
            client = Client(address, timeout=2, **kwargs)
        except AssertionError as error:
            frame = traceback.extract_tb(error.__traceback__)[-1]
            if not frame.filename.endswith(os.path.join("distributed", "utils.py")):
                raise
            continue
        except Exception as error:  # noqa: BLE001 (the refusal the caller checks the type of)
            return error
        client.close()
        return None
    pytest.fail(f"Client({address!r}) could not start its IO loop in 3 tries (10 s each): the machine is too busy")


def test_nothing_without_the_certificates_can_submit_work(cluster):
    address, security = cluster
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    refused = _connect_error(address)  # TLS address, no certificates
    assert isinstance(refused, (OSError, TimeoutError, TypeError, ValueError)), refused
    refused = _connect_error(f"tcp://{host}:{port}")  # plain TCP to the TLS listener
    assert isinstance(refused, (OSError, TimeoutError)), refused
    other = Security.temporary()  # certificates of another CA
    refused = _connect_error(address, security=other)
    assert isinstance(refused, (OSError, TimeoutError)), refused
    with Client(address, timeout=10, security=security) as client:  # the campaign's certificates work
        assert client.submit(sum, [1, 2]).result() == 3


def test_unreachable_or_insecure_scheduler_is_a_clear_error(tmp_path):
    suite = load_suite(make_suite(tmp_path / "suite", n_secret=1), n_largest_optimization=1)
    spec = CampaignSpec(repeats=1, scheduler="tls://127.0.0.1:9", security=Security.temporary(),
                        limits=Limits(wall_s=2), connect_timeout_s=1)
    with pytest.raises(CampaignError, match="cannot connect within 1 s"):
        run_campaign(plan_campaign(suite, spec), out=tmp_path / "x.parquet", progress=False)
    with pytest.raises(CampaignError, match="plain TCP scheduler"):
        CampaignSpec(scheduler="tcp://127.0.0.1:8786")
