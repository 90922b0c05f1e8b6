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


def _timeit(path, stmt, *extra):
    cmd = [sys.executable, "-m", "pyperf", "timeit", "--quiet", "-p", "3", "-n", "3", "-w", "1", *extra,
           "-o", str(path), stmt]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return path


@pytest.fixture(scope="module")
def pyperf_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("pyperf")
    fixed = _timeit(root / "main.json", "sum(range(50))", "-l", "20")        # fixed loops: no calibration
    calibrated = _timeit(root / "patched.json", "sum(range(200))")           # pyperf calibrates the loop count
    # The Runner API (what pyperformance uses) writing a suite with two benchmarks.
    script = root / "bench.py"
    script.write_text(
        "import pyperf\n"
        "runner = pyperf.Runner()\n"
        "runner.timeit('sort', stmt='sorted(x)', setup='x=list(range(300,0,-1))')\n"
        "runner.timeit('join', stmt=\"','.join(x)\", setup='x=[str(i) for i in range(300)]')\n")
    suite = root / "suite.json"
    subprocess.run([sys.executable, str(script), "--quiet", "-p", "2", "-n", "2", "-w", "1", "-l", "5",
                    "-o", str(suite)], check=True, capture_output=True, timeout=120)
    return root, fixed, calibrated, suite


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
    assert set(corpus["environment"]) == {f"{meta['hostname']}/{meta['cpu_model_name']}"}
    first_date = raw_calibrated[0]["metadata"]["date"][:10]
    assert first_date in set(corpus["campaign"])
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
    with pytest.raises(CorpusError, match="x.json: not a readable pyperf JSON"):
        import_pyperf([not_json])
    other = tmp_path / "y.json"
    other.write_text(json.dumps({"hello": 1}))
    with pytest.raises(CorpusError, match="y.json: no 'benchmarks' list"):
        import_pyperf([other])
    with pytest.raises(CorpusError, match="no such file"):
        import_pyperf([tmp_path / "missing.json"])
