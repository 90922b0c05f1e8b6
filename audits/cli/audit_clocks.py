"""``speedaudit audit clocks``: the audit figures from each measure (wall time, CPU time, ...) side by side."""

from __future__ import annotations

import argparse

from audits.cli._common import add_corpus_input, add_result_options, exit_status, read_corpus, report_audit


def _clocks(args: argparse.Namespace) -> int:
    from audits.checks.clocks import run_clocks_audit

    corpus = read_corpus(args)
    audit = run_clocks_audit(corpus, measures=args.measures, n_boot=args.n_boot, seed=args.seed, source=args.corpus)
    report_audit(audit, args)
    return exit_status(audit, args)


def register(commands, audit_commands) -> None:
    p = audit_commands.add_parser(
        "clocks", help="compare the clocks: the same figures from duration_s, cpu_s, ... per run",
        description="Per run (environment, campaign) and per measure: median repeat CV, rank drift (mean sd of "
                    "100*q across repeats), ICC(A,1) of log durations, strong-weak gap and duration-filterable "
                    "share; and on the quietest run (lowest median load_1m, else wall/CPU ratio) the "
                    "within-problem rank agreement (Kendall tau-b of the solutions' q) of each measure with the "
                    "first: does CPU time order solutions as wall time does? (docs/reliability.md)")
    add_corpus_input(p, pools=False)
    add_result_options(p)
    p.add_argument("--measure", dest="measures", action="append", metavar="COLUMN",
                   help="a measure to compare (repeatable; the first is the base of the rank agreement; default: "
                        "duration_s, then cpu_s and instructions when the corpus has them)")
    p.add_argument("--n-boot", type=int, default=200, help="bootstrap resamples behind the figures (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_clocks)
