"""The reward simulation audit of a partitioned dataset on Dask (see :mod:`audits.engine.partitioned`).

The simulator (:mod:`stats.simulator`) turns each correct reference solution's repeats into (quality, reward)
samples within its problem; every figure of :func:`audits.checks.simulation.run_simulation_audit` is a function of
per-problem parts (:class:`stats.simulator.SimulationProblems`: reward sums and sample counts per problem, repeat
pair and quality bin, the (bin, reward value) counts, the GRPO group rates, test and execution counts) plus what the
whole run decides:

* the run (:func:`audits.checks.simulation.choose_run` on the run table of pass 1);
* its repeat values (they define the repeat pairs: a problem lacking one still pairs as in the whole run);
* its ``floor`` rows (the floor of aggregators other than ``mean_pct``): gathered in pass 1, handed to every worker;
* which optional columns hold a value anywhere in the run (a reward environment reading a lacking one is left out);
* for a ``multitask`` reward (a seeded coin per rollout): where each problem's rollouts start in the whole run's
  table, so that each problem draws its stretch of the same stream (:func:`stats.simulator._multitask_draws`),
  derived from the problems' names (their sorted order), never from the partitions' order.

Passes: (1) workers: run-summary partials and floor rows (:func:`audits.engine.partitioned._common._summary_partial`) and
each run's facts (:func:`_simulation_facts`); the client chooses the run and combines the facts; (2) workers: each
partition's :func:`stats.simulator.simulate_problems` per usable reward environment (the function
:func:`stats.simulator.simulate` calls); the client concatenates the parts in problem-name order and runs the
in-memory combining code (:func:`stats.simulator.combine_simulation`, then
:func:`audits.checks.simulation.combine_simulation_results`). The client holds per-problem arrays (pairs x bins numbers
and a few (bin, value) counts per problem and reward environment), never executions.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

import numpy as np

from audits.corpus.dataset import CorpusDataset, open_dataset
from audits.engine.partitioned._common import RUN_COLUMNS, _concat, _summary_partial, dask_client, partition_runs

__all__ = ["run_partitioned_simulation"]


def _simulation_facts(path: str, index: int, columns: list, include_incorrect: bool) -> dict:
    """Per run of one partition: the repeat values of the simulated references (those of
    :func:`stats.simulator.repeat_quality`), the scored reference units per problem (the rows of the reward
    table), which of ``columns`` hold a value, and whether it has correct reference rows."""
    return _simulation_facts_of(open_dataset(path).read_partition(index), columns, include_incorrect)


def _simulation_facts_of(part, columns: list, include_incorrect: bool) -> dict:
    from stats._groups import group_codes, label_mask

    if len(part) == 0:
        return {}
    run_code, n_runs = group_codes(part, list(RUN_COLUMNS))
    envs, camps = part["environment"].astype(str).to_numpy(), part["campaign"].astype(str).to_numpy()
    n = len(part)
    floor = label_mask(part["role"], "floor") if "role" in part.columns else np.zeros(n, dtype=bool)
    reference = label_mask(part["role"], "reference") if "role" in part.columns else ~floor
    correct = part["correct"].to_numpy(dtype=bool) if "correct" in part.columns else np.ones(n, dtype=bool)
    rated = reference & (correct | include_incorrect) & ~floor
    unit, _ = group_codes(part, ["problem", "solution", "repeat"])
    problem = part["problem"].astype(str).to_numpy()
    repeat = part["repeat"].to_numpy()
    optimization = label_mask(part["test_kind"], "optimization") if "test_kind" in part.columns else ~floor
    sized = (np.isfinite(part["input_bytes"].to_numpy(dtype=float)) if "input_bytes" in part.columns
             else np.zeros(n, dtype=bool))
    out = {}
    for k in range(n_runs):
        mine = run_code == k
        first = np.flatnonzero(mine)[0]
        scored = mine & reference & ~floor
        units, where = np.unique(unit[scored], return_index=True)
        names, counts = np.unique(problem[scored][where], return_counts=True)
        out[(envs[first], camps[first])] = {
            "repeats": np.unique(repeat[mine & rated]),
            "units": dict(zip(names.tolist(), counts.tolist())),
            "has_values": {c: bool(c in part.columns and part.loc[mine, c].notna().any()) for c in columns},
            "has_references": bool((mine & reference & correct).any()),
            "optimization": bool((mine & ~floor & optimization).any()),
            "sized": bool((mine & ~floor & optimization & sized).any()),
        }
    return out


def _filter_as_in_the_run(env, runs):
    """``env`` as it filters this partition's tests in the whole run.

    ``pre.max_input_chars`` keeps a test without a known input size; only when no optimization test of the
    run has one does it raise (the client checks that on the whole run, :func:`run_partitioned_simulation`).
    A partition whose optimization tests all lack a size would raise on its own: there the key keeps every
    test, exactly what it does to those tests in the whole run, so it is dropped for this partition.
    """
    import dataclasses

    from stats._groups import label_mask

    if env.pre.max_input_chars is None:
        return env
    rows = runs.loc[~label_mask(runs["role"], "floor")] if "role" in runs.columns else runs
    if "test_kind" in rows.columns:
        rows = rows.loc[label_mask(rows["test_kind"], "optimization")]
    if "input_bytes" in rows.columns and np.isfinite(rows["input_bytes"].to_numpy(dtype=float)).any():
        return env
    return dataclasses.replace(env, pre=dataclasses.replace(env.pre, max_input_chars=None))


def _simulation_partial(path: str, index: int, key: tuple, floor_rows, reward_environments: list, repeats,
                        options: dict, stream_start: dict | None) -> list | None:
    """:func:`stats.simulator.simulate_problems` of one partition's problems of run ``key`` (with the run's floor
    rows), one per reward environment; None when the partition holds none of the run's (non-floor) rows."""
    return _simulation_part(open_dataset(path).read_partition(index), key, floor_rows, reward_environments, repeats,
                            options, stream_start)


