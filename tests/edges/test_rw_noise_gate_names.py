"""The noise_gate reward's P(q <= tau) is a function of a problem's data, not of the name a user gave the problem.

Each problem's posterior draws were seeded by the CRC-32 of its name, so renaming a problem (same rows) moved its
P: a candidate's p_gate read 0.0015 as p0000 and 0.004 as 'Ωx_0000p' (synthesize(seed=2), tau 30). DESIGN.md:
every figure is a function of the corpus as a set of rows, and names are data (any characters, any order). Now the
seed is hashed from the problem's own rows (status and the rank of each duration: d914456), so renaming, shuffling
and a change of unit change nothing, while problems with other data still draw other streams.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from audits.corpus.synthetic import synthesize
from stats.ranking import select_runs
from stats.rewards import Environment, apply_environment, problem_data_seed

ODD = ["Ωx_Ä", "🙂 problem", "ق-مسألة", "p\x00nul", " ", "e\u0301 \"quoted\" a/b\\c", "zz", "AAA"]


def _env():
    return Environment.from_dict({"name": "ng", "post": {"tau": 30}, "reward": {"scheme": "noise_gate"}})


@pytest.fixture(scope="module")
def runs():
    synth = synthesize(n_problems=6, n_tests=3, n_correctness_tests=1, n_solutions=7, n_incorrect=1,
                       n_candidates=2, n_repeats=3, seed=2)
    out = select_runs(synth.corpus, environment="quiet", campaign="c0")
    out = out[out["role"].astype(str) != "floor"].reset_index(drop=True)
    out["problem"] = out["problem"].astype(str)
    return out


def _p_gate(runs, per_repeat):
    scores = apply_environment(runs, _env(), per_repeat=per_repeat).scores
    by = ["problem", "solution"] + (["repeat"] if per_repeat else [])
    out = scores[by + ["p_gate"]].copy()
    for k in ("problem", "solution"):
        out[k] = out[k].astype(str)
    return out.sort_values(by).reset_index(drop=True), by


@pytest.mark.parametrize("per_repeat", (True, False))
def test_renamed_and_shuffled_problems_keep_their_p_gate(runs, per_repeat):
    base, by = _p_gate(runs, per_repeat)
    # some P strictly between 0 and 1, where the draws matter
    assert ((base["p_gate"] > 0) & (base["p_gate"] < 1)).any()
    names = sorted(runs["problem"].unique())
    mapping = dict(zip(names, ODD[:len(names)][::-1]))  # other names, in another sort order
    renamed = runs.assign(problem=runs["problem"].map(mapping))
    renamed = renamed.iloc[np.random.default_rng(3).permutation(len(renamed))].reset_index(drop=True)
    other, _ = _p_gate(renamed, per_repeat)
    back = {v: k for k, v in mapping.items()}
    other["problem"] = other["problem"].map(back)
    other = other.sort_values(by).reset_index(drop=True)
    pd.testing.assert_frame_equal(base[by], other[by])
    np.testing.assert_array_equal(base["p_gate"].to_numpy(), other["p_gate"].to_numpy())


def test_problems_with_other_data_draw_other_streams(runs):
    """An exact copy under another name keeps the original's P bit for bit, and so does a copy with every duration
    doubled: the same timings read in another unit, since the seed hashes the durations' ranks, not their values
    (d914456; the noise model of the doubled copy is the original's shifted by log 2, so with the same stream its P
    is the same). A problem whose durations order differently (two of its values swapped between cells) is other
    data and gets its own seed."""
    first = sorted(runs["problem"].unique())[0]
    mine = runs[runs["problem"] == first]
    doubled = mine.assign(problem="doubled", duration_s=mine["duration_s"] * 2.0)
    copy = mine.assign(problem="copy")
    table = pd.concat([mine, doubled, copy], ignore_index=True)
    scores, by = _p_gate(table, True)
    p = {name: block["p_gate"].to_numpy() for name, block in scores.groupby("problem")}
    inner = (p[first] > 0) & (p[first] < 1)
    assert inner.sum() >= 3  # the premise: P is drawn (neither 0 nor 1) on some units
    np.testing.assert_array_equal(p[first], p["copy"])
    np.testing.assert_array_equal(p[first], p["doubled"])
    ok = np.flatnonzero((mine["status"].astype(str) == "ok").to_numpy())
    d = mine["duration_s"].to_numpy()
    i, j = ok[np.argmin(d[ok])], ok[np.argmax(d[ok])]
    swapped = mine.copy()
    swapped.iloc[[i, j], swapped.columns.get_loc("duration_s")] = [d[j], d[i]]
    assert problem_data_seed(swapped) != problem_data_seed(mine)
    assert problem_data_seed(doubled) == problem_data_seed(mine) == problem_data_seed(copy)
