"""Pieces every ``speedaudit`` command that reads a corpus or prints an audit shares.

Kept outside the command modules (those whose names do not start with ``_`` are discovered as
commands): the corpus input, the runs an audit covers (``--environment``/``--campaign``, the two runs of a
calibration), the one ``--threshold`` syntax, and result output.
"""

from __future__ import annotations

import argparse
import sys

from audits.corpus.paths import check_corpus_path
from audits.corpus.schema import UNITS
from audits.dask_connection import CONNECT_TIMEOUT_S, TLS_FLAGS, tls_security
from audits.engine.routing import refuse_whole_load
from audits.errors import UserError
from audits.protocol import registry
from audits.protocol.audit import Skip
from audits.protocol.params import add_options, read_options
from audits.protocol.thresholds import PROFILES, ThresholdError, parse_overrides

__all__ = ["add_corpus_input", "read_corpus", "add_result_options", "report_audit", "exit_status", "add_pair_selection",
           "pair_named", "read_pair", "add_audit_options", "read_audit_options", "run_audit_command",
           "add_connection_options", "read_security", "positive_seconds", "whole_number"]

# Nothing here imports numpy or pandas at module level: every command's parser is built for
# `speedaudit --help` (issue 26: within 0.3 s); the numeric stack loads when a command runs.


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
    check_corpus_path(args.corpus)  # a FIFO, a broken link, ...: said at once, before the numeric stack loads
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.io import load_corpus, unit_warnings

    refuse_whole_load(args.corpus)  # a dataset `audit all` audits on Dask (by its size) is not loaded whole
    corpus = load_corpus(args.corpus, mapping=args.mapping, unit=args.unit)
    for warning in unit_warnings(corpus, unit=args.unit, source=args.corpus):
        print(f"speedaudit: warning: {warning}", file=sys.stderr)
    measure = getattr(args, "measure", "duration_s")
    if measure != "duration_s":
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
        from audits.checks.clocks import use_measure

        corpus = use_measure(corpus, measure, source=args.corpus)
        print(f"speedaudit: note: {corpus.attrs['measure_note']}", file=sys.stderr)
    if getattr(args, "one_pool", False):
        # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
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
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.protocol.findings import write_json

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
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.protocol.findings import worst_level

    return 1 if (getattr(args, "strict", False) and worst_level(audit.findings) == "fail") else 0


# --- runs -----------------------------------------------------------------------------------------

def add_run_selection(parser: argparse.ArgumentParser, *, default: str = "every run") -> None:
    """--environment NAME and --campaign NAME: the runs an audit covers (names are taken as they are)."""
    group = parser.add_argument_group("runs (one run = one environment and campaign)")
    group.add_argument("--environment", metavar="NAME",
                       help=f"only the runs of this environment (the corpus column; default: {default})")
    group.add_argument("--campaign", metavar="NAME", help=f"only the runs of this campaign (default: {default})")


#: The flags that name a calibration's two runs, declared once for every command that takes them (``audit
#: calibration``, ``calibrate``, ``audit all``): ``(flag, help)``; the flag for the environment of both runs is
#: the command's (``--environment``, or ``--pair-environment`` in ``audit all``, where ``--environment`` selects
#: the runs of the other audits).
PAIR_FLAGS = (
    ("--source-environment", "environment of the source run"),
    ("--source-campaign", "campaign of the source run (e.g. the stored one)"),
    ("--target-environment", "environment of the target run"),
    ("--target-campaign", "campaign of the target run (e.g. the fresh one)"),
    (None, "environment of both runs (campaign against campaign)"),
    ("--source", "environment or campaign to map FROM (one column's name; the column is detected)"),
    ("--target", "environment or campaign to map ONTO (one column's name; the column is detected)"),
)


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_pair_selection(parser: argparse.ArgumentParser, *, both_environment: str = "--environment",
                       title: str = "source and target (map SOURCE onto TARGET)") -> None:
    """The two runs of a calibration (:data:`PAIR_FLAGS`): each side by environment and campaign, or
    --source/--target names; ``both_environment`` is the flag for the environment of both runs."""
    group = parser.add_argument_group(
        title,
        "Name each side by its environment and campaign (any omitted part is filled from the other side or "
        f"{both_environment}, and must then be unique in the corpus), e.g. {both_environment} quiet "
        "--source-campaign stored --target-campaign fresh on the full file; or give --source/--target as two "
        "names of one column.")
    for flag, text in PAIR_FLAGS:
        group.add_argument(flag or both_environment, metavar="NAME", help=text)
    group.add_argument("--key", choices=("auto", "environment", "campaign"), default="auto",
                       help="with --source/--target: which column holds the two names (default: detect)")


