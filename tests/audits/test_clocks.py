"""The choice of clock: --measure on every audit, and speedaudit audit clocks.

Synthetic corpora with a planted second clock: a constant multiple of the wall time (scale-free
figures equal, every within-problem order kept: Kendall tau = 1), its reciprocal (every order
reversed: tau = -1), and an independent noisy clock (figures differ). The --measure path is
checked against a corpus in which the test itself put the clock into duration_s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.clocks import run_clocks_audit, use_measure, wall_cpu_ratio
from audits.cli import main
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic import synthesize
from audits.errors import UserError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    c = synthesize(n_problems=5, n_tests=3, n_solutions=6, n_incorrect=0, n_candidates=0, n_repeats=3,
                   seed=3).corpus
    rng = np.random.default_rng(11)
    c["cpu_s"] = c["duration_s"] * rng.lognormal(0.0, 0.4, len(c))  # an independent noisy clock
    c["instructions"] = c["duration_s"] * 3e9  # a planted exact multiple of the wall time
    return c


def _fig(audit, measure, column):
    t = audit.table
    return float(t.loc[t["measure"] == measure, column].iloc[0])


def test_a_multiple_of_the_wall_time_keeps_every_figure_and_every_order(corpus):
    audit = run_clocks_audit(corpus, measures=["duration_s", "instructions"], n_boot=50)
    for column in ("median_repeat_cv", "mean_rank_sd", "icc", "strong_weak_gap", "filterable_share"):
        assert _fig(audit, "instructions", column) == pytest.approx(_fig(audit, "duration_s", column), rel=1e-9)
    assert audit.agreement["kendall_tau"].tolist() == pytest.approx([1.0] * 5)


def test_the_clock_audit_reports_wall_cpu_and_instructions_side_by_side(corpus):
    """Issue 25: every clock the corpus carries, each with stability, cost and (with a reference) faithfulness."""
    from audits.corpus.runs import Run

    audit = run_clocks_audit(corpus, n_boot=20, reference=Run("quiet", "c0"))
    assert list(audit.measures) == ["duration_s", "cpu_s", "instructions"]
    assert sorted(audit.table["measure"]) == ["cpu_s", "duration_s", "instructions"]
    table = audit.table.set_index("measure")
    assert np.isfinite(table[["mean_rank_sd", "faithfulness", "seconds"]].to_numpy(dtype=float)).all()
    # against the run itself under CPU time: the CPU clock agrees perfectly, the others do not have to
    assert table.loc["cpu_s", "faithfulness"] == pytest.approx(1.0)
    assert sorted(set(audit.agreement["measure"])) == ["cpu_s", "instructions"]


def test_a_reversed_clock_reverses_every_order(corpus):
    # an odd number of repeats: a cell's median is one of its executions, so 1/median = median of 1/d
    # (with an even number the middle two are averaged and close cells could swap); no failed executions
    # (they rank last under every clock)
    assert (corpus["status"] == "ok").all()
    flipped = corpus.assign(cpu_s=1.0 / corpus["duration_s"])
    audit = run_clocks_audit(flipped, measures=["duration_s", "cpu_s"], n_boot=50)
    assert audit.agreement["kendall_tau"].tolist() == pytest.approx([-1.0] * 5)


def test_the_noisy_clock_changes_the_figures_as_if_it_were_the_wall_time(corpus):
    audit = run_clocks_audit(corpus, measures=["duration_s", "cpu_s"], n_boot=50)
    swapped = corpus.assign(duration_s=corpus["cpu_s"])  # the test's own swap, not use_measure
    alone = run_clocks_audit(swapped, measures=["duration_s"], n_boot=50)
    for column in ("median_repeat_cv", "mean_rank_sd", "icc", "strong_weak_gap"):
        assert _fig(audit, "cpu_s", column) == pytest.approx(_fig(alone, "duration_s", column), rel=1e-9)
    # 40 % lognormal noise on top: repeat CV up, ICC down
    assert _fig(audit, "cpu_s", "median_repeat_cv") > _fig(audit, "duration_s", "median_repeat_cv")
    assert _fig(audit, "cpu_s", "icc") < _fig(audit, "duration_s", "icc")
    assert -1 < audit.mean_agreement()["cpu_s"] < 1


def test_the_quietest_run_is_the_one_with_the_lowest_load_whatever_its_name_or_row_order(corpus):
    quiet = corpus.assign(campaign="z-quiet", load_1m=0.1)
    busy = corpus.assign(campaign="a-busy", load_1m=6.0)
    both = pd.concat([busy, quiet], ignore_index=True)
    for frame in (both, both.iloc[::-1]):
        audit = run_clocks_audit(frame, measures=["duration_s", "cpu_s"], n_boot=20)
        assert audit.quietest[1] == "z-quiet" and "load_1m" in audit.quietest_by
    assert set(audit.table["median_load_1m"]) == {0.1, 6.0}


def test_use_measure_leaves_out_ok_rows_without_the_measure_and_says_so():
    frame = pd.DataFrame({"status": ["ok", "ok", "ok", "timeout"], "duration_s": [1.0, 2.0, 3.0, 4.0],
                          "cpu_s": [0.5, np.nan, 0.0, 3.9], "name": list("abcd")})
    out = use_measure(frame, "cpu_s")
    assert out["name"].tolist() == ["a", "d"] and out["duration_s"].tolist() == [0.5, 3.9]
    assert "2 ok rows" in out.attrs["measure_note"]
    with pytest.raises(UserError, match="cpu_s: no such column"):
        use_measure(frame.drop(columns="cpu_s"), "cpu_s")
    with pytest.raises(UserError, match="not numeric"):
        use_measure(frame, "name")


def test_wall_cpu_ratio_counts_multithreaded_executions_aside():
    rows = pd.DataFrame({"status": ["ok", "ok", "ok", "timeout", "ok"], "duration_s": [2.0, 4.0, 1.0, 9.0, 5.0],
                         "cpu_s": [1.0, 1.0, 3.0, 1.0, 1.0], "role": ["reference"] * 4 + ["floor"]})
    assert wall_cpu_ratio(rows) == (3.0, 2, 1)  # median of 2 and 4; the floor and the timeout are not read
    # executions under 0.1 s of CPU are start-up cost, not waiting: left out (not counted as multi-threaded)
    short = pd.concat([rows, pd.DataFrame({"status": ["ok"] * 3, "duration_s": 0.03, "cpu_s": 0.02,
                                           "role": "reference"})], ignore_index=True)
    assert wall_cpu_ratio(short) == (3.0, 2, 1)
    assert wall_cpu_ratio(short, min_cpu_s=0.0) == (1.5, 5, 1)  # median of 1.5, 1.5, 1.5, 2, 4


def test_measure_option_on_an_audit_equals_the_audit_of_the_swapped_corpus(corpus, tmp_path):
    path = save_corpus(corpus, tmp_path / "c.parquet")
    swapped = save_corpus(corpus.assign(duration_s=corpus["cpu_s"]), tmp_path / "swapped.parquet")
    results = {}
    for name, argv in {"wall": [str(path)], "cpu": [str(path), "--measure", "cpu_s"],
                       "swapped": [str(swapped)]}.items():
        out = tmp_path / f"{name}.json"
        assert main(["audit", "reliability", *argv, "--n-boot", "30", "--json", str(out)]) == 0
        results[name] = json.loads(out.read_text())
    assert results["cpu"].pop("measure") == "cpu_s" and "measure" not in results["wall"]
    assert results["cpu"] == results["swapped"]
    assert results["cpu"] != results["wall"]


def test_audit_clocks_cli_reports_both_clocks_and_refuses_an_unknown_one(corpus, tmp_path):
    path = save_corpus(corpus.drop(columns="instructions"), tmp_path / "c.parquet")
    env = {"PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "clocks", str(path), "--n-boot", "20",
                           "--json", str(tmp_path / "k.json")], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, **env})
    assert proc.returncode == 0, proc.stderr
    assert "duration_s" in proc.stdout and "cpu_s" in proc.stdout and "Kendall" in proc.stdout
    result = json.loads((tmp_path / "k.json").read_text())
    assert result["measures"] == ["duration_s", "cpu_s"] and len(result["table"]) == 2
    bad = subprocess.run([sys.executable, "-m", "audits.cli", "audit", "clocks", str(path), "--measure", "nosuch"],
                         cwd=ROOT, capture_output=True, text=True, env={**__import__("os").environ, **env})
    assert bad.returncode != 0 and "nosuch" in bad.stderr and "Traceback" not in bad.stderr
    one = load_corpus(path).drop(columns="cpu_s")
    only = run_clocks_audit(one, n_boot=20)
    assert only.measures == ("duration_s",) and "n/a" in only.summary()


def _two_runs_with_an_exact_clock():
    """Two campaigns of one environment: ``cpu_s`` is each cell's planted true time (the same in both runs,
    no repeat noise), the wall time of c1 carries heavy multiplicative noise, c0's a little."""
    c = synthesize(n_problems=5, n_tests=3, n_solutions=6, n_repeats=3, seed=4,
                   campaigns=(("c0", 1.0, 0.0), ("c1", 1.0, 0.0))).corpus
    truth = c.groupby(["problem", "test", "solution"], observed=True)["duration_s"].transform("median")
    c["cpu_s"] = truth.to_numpy()
    rng = np.random.default_rng(9)
    noisy = (c["campaign"] == "c1").to_numpy()
    c["duration_s"] = c["cpu_s"] * np.where(noisy, rng.lognormal(0, 0.6, len(c)), rng.lognormal(0, 0.01, len(c)))
    return c


