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
        description="Each file is one build (solution: its commit_id, else the file name); each benchmark "
                    "a problem with one test; each process run's values the repeats (warmups dropped, "
                    "calibration runs skipped); the machine (hostname/CPU) the environment; the date of the "
                    "first run the campaign.")
    p.add_argument("files", nargs="+", help="pyperf JSON files (.json or .json.gz)")
    p.add_argument("--out", required=True, help="output corpus (.parquet)")
    p.add_argument("--environment", help="environment name (default: hostname/CPU from the metadata)")
    p.add_argument("--campaign", help="campaign name (default: date of the first run)")
    p.set_defaults(func=_pyperf)
