"""``speedaudit audit clocks``: the audit figures from each measure (wall time, CPU time, ...) side by side,
and which clock to trust (a finding; flags from its Options)."""

from __future__ import annotations

import argparse

from audits.cli._common import (add_audit_options, add_corpus_input, add_result_options, exit_status, report_audit,
                                run_audit_command)


def _clocks(args: argparse.Namespace) -> int:
    measures = tuple(args.measures) if args.measures else None
    audit = run_audit_command(args, "clocks", measures=measures, source=str(args.corpus))
    report_audit(audit, args)
    return exit_status(audit, args)


def register(commands, audit_commands) -> None:
    p = audit_commands.add_parser(
        "clocks", help="compare the clocks: the same figures from duration_s, cpu_s, ... per run",
        description="Per run (environment, campaign) and per measure: median repeat CV, rank drift (mean sd of "
                    "100*q across repeats), ICC(A,1) of log durations, strong-weak gap and duration-filterable "
                    "share; and on the quietest run (lowest median load_1m, else wall/CPU ratio) the "
                    "within-problem rank agreement (Kendall tau-b of the solutions' q) of each measure with the "
                    "first: does CPU time order solutions as wall time does? The recommendation is a finding "
                    "(clock_agreement, judged against --threshold agreement=...). (docs/reliability.md)")
    add_corpus_input(p, pools=False)
    add_result_options(p)
    p.add_argument("--measure", dest="measures", action="append", metavar="COLUMN",
                   help="a measure to compare (repeatable; the first is the base of the rank agreement; default: "
                        "duration_s, then cpu_s and instructions when the corpus has them)")
    add_audit_options(p, "clocks")
    p.set_defaults(func=_clocks)
