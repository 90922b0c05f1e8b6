"""``speedaudit audit aggregation``: compare the aggregators on a corpus and recommend one (flags from its Options)."""

from __future__ import annotations

import argparse

from audits.cli._common import (add_audit_options, add_corpus_input, add_result_options, exit_status, report_audit,
                                run_audit_command)


def _run(args: argparse.Namespace) -> int:
    audit = run_audit_command(args, "aggregation")
    report_audit(audit, args)
    if args.figure:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
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
    add_audit_options(p, "aggregation")
    add_result_options(p)
    p.add_argument("--figure", metavar="OUT.png", help="write the stability vs dynamic range figure")
    p.set_defaults(func=_run)
