"""``speedaudit import pyperf|hyperfine|pytest-benchmark``: bring existing benchmark results in as a corpus."""

from __future__ import annotations

import argparse

from audits.corpus.importers.choices import CAMPAIGN_FROM, SOLUTION_FROM

# The numeric stack and the collectors load when the command runs, not for --help (issue 26: within 0.3 s).


def _check_out(args: argparse.Namespace) -> None:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import output_ending

    output_ending(args.out)  # said before the files are read: an archive takes minutes (the importers then check
    # the names given as options, also before reading)


def _write(result, args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import save_corpus

    path = save_corpus(result.corpus, args.out)
    print(result.summary())
    print(f"wrote {path}")
    return 0


def _pyperf(args: argparse.Namespace) -> int:
    _check_out(args)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.importers.pyperf_json import import_pyperf

    return _write(import_pyperf(args.files, environment=args.environment, campaign=args.campaign,
                                campaign_from=args.campaign_from, solution_from=args.solution_from), args)


def _hyperfine(args: argparse.Namespace) -> int:
    _check_out(args)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.importers.hyperfine import import_hyperfine

    return _write(import_hyperfine(args.files, problem=args.problem, environment=args.environment,
                                   campaign=args.campaign), args)


def _pytest_benchmark(args: argparse.Namespace) -> int:
    _check_out(args)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.importers.pytest_benchmark import import_pytest_benchmark

    return _write(import_pytest_benchmark(args.files, environment=args.environment, campaign=args.campaign), args)


def _add_format(formats, name: str, func, *, help: str, description: str, files: str, environment: str,
                campaign: str) -> argparse.ArgumentParser:
    """One ``speedaudit import FORMAT`` parser: FILES, --out, --environment, --campaign."""
    parser = formats.add_parser(name, help=help, description=description)
    parser.add_argument("files", nargs="+", help=files)
    parser.add_argument("--out", required=True,
                        help="output corpus: .parquet (recommended), .csv(.gz), .tsv or .jsonl, written in the format "
                             "its name says (any other name is refused)")
    parser.add_argument("--environment", help=environment)
    parser.add_argument("--campaign", help=campaign)
    parser.set_defaults(func=func)
    return parser


def register(commands, audit_commands) -> None:
    importer = commands.add_parser(
        "import", help="import timings from other tools' formats (pyperf, hyperfine, pytest-benchmark)",
        description="Import timings written by other tools as a speedaudit corpus (validated; written "
                    "atomically, nothing on error).")
    formats = importer.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    pyperf = _add_format(
        formats, "pyperf", _pyperf, help="pyperf / pyperformance JSON result files or whole archives",
        description="Each file is one build on one machine in one session. Solution: the build (commit_id, a "
                    "short hash merged with the full hash of the same commit; else the file name) with its "
                    "variant flags (JIT, NOGIL, DEBUG from bench_runner folder/file names or python_config_args); "
                    "environment: hostname / OS / architecture / CPU / pointer size (64-bit, 32-bit) and the "
                    "machine name of bench_runner file names; campaign: the day of the earliest run of the "
                    "file's commit on that machine (its variants join it); each benchmark a problem "
                    "with one test; each value a repeat, each process run a 'run' (warmups dropped, "
                    "calibration runs skipped). Folders are searched for *.json and *.json.gz; files in them "
                    "that are not pyperf results are skipped with the reason.",
        files="pyperf JSON files (.json or .json.gz) or folders of them",
        environment="one environment name for every file (default: from the metadata)",
        campaign="one campaign name for every file (default: see --campaign-from)")
    pyperf.add_argument("--campaign-from", choices=CAMPAIGN_FROM, default=CAMPAIGN_FROM[0],
                        help="what a campaign is: 'date' (default) the day of the commit's earliest run on the "
                             "machine, 'file' each file, 'build' each build (commit + variants: compare two builds "
                             "as two campaigns)")
    pyperf.add_argument("--solution-from", choices=SOLUTION_FROM, default=None,
                        help="what a solution is: 'build' (default) or 'benchmark-suite' (one solution for every "
                             "file: the default with --campaign-from build, so that builds pair benchmark by "
                             "benchmark)")

    hyperfine = _add_format(
        formats, "hyperfine", _hyperfine, help="hyperfine --export-json files",
        description="Each file is a problem (its name; --problem for one problem over several files, which "
                    "are then its campaigns); each parameter combination (-P/-L) a test ('n=10'; 'default' "
                    "without parameters); each command a solution (the k-th command of every combination; "
                    "named by its text when that is the same in every combination, else 'command k'); each "
                    "'times' value a repeat, ok when its exit code is 0, runtime_error otherwise.",
        files="hyperfine JSON files (hyperfine --export-json FILE)",
        environment="environment name (default: 'default'; hyperfine records no machine)",
        campaign="campaign name (default: the file name)")
    hyperfine.add_argument("--problem", help="one problem name for every file (default: the file name)")

    _add_format(
        formats, "pytest-benchmark", _pytest_benchmark, help="pytest-benchmark JSON files (--benchmark-json, saved runs)",
        description="Each benchmarked test is a problem with one test; each saved run (file) a campaign; the "
                    "commit (commit_info, '(dirty)' when the tree had changes) the solution; machine_info the "
                    "environment; each round (stats.data) a repeat. Saved runs need --benchmark-save-data. A folder "
                    "(the storage folder .benchmarks) stands for every .json file under it.",
        files="pytest-benchmark JSON files, or folders of saved runs (the storage folder .benchmarks)",
        environment="environment name (default: from machine_info)",
        campaign="campaign name, for one file (default: the file name)")
