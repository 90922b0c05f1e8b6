"""Names and limits the estimators declare, importable without numpy, pandas or scipy.

The command line builds every ``--help`` from these (``speedaudit --help`` must not import the numeric
stack); the estimator modules re-export them: :data:`stats.calibration.FAMILIES`,
:data:`stats.calibration.ROBUST_METHODS`, :class:`stats.simulator.DegeneracyThresholds`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

__all__ = ["FAMILIES", "ROBUST_METHODS", "DegeneracyThresholds"]

OLS_FAMILIES = ("multiplicative", "affine", "power", "poly2", "poly3")
FAMILIES = OLS_FAMILIES + ("deming",)
ROBUST_METHODS = ("huber", "theilsen")


@dataclass(frozen=True)
class DegeneracyThresholds:
    """When an environment is degenerate (each pair: warn, fail). Override with ``replace()`` or a dict.

    * sparse:      auc <= auc_sparse_warn / auc_sparse_fail   (0.15 / 0.05)
    * saturated:   auc >= auc_saturated_warn / auc_saturated_fail (0.85 / 0.95)
    * non-monotone: monotonicity <= monotonicity_warn / monotonicity_fail (0.85 / 0.5)
    * off-diagonal: diagonal_deviation >= deviation_warn / deviation_fail (0.35 / 0.45)
    * dead groups: zero_advantage_rate at the headline G >= zero_advantage_warn / _fail (0.5 / 0.9)
    * noisy:       curve_noise >= noise_warn / noise_fail (0.10 / 0.25)
    """

    auc_sparse_warn: float = 0.15
    auc_sparse_fail: float = 0.05
    auc_saturated_warn: float = 0.85
    auc_saturated_fail: float = 0.95
    monotonicity_warn: float = 0.85
    monotonicity_fail: float = 0.5
    deviation_warn: float = 0.35
    deviation_fail: float = 0.45
    zero_advantage_warn: float = 0.5
    zero_advantage_fail: float = 0.9
    noise_warn: float = 0.10
    noise_fail: float = 0.25

    @classmethod
    def from_any(cls, value) -> "DegeneracyThresholds":
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - names)
        if unknown:
            raise ValueError(f"unknown threshold(s) {unknown}; allowed: {sorted(names)}")
        return replace(cls(), **{k: float(v) for k, v in value.items()})

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}
