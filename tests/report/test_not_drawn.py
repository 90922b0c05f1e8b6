"""Every page says what it did not draw, and why (issue 16, gap 3).

A corpus with one problem and one repeat per run (two campaigns of two environments, so every page has
its pairs of runs) rendered with ``speedaudit report`` (the CLI, real kernels): every page renders without
an error cell, and each says in a sentence which figure it left out or drew without its bands, with the
reason the audit gave. The sentences come from :func:`audits.report.narrative.figure_notes` and
:func:`~audits.report.narrative.describe_not_measured`, also checked directly on the audits.
"""

from __future__ import annotations

import re

import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.calibration import run_calibration_audit
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize
from audits.report import narrative
from audits.report.plots.aggregation import stability_range_figure
from audits.report.plots.calibration import bland_altman_plot, calibration_scatter
from audits.report.plots.reliability import repeat_cv_distributions
from audits.report.plots.simulation import reward_curves
from audits.checks.reliability import run_reliability_audit
from audits.checks.simulation import run_simulation_audit
from stats.rewards import RewardEnvironment
from tests.report.test_any_corpus import PAGES, _error_cells, _pages, _render

pytestmark = pytest.mark.slow  # a minute or more under make test's load: a report set rendered (module fixture)

DRIFT = (("c0", 1.0, 0.0), ("c1", 0.63, 0.053))


def _tiny(**kw):
    spec = dict(n_problems=1, n_tests=4, n_solutions=8, n_repeats=1, campaigns=DRIFT, busy=True, seed=5)
    return synthesize(**{**spec, **kw}).corpus


@pytest.fixture(scope="module")
def tiny_pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    path = root / "tiny.parquet"
    save_corpus(_tiny(), path)
    out = root / "report"
    status = _render(path, out, "-p", "stored_run=[quiet, c0]", "-p", "fresh_run=[quiet, c1]",
                     "-p", "source_run=[quiet, c0]", "-p", "target_run=[busy, c0]",
                     "-p", "simulation_environment=quiet", "-p", "simulation_campaign=c0")
    return status, _pages(out)


def test_every_page_renders_on_one_problem_and_one_repeat(tiny_pages):
    status, pages = tiny_pages
    assert status in (0, 1)
    for name in PAGES:
        text, nb = pages[name]
        assert _error_cells(nb) == [], name
        assert "Traceback" not in text, name


def test_reliability_page_says_its_figures_were_not_drawn(tiny_pages):
    text = tiny_pages[1]["reliability"][0]
    assert "Figure not drawn: median_repeat_cv is not measurable on this corpus" in text
    assert "Figure not drawn: mean_rank_range is not measurable on this corpus" in text
    assert "1 repeat per cell" in text


def test_calibration_page_says_what_one_problem_cannot_show(tiny_pages):
    text = tiny_pages[1]["calibration"][0]
    assert "No family can be validated: 1 problem pair up" in text
    assert "leave-one-problem-out R² is not measured (1 problem pairs up; it needs >= 2)" in text
    assert "drawn without their CI bands (1 problem pairs up)" in text


def test_aggregation_page_says_no_run_was_compared(tiny_pages):
    text = tiny_pages[1]["aggregation"][0]
    assert "Figure not drawn: no run was compared" in text and "one repeat only" in text
    assert "Not compared:" in text


def test_simulation_page_says_the_noise_band_is_not_drawn(tiny_pages):
    text = tiny_pages[1]["simulation"][0]
    assert "No ±1 sd band: the curves come from one repeat" in text
    assert "quality and reward from the same (only) repeat" in text


def test_overview_names_what_was_not_measured(tiny_pages):
    text = tiny_pages[1]["overview"][0]
    assert "Not measured on this corpus (n/a, their figures not drawn):" in text
    for audit in ("sandbox reliability", "aggregation", "reward simulation"):
        assert re.search(rf"{audit} ?:", text), audit     # bold in the HTML: a tag, then the colon


# --- the sentences on the audits directly (no kernel) ---------------------------------------------------

def test_figure_notes_follow_the_audit_not_the_page():
    one_repeat = _tiny(n_problems=4)
    rel = run_reliability_audit(one_repeat, n_boot=20)
    not_drawn, _ = narrative.figure_notes(repeat_cv_distributions, rel, metric="median_repeat_cv")
    assert not_drawn.startswith("median_repeat_cv is not measurable on this corpus (")
    assert all(f"{run}: 1 repeat per cell" in not_drawn for run in ("quiet · c0", "quiet · c1", "busy · c0", "busy · c1"))
    agg = run_aggregation_audit(one_repeat, n_boot=20)
    not_drawn = narrative.figure_notes(stability_range_figure, agg)[0]
    assert not_drawn.startswith("no run was compared (") and "quiet · c0: one repeat only" in not_drawn
    assert narrative.aggregation_table(agg).empty
    # three repeats, four problems: every figure drawn, nothing to say
    judged = _tiny(n_problems=4, n_repeats=3)
    rel3 = run_reliability_audit(judged, n_boot=20)
    assert narrative.figure_notes(repeat_cv_distributions, rel3, metric="median_repeat_cv") == (None, [])
    cal = run_calibration_audit(judged, source=("quiet", "c0"), target=("quiet", "c1"), n_boot=20, n_boot_rank=5)
    assert narrative.figure_notes(calibration_scatter, cal) == (None, [])
    assert narrative.figure_notes(bland_altman_plot, cal) == (None, [])
    cal0 = run_calibration_audit(judged, source=("quiet", "c0"), target=("quiet", "c1"), n_boot=0, n_boot_rank=0)
    assert narrative.figure_notes(bland_altman_plot, cal0)[1] == [
        "The bias and the limits of agreement are drawn without their CI bands (n_boot = 0 draws no resamples)."]
    env = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
    sim = run_simulation_audit(judged, reward_environments=[env], environment="quiet", campaign="c0", n_boot=20)
    assert narrative.figure_notes(reward_curves, sim) == (None, [])


def test_some_runs_na_are_named_under_the_figure():
    mixed = _tiny(n_problems=4, n_repeats=3)
    one = mixed.loc[(mixed["environment"] == "busy").to_numpy() & (mixed["repeat"] == 0).to_numpy()]
    mixed = mixed.loc[(mixed["environment"] != "busy").to_numpy()]
    import pandas as pd

    rel = run_reliability_audit(pd.concat([mixed, one], ignore_index=True), n_boot=20)
    not_drawn, notes = narrative.figure_notes(repeat_cv_distributions, rel, metric="median_repeat_cv")
    assert not_drawn is None
    assert notes and notes[0].startswith("Not in the figure (median_repeat_cv n/a): busy · c0: 1 repeat per cell")
    assert "busy · c1" in notes[0] and "quiet" not in notes[0]


def test_describe_not_measured_groups_by_reason():
    rel = run_reliability_audit(_tiny(n_problems=4), n_boot=20)
    text = narrative.describe_not_measured({"sandbox reliability": rel.findings})
    assert text.startswith("**Not measured on this corpus** (n/a, their figures not drawn): **sandbox reliability**:")
    # the two runs share their reason and metrics: one entry names both (tests/edges/test_txt_not_measured_once.py)
    assert "median_repeat_cv" in text and "quiet · c0" in text and "busy · c1" in text
    assert narrative.describe_not_measured({"x": ()}) == "Every finding was measured on this corpus (none is n/a)."
