"""Audits of partitioned datasets on Dask: per-problem parts on the workers, combined on the client.

A corpus larger than one machine's memory is stored as a dataset of whole problems (:mod:`audits.corpus.dataset`).
Every figure of the audits the Dask engine runs is a function of per-problem tables plus what the whole corpus
decides (the runs, their floors, repeat values, ...), so each registered audit declares its partition steps
(:mod:`audits.protocol.partition`): a plan over the run table, a part computed from one partition's rows and a
combine of every partition's parts. The in-memory engine runs the same steps with the corpus as its one
partition; this package is the generic engine that maps them over partitions:

* :mod:`audits.engine.partitioned.whole`: :func:`~audits.engine.partitioned.whole.run_partitioned_audits` (any list of
  registered audits, two shared reads of each partition) and :func:`run_partitioned_whole_audit` (``speedaudit audit
  all --dask``, the whole audit's keywords);
* :mod:`audits.engine.partitioned._common`: the client (:func:`dask_client`), pass 1's run summaries
  (:func:`partition_runs`: equal to the loaded dataset's run table) and the client's memory setting;
* :mod:`audits.engine.partitioned.single`: one audit with that audit's own keywords (``run_partitioned_reliability``,
  ...), one task per partition.

No process holds the corpus: a worker holds one group of partitions, the client the per-problem tables of one
audit piece at a time, joined on their categorical codes (:func:`audits.protocol.partition.concat_tables`) with
each partition's table dropped as it is joined. Because the combining step is the in-memory audit's own code
applied to the same tables in the same order, the JSON of the partitioned audit equals the in-memory one's
(tests/audits/test_partitioned*.py, on a real LocalCluster).

Clusters: ``scheduler="tcp://HOST:PORT"`` connects to a running scheduler;
without one, a :class:`distributed.LocalCluster` on the loopback interface
(``127.0.0.1``; its dashboard on a free loopback port) with ``n_workers`` single-threaded worker
processes is started and closed afterwards.
"""

from audits.engine.partitioned._common import dask_client, partition_runs, summary_partial  # noqa: F401 (pass 1, tests)
from audits.engine.partitioned.single import (run_partitioned_aggregation, run_partitioned_calibration,
                                              run_partitioned_discriminability, run_partitioned_reliability,
                                              run_partitioned_simulation)
from audits.engine.partitioned.whole import audit_dataset_on_dask, run_partitioned_whole_audit

__all__ = ["partition_runs", "run_partitioned_aggregation", "run_partitioned_calibration",
           "run_partitioned_discriminability", "run_partitioned_reliability", "run_partitioned_simulation",
           "run_partitioned_whole_audit", "audit_dataset_on_dask"]
