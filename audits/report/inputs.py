"""What a report reads and which runs it shows: the corpus files (found from the working directory, the
checkout or an installed wheel) stacked into one corpus, the runs a page parameter names, the runs the report
suggests for a corpus that names none, and the calibration of one named pair.

Kept apart from :mod:`audits.report.render` (which runs the notebooks) so that the results a page shows
(:mod:`audits.report.results`) and the rendering both build on it, without an import cycle between them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from audits.checks.calibration import calibration_pair, run_calibration_audit
from audits.checks.reward_environments import find_shipped
from audits.corpus.io import CorpusError, load_corpus
from audits.corpus.runs import Run, RunError, runs_of
from audits.corpus.selection import PAIR_RULES, choose_pairs, no_pair_reason
from audits.engine import routing
from audits.errors import UserError
from audits.protocol import registry
from audits.protocol.context import audit_context
from audits.protocol.findings import Finding
from stats._groups import first_rows, group_codes

__all__ = ["repo_root", "resolve_files", "resolve_corpora", "load_corpora", "resolve_run", "PAIR_PARAMETERS",
           "suggest_runs", "CalibrationSkipped", "named_pairs", "calibrate_pairs"]


def repo_root() -> Path:
    """The checkout this package runs from (the folder holding ``notebooks/`` and ``fixtures/``)."""
    return Path(__file__).resolve().parents[2]


def resolve_files(paths: str | os.PathLike | Sequence[str | os.PathLike], *, what: str = "file") -> list[Path]:
    """Absolute paths; a relative path is looked up from the working directory, then the repo root.

    Notebook defaults are written relative to the repository (``fixtures/...``) so that a template runs
    as it is in JupyterLab (whose working directory is ``notebooks/``) and under papermill. A shipped
    reward-environment file (``fixtures/environments/<file>``) is also found in an installed wheel
    (:func:`audits.checks.reward_environments.find_shipped`).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out = []
    for raw in paths:
        path = Path(raw).expanduser()
        candidates = [path] if path.is_absolute() else [Path.cwd() / path, repo_root() / path]
        if not path.is_absolute() and (shipped := find_shipped(path)) is not None:
            candidates.append(shipped)  # e.g. fixtures/environments/top30.yaml in an installed wheel
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            tried = ", ".join(dict.fromkeys(str(c) for c in candidates))
            hint = ("pass an existing .parquet/.csv/.jsonl file, e.g. one of fixtures/corpora/*.parquet or the "
                    "output of 'speedaudit collect'") if what == "corpus file" else "check the path"
            raise UserError(f"{what} {raw} not found (looked in: {tried}); {hint}")
        out.append(found.resolve())
    return out


