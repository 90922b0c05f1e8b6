"""The whole audit: every audit of a corpus once, in one process, on one shared context.

:func:`run_whole_audit` builds one :class:`audits.protocol.context.AuditContext` and runs
reliability, discriminability, the aggregator comparison, calibration (for
each named (source, target) pair) and the reward simulation (on one run) on
it, so the run table, each run's rows, reference pool, collapsed cells and
per-repeat scores are computed once for all of them. ``speedaudit audit all``
prints its summary and writes its JSON; ``speedaudit report`` computes it once
and hands it to every page (:mod:`audits.report.render`).

An audit that the corpus or the options cannot support (no calibration pair
named, no run to simulate) is *skipped* with the reason, recorded in
:attr:`WholeAudit.skipped` and in the JSON; it is never reported as passing.

Examples
--------
>>> from audits.corpus.synthetic import synthesize
>>> corpus = synthesize(n_problems=6, n_repeats=3, seed=1, campaigns=(("c0", 1, 0), ("c1", 0.6, 0.05))).corpus
>>> whole = run_whole_audit(corpus, pairs=[(("quiet", "c0"), ("quiet", "c1"))], simulation_run=("quiet", "c0"),
...                         n_boot=50)                                                   # doctest: +SKIP
>>> sorted(whole.audits())                                                               # doctest: +SKIP
['aggregation', 'calibration', 'discriminability', 'reliability', 'simulation']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from audits.protocol.context import AuditContext, audit_context
from audits.protocol.findings import Finding, findings_table, to_jsonable, worst_level

__all__ = ["WholeAudit", "run_whole_audit", "AUDITS"]

AUDITS = ("reliability", "discriminability", "calibration", "aggregation", "simulation")


@dataclass(frozen=True)
class WholeAudit:
    """Every audit's result (``None`` where skipped) and why any was skipped."""

    reliability: object
    discriminability: object
    calibration: tuple = ()  # one CalibrationAudit per (source, target) pair, in the order given
    aggregation: object = None
    simulation: object = None
    skipped: Mapping[str, str] = field(default_factory=dict)

    def audits(self) -> dict:
        """name -> result of every audit that ran (calibration: the tuple of pairs)."""
        out = {"reliability": self.reliability, "discriminability": self.discriminability,
               "calibration": self.calibration, "aggregation": self.aggregation, "simulation": self.simulation}
        return {k: v for k, v in out.items() if v is not None and (k != "calibration" or v)}

    @property
    def findings(self) -> tuple[Finding, ...]:
        out: list[Finding] = []
        for name, result in self.audits().items():
            for one in (result if name == "calibration" else (result,)):
                out.extend(one.findings)
        return tuple(out)

    def to_dict(self) -> dict:
        out = {"audit": "all"}
        for name, result in self.audits().items():
            out[name] = [c.to_dict() for c in result] if name == "calibration" else result.to_dict()
        out["skipped"] = dict(self.skipped)
        out["worst"] = worst_level(self.findings) if self.findings else None
        return to_jsonable(out)

    def summary(self) -> str:
        parts = []
        for name, result in self.audits().items():
            for one in (result if name == "calibration" else (result,)):
                parts.append(one.summary())
        for name, reason in self.skipped.items():
            parts.append(f"{name}: skipped ({reason})")
        parts.append("All findings\n" + findings_table(self.findings))
        return "\n\n".join(parts)


