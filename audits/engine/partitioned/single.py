"""One audit of a partitioned dataset on Dask, with that audit's own keywords: each is
:func:`audits.engine.partitioned.whole.run_partitioned_audits` of that audit alone (its partition steps live in
its registered Audit, :mod:`audits.checks.registered`), one task per partition."""

from __future__ import annotations

import os

from audits.corpus.dataset import CorpusDataset

__all__ = ["run_partitioned_discriminability"]


def _one(name: str, dataset, options: dict, *, thresholds, client, scheduler, n_workers, **engine):
    from audits.engine.partitioned.whole import run_partitioned_audits

    whole = run_partitioned_audits(dataset, [name], options={name: options}, thresholds={name: thresholds},
                                   client=client, scheduler=scheduler, n_workers=n_workers,
                                   one_partition_per_task=True, **engine)
    if name in whole.skipped:
        from audits.protocol.audit import Skip

        raise Skip(whole.skipped[name])
    return whole.results[name]


def run_partitioned_discriminability(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    floor_s: float | None = None,
    environment: str | None = None,
    campaign: str | None = None,
    thresholds=None,
    method: str = "iqr",
    n_boot: int = 1000,
    seed: int = 0,
    n_workers: int = 2,
):
    """:func:`audits.checks.discriminability.run_discriminability_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()``.
    ``client``: an existing :class:`distributed.Client`; else ``scheduler`` or a loopback LocalCluster.
    """
    return _one("discriminability", dataset, {"floor_s": floor_s, "environment": environment, "campaign": campaign,
                                              "method": method, "n_boot": n_boot, "seed": seed},
                thresholds=thresholds, client=client, scheduler=scheduler, n_workers=n_workers)
