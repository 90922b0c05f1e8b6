"""fixtures/corpora/designs.py: issue 25's design table and reward comparison.

Planted truth on a folder of synthetic campaigns named as the shipped ones (a design that *is* the
reference ordering has tau-b 1, the reversed ordering -1, doubled durations cost 2x, constant counts have
sd 0), the cost against an independent pandas merge, and the table of the real shipped corpora.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("designs", ROOT / "fixtures" / "corpora" / "designs.py")
designs = importlib.util.module_from_spec(SPEC)
sys.modules["designs"] = designs  # dataclasses look their module up there
SPEC.loader.exec_module(designs)


_text = designs._as_text  # categoricals as plain text, so synthetic corpora can be relabelled


def _run(frame: pd.DataFrame, environment: str, campaign: str) -> pd.DataFrame:
    return frame.assign(environment=environment, campaign=campaign)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Synthetic campaigns under the shipped names, with planted relations to the reference (pool-a = quiet-b)."""
    path = tmp_path_factory.mktemp("designs")
    spec = dict(n_problems=4, n_tests=3, n_correctness_tests=0, n_solutions=8, n_incorrect=0, n_candidates=0,
                n_repeats=5, filterable_share=0.0)  # narrow spans: no timeout, so a reversed clock reverses q
    truth = _text(synthesize(seed=3, **spec).corpus)
    truth["cpu_s"] = truth["duration_s"] * 0.9
    noisy = _text(synthesize(seed=4, **spec).corpus)
    noisy["cpu_s"] = noisy["duration_s"] * 0.95
    ok = (truth["status"] == "ok").to_numpy()
    assert ok.all() and (noisy["status"] == "ok").all()
    files = {
        "pool-a": _run(truth, "pool", "pool-a"),
        "quiet-b": _run(truth, "quiet", "quiet-b"),
        "quiet-a": _run(noisy, "quiet", "quiet-a"),
        designs.DAYS_APART_FILE: _run(truth, "pool", "pool-old"),  # the repeat table's other day
        # the wall time is the reference's CPU time: the same ordering (tau-b 1)
        "quiet-unpinned": _run(truth.assign(duration_s=truth["cpu_s"]), "quiet-unpinned", "quiet-u"),
        # every execution of quiet-a twice as long: cost 2
        "adaptive-a": _run(noisy.assign(duration_s=2 * noisy["duration_s"]), "quiet", "adaptive-a"),
        # the reversed ordering (tau-b -1)
        "busy-a": _run(truth.assign(duration_s=np.where(ok, 1.0 / truth["cpu_s"], truth["duration_s"])),
                       "busy", "busy-a"),
    }
    counted = truth.copy()
    cell_cpu = counted.groupby(["problem", "test", "solution"])["cpu_s"].transform("median")
    counted["instructions"] = np.round(cell_cpu * 1e9)  # one count per cell: no repeat variation
    files["counted-a"] = _run(counted, "quiet", "counted-a")
    for name, frame in files.items():
        save_corpus(frame, path / f"{name}.parquet")
    return path


@pytest.fixture(scope="module")
def computed(folder):
    """The design table of :func:`folder`, computed once for the module (its users read it, none changes it)."""
    return designs.design_table(n_boot=20, folder=folder)


@pytest.fixture(scope="module")
def table(computed):
    return computed.set_index(["corpus", "measure"])


def test_a_design_ordering_solutions_as_the_reference_has_tau_one_and_the_reversed_minus_one(table):
    assert table.loc[("quiet-unpinned", "duration_s"), "tau_b"] == pytest.approx(1.0, abs=1e-12)
    assert table.loc[("busy-a", "duration_s"), "tau_b"] == pytest.approx(-1.0, abs=1e-12)
    assert table.loc[("counted-a", "instructions"), "tau_b"] == pytest.approx(1.0, abs=1e-12)
    assert table.loc[("quiet-a", "duration_s"), "tau_b"] < 1.0  # another corpus: not the reference's order


def test_cost_is_relative_to_five_fixed_wall_time_repeats_on_the_same_cells(table, folder):
    assert table.loc[("quiet-a", "duration_s"), "cost"] == 1.0
    assert table.loc[("quiet-a", "cpu_s"), "cost"] == 1.0  # the same campaign, read with another clock
    assert table.loc[("adaptive-a", "duration_s"), "cost"] == pytest.approx(2.0, rel=1e-12)
    # independent: a pandas merge of the design's cells onto quiet-a's executions
    counted = pd.read_parquet(folder / "counted-a.parquet")
    base = pd.read_parquet(folder / "quiet-a.parquet")
    keys = ["problem", "test", "solution"]
    counted, base = (f[f["role"].astype(str) != "floor"] for f in (counted, base))
    cells = counted[keys].astype(str).drop_duplicates()
    paid = base.astype({k: str for k in keys}).merge(cells, on=keys)["duration_s"].sum()
    assert table.loc[("counted-a", "instructions"), "cost"] == pytest.approx(counted["duration_s"].sum() / paid,
                                                                            rel=1e-12)


