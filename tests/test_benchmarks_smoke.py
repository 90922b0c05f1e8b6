"""Functional smoke test of the benchmark harness (no timing is asserted anywhere).

Runs the harness on a 2 x 10^4-execution corpus: the fast stages and the
straightforward baselines must agree (percentiles, ICC, leave-one-problem-out
R^2, discriminability, aggregator stability), the child-process protocol must report a
peak RSS, and the comparison must catch a planted disagreement.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import baselines
from benchmarks.corpora import PER_PROBLEM, ensure_corpus, spec_for
from benchmarks.run import _close, _derive, benchmark, compare, format_table, run_child, targets
from benchmarks.stages import run_stage

pytestmark = pytest.mark.slow  # a minute or more under make test's load (33 s idle), and last but one in collection order

ROWS = 20_000  # 2 problems (the fewest leave-one-problem-out can use) x 10^4 executions


@pytest.fixture(scope="module")
def corpus_path(tmp_path_factory):
    return ensure_corpus(ROWS, cache=tmp_path_factory.mktemp("corpora"))


def test_corpus_geometry_is_honest(corpus_path):
    frame = pd.read_parquet(corpus_path)
    spec = spec_for(ROWS)
    assert spec["n_problems"] * PER_PROBLEM == ROWS == 2 * 10_000
    real = frame[frame["role"] != "floor"]
    assert len(real) == ROWS                      # floor rows come on top, 20 per campaign
    assert (frame["role"] == "floor").sum() == 40
    assert sorted(real["campaign"].unique()) == ["c0", "c1"]
    # the same 50 references are re-run in both campaigns
    per_campaign = real.groupby("campaign", observed=True)["solution"].nunique()
    assert per_campaign.tolist() == [50, 50]


@pytest.mark.parametrize("stage", ["percentiles", "reliability", "calibration", "discriminability", "aggregation"])
def test_fast_and_baseline_agree(corpus_path, stage):
    fast = {"checks": run_stage(stage, corpus_path, impl="fast")["checks"]}
    base = {"checks": run_stage(stage, corpus_path, impl="baseline")["checks"]}
    verdict = compare(stage, fast, base)
    assert verdict["agree"], verdict


def test_percentile_baseline_matches_hand_example():
    # pool of test t: references a=1, b=2, c=3 (medians of their repeats); x is scored against all three
    rows = pd.DataFrame({
        "environment": "e", "campaign": "c0", "problem": "p", "test": "t",
        "solution": ["a", "a", "b", "c", "x"], "repeat": [0, 1, 0, 0, 0],
        "duration_s": [0.5, 1.5, 2.0, 3.0, 2.0], "status": "ok", "correct": True,
        "role": ["reference"] * 4 + ["candidate"]})
    out = baselines.percentiles(rows)["percentile"]
    # a (pool b, c): 0.5 -> 0, 1.5 -> 0; b (pool a=1, c=3) -> 50; c (pool a, b) -> 100; x (a, b, c): (1 + 0.5)/3
    assert np.allclose(out, [0.0, 0.0, 50.0, 100.0, 100 * 1.5 / 3])


def test_compare_catches_disagreement():
    a = {"checks": {"percentile": np.array([0.0, 50.0, np.nan])}}
    b = {"checks": {"percentile": np.array([0.0, 50.1, np.nan])}}
    assert compare("percentiles", a, a)["agree"]
    verdict = compare("percentiles", a, b)
    assert verdict["agree"] is False and verdict["max_abs_diff"] == pytest.approx(0.1)
    assert _close({"x": 1.0}, {"y": 1.0})[0] is False
    assert _close(np.array([1.0, np.nan]), np.array([1.0, 2.0]))[0] is False


def test_child_process_reports_rss_and_budget(corpus_path, tmp_path):
    done = run_child("percentiles", corpus_path, impl="fast", workdir=tmp_path)
    assert done["status"] == "ok" and done["maxrss_mb"] > 10
    assert len(done["checks"]["percentile"]) == ROWS // 2  # campaign c0
    killed = run_child("reliability", corpus_path, impl="baseline", budget=0.2, workdir=tmp_path)
    assert killed["status"] == "over budget"


def test_benchmark_end_to_end_and_targets(corpus_path, tmp_path):
    result = benchmark([ROWS], baseline_max=ROWS, budget=120, stages=("floor", "percentiles"),
                       cache=corpus_path.parent, log=lambda *_: None)
    entry = result["sizes"][ROWS]
    assert entry["agreement"]["percentiles"]["agree"]
    base, fast = entry["baselines"]["percentiles"], entry["stages"]["percentiles"]
    assert base["ratio"] == pytest.approx(base["seconds"] / fast["seconds"])
    assert entry["speedup"]["stages"] == ["percentiles"]
    assert "percentiles" in format_table(result) and "floor" in format_table(result)
    # derived ratios on hand-made figures: the audit over the floor, a killed baseline gives a lower bound
    hand = {"stages": {"audit": {"status": "ok", "seconds": 30.0}, "floor": {"status": "ok", "seconds": 2.0},
                       "calibration": {"status": "ok", "seconds": 4.0}},
            "baselines": {"calibration": {"status": "over budget", "budget_s": 300.0}}, "agreement": {}}
    _derive(hand)
    assert hand["floor_ratio"] == 15.0
    assert hand["baselines"]["calibration"]["ratio_lower_bound"] == 75.0
    assert hand["speedup"] == {"ratio": 75.0, "bound": True, "stages": ["calibration"], "baseline_s": 300.0,
                               "fast_s": 4.0}
    # target logic on hand-made figures (issue 17): growth 11x passes n log n (11.67x), 13x does not
    fake = {10**6: {"stages": {"audit": {"status": "ok", "seconds": 2.0, "maxrss_mb": 900}},
                    "speedup": {"ratio": 40.0, "bound": True}},
            10**7: {"stages": {"audit": {"status": "ok", "seconds": 22.0, "maxrss_mb": 3500,
                                         "parts": {"aggregation": 8.0}},
                               "report": {"status": "ok", "seconds": 30.0}}, "floor_ratio": 41.0}}
    dask = {10**8: {"dask": {"status": "ok", "maxrss_mb": 900, "workers_maxrss_mb": 5000}}}
    verdicts = {t["target"].split(" (")[0]: t["met"] for t in targets(fake, dask)}
    assert verdicts["whole audit at 1e7 <= 3 GB peak RSS"] is False
    assert verdicts["whole audit <= 40x the floor at 1e7"] is False
    assert verdicts["aggregator comparison < 1/3 of the whole audit at 1e7"] is False  # 8/22 = 0.36
    assert verdicts["speedaudit report at 1e7 <= 1.5x the whole audit"] is True  # 30/22 = 1.36
    assert verdicts["Dask path at 1e8 <= 6 GB peak RSS in any process"] is True
    assert verdicts[">= 50x faster than the baseline at 1e6"] is None  # a lower bound of 40x decides nothing
    assert [v for k, v in verdicts.items() if k.startswith("growth")] == [True]
    fake[10**7]["stages"]["audit"]["seconds"] = 26.0
    assert [t["met"] for t in targets(fake) if t["target"].startswith("growth")] == [False]


def test_cli_benchmark_covers_every_command_and_judges_its_targets(monkeypatch):
    """benchmarks.bench_cli times every command's --help (read from the parser) and validate, against the
    targets of issue 26 item 4; the judging on planted wall times (no timing is asserted)."""
    from benchmarks import bench_cli

    paths = {" ".join(c) for c in bench_cli._commands()}
    assert {"audit all", "audit reliability", "collect", "import pyperf", "validate"} <= paths
    planted = iter([0.03, 0.29, 0.03, 0.31] + [0.03, 0.1] * 200)
    monkeypatch.setattr(bench_cli, "_wall", lambda argv, cwd: next(planted))
    monkeypatch.setattr(bench_cli, "_commands", lambda: [["collect"]])
    result = bench_cli.measure(repeats=1)
    by_case = {r["case"]: r for r in result["cases"]}
    assert list(by_case) == ["speedaudit --help", "speedaudit collect --help",
                             f"speedaudit validate ({bench_cli.VALIDATE_ROWS:,}-row CSV)"]
    assert by_case["speedaudit --help"]["met"] is True and by_case["speedaudit collect --help"]["met"] is False
    assert by_case["speedaudit validate (10,000-row CSV)"]["target_s"] == 1.0
    assert by_case["speedaudit --help"]["ratio_to_python_startup"] == pytest.approx(0.29 / 0.03)


def test_a_stage_reports_its_own_peak_not_its_parents(corpus_path, tmp_path):
    """A stage started by a parent holding 600 MB reports its own peak: Linux carries the memory a process
    replaced at exec (a vforked child's: its parent's) into ``ru_maxrss``, which made every stage after an
    in-process 10^7 corpus build report the builder's 2976 MB."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(f"""
        import json
        from pathlib import Path
        from benchmarks.run import run_child
        ballast = b"\x01" * (600 << 20)  # written: resident
        done = run_child("floor", Path({str(corpus_path)!r}), workdir={str(tmp_path)!r})
        print(json.dumps({{"status": done["status"], "mb": done["maxrss_mb"], "ballast": len(ballast)}}))
    """)
    import json

    from benchmarks.run import ROOT

    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout.splitlines()[-1])
    assert done["status"] == "ok"
    assert 10 < done["mb"] < 400, done  # the floor stage of 2·10^4 rows: interpreter, pandas, the corpus
