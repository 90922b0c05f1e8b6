"""The run context: what every audit of one run needs, computed once and handed to each audit.

Each audit covers every run (one environment and campaign, :mod:`audits.corpus.runs`)
on its own. Before this module every audit started again from the raw
executions: it re-derived the run table, masked the run's rows out of the
corpus, rebuilt the reference pool (issue 17 counted the same pool 6 times and
the same ranking pass 13 times in one whole audit). An :class:`AuditContext`
wraps one corpus and computes, on first use and once:

* ``runs``: the run table (:func:`audits.corpus.runs.runs_of`);
* ``floors``: the sandbox floor of every run (:func:`stats.discriminability.sandbox_floor`);
* per run (:meth:`AuditContext.run`, a :class:`RunContext`): the run's rows
  (``executions``, floor rows included, as the aggregator comparison's
  ``floor_pct`` and the simulator read them; ``rows`` without them), the
  reference pool (:func:`stats.ranking.reference_pools`: one duration per
  correct reference and test, the median of its ok repeats), the collapsed
  cells (:func:`stats.ranking.solution_cells`) and the per-repeat scores of
  every correct solution against the fixed pool
  (:func:`stats.reliability.per_repeat_scores`).

Every audit takes a corpus *or* a context (``run_*_audit(context, ...)``); given
a DataFrame it builds a context itself (:func:`audit_context`), so the
convenience path of passing a frame stays. What is computed from the context
is what the audit computed before, from the same rows: the context changes
when work happens, never the result.

Examples
--------
>>> from audits.corpus.synthetic import synthesize
>>> ctx = audit_context(synthesize(n_problems=3, n_repeats=2, seed=1).corpus)
>>> [str(s.run) for s in ctx.runs]
['quiet · c0']
>>> run = ctx.run(ctx.runs.names[0])
>>> run.pools is run.pools, len(run.pools) == 3 * 8 * 12   # built once: 3 problems x 8 tests x 12 references
(True, False)
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from audits.corpus.runs import Run, Runs, RunSummary, runs_of
from audits.corpus.table import check_frame
from stats._groups import label_mask
from stats.discriminability import sandbox_floor, test_table
from stats.ranking import cell_codes, percentile_table, reference_pools, solution_cells
from stats.reliability import correct_reference_rows, log_duration_icc, per_repeat_scores, repeat_cv
from stats.rewards import ScoringBase

__all__ = ["AuditContext", "RunContext", "audit_context", "reference_rows"]


class RunContext:
    """One run's rows and the pieces every audit of it shares (each computed on first use, once).

    Not built directly: :meth:`AuditContext.run`.
    """

    def __init__(self, corpus: pd.DataFrame, summary: RunSummary):
        self._corpus = corpus
        self.summary = summary

    @property
    def run(self) -> Run:
        return self.summary.run

    @cached_property
    def mask(self) -> np.ndarray:
        """Rows of the corpus that belong to this run (floor rows included)."""
        return self.summary.run.mask(self._corpus)

    @cached_property
    def executions(self) -> pd.DataFrame:
        """Every row of the run, ``floor`` rows included."""
        return self._corpus.loc[self.mask]

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The run's rows without its ``floor`` rows (what the pools and scores are built from)."""
        if "role" not in self._corpus.columns:
            return self.executions
        return self._corpus.loc[self.mask & ~label_mask(self._corpus["role"], "floor")]

    @cached_property
    def floor_rows(self) -> pd.DataFrame:
        if "role" not in self._corpus.columns:
            return self._corpus.iloc[:0]
        return self._corpus.loc[self.mask & label_mask(self._corpus["role"], "floor")]

    @cached_property
    def cell_codes(self) -> tuple[np.ndarray, int]:
        """(problem, test, solution) code of every row of :attr:`rows` (:func:`stats.ranking.cell_codes`): the
        one grouping pass the cells and the pool are both numbered from."""
        return cell_codes(self.rows)

    @cached_property
    def pools(self) -> pd.DataFrame:
        """:func:`stats.ranking.reference_pools` of the run (by language as the corpus asks), its cells
        numbered from :attr:`cell_codes`."""
        return reference_pools(self.rows, codes=self.cell_codes)

    @cached_property
    def cells(self) -> pd.DataFrame:
        """:func:`stats.ranking.solution_cells` of the run: one median duration per (problem, test, solution)."""
        return solution_cells(self.rows, codes=self.cell_codes)

    @cached_property
    def cell_percentiles(self) -> pd.DataFrame:
        """:func:`stats.ranking.percentile_table` of the run's :attr:`cells` against :attr:`pools`."""
        return percentile_table(self.rows, pools=self.pools, cells=self.cells)

    @cached_property
    def repeat_percentiles(self) -> pd.DataFrame:
        """:func:`stats.ranking.percentile_table` of every row of the run (``per_repeat=True``) against
        :attr:`pools`, row ``i`` the percentile of ``rows.iloc[i]`` (what the aggregator comparison and the
        per-repeat scores rank; a subset of rows is a subset of this table: each row is ranked on its own)."""
        return percentile_table(self.rows, per_repeat=True, pools=self.pools)

    @cached_property
    def repeat_scores(self) -> pd.DataFrame:
        """q of every correct reference and candidate in every repeat against the fixed pool
        (:func:`stats.reliability.per_repeat_scores` with :attr:`pools`)."""
        # with nested repeats (a ``run`` column) per_repeat_scores builds its pool from process-level rows
        if "run" in self.rows.columns:
            return per_repeat_scores(self.rows)
        return per_repeat_scores(self.rows, pools=self.pools, table=self.repeat_percentiles)

    @cached_property
    def reference_rows(self) -> pd.DataFrame:
        """Correct reference executions of the run on optimization tests (:func:`reference_rows`)."""
        return reference_rows(self.rows)

    @cached_property
    def repeat_cells(self) -> pd.DataFrame:
        """:func:`stats.reliability.repeat_cv` of every (campaign, problem, test, solution) cell of
        :attr:`reference_rows` (the reliability and clock audits' repeat CV)."""
        return repeat_cv(self.reference_rows, by=("campaign", "problem", "test", "solution"))

    @cached_property
    def test_icc(self) -> pd.DataFrame:
        """:func:`stats.reliability.log_duration_icc` of :attr:`reference_rows`: the ICCs of every
        optimization test (the reliability, discriminability and clock audits')."""
        return log_duration_icc(self.reference_rows)

    @cached_property
    def test_table(self) -> pd.DataFrame:
        """:func:`stats.discriminability.test_table` of the run against :attr:`pools` (the discriminability
        and clock audits' per-test medians and spreads)."""
        return test_table(self.rows, pools=self.pools)

    @cached_property
    def reward_tests(self) -> pd.DataFrame:
        """:attr:`stats.rewards.ScoringBase.tests` of the run against :attr:`pools` (roles ``reference``): one row per
        test with its reference median. The simulation audit's reward environments relative to the run read their
        quantile of the run's reference medians from it, and its scoring base scores on it."""
        return ScoringBase(self.rows, pools=self.pools, roles=("reference",)).tests

    def reference_repeat_scores(self) -> pd.DataFrame:
        """:attr:`repeat_scores` of the references only (a reference's score does not depend on the
        candidates: the pool is fixed), in the order :func:`per_repeat_scores` gives them; scored against
        :attr:`pools`."""
        scores = self.repeat_scores
        if "role" not in scores.columns or "run" in self.rows.columns:
            return per_repeat_scores(self.rows, roles=("reference",), pools=self.pools,
                                     table=None if "run" in self.rows.columns else self.repeat_percentiles)
        return scores.loc[(scores["role"].astype(str) == "reference").to_numpy()].reset_index(drop=True)


