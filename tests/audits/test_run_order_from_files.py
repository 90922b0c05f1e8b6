"""The runs of several corpus files without timestamps are ordered as the files were given, for every audit.

``audits.report.inputs.load_corpora`` records the files' order (``attrs["run_order"]``); the audit context's
run table reads it, so the stored -> fresh pair the calibration audit chooses, the report's calibration pairs
and every other audit's run order are the same, and they follow the order the user gave the files in.
"""

from __future__ import annotations

import pytest

from audits.corpus.io import save_corpus
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize
from audits.protocol.context import AuditContext
from audits.report.inputs import calibrate_pairs, load_corpora


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    corpus = synthesize(n_problems=3, n_tests=2, n_correctness_tests=1, n_solutions=5, n_incorrect=0,
                        n_candidates=0, n_repeats=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=2).corpus
    assert "timestamp" not in corpus.columns           # nothing but the files' order can order the runs
    folder = tmp_path_factory.mktemp("runs")
    out = {}
    for campaign in ("c0", "c1"):
        path = folder / f"{campaign}.parquet"
        save_corpus(corpus.loc[(corpus["campaign"] == campaign).to_numpy()].reset_index(drop=True), path)
        out[campaign] = path
    return out


@pytest.mark.parametrize("given", [("c0", "c1"), ("c1", "c0")])
def test_audit_context_and_report_pairs_follow_the_files_order(files, given):
    stacked = load_corpora([files[c] for c in given])
    runs = AuditContext(stacked).runs
    assert runs.order_by == "user"
    assert [r.campaign for r in runs.names] == list(given)
    (pair,) = calibrate_pairs(stacked, n_boot=0, n_boot_rank=0)
    assert (pair.source, pair.target) == given            # the campaigns, stored -> fresh in the files' order
    assert [s.run for s in pair.source_runs + pair.target_runs] == [Run("quiet", g) for g in given]