def resolve_corpora(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> list[Path]:
    """:func:`resolve_files` for corpus files (the error says how to get one)."""
    return resolve_files(paths, what="corpus file")


def load_corpora(paths: str | os.PathLike | Sequence[str | os.PathLike]):
    """Load and validate one or more corpora and stack them into one.

    The corpora must not overlap: each (environment, campaign) may come from one file only, because
    its repeats would otherwise be mixed silently. Categories are unified. With several files,
    ``attrs["run_order"]`` lists the runs in the order the files were given (an explicit user order
    for :func:`audits.corpus.runs.runs_of` when the corpus has no timestamps).
    """
    frames, seen = [], {}
    for path in resolve_corpora(paths):
        routing.refuse_whole_load(path)  # one rule with `audit all`: such a dataset is audited on Dask
        frame = load_corpus(path)
        codes, n_runs = group_codes(frame, ["environment", "campaign"])
        first = first_rows(codes, n_runs)
        runs = zip(frame["environment"].iloc[first].astype(str), frame["campaign"].iloc[first].astype(str))
        for env, campaign in runs:
            if (env, campaign) in seen:
                raise CorpusError(f"{path}: environment {env!r} campaign {campaign!r} is also in {seen[env, campaign]}; "
                                  "give each file its own campaign name (speedaudit collect --campaign NAME) or "
                                  "pass only one of them")
            seen[env, campaign] = path
        frames.append(frame)
    if len(frames) == 1:
        return frames[0]
    # Stack without turning categoricals into object arrays (slow at 10^7 rows): give every frame the
    # union of the categories, so concat keeps the categorical dtype and only remaps codes.
    for column in frames[0].columns:
        if not all(column in f.columns and isinstance(f[column].dtype, pd.CategoricalDtype) for f in frames):
            continue
        union = list(frames[0][column].cat.categories)
        seen_values = set(union)
        for f in frames[1:]:
            union += [v for v in f[column].cat.categories if v not in seen_values]
            seen_values.update(f[column].cat.categories)
        for k, f in enumerate(frames):
            if list(f[column].cat.categories) != union:
                frames[k] = f.assign(**{column: f[column].cat.set_categories(union)})
    stacked = pd.concat(frames, ignore_index=True)
    stacked.attrs["run_order"] = [list(run) for run in seen]
    return stacked


def resolve_run(corpus, value, *, runs=None):
    """The :class:`audits.corpus.runs.Run` a report parameter names (among ``runs``, default the corpus's run table).

    ``value`` is ``[environment, campaign]`` (the form :func:`suggest_runs` writes), a mapping
    ``{environment: ..., campaign: ...}``, a Run, or a string, which is looked up (never split) as the
    display label ``environment/campaign`` of exactly one run of the corpus, for the templates' older
    defaults; a label that fits several runs (names may contain ``/``) is an error asking for the pair form.
    """
    runs = runs if runs is not None else runs_of(corpus)
    if isinstance(value, str):
        matches = [r for r in runs.names if f"{r.environment}/{r.campaign}" == value]
        if len(matches) != 1:
            raise UserError(f"run {value!r} is {'ambiguous' if matches else 'not in the corpus'}: name it as "
                            f"[ENVIRONMENT, CAMPAIGN] (e.g. -p 'stored_run=[quiet, c0]'); runs: {runs.listing()}")
        return matches[0]
    try:
        run = Run.coerce(value)
        runs.get(run)
    except RunError as exc:
        raise UserError(str(exc)) from exc
    return run


def run_label(value) -> str:
    """Display label of a run parameter (``environment · campaign``), for titles; ``none`` for None."""
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return str(Run.coerce(value))


def select_pair(corpus, source, target):
    """The two runs a calibration section compares (:func:`audits.checks.calibration.calibration_pair`), each
    named as :func:`resolve_run` reads it. The direction is kept: ``source`` is mapped onto ``target``.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"environment": ["quiet", "quiet", "busy"], "campaign": ["a", "b", "b"]})
    >>> pair = select_pair(runs, ["quiet", "a"], ["quiet", "b"])
    >>> pair.key, pair.source, pair.target, len(pair.frame)
    ('campaign', 'a', 'b', 2)
    >>> select_pair(runs, ["quiet", "b"], ["busy", "b"]).key
    'environment'
    """
    pair = _named_pair(corpus, source, target)
    return calibration_pair(corpus, source=pair.source, target=pair.target)


def _named_pair(corpus, source, target, *, runs=None):
    """The :class:`audits.corpus.selection.PairChoice` (rule ``"named"``) of two run parameters (among ``runs``,
    default the corpus's run table, computed once)."""
    runs = runs if runs is not None else runs_of(corpus)
    named = [(resolve_run(corpus, source, runs=runs), resolve_run(corpus, target, runs=runs))]
    return choose_pairs(corpus, named=named, runs=runs)[0]


#: Template parameters that name runs of the corpus; chosen by :func:`suggest_runs` when the user passes
#: corpora without them (the templates' defaults name runs of the shipped corpora).
RUN_PARAMETERS = ("stored_run", "fresh_run", "source_run", "target_run", "aggregation_environment",
                  "simulation_environment")


#: The template parameters that name calibration pairs: ``pairs`` (the calibration audit's option, a list of
#: [source, target] runs) and the older one-pair forms ``stored_run``/``fresh_run`` and ``source_run``/``target_run``.
#: None of them given: the report calibrates the default pairs (:func:`calibrate_pairs`); never suggested.
PAIR_PARAMETERS = ("pairs", "stored_run", "fresh_run", "source_run", "target_run")


def suggest_runs(corpus, *, order=None) -> dict:
    """Runs of ``corpus`` for the templates' run parameters (:data:`RUN_PARAMETERS`), as ``[environment, campaign]``.

    * ``stored_run``/``fresh_run`` and ``source_run``/``target_run``: the first ``"stored->fresh"`` and the
      first ``"vs-quietest"`` default pair (what a caller naming one pair of each kind may take; ``speedaudit
      report`` does not: without named pairs it calibrates every default pair, :func:`calibrate_pairs`) of :func:`audits.corpus.selection.choose_pairs` (the one rule for
      pairs: stored -> fresh only when the runs are ordered by timestamps or by ``order``, the order of the
      corpus files on the command line; an environment against the quietest one of its campaign, never "the
      first two environments"). None when the corpus has no such pair, and the report says how to name them
      (``-p 'stored_run=[ENV, CAMPAIGN]'``);
    * ``aggregation_environment``/``simulation_environment``: ``quiet`` if present, else the first by name.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"environment": ["busy"] * 2 + ["quiet"] * 4, "campaign": list("bbaabb"),
    ...     "problem": "p", "test": "t", "solution": "s", "repeat": [0, 1] * 3, "status": "ok", "role": "reference",
    ...     "duration_s": [1.0, 2.0, 1.0, 1.01, 1.0, 1.01],
    ...     "timestamp": ["2026-01-03"] * 2 + ["2026-01-01"] * 2 + ["2026-01-02"] * 2})
    >>> s = suggest_runs(runs)
    >>> s["stored_run"], s["fresh_run"], s["source_run"], s["target_run"]
    (['quiet', 'a'], ['quiet', 'b'], ['busy', 'b'], ['quiet', 'b'])
    """
    runs = runs_of(corpus, order=order)
    envs = sorted(runs.environments, key=lambda e: (e != "quiet", e))
    out: dict = dict.fromkeys(RUN_PARAMETERS)
    for choice in choose_pairs(corpus, runs=runs):
        names = {"stored->fresh": ("stored_run", "fresh_run"), "vs-quietest": ("source_run", "target_run")}
        source, target = names[choice.rule]
        if out[source] is None:
            out[source], out[target] = list(choice.source.to_dict().values()), list(choice.target.to_dict().values())
    if envs:
        out["aggregation_environment"] = out["simulation_environment"] = envs[0]
    return out


@dataclass(frozen=True)
class CalibrationSkipped:
    """Stands in for a calibration audit when no pair of runs was named (``*_run`` is None): n/a, with why."""

    source_run: object
    target_run: object
    reason: str
    skipped: bool = True

    @property
    def findings(self) -> tuple:
        return (Finding.not_available("calibration_pair", self.reason, threshold="two runs to compare"),)


def calibrate_runs(corpus, source_run, target_run, *, rule: str = "named", **options):
    """:func:`audits.checks.calibration.run_calibration_audit` of ``source_run`` onto ``target_run`` (direction kept).

    Each run is named as :func:`resolve_run` reads it. When either is None (the corpus has no such pair,
    or does not say which campaign is older, see :func:`suggest_runs`) it returns a
    :class:`CalibrationSkipped` whose one ``n/a`` finding says why and what to do; the narrative and
    figure helpers show a note for it instead of numbers. ``rule``: the key of
    :data:`audits.corpus.selection.PAIR_RULES` that chose the pair (the result's ``pair_rule``; the report
    passes its ``pair_rules`` parameter). ``options`` go to ``run_calibration_audit``.
    """
    ctx = audit_context(corpus)  # a corpus or the report's shared context (audits.report.results)
    corpus = ctx.corpus
    if source_run is None or target_run is None:
        return CalibrationSkipped(source_run, target_run, no_pair_reason(ctx.runs))
    if rule not in PAIR_RULES:
        raise ValueError(f"pair rule {rule!r} is not one of {', '.join(PAIR_RULES)}")
    pair = _named_pair(corpus, source_run, target_run, runs=ctx.runs)  # the shared context's run table
    return replace(run_calibration_audit(ctx, source=pair.source, target=pair.target, **options), pair_rule=rule)


def named_pairs(pairs=None, stored_run=None, fresh_run=None, source_run=None, target_run=None) -> tuple:
    """The pairs a report's parameters name (:data:`PAIR_PARAMETERS`), validated as the calibration audit's ``pairs``
    option (:class:`audits.checks.declared.calibration.CalibrationOptions`, one declaration and one error format):
    ``pairs`` in the order given, then ``[stored_run, fresh_run]``, then ``[source_run, target_run]``; each run as
    :func:`resolve_run` reads it. Empty: none named (the report takes the default pairs).

    >>> named_pairs([[["quiet", "a"], ["busy", "a"]]], stored_run=["quiet", "a"], fresh_run=["quiet", "b"])
    ((('quiet', 'a'), ('busy', 'a')), (('quiet', 'a'), ('quiet', 'b')))
    >>> named_pairs(stored_run=["quiet", "a"])
    Traceback (most recent call last):
    ...
    audits.errors.UserError: stored_run names the source of a pair whose target fresh_run is not named: name both (-p 'stored_run=[ENV, CAMPAIGN]' -p 'fresh_run=[ENV, CAMPAIGN]'), or the pair with --pair / -p 'pairs=[[[ENV, CAMPAIGN], [ENV, CAMPAIGN]]]'
    """
    out = list(pairs or ())
    for source, target, names in ((stored_run, fresh_run, ("stored_run", "fresh_run")),
                                  (source_run, target_run, ("source_run", "target_run"))):
        if (source is None) != (target is None):
            given, missing = names if target is None else names[::-1]
            raise UserError(f"{given} names the {'source' if target is None else 'target'} of a pair whose "
                            f"{'target' if target is None else 'source'} {missing} is not named: name both (-p "
                            f"'{names[0]}=[ENV, CAMPAIGN]' -p '{names[1]}=[ENV, CAMPAIGN]'), or the pair with --pair / "
                            "-p 'pairs=[[[ENV, CAMPAIGN], [ENV, CAMPAIGN]]]'")
        if source is not None:
            out.append((source, target))
    return registry.options_of("calibration").coerce({"pairs": out}).pairs


def calibrate_pairs(corpus, named=(), *, thresholds=None, **options) -> tuple:
    """Every pair the calibration audit chooses, calibrated: the ``named`` pairs (:func:`named_pairs`; each run as
    :func:`resolve_run` reads it) with rule ``"named"``, else every default pair of
    :func:`audits.corpus.selection.choose_pairs` with its rule (``"stored->fresh"``, ``"vs-quietest"``), never the
    first two. The runs of several corpus files are ordered as the files were given (``attrs["run_order"]``) unless
    timestamps order them. One :class:`audits.checks.calibration.CalibrationAudit` per pair, in the rule's order;
    ``(CalibrationSkipped,)`` with the reason when there is none. ``thresholds``: overrides (``{"profile": ...}``
    for the verdict profile); ``options`` go to :func:`calibrate_runs`.
    """
    ctx = audit_context(corpus)
    runs = ctx.runs  # ordered by timestamp, else by the files the runs came from (attrs["run_order"])
    chosen = [(resolve_run(ctx.corpus, s, runs=runs), resolve_run(ctx.corpus, t, runs=runs)) for s, t in named]
    choices = choose_pairs(ctx.corpus, named=chosen, runs=runs)
    if not choices:
        return (CalibrationSkipped(None, None, no_pair_reason(runs)),)
    return tuple(calibrate_runs(ctx, c.source, c.target, rule=c.rule, thresholds=thresholds, **options)
                 for c in choices)
