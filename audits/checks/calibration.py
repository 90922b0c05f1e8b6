"""Calibration audit: can timings of one environment or campaign be mapped onto another?

Two uses (issue 6): (a) can a local sandbox stand in for a remote service
(``source`` = local environment, ``target`` = service); (b) do stored reference
timings still match today's service (``source`` = stored campaign, ``target``
= fresh campaign), and if not, calibrate them (:func:`apply_calibration`,
``speedaudit calibrate``).

:func:`run_calibration_audit` pairs the two on cell medians, fits every family
(:mod:`stats.calibration`), validates each by leave-one-problem-out, bootstraps
parameters over problems, measures Bland-Altman agreement on the log scale,
percentile (rank) agreement of a stored pool with a fresh one (raw and
calibrated), drift across campaigns and the sensitivity of a p_tau pass rate to
the intercept, then turns the numbers into findings against
:class:`CalibrationThresholds` (all overridable).

What the pairs cannot measure is ``n/a`` with the reason, never an error: with paired cells in fewer than
2 problems (:data:`MIN_PROBLEMS`) there is no held-out problem and no interval over problems, so the
leave-one-problem-out figures, the judged map parameters, the p_tau swing and drift are ``n/a``, while the
pairing, the fits on all pairs, Bland-Altman and raw rank agreement are still measured; ``n_boot=0``
means no intervals, and what is judged only by its interval is ``n/a``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from audits.checks.declared.calibration import CalibrationOptions, CalibrationThresholds
from audits.corpus.memory import small_pages
from audits.corpus.runs import Run, RunError, RunSummary, describe_runs, runs_of, select_rows
from audits.corpus.selection import cell_cvs, choose_pairs, needs_quietness, quietness_of
from audits.protocol.context import AuditContext, audit_context
from audits.protocol.findings import NA, Finding, findings_table, to_jsonable, worst_level
from audits.protocol.params import DEFAULT, defaults_from
from audits.protocol.partition import joined
from stats._groups import group_codes, label_mask, present_labels
from stats.bootstrap import Interval
from stats.calibration import (
    FAMILIES,
    BlandAltman,
    Fit,
    Pairing,
    bland_altman,
    bootstrap_params,
    campaign_drift,
    choose_family,
    distinct_values,
    drift_from_pairings,
    fit_family,
    identity_log_rmse,
    lopo_r2,
    pair_cells,
    pair_medians,
    percentile_agreement,
    prediction_floor,
    ptau_sensitivity,
    ptau_sides,
    resolve_key,
    share_off,
    side_cells,
    undetermined_reason,
    within_problem_spearman,
)

__all__ = ["CalibrationThresholds", "DEFAULT_THRESHOLDS", "CalibrationAudit", "run_calibration_audit",
           "combine_pairing", "apply_calibration", "calibration_advice"]

#: The default thresholds (an instance of :class:`CalibrationThresholds`).
DEFAULT_THRESHOLDS = CalibrationThresholds()


@dataclass(frozen=True)
class CalibrationPair:
    """The rows and names one calibration compares (:func:`calibration_pair`).

    ``frame`` holds the rows the pairing reads; ``source``/``target`` are values of the column ``key``;
    ``source_runs``/``target_runs`` the runs (with repeat counts) on each side; ``drift_frame`` the rows
    the campaign-drift table is computed from (None: no drift table) and ``anchor`` its anchor campaign.
    """

    frame: pd.DataFrame = field(repr=False)
    source: str
    target: str
    key: str
    source_runs: tuple[RunSummary, ...]
    target_runs: tuple[RunSummary, ...]
    drift_frame: pd.DataFrame | None = field(default=None, repr=False)
    anchor: str | None = None


def describe_sides(runs: Sequence[RunSummary], name: str) -> str:
    """Display label of one side of a calibration: its run (``environment · campaign``), else its name."""
    return str(runs[0].run) if len(runs) == 1 else name


def _is_run(value) -> bool:
    return isinstance(value, (Run, Mapping, list, tuple))


def calibration_pair(corpus: pd.DataFrame, *, source, target, key: str = "auto") -> CalibrationPair:
    """What a calibration of ``source`` onto ``target`` compares.

    ``source`` and ``target`` are either two runs (:class:`audits.corpus.runs.Run` or ``(environment,
    campaign)`` pairs), taken from the full corpus: the same environment compares campaign against campaign,
    different environments compare environment against environment; or two names of one column
    (``key``: ``environment`` / ``campaign`` / ``auto``), as before, which then must hold one value of the
    other column per side (or the same several values on both sides).
    """
    if isinstance(corpus, AuditContext):  # the shared context: its run table, and the frame it wraps
        table, corpus = corpus.runs, corpus.corpus
    else:
        table = runs_of(corpus)
    if _is_run(source) or _is_run(target):
        if not (_is_run(source) and _is_run(target)):
            raise RunError("name both sides as runs (environment and campaign) or both as names of one column")
        src, tgt = table.get(source), table.get(target)
        if src.run == tgt.run:
            raise RunError(f"source and target are the same run {src.run}; name two different runs")
        frame = select_rows(corpus, [src.run, tgt.run])
        if src.environment == tgt.environment:
            env_rows = corpus.loc[label_mask(corpus["environment"], src.environment)]
            return CalibrationPair(frame, src.campaign, tgt.campaign, "campaign", (src,), (tgt,),
                                   env_rows, src.campaign)
        return CalibrationPair(frame, src.environment, tgt.environment, "environment", (src,), (tgt,))
    key = resolve_key(corpus, source=source, target=target, key=key)
    side = {name: tuple(s for s in table if getattr(s, key) == name) for name in (source, target)}
    campaigns = distinct_values(corpus["campaign"])
    if key == "campaign":
        return CalibrationPair(corpus, source, target, key, side[source], side[target], corpus, source)
    drift_rows = corpus.loc[corpus["environment"].isin([source, target]).to_numpy()] if len(campaigns) >= 2 else None
    return CalibrationPair(corpus, source, target, key, side[source], side[target], drift_rows,
                           campaigns[0] if len(campaigns) >= 2 else None)


@dataclass(frozen=True)
class CalibrationAudit:
    """Result of :func:`run_calibration_audit`.

    Attributes
    ----------
    source, target, key : str
        The two sides as values of the column ``key`` (environment / campaign).
    source_runs, target_runs : tuple of RunSummary
        The runs on each side, with their repeat counts.
    pairing : Pairing
        Paired medians and the cells lost (with reasons).
    fits : DataFrame
        One row per family (and robust variant): ``family, method, cv, formula,
        params`` (dict), ``param_ci`` (dict param -> [low, high]), ``param_ci_reason``
        (dict param -> why its interval is n/a, for those that are), ``lopo_r2`` (+ ``_low``/``_high``), ``lopo_log_rmse`` (+ CI),
        ``n_pairs, n_problems, n_nonpositive``.
    params : DataFrame
        Tidy parameter CIs: ``family, method, param, estimate, ci_low, ci_high, n_problems, level,
        n_resamples, ci_reason`` (:func:`stats.calibration.bootstrap_params`).
    spearman_raw, spearman_calibrated, spearman_gain : Interval or None
        Rank agreement of stored-pool scores with fresh-pool scores.
    bland_altman, bland_altman_calibrated : BlandAltman
        Log-scale agreement of raw target vs source, and of target vs the
        calibration family's out-of-fold predictions.
    drift, sensitivity : DataFrame
        See :func:`stats.calibration.campaign_drift` / :func:`~stats.calibration.ptau_sensitivity`.
    findings : tuple of Finding
    """

    source: str
    target: str
    key: str
    pairing: Pairing = field(repr=False)
    fits: pd.DataFrame = field(repr=False)
    params: pd.DataFrame = field(repr=False)
    fit_objects: dict = field(repr=False)
    best_family: str | None
    calibration_family: str
    spearman_raw: Interval | None
    spearman_calibrated: Interval | None
    spearman_gain: Interval | None
    agreement: pd.DataFrame = field(repr=False)
    bland_altman: BlandAltman | None = field(repr=False)
    bland_altman_calibrated: BlandAltman | None = field(repr=False)
    drift: pd.DataFrame = field(repr=False)
    sensitivity: pd.DataFrame = field(repr=False)
    findings: tuple = ()
    thresholds: CalibrationThresholds = field(default_factory=CalibrationThresholds, repr=False)
    n_boot: int = 0
    source_runs: tuple = ()
    target_runs: tuple = ()
    #: The timings as they are (no map): ``log_rmse`` and ``share_2x_off`` over the pairs, the baseline
    #: every map must beat out of fold.
    identity: dict = field(default_factory=dict)
    #: Which rule of :data:`audits.corpus.selection.PAIR_RULES` chose this pair: ``"named"`` when the caller
    #: named source and target (the command line; audit all's pairs option).
    pair_rule: str = "named"

    @property
    def run_rule(self) -> str:
        """The rule of :data:`audits.corpus.runs.RULES` that chose the pair: ``"named pairs"`` or ``"default pairs"``
        (:attr:`pair_rule` says which default rule)."""
        return "named pairs" if self.pair_rule == "named" else "default pairs"

    @property
    def level(self) -> str:
        return worst_level(self.findings)

    def fit(self, family: str) -> Fit:
        """The fitted map of one family (e.g. ``audit.fit("affine").predict(x)``)."""
        return self.fit_objects[family]

    def to_frame(self) -> pd.DataFrame:
        """The fits table (one row per family)."""
        return self.fits

    def to_dict(self) -> dict:
        fits = {}
        for row in self.fits.to_dict("records"):
            fits[row["name"]] = {
                "family": row["family"], "method": row["method"], "formula": row["formula"],
                "params": row["params"], "param_ci": row["param_ci"], "param_ci_reason": row["param_ci_reason"],
                "cv": row["cv"],
                "lopo_r2": row["lopo_r2"], "lopo_r2_ci": [row["lopo_r2_low"], row["lopo_r2_high"]],
                "lopo_log_rmse": row["lopo_log_rmse"],
                "lopo_log_rmse_ci": [row["lopo_log_rmse_low"], row["lopo_log_rmse_high"]],
                "n_pairs": row["n_pairs"], "n_problems": row["n_problems"], "n_nonpositive": row["n_nonpositive"],
                "n_nonfinite": row["n_nonfinite"], "n_below_min": row["n_below_min"],
                "min_duration_s": row["min_duration_s"], "share_2x_off": row["share_2x_off"],
                "usable": row["usable"], "na_reason": row["na_reason"], "lopo_log_r2": row["lopo_log_r2"],
                "within_problem_spearman": row["within_problem_spearman"],
                "within_problem_worst": row["within_problem_worst"],
                "within_problem_share_below": row["within_problem_share_below"]}
        return to_jsonable({
            "audit": "calibration", "source": self.source, "target": self.target, "key": self.key,
            "run_rule": self.run_rule, "pair_rule": self.pair_rule,
            "source_runs": [r.to_dict() for r in self.source_runs],
            "target_runs": [r.to_dict() for r in self.target_runs],
            "level": self.level, "pairing": self.pairing.to_dict(), "fits": fits, "identity": self.identity,
            "advice": calibration_advice(self),
            "best_family": self.best_family, "calibration_family": self.calibration_family,
            "spearman_raw": self.spearman_raw, "spearman_calibrated": self.spearman_calibrated,
            "spearman_gain": self.spearman_gain,
            "bland_altman": {"raw": self.bland_altman, "calibrated": self.bland_altman_calibrated},
            "drift": self.drift, "sensitivity": self.sensitivity,
            "findings": list(self.findings), "thresholds": self.thresholds.to_dict(), "n_boot": self.n_boot,
        })

    def summary(self) -> str:
        lines = [f"calibration {self.key} {self.source} -> {self.target}: {self.level.upper()}",
                 f"source runs: {describe_runs(self.source_runs)}; target runs: {describe_runs(self.target_runs)}",
                 self.pairing.summary(), "",
                 f"{'fit':<16} {'LOPO R^2 [95% CI]':<28} {'log-ratio RMSE':<16} formula"]
        for row in self.fits.to_dict("records"):
            r2 = f"{row['lopo_r2']:.4f} [{row['lopo_r2_low']:.4f}, {row['lopo_r2_high']:.4f}]"
            if row["na_reason"]:  # n/a: not determined by, or not judgeable on, these source values
                lines.append(f"{row['name']:<16} {'n/a':<28} {'n/a':<16} {row['na_reason']}")
                continue
            lines.append(f"{row['name']:<16} {r2:<28} {row['lopo_log_rmse']:<16.4f} {row['formula']}")
        if self.spearman_raw is not None:
            lines.append("")
            lines.append(f"rank agreement with the fresh pool (Spearman): raw {self.spearman_raw}")
            if self.spearman_calibrated is not None:
                lines.append(f"  calibrated ({self.calibration_family}) {self.spearman_calibrated}; "
                             f"gain {self.spearman_gain}")
        if self.bland_altman is not None:
            lines.append(f"Bland-Altman (raw): {self.bland_altman.summary()}")
        if self.bland_altman_calibrated is not None:
            lines.append(f"Bland-Altman (calibrated, out-of-fold): {self.bland_altman_calibrated.summary()}")
        lines += ["", findings_table(self.findings), "", f"what to do: {calibration_advice(self)}"]
        return "\n".join(lines)


#: The columns of :attr:`CalibrationAudit.fits` (an empty table has them too: fewer than 2 pairs fit no map).
_FIT_COLUMNS = ("name", "family", "method", "cv", "formula", "params", "param_ci", "param_ci_reason", "lopo_r2",
                "lopo_r2_low",
                "lopo_r2_high", "lopo_log_rmse", "lopo_log_rmse_low", "lopo_log_rmse_high", "n_pairs", "n_problems",
                "n_nonpositive", "n_nonfinite", "n_below_min", "min_duration_s", "floor_reason", "share_2x_off",
                "usable", "na_reason", "lopo_log_r2", "within_problem_spearman", "within_problem_worst",
                "within_problem_share_below")


def _fit_row(name, family, method, fit: Fit, lopo, ci: pd.DataFrame, n_problems, y) -> dict:
    return {
        "name": name, "family": family, "method": method, "cv": lopo.cv, "formula": fit.formula(),
        "params": dict(fit.params),
        "param_ci": {r["param"]: [r["ci_low"], r["ci_high"]] for r in ci.to_dict("records")},
        # why a parameter's interval is n/a (bootstrap_params: too few resamples keep enough source values)
        "param_ci_reason": {r["param"]: r["ci_reason"] for r in ci.to_dict("records") if r.get("ci_reason")},
        "lopo_r2": lopo.r2.estimate, "lopo_r2_low": lopo.r2.low, "lopo_r2_high": lopo.r2.high,
        "lopo_log_rmse": lopo.log_rmse.estimate, "lopo_log_rmse_low": lopo.log_rmse.low,
        "lopo_log_rmse_high": lopo.log_rmse.high, "n_pairs": lopo.n, "n_problems": n_problems,
        "n_nonpositive": lopo.n_nonpositive, "n_nonfinite": lopo.n_nonfinite, "n_below_min": lopo.n_below_min,
        "min_duration_s": lopo.min_duration_s, "floor_reason": lopo.floor_reason,
        "share_2x_off": share_off(lopo.predictions, y) if n_problems >= MIN_PROBLEMS else np.nan,
        "usable": lopo.usable, "na_reason": lopo.na_reason,
        "lopo_log_r2": None if lopo.log_r2 is None else lopo.log_r2.estimate,
    }


@small_pages()  # no huge-page advice while the audit runs (audits.corpus.memory: 10^7 rows 20 % faster)
@defaults_from(CalibrationOptions)
def run_calibration_audit(
    corpus: pd.DataFrame,
    *,
    source,
    target,
    key: str = DEFAULT,
    families: Sequence[str] = DEFAULT,
    robust: bool | str | None = DEFAULT,
    calibration_family: str | None = DEFAULT,
    variance_ratio: float = DEFAULT,
    taus: Sequence[float] = DEFAULT,
    n_boot: int = DEFAULT,
    n_boot_rank: int = DEFAULT,
    level: float = DEFAULT,
    seed: int | None = DEFAULT,
    thresholds: CalibrationThresholds | Mapping | None = None,
) -> CalibrationAudit:
    """Audit whether ``source`` timings map onto ``target`` timings.

    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.calibration.CalibrationOptions` (``<Options default>`` in the signature).

    Parameters
    ----------
    corpus : DataFrame
        A timing corpus holding both runs.
    source, target : Run, (environment, campaign) pair, or str
        Two runs of the corpus (any two: campaign against campaign of one environment, from the full
        file, or environment against environment), or two environment or campaign names
        (``key="auto"`` finds the column; see :func:`calibration_pair`). The direction is kept: source
        is mapped onto target. For stored vs fresh: source = stored campaign, target = fresh campaign.
    key : {"auto", "environment", "campaign"}
        With two names: which column holds them (default: the Options field, ``"auto"``).
    families : sequence of str
        Families to fit (default: the Options field, all: multiplicative, affine, power, poly2,
        poly3, deming).
    robust : bool, None or {"huber", "theilsen"}
        Also fit a robust affine (``True`` means Huber); reported as
        ``affine_huber`` / ``affine_theilsen``. Default: the Options field, None (as False: no robust fit).
    calibration_family : str, optional
        The map used for calibrated rank agreement and the calibrated Bland-Altman. Default: chosen by
        held-out log error (:func:`stats.calibration.choose_family`: the usable family of ``families``
        with the lowest out-of-fold log-RMSE), never a fixed family. The p_tau sensitivity moves the
        affine intercept.
    variance_ratio : float
        Deming's var(error of target) / var(error of source) (default: the Options field, 1).
    taus : sequence of float
        Speed thresholds (percentile points) for the p_tau sensitivity (default: the Options field, (10, 30)).
    n_boot : int
        Bootstrap resamples of problems for parameter, R^2 and Bland-Altman CIs (default: the Options field,
        1000).
    n_boot_rank : int
        Resamples for the Spearman CIs (each re-ranks all units; default: the Options field, 200).
    level : float
        Confidence level of the intervals (default: the Options field, 0.95).
    seed : int
        Seed of every resampling (default: the Options field, 0).
    thresholds : CalibrationThresholds or mapping, optional
        The thresholds, or overrides of the defaults (``{"lopo_r2.fail": 0.8}``, ``{"spearman": 0.85}``).

    Returns
    -------
    CalibrationAudit

    Examples
    --------
    >>> from audits.corpus.synthetic import synthesize
    >>> corpus = synthesize(campaigns=(("c0", 1, 0), ("c1", 0.63, 0.053)), n_problems=8).corpus
    >>> audit = run_calibration_audit(corpus, source="c0", target="c1", n_boot=100, n_boot_rank=20)
    >>> ci = audit.params.query("family == 'affine'").set_index("param")
    >>> bool(ci.loc["slope", "ci_low"] < 0.63 < ci.loc["slope", "ci_high"])
    True
    """
    limits = CalibrationThresholds.coerce(thresholds)
    ctx = audit_context(corpus)  # the shared context's run table (audits.protocol.context)
    families = list(families)  # the options: validated by CalibrationOptions (defaults_from), robust=True as "huber"
    if _is_run(source) and _is_run(target):  # two runs: the partition steps, the corpus as one partition
        piece = run_pair_piece(ctx.runs, source, target)
        return combine_pair([pair_part(ctx, piece)], piece, families=families, robust=robust,
                            calibration_family=calibration_family, variance_ratio=variance_ratio, taus=taus,
                            n_boot=n_boot, n_boot_rank=n_boot_rank, level=level, seed=seed, thresholds=limits)
    pair = calibration_pair(ctx, source=source, target=target, key=key)
    corpus, source, target, key = pair.frame, pair.source, pair.target, pair.key
    pairing = pair_medians(corpus, source=source, target=target, key=key)
    drift_names = None if pair.drift_frame is None else (distinct_values(pair.drift_frame["campaign"]),
                                                         distinct_values(pair.drift_frame["environment"]))
    has_candidates = bool(((corpus["role"] == "candidate").to_numpy() & (corpus[key] == target).to_numpy()).any())
    return combine_pairing(pair, pairing, corpus=corpus, drift_names=drift_names, has_candidates=has_candidates,
                           families=families, robust=robust, calibration_family=calibration_family,
                           variance_ratio=variance_ratio, taus=taus, n_boot=n_boot, n_boot_rank=n_boot_rank,
                           level=level, seed=seed, limits=limits)


def combine_pairing(pair: CalibrationPair, pairing: Pairing, *, corpus: pd.DataFrame | None, drift_names,
                    has_candidates: bool, families: list, robust, calibration_family: str | None,
                    variance_ratio: float, taus, n_boot: int, n_boot_rank: int, level: float, seed,
                    limits: CalibrationThresholds, ptau_sides=None, drift_pairings=None) -> CalibrationAudit:
    """The calibration audit from the pairing of cell medians (every step after :func:`pair_medians`).

    ``corpus``: the two runs' rows (None on a partitioned corpus: then ``pairing`` must hold both sides'
    cells, ``ptau_sides`` the source pool and the target's candidate cells, and a drift table of three or more
    campaigns comes from ``drift_pairings``: :func:`stats.calibration.drift_from_pairings`'s ``sides``, each
    campaign of the environment paired with the anchor); ``drift_names``: the campaigns and
    environments of the drift rows (None: no drift table); ``has_candidates``: the target run has candidate
    rows. :func:`combine_pair` (in memory and on Dask) and :func:`run_calibration_audit` (pairs named by
    column values) run this step.
    """
    source, target, key = pair.source, pair.target, pair.key
    # Fewer than 2 problems pair up: no leave-one-problem-out check and no interval over problems, so those
    # findings are n/a (_findings); a map is still fitted on >= 2 pairs and the rest is measured and reported.
    fitted = pairing.n_pairs >= 2
    frame = pairing.frame
    x = frame["x"].to_numpy(dtype=float)
    y = frame["y"].to_numpy(dtype=float)
    # Problems and tests as codes numbered by name (group_codes), which is how the fits number the names
    # themselves (stats.calibration._group_index: factorize, sorted): the same folds, bootstrap draws and
    # within-problem groups, without a Python string per pair (10^7 pairs at 10^8 executions, once per family).
    groups = group_codes(frame, ["problem"])[0]
    tests = group_codes(frame, ["test"])[0]

    wanted = list(dict.fromkeys(families + ([calibration_family] if calibration_family else []) + ["affine"]))
    variants = [(f, f, None) for f in wanted]
    if robust:
        variants.append((f"affine_{robust}", "affine", robust))
    rows, params, fit_objects, lopos = [], [], {}, {}
    for name, family, method in (variants if fitted else ()):  # no map from fewer than 2 pairs
        fit = fit_family(x, y, family, robust=method, variance_ratio=variance_ratio, seed=seed)
        lopo = lopo_r2(x, y, groups, family, robust=method, variance_ratio=variance_ratio, n_boot=n_boot,
                       level=level, seed=seed)
        ci = bootstrap_params(x, y, groups, family, robust=method, variance_ratio=variance_ratio, n_boot=n_boot,
                              level=level, seed=seed)
        fit_objects[name], lopos[name] = fit, lopo
        rows.append(_fit_row(name, family, fit.method, fit, lopo, ci, pairing.n_problems, y))
        agree = within_problem_spearman(lopo.predictions, y, problem=groups, test=tests,
                                        threshold=limits.within_problem_fail)
        rows[-1].update(within_problem_spearman=agree.mean, within_problem_worst=agree.worst,
                        within_problem_share_below=agree.share_below)
        params.append(ci.assign(family=name, method=fit.method))
    fits = pd.DataFrame(rows) if rows else pd.DataFrame(columns=list(_FIT_COLUMNS))
    # The family is chosen by held-out log error among the usable ones (never linear R^2, never a default).
    chosen = choose_family({name: lopos[name] for name in families if name in lopos})
    chosen_by = "user" if calibration_family else "held-out log error"
    calibration_family = calibration_family or chosen
    best_family = chosen
    columns = ["family", "method", "param", "estimate", "ci_low", "ci_high", "n_problems", "level", "n_resamples",
               "ci_reason"]
    params = (pd.concat(params, ignore_index=True).reindex(columns=columns) if params
              else pd.DataFrame(columns=columns))

    ba_raw = bland_altman(x, y, groups, level=level, n_boot=n_boot, seed=seed) if fitted else None
    ba_cal = None
    if calibration_family in lopos:
        pred = lopos[calibration_family].predictions
        usable = np.isfinite(pred) & (pred > 0)
        ba_cal = (bland_altman(pred[usable], y[usable], groups[usable], level=level, n_boot=n_boot, seed=seed)
                  if usable.sum() > 2 else None)
        del pred, usable
    # every family's out-of-fold predictions (one float per pair each) are read by nothing after this point:
    # not held through the percentile agreement, the largest step that follows
    del lopos

    # None: raw rank agreement only (no usable family, or no held-out problem to validate one on)
    mapping = fit_objects.get(calibration_family) if pairing.n_problems >= MIN_PROBLEMS else None
    try:
        agreement = percentile_agreement(corpus, source=source, target=target, key=key, mapping=mapping,
                                         pairing=pairing, n_boot=n_boot_rank, level=level, seed=seed)
        sp_raw, sp_cal, sp_gain, agree_frame = (agreement.spearman_raw, agreement.spearman_calibrated,
                                                agreement.gain, agreement.frame)
    except ValueError:  # too few re-run references with scores on both sides
        sp_raw = sp_cal = sp_gain = None
        agree_frame = pd.DataFrame(columns=["problem", "solution", "q_fresh", "q_raw", "q_calibrated"])

    drift = pd.DataFrame()
    # the campaigns the drift table maps onto the anchor (a change needs two of them)
    drift_expected = [c for c in drift_names[0] if c != pair.anchor] if drift_names is not None else []
    if drift_names is not None and pairing.n_problems >= MIN_PROBLEMS:  # drift maps are fitted over problems
        campaigns, environments = drift_names
        if key == "campaign" and len(campaigns) == 2 and len(environments) == 1:
            # the drift table of one environment and two campaigns is the affine fit above: reuse it
            drift = _drift_from_fit(params, environment=environments[0], campaign=target,
                                    n_pairs=pairing.n_pairs, n_problems=pairing.n_problems)
        elif len(campaigns) >= 2 and drift_pairings is not None:
            drift = drift_from_pairings(drift_pairings, campaigns=[c for c in campaigns if c != pair.anchor],
                                        n_boot=n_boot, level=level, seed=seed)
        elif len(campaigns) >= 2:
            drift = campaign_drift(pair.drift_frame, anchor=pair.anchor, n_boot=n_boot, level=level, seed=seed)

    aff = params.loc[params["family"] == "affine"].set_index("param")
    intercept_ci = ((float(aff.loc["intercept_s", "ci_low"]), float(aff.loc["intercept_s", "estimate"]),
                     float(aff.loc["intercept_s", "ci_high"])) if "intercept_s" in aff.index else (np.nan,) * 3)
    sensitivity = pd.DataFrame(columns=["tau", "intercept_s", "pass_rate", "n_pass", "n_solutions"])

    if has_candidates and np.isfinite(intercept_ci).all():
        sensitivity = ptau_sensitivity(corpus, source=source, target=target, key=key,
                                       slope=float(aff.loc["slope", "estimate"]), intercepts=intercept_ci,
                                       taus=taus, sides=ptau_sides)

    identity = {"log_rmse": identity_log_rmse(x, y), "share_2x_off": share_off(x, y),
                "min_duration_s": prediction_floor(y)[0], "floor_reason": prediction_floor(y)[1]}
    findings = limits.judged(_findings(source=source, target=target, source_runs=pair.source_runs, target_runs=pair.target_runs,
                         key=key, pairing=pairing, fits=fits, aff=aff, identity=identity,
                         best_family=best_family, calibration_family=calibration_family, chosen_by=chosen_by,
                         sp_raw=sp_raw,
                         sp_cal=sp_cal, drift=drift, sensitivity=sensitivity, limits=limits, n_boot=n_boot,
                         has_candidates=has_candidates, drift_expected=drift_expected))
    return CalibrationAudit(
        # the pairing's per-side cells served the steps above (percentile agreement); the result keeps the pairs
        # (two cell tables as long as the pairs, 6*10^8 bytes at 10^8 executions, read by nothing after this)
        source=source, target=target, key=key, pairing=replace(pairing, source_cells=None, target_cells=None),
        fits=fits, params=params,
        fit_objects=fit_objects, best_family=best_family, calibration_family=calibration_family,
        spearman_raw=sp_raw, spearman_calibrated=sp_cal, spearman_gain=sp_gain, agreement=agree_frame,
        bland_altman=ba_raw, bland_altman_calibrated=ba_cal, drift=drift, sensitivity=sensitivity,
        findings=tuple(findings), thresholds=limits, n_boot=n_boot, source_runs=pair.source_runs,
        target_runs=pair.target_runs, identity=identity)


def _drift_from_fit(params: pd.DataFrame, *, environment, campaign, n_pairs, n_problems) -> pd.DataFrame:
    """The :func:`stats.calibration.campaign_drift` table of a single non-anchor campaign."""
    aff = params.loc[params["family"] == "affine"]
    identity = aff["param"].map({"slope": 1.0, "intercept_s": 0.0}).to_numpy()
    return pd.DataFrame({
        "environment": environment, "campaign": campaign, "param": aff["param"].to_numpy(),
        "estimate": aff["estimate"].to_numpy(), "ci_low": aff["ci_low"].to_numpy(),
        "ci_high": aff["ci_high"].to_numpy(), "identity": identity,
        # None (null) without an interval (n_boot = 0): not measured, never True
        "drifted": [None if not (np.isfinite(lo) and np.isfinite(hi)) else bool(not lo <= i <= hi)
                    for lo, hi, i in zip(aff["ci_low"].to_numpy(dtype=float), aff["ci_high"].to_numpy(dtype=float),
                                         identity)],
        "change": np.nan, "change_low": np.nan, "change_high": np.nan, "changed": False,
        "n_pairs": n_pairs, "n_problems": n_problems})


def _spearman_raw_finding(sp_raw, sp_cal, calibration_family, limits, pair) -> Finding:
    if sp_raw is None:
        return Finding.not_available("spearman_raw", "too few re-run references with scores on both sides",
                                     threshold=limits.text("spearman"), subject=pair)
    level = limits.judge("spearman", sp_raw.estimate)
    cal = f"; calibrated with {calibration_family}: {sp_cal}" if sp_cal is not None else ""
    return Finding(level, "spearman_raw", sp_raw.estimate, limits.text("spearman"),
                   f"scores against the stored pool rank re-run references like the fresh pool with rho {sp_raw}{cal}"
                   + (": do not rank fresh runs against the uncalibrated stored pool" if level != "pass" else ""),
                   subject=pair)


#: Findings that need paired cells in >= 2 problems (a held-out problem, or intervals over problems), with the
#: name of the thresholds they are judged against.
_NEEDS_PROBLEMS = (("unusable_families", None), ("best_lopo_log_rmse", "log_rmse"),
                   ("within_problem_spearman", "within_problem"), ("best_lopo_r2", "lopo_r2"),
                   ("multiplicative_gap", "multiplicative_gap"), ("affine_intercept_ms", "intercept_share"),
                   ("affine_slope_change", "slope_change"), ("spearman_calibrated", "spearman"),
                   ("ptau_swing_pp", "ptau_swing_pp"), ("drift_changes", "drift_changes"))

#: The fewest problems a leave-one-problem-out check and an interval over problems need.
MIN_PROBLEMS = 2


def _no_ci(n_boot: int, identity: str) -> str:
    """Why a finding judged only where its bootstrap CI excludes ``identity`` is n/a."""
    return (f"judged only when its bootstrap CI excludes {identity}, and n_boot = 0 draws no resamples: run with "
            "--n-boot 1000 (n_boot=1000)" if n_boot == 0 else
            f"judged only when its bootstrap CI excludes {identity}, and the CI is undefined on these pairs")


def _few_problems(pairing, limits, pair) -> list[Finding]:
    """The n/a findings of a pair whose cells pair up in fewer than :data:`MIN_PROBLEMS` problems."""
    k = pairing.n_problems
    reason = (f"{k} problem{'' if k == 1 else 's'} pair up ({pairing.n_pairs:,} paired cells); this figure needs "
              f">= {MIN_PROBLEMS}: leave-one-problem-out holds a problem out to validate the map and the intervals "
              "resample problems. Time the same problems on both runs (at least 2, better 10 or more)")
    if pairing.n_pairs < 2:
        reason += "; fewer than 2 paired cells fit no map at all"
    return [Finding.not_available(metric, reason, subject=pair, threshold=limits.text(name) if name else _UNUSABLE)
            for metric, name in _NEEDS_PROBLEMS]


def _no_line(pairing) -> str:
    """Why the affine map has no slope or intercept (every paired source duration is one value), else ''."""
    x = pairing.frame["x"].to_numpy(dtype=float)
    if not len(x) or np.ptp(x) > 0:
        return ""
    return (f"every paired source duration is the same ({x[0]:.3g} s): a line through one source value has no slope "
            "or intercept (the multiplicative map, a ratio, is defined)")


def _intercept_text(limits, typical_s: float) -> str:
    """The intercept's limits as shares of the typical target duration, and what they come to in ms."""
    ms = typical_s * 1000
    return (f"|b| >= {limits.intercept_share_warn * 100:g} % (warn), >= {limits.intercept_share_fail * 100:g} % (fail) of the median "
            f"paired target duration {ms:.3g} ms (= {limits.intercept_share_warn * ms:.3g}, "
            f"{limits.intercept_share_fail * ms:.3g} ms)")


def _intercept_finding(intercept: tuple[float, float, float], pairing, limits, n_boot: int, pair: str) -> Finding:
    """``affine_intercept_ms``: the offset b of y = a x + b, judged as a share of the median paired target duration.

    An offset matters by how much of a duration it is: 53 ms is half of a 100 ms program and 0.5 % of a ten-second
    one, and 5 µs is half of a 10 µs benchmark. So b is judged relative to the typical duration it is added to
    (b / median y = the median share of a target duration that the offset accounts for), never against a constant
    in ms; the value stays in ms, to be read. Judged only when its CI excludes 0.
    """
    b, b_lo, b_hi = intercept  # seconds: estimate and CI
    typical = float(np.median(pairing.frame["y"].to_numpy(dtype=float)))
    threshold = _intercept_text(limits, typical)
    if _no_line(pairing):
        return Finding.not_available("affine_intercept_ms", _no_line(pairing), threshold=threshold, subject=pair)
    if not np.isfinite([b_lo, b_hi]).all():
        return Finding.not_available("affine_intercept_ms", _no_ci(n_boot, "0 ms"), threshold=threshold, subject=pair)
    if not (np.isfinite(typical) and typical > 0):
        return Finding.not_available("affine_intercept_ms", f"the median paired target duration is {typical:g} s: an "
                                     "offset cannot be judged as a share of it", threshold=threshold, subject=pair)
    significant = not (b_lo <= 0.0 <= b_hi)
    share = abs(b) / typical
    level = limits.judge("intercept_share", share) if significant else "pass"
    return Finding(level, "affine_intercept_ms", b * 1000, threshold,
                   f"affine drift with intercept {b * 1000:.3g} ms [{b_lo * 1000:.3g}, {b_hi * 1000:.3g}], "
                   f"{share:.1%} of the median paired target duration ({typical * 1000:.3g} ms)"
                   + (": calibrate stored references before ranking (speedaudit calibrate)" if level != "pass"
                      else (": no offset to correct" if not significant else ": offset too small to matter")),
                   subject=pair)


#: The threshold of ``unusable_families``: what makes a family unusable (:class:`stats.calibration.LopoResult`).
_UNUSABLE = ("any held-out prediction non-finite, <= 0 or below a tenth of the smallest target duration, or a "
             "polynomial on no more distinct source durations than coefficients")


def _findings(*, source, target, source_runs, target_runs, key, pairing, fits, aff, identity, best_family,
              calibration_family, chosen_by, sp_raw, sp_cal, drift,
              sensitivity, limits, n_boot: int, has_candidates: bool = True,
              drift_expected: Sequence[str] = ()) -> list[Finding]:
    pair = f"{describe_sides(source_runs, source)} -> {describe_sides(target_runs, target)}"
    out: list[Finding] = []

    lost = pairing.lost.set_index("reason")["n_cells"]
    n_lost = int(lost.drop("role_excluded", errors="ignore").sum())
    share = n_lost / max(n_lost + pairing.n_pairs, 1)
    top = lost.drop("role_excluded", errors="ignore").idxmax() if n_lost else "none"
    level = limits.judge("pairs_lost_share", share)
    out.append(Finding(level, "pairs_lost_share", share, limits.text("pairs_lost_share"),
                       f"{n_lost:,} of {n_lost + pairing.n_pairs:,} cells could not be paired (most: {top}); "
                       + ("no cell pairs up, so nothing can be calibrated: run the same solutions and tests on both "
                          "sides, each with an ok repeat" if not pairing.n_pairs and n_lost else
                          "the pairs that remain may not represent the corpus: run the same solutions and tests "
                          "on both sides" if level != "pass" else "enough cells pair up"), subject=pair))
    if pairing.n_problems < MIN_PROBLEMS:  # the rest is measured; what needs problems is n/a, with why
        return out + _few_problems(pairing, limits, pair) + [
            _spearman_raw_finding(sp_raw, sp_cal, calibration_family, limits, pair)]

    table = fits.set_index("name")
    bad = table.loc[~table["usable"].astype(bool)]
    floor = float(identity["min_duration_s"])
    not_available = bad.loc[bad["na_reason"].astype(bool)]  # not determined by, or not judgeable on, the values
    predicting = bad.loc[~bad["na_reason"].astype(bool)]
    counts = ", ".join(f"{name}: " + ", ".join(f"{int(r[c]):,} {what}" for c, what in (
        ("n_nonfinite", "non-finite"), ("n_nonpositive", "<= 0"), ("n_below_min", f"below {floor:.3g} s"))
        if int(r[c]) or c == "n_nonpositive") for name, r in predicting.iterrows())
    why = "; ".join(
        ([f"{len(predicting)} predict non-finite durations, durations <= 0 or below the floor out of fold ({counts}; "
          f"floor = {identity['floor_reason']})"] if len(predicting) else [])
        + ([f"{len(not_available)} are n/a (" + "; ".join(f"{name}: n/a, {r['na_reason']}"
                                                           for name, r in not_available.iterrows()) + ")"]
           if len(not_available) else []))
    # Families that cannot be used are never chosen: a verdict on the map only when none is usable (fail) or
    # when the family the user named for calibration is one of them (warn); otherwise the counts are information.
    level = ("fail" if best_family is None else
             "warn" if calibration_family in bad.index else "pass")
    out.append(Finding(level, "unusable_families", len(bad), _UNUSABLE,
                       (f"{len(bad)} of {len(table)} families cannot be used: {why}: unusable for ranking, never "
                        "clipped silently"
                        + (f"; {calibration_family} was named and is one of them: leave it out to use {best_family}"
                           if calibration_family in bad.index else
                           f"; {calibration_family} (usable) is used instead" if calibration_family else "")
                        if len(bad) else "every family's held-out predictions are positive durations above the floor "
                        f"({identity['floor_reason']})"), subject=pair))
    if calibration_family is None:
        out.append(Finding("fail", "calibration_family", None, "a usable family",
                           "no family's held-out predictions are all usable durations: do not calibrate these "
                           "timings; time on the target itself", subject=pair))
        return out
    best = table.loc[calibration_family]
    if best["na_reason"]:  # the family the user named cannot be judged on these source values: no verdict on it
        out.append(Finding.not_available("best_lopo_log_rmse", f"{calibration_family} (given by the user): "
                                         f"{best['na_reason']}", threshold=limits.text("log_rmse"), subject=pair))
        return out
    rmse = float(best["lopo_log_rmse"])
    level = limits.judge("log_rmse", rmse)
    how = "chosen by held-out log error" if chosen_by != "user" else "given by the user"
    out.append(Finding(level, "best_lopo_log_rmse", rmse, limits.text("log_rmse"),
                       f"{calibration_family} ({how}) predicts held-out problems off by a typical factor "
                       f"x{np.exp(rmse):.3f} (log-RMSE {rmse:.3f} [{best['lopo_log_rmse_low']:.3f}, "
                       f"{best['lopo_log_rmse_high']:.3f}]; {float(best['share_2x_off']):.0%} of pairs more than 2x "
                       f"off; the timings as they are: x{np.exp(identity['log_rmse']):.3f}, "
                       f"{identity['share_2x_off']:.0%} more than 2x off)"
                       + (f": {source} can be calibrated onto {target}" if level == "pass" else
                          "; percentiles of programs closer than that are noise" if level == "warn" else
                          f": {source} cannot stand in for {target}; time on {target} itself"), subject=pair))
    wp = float(best["within_problem_spearman"])
    level = limits.judge("within_problem", wp, nan="n/a")
    if level == "n/a":
        sizes = pairing.frame.groupby(["problem", "test"], observed=True, sort=False).size()
        why = ("no (problem, test) has >= 3 paired solutions" if not (sizes >= 3).any() else
               "on every (problem, test) with >= 3 paired solutions the target or the calibrated source times them "
               "all alike (one tie): there is no order to agree on")
        out.append(Finding.not_available("within_problem_spearman", why, threshold=limits.text("within_problem"),
                                         subject=pair))
    else:
        out.append(Finding(level, "within_problem_spearman", wp, limits.text("within_problem"),
                           f"within a (problem, test) the calibrated source orders solutions like the target with "
                           f"mean Spearman {wp:.3f} over problems (worst {float(best['within_problem_worst']):.3f}, "
                           f"{float(best['within_problem_share_below']):.0%} below {limits.within_problem_fail:g})"
                           + ("" if level == "pass" else ": rewards ranked on the calibrated pool reorder solutions"),
                           subject=pair))
    r2 = float(best["lopo_r2"])
    level = limits.judge("lopo_r2", r2)
    out.append(Finding(level, "best_lopo_r2", r2, limits.text("lopo_r2"),
                       f"secondary: linear LOPO R^2 of {calibration_family} {r2:.3f} [{best['lopo_r2_low']:.3f}, "
                       f"{best['lopo_r2_high']:.3f}] (on seconds, dominated by the longest tests)", subject=pair))
    if rmse >= limits.log_rmse_fail:
        return out  # a map that does not validate says nothing about drift

    if "multiplicative" in table.index and np.isfinite(table.loc["multiplicative", "lopo_log_rmse"]):
        gap = float(table.loc["multiplicative", "lopo_log_rmse"]) - rmse
        mult_ok = bool(table.loc["multiplicative", "usable"])
        level = limits.judge("multiplicative_gap", gap)
        out.append(Finding(level, "multiplicative_gap", gap, limits.text("multiplicative_gap"),
                           f"held-out log-RMSE of multiplicative-only exceeds {calibration_family}'s by {gap:.3f}"
                           + (": a pure speed factor misses an additive offset (start-up, queueing); calibrate with "
                              f"{calibration_family}" if level != "pass" or not mult_ok
                              else ": a pure speed factor is enough"), subject=pair))

    b, b_lo, b_hi = (float(aff.loc["intercept_s", c]) for c in ("estimate", "ci_low", "ci_high"))
    out.append(_intercept_finding((b, b_lo, b_hi), pairing, limits, n_boot, pair))
    a, a_lo, a_hi = (float(aff.loc["slope", c]) for c in ("estimate", "ci_low", "ci_high"))
    significant = not (a_lo <= 1.0 <= a_hi)
    level = limits.judge("slope_change", abs(a - 1)) if significant else "pass"
    out.append(Finding(level, "affine_slope_change", a - 1, limits.text("slope_change"),
                       f"affine slope {a:.3f} [{a_lo:.3f}, {a_hi:.3f}]"
                       + (f": {target} runs at {a:.2f}x the speed scale of {source}; calibrate before ranking"
                          if level != "pass" else ": no scale change to correct"), subject=pair))
    if not np.isfinite([a_lo, a_hi]).all():
        out[-1] = Finding.not_available("affine_slope_change", _no_line(pairing) or _no_ci(n_boot, "slope 1"),
                                        threshold=out[-1].threshold, subject=pair)

    out.append(_spearman_raw_finding(sp_raw, sp_cal, calibration_family, limits, pair))
    if sp_cal is not None:
        level = limits.judge("spearman", sp_cal.estimate)
        out.append(Finding(level, "spearman_calibrated", sp_cal.estimate, limits.text("spearman"),
                           f"after {calibration_family} calibration rho = {sp_cal}"
                           + (": even calibrated, the stored pool ranks differently; re-collect the reference pool"
                              if level != "pass" else ": the calibrated stored pool can rank fresh runs"), subject=pair))

    if not len(sensitivity):
        why = (f"no candidates on {target}'s side (p_tau scores candidates)"
               if not has_candidates or np.isfinite([b_lo, b_hi]).all()
               else "the p_tau sensitivity moves the intercept across its bootstrap CI, "
               + ("and n_boot = 0 draws no resamples: run with --n-boot 1000" if n_boot == 0 else "which is undefined"))
        out.append(Finding.not_available("ptau_swing_pp", why,
                                         threshold=limits.text("ptau_swing_pp"), subject=pair))
    if len(sensitivity):
        swing = sensitivity.groupby("tau")["pass_rate"].agg(lambda s: s.max() - s.min()) * 100
        tau = float(swing.idxmax())
        pp = round(float(swing.max()), 9)  # pass-rate differences are ratios of counts: drop float dust
        level = limits.judge("ptau_swing_pp", pp)
        out.append(Finding(level, "ptau_swing_pp", pp, limits.text("ptau_swing_pp"),
                           f"the p_{tau:g} pass rate of {target}'s candidates moves {pp:.1f} pp while the intercept "
                           f"moves within its CI [{b_lo * 1000:.3g}, {b_hi * 1000:.3g}] ms"
                           + (": pin the calibration down (more problems / repeats) or re-time the pool"
                              if level != "pass" else ""), subject=pair))

    mapped = set(drift["campaign"].astype(str)) if len(drift) else set()
    unmapped = [str(c) for c in drift_expected if str(c) not in mapped]
    if len(drift_expected) >= 2 and len(mapped) < 2:  # campaigns to compare, but fewer than 2 could be mapped
        out.append(Finding.not_available(
            "drift_changes", f"{len(drift_expected)} campaigns to map onto the anchor, but {', '.join(unmapped)} "
            f"could not be (fewer than {MIN_PROBLEMS} problems pair up with the anchor's cells): a change between "
            f"campaigns needs two mapped campaigns; time the same problems in every campaign",
            threshold=limits.text("drift_changes"), subject=pair))
    elif len(drift) and drift["campaign"].nunique() >= 2 and n_boot == 0:
        out.append(Finding.not_available("drift_changes", "a change counts when the bootstrap CI of the change "
                                         "excludes 0, and n_boot = 0 draws no resamples: run with --n-boot 1000",
                                         threshold=limits.text("drift_changes"), subject=pair))
    elif len(drift) and drift["campaign"].nunique() >= 2:
        changed = drift.loc[drift["changed"].eq(True).to_numpy()]
        n_changed = int(changed[["environment", "campaign"]].drop_duplicates().shape[0])
        level = limits.judge("drift_changes", n_changed)
        which = ", ".join(sorted(set(changed["campaign"].astype(str)))) or "none"
        out.append(Finding(level, "drift_changes", n_changed, limits.text("drift_changes"),
                           f"campaigns whose affine map against the anchor changed from the previous campaign's "
                           f"(bootstrap CI of the change excludes 0): {which}"
                           + (f"; not mapped onto the anchor (fewer than {MIN_PROBLEMS} problems pair up): "
                              f"{', '.join(unmapped)}" if unmapped else "")
                           + ("; the service drifts between campaigns: calibrate each campaign separately"
                              if level != "pass" else ""), subject=pair))
    return out


#: Findings a calibration map corrects (the raw timings differ, the map fixes it); any other warn/fail finding
#: besides the headline is something a map does not fix.
_FIXED_BY_A_MAP = frozenset({"affine_intercept_ms", "affine_slope_change", "multiplicative_gap", "spearman_raw",
                             "drift_changes"})


def calibration_advice(audit) -> str:
    """The "what to do" of a calibration audit, derived from its findings only (never judged again).

    The headline is ``best_lopo_log_rmse`` (the chosen family's held-out log error): ``fail`` says the source
    cannot stand in and never "calibrate"; ``warn``/``pass`` say to calibrate when the timings as they are
    (``identity``) are judged worse, or when a finding a map corrects (:data:`_FIXED_BY_A_MAP`) warns or fails;
    any other warn/fail finding is named as what a map does not fix. The report's page, the JSON (``advice``)
    and the terminal read this one text, so a page cannot say FAIL and "the map validates" together.
    """
    by = {f.metric: f for f in audit.findings}
    source, target, family = audit.source, audit.target, audit.calibration_family
    if audit.pairing.n_problems < MIN_PROBLEMS:
        return (f"time both runs on the same problems (at least {MIN_PROBLEMS}, better 10 or more): no map can be "
                "validated on held-out problems otherwise")
    no_family = by.get("calibration_family")
    if no_family is not None and no_family.level == "fail":
        return (f"do not calibrate these timings: no family predicts usable durations for every held-out problem; "
                f"time on {target} itself")
    head = by.get("best_lopo_log_rmse")
    if head is None or head.level == NA:
        return f"the map cannot be judged: {head.reason if head is not None else 'no held-out error'}"
    factor = float(np.exp(head.value))
    if head.level == "fail":
        return (f"{source} cannot stand in for {target}: the best map ({family}) is off by a typical x{factor:.3f} "
                f"on held-out problems (FAIL); time on {target} itself, do not calibrate")
    # the families not used and the secondary linear R^2 say nothing about what to do with the chosen map
    others = [f for f in audit.findings if f.level in ("warn", "fail")
              and f.metric not in (head.metric, "unusable_families", "best_lopo_r2")]
    differ = [f for f in others if f.metric in _FIXED_BY_A_MAP]
    not_fixed = [f for f in others if f.metric not in _FIXED_BY_A_MAP]
    raw = audit.identity.get("log_rmse", np.nan)
    raw_level = audit.thresholds.judge("log_rmse", raw, nan="n/a")
    needs_map = bool(differ) or raw_level in ("warn", "fail")
    what = (f"the {family} map predicts held-out problems within a typical x{factor:.3f} ({head.level.upper()}; "
            f"as they are, the timings are off by x{np.exp(raw):.3f})")
    if needs_map:
        why = ", ".join(f"{f.metric} {f.level.upper()}" for f in differ) or f"raw error {raw_level.upper()}"
        text = (f"{what}; the raw timings differ ({why}): calibrate the {source} timings with it "
                f"(`speedaudit calibrate`) before ranking against them")
    else:
        text = f"{what}: {source} timings can be used for {target} as they are"
    if head.level == "warn":
        text += "; percentiles of programs closer than that factor are noise"
    if not_fixed:
        text += ("; a map does not fix " + ", ".join(f"{f.metric} ({f.level.upper()})" for f in not_fixed)
                 + ": see those findings")
    return text


def apply_calibration(
    corpus: pd.DataFrame,
    *,
    source,
    target,
    family: str | None = None,
    key: str = "auto",
    robust: str | None = None,
    variance_ratio: float = 1.0,
    min_duration_s: float | None = None,
    clip: bool = False,
    force: bool = False,
    seed: int | None = 0,
) -> tuple[pd.DataFrame, dict]:
    """Map the source's durations onto the target scale.

    The map y = f(x) is fitted on the paired medians (see
    :func:`stats.calibration.fit_family`) and applied to every ``ok`` row of
    the source (non-``ok`` rows keep their limit/duration). The original value
    is kept in ``duration_raw_s`` (equal to ``duration_s`` on rows that were
    not mapped) and ``calibrated`` marks mapped rows. ``family=None`` (the
    default) chooses the family by held-out log error
    (:func:`stats.calibration.choose_family` over every family's
    leave-one-problem-out predictions; ``chosen_by`` in the mapping); any family may be named.

    Refusals (``ValueError``, nothing written) unless ``force=True``: the map's held-out
    (leave-one-problem-out) log error is worse than that of the timings as they are
    (:func:`stats.calibration.identity_log_rmse`), or it leaves more pairs more than 2x off (out of fold
    or in sample) than the timings as they are (:func:`stats.calibration.share_off`), or there are fewer than 2
    problems to hold one out. A map that sends any source row to <= 0 or below the floor
    (``min_duration_s``; default :func:`stats.calibration.prediction_floor`, a tenth of the smallest
    paired target duration) is refused unless ``clip=True``, which clips those rows to the floor and
    counts them: clipped rows tie at the floor. Labels (environment, campaign) are unchanged, so the
    calibrated source can serve as the reference pool for the target's candidates. ``source`` and
    ``target`` are two runs or two names of one column, as in :func:`run_calibration_audit`; with runs,
    only the source run's rows are mapped.

    Returns
    -------
    (DataFrame, dict)
        The calibrated corpus (the mapping also in ``DataFrame.attrs["calibration"]``)
        and the mapping: source, target, key, family, method, params, formula,
        held-out log-RMSE and LOPO R^2, the identity's log-RMSE, the share of pairs more than 2x off
        before (as they are), after out of fold and after in sample, pairs, rows mapped and clipped.
    """
    pair = calibration_pair(corpus, source=source, target=target, key=key)
    source, target, key = pair.source, pair.target, pair.key
    pairing = pair_medians(pair.frame, source=source, target=target, key=key)
    if pairing.n_pairs < 2:
        raise ValueError(f"no pairs to calibrate on: {pairing.summary()}")
    f = pairing.frame
    x, y = f["x"].to_numpy(dtype=float), f["y"].to_numpy(dtype=float)
    groups = f["problem"].astype(str).to_numpy()
    if min_duration_s is None:
        min_duration_s, floor_reason = prediction_floor(y)
    else:
        floor_reason = f"given: {min_duration_s:g} s"
    chosen_by = "user"
    if family is None:
        if pairing.n_problems < 2:
            raise ValueError("choosing a family by held-out error needs pairs in >= 2 problems; name --family "
                             "(and --force: its held-out error cannot be measured)")
        results = {fam: lopo_r2(x, y, groups, fam, variance_ratio=variance_ratio, n_boot=0, seed=seed,
                                min_duration_s=min_duration_s) for fam in FAMILIES}
        family = choose_family(results)
        if family is None:
            raise ValueError("no calibration family predicts usable durations (finite, positive, above the floor: "
                             f"{floor_reason}) for every held-out problem; name --family with --clip to force one, "
                             "or time on the target itself")
        chosen_by = "held-out log error (lowest leave-one-problem-out log-RMSE among usable families)"
    fit = fit_family(x, y, family, robust=robust, variance_ratio=variance_ratio, seed=seed)
    if not np.isfinite(list(fit.params.values())).all():  # nothing to write, whatever --force and --clip say
        why = (f"every paired source duration is the same ({x[0]:.3g} s): no {family} map is determined by one "
               "source value" if np.ptp(x) == 0 else undetermined_reason(family, x)
               or f"its fit has no finite parameters ({fit.formula()})")
        raise ValueError(f"the {family} map cannot be written: {why}. Leave --family out (chosen by held-out log "
                         "error; multiplicative, a ratio, is defined), or choose another family")
    lopo = (lopo_r2(x, y, groups, family, robust=robust, variance_ratio=variance_ratio, n_boot=0, seed=seed,
                    min_duration_s=min_duration_s) if pairing.n_problems >= 2 else None)
    raw_rmse, before = identity_log_rmse(x, y), share_off(x, y)
    held_out = None if lopo is None else lopo.log_rmse.estimate
    after = None if lopo is None else share_off(lopo.predictions, y)
    in_sample = share_off(fit.predict(x), y)
    if not force:
        if lopo is None:
            raise ValueError(f"pairs in {pairing.n_problems} problem: the {family} map's held-out error cannot be "
                             "measured (leave-one-problem-out needs >= 2); time both runs on more problems, or "
                             "pass --force to write it unvalidated")
        if lopo.na_reason:  # some held-out problems cannot be predicted by this family: it is not validated
            raise ValueError(f"the {family} map is not validated: {lopo.na_reason}. Leave --family out, or pass "
                             "--force to write it unvalidated")
        if not held_out <= raw_rmse:  # NaN (no usable held-out prediction) is refused too
            raise ValueError(f"the {family} map's held-out log error {held_out:.4f} (x{np.exp(held_out):.3f}) is "
                             f"worse than the timings as they are ({raw_rmse:.4f}, x{np.exp(raw_rmse):.3f}): "
                             "calibrating would move them further from the target. Leave --family out, or pass "
                             "--force to write it anyway")
        if max(after, in_sample) > before:
            raise ValueError(f"the {family} map leaves {after:.1%} of pairs more than 2x off out of fold "
                             f"({in_sample:.1%} in sample), against {before:.1%} as they are: calibrating would make "
                             "more tests 2x wrong. Leave --family out, or pass --force to write it anyway")
    out = corpus.copy()
    durations = out["duration_s"].to_numpy(dtype=float)
    side = np.zeros(len(out), dtype=bool)
    for summary in pair.source_runs:
        side |= summary.run.mask(out)
    rows = side & (out["status"] == "ok").to_numpy() & np.isfinite(durations)
    with np.errstate(over="ignore", invalid="ignore"):
        mapped = fit.predict(durations[rows])
    clipped = ~(mapped >= min_duration_s)
    if clipped.any() and not clip:
        raise ValueError(f"the {family} map {fit.formula()} sends {int(clipped.sum()):,} of {int(rows.sum()):,} "
                         f"source rows to <= 0 or below the floor {min_duration_s:.3g} s ({floor_reason}); clipped "
                         "rows would tie at the floor. Leave --family out (chosen by held-out log error), choose "
                         "another family, or pass --clip to clip them")
    mapped = np.where(clipped, min_duration_s, mapped)
    new = durations.copy()
    new[rows] = mapped
    out["duration_raw_s"] = durations
    out["duration_s"] = new
    out["calibrated"] = rows
    mapping = {
        "source": source, "target": target, "key": key,
        "source_runs": [r.to_dict() for r in pair.source_runs], "target_runs": [r.to_dict() for r in pair.target_runs],
        "family": family, "chosen_by": chosen_by, "clip": bool(clip), "force": bool(force), "method": fit.method,
        "params": dict(fit.params), "formula": fit.formula(), "variance_ratio": fit.variance_ratio,
        "lopo_r2": None if lopo is None else lopo.r2.estimate,
        "lopo_log_rmse": held_out, "identity_log_rmse": raw_rmse,
        "share_2x_off_before": before, "share_2x_off_after": after, "share_2x_off_after_in_sample": in_sample,
        "n_pairs": pairing.n_pairs, "n_problems": pairing.n_problems, "rows_mapped": int(rows.sum()),
        "rows_clipped": int(clipped.sum()), "min_duration_s": min_duration_s, "floor_reason": floor_reason,
        "note": f"duration_s of ok rows of {describe_runs(pair.source_runs)} mapped onto the scale of "
                f"{describe_runs(pair.target_runs)}; originals in duration_raw_s",
    }
    mapping = to_jsonable(mapping)
    out.attrs["calibration"] = mapping
    return out, mapping


# ----------------------------------------------------------------------------------------------
# the partition steps (audits.protocol.partition): the same in memory (one partition) and on Dask
# ----------------------------------------------------------------------------------------------
# A calibration pairs two runs at (problem, test, solution) cells. Every figure after the pairing is a function of
# the two sides' cell medians (stats.ranking.solution_cells), the source's reference pool and the target's candidate
# cells, all per problem: each partition's part computes them (stats.calibration.side_cells, ptau_sides), the
# combine joins them in problem order, pairs them (stats.calibration.pair_cells) and runs combine_pairing. The
# campaign-drift table of an environment with three or more campaigns pairs every campaign with the anchor: the
# parts compute those campaigns' cells too (drift_campaigns), and the combine pairs them as campaign_drift does
# (stats.calibration.drift_from_pairings). Pairs named by column values instead of two runs are not split this way
# (in memory only: run_calibration_audit).

def _cell_cvs_part(part) -> dict:
    """The repeat CVs of every run's reference cells in one partition (a cell lies in one problem): what
    :func:`audits.corpus.selection.quietness_of` reads for the default pairs."""
    return cell_cvs(part.corpus)


def drift_campaigns(runs, src: RunSummary, tgt: RunSummary, key: str) -> tuple:
    """The campaigns of the drift table the parts compute cells for: the source environment's other campaigns
    than the anchor (the source's), when it has three or more; () otherwise (two campaigns: the table is the
    pair's own fit)."""
    if key != "campaign":
        return ()
    own = sorted(s.campaign for s in runs.of_environment(src.environment))
    return tuple(c for c in own if c != src.campaign) if len(own) > 2 else ()


def plan_pairs(ctx, named: Sequence = ()) -> tuple:
    """The pairs of runs calibrated, over a plan context (:mod:`audits.protocol.partition`), by the one rule
    (:func:`audits.corpus.selection.choose_pairs`): the ``named`` ones, else the default pairs, the quietness of
    the runs (where the default pairs need it) from one more read of the partitions (``ctx.map``). One piece per
    pair: ``{"rule", "source", "target", "key", "drift_campaigns"}``; none when there is no pair."""
    runs = ctx.runs
    named = [(Run.coerce(s), Run.coerce(t)) for s, t in named]
    if named or not needs_quietness(runs):
        choices = choose_pairs(None, named=named, runs=runs, figure={})
    else:
        merged: dict = {}
        for part in ctx.map(_cell_cvs_part):
            for run, values in part.items():
                merged.setdefault(run, []).append(values)
        choices = choose_pairs(None, runs=runs, figure=quietness_of(merged, runs))
    return tuple(run_pair_piece(runs, choice.source, choice.target, rule=choice.rule) for choice in choices)


def run_pair_piece(runs, source, target, *, rule: str = "named") -> dict:
    """The piece of a plan that calibrates run ``source`` onto run ``target`` (each a Run or (environment,
    campaign) of the run table ``runs``): ``{"rule", "source", "target", "key", "drift_campaigns"}``."""
    src, tgt = runs.get(Run.coerce(source)), runs.get(Run.coerce(target))
    if src.run == tgt.run:
        raise RunError(f"source and target are the same run {src.run}; name two different runs")
    key = "campaign" if src.environment == tgt.environment else "environment"
    return {"rule": rule, "source": src, "target": tgt, "key": key,
            "drift_campaigns": drift_campaigns(runs, src, tgt, key)}


def pair_part(part, piece: dict) -> dict:
    """One partition's (an AuditContext's) cells of both runs of a pair, the source pool and the target's candidate
    cells, and (campaign pairs) the cells of the drift table's campaigns and the environment's campaigns and
    problems."""
    rows = part.corpus
    source, target, key = piece["source"], piece["target"], piece["key"]
    src_mask, tgt_mask = source.run.mask(rows), target.run.mask(rows)
    frame = rows.loc[src_mask | tgt_mask]  # the two runs' rows (calibration_pair's frame)
    names = {"campaign": (source.campaign, target.campaign),
             "environment": (source.environment, target.environment)}[key]
    src, tgt, within, n_excluded = side_cells(frame, source=names[0], target=names[1], key=key)
    out = {"source_cells": src, "target_cells": tgt, "within": within, "n_role_excluded": n_excluded,
           "pool": None, "candidates": None, "has_candidates": False, "campaigns": set()}
    if src_mask.any() or tgt_mask.any():
        out["pool"], out["candidates"] = ptau_sides(rows.loc[src_mask], rows.loc[tgt_mask])
    if "role" in rows.columns:
        out["has_candidates"] = bool((tgt_mask & (rows["role"] == "candidate").to_numpy()).any())
    if key == "campaign":  # the drift rows: every row of the environment
        in_env = label_mask(rows["environment"], source.environment)
        env = rows if in_env.all() else rows.loc[in_env]  # no copy when the corpus is one environment
        # The names present, from category codes: astype(str) of 10^7 rows cost 5 s (cProfile, 2026-12-06).
        out["campaigns"] = set(present_labels(env["campaign"]))
        out["drift"] = {camp: side_cells(env, source=source.campaign, target=camp, key="campaign")
                        for camp in piece["drift_campaigns"]}
        out["drift_problems"] = set(present_labels(env["problem"]))
    return out


def _drift_pairings(parts: list, src: RunSummary, campaigns: list) -> dict:
    """:func:`stats.calibration.drift_from_pairings`'s ``sides`` of the source environment: each campaign's cells and
    the anchor's, joined in problem order and paired as :func:`stats.calibration.pair_medians` pairs them."""
    pairings = {}
    for camp in campaigns:
        sides = [p["drift"][camp] for p in parts]
        pairings[camp] = pair_cells(joined([s[0] for s in sides]), joined([s[1] for s in sides]),
                                    source=src.campaign, target=camp, key="campaign",
                                    n_role_excluded=int(sum(s[3] for s in sides)))
    problems = sorted(set().union(*(p["drift_problems"] for p in parts)))
    return {src.environment: (problems, pairings)}


def combine_pair(parts: list, piece: dict, *, families, robust, calibration_family, variance_ratio, taus, n_boot,
                 n_boot_rank, level, seed, thresholds) -> CalibrationAudit:
    """One pair's calibration from every partition's :func:`pair_part`: the cells joined in problem order and paired
    (:func:`stats.calibration.pair_cells`), then :func:`combine_pairing` (``parts`` is emptied once its cells are
    joined, so the client does not hold them twice through the combine). The options come validated by
    :class:`~audits.checks.declared.calibration.CalibrationOptions` (the registered audit's, or
    :func:`run_calibration_audit`'s keywords): not checked again here."""
    limits = CalibrationThresholds.coerce(thresholds)
    families = list(families)
    src, tgt, key = piece["source"], piece["target"], piece["key"]
    names = (src.campaign, tgt.campaign) if key == "campaign" else (src.environment, tgt.environment)
    drift_names = drift_pairings = None
    if key == "campaign":
        campaigns = sorted(set().union(*(p["campaigns"] for p in parts)))
        drift_names = (campaigns, [src.environment])
        if len(campaigns) > 2:
            drift_pairings = _drift_pairings(parts, src, [c for c in campaigns if c != src.campaign])
    pool = joined([p["pool"] for p in parts])
    if pool is not None and "pool_language" in pool.columns:  # a problem of one pool has "" (partitions
        pool["pool_language"] = pool["pool_language"].fillna("")  # without split problems: NaN)
    sides = (pool, joined([p["candidates"] for p in parts]))
    has_candidates = any(p["has_candidates"] for p in parts)
    n_role_excluded = int(sum(p["n_role_excluded"] for p in parts))
    src_cells = joined([p.pop("source_cells") for p in parts])
    tgt_cells = joined([p.pop("target_cells") for p in parts])
    parts.clear()  # each partition's tables are in the joined tables now: not held twice through the combine
    pairing = pair_cells(src_cells, tgt_cells, source=names[0], target=names[1], key=key,
                         n_role_excluded=n_role_excluded)
    del src_cells, tgt_cells
    pair = CalibrationPair(None, names[0], names[1], key, (src,), (tgt,), None,
                           src.campaign if key == "campaign" else None)
    result = combine_pairing(pair, pairing, corpus=None, drift_names=drift_names, has_candidates=has_candidates,
                             families=families, robust=robust, calibration_family=calibration_family,
                             variance_ratio=variance_ratio, taus=tuple(taus), n_boot=n_boot, n_boot_rank=n_boot_rank,
                             level=level, seed=seed, limits=limits, ptau_sides=sides, drift_pairings=drift_pairings)
    return replace(result, pair_rule=piece["rule"])
