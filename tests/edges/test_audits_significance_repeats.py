"""Edges of the reliability audit's ``significant_share`` (found by auditing corpora of 2 repeats).

The exact one-sided Mann-Whitney test of R repeats against R cannot go below p = 1 / C(2R, R): 1/6 at two
repeats, above the 0.05 the share counts at, so no pair is ever significant and the share is 0 whatever the
noise. A noiseless two-repeat campaign was judged ``fail`` ("most speed orderings are not distinguishable from
noise"); it cannot be measured there, so it is ``n/a`` with the reason and the repeats that would measure it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from audits.checks.reliability import run_reliability_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import NA


def _share(corpus):
    audit = run_reliability_audit(corpus, n_boot=20)
    return [f for f in audit.findings if f.metric == "significant_share"]


def test_two_repeats_cannot_measure_significance_and_say_so():
    # almost no repeat noise: every pair of references is ordered the same way in both repeats
    corpus = synthesize(n_problems=6, n_repeats=2, noise_cv=0.001, seed=1).corpus
    (found,) = _share(corpus)
    assert found.level == NA, (found.level, found.message)
    assert "1/6" in found.reason and "4 repeats or more" in found.reason
    # the other repeat-based findings of the same run are still judged
    audit = run_reliability_audit(corpus, n_boot=20)
    assert {f.level for f in audit.findings if f.metric in ("median_repeat_cv", "mean_rank_sd", "icc")} == {"pass"}


def test_four_repeats_of_the_same_noise_are_judged():
    (found,) = _share(synthesize(n_problems=6, n_repeats=4, noise_cv=0.001, seed=1).corpus)
    assert found.level == "pass" and found.value > 0.75, (found.level, found.value)


def test_the_command_line_writes_na_with_the_reason(tmp_path):
    path = tmp_path / "two repeats.parquet"
    save_corpus(synthesize(n_problems=5, n_repeats=2, noise_cv=0.001, seed=3).corpus, path)
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "reliability", str(path), "--n-boot", "20",
                           "--strict", "--json", str(out)], capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines()
             if "significant_share" in ln and ln.startswith(("PASS", "WARN", "FAIL", "n/a"))]
    assert lines and all(ln.startswith("n/a") for ln in lines), proc.stdout
    assert proc.returncode == 0, proc.stdout  # --strict: no finding fails on this quiet campaign
    (finding,) = [f for f in json.loads(out.read_text())["findings"] if f["metric"] == "significant_share"]
    assert finding["level"] == "n/a" and "cannot reach" in finding["reason"]


def test_three_repeats_judge_the_repeat_count_so_they_are_na_too():
    """At 3 repeats the smallest p is 1/20 = 0.05 itself: after Benjamini-Hochberg over m pairs, k pairs at that p
    are significant only when m * 0.05 / k <= 0.05, i.e. k = m. A quiet campaign (1 % repeat CV) read 0 % and
    failed, below the fail limit of 0.5 (found by auditing 3-repeat campaigns, collect --adaptive's first round)."""
    from statsmodels.stats.multitest import multipletests

    # the premise, by an independent implementation: 99 of 100 pairs at the smallest p, one not separated
    assert not multipletests([0.05] * 99 + [0.5], alpha=0.05, method="fdr_bh")[0].any()
    assert multipletests([0.05] * 100, alpha=0.05, method="fdr_bh")[0].all()
    (found,) = _share(synthesize(n_problems=6, n_repeats=3, noise_cv=0.01, seed=1).corpus)
    assert found.level == NA, (found.level, found.message)
    assert "1/20" in found.reason and "Benjamini-Hochberg" in found.reason and "4 repeats or more" in found.reason