def run_whole_audit(
    corpus,
    *,
    environment: str | None = None,
    campaign: str | None = None,
    pairs: Sequence[tuple] = (),
    simulation_run=None,
    reward_environments: Sequence | None = None,
    floor_s: float | None = None,
    n_boot: int = 1000,
    n_boot_rank: int = 200,
    simulation_n_boot: int = 200,
    seed: int = 0,
    thresholds: Mapping[str, object] | None = None,
    calibration_options: Mapping[str, object] | None = None,
    simulation_options: Mapping[str, object] | None = None,
    timings: dict | None = None,
) -> WholeAudit:
    """Run every audit once on one shared :class:`~audits.protocol.context.AuditContext`.

    Parameters
    ----------
    corpus : DataFrame or AuditContext
    environment, campaign : str, optional
        Restrict reliability, discriminability and the aggregator comparison to these runs (default: every run).
    pairs : sequence of (source, target)
        Calibration pairs, each run given as a :class:`~audits.corpus.runs.Run` or (environment, campaign);
        none: calibration is skipped (its direction is the user's to give; it is never guessed).
    simulation_run : Run or (environment, campaign), optional
        The run whose timings stand in for rollouts; default: the simulation audit's own choice
        (the only run, or the earliest by timestamp); skipped with the reason when it cannot choose.
    reward_environments : sequence of RewardEnvironment, optional
        Default: the shipped example environments (``fixtures/environments``, as the overview report).
    thresholds : mapping, optional
        ``{"reliability": ..., "discriminability": ..., "calibration": ..., "aggregation": ...,
        "simulation": ...}``, each what that audit's ``thresholds=`` takes.
    timings : dict, optional
        Filled with each audit's wall seconds (``time.perf_counter``), for the benchmark.
    """
    import time
    from audits.checks.aggregation import run_aggregation_audit
    from audits.checks.calibration import run_calibration_audit
    from audits.checks.discriminability import run_discriminability_audit
    from audits.errors import UserError
    from audits.checks.reliability import run_reliability_audit
    from audits.checks.simulation import run_simulation_audit

    ctx: AuditContext = audit_context(corpus)
    th = dict(thresholds or {})
    skipped: dict[str, str] = {}
    select = {"environment": environment, "campaign": campaign}
    clock = timings if timings is not None else {}
    t0 = time.perf_counter()
    reliability = run_reliability_audit(ctx, **select, n_boot=n_boot, seed=seed, thresholds=th.get("reliability"))
    t1 = clock["reliability"] = time.perf_counter() - t0
    discriminability = run_discriminability_audit(ctx, **select, floor_s=floor_s, n_boot=n_boot, seed=seed,
                                                  thresholds=th.get("discriminability"))
    clock["discriminability"] = time.perf_counter() - t0 - t1
    t0 = time.perf_counter()
    calibration = tuple(
        run_calibration_audit(ctx, source=source, target=target, n_boot=n_boot, n_boot_rank=n_boot_rank, seed=seed,
                              thresholds=th.get("calibration"), **dict(calibration_options or {}))
        for source, target in pairs)
    if not pairs:
        skipped["calibration"] = ("no (source, target) pair named: give the direction with --source-campaign/"
                                  "--target-campaign (or --source-environment/--target-environment)")
    clock["calibration"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    aggregation = run_aggregation_audit(ctx, **select, floor_s=floor_s, n_boot=n_boot, seed=seed,
                                        thresholds=th.get("aggregation"))
    clock["aggregation"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if reward_environments is None:
        reward_environments = _example_reward_environments()
    simulation = None
    where = {} if simulation_run is None else _run_names(simulation_run)
    try:
        simulation = run_simulation_audit(ctx, reward_environments=reward_environments, **where, seed=seed,
                                          n_boot=simulation_n_boot, thresholds=th.get("simulation"),
                                          **dict(simulation_options or {}))
    except UserError as exc:
        if simulation_run is not None:
            raise
        skipped["simulation"] = f"{exc}".splitlines()[0]
    clock["simulation"] = time.perf_counter() - t0
    return WholeAudit(reliability=reliability, discriminability=discriminability, calibration=calibration,
                      aggregation=aggregation, simulation=simulation, skipped=skipped)


def _run_names(run) -> dict:
    from audits.corpus.runs import Run

    r = Run.coerce(run)
    return {"environment": r.environment, "campaign": r.campaign}


#: The example reward environments the overview report screens by default (fixtures/environments).
EXAMPLE_REWARD_ENVIRONMENTS = ("top30", "uniform_timeout", "ranked_worst_p80", "duration_filter_2s",
                               "duration_filter_0.5s", "duration_filter_0.1s", "length_filter_1k")


def _example_reward_environments():
    """The shipped example environments, from ``fixtures/environments`` of a checkout or the installed wheel's
    package data (:func:`audits.checks.reward_environments.shipped_environments_dir`), never a path beside
    the source tree (which a ``pip install .`` does not have)."""
    from audits.checks.reward_environments import load_reward_environments, shipped_environments_dir

    folder = shipped_environments_dir()
    return load_reward_environments([folder / f"{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS])
