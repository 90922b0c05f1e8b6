"""Languages in the estimators: per-language reference pools, floors and the floor-based aggregator.

Checked against scipy.stats.percentileofscore (kind="mean") on each language's pool and against
medians computed by hand, on corpora whose problems mix C++ and Python references.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import percentileofscore

from stats.aggregation import aggregate, floors_by_language
from stats.discriminability import sandbox_floor
from stats.ranking import POOLS_ATTR, percentile_table, reference_pools


#: on t1 the Python references are in the opposite order to t2 (so which tests a score keeps shows)
SWAP = {"p1": 1.6, "p2": 0.9, "p3": 1.0}


def mixed_corpus(seed: int = 0) -> pd.DataFrame:
    """Problem 'mix' has C++ (~1 ms) and Python (~40 ms) references; 'py' has Python only; one Java candidate."""
    rng = np.random.default_rng(seed)
    rows = []
    for problem, refs in (("mix", [("c1", "cpp", 1e-3), ("c2", "cpp", 2e-3), ("c3", "cpp", 3e-3),
                                   ("p1", "python", 0.04), ("p2", "python", 0.06), ("p3", "python", 0.05)]),
                          ("py", [("q1", "python", 0.05), ("q2", "python", 0.08), ("q3", "python", 0.07)])):
        for solution, language, base in refs + [("cand", "python", 0.055), ("jcand", "java", 0.03)]:
            role = "candidate" if solution.endswith("cand") else "reference"
            for test, k in (("t1", SWAP.get(solution, 1.0)), ("t2", 8.0)):
                for repeat in range(3):
                    rows.append({"problem": problem, "test": test, "solution": solution, "repeat": repeat,
                                 "duration_s": base * k * (1 + 0.01 * rng.standard_normal()), "status": "ok",
                                 "role": role, "correct": True, "language": language,
                                 "test_kind": "optimization"})
    for language, floor in (("cpp", 9e-4), ("python", 0.0318)):
        for repeat in range(5):
            rows.append({"problem": "_floor", "test": "empty", "solution": language, "repeat": repeat,
                         "duration_s": floor * (1 + 0.02 * repeat), "status": "ok", "role": "floor",
                         "correct": True, "language": language, "test_kind": "optimization"})
    return pd.DataFrame(rows)


def _medians(runs: pd.DataFrame) -> pd.Series:
    return runs.groupby(["problem", "test", "solution"])["duration_s"].median()


def test_pools_split_only_where_references_mix_languages_and_rank_like_scipy():
    runs = mixed_corpus()
    body = runs.loc[runs["role"] != "floor"]
    pools = reference_pools(body)
    assert set(pools.loc[pools["problem"] == "mix", "pool_language"]) == {"cpp", "python"}
    assert set(pools.loc[pools["problem"] == "py", "pool_language"]) == {""}
    med = _medians(body)
    lang = body.groupby("solution")["language"].first()
    refs = body.loc[body["role"] == "reference"]
    pct = percentile_table(body)
    for row in pct.itertuples():
        same_problem = refs.loc[refs["problem"] == row.problem]
        if row.problem == "mix":  # the pool of its own language
            same_problem = same_problem.loc[same_problem["language"] == lang[row.solution]]
        names = sorted(set(same_problem["solution"]) - {row.solution})
        pool = [med[(row.problem, row.test, s)] for s in names]
        if not pool:  # a Java candidate where the pools are per language: no pool of its language
            assert row.problem == "mix" and row.solution == "jcand" and np.isnan(row.percentile)
            continue
        expected = percentileofscore(pool, med[(row.problem, row.test, row.solution)], kind="mean")
        assert row.percentile == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("how", ["argument", "attrs"])
def test_one_pool_on_request(how):
    body = mixed_corpus().query("role != 'floor'")
    if how == "attrs":
        body = body.copy()
        body.attrs[POOLS_ATTR] = "one"
        pct = percentile_table(body)
    else:
        pct = percentile_table(body, by_language=False)
    med = _medians(body)
    refs = body.loc[body["role"] == "reference"]
    for row in pct.itertuples():
        names = sorted(set(refs.loc[refs["problem"] == row.problem, "solution"]) - {row.solution})
        pool = [med[(row.problem, row.test, s)] for s in names]
        expected = percentileofscore(pool, med[(row.problem, row.test, row.solution)], kind="mean")
        assert row.percentile == pytest.approx(expected, abs=1e-9)


def test_row_order_does_not_matter():
    body = mixed_corpus().query("role != 'floor'")
    a = percentile_table(body).sort_values(["problem", "test", "solution"]).reset_index(drop=True)
    shuffled = body.sample(frac=1.0, random_state=3)
    b = percentile_table(shuffled).sort_values(["problem", "test", "solution"]).reset_index(drop=True)
    assert np.array_equal(a["percentile"].to_numpy(), b["percentile"].to_numpy(), equal_nan=True)


def test_floors_per_language():
    runs = mixed_corpus()
    floors = sandbox_floor(runs)
    by_hand = runs.loc[runs["role"] == "floor"].groupby("language")["duration_s"].median()
    assert dict(zip(floors["language"].astype(str), floors["floor_s"])) == pytest.approx(by_hand.to_dict())
    assert floors_by_language(runs) == pytest.approx(by_hand.to_dict())
    pooled = sandbox_floor(runs, by_language=False)
    assert pooled["floor_s"].item() == pytest.approx(runs.loc[runs["role"] == "floor", "duration_s"].median())


def test_floor_pct_uses_each_rows_language_floor_and_pool():
    runs = mixed_corpus()
    body = runs.loc[runs["role"] != "floor"]
    pools = reference_pools(body)
    cells = percentile_table(body, pools=pools)
    scores = aggregate(pd.concat([cells, runs.loc[runs["role"] == "floor"]], ignore_index=True), pools,
                       name="floor_pct").set_index(["problem", "solution"])["score"]
    floors = runs.loc[runs["role"] == "floor"].groupby("language")["duration_s"].median()
    med = _medians(body)
    lang = body.groupby("solution")["language"].first()
    refs = body.loc[body["role"] == "reference"]
    for (problem, solution), score in scores.items():
        if solution == "jcand":
            continue
        mine = lang[solution]
        pool_refs = refs.loc[refs["problem"] == problem]
        if problem == "mix":
            pool_refs = pool_refs.loc[pool_refs["language"] == mine]
        kept = []
        for test in ("t1", "t2"):
            ref_median = np.median([med[(problem, test, s)] for s in sorted(set(pool_refs["solution"]))])
            if ref_median >= 2 * floors[mine]:
                kept.append(test)
        row = cells.loc[(cells["problem"] == problem) & (cells["solution"] == solution)].set_index("test")
        tests = kept or ["t1", "t2"]  # no test above the floor: mean_pct
        assert score == pytest.approx(row.loc[tests, "percentile"].mean(), abs=1e-9), (problem, solution)
    # Python t1 (~50-64 ms) is within 2x the 31.8 ms Python floor and is left out (with one pooled floor of
    # ~16 ms it would count): p1, slowest on t1 and fastest on t2, scores 0, not 50
    assert scores[("mix", "p1")] == 0.0
    p1 = cells.loc[(cells["problem"] == "mix") & (cells["solution"] == "p1")].set_index("test")["percentile"]
    assert p1["t1"] == 100.0 and p1["t2"] == 0.0


def test_cli_one_pool_option_reaches_the_pools(tmp_path):
    import argparse

    from audits.cli._common import add_corpus_input, read_corpus
    from audits.corpus.io import save_corpus

    path = save_corpus(mixed_corpus(), tmp_path / "mixed.parquet")
    parser = argparse.ArgumentParser()
    add_corpus_input(parser)
    for flags, split in (([], True), (["--one-pool"], False)):
        corpus = read_corpus(parser.parse_args([str(path), *flags]))
        body = corpus.loc[(corpus["role"] != "floor").to_numpy()]
        assert ("pool_language" in reference_pools(body).columns) == split
    plain = argparse.ArgumentParser()
    add_corpus_input(plain, pools=False)  # validate / convert do not rank
    with pytest.raises(SystemExit):
        plain.parse_args([str(path), "--one-pool"])
