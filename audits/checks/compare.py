"""Paired comparison of two candidate sets with shared execution (``speedaudit compare``).

Two sets of solutions, A and B (e.g. two models' programs for the same problems), timed in one
campaign: per run, the paired speed win rate of A over B with its bootstrap CI over problems,
ties by the noise model (a comparison is decided only where P(A faster) >= c or <= 1 - c), the
share of undecided comparisons, and each set's pass rate (:func:`stats.compare.paired_comparison`
defines every figure; docs/noise.md, "Paired comparison").

A set is named in one of three ways (:func:`resolve_sides`):

* a value of ``by``, a corpus column (``--by language --a cpp --b python``);
* with ``by="prefix"`` (the default), the solution id up to its first ``/``: what
  ``collect --candidates A=DIR`` writes (``A/prog.py``), and the verdict folder of a judge
  archive (``accepted``, ``time_limit_exceeded``);
* ``@FILE``: a file of solution ids, one per line (``#`` starts a comment), in any problem.

Findings, per run:

* ``win_rate``: ``pass`` when the CI of the win rate excludes 1/2 (the campaign resolves which
  set is faster), ``warn`` when it contains 1/2, ``n/a`` without a defined comparison or with one
  problem (no interval).
* ``shared_execution``: whether the two sets' executions were interleaved, from the ``timestamp``
  (else ``order``) column: the Mann-Whitney AUC = P(a random A execution ran before a random B
  one); 1/2 when interleaved, 0 or 1 when one set ran wholly before the other (then the machine's
  drift between the two periods is part of the difference). ``fail`` when the two sets' time
  ranges do not overlap, ``warn`` when the AUC lies outside [1/4, 3/4] (nearer sequential than
  interleaved), else ``pass``; ``n/a`` without either column.

Example
-------
>>> from audits.corpus.synthetic_pairs import synthesize_pairs
>>> from audits.corpus.io import normalize
>>> corpus = normalize(synthesize_pairs(n_problems=10, share_a=0.7, share_tie=0.2, seed=0).corpus)
>>> audit = run_compare_audit(corpus, a="A", b="B", n_boot=200)
>>> [(f.metric, f.level) for f in audit.findings]
[('win_rate', 'pass'), ('shared_execution', 'pass')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from audits.checks.declared.compare import CompareOptions, CompareThresholds
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run, runs_of
from audits.errors import UserError
from audits.protocol.findings import Finding, findings_table, to_jsonable
from audits.protocol.params import DEFAULT, defaults_from
from stats.compare import PairedComparison, paired_comparison
from stats.noise import DEFAULT_PRIOR_DF

__all__ = ["CompareRun", "CompareAudit", "run_compare_audit"]

#: ``by`` value meaning the solution id up to its first ``/``.
PREFIX = "prefix"


def _ids_file(path: str, source: str) -> set[str]:
    file = Path(path)
    if not file.is_file():
        raise UserError(f"{source}: @{path}: no such file of solution ids\n  -> give a file with one solution "
                        f"id per line, or name the set by a value of --by")
    try:  # utf-8-sig: a byte-order mark (Notepad's "UTF-8 with BOM") is not part of the first id
        text = file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{source}: @{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start:exc.start + 1]!r})"
                        f"\n  -> save the file of solution ids as UTF-8, one id per line") from None
    ids = {line.split("#", 1)[0].strip() for line in text.splitlines()}
    ids.discard("")
    if not ids:
        raise UserError(f"{source}: @{path} lists no solution id\n  -> one id per line (# starts a comment)")
    return ids


def _labels(corpus: pd.DataFrame, by: str, source: str) -> pd.Series:
    if by == PREFIX:
        solution = corpus["solution"]
        if isinstance(solution.dtype, pd.CategoricalDtype):  # one split per distinct id, not per row
            prefixes = solution.cat.categories.astype(str).str.split("/", n=1).str[0].to_numpy(dtype=object)
            prefixes = np.append(prefixes, "nan")  # code -1 (a missing id) takes the last entry, as astype(str)
            return pd.Series(prefixes[solution.cat.codes.to_numpy()], index=corpus.index, dtype=object)
        return solution.astype(str).str.split("/", n=1).str[0]
    if by not in corpus.columns:
        raise UserError(f"{source}: --by {by}: no such column (columns: {', '.join(map(str, corpus.columns))})\n"
                        f"  -> name a column, or --by {PREFIX} (the solution id up to its first '/')")
    # each value as text, a missing one as None (in neither set, and never the text "None" or "nan": those are
    # values a column can hold); pandas' astype(str) made None "None" before 3.0 and keeps NaN since
    values = corpus[by]
    present = values.notna().to_numpy()
    out = pd.Series(None, index=corpus.index, dtype=object)
    out[present] = values[present].astype(str).to_numpy(dtype=object)
    return out


def resolve_sides(corpus: pd.DataFrame, a: str | Sequence[str], b: str | Sequence[str], *, by: str = PREFIX,
                  source: str = "the corpus") -> np.ndarray:
    """Per row: ``"a"``, ``"b"`` or ``""`` (neither) for the two named sets (floor rows are in neither).

    ``a``/``b``: a value of ``by`` (see the module docstring), ``"@FILE"`` (a file of solution ids), or a
    sequence of solution ids.

    Raises
    ------
    UserError
        A set that names no row (with the values there are), a solution in both sets, or a ``by`` value
        that varies within one solution.

    Examples
    --------
    >>> frame = pd.DataFrame({"problem": "p", "solution": ["A/x.py", "B/y.py", "accepted/r.py"]})
    >>> resolve_sides(frame, "A", "B").tolist()
    ['a', 'b', '']
    """
    floor = (corpus["role"] == "floor").to_numpy() if "role" in corpus.columns else np.zeros(len(corpus), bool)
    labels = None
    out = np.full(len(corpus), "", dtype=object)
    for name, spec in (("a", a), ("b", b)):
        if isinstance(spec, str) and spec.startswith("@"):
            hit = corpus["solution"].astype(str).isin(_ids_file(spec[1:], source)).to_numpy()
            what = f"the ids in {spec[1:]}"
        elif isinstance(spec, str):
            labels = _labels(corpus, by, source) if labels is None else labels
            hit = (labels == spec).to_numpy()
            what = f"{'the solution prefix' if by == PREFIX else by} {spec!r}"
        else:
            hit = corpus["solution"].astype(str).isin({str(s) for s in spec}).to_numpy()
            what = "the listed solution ids"
        hit = hit & ~floor
        if not hit.any():
            if labels is None and (by in corpus.columns or by == PREFIX):
                labels = _labels(corpus, by, source)
            shown = None if labels is None else labels.to_numpy()[~floor]
            missing = 0 if shown is None else int(pd.isna(shown).sum())
            values = [] if shown is None else sorted(map(str, pd.unique(shown[~pd.isna(shown)])))
            raise UserError(f"{source}: set {name.upper()} ({what}) names no execution"
                            + (f"; {by} values: {', '.join(values[:12])}{' ...' if len(values) > 12 else ''}"
                               if values else "")
                            + (f" ({missing} row{'' if missing == 1 else 's'} without a value, in neither set)"
                               if missing else "")
                            + "\n  -> name the set by one of those values, or by @FILE of solution ids")
        both = hit & (out == "a")
        if both.any():
            row = corpus.loc[both].iloc[0]
            raise UserError(f"{source}: solution {row['solution']!r} of problem {row['problem']!r} is in both sets "
                            f"\n  -> name disjoint sets")
        out[hit] = name
    if by == PREFIX or not any(isinstance(s, str) and not s.startswith("@") for s in (a, b)):
        return out  # a set of prefixes or of ids is a function of the solution id: it cannot vary within one
    frame = pd.DataFrame({"problem": corpus["problem"].astype(str).to_numpy(),
                          "solution": corpus["solution"].astype(str).to_numpy(), "side": out})
    varying = frame.groupby(["problem", "solution"])["side"].nunique()
    if (varying > 1).any():
        problem, solution = varying.index[np.flatnonzero(varying.to_numpy() > 1)[0]]
        raise UserError(f"{source}: --by {by}: solution {solution!r} of problem {problem!r} has rows in and out of "
                        f"a set\n  -> name the sets by a column that is constant within a solution")
    return out


def interleaving(frame: pd.DataFrame, side: np.ndarray) -> tuple[float, bool, str | None]:
    """(AUC, ranges overlap, column used) of the two sets' execution times (see the module docstring).

    AUC = P(an A execution ran before a B one) + 1/2 P(at the same time), by ranks (Mann-Whitney U / (n_a n_b)).
    NaN and None when the frame has neither ``timestamp`` nor ``order``; a column holding one value for every
    execution of both sets (a file's date given to each of its rows) tells no order: the next column is read,
    and without one, NaN and that column's name.

    >>> frame = pd.DataFrame({"order": [0, 1, 2, 3]})
    >>> interleaving(frame, np.array(["a", "a", "b", "b"])), interleaving(frame, np.array(["a", "b", "b", "a"]))
    ((1.0, False, 'order'), (0.5, True, 'order'))
    """
    constant = None
    for column in ("timestamp", "order"):
        if column not in frame.columns:
            continue
        values = frame[column]
        if column == "timestamp":
            t = pd.to_datetime(values, errors="coerce", utc=True, format="mixed")
            x = t.astype("int64").to_numpy(dtype=float)
            x[t.isna().to_numpy()] = np.nan
        else:
            x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        xa, xb = x[(side == "a") & np.isfinite(x)], x[(side == "b") & np.isfinite(x)]
        if len(xa) and len(xb) and min(xa.min(), xb.min()) == max(xa.max(), xb.max()):
            constant = constant or column  # one instant for every execution: no order to read
        elif len(xa) and len(xb):
            ranks = sps.rankdata(np.concatenate([xa, xb]))
            u = ranks[len(xa):].sum() - len(xb) * (len(xb) + 1) / 2  # B executions after A executions
            overlap = xa.max() >= xb.min() and xb.max() >= xa.min()
            return float(u / (len(xa) * len(xb))), bool(overlap), column
    return float("nan"), False, constant


def _order_note(rows: pd.DataFrame) -> str:
    """Why the ``timestamp`` / ``order`` columns a run has tell no order: the sets without a value there."""
    missing = []
    for column in ("timestamp", "order"):
        if column not in rows.columns:
            continue
        has = rows[column].notna().to_numpy()
        sets = [name.upper() for name in ("a", "b") if not has[(rows["_side"] == name).to_numpy()].any()]
        missing.append(f"{column} (no value for set {' or '.join(sets)})")
    if not missing:
        return ""
    return (f"no execution order to compare: {'; '.join(missing)}; record when each execution of both sets "
            "started (speedaudit collect does)")


def _iv(interval) -> str:
    return str(interval) if interval.n else "n/a (no problem to average over)"


@dataclass(frozen=True)
class CompareRun:
    """The comparison in one run, and how interleaved the two sets' executions were."""

    run: Run
    result: PairedComparison
    interleaving_auc: float
    overlap: bool
    order_column: str | None
    #: why no column tells the order when the corpus has one (a set without values in it); "" otherwise
    order_note: str = ""


@dataclass(frozen=True)
class CompareAudit:
    """The paired comparison of sets ``a`` and ``b`` in every run that holds both."""

    a: str
    b: str
    by: str
    confidence: float
    runs: tuple[CompareRun, ...]
    findings: tuple[Finding, ...]
    skipped_runs: tuple[str, ...] = ()
    name: str = "compare"
    #: The rule that chose the runs (a key of :data:`audits.corpus.runs.RULES`): ``"every run"`` or ``"named runs"``;
    #: of them, those that hold both sets are compared (the others are ``skipped_runs``).
    run_rule: str = "every run"

    @property
    def subject(self) -> str:
        return f"A={self.a} vs B={self.b}"

    def to_frame(self) -> pd.DataFrame:
        """One row per run: the headline figures with their CIs."""
        rows = []
        for r in self.runs:
            c = r.result
            row = {"environment": r.run.environment, "campaign": r.run.campaign,
                   "n_problems": int(np.isfinite(c.problems["win_rate"]).sum())}
            for key in ("win_rate", "expected_win_rate", "decided_win_rate", "pass_rate_a", "pass_rate_b"):
                iv = getattr(c, key)
                row.update({key: iv.estimate, f"{key}_low": iv.low, f"{key}_high": iv.high})
            row.update({"n_comparisons": c.n_comparisons, "n_undecided": c.n_undecided,
                        "undecided_share": c.undecided_share, "n_undefined": c.n_undefined,
                        "interleaving_auc": r.interleaving_auc})
            rows.append(row)
        return pd.DataFrame(rows)

    def summary(self) -> str:
        lines = [f"paired comparison {self.subject} (sets by {self.by}; a comparison = one A and one B solution, "
                 f"neither wrong, on one optimization test (a timeout loses); decided when P(A faster) >= {self.confidence:g} or "
                 f"<= {1 - self.confidence:g}, else a tie counted 1/2)"]
        for r in self.runs:
            c = r.result
            lines.append(f"\n{r.run}:")
            lines.append(f"  win rate of A over B  {_iv(c.win_rate)}  (problems with a comparison)")
            lines.append(f"  expected win rate     {_iv(c.expected_win_rate)}  (mean P(A faster), no threshold)")
            lines.append(f"  decided win rate      {_iv(c.decided_win_rate)}  (A's share of decided comparisons)")
            lines.append(f"  undecided             {c.n_undecided:,} of {c.n_comparisons:,} comparisons "
                         f"({100 * c.undecided_share:.1f} %)" if c.n_comparisons else
                         "  undecided             n/a (no defined comparison)")
            if c.n_undefined:
                lines.append(f"  undefined             {c.n_undefined:,} comparisons (no variance estimate: one "
                             f"repeat per cell)")
            lines.append(f"  pass rate A           {_iv(c.pass_rate_a)}  (every test ok)")
            lines.append(f"  pass rate B           {_iv(c.pass_rate_b)}  (every test ok)")
        if self.skipped_runs:
            lines.append(f"\nruns without both sets (not compared): {', '.join(self.skipped_runs)}")
        lines.append("\nfindings:\n" + findings_table(self.findings))
        return "\n".join(lines)

    def to_dict(self) -> dict:
        runs = []
        for r in self.runs:
            c = r.result
            runs.append({"run": r.run.to_dict(), **{k: getattr(c, k).to_dict() for k in (
                "win_rate", "expected_win_rate", "decided_win_rate", "pass_rate_a", "pass_rate_b")},
                "n_comparisons": c.n_comparisons, "n_undecided": c.n_undecided,
                "undecided_share": c.undecided_share, "n_undefined": c.n_undefined,
                "n_both_timed_out": c.n_both_timed_out,
                "interleaving": {"auc": r.interleaving_auc, "overlap": r.overlap, "column": r.order_column},
                "problems": c.problems.to_dict("records")})
        return to_jsonable({"audit": self.name, "run_rule": self.run_rule, "a": self.a, "b": self.b, "by": self.by,
                            "confidence": self.confidence, "runs": runs, "skipped_runs": list(self.skipped_runs),
                            "findings": [f.to_dict() for f in self.findings]})


def _findings(r: CompareRun, subject: str, thresholds, n_boot: int) -> list[Finding]:
    c, env, camp = r.result, r.run.environment, r.run.campaign
    iv = c.win_rate
    out = []
    if iv.n == 0 or c.n_undefined:
        # undefined comparisons are those of two ok cells when no cell of the run has two ok repeats (the noise
        # model pools down to the whole run): the defined rest are the timeouts', no speed comparison of the sets
        why = ("no comparison has a variance estimate (one repeat per cell): collect at least 2 repeats"
               if c.n_undefined and not c.n_comparisons else
               f"no comparison of two ok cells has a variance estimate (one repeat per cell): {c.n_undefined:,} of "
               f"{c.n_undefined + c.n_comparisons:,} comparisons are undefined and the other {c.n_comparisons:,} "
               "are decided by timeouts alone; collect at least 2 repeats"
               if c.n_undefined else "no problem has a solution of both sets without a wrong answer or crash")
        out.append(Finding.not_available("win_rate", why, environment=env, campaign=camp, subject=subject))
    elif c.n_both_timed_out == c.n_comparisons:
        out.append(Finding.not_available(
            "win_rate", f"every one of the {c.n_comparisons:,} comparisons is of two timed-out cells: no timing "
            "tells the sets apart (more repeats would not either); rerun with a higher time limit (collect --timeout)",
            environment=env, campaign=camp, subject=subject))
    elif not np.isfinite(iv.low):
        why = (f"{iv.n} problem with a comparison: no interval over problems; compare the sets on more problems"
               if iv.n == 1 else
               "judged by whether its bootstrap CI excludes 1/2, and n_boot = 0 draws no resamples: run with "
               "--n-boot 1000 (n_boot=1000)" if n_boot == 0 else
               f"the bootstrap CI over {iv.n} problems is undefined")
        out.append(Finding.not_available("win_rate", why, environment=env, campaign=camp, subject=subject))
    else:
        resolved = iv.low > 0.5 or iv.high < 0.5
        faster = "A" if iv.estimate > 0.5 else "B"
        message = (f"win rate of A over B {iv} over {iv.n} problems; {c.n_undecided:,} of {c.n_comparisons:,} "
                   f"comparisons undecided ({100 * c.undecided_share:.1f} %). ")
        message += (f"{faster} is faster: the {100 * iv.level:g} % CI excludes 1/2" if resolved else
                    "the CI contains 1/2: this campaign cannot tell which set is faster; more problems, or more "
                    "repeats (collect --adaptive --adaptive-target rank) to decide the undecided comparisons")
        out.append(Finding("pass" if resolved else "warn", "win_rate", iv.estimate, "CI excludes 1/2", message,
                           env, camp, subject=subject))
    auc = r.interleaving_auc
    if r.order_column is None:
        out.append(Finding.not_available("shared_execution", r.order_note or "no timestamp or order column: when "
                                         "each execution ran is unknown", environment=env, campaign=camp,
                                         subject=subject))
    elif not np.isfinite(auc):
        out.append(Finding.not_available("shared_execution", f"every execution of both sets has the same "
                                         f"{r.order_column}: which set ran first is unknown; record when each "
                                         "execution started (speedaudit collect does)", environment=env,
                                         campaign=camp, subject=subject))
    else:
        gap = abs(auc - 0.5)
        level = "fail" if not r.overlap else thresholds.judge("interleaving_gap", gap)
        message = (f"P(an A execution ran before a B one) = {auc:.3f} (by {r.order_column}; 1/2: interleaved, 0 or "
                   f"1: one set after the other)")
        if level != "pass":
            message += ("; the machine's drift between the two periods is part of the difference: collect both "
                        "sets in one campaign (collect --candidates A=DIR --candidates B=DIR)")
        out.append(Finding(level, "shared_execution", auc,
                           f"|AUC - 1/2|: {thresholds.text('interleaving_gap')}; ranges overlap", message, env,
                           camp, subject=subject))
    return out


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(CompareOptions)
def run_compare_audit(corpus: pd.DataFrame, *, a: str | Sequence[str], b: str | Sequence[str], by: str = DEFAULT,
                      confidence: float = DEFAULT, prior_df: float = DEFAULT_PRIOR_DF, n_boot: int = DEFAULT,
                      level: float = 0.95, seed: int = DEFAULT, source: str = DEFAULT,
                      thresholds=None) -> CompareAudit:
    """Compare sets ``a`` and ``b`` (see :func:`resolve_sides`) in every run that holds both.

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.compare.CompareOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame
        A corpus (any runs); ``duration_s`` is the measure (``use_measure`` puts another in place).
    a, b : str or sequence of str
        The two sets (required here, unlike the Options fields' judge-archive defaults).
    by : str
        The column whose values name the sets (default: the Options field, ``prefix``: :data:`PREFIX`).
    confidence, prior_df, n_boot, level, seed
        As :func:`stats.compare.paired_comparison` (defaults of ``confidence``, ``n_boot``, ``seed``: the
        Options fields, 0.95, 1000 and 0).
    source : str
        How error messages name the corpus (default: the Options field, ``"the corpus"``).
    thresholds : CompareThresholds or mapping of overrides, optional
        The shared-execution limits (:class:`audits.checks.declared.compare.CompareThresholds`).

    Raises
    ------
    OptionError
        An option its :class:`~audits.checks.declared.compare.CompareOptions` field does not allow (e.g.
        ``confidence`` outside (0.5, 1)).
    UserError
        A bad set (:func:`resolve_sides`), or no run holding executions of both sets.
    """
    side = resolve_sides(corpus, a, b, by=by, source=source)
    frame = corpus.assign(_side=side)
    results, skipped = [], []
    for summary in runs_of(corpus):
        rows = frame.loc[summary.run.mask(frame)]
        sides = set(rows["_side"].unique())
        if not {"a", "b"} <= sides:
            skipped.append(str(summary.run))
            continue
        try:
            result = paired_comparison(rows, side="_side", confidence=confidence, prior_df=prior_df, n_boot=n_boot,
                                       level=level, seed=seed)
        except ValueError as exc:  # the estimator's input checks (e.g. a non-positive duration), named
            raise UserError(f"{source}: run {summary.run}: {exc}") from exc
        auc, overlap, column = interleaving(rows, rows["_side"].to_numpy())
        results.append(CompareRun(summary.run, result, auc, overlap, column,
                                  _order_note(rows) if column is None else ""))
    if not results:
        raise UserError(f"{source}: no run (environment, campaign) holds executions of both sets; a paired "
                        f"comparison needs them in one campaign\n  -> collect them together (collect --candidates "
                        f"A=DIR --candidates B=DIR)")
    name_a = a if isinstance(a, str) else "listed ids"
    name_b = b if isinstance(b, str) else "listed ids"
    audit = CompareAudit(a=name_a, b=name_b, by=by, confidence=float(confidence), runs=tuple(results),
                         findings=(), skipped_runs=tuple(skipped))

    limits = CompareThresholds.coerce(thresholds)
    findings = tuple(f for r in results for f in _findings(r, audit.subject, limits, n_boot))
    return CompareAudit(a=name_a, b=name_b, by=by, confidence=float(confidence), runs=tuple(results),
                        findings=findings, skipped_runs=tuple(skipped))
