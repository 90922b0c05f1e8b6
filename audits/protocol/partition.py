"""The partition steps every audit runs through, in memory or on Dask: one engine, one part and one combine.

An audit that the Dask engine runs (``dask is None``, :mod:`audits.protocol.audit`) splits its work into

* :meth:`~audits.protocol.audit.Audit.facts_part`: what its plan needs to know of one partition beyond the run
  table and the floor rows (the runs' repeat values, the simulation's facts; default nothing);
* :meth:`~audits.protocol.audit.Audit.plan`: over a *plan context* (below), the same for both engines;
* :meth:`~audits.protocol.audit.Audit.pieces`: the plan's independently combined pieces (calibration: one per
  pair; default the plan itself);
* :meth:`~audits.protocol.audit.Audit.partition_part`: the per-problem tables of one partition for one piece, from
  the partition's :class:`audits.protocol.context.AuditContext`;
* :meth:`~audits.protocol.audit.Audit.combine`: one piece's result from every partition's part;
  :meth:`~audits.protocol.audit.Audit.assemble`: the audit's result from its pieces' results.

A plan context has ``runs`` (:class:`audits.corpus.runs.Runs`), ``floors`` (:func:`stats.discriminability.sandbox_floor`
of every floor row), ``floor_rows``, ``columns`` (the corpus's columns), ``facts(audit, options)`` (every partition's
:meth:`facts_part`, in partition order) and ``map(function, *args)`` (``function(partition_context, *args)`` of
every partition, in order: an extra read, e.g. the quietness of runs or the exact selection of a median). The
in-memory one is the :class:`~audits.protocol.context.AuditContext` of the whole corpus, its own single partition
(:func:`compute_in_memory`); the Dask one is built from the engine's first pass
(:mod:`audits.engine.partitioned.whole`), which maps the same parts over partitions and calls the same combines.

:func:`concat_tables` and :func:`in_problem_order` are how a combine joins its partitions' tables: one part (in
memory) is taken as it is; several are joined on their categorical codes and sorted by problem.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from stats._groups import group_codes

__all__ = ["compute_in_memory", "concat_tables", "joined", "run_rows"]


def compute_in_memory(audit, ctx, plan, options, thresholds):
    """The audit's result on ``ctx`` (an :class:`~audits.protocol.context.AuditContext`) as one partition: each
    piece's part of the whole corpus, then the same combine the Dask engine calls, then :meth:`assemble`."""
    results = []
    for piece in audit.pieces(plan):
        parts = [audit.partition_part(ctx, piece, options, thresholds)]
        results.append(audit.combine(parts, piece, options, thresholds, ctx))
    return audit.assemble(results, plan)


def run_rows(part, summary):
    """The :class:`~audits.protocol.context.RunContext` of ``summary``'s run in the partition ``part`` (an
    AuditContext), or None when the partition holds none of its non-floor rows."""
    run = part.run(summary)
    return run if run.mask.any() and len(run.rows) else None


def concat_tables(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate per-partition tables, keeping categorical columns categorical (sorted union of categories).

    Categorical columns are joined on their codes (:func:`pandas.api.types.union_categoricals`), never through
    their values: going through object columns made a Python string per row and column (at 10^8 executions,
    10^7 cells x 4 key columns, several GB on the client) to hash them back into categories."""
    frames = [f for f in frames if f is not None]
    if not frames:
        return pd.DataFrame()
    cats = list(dict.fromkeys(c for f in frames for c in f.columns if isinstance(f[c].dtype, pd.CategoricalDtype)))
    columns = pd.concat([f.iloc[:0] for f in frames]).columns  # pd.concat's own column order
    plain = [f.drop(columns=[c for c in cats if c in f.columns]) for f in frames]
    out = pd.concat(plain, ignore_index=True) if any(len(p.columns) for p in plain) else pd.DataFrame(
        index=pd.RangeIndex(sum(len(f) for f in frames)))
    for c in cats:
        out[c] = _joined_categorical([f[c] if c in f.columns else len(f) for f in frames])
    return out[list(columns)]


def _joined_categorical(pieces: list) -> pd.Categorical:
    """The pieces (categorical Series, or a row count for a frame without the column: missing values) one after
    another, categories the sorted union of theirs."""
    present = [p for p in pieces if not isinstance(p, int)]
    if len(present) == len(pieces):
        return union_categoricals(present, sort_categories=True)
    union = union_categoricals([p.iloc[:0] for p in present], sort_categories=True)
    return pd.Categorical.from_codes(np.concatenate([_recoded(p, union.categories) for p in pieces]),
                                     dtype=union.dtype)


def _recoded(piece, categories: pd.Index) -> np.ndarray:
    """A piece's codes in ``categories`` (-1, missing, stays -1; a row count: that many missing values)."""
    if isinstance(piece, int):
        return np.full(piece, -1, dtype=np.int64)
    to_union = np.append(categories.get_indexer(piece.cat.categories), -1)  # code -1 picks the appended -1
    return to_union[piece.cat.codes.to_numpy()]


def in_problem_order(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows sorted by problem (stable): the order of the in-memory tables, whatever the partitions' order."""
    if not len(frame):
        return frame
    codes = group_codes(frame, ["problem"])[0]
    if (codes[1:] >= codes[:-1]).all():  # the partitions came in problem order: no second copy of the table
        return frame.reset_index(drop=True)
    return frame.iloc[np.argsort(codes, kind="stable")].reset_index(drop=True)


def joined(frames: list[pd.DataFrame | None], *, ordered: bool = True):
    """The partitions' tables of one kind as one table: the one part itself (in memory: the table the part made,
    untouched), else :func:`concat_tables` of them (in problem order when ``ordered``); ``frames`` is emptied, so
    the caller's list does not hold a second copy of each partition's table while the join is used."""
    present = [f for f in frames if f is not None]
    frames.clear()
    if len(present) == 1:
        return present[0]
    out = concat_tables(present)
    return in_problem_order(out) if ordered else out
