"""The calibration audit's declarations: its thresholds and options, importable without numpy or pandas.

The audit itself is :mod:`audits.checks.calibration` (its statistics) registered as ``AUDITS["calibration"]`` of
:mod:`audits.checks.registered`; this module is what the command line's ``--help``, the registry and every
orchestrator read (one declaration of each option and default).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from audits.protocol.params import (Boolean, Choices, Interval, NoneOk, Options, RunPairs, Sequence,  # noqa: F401
                                    StrOptions, Text, n_boot_option, option, seed_option)
from audits.protocol.thresholds import ThresholdError, Thresholds  # noqa: F401
from stats.declarations import FAMILIES, ROBUST_METHODS

__all__ = ["CalibrationThresholds", "CalibrationOptions"]


@dataclass(frozen=True)
class CalibrationThresholds(Thresholds):
    """Limits of the calibration findings (all overridable; :mod:`audits.protocol.thresholds`).

    lopo_r2_warn, lopo_r2_fail : 0.95, 0.90
        Best pooled LOPO R^2 over the families (lower is worse): below 0.9 the source cannot stand in.
    log_rmse_warn, log_rmse_fail : 0.10, 0.25
        Log-ratio RMSE of the best family's out-of-fold predictions (0.1 ~ 10 % typical error).
    pairs_lost_share_warn, pairs_lost_share_fail : 0.20, 0.50
        Share of cells seen on either side that could not be paired (floor rows excluded).
    intercept_share_warn, intercept_share_fail : 0.05, 0.20
        |affine intercept| as a share of the median paired target duration, judged only when its CI excludes 0.
        Relative, never a constant in ms: an offset matters by how much of a duration it is (the study's 53 ms
        is about half of its ~100 ms programs: fail; the same 53 ms on ten-second programs is 0.5 %: pass; a
        5 us offset on 10 us benchmarks: fail). The limits follow the log-RMSE ones: a pure speed factor that is
        right at the median duration m is off by b / (m - b) on a test of m / 2, i.e. 5 % at b = 0.05 m (half
        the log-RMSE warn of 0.10) and 25 % at b = 0.2 m (the log-RMSE fail of 0.25).
    slope_change_warn, slope_change_fail : 0.05, 0.20
        |affine slope - 1|, judged only when its CI excludes 1.
    multiplicative_gap_warn, multiplicative_gap_fail : 0.02, 0.10
        Held-out log-RMSE of multiplicative minus that of the chosen family (0.1 ~ a pure scale factor is
        10 % further off): a pure scale factor misses an offset.
    within_problem_warn, within_problem_fail : 0.90, 0.80
        Mean over problems of the within-(problem, test) Spearman of the chosen family's out-of-fold
        predictions against the target (lower is worse): do solutions keep their order.
    spearman_warn, spearman_fail : 0.90, 0.80
        Spearman rho of scores against the stored pool vs the fresh pool (lower is worse).
    ptau_swing_pp_warn, ptau_swing_pp_fail : 2, 5
        Swing of the p_tau pass rate (percentage points) across the intercept's CI.
    drift_changes_warn, drift_changes_fail : 1, 2
        Campaigns whose map against the anchor changed from the previous campaign's (CI of the change excludes 0).
    """

    lopo_r2_warn: float = 0.95
    lopo_r2_fail: float = 0.90
    log_rmse_warn: float = 0.10
    log_rmse_fail: float = 0.25
    pairs_lost_share_warn: float = 0.20
    pairs_lost_share_fail: float = 0.50
    intercept_share_warn: float = 0.05
    intercept_share_fail: float = 0.20
    slope_change_warn: float = 0.05
    slope_change_fail: float = 0.20
    multiplicative_gap_warn: float = 0.02
    multiplicative_gap_fail: float = 0.10
    spearman_warn: float = 0.90
    spearman_fail: float = 0.80
    ptau_swing_pp_warn: float = 2.0
    ptau_swing_pp_fail: float = 5.0
    drift_changes_warn: float = 1.0
    drift_changes_fail: float = 2.0
    within_problem_warn: float = 0.90
    within_problem_fail: float = 0.80

    audit: ClassVar[str] = "calibration"
    lower_is_worse: ClassVar[frozenset[str]] = frozenset({"lopo_r2", "spearman", "within_problem"})
    #: Rank agreement of a stored reward pool and the p_tau pass rate gate a reward, not a benchmark machine.
    reward_gates: ClassVar[frozenset[str]] = frozenset({"spearman_raw", "spearman_calibrated", "ptau_swing_pp"})



@dataclass(frozen=True)
class CalibrationOptions(Options):
    """Options of :func:`audits.checks.calibration.run_calibration_audit` (constraints as data).

    ``pairs``: the (source, target) runs to calibrate, as the user names them (``--pair`` of ``audit all`` and
    ``speedaudit report``, the report's ``pairs`` parameter; ``speedaudit audit calibration`` names its one pair
    with ``--source-*``/``--target-*``); empty: the documented default pairs
    (:func:`audits.corpus.selection.choose_pairs`, rule ``"default pairs"`` of :data:`audits.corpus.runs.RULES`).
    """

    audit: ClassVar[str] = "calibration"

    pairs: tuple = option((), RunPairs(), flag="--pair",
                          metavar=("SOURCE_ENV", "SOURCE_CAMPAIGN", "TARGET_ENV", "TARGET_CAMPAIGN"),
                          help="calibrate SOURCE onto TARGET, each run named by its environment and campaign "
                               "(repeatable; the pairs named win, in the order given; none: the default pairs, "
                               "each stored -> fresh campaign pair in one environment and each environment against "
                               "the quietest in one campaign)")
    key: str = option("auto", StrOptions("auto", "environment", "campaign"), cli=False,
                      help="with --source/--target: which column holds the two names")
    families: tuple = option(FAMILIES, Sequence(StrOptions(*FAMILIES), unique=True), metavar="F",
                             help="families to fit")
    robust: str | None = option(None, StrOptions(*ROBUST_METHODS), NoneOk(), help="also fit a robust affine map")
    calibration_family: str | None = option(None, StrOptions(*FAMILIES), NoneOk(),
                                            help="map used for calibrated rank agreement (automatic: chosen by "
                                                 "held-out log error)")
    variance_ratio: float = option(1.0, Interval(float, 0, None, closed="neither"), metavar="RATIO",
                                   help="Deming: var(error of target) / var(error of source)")
    taus: tuple = option((10.0, 30.0), Sequence(Interval(float, 0, 100)), flag="--tau", metavar="T",
                         help="speed thresholds (percentile points) for the p_tau sensitivity")
    n_boot: int = n_boot_option(1000)
    n_boot_rank: int = n_boot_option(200, what="for the Spearman CIs")
    level: float = option(0.95, Interval(float, 0, 1, closed="neither"), cli=False, help="confidence level")
    seed: int = seed_option()

    @classmethod
    def keyword_forms(cls, values: dict) -> dict:
        """The keyword functions' ``robust=True`` is Huber's robust affine, ``robust=False`` none."""
        if values.get("robust") is True:
            values["robust"] = "huber"
        elif values.get("robust") is False:
            values["robust"] = None
        return values
