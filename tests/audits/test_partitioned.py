"""The Dask path on a real LocalCluster (loopback) equals the in-memory audit of the same dataset."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from audits.protocol import registry

from audits.corpus.dataset import open_dataset, save_dataset
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import run_discriminability_audit
from audits.engine.partitioned import partition_runs, run_partitioned_discriminability
from tests.audits.conftest import audit_all_dask

# A real LocalCluster and the whole audit on Dask: 79-152 s a file under make test (2026-12-06, -n 2 at load
# 6-15), so handed out first (tests/conftest.py: a file of a minute or more is marked slow).
pytestmark = pytest.mark.slow

N_BOOT = 60


def _close(a, b, path="") -> list[str]:
    """Paths where two JSON trees differ by more than 1e-12 (relative) or in structure."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in _close(a[k], b[k], f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _close(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return []
        return [] if abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b)) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    corpus = synthesize(n_problems=9, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1,
                        n_candidates=2, n_repeats=3, busy=True, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                        seed=21).corpus
    # names are data: a problem name with a slash and an '=' is never put in a path
    corpus["problem"] = corpus["problem"].cat.rename_categories(lambda n: "a/b=1" if n == "p0003" else n)
    return save_dataset(corpus, tmp_path_factory.mktemp("ds") / "d", problems_per_partition=2)


# Each audit below is computed once for the tests that compare with it (they only read the JSON).
@pytest.fixture(scope="module")
def memory(dataset):
    """The in-memory discriminability audit of ``dataset`` (n_boot N_BOOT, every run)."""
    return run_discriminability_audit(dataset.load(), n_boot=N_BOOT).to_dict()


@pytest.fixture(scope="module")
def on_dask(dataset, client):
    """The Dask discriminability audit of ``dataset`` with the same options."""
    return run_partitioned_discriminability(dataset, client=client, n_boot=N_BOOT).to_dict()


def test_every_worker_is_on_loopback(client):
    addresses = list(client.scheduler_info()["workers"])
    assert len(addresses) == 2 and all(a.startswith("tcp://127.0.0.1:") for a in addresses)


def test_run_table_from_partials_equals_runs_of(dataset, client):
    from audits.corpus.runs import runs_of
    from audits.engine.partitioned import summary_partial

    partials = client.gather([client.submit(summary_partial, str(dataset.path), i)
                              for i in range(dataset.n_partitions)])
    assert partition_runs(partials) == runs_of(dataset.load())


def test_discriminability_on_dask_equals_in_memory(memory, on_dask):
    assert _close(on_dask, memory) == []
    assert len(memory["runs"]) == 4  # two environments x two campaigns, each on its own


def test_shuffled_partitions_give_the_same_audit(dataset, client, on_dask, tmp_path):
    """The same rows written in another row order and another grouping of problems: same JSON."""
    corpus = dataset.load()
    shuffled = corpus.iloc[np.random.default_rng(3).permutation(len(corpus))].reset_index(drop=True)
    other = save_dataset(shuffled, tmp_path / "other", problems_per_partition=4)
    a = run_partitioned_discriminability(other, client=client, n_boot=N_BOOT).to_dict()
    assert _close(a, on_dask) == []


def test_selection_and_given_floor(dataset, client):
    memory = run_discriminability_audit(dataset.load(), environment="quiet", floor_s=0.03, n_boot=N_BOOT).to_dict()
    dask = run_partitioned_discriminability(open_dataset(dataset.path), client=client, environment="quiet",
                                            floor_s=0.03, n_boot=N_BOOT).to_dict()
    assert _close(dask, memory) == []
    assert {r["environment"] for r in memory["runs"]} == {"quiet"}


def test_audit_all_on_a_dataset_with_dask_cli(dataset, memory, tmp_path):
    """`speedaudit audit all DATASET --dask`: a real LocalCluster in a subprocess; the audits not yet on the
    Dask path are listed as skipped with the reason, never as passing."""
    proc, whole = audit_all_dask(dataset.path, tmp_path, "--n-boot", str(N_BOOT))
    assert _close(whole["discriminability"], json.loads(json.dumps(memory))) == []
    from audits.protocol.saved import read_results

    saved = read_results(tmp_path / "all.json")  # the saved results a report renders from, as in memory
    assert {"reliability", "discriminability", "corpus_summary"} <= set(saved.names())
    assert f"{len(dataset.load()):,} executions" in saved.value("corpus_summary").description
    audited = set(whole) - {"audit", "skipped", "engine", "worst", "format", "format_version", "speedaudit",
                            "results", "meta"}
    assert "discriminability" in audited and audited.isdisjoint(whole["skipped"])
    assert audited | set(whole["skipped"]) == set(registry.names())
    # two environments: the simulated run is not named; the audits the Dask engine does not run, with the reason
    assert set(whole["skipped"]) == {"simulation"} | {n for n in registry.names() if registry.get(n).dask is not None}
    # no pair named: each environment against the quietest of its campaign (the campaigns are not ordered)
    assert {c["pair_rule"] for c in whole["calibration"]} == {"vs-quietest"} and len(whole["calibration"]) == 2
    assert "Traceback" not in proc.stderr


