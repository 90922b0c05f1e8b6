"""Tests for the aggregation audit: findings, JSON, the CLI (a real subprocess on a real
Parquet file) and the figure."""

from __future__ import annotations

import json
import subprocess
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import AggregationThresholds, run_aggregation_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from stats.aggregation import compare_aggregators
from stats.ranking import select_runs

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def synth():
    # Quiet and busy environments; floor-level light tests (the default synthetic floor of 20 ms) and
    # wide-span problems, 3 repeats.
    return synthesize(n_problems=24, n_tests=6, n_correctness_tests=1, n_solutions=10, n_incorrect=1,
                      n_candidates=2, n_repeats=3, busy=True, seed=4)


@pytest.fixture(scope="module")
def audit(synth):
    return run_aggregation_audit(synth.corpus, n_boot=200, seed=1)


def _by_metric(findings, env):
    return {f.metric: f for f in findings if f.environment == env}


def test_audit_covers_every_environment_and_matches_the_comparison(synth, audit):
    assert {k for k, _ in audit.comparisons} == {("busy", "c0"), ("quiet", "c0")}
    assert set(audit.table["environment"]) == {"busy", "quiet"}
    # the audit's numbers are compare_aggregators' numbers on that environment's rows
    direct = compare_aggregators(select_runs(synth.corpus, environment="quiet", campaign="c0"), n_boot=200, seed=1)
    ours = audit.table[audit.table.environment == "quiet"].reset_index(drop=True)
    pd.testing.assert_series_equal(ours["stability"], direct.table["stability"], check_names=False)
    pd.testing.assert_series_equal(ours["dynamic_range"], direct.table["dynamic_range"], check_names=False)


def test_recommendation_is_on_the_front_and_has_the_lowest_ratio(audit):
    for (env, _), comp in audit.comparisons:
        t = comp.table
        best = comp.recommended
        front = t[t["pareto"]]
        assert best in set(front["aggregator"])
        assert t.set_index("aggregator").loc[best, "ratio"] == front["ratio"].min()
        f = _by_metric(audit.findings, env)
        assert f["recommended_aggregator"].level == "pass" and best in f["recommended_aggregator"].message
        # the dominated finding counts exactly the aggregators off the front
        assert f["dominated_aggregators"].value == int((~t["pareto"]).sum())


def test_stability_findings_follow_thresholds(synth, audit):
    quiet = _by_metric(audit.findings, "quiet")
    busy = _by_metric(audit.findings, "busy")
    q_best = audit.comparison("quiet").recommended
    b_best = audit.comparison("busy").recommended
    q_stab = audit.comparison("quiet").table.set_index("aggregator").loc[q_best, "stability"]
    b_stab = audit.comparison("busy").table.set_index("aggregator").loc[b_best, "stability"]
    assert q_stab < 5.0 <= 10.0 <= b_stab          # planted: the busy worker's noise is heavy
    assert quiet[f"stability[{q_best}]"].level == "pass"
    assert busy[f"stability[{b_best}]"].level == "fail"
    # overriding the thresholds changes the verdict
    relaxed = run_aggregation_audit(synth.corpus, environment="busy", n_boot=50,
                                    thresholds={"stability_warn": 50.0, "stability_fail": 60.0})
    assert _by_metric(relaxed.findings, "busy")[f"stability[{relaxed.recommended}]"].level == "pass"


def test_default_finding_warns_when_the_default_is_confidently_dominated(audit):
    for (env, _), comp in audit.comparisons:
        t = comp.table.set_index("aggregator")
        f = _by_metric(audit.findings, env)["default_aggregator"]
        d = t.loc["mean_pct"]
        best = t.loc[comp.recommended]
        excess = d["ratio"] / best["ratio"] - 1
        expected = "warn" if (d["dominated_by_confident"] or
                              (excess > 0.25 and best["p_better_than_default"] >= 0.95)) else "pass"
        if comp.recommended == "mean_pct":
            expected = "pass"
        assert f.level == expected
    # planted: the quiet environment's light tests sit at the 20 ms floor, so ranking every test equally
    # (mean_pct) is beaten by aggregators that weigh the heavy tests; the finding says which one to use
    quiet = _by_metric(audit.findings, "quiet")["default_aggregator"]
    assert quiet.level == "warn"
    assert f"aggregator: {audit.comparison('quiet').recommended}" in quiet.message


def test_to_dict_layout_and_json_roundtrip(audit, tmp_path):
    data = audit.to_dict()
    assert data["primary"]["environment"] in {"busy", "quiet"}
    for name in ("mean_pct", "heaviest_pct", "worst_pct", "slope"):
        entry = data["aggregators"][name]
        for key in ("stability", "stability_sd", "dynamic_range", "pareto", "ratio", "stability_low"):
            assert key in entry
    assert set(data["environments"]) == {"busy", "quiet"}
    quiet = data["environments"]["quiet"]["c0"]["aggregators"]["mean_pct"]
    row = audit.table[(audit.table.environment == "quiet") & (audit.table.aggregator == "mean_pct")].iloc[0]
    assert quiet["stability"] == pytest.approx(row["stability"])
    assert quiet["pareto"] == bool(row["pareto"])
    assert {f["metric"] for f in data["findings"]} >= {"recommended_aggregator", "default_aggregator"}
    text = json.dumps(data, allow_nan=False)          # plain JSON, no NaN
    assert json.loads(text)["recommended"] == audit.recommended
    assert "aggregator" in audit.summary() and "recommended_aggregator" in audit.summary()


