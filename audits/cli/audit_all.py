"""``speedaudit audit all``: every audit once, in one process, on one shared run context."""

from __future__ import annotations

import argparse

from audits.cli._common import add_corpus_input, add_result_options, exit_status, read_corpus, report_audit


def _audit(args: argparse.Namespace) -> int:
    from audits.cli._common import read_pair
    from audits.corpus.runs import Run
    from audits.errors import UserError
    from audits.engine.whole_audit import run_whole_audit

    if _partitioned(args):
        return _audit_partitioned(args)
    corpus = read_corpus(args)
    if _pair_named(args):
        pairs = [read_pair(_pair_args(args), corpus)]
    else:
        pairs = []
    simulation_run = None
    if args.simulation_environment is not None or args.simulation_campaign is not None:
        from audits.checks.simulation import choose_run

        simulation_run = choose_run(corpus, environment=args.simulation_environment,
                                    campaign=args.simulation_campaign).run
    reward_environments = None
    if args.reward_env or args.grid:
        from audits.checks.reward_environments import load_reward_environments

        reward_environments = load_reward_environments(args.reward_env or [], args.grid or [])
    try:
        whole = run_whole_audit(corpus, environment=args.environment, campaign=args.campaign, pairs=pairs,
                                simulation_run=simulation_run if simulation_run is None else Run.coerce(simulation_run),
                                reward_environments=reward_environments, floor_s=args.floor_s, n_boot=args.n_boot,
                                seed=args.seed)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(whole, argparse.Namespace(**{**vars(args), "json": None}))
    if args.json:
        _save(whole, corpus, args)
    return exit_status(whole, args)