def _simulation_part(part, key: tuple, floor_rows, reward_environments: list, repeats, options: dict,
                     stream_start: dict | None) -> list | None:
    from audits.corpus.runs import Run
    from stats._groups import label_mask
    from stats.rewards import base_percentiles
    from stats.simulator import _pools, repeat_quality, simulate_problems

    mask = Run(*key).mask(part)
    if "role" in part.columns:
        mask &= ~label_mask(part["role"], "floor")
    if not mask.any():
        return None
    runs = _concat([part.loc[mask], floor_rows]) if len(floor_rows) else part.loc[mask]
    pools = _pools(runs)
    quality = repeat_quality(runs, pools=pools, include_incorrect=options["include_incorrect"])
    percentiles = base_percentiles(runs, pools=pools, roles=("reference",))
    return [simulate_problems(runs, _filter_as_in_the_run(env, runs), repeats=repeats, quality=quality, pools=pools,
                              percentiles=percentiles, n_bins=options["n_bins"], group_sizes=options["group_sizes"],
                              quality_distribution=options["quality_distribution"],
                              stream_start=stream_start if env.reward.scheme == "multitask" else None)
            for env in reward_environments]


def run_partitioned_simulation(
    dataset: str | os.PathLike | CorpusDataset,
    *,
    scheduler: str | None = None,
    client=None,
    reward_environments: Sequence | None = None,
    environment: str | None = None,
    campaign: str | None = None,
    environments: Sequence | None = None,
    group_sizes: Sequence[int] = (2, 4, 8, 16),
    seed: int = 0,
    thresholds=None,
    n_bins: int = 10,
    quality_distribution="uniform",
    n_boot: int = 200,
    include_incorrect: bool = False,
    n_workers: int = 2,
):
    """:func:`audits.checks.simulation.run_simulation_audit` of a partitioned dataset, on Dask.

    Equal (every JSON figure) to the in-memory audit of ``open_dataset(dataset).load()`` with the same options:
    the workers run the in-memory simulator's per-problem part on their partitions, the client its combining
    code (see the module docstring).

    Parameters
    ----------
    dataset : path or CorpusDataset
        A dataset folder (``speedaudit convert --partition-by problem``).
    scheduler : str, optional
        ``tcp://HOST:PORT`` of a running Dask scheduler; default a loopback LocalCluster of ``n_workers``.
    client : distributed.Client, optional
        An existing client (then ``scheduler`` and ``n_workers`` are not used).
    reward_environments, environment, campaign, group_sizes, seed, thresholds, n_bins, quality_distribution, n_boot,
    include_incorrect
        As :func:`audits.checks.simulation.run_simulation_audit`.

    Returns
    -------
    audits.checks.simulation.SimulationAudit

    Examples
    --------
    >>> from stats.rewards import RewardEnvironment
    >>> env = RewardEnvironment.from_dict({"name": "top30", "post": {"tau": 30}})
    >>> run_partitioned_simulation("corpus.dataset", reward_environments=[env]).ranking  # doctest: +SKIP
    """
    from audits.checks.simulation import _reward_environment_list

    reward_environments = _reward_environment_list(reward_environments, environments)
    columns = _fact_columns(reward_environments)
    ds = dataset if isinstance(dataset, CorpusDataset) else open_dataset(dataset)
    with (contextlib.nullcontext(client) if client is not None else
          dask_client(scheduler, n_workers=n_workers)) as cl:
        path = str(ds.path)
        first = [cl.submit(_summary_partial, path, i, pure=False) for i in range(ds.n_partitions)]
        facts_f = [cl.submit(_simulation_facts, path, i, columns, include_incorrect, pure=False)
                   for i in range(ds.n_partitions)]
        partials, facts = cl.gather(first), cl.gather(facts_f)
        plan = _simulation_plan(partition_runs(partials), _concat([p["floor_rows"] for p in partials]), facts,
                                reward_environments, environment=environment, campaign=campaign,
                                group_sizes=group_sizes, n_bins=n_bins, quality_distribution=quality_distribution,
                                include_incorrect=include_incorrect)
        futures = [cl.submit(_simulation_partial, path, i, *plan["task"], pure=False)
                   for i in range(ds.n_partitions)]
        parts = cl.gather(futures)
    return _combine_simulation(parts, plan, thresholds=thresholds, n_boot=n_boot, seed=seed,
                               include_incorrect=include_incorrect)


