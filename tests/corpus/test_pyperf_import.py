"""pyperf import on files that the real pyperf writes (timeit runs and the Runner API)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from audits.corpus.io import CorpusError, load_corpus
from audits.corpus.importers.pyperf_json import import_pyperf


# `pyperf_files` (files the real pyperf writes) is a fixture of tests/conftest.py, shared with
# tests/cli/test_examples.py.


def test_values_warmups_and_calibration_runs(pyperf_files):
    _, fixed, calibrated, _ = pyperf_files
    result = import_pyperf([fixed, calibrated])
    corpus = result.corpus
    for path, stem in ((fixed, "main"), (calibrated, "patched")):
        data = json.loads(path.read_text())
        runs = data["benchmarks"][0]["runs"]
        measured = [v for r in runs if r.get("values") for v in r["values"]]
        got = corpus.loc[corpus.solution == stem].sort_values("repeat")["duration_s"].to_numpy()
        np.testing.assert_allclose(got, measured)  # every value, in order, warmups excluded
        assert list(corpus.loc[corpus.solution == stem, "repeat"].sort_values()) == list(range(len(measured)))
    raw_calibrated = json.loads(calibrated.read_text())["benchmarks"][0]["runs"]
    n_calibration = sum(1 for r in raw_calibrated if not r.get("values"))
    assert n_calibration >= 1  # pyperf really wrote a calibration run, and it was skipped
    assert result.calibration_runs_skipped == n_calibration
    meta = json.loads(fixed.read_text())["metadata"]
    (environment,) = set(corpus["environment"])  # one machine: hostname, OS, architecture and CPU
    import platform as platform_module
    assert environment.startswith(f"{meta['hostname']} / {platform_module.system()} / {platform_module.machine()}")
    if "cpu_model_name" in meta:
        assert f" / {meta['cpu_model_name']}" in environment
    bits = platform_module.architecture()[0].replace("bit", "-bit")  # what pyperf writes into python_version
    assert environment.endswith(f" / {bits}")
    assert set(corpus["platform"]) == {meta["platform"]}  # the whole string is kept
    # one campaign per file: the day of its earliest run
    for path, stem in ((fixed, "main"), (calibrated, "patched")):
        runs = json.loads(path.read_text())["benchmarks"][0]["runs"]
        first = min(r["metadata"]["date"] for r in runs if "date" in r.get("metadata", {}))
        assert set(corpus.loc[corpus.solution == stem, "campaign"]) == {first[:10]}
    # the process-run level: values of one pyperf run share 'run', runs are numbered in file order
    runs = json.loads(fixed.read_text())["benchmarks"][0]["runs"]
    per_run = [len(r["values"]) for r in runs if r.get("values")]
    got = corpus.loc[corpus.solution == "main"].groupby("run", observed=True).size()
    assert got.tolist() == per_run
    assert set(corpus["problem"]) == {"timeit"} and set(corpus["test"]) == {"benchmark"}


def test_suite_file_with_two_benchmarks_and_gzip(pyperf_files, tmp_path):
    _, _, _, suite = pyperf_files
    gz = tmp_path / "suite.json.gz"
    with open(suite, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    corpus = import_pyperf([gz], environment="laptop", campaign="monday").corpus
    assert set(corpus["problem"]) == {"sort", "join"}
    assert set(corpus["solution"]) == {"suite"}
    assert set(corpus["environment"]) == {"laptop"} and set(corpus["campaign"]) == {"monday"}
    assert corpus.groupby("problem", observed=True).size().to_dict() == {"join": 4, "sort": 4}  # 2 runs x 2 values


def test_cli_import_then_validate(pyperf_files, tmp_path):
    _, fixed, calibrated, _ = pyperf_files
    out = tmp_path / "corpus.parquet"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", str(fixed), str(calibrated),
                           "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert len(load_corpus(out)) == len(import_pyperf([fixed, calibrated]).corpus)


def test_bad_pyperf_files(tmp_path):
    not_json = tmp_path / "x.json"
    not_json.write_text("{oops")
    with pytest.raises(CorpusError, match=r"x.json: not a pyperf result file \(not readable JSON"):
        import_pyperf([not_json])
    other = tmp_path / "y.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(CorpusError, match="y.json: no 'benchmarks' list"):
        import_pyperf([other])
    with pytest.raises(CorpusError, match="no such file"):
        import_pyperf([tmp_path / "missing.json"])


# --- a multi-machine, multi-variant archive written with pyperf's own API ---------------------------------
#
# The layout is faster-cpython's bench_runner archive (results/bm-DATE-VERSION-HASH[-FLAGS]/bm-DATE-NICK-ARCH-
# FORK-REF-VERSION-HASH.json): two Windows machines that share a hostname and have no CPU name (a 64-bit and a
# 32-bit runner), the base and the JIT build of one commit with the same file name in two folders, one machine
# recording the commit's full hash and the other its short hash, and files that run past midnight.

import pyperf  # noqa: E402

import pandas as pd  # noqa: E402

FULL = "2e91dba437fe5c56c6f8a1b2c3d4e5f601234567"
SHORT = FULL[:7]
BENCHMARKS = {f"bench_{i}": 0.004 * 1.7 ** i for i in range(6)}  # planted true time per benchmark (s)
MACHINE_SCALE = {"pythonperf1-amd64": 1.0, "pythonperf1_win32-x86": 1.5}  # the 32-bit runner is 1.5x slower
JIT_SCALE = 0.8


def _write_suite(path, *, metadata, scale, start, seed, n_runs=4, n_values=3):
    """One pyperf file: per benchmark a calibration run, then n_runs process runs of n_values values."""
    rng = np.random.default_rng(seed)
    clock = pd.Timestamp(start)
    benchmarks = []
    for name, truth in BENCHMARKS.items():
        runs = [pyperf.Run([], warmups=[(1, truth * scale * 1.3)], collect_metadata=False,
                           metadata={"name": name, "date": clock.isoformat(sep=" "), "calibrate_loops": 1,
                                     "loops": 1, **metadata})]
        for _ in range(n_runs):
            clock += pd.Timedelta(seconds=30)
            values = list(truth * scale * rng.lognormal(0.0, 0.01, n_values))
            runs.append(pyperf.Run(values, warmups=[(1, values[0] * 1.2)], collect_metadata=False,
                                   metadata={"name": name, "date": clock.isoformat(sep=" "), "loops": 1,
                                             **metadata}))
        benchmarks.append(pyperf.Benchmark(runs))
    path.parent.mkdir(parents=True, exist_ok=True)
    pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)
    return path


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    root = tmp_path_factory.mktemp("archive") / "results"
    windows = {"hostname": "WIN-5FKPU9U7KDT", "platform": "Windows-10-10.0.22621-SP0"}
    files = {}
    for flags, variant in (("", 1.0), ("-JIT", JIT_SCALE)):
        folder = root / f"bm-20240124-3.13.0a3-{SHORT}{flags}"
        for seed, (machine, commit) in enumerate((("pythonperf1-amd64", FULL), ("pythonperf1_win32-x86", SHORT))):
            name = f"bm-20240124-{machine}-python-{FULL[:20]}-3.13.0a3-{SHORT}.json"
            # every file starts at 23:50 on the 24th and ends after midnight (6 benchmarks x 4 runs x 30 s)
            files[(machine, flags)] = _write_suite(
                folder / name, metadata={**windows, "commit_id": commit}, scale=MACHINE_SCALE[machine] * variant,
                start="2024-01-24 23:50:00", seed=seed + (10 if flags else 0))
    (root / f"bm-20240124-3.13.0a3-{SHORT}" / "bm-20240124-pystats.json").write_text(json.dumps({"counts": {}}))
    return root, files


def test_archive_machines_variants_builds_and_campaigns(archive):
    root, files = archive
    result = import_pyperf([root])
    corpus = result.corpus
    environments = set(corpus["environment"])
    assert environments == {f"WIN-5FKPU9U7KDT / Windows / {m}" for m in MACHINE_SCALE}
    # the short and the full hash are one build; the JIT folder is a variant of it
    assert set(corpus["solution"]) == {FULL, f"{FULL} [JIT]"}
    assert result.merged_build_ids == {SHORT: FULL}
    for machine in MACHINE_SCALE:
        env = f"WIN-5FKPU9U7KDT / Windows / {machine}"
        assert set(corpus.loc[corpus.environment == env, "solution"]) == {FULL, f"{FULL} [JIT]"}
    # one campaign per file although its runs cross midnight
    dates = pd.to_datetime(corpus["timestamp"])
    assert dates.dt.date.nunique() == 2
    assert set(corpus["campaign"]) == {"2024-01-24"}
    # every value pyperf itself reads from each file is there, in order, with its process run
    for (machine, flags), path in files.items():
        env = f"WIN-5FKPU9U7KDT / Windows / {machine}"
        solution = f"{FULL} [JIT]" if flags else FULL
        for bench in pyperf.BenchmarkSuite.load(str(path)).get_benchmarks():
            rows = corpus.loc[(corpus.environment == env) & (corpus.solution == solution)
                              & (corpus.problem == bench.get_name())].sort_values("repeat")
            np.testing.assert_array_equal(rows["duration_s"].to_numpy(), np.array(bench.get_values()))
            runs = [r for r in bench.get_runs() if r.values]
            assert rows["run"].tolist() == [i for i, r in enumerate(runs) for _ in r.values]
    # the summary counts files, builds, machines and benchmarks; the pystats file is skipped with a reason
    text = result.summary()
    assert "from 4 file(s): 1 build(s) (2 with their variants), 2 machine(s), 6 benchmark(s)" in text
    assert f"{SHORT} -> {FULL}" in text
    assert any(what.endswith("bm-20240124-pystats.json") and "not a pyperf result" in why
               for what, why in result.skipped)
    assert "skipped 1 (no 'benchmarks' list: this is not a pyperf result file): " in text


def test_archive_calibrates_across_machines(archive, tmp_path):
    root, _ = archive
    out = tmp_path / "archive.parquet"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", str(root), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "2 machine(s), 6 benchmark(s)" in proc.stdout
    source, target = (f"WIN-5FKPU9U7KDT / Windows / {m}" for m in MACHINE_SCALE)
    report = tmp_path / "calibration.json"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "calibration", str(out), "--source", source,
                           "--target", target, "--n-boot", "50", "--json", str(report)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(report.read_text())
    # every (benchmark, build variant) pairs: 6 benchmarks x 2 variants, none lost
    assert result["pairing"]["n_pairs"] == 12 and result["pairing"]["n_lost"] == 0
    # the planted map: the 32-bit runner is 1.5x slower; the independent check is the median of the ratios
    pairs = load_corpus(out).groupby(["environment", "problem", "solution"], observed=True)["duration_s"].median()
    ratio = (pairs.xs(target) / pairs.xs(source)).to_numpy()
    assert abs(np.median(ratio) - 1.5) < 0.03
    assert result["fits"]["affine"]["lopo_r2"] > 0.99


def test_short_and_full_hash_and_jit_config_outside_bench_runner_layout(tmp_path):
    """Generic file names: the build comes from commit_id, the JIT variant from python_config_args."""
    base = _write_suite(tmp_path / "main.json", metadata={"hostname": "box", "commit_id": FULL.upper()},
                        scale=1.0, start="2024-03-01 10:00:00", seed=1)
    jit = _write_suite(tmp_path / "jit.json", metadata={"hostname": "box", "commit_id": SHORT,
                                                        "python_config_args": "'--enable-experimental-jit=yes'"},
                       scale=0.8, start="2024-03-01 12:00:00", seed=2)
    other = _write_suite(tmp_path / "other.json", metadata={"hostname": "box", "commit_id": "abc1234",
                                                            "platform": "Linux-6.1.0-x86_64-with-glibc2.36"},
                         scale=1.0, start="2024-03-01 14:00:00", seed=3)
    interpreter = _write_suite(tmp_path / "tier2.json", scale=0.9, start="2024-03-01 16:00:00", seed=4, metadata={
        "hostname": "box", "commit_id": SHORT, "python_config_args": "'--enable-experimental-jit=interpreter'"})
    off = _write_suite(tmp_path / "off.json", scale=1.0, start="2024-03-01 18:00:00", seed=5, metadata={
        "hostname": "box", "commit_id": "fedcba9", "python_config_args": "'--enable-experimental-jit=no'"})
    corpus = import_pyperf([base, jit, other, interpreter, off]).corpus
    assert set(corpus["solution"]) == {FULL, f"{FULL} [JIT]", "abc1234", f"{FULL} [JIT=interpreter]", "fedcba9"}
    assert set(corpus["campaign"]) == {"2024-03-01"}
    # files with and without a platform import together; the platform names the OS and architecture
    assert set(corpus["environment"]) == {"box", "box / Linux / x86_64"}
    assert set(corpus.loc[corpus.solution == "abc1234", "platform"]) == {"Linux-6.1.0-x86_64-with-glibc2.36"}
    assert corpus.loc[corpus.solution != "abc1234", "platform"].isna().all()


def test_rerun_of_one_build_same_day_is_two_campaigns(tmp_path):
    meta = {"hostname": "box", "commit_id": FULL}
    first = _write_suite(tmp_path / "first.json", metadata=meta, scale=1.0, start="2024-03-01 10:00:00", seed=1)
    again = _write_suite(tmp_path / "again.json", metadata=meta, scale=1.0, start="2024-03-01 15:00:00", seed=2)
    result = import_pyperf([first, again])
    assert set(result.corpus["campaign"]) == {"2024-03-01 (first.json)", "2024-03-01 (again.json)"}
    with pytest.raises(CorpusError, match="--campaign 'x' gives both one campaign"):
        import_pyperf([first, again], campaign="x")


def test_build_ids_merge_only_when_one_commit_fits():
    from audits.corpus.importers.pyperf_json import normalize_build_ids

    ids = ["abc1234", "abc1234aa", "abc1234bb", "DEF5678", "def5678901", "main", "v3.10.4"]
    got = normalize_build_ids(ids)
    assert got["abc1234"] == "abc1234"  # the start of two different commits: left as it is
    assert got["abc1234aa"] == "abc1234aa" and got["abc1234bb"] == "abc1234bb"
    assert got["DEF5678"] == got["def5678901"] == "def5678901"  # case and length do not split one commit
    assert got["main"] == "main" and got["v3.10.4"] == "v3.10.4"  # not hashes: kept exactly
    assert normalize_build_ids(list(reversed(ids))) == got  # the order the files come in does not matter