def test_constant_counts_have_no_repeat_sd_and_the_target_names_what_is_missed(table):
    assert table.loc[("counted-a", "instructions"), "score_sd"] == 0.0
    assert table.loc[("busy-a", "duration_s"), "target"].startswith("missed:")
    assert "tau-b 1.90 short" in table.loc[("busy-a", "duration_s"), "target"]
    assert designs._missed(2.0, 0.95, 2.5) == "MET"
    assert designs._missed(4.2, 0.95, 6.0) == "missed: sd 2.0x the 2.1; cost 2.0x the 3x"
    assert designs._missed(math.nan, 0.95, 1.0) == "n/a: sd"


def test_the_table_does_not_depend_on_row_order(folder, computed, tmp_path):
    for name in designs.DESIGNS[0].corpus, "pool-a":
        frame = pd.read_parquet(folder / f"{name}.parquet")
        save_corpus(frame.sample(frac=1.0, random_state=1).reset_index(drop=True), tmp_path / f"{name}.parquet")
    for path in folder.glob("*.parquet"):
        if not (tmp_path / path.name).exists():
            (tmp_path / path.name).write_bytes(path.read_bytes())
    b = designs.design_table(n_boot=20, folder=tmp_path)
    pd.testing.assert_frame_equal(computed, b, check_exact=False, rtol=1e-12)  # the in-order table: the fixture's


def test_the_reward_table_ranks_the_three_rewards_of_every_clock(folder):
    rewards = designs.reward_table(n_boot=20, folder=folder)
    assert len(rewards) == len(designs.REWARD_RUNS) * len(designs.REWARD_ENVIRONMENTS)
    for _, block in rewards.groupby(["corpus", "measure"]):
        assert sorted(block["rank"]) == [1, 2, 3]
        assert set(block["reward_environment"]) == set(designs.REWARD_ENVIRONMENTS)
    assert np.isfinite(rewards["diagonal_deviation"]).all()


@pytest.mark.slow
def test_the_shipped_corpora_give_a_full_design_table():
    """Every design of the shipped corpora measured: finite stability, faithfulness and cost, cost 1 at the
    baseline, and the instruction clock the most stable (counts do not vary with the machine)."""
    table = designs.design_table(n_boot=20).set_index(["corpus", "measure"])
    assert len(table) == len(designs.DESIGNS)
    assert np.isfinite(table[["score_sd", "tau_b", "cost"]].to_numpy(dtype=float)).all()
    assert table.loc[("quiet-a", "duration_s"), "cost"] == 1.0
    assert table["score_sd"].idxmin() == ("counted-a", "instructions")


def test_the_design_campaigns_match_their_manifest():
    """fixtures/corpora/designs/ (kept out of the shipped corpora): each file is one run, as its entry says."""
    import json

    from audits.corpus.io import load_corpus

    folder = ROOT / "fixtures" / "corpora" / "designs"
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert {f.name for f in folder.glob("*.parquet")} == set(manifest["corpora"])
    for name, entry in manifest["corpora"].items():
        corpus = load_corpus(folder / name)
        assert len(corpus) == entry["rows"], name
        assert corpus["environment"].astype(str).unique().tolist() == [entry["environment"]], name
        assert corpus["campaign"].astype(str).unique().tolist() == [entry["campaign"]], name
        assert entry["command"].startswith("speedaudit collect fixtures/suites/speedbench"), name
    counted = load_corpus(folder / "counted-a.parquet")
    ok = counted["status"].astype(str) == "ok"
    assert counted.loc[ok, "instructions"].notna().all()  # every ok run counted
    per_cell = counted[ok].groupby(["problem", "test", "solution"], observed=True)["instructions"].nunique()
    assert (per_cell == 1).all()  # counts repeat exactly (the counted run fixes PYTHONHASHSEED)


# -- re-execution: the median of k repeats per cell ------------------------------------------------------------

def _cell_rows(campaign: str, durations, status: str = "ok") -> list[dict]:
    return [{"environment": "quiet", "campaign": campaign, "problem": "p", "test": "t", "solution": "s",
             "repeat": r, "duration_s": d, "cpu_s": d / 2, "status": status, "role": "reference"}
            for r, d in enumerate(durations)]