def _save(whole, corpus, args: argparse.Namespace) -> None:
    """--json: every audit's JSON (as each audit's own --json writes it) and, in the same file, the results as
    versioned JSON that ``speedaudit report --results FILE`` renders from (:func:`audits.report.results.save_whole_audit`)."""
    from audits.report.results import save_whole_audit

    if args.reward_env or args.grid:
        files = [*(args.reward_env or []), *(args.grid or [])]
    else:
        from audits.engine.whole_audit import EXAMPLE_REWARD_ENVIRONMENTS

        files = [f"fixtures/environments/{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS]
    path = save_whole_audit(whole, corpus, args.json, corpora=[args.corpus], n_boot=args.n_boot, seed=args.seed,
                            campaign=args.campaign, environment=args.environment, floor_s=args.floor_s,
                            reward_environment_files=files, extra=whole.to_dict())
    print(f"\nwrote {path} (render it with: speedaudit report --results {path} --out DIR)")


def _pair_named(args: argparse.Namespace) -> bool:
    return any(getattr(args, k) is not None for k in ("source_environment", "source_campaign", "target_environment",
                                                      "target_campaign", "source", "target"))


def _pair_args(args: argparse.Namespace) -> argparse.Namespace:
    """The options read_pair reads (--pair-environment is its --environment here)."""
    return argparse.Namespace(**{**vars(args), "environment": args.pair_environment})


#: Datasets with more rows than this are audited on Dask by default (about 6 GB as a DataFrame in memory).
MEMORY_ROWS = 20_000_000


def _partitioned(args: argparse.Namespace) -> bool:
    from audits.corpus.dataset import is_dataset, open_dataset

    if not is_dataset(args.corpus):
        if args.scheduler or args.dask:
            from audits.errors import UserError

            raise UserError(f"{args.corpus}: --scheduler/--dask audit a partitioned dataset folder\n"
                            f"  -> write one with 'speedaudit convert {args.corpus} --out FOLDER --partition-by problem'")
        return False
    return bool(args.scheduler or args.dask or open_dataset(args.corpus).rows > MEMORY_ROWS)


def _audit_partitioned(args: argparse.Namespace) -> int:
    """The Dask path: :func:`audits.engine.partitioned.run_partitioned_whole_audit` (every audit, per-problem partial
    results on the workers); what cannot run is listed as skipped with the reason (never as passing)."""
    from audits.cli._common import read_pair
    from audits.errors import UserError
    from audits.protocol.findings import write_json
    from audits.engine.partitioned import dask_client, run_partitioned_whole_audit

    named = args.simulation_environment is not None or args.simulation_campaign is not None
    simulation_run = (args.simulation_environment, args.simulation_campaign) if named else None
    pairs = (lambda runs: [read_pair(_pair_args(args), runs)]) if _pair_named(args) else ()
    with dask_client(args.scheduler, n_workers=args.workers) as client:
        try:
            whole = run_partitioned_whole_audit(
                args.corpus, client=client, environment=args.environment, campaign=args.campaign, pairs=pairs,
                simulation_run=simulation_run,
                reward_environments=_reward_environments(args), floor_s=args.floor_s, n_boot=args.n_boot,
                seed=args.seed)
        except ValueError as exc:
            raise UserError(f"{args.corpus}: {exc}") from exc
    print(whole.summary())
    if args.json:
        print(f"\nwrote {write_json({**whole.to_dict(), 'engine': 'dask'}, args.json)}")
    return exit_status(whole, args)


def _reward_environments(args: argparse.Namespace):
    """The reward environments of --reward-env/--grid, else the whole audit's shipped examples."""
    if args.reward_env or args.grid:
        from audits.checks.reward_environments import load_reward_environments

        return load_reward_environments(args.reward_env or [], args.grid or [])
    from audits.engine.whole_audit import _example_reward_environments

    return _example_reward_environments()


def register(commands, audit_commands) -> None:
    parser = audit_commands.add_parser(
        "all", help="every audit once, in one process (the whole audit)",
        description="Run reliability, discriminability, the aggregator comparison, calibration (for the pair "
                    "named with --source-*/--target-*; skipped otherwise, the direction is never guessed) and "
                    "the reward simulation on one shared run context: each run's rows, reference pool, "
                    "collapsed cells and per-repeat scores are computed once for every audit. --json writes "
                    "every audit's result in one file (each part equals that audit's own --json).")
    add_corpus_input(parser)
    runs = parser.add_argument_group("runs (one run = one environment and campaign)")
    runs.add_argument("--environment", metavar="NAME",
                      help="reliability, discriminability, aggregation: only the runs of this environment")
    runs.add_argument("--campaign", metavar="NAME", help="... only the runs of this campaign")
    pair = parser.add_argument_group("calibration (map SOURCE onto TARGET; skipped when not named)")
    pair.add_argument("--source-environment", metavar="NAME")
    pair.add_argument("--source-campaign", metavar="NAME", help="e.g. the stored campaign")
    pair.add_argument("--target-environment", metavar="NAME")
    pair.add_argument("--target-campaign", metavar="NAME", help="e.g. the fresh campaign")
    pair.add_argument("--pair-environment", metavar="NAME", help="environment of both calibration runs")
    pair.add_argument("--source", metavar="NAME", help="environment or campaign to map FROM")
    pair.add_argument("--target", metavar="NAME", help="environment or campaign to map ONTO")
    pair.add_argument("--key", choices=("auto", "environment", "campaign"), default="auto")
    sim = parser.add_argument_group("reward simulation")
    sim.add_argument("--simulation-environment", metavar="NAME", help="environment whose timings stand in for rollouts")
    sim.add_argument("--simulation-campaign", metavar="NAME", help="its campaign")
    sim.add_argument("--reward-env", action="append", metavar="REWARD_ENV.yaml",
                     help="reward environment file (repeatable; default: the shipped examples)")
    sim.add_argument("--grid", action="append", metavar="GRID.yaml", help="grid of reward environments (repeatable)")
    parser.add_argument("--floor-s", type=float, default=None,
                        help="sandbox floor in seconds (default: from each run's floor rows)")
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    dask = parser.add_argument_group("partitioned datasets (speedaudit convert --partition-by problem)")
    dask.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                      help="audit the dataset on this Dask scheduler (per-problem partial results on the workers)")
    dask.add_argument("--dask", action="store_true",
                      help=f"audit the dataset on a local Dask cluster on 127.0.0.1 (the default for datasets of "
                           f"more than {MEMORY_ROWS:,} rows; smaller ones are loaded whole)")
    dask.add_argument("--workers", type=int, default=2, help="worker processes of the local cluster (default 2)")
    add_result_options(parser)
    parser.set_defaults(func=_audit)
