"""One vocabulary of repeats, and clean output (issue 24, item 7).

Processes x values per process stated the same way in the header, the JSON, the findings and the footers;
no ``inf`` beside an ``n/a``; no numpy RuntimeWarning on the terminal (the CLI run with -W error); ``import
--out`` writes the format its extension names or refuses it; the simulation table states its group size.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.reliability import run_reliability_audit
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.runs import runs_of
from audits.corpus.synthetic import synthesize


def _cli(*args, warnings_as_errors=False):
    flags = ["-W", "error::RuntimeWarning"] if warnings_as_errors else []
    return subprocess.run([sys.executable, *flags, "-m", "audits.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=900)


@pytest.fixture(scope="module")
def nested(pyperf_machines, tmp_path_factory):
    """One machine's pyperf benchmarks (4 processes x 3 values, written by pyperf) and a second build 10 % slower,
    so that every benchmark has two solutions to rank."""
    corpus = load_corpus(pyperf_machines[1])
    one = corpus.loc[corpus["environment"].astype(str).str.startswith("bench-a")].copy()
    other = one.copy()
    other["solution"] = "slower build"
    other["duration_s"] = other["duration_s"] * 1.1
    frame = pd.concat([one.astype({"solution": str}), other.astype({"solution": str})], ignore_index=True)
    path = tmp_path_factory.mktemp("nested") / "nested.parquet"
    save_corpus(frame, path)
    return load_corpus(path), path


def test_processes_x_values_in_header_json_findings_and_footers(nested):
    corpus, path = nested
    (summary,) = list(runs_of(corpus))
    assert (summary.processes, summary.values_per_process, summary.repeats) == (4, 3, 12)
    assert summary.repeats_text == "4 processes x 3 values" and str(summary).endswith("(4 processes x 3 values)")
    rel = run_reliability_audit(corpus, n_boot=0)
    text = rel.summary()
    assert "(4 processes x 3 values)" in text
    run = json.loads(json.dumps(rel.to_dict()))["runs"][0]
    by = {f.metric: f for f in rel.findings}
    assert "corrected for 12 values per cell (4 processes x 3 values)" in by["median_repeat_cv"].message
    assert "across 4 processes" in by["mean_rank_range"].message and run["n_repeats"] == 4
    agg = run_aggregation_audit(corpus, n_boot=0)
    assert "(4 processes x 3 values) ==" in agg.summary()
    data = json.loads(json.dumps(agg.to_dict()))
    assert data["runs"][0]["repeats_text"] == "4 processes x 3 values"
    assert data["runs"][0]["processes"] == 4 and data["runs"][0]["values_per_process"] == 3


def test_a_corpus_without_processes_keeps_repeats():
    (summary,) = list(runs_of(synthesize(n_problems=3, n_repeats=4).corpus))
    assert summary.processes is None and summary.repeats_text == "4 repeats"


@pytest.mark.parametrize("which", ["pyperf", "one_reference"])
def test_cli_is_clean_under_warnings_as_errors_and_never_prints_inf(pyperf_machines, tmp_path, which):
    if which == "pyperf":
        path = pyperf_machines[1]
    else:
        path = tmp_path / "one.parquet"
        save_corpus(synthesize(n_problems=5, n_solutions=1, n_repeats=3, seed=1).corpus, path)
    out = tmp_path / "all.json"
    proc = _cli("audit", "all", path, "--n-boot", "20", "--json", out, warnings_as_errors=True)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr and "Warning" not in proc.stderr, proc.stderr
    assert " inf" not in proc.stdout and "inf\n" not in proc.stdout
    text = out.read_text()
    assert "Infinity" not in text and "NaN" not in text
    rel = json.loads(text)["reliability"]
    for run in rel["runs"]:
        finding = [f for f in rel["findings"] if f["metric"] == "repeats_needed"
                   and f["environment"] == run["environment"] and f["campaign"] == run["campaign"]]
        if finding and finding[0]["level"] == "n/a":
            assert run["repeats_needed"] is None


def test_import_out_honours_its_extension_or_refuses_it(pyperf_machines, tmp_path):
    files = pyperf_machines[2][:2]
    parquet, csv, bad = tmp_path / "x.parquet", tmp_path / "x.csv", tmp_path / "x.txt"
    for out in (parquet, csv):
        proc = _cli("import", "pyperf", *files, "--out", out)
        assert proc.returncode == 0, proc.stderr
    assert parquet.read_bytes()[:4] == b"PAR1" and csv.read_bytes()[:4] != b"PAR1"
    proc = _cli("validate", csv)
    assert proc.returncode == 0, proc.stderr
    a, b = load_corpus(parquet), load_corpus(csv)
    assert len(a) == len(b) and sorted(a["duration_s"]) == pytest.approx(sorted(b["duration_s"]), rel=1e-12)
    proc = _cli("import", "pyperf", *files, "--out", bad)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and ".parquet" in proc.stderr
    assert not bad.exists()


def test_simulation_table_states_its_group_size():
    from audits.checks.reward_environments import load_reward_environments
    from audits.checks.simulation import run_simulation_audit
    from audits.report.narrative import simulation_table

    corpus = synthesize(n_problems=6, n_repeats=3, seed=1).corpus
    envs = load_reward_environments(["fixtures/environments/top30.yaml"])
    for sizes, g in (((2, 4, 8, 16), 16), ((2, 4, 8, 16, 32), 32)):
        audit = run_simulation_audit(corpus, reward_environments=envs, group_sizes=sizes, n_boot=0)
        assert f"zero-advantage rate (G = {g})" in simulation_table(audit).columns
        assert f"at G = {g}" in audit.summary()
