"""Pieces every ``speedaudit`` command that reads a corpus or prints an audit shares.

Kept outside :mod:`audits.commands` (whose modules are discovered as commands).
"""

from __future__ import annotations

import argparse
import sys

from audits.corpus.io import UNITS, load_corpus, unit_warnings
from audits.findings import worst_level, write_json

__all__ = ["add_corpus_input", "read_corpus", "add_result_options", "report_audit", "exit_status"]


def add_corpus_input(parser: argparse.ArgumentParser, *, pools: bool = True) -> None:
    """The corpus argument plus --map and --unit (and --one-pool, for commands that rank, when ``pools``)."""
    parser.add_argument("corpus", help="timing corpus: .parquet, .csv(.gz) or .jsonl (JSON lines)")
    parser.add_argument("--map", dest="mapping", metavar="SRC=DST[,SRC=DST...]",
                        help="rename file columns onto corpus columns, e.g. task_id=problem,runtime=duration_s")
    parser.add_argument("--unit", choices=sorted(UNITS), default="s",
                        help="unit of the duration columns in the file (default: s)")
    if pools:  # the commands that rank are the audits: each may time with another clock
        parser.add_argument("--measure", default="duration_s", metavar="COLUMN",
                            help="the numeric column every figure is computed from (default: duration_s, the wall "
                                 "time; e.g. cpu_s or instructions); speedaudit audit clocks compares them")
        parser.add_argument("--one-pool", action="store_true",
                            help="rank every solution in one reference pool per test even when a problem's "
                                 "references mix languages (default: one pool per language there)")


def read_corpus(args: argparse.Namespace):
    """Load and validate the corpus named by :func:`add_corpus_input`'s options.

    Warnings that the durations look like another unit (:func:`audits.corpus.io.unit_warnings`)
    go to stderr, so an audit never reports a 10-second empty program without a word.
    ``--one-pool`` merges the languages' reference pools (:data:`stats.ranking.POOLS_ATTR`).
    """
    corpus = load_corpus(args.corpus, mapping=args.mapping, unit=args.unit)
    for warning in unit_warnings(corpus, unit=args.unit, source=args.corpus):
        print(f"speedaudit: warning: {warning}", file=sys.stderr)
    measure = getattr(args, "measure", "duration_s")
    if measure != "duration_s":
        from audits.clocks import use_measure

        corpus = use_measure(corpus, measure, source=args.corpus)
        print(f"speedaudit: note: {corpus.attrs['measure_note']}", file=sys.stderr)
    if getattr(args, "one_pool", False):
        from stats.ranking import POOLS_ATTR

        corpus.attrs[POOLS_ATTR] = "one"
    return corpus


def add_result_options(parser: argparse.ArgumentParser) -> None:
    """--json OUT and --strict, for every audit command."""
    parser.add_argument("--json", metavar="OUT", help="also write the full result as JSON to OUT")
    parser.add_argument("--strict", action="store_true",
                        help="exit with status 1 when any finding fails (for CI pipelines)")


def report_audit(audit, args: argparse.Namespace) -> None:
    """Print the audit's summary and write its JSON when --json was given (with ``measure`` when not wall time)."""
    measure = getattr(args, "measure", "duration_s")
    if measure != "duration_s":
        print(f"measure: {measure} (every duration below is {measure}, not the wall time; --measure)")
    print(audit.summary())
    if getattr(args, "json", None):
        result = audit.to_dict()
        if measure != "duration_s" and isinstance(result, dict):
            result = {"measure": measure, **result}
        print(f"\nwrote {write_json(result, args.json)}")


def exit_status(audit, args: argparse.Namespace) -> int:
    """1 under --strict when a finding fails, else 0."""
    return 1 if (getattr(args, "strict", False) and worst_level(audit.findings) == "fail") else 0
