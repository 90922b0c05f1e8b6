"""Every page renders on every corpus that validates (issue 24, item 4).

Real kernels (papermill, as ``speedaudit report`` runs them) on two corpora an expert brings:

* six machines of pyperf results written with pyperf itself (``tests/conftest.py``:
  :func:`write_pyperf_machines`), one build, benchmarks from 40 ns to 10 s, imported with
  ``speedaudit import pyperf``: one solution per problem, so nothing is ranked against anything;
* a corpus whose problems each have a single correct reference (scored against an empty pool).

No error cell, no traceback; every figure either drawn from data or replaced by a sentence saying why
not; log axes only on positive data.
"""

from __future__ import annotations

import html
import re
import warnings

import matplotlib
import nbformat
import numpy as np
import pytest

from audits.cli import main as cli_main
from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

pytestmark = pytest.mark.slow  # a minute or more under make test's load: two report sets rendered (module fixtures)

PAGES = ("overview", "reliability", "clocks", "calibration", "aggregation", "simulation")


def _text(page: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def _render(corpus, out, *extra) -> int:
    # --workers 1: one kernel for the whole report (make test's workers already keep both cores busy; a second
    # kernel start is 2.7 s of CPU); pages rendered side by side are tests/report/test_report.py's
    return cli_main(["report", str(corpus), "--out", str(out), "-p", "n_boot=20", "-p", "n_boot_rank=10",
                     "-p", "aggregation_environment=null", "--workers", "1", *extra])


def _check_pages(out, status):
    assert status in (0, 1)
    index = _text((out / "index.html").read_text())
    assert "ERROR" not in index and "FAILED" not in index
    texts = {}
    pages = sorted(p.stem for p in out.glob("*.ipynb"))
    assert set(PAGES) <= set(pages), pages
    for name in pages:
        nb = nbformat.read(out / f"{name}.ipynb", as_version=4)
        errors = [f"{o.get('ename')}: {o.get('evalue')}" for cell in nb.cells for o in cell.get("outputs", [])
                  if o.get("output_type") == "error"]
        assert errors == [], (name, errors)
        text = _text((out / f"{name}.html").read_text())
        assert "Traceback" not in text and "cannot be log-scaled" not in text, name
        assert "RuntimeWarning" not in text, name
        texts[name] = text
    return texts


@pytest.fixture(scope="module")
def six_machines(pyperf_machines, tmp_path_factory):
    _, corpus, _ = pyperf_machines
    out = tmp_path_factory.mktemp("six_machines_report")
    return out, _render(corpus, out)


def test_six_machine_pyperf_corpus_renders_every_page(six_machines):
    out, status = six_machines
    texts = _check_pages(out, status)
    sim = texts["simulation"]
    assert "Figure not drawn" in sim and "no rollout was scored" in sim  # one build: nothing to rank, said


@pytest.fixture(scope="module")
def one_reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_reference")
    corpus = synthesize(n_problems=5, n_solutions=1, n_repeats=3, seed=1).corpus
    path = root / "one.parquet"
    save_corpus(corpus, path)
    out = root / "report"
    return out, _render(path, out, "-p", "simulation_environment=null")


def test_one_reference_problems_render_every_page(one_reference):
    out, status = one_reference
    texts = _check_pages(out, status)
    assert "no rollout was scored" in texts["simulation"]


# --- figures on awkward data, drawn directly ---------------------------------------------------------------------

def _has_data(fig) -> bool:
    for ax in fig.axes:
        for line in ax.get_lines():
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            if np.isfinite(x).any() and np.isfinite(y).any() and len(x) > 2:
                return True
        if any(len(c.get_offsets()) for c in ax.collections) or ax.patches:
            return True
    return False


def test_figures_on_the_six_machine_corpus_are_drawn_from_data_or_not_drawn(pyperf_machines):
    from audits.checks.reliability import run_reliability_audit
    from audits.checks.simulation import run_simulation_audit
    from audits.checks.reward_environments import load_reward_environments
    from audits.corpus.io import load_corpus
    from audits.report.narrative import figure_notes
    from audits.report.plots.reliability import rank_drift_ranges, repeat_cv_distributions
    from audits.report.plots.simulation import reward_curves, zero_advantage_by_group_size

    corpus = load_corpus(pyperf_machines[1])
    rel = run_reliability_audit(corpus, n_boot=0)
    env = sorted(corpus["environment"].unique())[0]
    sim = run_simulation_audit(corpus, environment=env, n_boot=0,
                               reward_environments=load_reward_environments(["fixtures/environments/top30.yaml"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning, no "cannot be log-scaled"
        for plot, audit, metric in ((repeat_cv_distributions, rel, "median_repeat_cv"),
                                    (rank_drift_ranges, rel, "mean_rank_range"),
                                    (reward_curves, sim, None), (zero_advantage_by_group_size, sim, None)):
            not_drawn, _ = figure_notes(plot, audit, metric=metric)
            if not_drawn is not None:
                assert not_drawn  # a sentence instead of an empty figure
                continue
            fig = plot(audit)
            fig.canvas.draw()
            assert _has_data(fig), plot.__name__
            matplotlib.pyplot.close(fig)
