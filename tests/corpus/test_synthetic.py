"""Synthetic corpora: the planted truth is really in the data."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from audits.corpus.io import load_corpus, normalize
from audits.corpus.synthetic import SyntheticSpec, synthesize
from stats.ranking import percentile_table, problem_scores, select_runs


@pytest.fixture(scope="module")
def synth():
    return synthesize(n_problems=30, n_tests=6, n_solutions=10, n_repeats=6, busy=True,
                      campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), noise_cv=0.08, seed=11)


def _cells(corpus, env, campaign):
    runs = corpus[(corpus.environment == env) & (corpus.campaign == campaign) & (corpus.role == "reference")
                  & corpus.correct & (corpus.status == "ok") & (corpus.test_kind == "optimization")]
    return runs.groupby(["problem", "test", "solution"], observed=True)["duration_s"]


def test_shape_and_schema(synth):
    spec = SyntheticSpec(n_problems=30, n_tests=6, n_solutions=10, n_repeats=6, busy=True,
                         campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)))
    assert len(synth.corpus) == spec.rows()
    normalize(synth.corpus)  # passes validation
    assert set(synth.corpus.environment) == {"quiet", "busy"}


def test_planted_repeat_cv_is_recovered(synth):
    cells = _cells(synth.corpus, "quiet", "c0")
    cv = (cells.std(ddof=1) / cells.mean()).median()
    assert cv == pytest.approx(synth.truth["noise"]["median_cell_cv"], rel=0.1)


def test_busy_environment_is_much_noisier(synth):
    quiet = _cells(synth.corpus, "quiet", "c0")
    busy = _cells(synth.corpus, "busy", "c0")
    assert (busy.std() / busy.mean()).median() > 3 * (quiet.std() / quiet.mean()).median()


def test_planted_affine_drift(synth):
    a = _cells(synth.corpus, "quiet", "c0").median()
    b = _cells(synth.corpus, "quiet", "c1").median()
    joined = pd.concat([a.rename("x"), b.rename("y")], axis=1).dropna()
    slope, intercept = np.polyfit(joined.x, joined.y, 1)
    assert slope == pytest.approx(0.63, abs=0.02)
    assert intercept == pytest.approx(0.053, abs=0.005)


def test_latent_quality_orders_observed_scores(synth):
    runs = select_runs(synth.corpus, environment="quiet", campaign="c0", roles=["reference"])
    scores = problem_scores(percentile_table(runs))
    merged = scores.astype({"problem": str, "solution": str}).merge(synth.solutions, on=["problem", "solution"])
    merged = merged[merged.correct_x]
    assert spearmanr(merged.q, merged.true_q).statistic > 0.9


def test_filterable_problems_have_wide_workload_spread(synth):
    cells = _cells(synth.corpus, "quiet", "c0").median().reset_index()
    per_test = cells.groupby(["problem", "test"], observed=True)["duration_s"].median().reset_index()
    spread = per_test.groupby("problem", observed=True)["duration_s"].agg(
        lambda d: (np.percentile(d, 75) - np.percentile(d, 25)) / np.median(d))
    truth = synth.problems.set_index("problem")["filterable"]
    observed = spread >= 0.3
    agree = (observed.reindex(truth.index) == truth).mean()
    assert agree >= 0.95 and 0 < truth.mean() < 1


def test_zero_noise_gives_identical_repeats():
    s = synthesize(n_problems=3, n_tests=3, n_solutions=4, n_repeats=3, noise_cv=0.0, noise_add_s=0.0, seed=2)
    spread = s.corpus.groupby(["problem", "test", "solution"], observed=True)["duration_s"].agg(np.ptp)
    assert spread.max() == 0


def test_bad_spec_is_rejected():
    with pytest.raises(ValueError, match="n_problems"):
        synthesize(n_problems=0)
    with pytest.raises(ValueError, match="filterable_share"):
        synthesize(filterable_share=1.5)


def test_cli_writes_corpus_and_truth(tmp_path):
    out = tmp_path / "s.parquet"
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "synth", "--out", str(out), "--problems", "4",
                           "--tests", "3", "--solutions", "5", "--repeats", "2", "--campaigns", "old,new",
                           "--drift", "0.5,0.01", "--busy"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    corpus = load_corpus(out)
    truth = json.loads((tmp_path / "s.truth.json").read_text())
    assert truth["campaigns"]["new"] == {"slope": 0.5, "intercept": 0.01}
    assert len(corpus) == truth["spec"]["rows"]
    assert {p["problem"] for p in truth["problems"]} == {f"p{i:04d}" for i in range(4)}