def test_faithfulness_against_a_reference_run_and_the_cost_of_each_run():
    """Planted truth: the exact clock (cpu_s) orders solutions as the reference does on every run (tau-b 1);
    the noisy run's wall time less so than the quiet run's. Cost: rows and summed wall seconds per run, as
    pandas counts them. Rows in another order: the same table."""
    from audits.corpus.runs import Run

    c = _two_runs_with_an_exact_clock()
    audit = run_clocks_audit(c, measures=["duration_s", "cpu_s"], n_boot=0, reference=Run("quiet", "c0"))
    t = audit.table.set_index(["campaign", "measure"])
    assert t.loc[("c0", "cpu_s"), "faithfulness"] == 1.0 and t.loc[("c1", "cpu_s"), "faithfulness"] == 1.0
    assert t.loc[("c1", "duration_s"), "faithfulness"] < t.loc[("c0", "duration_s"), "faithfulness"] < 1.0
    by_run = c.groupby("campaign", observed=True)["duration_s"]
    for camp in ("c0", "c1"):
        assert t.loc[(camp, "cpu_s"), "executions"] == by_run.size()[camp]
        assert t.loc[(camp, "cpu_s"), "seconds"] == pytest.approx(by_run.sum()[camp], rel=1e-12)
    shuffled = c.iloc[np.random.default_rng(2).permutation(len(c))].reset_index(drop=True)
    again = run_clocks_audit(shuffled, measures=["duration_s", "cpu_s"], n_boot=0, reference=Run("quiet", "c0"))
    assert json.dumps(again.to_dict(), sort_keys=True) == json.dumps(audit.to_dict(), sort_keys=True)
    # without a reference the column is NaN (JSON null), never a number
    plain = run_clocks_audit(c, measures=["duration_s", "cpu_s"], n_boot=0)
    assert plain.table["faithfulness"].isna().all()
    assert all(row["faithfulness"] is None for row in plain.to_dict()["table"])