def pair_named(args: argparse.Namespace) -> bool:
    """Whether the flags name a pair (an environment of both runs alone does not)."""
    return any(getattr(args, _dest(flag)) is not None for flag, _ in PAIR_FLAGS if flag is not None)


def read_pair(args: argparse.Namespace, corpus, *, both_environment: str = "--environment"):
    """``(source, target)`` for :func:`audits.checks.calibration.run_calibration_audit` from :func:`add_pair_selection`.

    Runs (:class:`audits.corpus.runs.Run`) when any ``--source-*``/``--target-*``/``both_environment`` is given,
    else the ``--source``/``--target`` names. The direction is kept as given.
    """
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.corpus.runs import RunError, Runs, runs_of

    both = getattr(args, _dest(both_environment))
    parts = {side: (getattr(args, f"{side}_environment"), getattr(args, f"{side}_campaign"))
             for side in ("source", "target")}
    by_run = both is not None or any(v is not None for pair in parts.values() for v in pair)
    if by_run and (args.source is not None or args.target is not None):
        raise UserError("name the runs either with --source-environment/--source-campaign/--target-environment/"
                        f"--target-campaign (and {both_environment}) or with --source/--target, not both")
    if not by_run:
        if args.source is None or args.target is None:
            raise UserError(f"name the two runs: --source-campaign A --target-campaign B (with {both_environment} "
                            "E), --source-environment E1 --target-environment E2, or --source A --target B")
        return args.source, args.target
    if both is not None:
        for side, (env, _camp) in parts.items():
            if env is not None and env != both:
                raise UserError(f"{both_environment} {both!r} and --{side}-environment {env!r} disagree")
        parts = {side: (both, camp) for side, (_, camp) in parts.items()}
    runs = corpus if isinstance(corpus, Runs) else runs_of(corpus)  # a partitioned dataset gives its run table
    chosen = []
    for side, (env, camp) in parts.items():
        other_env, other_camp = parts["target" if side == "source" else "source"]
        if env is None and camp is None:
            raise UserError(f"the {side} run is not named: give --{side}-environment and/or --{side}-campaign")
        if env is None:
            env = other_env  # campaign against campaign of one environment (None: find the campaign's run)
        if camp is None and other_camp is not None and any(r.campaign == other_camp
                                                           for r in runs.select(environment=env)):
            camp = other_camp  # environment against environment in the campaign both have
        try:
            chosen.append(runs.one(environment=env, campaign=camp))
        except RunError as error:  # its advice names --environment/--campaign, which name no side of a pair
            raise UserError(f"the {side} run: {str(error).split(chr(10))[0]}\n  -> name one of the runs listed with "
                            f"--{side}-environment NAME and --{side}-campaign NAME ({both_environment} NAME: the "
                            "environment of both runs)") from None
    return chosen[0], chosen[1]


def read_runs_filter(args: argparse.Namespace) -> dict:
    """``{"environment": ..., "campaign": ...}`` from :func:`add_run_selection`'s options."""
    return {"environment": getattr(args, "environment", None), "campaign": getattr(args, "campaign", None)}


# --- a running Dask scheduler: certificates and timeout --------------------------------------------------

def positive_seconds(text: str) -> float:
    """``type=`` of a duration option: a positive number of seconds (NaN and infinity refused too)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def whole_number(low: int):
    """``type=`` of a count option: a whole number of at least ``low``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


