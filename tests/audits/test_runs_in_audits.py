"""Every audit covers every run it is given, names it with its repeat count, and keeps the user's direction.

Issue 13, item 2: a corpus with two campaigns per environment gets reliability figures per campaign with
that campaign's own repeat count; campaigns named ``stored`` and ``fresh`` keep their direction in the
report; environment names with ``/`` and ``:`` work in every audit and in ``speedaudit report``;
calibration campaign against campaign runs on the full file.
"""

from __future__ import annotations

import html

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.calibration import run_calibration_audit
from audits.cli import main
from audits.corpus.io import normalize, save_corpus
from audits.corpus.runs import Run
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import run_discriminability_audit
from audits.checks.reliability import run_reliability_audit
from audits.report.inputs import calibrate_runs, suggest_runs
from audits.checks.reward_environments import load_reward_environments
from audits.checks.simulation import run_simulation_audit

ROOT = Path(__file__).resolve().parents[2]
STORED_FRESH = (("stored", 1.0, 0.0), ("fresh", 0.63, 0.053))  # fresh = 0.63 x stored + 53 ms (planted)
#: an environment named like a pyperf import, and one with markup in its name: a name is data, shown as written
#: (a report that passed it to Markdown as it is turned the rest of the line italic)
HOST, ODD = "host/Intel Xeon W-2255", "a:b <i>&amp;"


@pytest.fixture(scope="module")
def two_campaigns():
    """quiet and busy, each with campaigns stored (5 repeats) and fresh (3 repeats: repeats 3, 4 dropped)."""
    corpus = synthesize(n_problems=8, n_tests=4, n_solutions=8, n_repeats=5, n_candidates=2, busy=True,
                        campaigns=STORED_FRESH, seed=13).corpus
    keep = ~((corpus["campaign"] == "fresh").to_numpy() & (corpus["repeat"] >= 3).to_numpy())
    return corpus.loc[keep].reset_index(drop=True)


def _cell_cv(corpus):
    rows = corpus[(corpus["role"] == "reference") & corpus["correct"] & (corpus["status"] == "ok")
                  & (corpus["test_kind"] == "optimization")].astype({"environment": str, "campaign": str})
    cells = rows.groupby(["environment", "campaign", "problem", "test", "solution"], observed=True)["duration_s"]
    return (cells.std(ddof=1) / cells.mean()).dropna().groupby(level=["environment", "campaign"]).median()


def test_reliability_per_campaign_with_its_own_repeat_count(two_campaigns):
    audit = run_reliability_audit(two_campaigns, n_boot=30)
    expected_cv = _cell_cv(two_campaigns)
    assert {(r.environment, r.campaign) for r in audit.runs} == set(expected_cv.index)
    for run, result in audit.runs.items():
        assert result.n_repeats == {"stored": 5, "fresh": 3}[run.campaign]
        assert result.run_summary.repeats == result.n_repeats
        assert result.median_repeat_cv.estimate == pytest.approx(expected_cv[run.environment, run.campaign],
                                                                 rel=1e-9)
        ranges = [f for f in audit.findings if f.metric == "mean_rank_range" and f.campaign == run.campaign
                  and f.environment == run.environment]
        assert len(ranges) == 1 and f"across {result.n_repeats} repeats" in ranges[0].message
    text = audit.summary()
    assert "quiet · stored (5 repeats)" in text and "quiet · fresh (3 repeats)" in text
    data = json.loads(json.dumps(audit.to_dict()))
    assert {(r["environment"], r["campaign"], r["n_repeats"]) for r in data["runs"]} == {
        (e, c, {"stored": 5, "fresh": 3}[c]) for e in ("quiet", "busy") for c in ("stored", "fresh")}
    # the audit restricted to one run gives that run's figures exactly
    only = run_reliability_audit(two_campaigns, environment="quiet", campaign="fresh", n_boot=30)
    assert list(only.runs) == [Run("quiet", "fresh")]
    assert only.to_dict()["runs"] == [audit.result("quiet", "fresh").to_dict()]


