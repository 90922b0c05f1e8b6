"""An aggregator figure measured on one problem has no interval, and a default the run cannot score is not
called dominated.

Found on a real archive collected by ``speedaudit collect`` (oj-lab/problem-packages: one problem with two
references, the others one): the aggregation table read ``geo_ratio 66.7 [66.7, 66.7]`` over 1 problem (every
resample that defines the figure holds that problem only, so the "interval" was the point), and the page said
the default mean_pct, with no stability and no range, "is dominated (not on the Pareto front)".
"""

from __future__ import annotations

import numpy as np
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.corpus.synthetic import synthesize
from audits.report.narrative.aggregation import describe_aggregation


def _corpus(*, few: bool):
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=5, n_incorrect=0, n_candidates=0, n_repeats=3,
                        seed=3).corpus
    if few:  # one problem keeps its five references, the others one
        keep = (corpus["problem"].astype(str) == "p0000") | (corpus["solution"].astype(str) == "ref-000")
        corpus = corpus.loc[keep | (corpus["role"] == "floor")].reset_index(drop=True)
    return corpus


@pytest.mark.parametrize("few", [True, False])
def test_a_figure_of_one_problem_has_no_interval(few):
    audit = run_aggregation_audit(_corpus(few=few), n_boot=50)
    ((_, comp),) = audit.comparisons
    table = comp.table
    for figure, counted in (("stability", "n_problems"), ("dynamic_range", "n_problems_range")):
        one = table[counted].to_numpy() < 2
        bounds = table[[f"{figure}_low", f"{figure}_high"]].to_numpy(dtype=float)
        assert np.isnan(bounds[one]).all(), table.loc[one, ["aggregator", figure, f"{figure}_low"]]
        measured = ~one & np.isfinite(table[figure].to_numpy(dtype=float))
        assert np.isfinite(bounds[measured]).all()
    assert (table["n_problems_range"] < 2).all() if few else (table["n_problems_range"] >= 2).all()


def test_an_unscored_default_is_not_called_dominated():
    corpus = synthesize(n_problems=4, n_tests=3, n_solutions=1, n_incorrect=0, n_candidates=0, n_repeats=3,
                        seed=3).corpus
    text = describe_aggregation(run_aggregation_audit(corpus, n_boot=50))
    assert "The default **mean_pct** has stability n/a, range n/a; it is not compared" in text, text
    assert "dominated" not in text and "- (no CI)" not in text, text