def add_connection_options(group) -> None:
    """How a command reaches the ``--scheduler`` it names (every command with one: :mod:`audits.dask_connection`):
    the TLS files and ``--connect-timeout``."""
    for flag, help_ in zip(TLS_FLAGS, ("the cluster's CA certificate", "this client's certificate",
                                       "this client's private key")):
        group.add_argument(flag, default=None, metavar="PEM", help=f"{help_} (with a tls:// --scheduler)")
    group.add_argument("--connect-timeout", type=positive_seconds, default=CONNECT_TIMEOUT_S, metavar="SECONDS",
                       help=f"how long to try reaching --scheduler before giving up (default: {CONNECT_TIMEOUT_S:g})")


def read_security(args: argparse.Namespace):
    """The TLS security of ``--tls-ca-file``/``--tls-cert``/``--tls-key`` (all three, or None when none is given)."""
    return tls_security(args.tls_ca_file, args.tls_cert, args.tls_key)


# --- thresholds -----------------------------------------------------------------------------------

def add_threshold_option(parser: argparse.ArgumentParser, thresholds) -> None:
    """--threshold NAME=VALUE (both levels), NAME.warn=VALUE or NAME.fail=VALUE, repeatable; the limits and
    their defaults are listed in the help (``thresholds``: the audit's :class:`audits.protocol.thresholds.Thresholds`)."""
    parser.add_argument("--threshold", action="append", metavar="NAME[.warn|.fail]=VALUE",
                        help="override a threshold (repeatable): NAME=VALUE sets both levels, NAME.warn=VALUE or "
                             "NAME.fail=VALUE one. Defaults: " + thresholds.describe().replace("%", "%%"))
    add_profile_option(parser)


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    """--profile reward|benchmark: which use the verdicts are for (:data:`audits.protocol.thresholds.PROFILES`)."""
    parser.add_argument("--profile", choices=PROFILES, default="reward",
                        help="verdict profile: reward (default; the study's reward sandbox) or benchmark (a "
                             "benchmark machine: pyperf's limits, e.g. warn when the std dev is > 10%% of the "
                             "mean; no reward-gate findings)")


def read_thresholds(args: argparse.Namespace, thresholds):
    """The audit's thresholds with ``--threshold`` overrides applied (one parser for every command)."""
    try:
        return thresholds.for_profile(getattr(args, "profile", None)).override(
            parse_overrides(getattr(args, "threshold", None)))
    except ThresholdError as exc:
        raise ThresholdError(f"--threshold: {exc}") from exc


# --- registered audits: flags from their declarations ------------------------------------------------------

def add_audit_options(parser: argparse.ArgumentParser, name: str, *, skip=(), only=None,
                      thresholds: bool = True) -> None:
    """The flags of registered audit ``name``: one per command-line field of its Options (help generated from
    the declaration, :func:`audits.protocol.params.add_options`), plus ``--threshold`` and ``--profile``."""
    add_options(parser, registry.options_of(name), skip=skip, only=only)
    if thresholds:
        add_threshold_option(parser, registry.thresholds_of(name))


def read_audit_options(args: argparse.Namespace, name: str, **fixed):
    """Audit ``name``'s validated Options from :func:`add_audit_options`' flags (``fixed``: set by the command)."""
    return read_options(args, registry.options_of(name), **fixed)


def run_audit_command(args: argparse.Namespace, name: str, *, corpus=None, **fixed):
    """Options, thresholds, corpus, then the registered audit ``name`` (errors name the corpus file)."""
    options = read_audit_options(args, name, **fixed)
    thresholds = read_thresholds(args, registry.thresholds_of(name))
    corpus = read_corpus(args) if corpus is None else corpus
    try:
        try:
            return registry.get(name).run(corpus, options, thresholds)
        except Skip as exc:  # one audit asked for by name: its full reason, not a skipped note
            raise (exc.__cause__ or exc) from None
    except ValueError as exc:
        if isinstance(exc, UserError) and str(exc).startswith(str(args.corpus)):
            raise
        raise UserError(f"{args.corpus}: {exc}") from exc
