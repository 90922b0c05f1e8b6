"""``speedaudit audit aggregation``: compare the aggregators on a corpus and recommend one."""

from __future__ import annotations

import argparse

from audits.checks.aggregation import AggregationThresholds
from audits.cli._common import (
    add_corpus_input,
    add_result_options,
    add_run_selection,
    add_threshold_option,
    exit_status,
    read_corpus,
    read_runs_filter,
    read_thresholds,
    report_audit,
)
from audits.errors import UserError


def _run(args: argparse.Namespace) -> int:
    from audits.checks.aggregation import run_aggregation_audit

    thresholds = read_thresholds(args, AggregationThresholds)
    corpus = read_corpus(args)
    names = [n for n in (args.aggregators or "").split(",") if n] or None
    try:
        audit = run_aggregation_audit(
            corpus, **read_runs_filter(args), names=names,
            floor_s=None if args.floor_ms is None else args.floor_ms / 1000.0,
            n_boot=args.n_boot, seed=args.seed, thresholds=thresholds)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    report_audit(audit, args)
    if args.figure:
        from audits.report.plots.aggregation import stability_range_figure

        fig = stability_range_figure(audit.table)
        fig.savefig(args.figure, dpi=120)
        print(f"wrote {args.figure}")
    return exit_status(audit, args)


def register(commands, audit_commands) -> None:
    p = audit_commands.add_parser(
        "aggregation", help="compare the 17+ aggregators on stability and dynamic range; recommend one",
        description="Score every solution once per repeat with every aggregator (stats/aggregation.py), turn the "
                    "scores into percentiles among the references, and compare the aggregators on stability "
                    "(mean |score(i) - score(j)| between repeats) and dynamic range (slowest minus fastest "
                    "reference quartile, quartiles from an independent repeat), with bootstrap CIs over problems "
                    "and the Pareto front. Needs >= 2 repeats.")
    add_corpus_input(p)
    add_run_selection(p)
    p.add_argument("--aggregators", metavar="A,B,...", help="compare only these (default: all registered)")
    p.add_argument("--floor-ms", type=float, help="sandbox floor in ms for floor_pct (default: the floor rows)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    add_threshold_option(p, AggregationThresholds)
    add_result_options(p)
    p.add_argument("--figure", metavar="OUT.png", help="write the stability vs dynamic range figure")
    p.set_defaults(func=_run)
