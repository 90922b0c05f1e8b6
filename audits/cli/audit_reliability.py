"""``speedaudit audit reliability`` and ``speedaudit audit discriminability``."""

from __future__ import annotations

import argparse

from audits.cli._common import (
    add_corpus_input,
    add_result_options,
    add_run_selection,
    add_threshold_option,
    exit_status,
    read_corpus,
    read_runs_filter,
    read_thresholds,
    report_audit,
)
from audits.checks.discriminability import DiscriminabilityThresholds
from audits.errors import UserError
from audits.checks.reliability import ReliabilityThresholds


def _finish(audit, args) -> int:
    report_audit(audit, args)
    return exit_status(audit, args)


def _reliability(args: argparse.Namespace) -> int:
    from audits.checks.reliability import run_reliability_audit

    thresholds = read_thresholds(args, ReliabilityThresholds)
    corpus = read_corpus(args)
    try:
        audit = run_reliability_audit(corpus, **read_runs_filter(args), thresholds=thresholds, n_boot=args.n_boot,
                                      seed=args.seed, target_reliability=args.target_reliability,
                                      target_precision=args.target_precision)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    return _finish(audit, args)


def _discriminability(args: argparse.Namespace) -> int:
    from audits.checks.discriminability import run_discriminability_audit

    thresholds = read_thresholds(args, DiscriminabilityThresholds)
    corpus = read_corpus(args)
    floor = None if args.floor_ms is None else args.floor_ms / 1000.0
    try:
        audit = run_discriminability_audit(corpus, floor_s=floor, **read_runs_filter(args), thresholds=thresholds,
                                           method=args.method, n_boot=args.n_boot, seed=args.seed)
    except ValueError as exc:
        raise UserError(f"{args.corpus}: {exc}") from exc
    return _finish(audit, args)


def _common(parser: argparse.ArgumentParser, thresholds) -> None:
    add_corpus_input(parser)
    add_result_options(parser)
    add_run_selection(parser)
    add_threshold_option(parser, thresholds)
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples over problems (default 1000)")
    parser.add_argument("--seed", type=int, default=0)


def register(commands, audit_commands) -> None:
    rel = audit_commands.add_parser(
        "reliability", help="is the sandbox's timing repeatable? (repeat CV, rank drift, ICC, variance components)",
        description="Repeat CV and absolute sd per cell, rank drift of per-repeat scores against a fixed pool, "
                    "ICC of log durations across repeats, variance components of log duration, repeats needed, "
                    "and the share of faster reference pairs that are significantly faster; one row per run "
                    "(environment, campaign), each with its own repeat count, findings against documented thresholds (docs/reliability.md).")
    _common(rel, ReliabilityThresholds)
    rel.add_argument("--target-reliability", type=float, default=0.9,
                     help="target reliability of the per-problem score for 'repeats needed' (default 0.9)")
    rel.add_argument("--target-precision", type=float, default=0.05,
                     help="target relative 95%% CI width of one timing's mean (default 0.05)")
    rel.set_defaults(func=_reliability)

    dis = audit_commands.add_parser(
        "discriminability", help="do the tests separate fast from slow? (robust CV, strong-weak gap, floor)",
        description="Robust CV of every problem across its optimization tests (and a noise-aware version), the "
                    "duration-filterable share, the strong-vs-weak gap of references, per-test discrimination "
                    "and the tests whose reference median is within 2x the sandbox floor (docs/reliability.md).")
    _common(dis, DiscriminabilityThresholds)
    dis.add_argument("--floor-ms", type=float, help="sandbox floor in ms (default: median of the corpus' floor rows)")
    dis.add_argument("--method", choices=("iqr", "mad"), default="iqr", help="robust CV variant (default iqr)")
    dis.set_defaults(func=_discriminability)
