"""One audit of a partitioned dataset on Dask, with that audit's own keywords: each is
:func:`audits.engine.partitioned.whole.run_partitioned_audits` of that audit alone (its partition steps live in
its registered Audit, :mod:`audits.checks.registered`), one task per partition."""

from __future__ import annotations

import os

from audits.checks.declared.aggregation import AggregationOptions
from audits.checks.declared.calibration import CalibrationOptions
from audits.checks.declared.discriminability import DiscriminabilityOptions
from audits.checks.declared.reliability import ReliabilityOptions
from audits.checks.declared.simulation import SimulationOptions
from audits.checks.simulation import reward_environment_list
from audits.corpus.dataset import CorpusDataset
from audits.corpus.runs import Run
from audits.engine.partitioned.whole import run_partitioned_audits
from audits.errors import UserError
from audits.protocol.audit import Skip
from audits.protocol.params import DEFAULT, defaults_from

__all__ = ["run_partitioned_aggregation", "run_partitioned_calibration", "run_partitioned_discriminability",
           "run_partitioned_reliability", "run_partitioned_simulation"]


def _one(name: str, dataset, options: dict, *, thresholds, client, scheduler, n_workers, **engine):
    try:
        whole = run_partitioned_audits(dataset, [name], options={name: options}, thresholds={name: thresholds},
                                       client=client, scheduler=scheduler, n_workers=n_workers,
                                       one_partition_per_task=True, raise_skips=True, **engine)
    except Skip as exc:  # alone, the audit raises what ``audit all`` lists as a skip (as in memory)
        raise (exc.__cause__ or exc) from None
    return whole.results[name]


@defaults_from(DiscriminabilityOptions)
def run_partitioned_discriminability(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    floor_s: float | None = DEFAULT,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    thresholds=None,
    method: str = DEFAULT,
    n_boot: int = DEFAULT,
    seed: int = DEFAULT,
    n_workers: int = 2,
):
    """:func:`audits.checks.discriminability.run_discriminability_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``. An option left out
    takes its declared default, the field of :class:`~audits.checks.declared.discriminability.DiscriminabilityOptions`
    (as in memory).
    ``client``: an existing :class:`distributed.Client`; else ``scheduler`` or a loopback LocalCluster.
    """
    return _one("discriminability", dataset, {"floor_s": floor_s, "environment": environment, "campaign": campaign,
                                              "method": method, "n_boot": n_boot, "seed": seed},
                thresholds=thresholds, client=client, scheduler=scheduler, n_workers=n_workers)


@defaults_from(ReliabilityOptions)
def run_partitioned_reliability(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    thresholds=None,
    n_boot: int = DEFAULT,
    seed: int = DEFAULT,
    target_reliability: float = DEFAULT,
    target_precision: float = DEFAULT,
    max_pairs: int = DEFAULT,
    n_workers: int = 2,
    selection_limit: int = 1 << 20,
):
    """:func:`audits.checks.reliability.run_reliability_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``. An option left out
    takes its declared default, the field of :class:`~audits.checks.declared.reliability.ReliabilityOptions`
    (as in memory).
    ``client``: an existing :class:`distributed.Client`; else ``scheduler`` or a loopback LocalCluster.
    ``selection_limit``: the contention medians gather the keys of a bin of at most this many
    (:mod:`audits.checks.median_selection`).
    """
    return _one("reliability", dataset, {"environment": environment, "campaign": campaign, "n_boot": n_boot,
                                         "seed": seed, "target_reliability": target_reliability,
                                         "target_precision": target_precision, "max_pairs": max_pairs},
                thresholds=thresholds, client=client, scheduler=scheduler, n_workers=n_workers,
                selection_limit=selection_limit)


