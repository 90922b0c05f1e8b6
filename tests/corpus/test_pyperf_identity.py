"""Machines, builds and campaigns from pyperf's metadata, not from file names (issue 24, item 6).

Every file here is written by pyperf itself (``pyperf.Benchmark`` / ``BenchmarkSuite.dump``) with the
metadata pyperf collects (hostname, platform, python_compiler, python_version, cpu_model_name,
python_config_args, commit_id, dates) and plain file names, as an archive whose files were renamed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from audits.corpus.importers.pyperf_json import import_pyperf
from audits.corpus.io import CorpusError, load_corpus

BENCHMARKS = {f"bm_{i}": 2e-3 * 1.6 ** i for i in range(6)}
BASE = "2e91dba437fe5c56c6f8a1b2c3d4e5f601234567"
OTHER = "77aa01c3d4e5f60123456789abcdef0123456789"
WINDOWS = {"hostname": "WIN-5FKPU9U7KDT", "platform": "Windows-10-10.0.22621-SP0",
           "cpu_model_name": "Intel(R) Xeon(R) W-2255 CPU @ 3.70GHz"}
LINUX = {"hostname": "bench-1", "platform": "Linux-6.1.0-18-amd64-x86_64-with-glibc2.36",
         "cpu_model_name": "AMD EPYC 7B13", "python_compiler": "GCC 12.2.0",
         "python_version": "3.14.0a1 (64-bit) revision 2e91dba"}


def _suite(rng, scale: float) -> dict:
    return {name: [list(t * scale * rng.lognormal(0.0, 0.01, 3)) for _ in range(4)] for name, t in BENCHMARKS.items()}


def test_renamed_64_and_32_bit_builds_stay_two_machines(tmp_path, write_pyperf):
    rng = np.random.default_rng(1)
    # one host, one commit, two interpreters; the files were renamed (no bench_runner layout to read)
    wide = write_pyperf(tmp_path / "results-1.json", _suite(rng, 1.0), start="2024-06-24 10:00:00", metadata={
        **WINDOWS, "commit_id": BASE, "python_compiler": "MSC v.1937 64 bit (AMD64)",
        "python_version": "3.13.0a3 (64-bit) revision 2e91dba"})
    narrow = write_pyperf(tmp_path / "results-2.json", _suite(rng, 1.5), start="2024-06-24 12:00:00", metadata={
        **WINDOWS, "commit_id": BASE, "python_compiler": "MSC v.1937 32 bit (Intel)"})  # no python_version
    result = import_pyperf([wide, narrow])
    corpus = result.corpus
    machine = "WIN-5FKPU9U7KDT / Windows / Intel(R) Xeon(R) W-2255 CPU @ 3.70GHz"
    assert set(corpus["environment"]) == {f"{machine} / 64-bit", f"{machine} / 32-bit"}
    # one build on two machines, one campaign each: nothing merged, nothing split by file
    assert set(corpus["solution"]) == {BASE} and set(corpus["campaign"]) == {"2024-06-24"}
    assert result.split_campaigns == ()
    per_env = corpus.groupby("environment", observed=True).size()
    assert per_env.tolist() == [6 * 4 * 3] * 2
    # the 32-bit machine is the 1.5x slower one: the values went where their metadata says
    med = corpus.groupby("environment", observed=True)["duration_s"].median()
    assert med[f"{machine} / 32-bit"] / med[f"{machine} / 64-bit"] == pytest.approx(1.5, rel=0.05)


@pytest.fixture
def variants(tmp_path, write_pyperf):
    """On one Linux machine: commit BASE's JIT and NOGIL builds on 2024-06-23, its base build on 06-24, and
    commit OTHER on 06-24 -- the layout of the issue's archive, under plain file names."""
    rng = np.random.default_rng(2)
    files = {
        "jit": write_pyperf(tmp_path / "jit.json", _suite(rng, 0.8), start="2024-06-23 21:00:00", metadata={
            **LINUX, "commit_id": BASE[:10], "python_config_args": "'--enable-experimental-jit' '--with-lto'"}),
        "nogil": write_pyperf(tmp_path / "nogil.json", _suite(rng, 1.1), start="2024-06-23 23:50:00", metadata={
            **LINUX, "commit_id": BASE, "python_config_args": "'--disable-gil'"}),
        "base": write_pyperf(tmp_path / "base.json", _suite(rng, 1.0), start="2024-06-24 09:00:00",
                             metadata={**LINUX, "commit_id": BASE}),
        "other": write_pyperf(tmp_path / "other.json", _suite(rng, 0.9), start="2024-06-24 15:00:00",
                              metadata={**LINUX, "commit_id": OTHER}),
    }
    return files


