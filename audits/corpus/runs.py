"""Runs: which (environment, campaign) pairs a corpus holds, in which order, and how to name one.

A **run** is one (environment, campaign): the executions of one collection
session on one sandbox or machine (:data:`audits.corpus.schema.RUN_COLUMNS`).
Every audit says which runs it used and how many repeats each had; this module
is the one place that answers

* **which runs** a corpus holds (:func:`runs_of`; runs made only of ``floor``
  rows, the empty program, are left out unless ``include_floor=True``);
* **their repeat counts** (:attr:`RunSummary.repeats`: the most common number
  of distinct repeat indices of a (problem, test, solution) cell of the run,
  ties to the smaller; ``max_repeats`` the largest);
* **their order** (:attr:`Runs.order_by`):

  1. ``"timestamp"``: when the corpus has a ``timestamp`` column and every run
     has a parseable one, runs are ordered by their earliest timestamp (ties
     by environment, then campaign name). This depends only on the rows as a
     set.
  2. ``"user"``: an explicit order given by the caller (``order=``, e.g. the
     order of the corpus files on the command line), for the runs it names;
     the others follow as in 3.
  3. ``"corpus order"``: otherwise, the order of the corpus' own categories of
     ``environment`` then ``campaign``: for a file written by speedaudit (Parquet)
     the order in which the names first appeared when it was written, kept on
     disk, so shuffling the rows does not change it; for a CSV or a plain
     DataFrame, first appearance in the rows as read. Because that can depend on
     row order, nothing a figure is computed from may depend on it: audits use it
     only to list their runs (every run is audited on its own), and a choice a
     figure depends on (e.g. which campaign is the *stored* one, in
     ``speedaudit report``; which campaign the simulator uses when none is named)
     is made only from 1 or 2 (:attr:`Runs.ordered`), never from 3.

* **how a user names one**: by its environment and its campaign, separately
  (:class:`Run`, or ``--environment`` / ``--campaign`` on the command line).
  Names are data: they may contain any character, including ``/``, ``:`` and
  spaces, and are never split or parsed. :meth:`Runs.select` turns an optional
  environment and campaign into the runs they denote, with an error listing
  the runs when they denote none.

Examples
--------
>>> import pandas as pd
>>> corpus = pd.DataFrame({"environment": ["host/Intel Xeon W-2255"] * 3 + ["a:b"],
...     "campaign": ["fresh", "stored", "stored", "c0"], "problem": "p", "test": "t", "solution": "s",
...     "repeat": [0, 0, 1, 0], "timestamp": ["2026-02-01", "2026-01-01", "2026-01-01", "2025-12-01"]})
>>> runs = runs_of(corpus)
>>> runs.order_by, [str(r) for r in runs.names]
('timestamp', ['a:b · c0', 'host/Intel Xeon W-2255 · stored', 'host/Intel Xeon W-2255 · fresh'])
>>> [s.repeats for s in runs]
[1, 2, 1]
>>> runs.select(environment="host/Intel Xeon W-2255", campaign="stored")
(Run(environment='host/Intel Xeon W-2255', campaign='stored'),)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from stats.coverage import unmeasured_by_run
from audits.corpus.schema import OPTIONAL_DEFAULTS, RUN_COLUMNS
from audits.errors import UserError
from stats._groups import first_rows, group_codes, label_mask, unique_ints

__all__ = ["Run", "RunSummary", "Runs", "RunError", "runs_of", "run_codes", "select_rows", "describe_runs", "RULES", "covered_runs",
           "one_run", "rule_of"]

ORDER_BY = ("timestamp", "user", "corpus order")


class RunError(UserError, ValueError):
    """A run that the corpus does not hold, or a selection that names none (the message lists the runs)."""


@dataclass(frozen=True)
class Run:
    """One (environment, campaign). Names are any text; they are never split or parsed.

    ``str(run)`` is a display label (``environment · campaign``), not a way to name a run.

    Examples
    --------
    >>> Run.coerce(["host/x", "a:b"]), Run.coerce({"environment": "e", "campaign": "c"}).campaign
    (Run(environment='host/x', campaign='a:b'), 'c')
    """

    environment: str
    campaign: str

    def __post_init__(self):
        for name in RUN_COLUMNS:
            if not isinstance(getattr(self, name), str):
                raise RunError(f"a run's {name} is a name (text), got {getattr(self, name)!r}")

    def __str__(self) -> str:
        return f"{self.environment} · {self.campaign}"

    def to_dict(self) -> dict:
        return {"environment": self.environment, "campaign": self.campaign}

    @classmethod
    def coerce(cls, value) -> Run:
        """A :class:`Run` from a Run, an ``(environment, campaign)`` pair or a mapping with those keys."""
        if isinstance(value, Run):
            return value
        if isinstance(value, Mapping):
            if set(value) != set(RUN_COLUMNS):
                raise RunError(f"a run is written {{environment: NAME, campaign: NAME}}, got {dict(value)!r}")
            return cls(str(value["environment"]), str(value["campaign"]))
        if isinstance(value, (list, tuple)) and len(value) == 2:
            return cls(str(value[0]), str(value[1]))
        raise RunError(f"a run is named by its environment and campaign, e.g. [quiet, c0] or "
                       f"{{environment: quiet, campaign: c0}}; got {value!r}")

    def mask(self, corpus: pd.DataFrame) -> np.ndarray:
        """Rows of ``corpus`` that belong to this run (compared on category codes, no string copies)."""
        return label_mask(corpus["environment"], self.environment) & label_mask(corpus["campaign"], self.campaign)


@dataclass(frozen=True)
class RunSummary:
    """A run and what it holds: rows (non-floor), problems, repeats, first timestamp, position in the order."""

    run: Run
    rows: int
    problems: int
    cells: int
    repeats: int
    max_repeats: int
    first_timestamp: str | None
    position: int
    #: Nested repeats (a ``run`` column: pyperf's worker processes): the most common number of processes per
    #: cell, and of values per (cell, process); None without a ``run`` column.
    processes: int | None = None
    values_per_process: int | None = None
    #: The problems of the run that no ranking can use, as (problem, cause) sorted by problem
    #: (:mod:`stats.coverage`): no optimization test, no correct reference, or no ok timing of one.
    unmeasured: tuple[tuple[str, str], ...] = ()

    @property
    def repeats_text(self) -> str:
        """The one way a run's repeats are stated: ``"20 processes x 3 values"`` (nested), else ``"5 repeats"``.

        A repeat (the design's ``repeat`` column: the repetition index within a campaign) is an execution of its
        own; nested values (a ``run`` column: pyperf's worker processes) are not: the values of one process share
        its state. So one process of 4 values is ``"1 process x 4 values"``, not ``"4 repeats"`` (the reliability
        audit's repeat figures are then n/a: 1 process per cell).
        """
        v = self.values_per_process or 0
        if self.processes is not None and (self.processes > 1 or v > 1):
            return (f"{self.processes} process{'es' if self.processes != 1 else ''} x {v} "
                    f"value{'s' if v != 1 else ''}")
        return f"{self.repeats} repeat{'s' if self.repeats != 1 else ''}"

    @property
    def environment(self) -> str:
        return self.run.environment

    @property
    def campaign(self) -> str:
        return self.run.campaign

    def __str__(self) -> str:
        return f"{self.run} ({self.repeats_text})"

    def to_dict(self) -> dict:
        return {**self.run.to_dict(), "repeats": self.repeats, "max_repeats": self.max_repeats,
                "processes": self.processes, "values_per_process": self.values_per_process,
                "repeats_text": self.repeats_text, "rows": self.rows,
                "problems": self.problems, "cells": self.cells, "first_timestamp": self.first_timestamp,
                "unmeasured": [{"problem": p, "cause": c} for p, c in self.unmeasured]}


@dataclass(frozen=True)
class Runs:
    """The runs of a corpus in their order (see the module docstring for the rule)."""

    summaries: tuple[RunSummary, ...]
    order_by: str

    def __iter__(self) -> Iterator[RunSummary]:
        return iter(self.summaries)

    def __len__(self) -> int:
        return len(self.summaries)

    @property
    def names(self) -> tuple[Run, ...]:
        return tuple(s.run for s in self.summaries)

    @property
    def ordered(self) -> bool:
        """Whether the order is a property of the data or the user (timestamps, explicit order), not of row order."""
        return self.order_by in ("timestamp", "user")

    @property
    def environments(self) -> list[str]:
        """Environments in run order, each once."""
        return list(dict.fromkeys(s.environment for s in self.summaries))

    def get(self, run) -> RunSummary:
        run = Run.coerce(run)
        for s in self.summaries:
            if s.run == run:
                return s
        raise RunError(f"environment {run.environment!r} has no campaign {run.campaign!r} in the corpus; "
                       f"runs: {self.listing()}")

    def of_environment(self, environment: str) -> tuple[RunSummary, ...]:
        return tuple(s for s in self.summaries if s.environment == environment)

    def select(self, *, environment: str | None = None, campaign: str | None = None) -> tuple[Run, ...]:
        """The runs an optional environment and campaign denote (None: any), in run order.

        Raises :class:`RunError`, listing the corpus' runs, when they denote none.
        """
        chosen = tuple(s.run for s in self.summaries
                       if (environment is None or s.environment == environment)
                       and (campaign is None or s.campaign == campaign))
        if not chosen:
            what = " and ".join(f"{k} {v!r}" for k, v in (("environment", environment), ("campaign", campaign))
                                if v is not None)
            raise RunError(f"no run has {what}; runs (environment · campaign): {self.listing()}\n"
                           f"  -> pass --environment NAME and/or --campaign NAME of one of them")
        return chosen

    def one(self, *, environment: str | None = None, campaign: str | None = None) -> Run:
        """The single run an environment and campaign denote; an error listing the candidates otherwise."""
        chosen = self.select(environment=environment, campaign=campaign)
        if len(chosen) > 1:
            raise RunError(f"{len(chosen)} runs match: {', '.join(str(self.get(r)) for r in chosen)}; this audit "
                           "uses one run\n  -> choose it with --environment NAME and --campaign NAME")
        return chosen[0]

    def listing(self, limit: int = 20) -> str:
        shown = ", ".join(str(s) for s in self.summaries[:limit])
        return shown + (f", ... ({len(self) - limit} more)" if len(self) > limit else "") if self.summaries \
            else "(none)"

    def to_frame(self) -> pd.DataFrame:
        """One row per run: environment, campaign, repeats, max_repeats, rows, problems, cells, first_timestamp."""
        columns = ["environment", "campaign", "repeats", "max_repeats", "rows", "problems", "cells",
                   "first_timestamp"]
        return pd.DataFrame([s.to_dict() for s in self.summaries], columns=columns)

    def to_dict(self) -> dict:
        return {"order_by": self.order_by, "runs": [s.to_dict() for s in self.summaries]}

    def summary(self) -> str:
        return f"runs (ordered by {self.order_by}): {self.listing()}"


def timestamps(values: pd.Series) -> pd.Series:
    """A ``timestamp`` column as timezone-aware datetimes: text parsed in UTC (unparseable: NaT), naive datetimes
    read as UTC, aware ones as they are."""
    if pd.api.types.is_datetime64_any_dtype(values):
        return values if values.dt.tz is not None else values.dt.tz_localize("UTC")
    return pd.to_datetime(values, errors="coerce", utc=True, format="mixed")


def run_codes(frame: pd.DataFrame) -> tuple[np.ndarray, list[Run]]:
    """A dense run code per row of ``frame`` and the :class:`Run` of each code: the names are read as text from one
    row per run only (a whole column as text is 10^7 Python strings at 10^7 rows)."""
    run_code, n_runs = group_codes(frame, list(RUN_COLUMNS))
    first = first_rows(run_code, n_runs)
    envs = frame["environment"].iloc[first].astype(str).to_numpy()
    camps = frame["campaign"].iloc[first].astype(str).to_numpy()
    return run_code, [Run(str(e), str(c)) for e, c in zip(envs, camps)]


def runs_of(
    corpus: pd.DataFrame,
    *,
    order: Sequence | None = None,
    include_floor: bool = False,
) -> Runs:
    """The runs of ``corpus`` with their repeat counts, in the documented order.

    Parameters
    ----------
    corpus : DataFrame
        A corpus (:func:`audits.corpus.io.load_corpus`); ``environment`` and ``campaign`` default to the
        schema's defaults when absent.
    order : sequence of runs, optional
        An explicit order (e.g. the order of the corpus files given on the command line); used when the
        timestamps do not order every run.
    include_floor : bool, default False
        Count ``floor`` rows (and runs made only of them).

    Returns
    -------
    Runs
    """
    missing = {c: OPTIONAL_DEFAULTS[c] for c in RUN_COLUMNS if c not in corpus.columns}
    if missing:
        corpus = corpus.assign(**missing)
    body = np.ones(len(corpus), dtype=bool)
    if not include_floor and "role" in corpus.columns:
        body = ~label_mask(corpus["role"], "floor")
    # the columns read below only: a run table of 10^7 rows need not copy the durations and extra columns
    read = [c for c in (*RUN_COLUMNS, "problem", "test", "solution", "repeat", "timestamp", "run", "role",
                        "test_kind", "correct", "status") if c in corpus.columns]
    rows = corpus.loc[body, read] if not body.all() else corpus
    if len(rows) == 0:
        return Runs((), "corpus order")
    run_code, names = run_codes(rows)
    n_runs = len(names)
    n_rows = np.bincount(run_code, minlength=n_runs)

    cell_cols = [c for c in ("problem", "test", "solution") if c in rows.columns]
    cell, n_cells = group_codes(rows, list(RUN_COLUMNS) + cell_cols)
    cell_run = np.zeros(n_cells, dtype=np.int64)
    cell_run[cell] = run_code
    repeat = rows["repeat"].to_numpy(dtype=np.int64) if "repeat" in rows.columns else np.zeros(len(rows), np.int64)
    radix = int(repeat.max()) + 1 if len(repeat) else 1
    pairs = unique_ints(cell * radix + repeat)
    per_cell = np.bincount(pairs // radix, minlength=n_cells)
    cells_per_run = np.bincount(cell_run, minlength=n_runs)
    tally = np.zeros((n_runs, int(per_cell.max()) + 1), dtype=np.int64)
    np.add.at(tally, (cell_run, per_cell), 1)
    mode = tally.argmax(axis=1)
    max_rep = np.zeros(n_runs, dtype=np.int64)
    np.maximum.at(max_rep, cell_run, per_cell)
    if "problem" in rows.columns:
        prob, n_prob = group_codes(rows, ["problem"])
        n_problems = np.bincount(unique_ints(run_code * n_prob + prob) // n_prob, minlength=n_runs)
    else:
        n_problems = np.zeros(n_runs, dtype=np.int64)

    stamps = [None] * n_runs
    order_by = "corpus order"
    position = list(range(n_runs))  # group codes number the runs in the order of the columns' codes
    if "timestamp" in rows.columns:
        parsed = timestamps(rows["timestamp"])
        ok = parsed.notna().to_numpy()
        if ok.any():
            values = parsed[ok].dt.tz_localize(None).to_numpy().astype("datetime64[ns]").astype(np.int64)
            earliest = np.full(n_runs, np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(earliest, run_code[ok], values)
            has = np.bincount(run_code[ok], minlength=n_runs) > 0
            stamps = [pd.Timestamp(int(v), tz="UTC").isoformat() if h else None for v, h in zip(earliest, has)]
            if has.all():
                order_by = "timestamp"
                position = sorted(range(n_runs), key=lambda k: (earliest[k], names[k].environment, names[k].campaign))
    if order_by != "timestamp" and order:
        given = [Run.coerce(r) for r in order]
        rank = {r: i for i, r in enumerate(dict.fromkeys(given))}
        if any(n in rank for n in names):
            order_by = "user"
            position = sorted(range(n_runs), key=lambda k: (rank.get(names[k], len(rank)), position.index(k)))
    processes = values = [None] * n_runs
    if "run" in rows.columns and rows["run"].notna().any():  # nested repeats: processes x values per process
        proc = pd.factorize(rows["run"], sort=True)[0].astype(np.int64)
        has = proc >= 0
        n_proc_codes = int(proc.max()) + 1 if has.any() else 1
        cell_proc = np.where(has, cell * n_proc_codes + np.maximum(proc, 0), -1)
        per_cp = unique_ints(cell_proc[has])
        procs_per_cell = np.bincount(per_cp // n_proc_codes, minlength=n_cells)
        processes = [_mode(procs_per_cell[(cell_run == k) & (procs_per_cell > 0)]) for k in range(n_runs)]
        cp_code, cp_index = np.unique(cell_proc[has], return_inverse=True)
        vals_per_cp = np.bincount(cp_index)  # values per (cell, process) (rows: one value each)
        cp_run = cell_run[cp_code // n_proc_codes]
        values = [_mode(vals_per_cp[cp_run == k]) for k in range(n_runs)]
    if include_floor and "role" in rows.columns:  # what is not measured is a matter of the non-floor rows
        keep = ~label_mask(rows["role"], "floor")
        unmeasured = unmeasured_by_run(rows.loc[keep], run_code[keep], n_runs)
    else:
        unmeasured = unmeasured_by_run(rows, run_code, n_runs)
    summaries = tuple(
        RunSummary(run=names[k], rows=int(n_rows[k]), problems=int(n_problems[k]), cells=int(cells_per_run[k]),
                   repeats=int(mode[k]), max_repeats=int(max_rep[k]), first_timestamp=stamps[k], position=i,
                   processes=processes[k], values_per_process=values[k], unmeasured=unmeasured[k])
        for i, k in enumerate(position))
    return Runs(summaries, order_by)


def _mode(counts: np.ndarray) -> int | None:
    """The most common value of ``counts`` (ties to the smaller); None when empty."""
    if not len(counts):
        return None
    return int(np.bincount(counts).argmax())


def select_rows(corpus: pd.DataFrame, runs: Iterable) -> pd.DataFrame:
    """Rows of ``corpus`` that belong to any of ``runs`` (Run objects or pairs)."""
    mask = np.zeros(len(corpus), dtype=bool)
    for run in runs:
        mask |= Run.coerce(run).mask(corpus)
    return corpus.loc[mask]


def describe_runs(summaries: Iterable[RunSummary]) -> str:
    """``"quiet · c0 (5 repeats), busy · c0 (3 repeats)"``: the runs a result used, for its summary."""
    return ", ".join(str(s) for s in summaries) or "(no run)"


# --- the one rule for choosing runs and pairs ------------------------------------------------------------
#: How each kind of audit chooses what it covers (every audit's plan step calls one of the functions below;
#: the names are what the documentation and the skipped reasons cite).
#: Every audit's JSON names the rule that chose its runs (``run_rule``, a key of this table) and its page shows it.
RULES = {
    "every run": "every run of the corpus (no environment / campaign named), each audited on its own, in run order "
                 "(covered_runs)",
    "named runs": "the runs --environment / --campaign (environment=, campaign=, a report's *_environment / "
                  "*_campaign parameter) or an explicit list of runs denote, each audited on its own, in run order "
                  "(covered_runs)",
    "one run": "the run environment and campaign name; left out, the environment must be the only one that "
               "matches, and a campaign left out is its only one, else its earliest by timestamp (or the user's "
               "order), else the first by name, never the file's row order (one_run)",
    "named pairs": "the (source, target) pairs the user names, direction kept as given (calibration's pairs "
                   "option); never guessed",
    "default pairs": "without named pairs: each stored -> fresh campaign pair in one environment, and each "
                     "environment against the quietest in one campaign (audits.corpus.selection.choose_pairs)",
}


class Covered(tuple):
    """The runs an audit covers (:class:`RunSummary`, in run order), a tuple, with the rule of :data:`RULES` that
    chose them (``rule``), which the audit's result names (``run_rule``)."""

    rule: str

    def __new__(cls, summaries: Iterable[RunSummary], rule: str):
        if rule not in RULES:
            raise ValueError(f"run rule {rule!r} is not one of {', '.join(RULES)}")
        covered = super().__new__(cls, summaries)
        covered.rule = rule
        return covered

    def __reduce__(self):  # pickled with its rule (a Dask plan's pieces travel to the workers)
        return Covered, (tuple(self), self.rule)


def rule_of(runs, default: str = "every run") -> str:
    """The rule that chose ``runs`` (a :class:`Covered`), else ``default``."""
    return getattr(runs, "rule", default)


def _table(runs) -> Runs:
    return runs if isinstance(runs, Runs) else runs_of(runs)


def covered_runs(runs, *, environment: str | None = None, campaign: str | None = None,
                 explicit: Iterable | None = None) -> tuple[RunSummary, ...]:
    """Rule ``"every run"`` (nothing named), or ``"named runs"``: ``explicit`` runs if given, else those
    ``environment`` / ``campaign`` denote, in run order; a :class:`RunError` lists the runs when none match.

    ``runs``: a :class:`Runs` table or a corpus. Returns a :class:`Covered` (its ``rule`` says which).
    """
    table = _table(runs)
    if explicit is not None:
        return Covered((table.get(r) for r in explicit), "named runs")
    rule = "every run" if environment is None and campaign is None else "named runs"
    return Covered((table.get(r) for r in table.select(environment=environment, campaign=campaign)), rule)


def one_run(runs, *, environment: str | None = None, campaign: str | None = None) -> RunSummary:
    """Rule ``"one run"`` (see :data:`RULES`): the one run an audit of one run (the simulator) uses."""
    table = _table(runs)
    matches = [table.get(r) for r in table.select(environment=environment, campaign=campaign)]
    envs = list(dict.fromkeys(s.environment for s in matches))
    if len(envs) > 1:
        raise RunError(f"the corpus holds several environments ({', '.join(map(repr, envs))}); this audit uses "
                       f"one run: choose it with --environment NAME (environment=...); runs: {table.listing()}")
    if len(matches) > 1 and not table.ordered:
        return min(matches, key=lambda s: s.campaign)
    return matches[0]
