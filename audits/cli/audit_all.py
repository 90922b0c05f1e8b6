"""``speedaudit audit all``: every audit once, in one process, on one shared run context."""

from __future__ import annotations

import argparse

from audits.cli._common import add_corpus_input, add_result_options, exit_status, read_corpus, report_audit


def _audit(args: argparse.Namespace) -> int:
    from audits.cli._common import read_pair
    from audits.corpus.runs import Run
    from audits.errors import UserError
    from audits.whole_audit import run_whole_audit

    corpus = read_corpus(args)
    named = any(getattr(args, k) is not None for k in ("source_environment", "source_campaign",
                                                        "target_environment", "target_campaign", "source", "target"))
    if named:
        pair_args = argparse.Namespace(**{**vars(args), "environment": args.pair_environment})
        pairs = [read_pair(pair_args, corpus)]
    else:
        pairs = []
    simulation_run = None
    if args.simulation_environment is not None or args.simulation_campaign is not None:
        from audits.simulation import choose_run

        simulation_run = choose_run(corpus, environment=args.simulation_environment,
                                    campaign=args.simulation_campaign).run
    reward_environments = None
    if args.reward_env or args.grid:
        from audits.reward_environments import load_reward_environments

        reward_environments = load_reward_environments(args.reward_env or [], args.grid or [])
    try:
        whole = run_whole_audit(corpus, environment=args.environment, campaign=args.campaign, pairs=pairs,
                                simulation_run=simulation_run if simulation_run is None else Run.coerce(simulation_run),
                                reward_environments=reward_environments, floor_s=args.floor_s, n_boot=args.n_boot,
                                seed=args.seed)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(whole, args)
    return exit_status(whole, args)


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
    add_result_options(parser)
    parser.set_defaults(func=_audit)