def test_collapse_repeats_takes_the_median_of_each_block_of_k():
    frame = pd.DataFrame(_cell_rows("c1", [5.0, 1.0, 3.0, 2.0, 9.0]) + _cell_rows("c2", [10.0, 20.0, 30.0, 40.0, 50.0])
                         + [{**_cell_rows("c1", [0.5])[0], "problem": "_floor", "role": "floor"}])
    two = designs.collapse_repeats(frame, 2, campaign="x").sort_values("repeat")
    # blocks (0, 1) and (2, 3) of each campaign; repeat 4 is left over; the floor row is not a program
    assert two["duration_s"].tolist() == [3.0, 2.5, 15.0, 35.0]
    assert two["cpu_s"].tolist() == [1.5, 1.25, 7.5, 17.5]
    assert two["repeat"].tolist() == [0, 1, 2, 3]
    assert set(two["campaign"]) == {"x"} and set(two["environment"]) == {designs.REPEAT_ENVIRONMENT}
    five = designs.collapse_repeats(frame, 5, campaign="x").sort_values("repeat")
    assert five["duration_s"].tolist() == [3.0, 30.0]
    first = designs.collapse_repeats(frame, 2, campaign="x", blocks=(0,)).sort_values("repeat")
    assert first["duration_s"].tolist() == [3.0, 15.0]
    mixed = pd.DataFrame(_cell_rows("c1", [1.0, 2.0]) + _cell_rows("c1", [3.0], status="timeout"))
    mixed.loc[2, "repeat"] = 2
    with pytest.raises(ValueError, match="change status"):
        designs.collapse_repeats(mixed, 3, campaign="x")


def test_components_recover_planted_between_and_within_parts():
    # planted: the repeats' own variance 9/k; a second campaign back to back adds 1, a day apart 16
    rows = [{"k": k, "sd_within": math.sqrt(9 / k) if k <= 2 else math.nan, "sd_session": math.sqrt(1 + 9 / k),
             "sd_day": math.sqrt(16 + 9 / k)} for k in (1, 2, 3, 5)]
    parts = designs.components(rows)
    assert parts["between_session_by_k"] == pytest.approx({1: 1.0, 2: 1.0}, rel=1e-12)
    assert parts["between_day_by_k"] == pytest.approx({1: 4.0, 2: 4.0}, rel=1e-12)
    assert parts["k_within"] == math.ceil(9 / designs.TARGET_SD ** 2) == 3
    assert parts["one_over_k_check"] == pytest.approx(1.0, rel=1e-12)


@pytest.fixture(scope="module")
def same_campaigns(tmp_path_factory):
    """pool-a, quiet-a, quiet-b and the other day's: one synthetic campaign four times (repeats vary, campaigns do
    not)."""
    path = tmp_path_factory.mktemp("same")
    spec = dict(n_problems=4, n_tests=3, n_correctness_tests=0, n_solutions=8, n_incorrect=0, n_candidates=0,
                n_repeats=5, filterable_share=0.0)
    campaign = _text(synthesize(seed=5, **spec).corpus)
    # CPU time ordered otherwise than wall time, so that a table reading the wrong clock shows
    campaign["cpu_s"] = campaign["duration_s"] * np.random.default_rng(5).uniform(0.3, 1.0, len(campaign))
    for name, (env, camp) in {"pool-a": ("pool", "pool-a"), "quiet-a": ("quiet", "quiet-a"),
                              "quiet-b": ("quiet", "quiet-b"), designs.DAYS_APART_FILE: ("pool", "pool-old")}.items():
        save_corpus(_run(campaign, env, camp), path / f"{name}.parquet")
    return path