def test_discriminability_and_aggregation_cover_every_run(two_campaigns):
    dis = run_discriminability_audit(two_campaigns, n_boot=30)
    assert len(dis.runs) == 4 and all(r.run_summary is not None for r in dis.runs.values())
    assert "busy · fresh (3 repeats)" in dis.summary()
    agg = run_aggregation_audit(two_campaigns, environment="quiet", n_boot=30, names=["mean_pct", "worst_pct"])
    assert [k for k, _ in agg.comparisons] == [("quiet", "stored"), ("quiet", "fresh")] or \
        sorted(k for k, _ in agg.comparisons) == [("quiet", "fresh"), ("quiet", "stored")]
    assert {(r.campaign, r.repeats) for r in agg.runs} == {("stored", 5), ("fresh", 3)}
    assert "(3 repeats)" in agg.summary() and set(agg.table["repeats"]) == {3, 5}


def _with_timestamps(corpus, first: str, second: str):
    stamps = {first: "2026-01-05T09:00:00+00:00", second: "2026-03-05T09:00:00+00:00"}
    return corpus.assign(timestamp=corpus["campaign"].astype(str).map(stamps))


def test_stored_and_fresh_keep_their_direction(two_campaigns, tmp_path):
    # 'fresh' sorts before 'stored': a name sort would compute fresh -> stored (slope 1/0.63 = 1.59).
    corpus = _with_timestamps(two_campaigns, "stored", "fresh")
    runs = suggest_runs(corpus)
    assert (runs["stored_run"], runs["fresh_run"]) == (["quiet", "stored"], ["quiet", "fresh"])
    audit = calibrate_runs(corpus, runs["stored_run"], runs["fresh_run"], n_boot=100, n_boot_rank=10)
    slope = audit.params.query("family == 'affine'").set_index("param").loc["slope"]
    assert slope["ci_low"] < 0.63 < slope["ci_high"] and (audit.source, audit.target) == ("stored", "fresh")
    assert [str(r) for r in audit.source_runs] == ["quiet · stored (5 repeats)"]
    assert [str(r) for r in audit.target_runs] == ["quiet · fresh (3 repeats)"]
    # The opposite timestamps name the opposite direction: the data decides, not the names.
    flipped = suggest_runs(_with_timestamps(two_campaigns, "fresh", "stored"))
    assert (flipped["stored_run"], flipped["fresh_run"]) == (["quiet", "fresh"], ["quiet", "stored"])
    # Without timestamps, two files given in the order stored, fresh are an explicit order ...
    from audits.report.inputs import load_corpora

    paths = []
    for campaign in ("stored", "fresh"):
        part = two_campaigns.loc[(two_campaigns["campaign"] == campaign).to_numpy()]
        paths.append(save_corpus(part.astype({"campaign": str}), tmp_path / f"{campaign}.parquet"))
    stacked = load_corpora(paths)
    by_files = suggest_runs(stacked, order=stacked.attrs["run_order"])
    assert (by_files["stored_run"], by_files["fresh_run"]) == (["quiet", "stored"], ["quiet", "fresh"])
    # ... and one file without timestamps does not say which is older: no guess, an n/a with what to do.
    guess = suggest_runs(two_campaigns)
    assert guess["stored_run"] is guess["fresh_run"] is None
    skipped = calibrate_runs(two_campaigns, guess["stored_run"], guess["fresh_run"])
    assert skipped.findings[0].level == "n/a" and "stored_run=[ENV, CAMPAIGN]" in skipped.findings[0].message


