"""``speedaudit audit aggregation``: compare the aggregators on a corpus and recommend one."""

from __future__ import annotations

import argparse

from audits.errors import UserError
from audits.cli._common import add_corpus_input, add_result_options, exit_status, read_corpus, report_audit


def _run(args: argparse.Namespace) -> int:
    from audits.aggregation import run_aggregation_audit

    corpus = read_corpus(args)
    names = [n for n in (args.aggregators or "").split(",") if n] or None
    thresholds = {}
    for item in args.threshold or []:
        key, _, value = item.partition("=")
        try:
            thresholds[key.strip()] = type(getattr(_defaults(), key.strip(), 0.0))(value)
        except ValueError as exc:
            raise UserError(f"--threshold {item!r}: expected NAME=NUMBER") from exc
    try:
        audit = run_aggregation_audit(
            corpus, environment=args.environment, campaign=args.campaign, names=names,
            floor_s=None if args.floor_ms is None else args.floor_ms / 1000.0,
            n_boot=args.n_boot, seed=args.seed, thresholds=thresholds or None)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(audit, args)
    if args.figure:
        from audits.report.plots.aggregation import stability_range_figure

        fig = stability_range_figure(audit.table)
        fig.savefig(args.figure, dpi=120)
        print(f"wrote {args.figure}")
    return exit_status(audit, args)


def _defaults():
    from audits.aggregation import AggregationThresholds

    return AggregationThresholds()


def register(commands, audit_commands) -> None:
    p = audit_commands.add_parser(
        "aggregation", help="compare the 17+ aggregators on stability and dynamic range; recommend one",
        description="Score every solution once per repeat with every aggregator (stats/aggregation.py), turn the "
                    "scores into percentiles among the references, and compare the aggregators on stability "
                    "(mean |score(i) - score(j)| between repeats) and dynamic range (slowest minus fastest "
                    "reference quartile, quartiles from an independent repeat), with bootstrap CIs over problems "
                    "and the Pareto front. Needs >= 2 repeats.")
    add_corpus_input(p)
    p.add_argument("--environment", help="only this environment (default: every one)")
    p.add_argument("--campaign", help="only this campaign (default: every one)")
    p.add_argument("--aggregators", metavar="A,B,...", help="compare only these (default: all registered)")
    p.add_argument("--floor-ms", type=float, help="sandbox floor in ms for floor_pct (default: the floor rows)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", action="append", metavar="NAME=VALUE",
                   help="override a threshold, e.g. stability_warn=4 (repeatable; see docs/aggregation.md)")
    add_result_options(p)
    p.add_argument("--figure", metavar="OUT.png", help="write the stability vs dynamic range figure")
    p.set_defaults(func=_run)
