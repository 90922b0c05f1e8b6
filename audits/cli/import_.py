"""``speedaudit import pyperf``: bring existing benchmark results in as a corpus."""

from __future__ import annotations

import argparse

from audits.corpus.io import save_corpus
from audits.corpus.importers.pyperf_json import import_pyperf


def _pyperf(args: argparse.Namespace) -> int:
    result = import_pyperf(args.files, environment=args.environment, campaign=args.campaign)
    path = save_corpus(result.corpus, args.out)
    print(result.summary())
    print(f"wrote {path}")
    return 0


def register(commands, audit_commands) -> None:
    importer = commands.add_parser("import", help="import timings from other tools' formats (pyperf)",
                                   description="Import timings written by other tools as a speedaudit corpus.")
    formats = importer.add_subparsers(dest="format", metavar="FORMAT")
    formats.required = True
    p = formats.add_parser(
        "pyperf", help="pyperf / pyperformance JSON result files",
        description="Each file is one build on one machine in one session. Solution: the build (commit_id, a "
                    "short hash merged with the full hash of the same commit; else the file name) with its "
                    "variant flags (JIT, NOGIL, ... from bench_runner folder/file names or python_config_args); "
                    "environment: hostname / OS / architecture / CPU and the machine name of bench_runner file "
                    "names; campaign: the day of the file's first run (one per file); each benchmark a problem "
                    "with one test; each value a repeat, each process run a 'run' (warmups dropped, "
                    "calibration runs skipped). Folders are searched for *.json and *.json.gz; files in them "
                    "that are not pyperf results are skipped with the reason.")
    p.add_argument("files", nargs="+", help="pyperf JSON files (.json or .json.gz) or folders of them")
    p.add_argument("--out", required=True, help="output corpus (.parquet)")
    p.add_argument("--environment", help="one environment name for every file (default: from the metadata)")
    p.add_argument("--campaign", help="one campaign name for every file (default: the day of each file's first run)")
    p.set_defaults(func=_pyperf)
