"""What a page says about its corpus: the run table and one sentence (from the rows, or from counts that
add up over a partitioned dataset's files).

Part of :mod:`audits.report.narrative` (which re-exports every public name).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from audits.corpus.counts import corpus_counts
from audits.corpus.runs import runs_of
from audits.report.narrative.common import code_name, run_name

__all__ = ["corpus_overview", "describe_corpus", "describe_counts", "run_table"]


def run_table(runs, counts) -> pd.DataFrame:
    """Per run (environment, campaign), in the run table's order (:mod:`audits.corpus.runs`: timestamps, else
    the corpus order; a listing only), of the non-floor rows: rows, problems, solutions, repeats (most common
    per cell, and the most), ok share. ``runs``: :class:`audits.corpus.runs.Runs`; ``counts``:
    :class:`audits.corpus.counts.CorpusCounts` (a partitioned dataset's: its files' counts added up)."""
    per_run = [counts.runs.get(s.run, (0, 0, 0)) for s in runs]
    table = pd.DataFrame({
        "environment": [s.environment for s in runs], "campaign": [s.campaign for s in runs],
        "rows": [r for r, _, _ in per_run], "problems": [s.problems for s in runs],
        "solutions": [n for _, n, _ in per_run], "repeats": [s.repeats for s in runs],
        "max_repeats": [s.max_repeats for s in runs],
        "ok_share": [ok / rows if rows else float("nan") for rows, _, ok in per_run],
    })
    return table.set_index(["environment", "campaign"])


def describe_counts(runs, counts, sources: Sequence[str] | str = ()) -> str:
    """One sentence saying what the report is based on (files, runs, problems, solutions, repeats), from the
    run table and the counts (:func:`run_table`), so a partitioned dataset's is that of its rows loaded."""
    if isinstance(sources, str):
        sources = [sources]
    table = run_table(runs, counts)
    run_text = ", ".join(f"{run_name((e, c))} ({r} repeat{'s' if r != 1 else ''})"
                         for (e, c), r in zip(table.index, table["repeats"]))
    repeats = int(table["max_repeats"].max()) if len(table) else 0
    files = ", ".join(code_name(Path(s).name) for s in sources)
    return (f"**Corpus**: {counts.executions:,} executions from {files or 'memory'}: {counts.problems:,} problems, "
            f"{counts.solutions:,} (problem, solution) pairs, up to {repeats} repeats, "
            f"runs (environment · campaign): {run_text}.")


def corpus_overview(corpus: pd.DataFrame) -> pd.DataFrame:
    """Rows, problems, solutions, repeats (most common per cell, and the most) and ok share per run
    (environment, campaign), floor rows excluded, in run order (:mod:`audits.corpus.runs`).

    Examples
    --------
    >>> frame = pd.DataFrame({"environment": "e", "campaign": ["a", "a", "b"], "problem": "p", "test": "t",
    ...     "solution": ["s", "s", "s"], "repeat": [0, 1, 0], "status": ["ok", "timeout", "ok"],
    ...     "role": "reference"})
    >>> corpus_overview(frame)[["rows", "solutions", "repeats", "ok_share"]].values.tolist()
    [[2.0, 1.0, 2.0, 0.5], [1.0, 1.0, 1.0, 1.0]]
    """
    return run_table(runs_of(corpus), corpus_counts(corpus))


def describe_corpus(corpus: pd.DataFrame, sources: Sequence[str] | str = ()) -> str:
    """One sentence saying what the report is based on (files, runs, problems, solutions, repeats)."""
    return describe_counts(runs_of(corpus), corpus_counts(corpus), sources)
