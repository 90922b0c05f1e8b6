"""Audits of partitioned datasets on Dask: per-problem partial results on the workers, combined on the client.

A corpus larger than one machine's memory is stored as a dataset of whole
problems (:mod:`audits.corpus.dataset`). Every figure of the discriminability
audit is a function of per-problem (and per-test) tables plus a bootstrap over
problems, so:

1. **workers** each read one partition (whole problems), and return, per run,
   the partition's floor rows, its run-summary partials (rows, cells, problems,
   the histogram of repeats per cell, the earliest timestamp, language counts)
   and its per-problem tables (per-test discrimination, per-problem robust CV
   and near-floor shares, per-repeat reference scores) computed by the same
   functions the in-memory audit calls;
2. the **client** combines them: the floor (median of every floor row: the
   floor rows are a few per run, so they are gathered, not summarised), the run
   summaries (sums, the mode of the summed histogram, the minimum timestamp),
   and the per-problem tables concatenated in problem order; then it runs the
   in-memory audit's combining step (bootstrap over problems, findings) on them.

No process holds the corpus: a worker holds one partition, the client the
per-problem tables (a few rows per problem and test; the per-repeat scores are
one row per (problem, solution, repeat), 1/20 of the executions of the
benchmark corpus). Because the combining step is the in-memory audit's own
code applied to the same tables in the same order, the JSON of the partitioned
audit equals the in-memory one's (tests/audits/test_partitioned.py, on a real
LocalCluster).

The first pass (floors and run summaries) reads only the small columns; the
second reads every column of a partition once.

The other audits on this path follow the same plan, each in its own module with the
split it needs: :mod:`audits.engine.partitioned.aggregation` (per-problem stability and dynamic
range of every aggregator, :func:`stats.aggregation.aggregator_problem_values`) and
:mod:`audits.engine.partitioned.simulation` (per-problem reward sums, counts and group rates of
every reward environment, :func:`stats.simulator.simulate_problems`); in each, the client
runs the in-memory audit's own combining code.

The whole audit (:mod:`audits.engine.partitioned.whole`, ``speedaudit audit all --dask``) shares the passes: one
task per partition computes every audit's pass 1, one every audit's pass 2 (two reads of each partition).

Clusters: ``scheduler="tcp://HOST:PORT"`` connects to a running scheduler;
without one, a :class:`distributed.LocalCluster` on the loopback interface
(``127.0.0.1``; its dashboard on a free loopback port) with ``n_workers`` single-threaded worker
processes is started and closed afterwards.
"""

from audits.engine.partitioned._common import _summary_partial, dask_client, partition_runs  # noqa: F401 (pass 1, tests)
from audits.engine.partitioned.aggregation import run_partitioned_aggregation
from audits.engine.partitioned.calibration import run_partitioned_calibration
from audits.engine.partitioned.reliability import run_partitioned_reliability
from audits.engine.partitioned.simulation import run_partitioned_simulation
from audits.engine.partitioned.single import run_partitioned_discriminability
from audits.engine.partitioned.whole import run_partitioned_whole_audit

__all__ = ["dask_client", "partition_runs", "run_partitioned_aggregation", "run_partitioned_calibration",
           "run_partitioned_discriminability", "run_partitioned_reliability", "run_partitioned_simulation",
           "run_partitioned_whole_audit"]