def test_calibration_campaign_against_campaign_on_the_full_file(two_campaigns, tmp_path):
    path = save_corpus(two_campaigns, tmp_path / "full.parquet")
    # names of one column cannot say "busy's campaigns" in a file where quiet has only one of them
    partial = two_campaigns.loc[~((two_campaigns["environment"] == "quiet").to_numpy()
                                  & (two_campaigns["campaign"] == "fresh").to_numpy())]
    with pytest.raises(ValueError, match="spans"):
        run_calibration_audit(partial, source="stored", target="fresh", key="campaign", n_boot=10)
    runs_only = run_calibration_audit(partial, source=("busy", "stored"), target=("busy", "fresh"), n_boot=20,
                                      n_boot_rank=5)
    assert runs_only.pairing.n_problems == 8
    out = tmp_path / "cal.json"
    assert main(["audit", "calibration", str(path), "--environment", "busy", "--source-campaign", "stored",
                 "--target-campaign", "fresh", "--n-boot", "60", "--n-boot-rank", "10", "--json", str(out)]) in (0,)
    data = json.loads(out.read_text())
    assert (data["source"], data["target"], data["key"]) == ("stored", "fresh", "campaign")
    assert [(r["environment"], r["campaign"], r["repeats"]) for r in data["source_runs"]] == [("busy", "stored", 5)]
    # the same numbers as the audit of a hand-cut subset of that environment
    busy = two_campaigns.loc[(two_campaigns["environment"] == "busy").to_numpy()]
    by_hand = run_calibration_audit(busy, source="stored", target="fresh", n_boot=60, n_boot_rank=10)
    assert data["fits"]["affine"]["params"] == pytest.approx(by_hand.to_dict()["fits"]["affine"]["params"])
    assert data["findings"] == json.loads(json.dumps(by_hand.to_dict()["findings"]))
    # the direction is the user's: target onto source gives the inverse map
    forth = run_calibration_audit(two_campaigns, source=Run("quiet", "stored"), target=("quiet", "fresh"), n_boot=20,
                                  n_boot_rank=5)
    back = run_calibration_audit(two_campaigns, source=Run("quiet", "fresh"), target=("quiet", "stored"), n_boot=20,
                                 n_boot_rank=5)
    assert forth.fit("affine").params["slope"] == pytest.approx(0.63, abs=0.03)
    assert back.fit("affine").params["slope"] == pytest.approx(1 / forth.fit("affine").params["slope"], rel=0.05)
    assert forth.findings[0].subject == "quiet · stored -> quiet · fresh"
    # runs of two environments in different campaigns: environment against environment
    across = run_calibration_audit(two_campaigns, source=("quiet", "stored"), target=("busy", "fresh"), n_boot=20,
                                   n_boot_rank=5)
    assert across.key == "environment" and (across.source, across.target) == ("quiet", "busy")
    # `speedaudit calibrate` maps only the source run's rows
    cal_out = tmp_path / "calibrated.parquet"
    assert main(["calibrate", str(path), "--environment", "quiet", "--source-campaign", "stored",
                 "--target-campaign", "fresh", "--out", str(cal_out)]) == 0
    calibrated = pd.read_parquet(cal_out)
    mapped = calibrated.loc[calibrated["calibrated"]]
    assert set(zip(mapped["environment"].astype(str), mapped["campaign"].astype(str))) == {("quiet", "stored")}


@pytest.fixture(scope="module")
def odd_names(tmp_path_factory):
    """Environments named like a pyperf import ('host/Intel Xeon W-2255') and 'a:b', two campaigns each."""
    corpus = synthesize(n_problems=6, n_tests=4, n_solutions=6, n_repeats=3, n_candidates=2, busy=True,
                        campaigns=(("c/0", 1.0, 0.0), ("c:1", 0.8, 0.01)), seed=5).corpus
    corpus = corpus.astype({"environment": str, "campaign": str})
    corpus["environment"] = corpus["environment"].map({"quiet": HOST, "busy": ODD})
    stamps = {"c/0": "2026-02-01T00:00:00+00:00", "c:1": "2026-02-02T00:00:00+00:00"}
    corpus["timestamp"] = corpus["campaign"].map(stamps)
    corpus = normalize(corpus)
    path = tmp_path_factory.mktemp("odd") / "odd.parquet"
    save_corpus(corpus, path)
    return corpus, path


