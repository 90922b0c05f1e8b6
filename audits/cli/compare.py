"""``speedaudit compare``: the paired speed win rate of one candidate set over another, run in one campaign."""

from __future__ import annotations

import argparse

from audits.cli._common import (add_corpus_input, add_result_options, add_run_selection, exit_status, read_corpus,
                                read_runs_filter, report_audit)

_DESCRIPTION = """\
Compare two sets of solutions timed in one campaign (e.g. two models' programs on the same
problems, collected together with 'collect --candidates A=DIR --candidates B=DIR'). Per run:
the paired speed win rate of A over B with a bootstrap CI over problems, ties by the noise
model (a comparison, one A and one B solution without a wrong answer or crash, on one
optimization test, is decided only when P(A faster) >= C or <= 1 - C, a timeout losing;
otherwise it counts 1/2), the share of undecided comparisons, and the pass rate (every test
ok) of each set (docs/noise.md, "Paired comparison").
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
    from audits.checks.compare import run_compare_audit
    from audits.corpus.runs import runs_of, select_rows

    corpus = read_corpus(args)
    chosen = read_runs_filter(args)
    if any(v is not None for v in chosen.values()):
        corpus = select_rows(corpus, runs_of(corpus).select(**chosen))
    audit = run_compare_audit(corpus, a=args.a, b=args.b, by=args.by, confidence=args.confidence,
                              n_boot=args.n_boot, seed=args.seed, source=args.corpus)
    report_audit(audit, args)
    return exit_status(audit, args)


def register(commands, audit_commands) -> None:
    p = commands.add_parser("compare", help="paired speed win rate of candidate set A over set B (shared execution)",
                            description=_DESCRIPTION, epilog=_EPILOG,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_corpus_input(p, pools=False)
    p.add_argument("--a", required=True, metavar="SET",
                   help="set A: a value of --by, or @FILE (solution ids, one per line)")
    p.add_argument("--b", required=True, metavar="SET", help="set B, as --a")
    p.add_argument("--by", default="prefix", metavar="COLUMN",
                   help="the column whose values name the sets (default: prefix, the solution id up to its first '/')")
    p.add_argument("--measure", default="duration_s", metavar="COLUMN",
                   help="the duration column compared (default: duration_s; e.g. cpu_s or instructions)")
    p.add_argument("--confidence", type=float, default=0.95, metavar="C",
                   help="a comparison is decided when P(A faster) >= C or <= 1 - C (default: 0.95)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default: 1000)")
    p.add_argument("--seed", type=int, default=0)
    add_run_selection(p)
    add_result_options(p)
    p.set_defaults(func=_compare)