def test_audit_clocks_cli_names_the_reference_run(tmp_path):
    path = tmp_path / "two.parquet"
    save_corpus(_two_runs_with_an_exact_clock(), path)
    out = tmp_path / "clocks.json"
    assert main(["audit", "clocks", str(path), "--n-boot", "0", "--measure", "duration_s", "--measure", "cpu_s",
                 "--reference-environment", "quiet", "--reference-campaign", "c0", "--json", str(out)]) in (0, 1)
    rows = {(r["campaign"], r["measure"]): r for r in json.loads(out.read_text())["table"]}
    assert rows[("c1", "cpu_s")]["faithfulness"] == 1.0 and rows[("c1", "duration_s")]["faithfulness"] < 1.0


def test_a_clock_only_one_run_carries_is_audited_where_it_exists():
    """Regression (found on the shipped design corpora): instruction counts in one campaign only gave the
    quietest run an empty agreement, whose untyped column broke the mean agreement and the finding."""
    c = synthesize(n_problems=3, n_tests=3, n_solutions=5, n_incorrect=0, n_candidates=0, n_repeats=3, seed=5,
                   campaigns=(("c0", 1.0, 0.0), ("c1", 1.0, 0.0))).corpus
    c["cpu_s"] = c["duration_s"] * 0.9
    c["instructions"] = np.where(c["campaign"].astype(str) == "c1", c["duration_s"] * 3e9, np.nan)
    audit = run_clocks_audit(c, measures=["duration_s", "cpu_s", "instructions"], n_boot=20)
    table = audit.table.set_index(["campaign", "measure"])
    assert np.isfinite(table.loc[("c1", "instructions"), "mean_rank_sd"])
    assert np.isnan(table.loc[("c0", "instructions"), "mean_rank_sd"])  # n/a where the clock was not read
    assert audit.agreement["kendall_tau"].dtype == np.float64
    assert set(audit.mean_agreement()) <= {"cpu_s", "instructions"}
