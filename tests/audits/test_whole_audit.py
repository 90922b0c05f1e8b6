"""The whole audit (`speedaudit audit all`) on one shared run context: equal to the separate audits, each
shared piece computed once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.protocol.context import AuditContext, audit_context
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

REPO = Path(__file__).resolve().parents[2]
N_BOOT = 40


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=6, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1, n_candidates=2,
                      n_repeats=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=5).corpus


@pytest.fixture(scope="module")
def corpus_path(corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("whole") / "c.parquet"
    save_corpus(corpus, path)
    return path


def _cli(*args) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "audits.cli", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_audit_all_json_equals_the_separate_audits(corpus_path, tmp_path):
    common = ["--n-boot", N_BOOT]
    _cli("audit", "all", corpus_path, *common, "--source-campaign", "c0", "--target-campaign", "c1",
         "--pair-environment", "quiet", "--simulation-environment", "quiet", "--simulation-campaign", "c0",
         "--compare-by", "role", "--compare-a", "reference", "--compare-b", "candidate", "--json", tmp_path / "all.json")
    whole = json.loads((tmp_path / "all.json").read_text())
    _cli("audit", "reliability", corpus_path, *common, "--json", tmp_path / "rel.json")
    _cli("audit", "discriminability", corpus_path, *common, "--json", tmp_path / "dis.json")
    _cli("audit", "aggregation", corpus_path, *common, "--json", tmp_path / "agg.json")
    _cli("compare", corpus_path, *common, "--by", "role", "--a", "reference", "--b", "candidate", "--json",
         tmp_path / "cmp.json")
    _cli("audit", "calibration", corpus_path, *common, "--environment", "quiet", "--source-campaign", "c0",
         "--target-campaign", "c1", "--json", tmp_path / "cal.json")
    _cli("simulate", corpus_path, "--environment", "quiet", "--campaign", "c0", "--json", tmp_path / "sim.json",
         *[x for name in ("top30", "uniform_timeout_2x", "ranked_worst_p80", "duration_filter_q90", "duration_filter_q50",
                          "duration_filter_q10", "length_filter_1k")
           for x in ("--reward-env", REPO / "fixtures" / "environments" / f"{name}.yaml")])
    assert whole["reliability"] == json.loads((tmp_path / "rel.json").read_text())
    assert whole["discriminability"] == json.loads((tmp_path / "dis.json").read_text())
    assert whole["aggregation"] == json.loads((tmp_path / "agg.json").read_text())
    assert whole["calibration"] == [json.loads((tmp_path / "cal.json").read_text())]
    assert whole["simulation"] == json.loads((tmp_path / "sim.json").read_text())
    assert whole["compare"] == json.loads((tmp_path / "cmp.json").read_text()) and whole["compare"]["runs"]
    assert whole["skipped"] == {}


def test_calibration_is_skipped_not_guessed(corpus_path, tmp_path):
    proc = _cli("audit", "all", corpus_path, "--n-boot", N_BOOT, "--simulation-environment", "quiet",
                "--simulation-campaign", "c0", "--json", tmp_path / "all.json")
    whole = json.loads((tmp_path / "all.json").read_text())
    assert "calibration" not in whole and "source-campaign" in whole["skipped"]["calibration"]
    assert "calibration: skipped" in proc.stdout


def test_context_changes_when_work_happens_not_the_result(corpus):
    """Each audit given the shared context returns what it returns given the frame."""
    from audits.checks.aggregation import run_aggregation_audit
    from audits.checks.discriminability import run_discriminability_audit
    from audits.checks.reliability import run_reliability_audit

    ctx = AuditContext(corpus)
    for run in (run_reliability_audit, run_discriminability_audit, run_aggregation_audit):
        assert run(ctx, n_boot=N_BOOT).to_dict() == run(corpus, n_boot=N_BOOT).to_dict()


def test_shared_pieces_are_computed_once_per_run(corpus, monkeypatch):
    """reference_pools once per run for all audits, the run table once (counted on the real functions; before
    the shared context the same corpus built 9 pools and 5 run tables)."""
    import stats.ranking
    from audits.corpus import runs as runs_module
    from audits.engine.whole_audit import run_whole_audit

    calls = {"pools": 0, "runs_of": 0}
    real_pools, real_runs_of = stats.ranking.reference_pools, runs_module.runs_of

    def pools(*a, **k):
        calls["pools"] += 1
        return real_pools(*a, **k)

    def runs_of(*a, **k):
        calls["runs_of"] += 1
        return real_runs_of(*a, **k)

    import sys as _sys
    for module in list(_sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith(("stats.", "audits.")):
            if getattr(module, "reference_pools", None) is real_pools:
                monkeypatch.setattr(module, "reference_pools", pools)
            if getattr(module, "runs_of", None) is real_runs_of:
                monkeypatch.setattr(module, "runs_of", runs_of)
    whole = run_whole_audit(corpus, pairs=[(("quiet", "c0"), ("quiet", "c1"))], simulation_run=("quiet", "c0"),
                            n_boot=N_BOOT, simulation_n_boot=20)
    n_runs = len(whole.reliability.runs)
    assert n_runs == 2
    # one pool per run, shared by reliability, discriminability, aggregation and the simulator; calibration's
    # percentile agreement builds the source pool of its paired frame itself (stats.calibration), once per pair
    assert calls["pools"] <= n_runs + 1, calls
    assert calls["runs_of"] == 1, calls


def test_reference_scores_from_the_shared_table_equal_a_fresh_computation(corpus):
    from stats.reliability import per_repeat_scores

    ctx = audit_context(corpus)
    run = ctx.run(ctx.runs.names[0])
    fresh = per_repeat_scores(run.rows, roles=("reference",), pools=run.pools)
    shared = run.reference_repeat_scores()
    pd.testing.assert_frame_equal(shared.reset_index(drop=True), fresh.reset_index(drop=True))
    assert np.isfinite(shared["q"]).any()