@defaults_from(AggregationOptions)
def run_partitioned_aggregation(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    names=DEFAULT,
    floor_s: float | None = DEFAULT,
    n_boot: int = DEFAULT,
    seed: int | None = DEFAULT,
    thresholds=None,
    n_workers: int = 2,
):
    """:func:`audits.checks.aggregation.run_aggregation_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()`` with the same options.
    An option left out takes its declared default, the field of
    :class:`~audits.checks.declared.aggregation.AggregationOptions` (as in memory).
    Custom aggregators (:func:`stats.aggregation.register_aggregator`) must be registered in the worker processes
    too (e.g. by a module the workers import); the built-ins always are.

    Examples
    --------
    >>> from audits.corpus.dataset import save_dataset
    >>> from audits.corpus.synthetic import synthesize
    >>> ds = save_dataset(synthesize(n_problems=4, n_repeats=3, seed=1).corpus, "/tmp/agg.dataset")  # doctest: +SKIP
    >>> run_partitioned_aggregation(ds, n_boot=50).recommended                                     # doctest: +SKIP
    'mean_pct'
    """
    return _one("aggregation", dataset, {"environment": environment, "campaign": campaign,
                                         "names": None if names is None else tuple(names), "floor_s": floor_s,
                                         "n_boot": n_boot, "seed": seed},
                thresholds=thresholds, client=client, scheduler=scheduler, n_workers=n_workers)


@defaults_from(SimulationOptions)
def run_partitioned_simulation(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    reward_environments=DEFAULT,
    environment: str | None = DEFAULT,
    campaign: str | None = DEFAULT,
    environments=None,
    group_sizes=DEFAULT,
    seed: int = DEFAULT,
    thresholds=None,
    n_bins: int = DEFAULT,
    quality_distribution=DEFAULT,
    n_boot: int = DEFAULT,
    include_incorrect: bool = DEFAULT,
    n_workers: int = 2,
):
    """:func:`audits.checks.simulation.run_simulation_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()`` with the same options
    (``environments=`` is the old name of ``reward_environments``; the run is the simulation's own choice unless
    ``environment`` / ``campaign`` name it, and an error when it cannot choose). An option left out takes its
    declared default, the field of :class:`~audits.checks.declared.simulation.SimulationOptions` (as in memory).

    Examples
    --------
    >>> from stats.rewards import RewardEnvironment
    >>> env = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
    >>> run_partitioned_simulation("corpus.dataset", reward_environments=[env]).ranking  # doctest: +SKIP
    """
    return _one("simulation", dataset, {
        "reward_environments": tuple(reward_environment_list(reward_environments, environments)),
        "environment": environment, "campaign": campaign, "group_sizes": tuple(group_sizes), "seed": seed,
        "n_bins": n_bins, "quality_distribution": quality_distribution, "n_boot": n_boot,
        "include_incorrect": include_incorrect}, thresholds=thresholds, client=client, scheduler=scheduler,
        n_workers=n_workers)


@defaults_from(CalibrationOptions)
def run_partitioned_calibration(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    source,
    target,
    scheduler: str | None = None,
    client=None,
    families=DEFAULT,
    robust: bool | str | None = DEFAULT,
    calibration_family: str | None = DEFAULT,
    variance_ratio: float = DEFAULT,
    taus=DEFAULT,
    n_boot: int = DEFAULT,
    n_boot_rank: int = DEFAULT,
    level: float = DEFAULT,
    seed: int | None = DEFAULT,
    thresholds=None,
    n_workers: int = 2,
):
    """:func:`audits.checks.calibration.run_calibration_audit` of two runs of a partitioned dataset, on Dask.

    ``source``, ``target``: two runs (:class:`audits.corpus.runs.Run` or ``(environment, campaign)``).
    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``. An option left out
    takes its declared default, the field of :class:`~audits.checks.declared.calibration.CalibrationOptions`
    (as in memory); ``families=None`` is that default too.
    """
    if not all(isinstance(side, (Run, tuple, list)) for side in (source, target)):
        raise UserError("a calibration on Dask names its two runs (environment and campaign each)")
    (result,) = _one("calibration", dataset, {  # the options as defaults_from validated them (robust=True: "huber")
        "pairs": ((Run.coerce(source), Run.coerce(target)),), "families": families,
        "robust": robust, "calibration_family": calibration_family,
        "variance_ratio": variance_ratio, "taus": taus, "n_boot": n_boot, "n_boot_rank": n_boot_rank, "level": level, "seed": seed},
        thresholds=thresholds, client=client, scheduler=scheduler, n_workers=n_workers)
    return result