def _fact_columns(reward_environments) -> list:
    """The optional columns the reward environments read (pass 1 tells which hold a value)."""
    return sorted({c for e in reward_environments for c in e.needs_columns.values()})


def _simulation_plan(runs, floor_rows, facts: list, reward_environments, *, environment, campaign, group_sizes,
                     n_bins, quality_distribution, include_incorrect) -> dict:
    """What the whole run decides (see the module docstring), from pass 1: ``{"run", "usable", "left_out",
    "sizes", "headline", "task"}`` (``task``: the arguments of :func:`_simulation_part` after the partition).
    Raises the in-memory audit's errors (no run to choose, no reference rows, ...)."""
    from audits.checks.simulation import _no_references, choose_run, usable_reward_environments
    from stats.simulator import _group_sizes, check_unique_names

    sizes, headline = _group_sizes(group_sizes, None, n_bins)
    run = choose_run(runs, environment=environment, campaign=campaign)
    key = (run.environment, run.campaign)
    mine = [f[key] for f in facts if key in f]
    if not any(f["has_references"] for f in mine):
        raise ValueError(_no_references(run))
    if len(floor_rows):
        floor_rows = floor_rows.loc[run.run.mask(floor_rows)].reset_index(drop=True)
    left_out, usable = usable_reward_environments(
        reward_environments, lambda column: any(f["has_values"][column] for f in mine), run)
    check_unique_names(usable)
    if any(f["optimization"] for f in mine) and not any(f["sized"] for f in mine):
        _check_sizes(usable)
    repeats = np.unique(np.concatenate([f["repeats"] for f in mine]))
    stream_start = None
    if any(e.reward.scheme == "multitask" for e in usable):
        units = {name: n for f in mine for name, n in f["units"].items()}
        names = sorted(units)  # the whole run's reward table lists problems in name order
        stream_start = dict(zip(names, np.cumsum([0] + [units[n] for n in names])[:-1].tolist()))
    options = {"include_incorrect": include_incorrect, "n_bins": n_bins, "group_sizes": sizes,
               "quality_distribution": quality_distribution}
    return {"run": run, "usable": usable, "left_out": left_out, "sizes": sizes, "headline": headline,
            "task": (key, floor_rows, usable, repeats, options, stream_start)}


def _combine_simulation(parts: list, plan: dict, *, thresholds, n_boot, seed, include_incorrect):
    """The in-memory combining code on the partitions' :func:`_simulation_part` parts."""
    from audits.checks.simulation import SimulationThresholds, _degeneracy, combine_simulation_results
    from stats.simulator import combine_simulation

    th = SimulationThresholds.coerce(thresholds)
    parts = [p for p in parts if p is not None]
    results = [combine_simulation([p[j] for p in parts], env, group_sizes=plan["sizes"],
                                  headline_group_size=plan["headline"], thresholds=_degeneracy(th), n_boot=n_boot,
                                  seed=seed)
               for j, env in enumerate(plan["usable"])]
    return combine_simulation_results(plan["run"], results, plan["left_out"], thresholds=th,
                                      include_incorrect=include_incorrect)


def _check_sizes(reward_environments) -> None:
    """The in-memory simulation's error for ``pre.max_input_chars`` on a run whose optimization tests all lack
    an input size (``stats.rewards._filter_tests`` raises it; called on one such test, so that the message is
    the same)."""
    import pandas as pd

    from stats.rewards import _filter_tests

    tests = pd.DataFrame({"test_kind": ["optimization"], "reference_median_s": [np.nan], "input_bytes": [np.nan]})
    for env in reward_environments:
        _filter_tests(tests, env.pre)
