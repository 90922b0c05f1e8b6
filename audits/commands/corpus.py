"""``speedaudit validate`` and ``speedaudit convert``: check and normalise corpora."""

from __future__ import annotations

import argparse

from audits.corpus import UNITS, load_corpus, save_corpus, summarize


def add_corpus_input(parser: argparse.ArgumentParser) -> None:
    """The corpus argument plus --map and --unit, shared by every command that reads a corpus."""
    parser.add_argument("corpus", help="timing corpus: .parquet, .csv(.gz) or .jsonl (JSON lines)")
    parser.add_argument("--map", dest="mapping", metavar="SRC=DST[,SRC=DST...]",
                        help="rename file columns onto corpus columns, e.g. task_id=problem,runtime=duration_s")
    parser.add_argument("--unit", choices=sorted(UNITS), default="s",
                        help="unit of the duration columns in the file (default: s)")


def read_corpus(args: argparse.Namespace):
    return load_corpus(args.corpus, mapping=args.mapping, unit=args.unit)


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