class AuditContext:
    """A corpus and what every audit of it shares, computed once (see the module docstring).

    Parameters
    ----------
    corpus : DataFrame
        A normalised timing corpus (:func:`audits.corpus.io.load_corpus`).
    """

    def __init__(self, corpus: pd.DataFrame):
        if not isinstance(corpus, pd.DataFrame):
            raise TypeError(f"an audit context wraps a corpus DataFrame, got {type(corpus).__name__}")
        check_frame(corpus)  # the loader's rules on every path (a frame given directly, a partition)
        self.corpus = corpus
        self._runs: dict[Run, RunContext] = {}

    @property
    def attrs(self) -> dict:
        return self.corpus.attrs

    @cached_property
    def runs(self) -> Runs:
        """The corpus's runs in the documented order: by timestamp, else in the order of the files they came
        from (``attrs["run_order"]``, :func:`audits.report.inputs.load_corpora`), else corpus order. Every
        audit, the report's pages and its calibration pairs read this one order."""
        return runs_of(self.corpus, order=self.corpus.attrs.get("run_order"))

    @cached_property
    def floors(self) -> pd.DataFrame:
        """:func:`stats.discriminability.sandbox_floor` of the whole corpus (every run's floor)."""
        return sandbox_floor(self.corpus)

    @cached_property
    def floor_rows(self) -> pd.DataFrame:
        """Every ``floor`` row of the corpus (empty without a ``role`` column), what a plan reads the runs' floors
        from (:mod:`audits.protocol.partition`)."""
        if "role" not in self.corpus.columns:
            return self.corpus.iloc[:0]
        return self.corpus.loc[label_mask(self.corpus["role"], "floor")].reset_index(drop=True)

    @property
    def columns(self) -> pd.Index:
        return self.corpus.columns

    def facts(self, audit, options) -> list:
        """``[audit.facts_part(self, options)]``: the corpus is its own single partition
        (:mod:`audits.protocol.partition`)."""
        return [audit.facts_part(self, options)]

    def map(self, function, *args) -> list:
        """``[function(self, *args)]``: the corpus is its own single partition (:mod:`audits.protocol.partition`)."""
        return [function(self, *args)]

    def run(self, run) -> RunContext:
        """The :class:`RunContext` of ``run`` (a :class:`Run`, a :class:`RunSummary` or an (environment, campaign) pair)."""
        summary = run if isinstance(run, RunSummary) else self.runs.get(Run.coerce(run))
        found = self._runs.get(summary.run)
        if found is None:
            found = self._runs[summary.run] = RunContext(self.corpus, summary)
        return found


def audit_context(corpus) -> AuditContext:
    """``corpus`` itself when it is an :class:`AuditContext`, else a new context of the DataFrame."""
    return corpus if isinstance(corpus, AuditContext) else AuditContext(corpus)


def reference_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Correct reference executions on optimization tests (what the reliability and clocks figures read;
    :func:`stats.reliability.correct_reference_rows`, the one rule the stats layer uses too)."""
    return correct_reference_rows(rows)
