"""``speedaudit compare``: the paired speed win rate of one candidate set over another, run in one campaign."""

from __future__ import annotations

import argparse

from audits.cli._common import (add_audit_options, add_corpus_input, add_result_options, exit_status, report_audit,
                                run_audit_command)

_DESCRIPTION = """\
Compare two sets of solutions timed in one campaign (e.g. two models' programs on the same
problems, collected together with 'collect --candidates A=DIR --candidates B=DIR'). Per run:
the paired speed win rate of A over B with a bootstrap CI over problems, ties by the noise
model (a comparison, one A and one B solution without a wrong answer or crash, on one
optimization test, is decided only when P(A faster) >= C or <= 1 - C, a timeout losing;
otherwise it counts 1/2), the share of undecided comparisons, and the pass rate (every test
ok) of each set (docs/noise.md, "Paired comparison"). The sets default to a judge archive's
verdict folders (--a accepted --b time_limit_exceeded, by solution prefix); the same audit runs
in 'audit all' (--compare-a ...) and on the report's compare page (-p compare_a=...).
"""

_EPILOG = """\
example (the shipped corpus: its accepted submissions against its time-limit-exceeded ones):
  speedaudit compare fixtures/corpora/quiet-a.parquet --a accepted --b time_limit_exceeded --json compare.json

naming the sets (CORPUS: one campaign holding both):
  compare CORPUS --a A --b B                      by solution prefix (A/..., as collect --candidates writes)
  compare CORPUS --by model --a new --b base      by the values of a column
  compare CORPUS --a @ids_a.txt --b @ids_b.txt    by files of solution ids, one per line
"""


def _compare(args: argparse.Namespace) -> int:
    """The registered compare audit (its Options are the flags), on the runs the selection names."""
    audit = run_audit_command(args, "compare", source=str(args.corpus))
    report_audit(audit, args)
    return exit_status(audit, args)


def register(commands, audit_commands) -> None:
    # `speedaudit compare` and, like every registered audit, `speedaudit audit compare`
    for parsers, epilog in ((commands, _EPILOG), (audit_commands, None)):
        p = parsers.add_parser("compare", help="paired speed win rate of candidate set A over set B (shared execution)",
                               description=_DESCRIPTION, epilog=epilog,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        add_corpus_input(p, pools=False)
        p.add_argument("--measure", default="duration_s", metavar="COLUMN",
                       help="the duration column compared (default: duration_s; e.g. cpu_s or instructions)")
        add_audit_options(p, "compare")  # --a, --b, --by, --confidence, run selection, --n-boot, --seed, --threshold
        add_result_options(p)
        p.set_defaults(func=_compare)
