"""The audits on the real corpora shipped in fixtures/corpora (collected from fixtures/suites/speedbench).

Each check compares an audit's number with an independent pandas computation on the same files, or
with what the suite was built to be (the `speedbench:` block of every problem.yaml).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from audits.checks.calibration import run_calibration_audit
from audits.checks.discriminability import run_discriminability_audit
from audits.checks.reliability import run_reliability_audit
from audits.report.inputs import load_corpora

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [ROOT / "fixtures" / "corpora" / f"{name}.parquet" for name in ("quiet-a", "quiet-b", "busy-a")]
SUITE = ROOT / "fixtures" / "suites" / "speedbench"


@pytest.fixture(scope="module")
def corpus():
    return load_corpora([str(p) for p in CORPORA])


def _reference_opt_ok(corpus):
    rows = corpus[(corpus["role"] == "reference") & corpus["correct"] & (corpus["status"] == "ok")
                  & (corpus["test_kind"] == "optimization")]
    return rows.astype({c: str for c in ("environment", "campaign", "problem", "test", "solution")})


def test_median_repeat_cv_equals_a_plain_pandas_computation(corpus):
    audit = run_reliability_audit(corpus, n_boot=50)
    rows = _reference_opt_ok(corpus)
    cells = rows.groupby(["environment", "campaign", "problem", "test", "solution"])["duration_s"]
    cv = (cells.std(ddof=1) / cells.mean()).dropna()
    expected = cv.groupby(level=["environment", "campaign"]).median()  # one figure per run
    assert {(r.environment, r.campaign) for r in audit.runs} == set(expected.index)
    for run, result in audit.runs.items():
        assert result.median_repeat_cv.estimate == pytest.approx(expected[run.environment, run.campaign], rel=1e-9)


def test_filterable_problems_are_the_ones_designed_to_span_a_wide_workload(corpus):
    designed = {p.parent.name: yaml.safe_load(p.read_text())["speedbench"]["filterable"]
                for p in SUITE.glob("*/problem.yaml")}
    assert sum(designed.values()) == 9 and len(designed) == 12
    audit = run_discriminability_audit(corpus, n_boot=50)
    for run, result in audit.runs.items():
        measured = dict(zip(result.problems["problem"].astype(str), result.problems["filterable"].astype(bool)))
        if run.environment == "busy":
            # On the busy machine every execution pays the contention's start-up delay, which flattens the
            # ratio between small and large tests: designed problems can drop out, but most stay
            assert sum(measured[p] for p, f in designed.items() if f) >= 6, run
        else:
            assert all(measured[p] for p, f in designed.items() if f), run
        # A problem designed with same-size tests is filterable only where the corpus's tests differ in size:
        # the shipped corpora hold each problem's 3 largest optimization tests, and issue 25's opt-7 of
        # gridbfs, intervals and twosum is 3-7x larger than their same-size tests (a size step, not noise).
        rows = corpus[(corpus["environment"] == run.environment) & (corpus["campaign"] == run.campaign)
                      & (corpus["role"] == "reference")]
        for problem in (p for p, f in measured.items() if f and not designed[p]):
            sizes = rows.loc[rows["problem"] == problem, "input_bytes"].astype(float)
            assert sizes.max() >= 2 * sizes.min(), (run, problem)


def test_busy_environment_has_a_slower_floor_than_the_quiet_one(corpus):
    audit = run_discriminability_audit(corpus, n_boot=50)
    floor_rows = corpus[(corpus["role"] == "floor") & (corpus["status"] == "ok")]
    for run, result in audit.runs.items():
        mine = (corpus["environment"] == run.environment) & (corpus["campaign"] == run.campaign)
        # the headline floor is the floor of the language with the most reference rows (Python here); every
        # test is judged against its own language's floor (result.floors)
        main = corpus.loc[mine & (corpus["role"] == "reference"), "language"].astype(str).value_counts().idxmax()
        rows = floor_rows[(floor_rows["environment"] == run.environment) & (floor_rows["campaign"] == run.campaign)]
        assert main == "python"
        assert result.floor_s == pytest.approx(np.median(rows.loc[rows["language"] == main, "duration_s"]))
        for language, floor in result.floors.items():
            assert floor == pytest.approx(np.median(rows.loc[rows["language"] == language, "duration_s"]))
        assert set(result.floors) == {"python", "cpp"}
    assert audit.result("busy").floor_s > max(audit.result("quiet", c).floor_s for c in ("quiet-a", "quiet-b"))


def test_two_quiet_campaigns_on_one_machine_calibrate_almost_one_to_one(corpus):
    quiet = corpus[corpus["environment"] == "quiet"]
    audit = run_calibration_audit(quiet, source="quiet-a", target="quiet-b", n_boot=100, n_boot_rank=50)
    affine = audit.fit("affine")
    assert 0.8 < affine.params["slope"] < 1.2
    assert audit.fits["lopo_r2"].max() > 0.9
