"""Between-/within-process variance per benchmark, on files written by pyperf itself (issue 24, item 2).

A pyperf run is 20 processes x 3 values; the between-process share of the repeat noise differs from one
benchmark to the next. One benchmark alternates fast and slow values inside every process (its process means
barely move): pooled over benchmarks, its within-process sum of squares outweighs every other benchmark's
between-process part and the pooled between-process component truncates at 0. The robust summary -- the
median over benchmarks of each benchmark's own share -- is checked against statsmodels' MixedLM (REML, a
random intercept per process) fitted benchmark by benchmark.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import statsmodels.formula.api as smf

from audits.checks.reliability import run_reliability_audit
from audits.corpus.io import load_corpus

SD_VALUE = 0.01                                          # within-process sd of log duration
SHARES = np.linspace(0.25, 0.85, 11)                     # planted between-process shares, one per benchmark
N_PROCESSES, N_VALUES = 20, 3
METADATA = {"hostname": "bench-box", "platform": "Linux-6.1.0-18-amd64-x86_64-with-glibc2.36",
            "python_compiler": "GCC 12.2.0", "cpu_model_name": "AMD EPYC 7B13", "commit_id": "2e91dba437fe5c56c6f8"}


def _planted(rng):
    """Process runs per benchmark: 11 with planted shares, and the alternating one."""
    out = {}
    for i, share in enumerate(SHARES):
        sd_process = SD_VALUE * np.sqrt(share / (1 - share))
        base = 40e-9 * 10 ** (i * 0.8)                   # 40 ns ... 4 s
        out[f"bench_{i:02d}"] = [list(base * np.exp(rng.normal(0, sd_process) + rng.normal(0, SD_VALUE, N_VALUES)))
                                 for _ in range(N_PROCESSES)]
    swing = np.array([0.4, -0.4, 0.0])                   # fast, slow, middle in every process
    out["noisy"] = [list(2e-3 * np.exp(swing + rng.normal(0, 0.002, N_VALUES))) for _ in range(N_PROCESSES)]
    return out


@pytest.fixture(scope="module")
def imported(tmp_path_factory, write_pyperf):
    root = tmp_path_factory.mktemp("pyperf_noise")
    path = write_pyperf(root / "base.json", _planted(np.random.default_rng(24)), metadata=METADATA)
    out = root / "corpus.parquet"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", str(path), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return load_corpus(out)


def _mixedlm_share(rows) -> float:
    frame = rows.assign(y=np.log(rows["duration_s"].to_numpy(dtype=float)), process=rows["run"].astype(str))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary fits (share ~ 0) warn
        fit = smf.mixedlm("y ~ 1", frame, groups=frame["process"]).fit(reml=True)
    between = float(fit.cov_re.iloc[0, 0])
    return between / (between + float(fit.scale))


def test_between_process_share_is_the_per_benchmark_median(imported):
    audit = run_reliability_audit(imported, n_boot=200)
    (result,) = audit.runs.values()
    vc = result.variance
    assert vc.nested and vc.values_per_run == N_VALUES
    # pooled, the alternating benchmark drives the between-process component to 0 ...
    assert vc.variance("run") == 0.0
    # ... while per benchmark, MixedLM finds it in every planted benchmark
    mixed = {name: _mixedlm_share(rows) for name, rows in imported.groupby("problem", observed=True)}
    assert mixed["noisy"] < 0.05 and min(v for k, v in mixed.items() if k != "noisy") > 0.05
    median = float(np.median(list(mixed.values())))
    share = vc.between_process
    assert share.estimate == pytest.approx(median, abs=0.05)
    assert share.n == len(mixed) and share.low <= share.estimate <= share.high
    assert share.estimate > 0.3
    # every benchmark's own share, as MixedLM has it
    per = vc.per_problem.set_index("problem")["between_process_share"]
    for name, value in mixed.items():
        assert per[name] == pytest.approx(value, abs=0.05), name
    # the within-problem shares of run and repeat add up per benchmark; the robust rows say how many were > 0
    table = vc.table.set_index("component")
    assert table.loc["run", "median_share"] == pytest.approx(share.estimate, abs=1e-12)  # one build: only run+repeat
    assert table.loc["run", "positive_share"] == pytest.approx(11 / 12)
    # JSON and headline carry it
    run = audit.to_dict()["runs"][0]
    assert run["variance_components"]["between_process_share"]["estimate"] == pytest.approx(share.estimate)
    assert audit.to_frame()["between_process_share"].iloc[0] == pytest.approx(share.estimate)


def test_one_noisy_benchmark_does_not_move_the_median(imported):
    without = imported.loc[imported["problem"] != "noisy"]
    a = run_reliability_audit(imported, n_boot=0)
    b = run_reliability_audit(without, n_boot=0)
    (ra,), (rb,) = a.runs.values(), b.runs.values()
    assert rb.variance.variance("run") > 0  # without it the pooled estimator is positive too
    # the median of 12 values vs of 11: at most one rank apart (planted shares are 0.06 apart)
    assert abs(ra.variance.between_process.estimate - rb.variance.between_process.estimate) < 0.07


# --- pyperf's own per-benchmark checks (issue 24, item 5) ---------------------------------------------------------

def _profile_benchmarks(rng):
    """24 stable benchmarks, 3 unstable ones (CV ~31, 25, 19 %), 3 with too few processes, one outlier."""
    def runs(base, sd_process, sd_value):
        return [list(base * np.exp(rng.normal(0, sd_process) + rng.normal(0, sd_value, N_VALUES)))
                for _ in range(N_PROCESSES)]
    out = {f"stable_{i:02d}": runs(40e-9 * 3 ** i, 0.002, 0.003) for i in range(24)}
    for name, sd in (("unstable_a", 0.30), ("unstable_b", 0.245), ("unstable_c", 0.185)):
        out[name] = runs(5e-3, 0.0, sd)
    for i in range(3):
        out[f"few_{i}"] = runs(2e-2, 0.02, 0.003)
    out["outlier"] = runs(1e-2, 0.002, 0.003)
    out["outlier"][3][1] *= 1.6   # one value 60 % above the rest
    return out


def _pyperf_check(path) -> dict[str, set[str]]:
    """What ``python -m pyperf check`` says about each benchmark of ``path`` (its own output, parsed)."""
    proc = subprocess.run([sys.executable, "-m", "pyperf", "check", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    flags: dict[str, set[str]] = {}
    name = None
    for i, line in enumerate(lines):
        if i + 1 < len(lines) and lines[i + 1] and set(lines[i + 1]) == {"-"} and len(lines[i + 1]) == len(line):
            name = line
            flags[name] = set()
        elif name and line.startswith("* the standard deviation"):
            flags[name].add("unstable")
        elif name and (line.startswith("* the minimum") or line.startswith("* the maximum")):
            flags[name].add("outlier")
        elif name and line.startswith("* Not enough samples"):
            flags[name].add("too_few_processes")
    return flags


@pytest.fixture(scope="module")
def profiled(tmp_path_factory, write_pyperf):
    root = tmp_path_factory.mktemp("pyperf_profile")
    path = write_pyperf(root / "suite.json", _profile_benchmarks(np.random.default_rng(5)), metadata=METADATA)
    out = root / "corpus.parquet"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "import", "pyperf", str(path), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return path, load_corpus(out)


def test_benchmark_checks_flag_what_pyperf_check_flags(profiled):
    from audits.checks.reliability import ReliabilityThresholds

    path, corpus = profiled
    expected = _pyperf_check(path)
    assert len(expected) == 31 and {n for n, f in expected.items() if "unstable" in f} == {
        "unstable_a", "unstable_b", "unstable_c"}
    audit = run_reliability_audit(corpus, thresholds=ReliabilityThresholds.for_profile("benchmark"), n_boot=50)
    (run,) = audit.to_dict()["runs"]
    checks = run["benchmark_checks"]
    assert checks["n_benchmarks"] == 31
    got = {"unstable": {r["benchmark"] for r in checks["unstable"]},
           "outlier": {r["benchmark"] for r in checks["outliers"]},
           "too_few_processes": {r["benchmark"] for r in checks["too_few_processes"]}}
    for flag, names in got.items():
        assert names == {n for n, f in expected.items() if flag in f}, flag
    assert checks["unstable_share"] == pytest.approx(3 / 31)
    assert [r["benchmark"] for r in checks["unstable"]] == ["unstable_a", "unstable_b", "unstable_c"]  # worst first
    # the CV pyperf prints (stdev / mean of all values) is the one judged
    values = corpus.loc[corpus["problem"] == "unstable_a", "duration_s"].to_numpy()
    assert checks["unstable"][0]["cv"] == pytest.approx(np.std(values, ddof=1) / np.mean(values), rel=1e-9)
    assert checks["max_spread"] >= 0.5 and checks["median_cv"] < 0.02
    # findings beside the median CV: the median passes, the per-benchmark checks warn and name the worst
    findings = {f["metric"]: f for f in audit.to_dict()["findings"]}
    assert findings["median_repeat_cv"]["level"] == "pass"
    assert findings["unstable_share"]["level"] == "warn"          # 3 of 31 >= 1 %, < 10 %
    assert "unstable_a 3" in findings["unstable_share"]["message"] and "3 of 31" in findings["unstable_share"]["message"]
    assert findings["outlier_share"]["level"] == "warn" and "outlier" in findings["outlier_share"]["message"]
    assert findings["too_few_processes_share"]["level"] == "pass"  # 4 of 28 stable < 25 %
    assert "4 of 28 stable benchmarks" in findings["too_few_processes_share"]["message"]


def test_benchmark_checks_are_not_judged_under_the_reward_profile(profiled):
    _, corpus = profiled
    audit = run_reliability_audit(corpus, n_boot=0)
    metrics = {f["metric"] for f in audit.to_dict()["findings"]}
    assert metrics.isdisjoint({"unstable_share", "outlier_share", "too_few_processes_share"})
    assert audit.to_dict()["runs"][0]["benchmark_checks"]["n_benchmarks"] == 31  # the figures are still there