def test_names_with_slash_and_colon_work_in_every_audit(odd_names, tmp_path, capsys):
    corpus, path = odd_names
    rel = run_reliability_audit(corpus, n_boot=20)
    assert {str(r) for r in rel.runs} == {f"{e} · {c}" for e in (HOST, ODD) for c in ("c/0", "c:1")}
    assert run_discriminability_audit(corpus, environment=HOST, campaign="c:1", n_boot=20).result(HOST).campaign == "c:1"
    agg = run_aggregation_audit(corpus, environment=ODD, campaign="c/0", n_boot=20, names=["mean_pct"])
    assert agg.primary == (ODD, "c/0")
    envs = load_reward_environments([ROOT / "fixtures" / "environments" / "top30.yaml"])
    sim = run_simulation_audit(corpus, reward_environments=envs, environment=HOST, n_boot=20)
    assert (sim.environment, sim.campaign) == (HOST, "c/0")  # the earliest campaign, by timestamp
    cal = run_calibration_audit(corpus, source=(HOST, "c/0"), target=(ODD, "c:1"), n_boot=20, n_boot_rank=5)
    assert (cal.source, cal.target, cal.key) == (HOST, ODD, "environment")
    for argv in (["audit", "reliability", str(path), "--environment", HOST, "--n-boot", "20"],
                 ["audit", "discriminability", str(path), "--campaign", "c:1", "--n-boot", "20"],
                 ["audit", "aggregation", str(path), "--environment", ODD, "--campaign", "c/0", "--n-boot", "20",
                  "--aggregators", "mean_pct"],
                 ["audit", "calibration", str(path), "--environment", ODD, "--source-campaign", "c/0",
                  "--target-campaign", "c:1", "--n-boot", "20", "--n-boot-rank", "5"],
                 ["simulate", str(path), "--environment", ODD, "--campaign", "c:1", "--n-boot", "20",
                  "--reward-env", str(ROOT / "fixtures" / "environments" / "top30.yaml")]):
        assert main(argv) == 0, argv
        printed = capsys.readouterr().out
        assert (HOST in printed) or (ODD in printed), argv


@pytest.mark.slow  # a minute or more under make test's load: a report set rendered
def test_names_with_slash_and_colon_in_speedaudit_report(odd_names, tmp_path, capsys):
    _, path = odd_names
    out = tmp_path / "reports"
    status = main(["report", str(path), "--out", str(out), "-p", "n_boot=20", "-p", "n_boot_rank=5",
                   "-p", "reward_environment_files=[fixtures/environments/top30.yaml]"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    shown = html.escape(ODD, quote=False)  # the name as text: a:b &lt;i&gt;&amp;amp;
    calibration = (out / "calibration.html").read_text(encoding="utf-8")
    assert f"{shown} · c/0" in calibration and f"{shown} · c:1" in calibration  # stored -> fresh of one environment
    assert f"{HOST} · c/0" in calibration  # environment -> environment
    reliability = (out / "reliability.html").read_text(encoding="utf-8")
    for env in (HOST, shown):
        for campaign in ("c/0", "c:1"):
            assert f"{env} · {campaign} (3 repeats)" in reliability
    for page in sorted(out.glob("*.html")):  # nowhere as markup (the narrative's Markdown, tables, findings)
        assert "a:b <i>" not in page.read_text(encoding="utf-8"), page.name
    assert "Traceback" not in captured.err
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "FAILED" not in index


def test_a_run_that_does_not_exist_is_an_error_naming_the_runs(two_campaigns, tmp_path, capsys):
    path = save_corpus(two_campaigns, tmp_path / "c.parquet")
    assert main(["audit", "reliability", str(path), "--campaign", "nope"]) == 1
    err = capsys.readouterr().err
    assert "no run has campaign 'nope'" in err and "quiet · stored (5 repeats)" in err and "Traceback" not in err
    assert main(["audit", "calibration", str(path), "--source-campaign", "stored", "--target-campaign",
                 "fresh"]) == 1  # two environments have them: which one?
    err = capsys.readouterr().err
    assert "2 runs match" in err and "--environment" in err
    np.testing.assert_array_equal(pd.read_parquet(path)["duration_s"], two_campaigns["duration_s"])
