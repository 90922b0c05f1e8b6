"""pytest-benchmark files written in odd but legal ways by the real pytest-benchmark, imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys

#: the inner pytest run's environment without this session's PYTEST_* variables: under `make test`'s xdist workers
#: pytest-benchmark would otherwise see a worker and disable itself (no file written)
OWN_SESSION = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

CLI = [sys.executable, "-m", "audits.cli"]
COARSE = """
def test_ped(benchmark):
    benchmark.pedantic(lambda: None, rounds=100, iterations=1)
"""


def test_rounds_below_a_coarse_timers_resolution_are_refused_naming_the_benchmark_and_the_way_out(tmp_path):
    # --benchmark-timer time.time ticks in steps of ~0.24 us here: a pedantic round of an empty function reads 0 s.
    # Before the fix the import failed with "zero durations on ok rows ... check the timer, or store failed runs
    # with their status" over rows of the corpus being built, naming neither the benchmark nor the timer.
    (tmp_path / "test_c.py").write_text(COARSE)
    out_json = tmp_path / "c.json"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_c.py",
                    "--benchmark-timer", "time.time", f"--benchmark-json={out_json}"], check=True, capture_output=True,
                   timeout=120, cwd=tmp_path, env=OWN_SESSION)
    (bench,) = json.loads(out_json.read_text())["benchmarks"]
    zeros = bench["stats"]["data"].count(0.0)
    assert zeros  # what pytest-benchmark wrote (the premise of the test)
    out = tmp_path / "out.parquet"
    proc = subprocess.run([*CLI, "import", "pytest-benchmark", str(out_json), "--out", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (f"{out_json}: benchmark 'test_c.py::test_ped': {zeros} of its 100 rounds took 0 s, less than the "
            f"resolution of its timer (time)") in proc.stderr
    assert "iterations=N" in proc.stderr and "--benchmark-timer time.perf_counter" in proc.stderr
    assert not out.exists()