def test_run_all_takes_a_dataset_to_dask_by_the_command_lines_rule(dataset, memory, client, tmp_path):
    """`speedaudit.run_all` of a dataset folder with a scheduler runs the Dask engine (clocks and compare, which
    do not run there, are absent) and saves what `audit all DATASET --json` saves; without one, this small
    dataset is loaded whole (audits.engine.routing.on_dask, the rule the command line uses)."""
    import speedaudit
    from audits.errors import UserError

    whole = speedaudit.run_all(dataset.path, scheduler=client.scheduler.address, n_boot=N_BOOT,
                               save=tmp_path / "all.json")
    assert _close(json.loads(json.dumps(whole.discriminability.to_dict())), json.loads(json.dumps(memory))) == []
    assert "clocks" not in whole.results and "reliability" in whole.results
    saved = json.loads((tmp_path / "all.json").read_text())
    assert saved["engine"] == "dask" and _close(saved["discriminability"], json.loads(json.dumps(memory))) == []
    loaded = speedaudit.run_all(dataset.path, n_boot=N_BOOT)  # 1 partition file of rows << MEMORY_ROWS
    assert "clocks" in loaded.results
    with pytest.raises(UserError, match="reads a partitioned dataset folder"):
        speedaudit.run_all(dataset.load(), dask=True)
    with pytest.raises(UserError, match="audits not taken on Dask"):
        speedaudit.run_all(dataset.path, scheduler=client.scheduler.address, audits=["reliability"])


def _audit_all(*args: str):
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    return subprocess.run([sys.executable, "-m", "audits.cli", "audit", "all", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300)


def test_scheduler_that_does_not_answer_is_a_message(dataset):
    # --connect-timeout (audits.dask_connection, shared with collect): a wrong address is reported after 1 s
    proc = _audit_all(str(dataset.path), "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1")
    assert proc.returncode == 1
    assert "cannot connect within 1 s" in proc.stderr and "--connect-timeout" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("given", ["0", "-3", "nan", "soon"])
def test_connect_timeout_must_be_positive_seconds(dataset, given):
    proc = _audit_all(str(dataset.path), "--scheduler", "tcp://127.0.0.1:9", f"--connect-timeout={given}")
    assert proc.returncode == 2 and "--connect-timeout" in proc.stderr and "seconds" in proc.stderr
    assert "Traceback" not in proc.stderr


def _pem_files(folder, security) -> list[str]:
    """The TLS options of ``security`` (``Security.temporary()``: the PEM texts) as written files."""
    options = []
    for flag, pem in (("--tls-ca-file", security.tls_ca_file), ("--tls-cert", security.tls_client_cert),
                      ("--tls-key", security.tls_client_key)):
        path = folder / f"{flag.removeprefix('--tls-')}.pem"
        path.write_text(pem)
        options += [flag, str(path)]
    return options


def test_audit_all_on_a_tls_scheduler_with_its_certificates(dataset, memory, cluster, tmp_path):
    """`audit all --scheduler tls://...` with the cluster's certificates, the same options as `collect`'s: the
    same audit as in memory; without them, or with only some, a message before any connection is tried."""
    address, security = cluster
    tls = _pem_files(tmp_path, security)
    _, whole = audit_all_dask(dataset.path, tmp_path, "--n-boot", str(N_BOOT), *tls, scheduler=address)
    assert _close(whole["discriminability"], json.loads(json.dumps(memory))) == []
    none = _audit_all(str(dataset.path), "--scheduler", address)
    assert none.returncode == 1 and "needs the cluster's certificates" in none.stderr, none.stderr
    some = _audit_all(str(dataset.path), "--scheduler", address, *tls[:2])
    assert some.returncode == 1 and "add --tls-cert and --tls-key" in some.stderr, some.stderr
    (tmp_path / "bad.pem").write_text("not a certificate\n")
    bad = _audit_all(str(dataset.path), "--scheduler", address, "--tls-ca-file", str(tmp_path / "bad.pem"),
                     "--tls-cert", str(tmp_path / "bad.pem"), "--tls-key", str(tmp_path / "bad.pem"))
    assert bad.returncode == 1 and "the TLS files cannot be used" in bad.stderr, bad.stderr
    assert "Traceback" not in none.stderr + some.stderr + bad.stderr


def test_per_language_floors_on_dask_equal_in_memory(client, tmp_path):
    """Two languages, each with its own empty program: the Dask path reports every language's floor and the
    main language's floor as the in-memory audit does (issue 24: it reported the first language's)."""
    import pandas as pd

    corpus = synthesize(n_problems=6, n_tests=3, n_solutions=6, n_repeats=3, seed=5).corpus
    solutions = corpus["solution"].astype(str)
    # cpp first in name order but a minority of the references; python the main language
    cpp = solutions.isin(["s000", "s001"]).to_numpy()
    corpus["language"] = pd.Categorical(np.where(cpp, "cpp", "python"))
    floor = corpus.loc[corpus["role"] == "floor"]
    cpp_floor = floor.assign(solution="cpp", language=pd.Categorical(["cpp"] * len(floor)),
                             duration_s=floor["duration_s"].to_numpy() / 4)
    corpus = pd.concat([corpus, cpp_floor], ignore_index=True)
    corpus["language"] = corpus["language"].astype("category")
    corpus["solution"] = corpus["solution"].astype("category")
    ds = save_dataset(corpus, tmp_path / "langs", problems_per_partition=2)
    memory = json.loads(json.dumps(run_discriminability_audit(ds.load(), n_boot=N_BOOT).to_dict()))
    dask = json.loads(json.dumps(run_partitioned_discriminability(ds, client=client, n_boot=N_BOOT).to_dict()))
    assert _close(dask, memory) == []
    (run,) = memory["runs"]
    by_hand = corpus.loc[corpus["role"] == "floor"].groupby("language", observed=True)["duration_s"].median()
    assert run["floors_s"] == pytest.approx(by_hand.to_dict())
    assert run["floor_s"] == pytest.approx(by_hand["python"])  # the main language's, not the first one's
    assert dask["runs"][0]["floors_s"] == pytest.approx(by_hand.to_dict())
