"""The one rule for calibration pairs (audits.corpus.selection, issue 23 item 3), checked against an
independent computation on a multi-environment, multi-campaign corpus with planted noise levels."""

import numpy as np
import pandas as pd
import pytest

from audits.corpus.runs import Run, RunError, runs_of
from audits.corpus.selection import choose_pairs
from audits.corpus.synthetic import synthesize
from audits.report.inputs import suggest_runs

#: Environment names with characters a parser would split on; planted repeat noise, quietest "m:2".
NOISE = {"m/1": 0.10, "m:2": 0.01, "m 3": 0.30}
CAMPAIGNS = {"c1": "2026-03-01", "c0": "2026-01-01", "c2": "2026-02-01"}  # time order c0, c2, c1


@pytest.fixture(scope="module")
def corpus():
    frames = []
    for k, (env, cv) in enumerate(NOISE.items()):
        for j, (camp, day) in enumerate(CAMPAIGNS.items()):
            f = synthesize(n_problems=3, n_tests=2, n_solutions=4, n_repeats=4, n_incorrect=0, n_candidates=0,
                           noise_cv=cv, environments=(env,), campaigns=((camp, 1.0, 0.0),), seed=10 * k + j,
                           floor_rows=0).corpus
            frames.append(f.astype({c: str for c in ("environment", "campaign", "problem", "test", "solution",
                                                     "role", "status")}).assign(timestamp=day))
    out = pd.concat(frames, ignore_index=True)
    return out.astype({c: "category" for c in ("environment", "campaign", "problem", "test", "solution", "role",
                                               "status")})


def expected_pairs(corpus):
    """The documented default pairs, computed independently with plain Python loops."""
    rows = corpus[(corpus["role"].astype(str) == "reference") & (corpus["status"].astype(str) == "ok")]
    cells = {}
    for r in rows.itertuples():
        cells.setdefault((r.environment, r.campaign, r.problem, r.test, r.solution), []).append(r.duration_s)
    per_run = {}
    for (e, c, *_), values in cells.items():
        if len(values) >= 2 and np.mean(values) > 0:
            per_run.setdefault((e, c), []).append(np.std(values, ddof=1) / np.mean(values))
    quiet = {run: float(np.median(v)) for run, v in per_run.items()}
    envs = sorted({e for e, _ in quiet})
    by_time = sorted(CAMPAIGNS, key=CAMPAIGNS.get)
    stored = sorted(envs, key=lambda e: (quiet[(e, by_time[0])], e))
    out = [((e, by_time[0]), (e, later), "stored->fresh") for e in stored for later in by_time[1:]]
    for c in sorted(CAMPAIGNS):
        q = min(envs, key=lambda e: (quiet[(e, c)], e))
        out += [((e, c), (q, c), "vs-quietest") for e in envs if e != q]
    return out


def as_tuples(choices):
    return [((p.source.environment, p.source.campaign), (p.target.environment, p.target.campaign), p.rule)
            for p in choices]


def test_default_pairs_are_the_documented_ones(corpus):
    expected = expected_pairs(corpus)
    assert as_tuples(choose_pairs(corpus)) == expected
    # The planted quietest environment is the target of every vs-quietest pair (never "the first two found").
    assert {t[0] for _, t, rule in expected if rule == "vs-quietest"} == {"m:2"}


def test_shuffled_rows_and_reversed_categories_give_the_same_pairs(corpus):
    shuffled = corpus.sample(frac=1.0, random_state=3).reset_index(drop=True)
    for c in ("environment", "campaign"):
        shuffled[c] = shuffled[c].cat.reorder_categories(list(shuffled[c].cat.categories)[::-1])
    assert as_tuples(choose_pairs(shuffled)) == as_tuples(choose_pairs(corpus)) == expected_pairs(corpus)


def test_without_an_order_no_stored_campaign_is_guessed(corpus):
    unordered = corpus.drop(columns="timestamp")
    assert {p.rule for p in choose_pairs(unordered)} == {"vs-quietest"}
    # The order of the files on the command line (runs_of(order=...)) makes the campaigns ordered again.
    order = [Run(e, c) for c in ("c1", "c0", "c2") for e in NOISE]
    stored = [p for p in choose_pairs(unordered, runs=runs_of(unordered, order=order)) if p.rule == "stored->fresh"]
    assert stored and all(p.source.campaign == "c1" for p in stored)


def test_named_pairs_win_in_the_order_and_direction_given(corpus):
    named = [(["m 3", "c2"], ["m/1", "c0"]), ({"environment": "m:2", "campaign": "c1"}, ["m 3", "c2"])]
    chosen = choose_pairs(corpus, named=named)
    assert [(str(p.source), str(p.target), p.rule) for p in chosen] == [
        ("m 3 · c2", "m/1 · c0", "named"), ("m:2 · c1", "m 3 · c2", "named")]
    assert chosen[0].to_dict() == {"source": {"environment": "m 3", "campaign": "c2"},
                                   "target": {"environment": "m/1", "campaign": "c0"}, "rule": "named"}
    for bad in ([(["m 3", "zz"], ["m/1", "c0"])], [(["m 3", "c0"], ["m 3", "c0"])]):
        with pytest.raises(RunError):
            choose_pairs(corpus, named=bad)


def test_the_report_uses_the_first_pair_of_each_rule(corpus):
    expected = expected_pairs(corpus)
    first = {rule: (list(s), list(t)) for s, t, rule in reversed(expected)}
    runs = suggest_runs(corpus)
    assert (runs["stored_run"], runs["fresh_run"]) == first["stored->fresh"]
    assert (runs["source_run"], runs["target_run"]) == first["vs-quietest"]


def test_the_calibration_json_names_the_rule(corpus):
    from audits.checks.calibration import run_calibration_audit

    pair = choose_pairs(corpus, named=[(["m 3", "c0"], ["m:2", "c0"])])[0]
    audit = run_calibration_audit(corpus, source=pair.source, target=pair.target, n_boot=0, n_boot_rank=0,
                                  families=["affine"])
    data = audit.to_dict()
    assert data["pair_rule"] == pair.rule == "named"
    assert [(r["environment"], r["campaign"]) for r in data["source_runs"]] == [("m 3", "c0")]


def test_audit_all_calibrates_every_default_pair_with_its_rule(corpus):
    """Without a named pair, the whole audit's calibration covers exactly the documented default pairs (the
    independent loop above), in order, each result naming its rule; the same after shuffling the rows."""
    from audits.engine.whole_audit import run_whole_audit

    def chosen(frame):
        whole = run_whole_audit(frame, audits=["calibration"], n_boot=0, n_boot_rank=0,
                                calibration_options={"families": ("affine",)})
        return [((a.source_runs[0].environment, a.source_runs[0].campaign),
                 (a.target_runs[0].environment, a.target_runs[0].campaign), a.pair_rule) for a in whole.calibration]

    expected = expected_pairs(corpus)
    assert len(expected) == 12 and chosen(corpus) == expected
    shuffled = corpus.iloc[np.random.default_rng(5).permutation(len(corpus))].reset_index(drop=True)
    assert chosen(shuffled) == expected