def test_identical_campaigns_have_no_day_to_day_part(same_campaigns):
    from audits.checks.clocks import run_clocks_audit, use_measure
    from audits.checks.reliability import run_reliability_audit
    from audits.corpus.io import load_corpus, normalize
    from audits.corpus.runs import Run

    table, fits = designs.repeat_table(n_boot=20, folder=same_campaigns)
    table = table.set_index(["measure", "k"])
    assert len(table) == len(designs.REPEAT_MEASURES) * len(designs.REPEAT_KS)
    for measure, _ in designs.REPEAT_MEASURES:
        # identical replicates of the median of all 5 repeats (one per campaign): no sd at all; one repeat varies
        for label in ("session", "day"):
            assert table.loc[(measure, 5), f"sd_{label}"] == 0.0
            assert table.loc[(measure, 1), f"sd_{label}"] > 0.0
            assert fits[measure][f"between_{label}_by_k"][1] == pytest.approx(0.0, abs=1e-9)
        assert np.isnan(table.loc[(measure, 3), "sd_within"]) and np.isnan(table.loc[(measure, 5), "sd_within"])
    # independent: k = 1 is quiet-a itself, whose repeat sd the reliability audit's finding gives on the raw rows;
    # k = 5's faithfulness is the clock audit's on the raw 5 repeats (it scores each cell's median)
    raw = _text(load_corpus(same_campaigns / "quiet-a.parquet"))
    for measure, _ in designs.REPEAT_MEASURES:
        audited = run_reliability_audit(use_measure(raw, measure), n_boot=20)
        finding = next(f for f in audited.findings if f.metric == "mean_rank_sd")
        assert table.loc[(measure, 1), "sd_within"] == pytest.approx(finding.value, rel=1e-12)
    assert table.loc[("duration_s", 1), "sd_within"] != table.loc[("cpu_s", 1), "sd_within"]
    reference = pd.concat(designs.reference_parts(same_campaigns), ignore_index=True)
    audit = run_clocks_audit(normalize(pd.concat([raw, reference], ignore_index=True), source="test"),
                             measures=["duration_s", "cpu_s"], n_boot=0, reference=Run(*designs.REFERENCE_RUN))
    own = audit.table.assign(campaign=lambda t: t["campaign"].astype(str)).set_index(["campaign", "measure"])
    for measure, _ in designs.REPEAT_MEASURES:
        assert table.loc[(measure, 5), "tau_b"] == pytest.approx(own.loc[("quiet-a", measure), "faithfulness"],
                                                                 rel=1e-12)
    # the cost: the share of quiet-a's execution seconds the first k repeats took (pandas, independently)
    programs = raw[raw["role"].astype(str) != "floor"]
    for k in designs.REPEAT_KS:
        share = programs.loc[programs["repeat"] < k, "duration_s"].sum() / programs["duration_s"].sum()
        assert table.loc[("cpu_s", k), "cost"] == pytest.approx(share, rel=1e-12)