def test_dates_are_grouped_per_build(variants):
    corpus = import_pyperf(list(variants.values())).corpus
    campaign = corpus.groupby("solution", observed=True)["campaign"].unique().map(lambda c: sorted(map(str, c)))
    assert campaign.to_dict() == {BASE: ["2024-06-23"], f"{BASE} [JIT]": ["2024-06-23"],
                                  f"{BASE} [NOGIL]": ["2024-06-23"], OTHER: ["2024-06-24"]}
    assert set(corpus["environment"]) == {"bench-1 / Linux / x86_64 / AMD EPYC 7B13 / 64-bit"}


def test_campaign_from_file_and_build(variants):
    by_file = import_pyperf(list(variants.values()), campaign_from="file").corpus
    assert set(by_file["campaign"]) == {"jit", "nogil", "base", "other"}
    assert set(by_file["solution"]) == {BASE, f"{BASE} [JIT]", f"{BASE} [NOGIL]", OTHER}
    by_build = import_pyperf(list(variants.values()), campaign_from="build")
    corpus = by_build.corpus
    assert set(corpus["campaign"]) == {BASE, f"{BASE} [JIT]", f"{BASE} [NOGIL]", OTHER}
    assert set(corpus["solution"]) == {"benchmark-suite"}  # the default with --campaign-from build
    assert "4 build(s)" not in by_build.summary() and "(4 with their variants)" in by_build.summary()
    assert "campaigns from the build, solutions from the benchmark-suite" in by_build.summary()
    kept = import_pyperf(list(variants.values()), campaign_from="build", solution_from="build").corpus
    assert (kept["campaign"].astype(str) == kept["solution"].astype(str)).all()
    with pytest.raises(CorpusError, match="--campaign 'x' and --campaign-from file both name the campaigns"):
        import_pyperf(list(variants.values()), campaign="x", campaign_from="file")


def test_two_builds_compare_as_campaigns(variants, tmp_path):
    """`import pyperf --campaign-from build`, then the calibration audit pairs every benchmark of the base
    build with the same benchmark of the other commit (the issue: builds as solutions never paired)."""
    out = tmp_path / "builds.parquet"
    files = [str(variants["base"]), str(variants["other"])]
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", *files, "--campaign-from", "build",
                           "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "campaigns from the build, solutions from the benchmark-suite" in proc.stdout
    corpus = load_corpus(out)
    (environment,) = set(corpus["environment"])
    report = tmp_path / "calibration.json"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "calibration", str(out), "--environment",
                           environment, "--source-campaign", BASE, "--target-campaign", OTHER, "--n-boot", "20",
                           "--json", str(report)], capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    result = json.loads(report.read_text())
    assert result["pairing"]["n_pairs"] == len(BENCHMARKS) and result["pairing"]["n_lost"] == 0
    # the planted map: the other commit is 0.9x the base build
    medians = corpus.groupby(["campaign", "problem"], observed=True)["duration_s"].median()
    assert float(np.median(medians.xs(OTHER) / medians.xs(BASE))) == pytest.approx(0.9, rel=0.03)


def test_bad_choice_is_a_message(variants):
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", str(variants["base"]),
                           "--campaign", "x", "--campaign-from", "file", "--out", "x.parquet"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "both name the campaigns" in proc.stderr + proc.stdout
