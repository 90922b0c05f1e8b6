"""The calibration pairs a report or ``audit all`` uses when the user names none, and which rule chose each.

One rule (issue 23 item 3), used by the report and documented in docs/calibration.md:

* ``"named"``: the (source, target) pairs the user names win, each in the direction given, in the order given;
* otherwise the **default pairs** (:func:`choose_pairs`), computed from the rows as a set:

  1. ``"stored->fresh"``: in each environment whose campaigns are ordered (timestamps, or the order of the
     files on the command line: :attr:`audits.corpus.runs.Runs.ordered`), its earliest campaign (stored)
     against each later one (fresh). Unordered campaigns form no such pair (which one is *stored* would be
     a fact of row order). Environments come quietest first (by their stored run), ties by name.
  2. ``"vs-quietest"``: in each campaign that several environments share, every environment against the
     **quietest** of them: the lowest :func:`quietness` (median, over the run's reference cells with two or
     more ok repeats, of the cells' repeat coefficient of variation), ties broken by the environment's name
     (content, never position). A campaign where some environment has no such figure forms no pair.

  Never "the first two environments found".

Each pair comes back as a :class:`PairChoice` naming the rule that chose it; JSON and pages print ``rule``.

Examples
--------
>>> import pandas as pd
>>> rows = pd.DataFrame({"environment": ["a"] * 4 + ["b"] * 2, "campaign": ["s", "s", "f", "f", "s", "s"],
...     "problem": "p", "test": "t", "solution": "x", "repeat": [0, 1, 0, 1, 0, 1], "role": "reference",
...     "status": "ok", "duration_s": [1.0, 1.1, 1.0, 1.0, 1.0, 2.0],
...     "timestamp": ["2026-01-01"] * 2 + ["2026-02-01"] * 2 + ["2026-01-02"] * 2})
>>> [(str(p.source), str(p.target), p.rule) for p in choose_pairs(rows)]
[('a · s', 'a · f', 'stored->fresh'), ('b · s', 'a · s', 'vs-quietest')]
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from audits.corpus.runs import Run, RunError, Runs, runs_of

__all__ = ["PairChoice", "PAIR_RULES", "choose_pairs", "cell_cvs", "quietness_of", "needs_quietness", "no_pair_reason"]

#: The rules that choose a calibration pair, as JSON and pages name them.
PAIR_RULES = {
    "named": "the pair the user named (calibration's pairs option: --pair, the report's pairs, source_run/"
             "target_run or stored_run/fresh_run parameters), direction kept",
    "stored->fresh": "default: in one environment with ordered campaigns, its earliest campaign against a later one",
    "vs-quietest": "default: in one campaign, an environment against the quietest environment (lowest median "
                   "repeat CV of the references; ties by name)",
}


@dataclass(frozen=True)
class PairChoice:
    """One calibration pair: ``source`` is mapped onto ``target``; ``rule`` is the key of :data:`PAIR_RULES`."""

    source: Run
    target: Run
    rule: str

    def to_dict(self) -> dict:
        return {"source": self.source.to_dict(), "target": self.target.to_dict(), "rule": self.rule}


def cell_cvs(corpus: pd.DataFrame) -> dict[Run, np.ndarray]:
    """Per run, the repeat CVs (sample sd / mean of ok ``duration_s``) of its reference cells, in no set order.

    A cell is a (problem, test, solution); only cells with two or more ok repeats and a positive mean count.
    A cell's rows all lie in one problem, so the CVs of a partitioned dataset are those of its files put
    together (:func:`quietness_of` of the merged arrays equals :func:`quietness` of the whole corpus).
    """
    rows = corpus
    if "role" in rows.columns:
        rows = rows.loc[(rows["role"].astype(str) == "reference").to_numpy()]
    if "status" in rows.columns:
        rows = rows.loc[(rows["status"].astype(str) == "ok").to_numpy()]
    cell = ["environment", "campaign"] + [c for c in ("problem", "test", "solution") if c in rows.columns]
    if not len(rows) or "duration_s" not in rows.columns:
        return {}
    keys = rows[cell].astype(str)
    stats = rows["duration_s"].astype(float).groupby([keys[c] for c in cell], sort=False).agg(
        ["mean", "std", "count"])
    stats = stats[(stats["count"] >= 2) & (stats["mean"] > 0)]
    cv = stats["std"] / stats["mean"]
    return {Run(str(e), str(c)): values.to_numpy(dtype=float)
            for (e, c), values in cv.groupby(level=[0, 1], sort=False)}


def quietness_of(cvs: Mapping[Run, Iterable[np.ndarray]], runs: Runs) -> dict[Run, float]:
    """Per run of ``runs``, the median of its cells' repeat CVs (``cvs``: arrays per run, e.g. one per file);
    NaN for a run with none. The median is of the CVs as a set: it does not depend on their order."""
    out = {}
    for run in runs.names:
        parts = [np.asarray(a, dtype=float) for a in cvs.get(run, ())]
        values = np.concatenate(parts) if parts else np.array([])
        out[run] = float(np.median(values)) if len(values) else math.nan
    return out


def quietness(corpus: pd.DataFrame) -> dict[Run, float]:
    """Per run, the median over its reference cells of the repeat CV (sample sd / mean of ok ``duration_s``).

    A cell is a (problem, test, solution); only cells with two or more ok repeats and a positive mean count.
    NaN for a run with none. Lower is quieter. Depends only on the rows as a set.
    """
    return quietness_of({run: (values,) for run, values in cell_cvs(corpus).items()}, runs_of(corpus))


def needs_quietness(runs: Runs) -> bool:
    """Whether the default pairs depend on quietness: only where several environments are compared (one
    environment's stored->fresh pairs do not), so a one-environment corpus never pays for it."""
    return len(runs.environments) > 1


def no_pair_reason(runs: Runs) -> str:
    """Why a corpus has no default pair (:func:`choose_pairs` gave none), and what to do; names the runs."""
    several = [e for e in runs.environments if len(runs.of_environment(e)) >= 2]
    if several and not runs.ordered:
        why = (f"no pair of runs was named, and the corpus does not order the campaigns of {several[0]!r} (no "
               "timestamp column; one file): name the pair (audit: --source-campaign/--target-campaign; audit all and "
               "report: --pair SOURCE_ENV SOURCE_CAMPAIGN TARGET_ENV TARGET_CAMPAIGN, or in a report -p "
               "'stored_run=[ENV, CAMPAIGN]' -p 'fresh_run=[ENV, CAMPAIGN]')")
    else:
        why = ("no pair of runs was named, and the corpus has no default pair (one run, or environments with no "
               "repeat-CV figure): collect a second campaign (speedaudit collect --campaign NAME) or environment")
    return f"{why} (runs: {runs.listing()})"


def choose_pairs(corpus: pd.DataFrame | None, *, named: Iterable = (), runs: Runs | None = None,
                 figure: Mapping | None = None) -> tuple[PairChoice, ...]:
    """The calibration pairs: ``named`` ones if any (rule ``"named"``), else the default pairs (module docstring).

    Parameters
    ----------
    corpus : DataFrame
    named : iterable of (source, target), optional
        Runs as :meth:`audits.corpus.runs.Run.coerce` reads them; each must be in the corpus.
    runs : Runs, optional
        The run table (e.g. with the user's file order); computed from ``corpus`` when None.
    figure : mapping Run -> float, optional
        The quietness per run; when None, :func:`quietness` of ``corpus`` where the default pairs need it
        (:func:`needs_quietness`). With ``runs`` and ``figure`` given, ``corpus`` is not read (the Dask engine
        passes None).

    Returns
    -------
    tuple of PairChoice
        Named: in the order given. Default: stored->fresh pairs (environments quietest first by their stored
        run's quietness, ties and no figure by name), then vs-quietest pairs (campaigns by name, environments
        by name): each pair once. The report calibrates and shows every one (audits.report.inputs.calibrate_pairs).
    """
    table = runs if runs is not None else runs_of(corpus)
    given = [(Run.coerce(s), Run.coerce(t)) for s, t in named]
    if given:
        for s, t in given:
            table.get(s), table.get(t)
            if s == t:
                raise RunError(f"source and target are the same run {s}; name two different runs")
        return tuple(PairChoice(s, t, "named") for s, t in dict.fromkeys(given))
    out: list[PairChoice] = []
    if figure is None:
        figure = quietness(corpus) if needs_quietness(table) else {}
    values = dict(figure)
    if table.ordered:
        for env in sorted(table.environments, key=lambda e: (_figure(values, table.of_environment(e)[0].run), e)):
            own = table.of_environment(env)
            out.extend(PairChoice(own[0].run, later.run, "stored->fresh") for later in own[1:])
    for camp in sorted({s.campaign for s in table}):
        members = sorted((s.run for s in table if s.campaign == camp), key=lambda r: r.environment)
        if len(members) < 2 or not all(np.isfinite(float(values.get(r, math.nan))) for r in members):
            continue
        quietest = min(members, key=lambda r: (float(values[r]), r.environment))
        out.extend(PairChoice(r, quietest, "vs-quietest") for r in members if r != quietest)
    return tuple(dict.fromkeys(out))


def _figure(values: Mapping, run: Run) -> float:
    """A run's quietness for sorting: NaN (no figure) sorts after every number."""
    v = float(values.get(run, math.nan))
    return v if np.isfinite(v) else math.inf
