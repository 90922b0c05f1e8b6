"""What a run cannot measure is said where the verdicts are (issue 24 item 9, the audits' half).

Three problems of a synthetic corpus are planted unmeasurable, one per cause: no optimization test, no correct
reference, every correct reference timed out on every repeat. The run table names exactly them (checked
against an independent pandas computation), in every row order and category order; every per-run audit
carries one ``n/a`` finding naming them with their causes; the Dask path's run table and reliability audit
equal the in-memory ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stats.coverage import NO_OPTIMIZATION, NO_REFERENCE, NO_TIMING
from audits.corpus.dataset import save_dataset
from audits.corpus.runs import runs_of
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_audits

PER_RUN_AUDITS = ("reliability", "discriminability", "aggregation", "simulation")


def _planted() -> pd.DataFrame:
    corpus = synthesize(n_problems=7, n_tests=3, n_correctness_tests=1, n_solutions=6, n_incorrect=1,
                        n_repeats=3, seed=5).corpus.copy()
    problem = corpus["problem"].astype(str)
    body = corpus["role"].astype(str) != "floor"
    correct_ref = (corpus["role"].astype(str) == "reference") & corpus["correct"]
    # p0001: every optimization row dropped (only correctness tests left)
    corpus = corpus.loc[~(body & (problem == "p0001") & (corpus["test_kind"].astype(str) == "optimization"))]
    problem = corpus["problem"].astype(str)
    correct_ref = correct_ref.loc[corpus.index]
    # p0003: its correct references removed (incorrect references and candidates stay)
    corpus = corpus.loc[~((problem == "p0003") & correct_ref)]
    problem = corpus["problem"].astype(str)
    correct_ref = correct_ref.loc[corpus.index]
    # p0005: every execution of a correct reference timed out (a --timeout below the problem's limit)
    status = corpus["status"].astype(str).where(~((problem == "p0005") & correct_ref), "timeout")
    corpus["status"] = pd.Categorical(status, categories=corpus["status"].cat.categories)
    return corpus.reset_index(drop=True)


def _independent(corpus: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """The rule of stats.coverage restated with pandas group-bys."""
    rows = corpus.loc[corpus["role"].astype(str) != "floor"].assign(problem=lambda f: f["problem"].astype(str))
    opt = rows.loc[rows["test_kind"].astype(str) == "optimization"]
    ref = opt.loc[(opt["role"].astype(str) == "reference") & opt["correct"]]
    timed = ref.loc[ref["status"].astype(str) == "ok"]
    out = []
    for p in sorted(rows["problem"].unique()):
        if p not in set(opt["problem"]):
            out.append((p, NO_OPTIMIZATION))
        elif p not in set(ref["problem"]):
            out.append((p, NO_REFERENCE))
        elif p not in set(timed["problem"]):
            out.append((p, NO_TIMING))
    return tuple(out)


@pytest.fixture(scope="module")
def planted():
    return _planted()


def test_the_run_table_names_the_planted_problems_with_their_causes(planted):
    (summary,) = runs_of(planted).summaries
    assert summary.unmeasured == _independent(planted)
    assert [p for p, _ in summary.unmeasured] == ["p0001", "p0003", "p0005"]
    assert summary.to_dict()["unmeasured"][1] == {"problem": "p0003", "cause": NO_REFERENCE}


def test_a_complete_corpus_has_nothing_unmeasured():
    corpus = synthesize(n_problems=4, n_repeats=2, seed=2).corpus
    assert runs_of(corpus).summaries[0].unmeasured == () == _independent(corpus)


def test_row_order_and_category_order_do_not_change_it(planted):
    shuffled = planted.sample(frac=1.0, random_state=7).reset_index(drop=True)
    for column in ("problem", "status", "role", "test_kind"):
        shuffled[column] = shuffled[column].cat.reorder_categories(shuffled[column].cat.categories[::-1])
    assert runs_of(shuffled).summaries[0].unmeasured == runs_of(planted).summaries[0].unmeasured


@pytest.fixture(scope="module")
def audits(planted):
    return run_audits(planted, list(PER_RUN_AUDITS), options={"reliability": {"n_boot": 20},
                                                               "discriminability": {"n_boot": 20}})


@pytest.mark.parametrize("name", PER_RUN_AUDITS)
def test_every_per_run_audit_says_which_problems_it_could_not_measure(audits, planted, name):
    found = [f for f in audits.results[name].findings if f.metric == "unmeasured_problems"]
    assert len(found) == 1
    (finding,) = found
    assert finding.level == "n/a" and finding.value is None
    for problem, cause in _independent(planted):
        assert f"{problem}: {cause}" in finding.reason
    assert finding.reason.startswith("3 of 7 problems not measured")


def test_without_unmeasured_problems_no_such_finding():
    corpus = synthesize(n_problems=4, n_repeats=2, seed=2).corpus
    result = run_audits(corpus, ["reliability"], options={"reliability": {"n_boot": 10}})
    assert not [f for f in result.results["reliability"].findings if f.metric == "unmeasured_problems"]


def test_the_dask_path_names_the_same_problems(planted, client, tmp_path):
    from audits.checks.reliability import run_reliability_audit
    from audits.engine.partitioned import partition_runs, run_partitioned_reliability, summary_partial

    dataset = save_dataset(planted, tmp_path / "d", problems_per_partition=2)
    partials = client.gather([client.submit(summary_partial, str(dataset.path), i)
                              for i in range(dataset.n_partitions)])
    runs = partition_runs(partials)
    assert runs == runs_of(dataset.load())
    assert [p for p, _ in runs.summaries[0].unmeasured] == ["p0001", "p0003", "p0005"]
    memory = run_reliability_audit(dataset.load(), n_boot=20)
    dask = run_partitioned_reliability(dataset, client=client, n_boot=20)
    pick = [(f.metric, f.level, f.reason) for f in memory.findings if f.metric == "unmeasured_problems"]
    assert pick and pick == [(f.metric, f.level, f.reason) for f in dask.findings if f.metric == "unmeasured_problems"]
    assert np.isfinite(memory.to_frame()["median_repeat_cv"].to_numpy(dtype=float)).all()