def test_single_environment_and_input_errors(synth):
    one = run_aggregation_audit(synth.corpus, environment="quiet", n_boot=50)
    assert [k for k, _ in one.comparisons] == [("quiet", "c0")]
    assert one.primary == ("quiet", "c0")
    with pytest.raises(ValueError, match="no run has environment 'nope'"):
        run_aggregation_audit(synth.corpus, environment="nope")
    with pytest.raises(ValueError, match="unknown aggregation threshold"):
        run_aggregation_audit(synth.corpus, thresholds={"stabilty_warn": 3})
    with pytest.raises(ValueError, match="stability_warn must be <= stability_fail"):
        AggregationThresholds(stability_warn=20, stability_fail=10)
    single = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_repeats=1, seed=2).corpus
    lone = run_aggregation_audit(single, n_boot=20)  # one repeat: n/a findings, not an exception (issue 16)
    assert lone.comparisons == () and {f.level for f in lone.findings} == {"n/a"}


def test_too_few_problems_warns():
    small = synthesize(n_problems=5, n_tests=4, n_solutions=8, n_repeats=2, seed=6).corpus
    audit = run_aggregation_audit(small, n_boot=50)
    f = _by_metric(audit.findings, "quiet")["n_problems"]
    assert f.level == "warn" and f.value == 5


def test_cli_end_to_end(synth, tmp_path):
    corpus_path = tmp_path / "corpus.parquet"
    save_corpus(synth.corpus, corpus_path)
    out, fig = tmp_path / "agg.json", tmp_path / "agg.png"
    proc = subprocess.run(
        [sys.executable, "-m", "audits.cli", "audit", "aggregation", str(corpus_path), "--environment", "quiet",
         "--n-boot", "100", "--json", str(out), "--figure", str(fig), "--threshold", "stability_warn=4"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "recommended_aggregator" in proc.stdout
    data = json.loads(out.read_text())
    assert data["thresholds"]["stability_warn"] == 4.0
    assert data["primary"] == {"environment": "quiet", "campaign": "c0"}
    assert set(data["aggregators"]) >= {"mean_pct", "total_pct", "loss_rate"}
    assert fig.stat().st_size > 10_000 and fig.read_bytes()[:4] == b"\x89PNG"

    bad = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "aggregation", str(corpus_path),
                          "--environment", "nope"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 1
    assert "no run has environment 'nope'" in bad.stderr and "Traceback" not in bad.stderr


def test_figure_has_one_column_per_run(audit):
    from audits.report.plots.aggregation import stability_range_figure

    fig = stability_range_figure(audit.table)
    scatter_axes = [ax for ax in fig.axes if ax.get_title() in {"busy · c0", "quiet · c0"}]
    assert len(scatter_axes) == 2
    # every aggregator of a run is plotted (one point each) and listed in its ratio bar chart
    n = audit.table.groupby("environment").size().iloc[0]
    assert len(fig.axes) == 4
    bar_labels = {t.get_text().rstrip(" *") for t in fig.axes[2].get_yticklabels()}
    assert bar_labels == set(audit.table["aggregator"])
    assert len(fig.axes[2].patches) == n
    with pytest.raises(ValueError, match="empty"):
        stability_range_figure(audit.table.iloc[:0])
    import matplotlib.pyplot as plt

    plt.close(fig)
    assert np.isfinite(audit.table["stability"]).all()


def test_excess_ratio_of_equal_zero_and_undefined_ratios():
    from audits.checks.aggregation import _excess

    assert _excess(0.2, 0.1) == (pytest.approx(1.0), "+100%")
    assert _excess(0.0, 0.0) == (0.0, "+0%")  # a clock without repeat noise: every stability is 0
    assert _excess(0.1, 0.0) == (np.inf, "0.100 (the best's is 0)")
    value, text = _excess(np.nan, 0.1)
    assert np.isnan(value) and text == "n/a"


def test_default_finding_on_a_clock_without_repeat_noise_is_not_infinitely_worse():
    """Identical repeats (instruction counts): every aggregator's stability is 0, so the default's ratio equals the
    best's (0 % apart), not "+inf%"; before, 0 / 0 made the excess infinite."""
    corpus = synthesize(n_problems=12, n_tests=3, n_solutions=6, n_repeats=3, seed=2).corpus
    cell = ["problem", "test", "solution"]
    corpus["duration_s"] = corpus.groupby(cell, observed=True)["duration_s"].transform("first")
    audit = run_aggregation_audit(corpus, n_boot=50)
    (finding,) = [f for f in audit.findings if f.metric == "default_aggregator"]
    assert "inf" not in finding.message
    assert finding.level == "pass" and ("(+0% ratio against" in finding.message or "recommended aggregator" in finding.message)
