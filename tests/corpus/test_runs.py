"""Runs (audits/corpus/runs.py): which runs a corpus holds, their order, their repeat counts, their names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import normalize
from audits.corpus.runs import Run, RunError, runs_of, select_rows
from audits.corpus.synthetic import synthesize


def _corpus(**extra_columns) -> pd.DataFrame:
    """Three runs with names that contain '/', ':' and spaces; 4, 2 and 3 repeats per cell."""
    rows = []
    for env, camp, repeats in (("host/Intel Xeon W-2255", "stored", 4), ("host/Intel Xeon W-2255", "a:b", 2),
                               ("a:b", "c0 / nightly", 3)):
        for problem in ("p1", "p2"):
            for solution in ("s1", "s2"):
                for r in range(repeats):
                    rows.append({"environment": env, "campaign": camp, "problem": problem, "test": "t",
                                 "solution": solution, "repeat": r, "duration_s": 1.0 + r, "status": "ok"})
    frame = pd.DataFrame(rows)
    for column, values in extra_columns.items():
        frame[column] = frame["campaign"].map(values)
    return normalize(frame)


def test_repeat_counts_and_sizes_match_a_pandas_computation():
    corpus = _corpus()
    runs = runs_of(corpus)
    cells = corpus.astype({"environment": str, "campaign": str}).groupby(
        ["environment", "campaign", "problem", "test", "solution"])["repeat"].nunique()
    expected = cells.groupby(level=["environment", "campaign"]).agg(lambda s: s.mode().min())
    assert {(s.environment, s.campaign): s.repeats for s in runs} == expected.to_dict()
    assert {s.run: s.rows for s in runs} == {
        Run(e, c): int(n) for (e, c), n in corpus.astype({"environment": str, "campaign": str})
        .groupby(["environment", "campaign"]).size().items()}
    assert all(s.problems == 2 and s.cells == 4 for s in runs)


def test_timestamps_order_the_runs_whatever_the_row_order():
    stamps = {"stored": "2026-01-01T10:00:00+00:00", "a:b": "2026-03-01T10:00:00+00:00",
              "c0 / nightly": "2026-02-01T10:00:00+02:00"}
    corpus = _corpus(timestamp=stamps)
    expected = [Run("host/Intel Xeon W-2255", "stored"), Run("a:b", "c0 / nightly"),
                Run("host/Intel Xeon W-2255", "a:b")]
    for seed in (0, 1, 2):
        shuffled = corpus.iloc[np.random.default_rng(seed).permutation(len(corpus))].reset_index(drop=True)
        runs = runs_of(shuffled)
        assert runs.order_by == "timestamp" and runs.ordered
        assert list(runs.names) == expected
    assert runs_of(corpus).get(expected[1]).first_timestamp == "2026-02-01T08:00:00+00:00"


def test_without_timestamps_a_user_order_is_explicit_and_the_corpus_order_is_not():
    corpus = _corpus()
    plain = runs_of(corpus)
    assert plain.order_by == "corpus order" and not plain.ordered
    user = runs_of(corpus, order=[["a:b", "c0 / nightly"], ("host/Intel Xeon W-2255", "a:b")])
    assert user.order_by == "user" and user.ordered
    assert list(user.names)[:2] == [Run("a:b", "c0 / nightly"), Run("host/Intel Xeon W-2255", "a:b")]
    assert set(user.names) == set(plain.names)


def test_names_are_never_split():
    corpus = _corpus()
    runs = runs_of(corpus)
    host = "host/Intel Xeon W-2255"
    assert runs.select(environment=host, campaign="a:b") == (Run(host, "a:b"),)
    assert runs.select(campaign="a:b") == (Run(host, "a:b"),)  # the campaign 'a:b', not the environment
    assert runs.select(environment="a:b") == (Run("a:b", "c0 / nightly"),)
    for environment in ("host", "Intel Xeon W-2255", "host/Intel Xeon W-2255 · stored"):
        with pytest.raises(RunError, match="no run has environment"):
            runs.select(environment=environment)
    rows = select_rows(corpus, [Run(host, "a:b")])
    assert len(rows) == 8 and set(rows["campaign"].astype(str)) == {"a:b"}


def test_selection_errors_list_the_runs_with_their_repeats():
    runs = runs_of(_corpus())
    with pytest.raises(RunError, match=r"host/Intel Xeon W-2255 · stored \(4 repeats\)"):
        runs.select(campaign="nope")
    with pytest.raises(RunError, match="2 runs match"):
        runs.one(environment="host/Intel Xeon W-2255")
    with pytest.raises(RunError, match="no campaign 'x'"):
        runs.get(["a:b", "x"])


def test_run_names_are_pairs_or_mappings():
    assert Run.coerce({"environment": "e/1", "campaign": "c:2"}) == Run("e/1", "c:2") == Run.coerce(("e/1", "c:2"))
    for bad in ("e/1/c:2", ["only one"], {"environment": "e"}, 3):
        with pytest.raises(RunError):
            Run.coerce(bad)
    assert str(Run("e/1", "c:2")) == "e/1 · c:2"  # a display label only


def test_floor_only_runs_are_left_out_unless_asked():
    corpus = synthesize(n_problems=3, n_repeats=2, seed=1).corpus
    floor = corpus.loc[(corpus["role"] == "floor").to_numpy()].copy()
    floor["campaign"] = pd.Categorical(["floor-only"] * len(floor))
    both = pd.concat([corpus.astype({"campaign": str}), floor.astype({"campaign": str})], ignore_index=True)
    assert [str(r) for r in runs_of(both).names] == ["quiet · c0"]
    assert {str(r) for r in runs_of(both, include_floor=True).names} == {"quiet · c0", "quiet · floor-only"}
