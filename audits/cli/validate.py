"""``speedaudit validate`` and ``speedaudit convert``: check and normalise corpora."""

from __future__ import annotations

import argparse

from audits.cli._common import add_corpus_input, read_corpus
from audits.corpus.io import save_corpus, summarize


def _validate(args: argparse.Namespace) -> int:
    corpus = read_corpus(args)
    print(f"{args.corpus}: valid timing corpus")
    print(summarize(corpus).summary())
    return 0


def _convert(args: argparse.Namespace) -> int:
    corpus = read_corpus(args)
    path = save_corpus(corpus, args.out)
    print(f"wrote {path} ({len(corpus):,} rows)")
    return 0


def register(commands, audit_commands) -> None:
    validate = commands.add_parser(
        "validate", help="check a corpus and print a summary (exit 1 with the reason if invalid)",
        description="Check a timing corpus against the schema (README, 'The timing corpus') and print "
                    "rows, problems, tests, solutions, environments, campaigns, repeats and status counts.")
    add_corpus_input(validate)
    validate.set_defaults(func=_validate)

    convert = commands.add_parser(
        "convert", help="validate a corpus and write it as canonical Parquet",
        description="Validate a CSV / JSON-lines / Parquet corpus (with an optional column mapping and "
                    "unit) and write it as canonical Parquet. Nothing is written unless it is valid.")
    add_corpus_input(convert)
    convert.add_argument("--out", required=True, help="output .parquet path")
    convert.set_defaults(func=_convert)