def test_campaigns_of_different_suites_compare_on_the_cells_they_share(same_campaigns, tmp_path):
    # the other day's campaign lacks one test and holds another, timed in reverse: read whole, its scores would
    # differ from quiet-a's; on the shared cells it is quiet-a itself, so the median of 5 has no day-to-day sd
    for path in same_campaigns.glob("*.parquet"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    other = _text(pd.read_parquet(same_campaigns / f"{designs.DAYS_APART_FILE}.parquet"))
    programs = other["role"] != "floor"
    problem = sorted(other.loc[programs, "problem"].unique())[0]
    dropped = sorted(other.loc[programs & (other["problem"] == problem), "test"].unique())[0]
    moved = (other["problem"] == problem) & (other["test"] == dropped)
    other.loc[moved, "test"] = "added-later"
    other.loc[moved, "duration_s"] = 1.0 / other.loc[moved, "duration_s"]
    other.loc[moved, "cpu_s"] = 1.0 / other.loc[moved, "cpu_s"]
    save_corpus(other, tmp_path / f"{designs.DAYS_APART_FILE}.parquet")
    table = designs.repeat_table(n_boot=20, folder=tmp_path)[0].set_index(["measure", "k"])
    for measure, _ in designs.REPEAT_MEASURES:
        assert table.loc[(measure, 5), "sd_day"] == 0.0
    # and the cuts are the cells both hold (pandas, independently), floor rows kept
    quiet = _text(pd.read_parquet(same_campaigns / "quiet-a.parquet"))
    cut_other, cut_quiet = designs.shared_cells([other, quiet])
    keep = ~((quiet["problem"] == problem) & (quiet["test"] == dropped))
    pd.testing.assert_frame_equal(cut_quiet, quiet.loc[keep])
    pd.testing.assert_frame_equal(cut_other, other.loc[other["test"] != "added-later"])
    # read whole (the cut undone), the reversed test shows as a day-to-day part
    whole = designs.collapse_repeats(designs._stack([other, quiet]), 5, campaign="whole")
    assert designs.repeat_sd(whole, "duration_s", n_boot=20).estimate > 0.0


def test_the_repeat_table_does_not_depend_on_row_order(folder, tmp_path):
    for path in folder.glob("*.parquet"):
        frame = pd.read_parquet(path)
        save_corpus(frame.sample(frac=1.0, random_state=2).reset_index(drop=True), tmp_path / path.name)
    a, fits_a = designs.repeat_table(n_boot=20, folder=folder)
    b, fits_b = designs.repeat_table(n_boot=20, folder=tmp_path)
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
    for measure, parts in fits_a.items():
        for key, value in parts.items():
            assert value == (pytest.approx(fits_b[measure][key], rel=1e-12, nan_ok=True)
                             if value is not None else fits_b[measure][key]), key


@pytest.fixture(scope="module")
def long_campaign(tmp_path_factory):
    """repeats-a: one synthetic campaign of 16 repeats (k = 15: one block), beside the reference's two files."""
    path = tmp_path_factory.mktemp("long")
    spec = dict(n_problems=4, n_tests=3, n_correctness_tests=0, n_solutions=8, n_incorrect=0, n_candidates=0,
                filterable_share=0.0)
    truth = _text(synthesize(seed=6, n_repeats=5, **spec).corpus)
    truth["cpu_s"] = truth["duration_s"] * 0.9
    for name, (env, camp) in {"pool-a": ("pool", "pool-a"), "quiet-b": ("quiet", "quiet-b")}.items():
        save_corpus(_run(truth, env, camp), path / f"{name}.parquet")
    long = _text(synthesize(seed=7, n_repeats=16, **spec).corpus)
    long["cpu_s"] = long["duration_s"] * np.random.default_rng(7).uniform(0.3, 1.0, len(long))
    save_corpus(_run(long, "quiet", "repeats-a"), path / "repeats-a.parquet")
    return path


def test_the_within_campaign_table_replicates_blocks_of_one_long_campaign(long_campaign):
    from audits.checks.clocks import use_measure
    from audits.checks.reliability import run_reliability_audit
    from audits.corpus.io import load_corpus

    table = designs.within_table(n_boot=20, folder=long_campaign).set_index(["measure", "k"])
    assert len(table) == len(designs.REPEAT_MEASURES) * len(designs.WITHIN_KS)
    raw = _text(load_corpus(long_campaign / "repeats-a.parquet"))
    for measure, _ in designs.REPEAT_MEASURES:
        assert [table.loc[(measure, k), "blocks"] for k in designs.WITHIN_KS] == [16 // k for k in designs.WITHIN_KS]
        assert np.isnan(table.loc[(measure, 15), "sd"]) and table.loc[(measure, 15), "target"] == "n/a: sd"
        # k = 1: the campaign's own repeat sd, as the reliability audit's finding gives it on the raw rows
        finding = next(f for f in run_reliability_audit(use_measure(raw, measure), n_boot=20).findings
                       if f.metric == "mean_rank_sd")
        assert table.loc[(measure, 1), "sd"] == pytest.approx(finding.value, rel=1e-12)
    programs = raw[raw["role"].astype(str) != "floor"]
    five = programs.loc[programs["repeat"] < 5, "duration_s"].sum()
    for k in designs.WITHIN_KS:
        share = programs.loc[programs["repeat"] < k, "duration_s"].sum() / five
        assert table.loc[("duration_s", k), "cost"] == pytest.approx(share, rel=1e-12)
    assert table.loc[("duration_s", 5), "cost"] == 1.0


def test_a_campaign_whose_repeats_agree_has_no_sd_at_any_k(long_campaign, tmp_path):
    for name in ("pool-a", "quiet-b"):
        (tmp_path / f"{name}.parquet").write_bytes((long_campaign / f"{name}.parquet").read_bytes())
    frame = pd.read_parquet(long_campaign / "repeats-a.parquet")
    cells = ["problem", "test", "solution"]
    for measure in ("duration_s", "cpu_s"):  # every repeat of a cell takes its first repeat's time
        frame[measure] = frame.groupby(cells, observed=True)[measure].transform("first")
    save_corpus(frame, tmp_path / "repeats-a.parquet")
    table = designs.within_table(n_boot=20, folder=tmp_path)
    assert (table.loc[table["blocks"] >= 2, "sd"] == 0.0).all()


def test_repeat_level_recovers_a_planted_speed_per_repeat():
    rows = [{"problem": p, "test": "t", "solution": s, "repeat": r, "role": "reference",
             "cpu_s": base * factor} for p, s, base in (("a", "x", 0.1), ("a", "y", 0.4), ("b", "x", 2.0))
            for r, factor in enumerate((1.0, 1.3, 0.9, 1.1, 1.0))]
    rows.append({"problem": "_floor", "test": "e", "solution": "py", "repeat": 0, "role": "floor", "cpu_s": 99.0})
    level = designs.repeat_level(pd.DataFrame(rows))
    assert level.to_numpy() == pytest.approx(np.array([1.0, 1.3, 0.9, 1.1, 1.0]) / 1.0, rel=1e-12)
