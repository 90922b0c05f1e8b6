"""``speedaudit report``: render the audit notebooks into HTML reports and an index page."""

from __future__ import annotations

import argparse

from audits.cli._common import whole_number
from audits.errors import UserError
from audits.protocol import registry
from audits.protocol.params import add_options, read_options
from audits.protocol.thresholds import PROFILES
from audits.report.catalog import REPORTS


def _run(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.report.render import parse_parameter, render_reports

    parameters = dict(parse_parameter(text) for text in args.parameters or ())
    named = _named_pairs(args)
    if named:  # --pair, after the pairs of -p pairs=... (both name pairs the report calibrates)
        parameters["pairs"] = [*(parameters.get("pairs") or ()), *named]
    if args.profile is not None:
        parameters["profile"] = args.profile
    if args.results and args.corpora:
        raise UserError("give the corpora or --results FILE, not both: saved results name the corpus they were "
                        "computed from")
    index = render_reports(args.corpora or None, out_dir=args.out, audits=args.audits or None,
                           parameters=parameters, show_code=args.show_code, kernel_name=args.kernel,
                           results=args.results, workers=args.workers)
    print(f"open {index.path.resolve()}")
    return 0


def _named_pairs(args: argparse.Namespace) -> list:
    """The pairs ``--pair`` names (the calibration audit's ``pairs`` option, read through its declaration), as the
    report parameter ``pairs`` holds them: ``[[[env, campaign], [env, campaign]], ...]``."""
    pairs = read_options(args, registry.options_of("calibration")).pairs
    return [[list(source), list(target)] for source, target in pairs]


def register(commands, audit_commands) -> None:
    names = ", ".join(REPORTS)
    p = commands.add_parser(
        "report", help="render the audit notebooks into self-contained HTML reports with an index page",
        description="Execute the report notebooks (notebooks/*.py) with papermill on one or more corpora, "
                    "convert each to self-contained HTML (code hidden unless --show-code), keep the executed "
                    "notebook beside it, and write OUT/index.html with the headline verdicts of every report. "
                    f"Reports: {names}.",
        epilog="example: speedaudit report fixtures/corpora/*.parquet -p n_boot=500 --out reports")
    p.add_argument("corpora", nargs="*", metavar="CORPUS",
                   help="timing corpora (.parquet/.csv/.jsonl), stacked into one; default: the templates' "
                        "defaults (the shipped corpora in fixtures/corpora)")
    p.add_argument("--results", metavar="FILE",
                   help="render from saved results (speedaudit audit all CORPUS --json FILE) without recomputing "
                        "any audit; pages of audits the file does not hold are left out")
    p.add_argument("--audit", dest="audits", action="append", choices=sorted(REPORTS), metavar="NAME",
                   help=f"render only this report (repeatable); one of {names}; default: all available")
    p.add_argument("-p", "--parameter", dest="parameters", action="append", metavar="KEY=VALUE",
                   help="set a notebook parameter (YAML value), e.g. -p n_boot=200 -p 'environments=[quiet,busy]'")
    p.add_argument("--profile", choices=PROFILES, default=None,
                   help="verdict profile of every report: reward (the templates' default; the study's reward sandbox) "
                        "or benchmark (a benchmark machine: pyperf's limits, no reward-gate findings)")
    # the calibration audit's pairs option, declared once (audits/checks/declared/calibration.py): the report's
    # parameter pairs (the pages calibrate these, else every default pair)
    add_options(p, registry.options_of("calibration"), only=("pairs",))
    p.add_argument("--show-code", action="store_true", help="keep the code cells in the HTML")
    p.add_argument("--kernel", default="python3", help="Jupyter kernel to execute with (default: python3)")
    p.add_argument("--workers", type=whole_number(1), default=None, metavar="N",
                   help="pages rendered at once, each in a kernel of its own (default: one per core this process "
                        "may use; 1 renders every page in one kernel, one after the other)")
    p.add_argument("--out", required=True, help="output folder (HTML, executed notebooks, index.html)")
    p.set_defaults(func=_run)
