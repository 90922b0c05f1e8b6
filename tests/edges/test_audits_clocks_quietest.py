"""The clock audit's quietest run is a run with something to rank.

Found on a corpus where one environment holds only its floor rows (the empty program timed, nothing else):
that run has no figure, so no figure was finite for every run and the choice fell back to "first run by
name", the floor-only run, whose name sorts first. The clocks' rank agreement was then ``n/a`` ("no problem of
the quietest run has two solutions scored") although the other runs rank every solution under both clocks.
"""

from __future__ import annotations

import numpy as np

from audits.checks.clocks import run_clocks_audit
from audits.corpus.synthetic import synthesize


def _corpus():
    corpus = synthesize(n_problems=4, n_repeats=3, busy=True, seed=6).corpus.copy()
    rng = np.random.default_rng(0)
    corpus["cpu_s"] = corpus["duration_s"] * rng.uniform(0.85, 0.95, len(corpus))
    return corpus


def test_a_run_of_floor_rows_only_is_never_the_quietest():
    corpus = _corpus()
    floor_only = (corpus["environment"].astype(str) == "busy") & (corpus["role"].astype(str) != "floor")
    audit = run_clocks_audit(corpus.loc[~floor_only].reset_index(drop=True), n_boot=20)
    assert audit.quietest == ("quiet", "c0"), (audit.quietest, audit.quietest_by)
    assert audit.quietest_by == "lowest median wall/CPU"
    (found,) = [f for f in audit.findings if f.metric == "clock_agreement"]
    assert found.level != "n/a" and np.isfinite(found.value), found.message
    # the same figures as when the floor-only run is not in the corpus at all
    alone = run_clocks_audit(corpus.loc[corpus["environment"].astype(str) == "quiet"].reset_index(drop=True),
                             n_boot=20)
    (same,) = [f for f in alone.findings if f.metric == "clock_agreement"]
    assert (found.level, found.value) == (same.level, same.value)
