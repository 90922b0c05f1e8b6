"""``speedaudit suite``: load a suite of Kattis problem packages and print what it holds."""

from __future__ import annotations

import argparse

from audits.cli._common import whole_number
from audits.cli.collect import add_subset_options, subset_patterns
from audits.collect.sandbox import SandboxError
from audits.errors import UserError

# The numeric stack and the collectors load when the command runs, not for --help (issue 26: within 0.3 s).


def _run(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.collect.suite import SuiteError, load_suite, probe_optimization_tests

    problems = [p for chunk in (args.problem or []) for p in chunk.split(",") if p] or None
    try:
        suite = load_suite(args.suite, n_largest_optimization=args.n_largest, include_samples=not args.no_samples,
                           progress=True,
                           problems=problems, build_dir=args.build_dir, python=args.python,
                           sandbox=args.sandbox, build_submissions=not args.no_build, cxx_std=args.cxx_std,
                           optimization_tests=args.optimization_tests, submissions=subset_patterns(args))
        if not args.no_probe:
            suite = probe_optimization_tests(suite, sandbox=args.sandbox, build_dir=args.build_dir,
                                             python=args.python, progress=True)
    except SuiteError as exc:
        raise UserError(str(exc)) from exc
    except SandboxError as exc:
        raise UserError(f"{exc}\n  -> pass --no-probe to skip the probe run, or choose another --sandbox") from exc
    print(suite.summary())
    warnings = suite.warnings()
    if warnings:
        print(f"  warnings: {len(warnings)}")
        print("\n".join(f"    {w}" for w in warnings))
    if not suite.problems:
        raise UserError(f"{args.suite}: no usable problem package (see the skipped list above)")
    if args.strict and suite.skipped:
        raise UserError(f"{args.suite}: {len(suite.skipped)} item(s) skipped (listed above) and --strict makes "
                        f"any skip an error\n  -> fix or remove them, or run without --strict")
    return 0


def register(commands, audit_commands) -> None:
    p = commands.add_parser(
        "suite", help="load a folder of Kattis problem packages and print problems, tests, submissions, skips",
        description="Load a suite (a folder of problem packages in the Kattis format, or one package) and print: "
                    "problems, tests per kind (correctness / optimization), submissions per verdict folder, and "
                    "everything skipped with the reason (interactive problems, unsupported languages, Python 2 or "
                    "non-compiling Python, tests without .in or .ans, malformed problem.yaml, validators that do "
                    "not build), per problem with counts. When the optimization tests cannot be told apart by "
                    "size, a probe run (each of up to 3 accepted references once on each tied test) picks the "
                    "heaviest and the summary says so. With --optimization-tests, --submission or --submissions-from it loads the "
                    "campaign subset 'speedaudit collect' would time with the same options and prints the selection "
                    "first. Exit 1 when the path is not a suite, no problem is usable or a pattern matches nothing.")
    p.add_argument("suite", help="folder of problem packages, or one package (a folder with problem.yaml)")
    p.add_argument("--n-largest", type=whole_number(0), default=6, metavar="N",
                   help="without data/secret/optimization/, the N largest secret inputs are optimization tests "
                        "(default 6)")
    p.add_argument("--no-samples", action="store_true", help="leave out data/sample tests")
    p.add_argument("--problem", action="append", metavar="ID[,ID...]", help="load only these problems (repeatable)")
    add_subset_options(p)
    p.add_argument("--build-dir", default=None,
                   help="where custom output validators are compiled (default ~/.cache/speedaudit/build)")
    p.add_argument("--python", default=None,
                   help="interpreter that byte-compiles Python submissions and runs Python validators and probes "
                        "(default /usr/bin/python3)")
    p.add_argument("--no-probe", action="store_true",
                   help="do not run the references to choose among optimization tests of indistinguishable size "
                        "(they are then chosen by name, and the summary says so)")
    p.add_argument("--no-build", action="store_true",
                   help="do not compile the C/C++ submissions (by default each is built once, in the sandbox, "
                        "cached in --build-dir, and one that does not build is listed with its first error)")
    p.add_argument("--cxx-std", default=None, metavar="STD",
                   help="C++ standard of every C++ build, e.g. c++20 (default: the newest g++ supports, of "
                        "gnu++23, gnu++20, gnu++17)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when anything is skipped (a package, test, submission or validator)")
    p.add_argument("--sandbox", default="local", metavar="local|bwrap|cmd:TEMPLATE",
                   help="where validators are compiled and the probe runs the references (default: local)")
    p.set_defaults(func=_run)
