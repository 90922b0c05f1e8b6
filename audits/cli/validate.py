"""``speedaudit validate`` and ``speedaudit convert``: check and normalise corpora."""

from __future__ import annotations

import argparse
import sys

from audits.cli._common import add_corpus_input
from audits.corpus.paths import check_corpus_path

# The numeric stack and the collectors load when the command runs, not for --help (issue 26: within 0.3 s).


def _load(args: argparse.Namespace):
    check_corpus_path(args.corpus)  # a FIFO, a broken link, ...: said at once, before the numeric stack loads
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import load_corpus, unit_warnings

    corpus = load_corpus(args.corpus, mapping=args.mapping, unit=args.unit)
    return corpus, unit_warnings(corpus, unit=args.unit, source=args.corpus)


def _validate(args: argparse.Namespace) -> int:
    corpus, warnings = _load(args)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import summarize

    print(f"{args.corpus}: valid timing corpus")
    print(summarize(corpus).summary())
    for warning in warnings:
        print(f"warning: {warning}")
    return 0


def _convert(args: argparse.Namespace) -> int:
    if not args.partition_by:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.corpus.io import output_ending

        output_ending(args.out)  # said before the corpus is read and validated
    corpus, warnings = _load(args)
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import save_corpus

    for warning in warnings:
        print(f"speedaudit: warning: {warning}", file=sys.stderr)
    if args.partition_by:
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.corpus.dataset import save_dataset

        dataset = save_dataset(corpus, args.out, partition_by=args.partition_by)
        print(f"wrote {dataset.path} ({dataset.rows:,} rows in {dataset.n_partitions:,} partitions, "
              f"one per {args.partition_by})")
        return 0
    path = save_corpus(corpus, args.out)
    print(f"wrote {path} ({len(corpus):,} rows)")
    return 0


def register(commands, audit_commands) -> None:
    validate = commands.add_parser(
        "validate", help="check a corpus and print a summary (exit 1 with the reason if invalid)",
        description="Check a timing corpus against the schema (README, 'The timing corpus') and print "
                    "rows, problems (without the floor pseudo-problem), tests, solutions, environments, "
                    "campaigns, runs, repeats per solution cell and status counts; warn when the durations "
                    "look like another unit than --unit.")
    add_corpus_input(validate, pools=False)
    validate.set_defaults(func=_validate)

    convert = commands.add_parser(
        "convert", help="validate a corpus and write it as canonical Parquet",
        description="Validate a CSV / JSON-lines / Parquet corpus (with an optional column mapping and "
                    "unit) and write it as canonical Parquet. Nothing is written unless it is valid.")
    add_corpus_input(convert, pools=False)
    convert.add_argument("--out", required=True,
                         help="output .parquet path, or a folder with --partition-by")
    convert.add_argument("--partition-by", choices=("problem",), default=None,
                         help="write a partitioned dataset instead: a folder of Parquet files, one per problem, "
                              "with a manifest (audited lazily, e.g. with 'speedaudit audit all --scheduler')")
    convert.set_defaults(func=_convert)
