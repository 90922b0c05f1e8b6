"""``speedaudit audit reliability`` and ``speedaudit audit discriminability`` (flags from their Options)."""

from __future__ import annotations

import argparse

from audits.cli._common import (add_audit_options, add_corpus_input, add_result_options, exit_status, report_audit,
                                run_audit_command)


def _command(name: str):
    def handler(args: argparse.Namespace) -> int:
        audit = run_audit_command(args, name)
        report_audit(audit, args)
        return exit_status(audit, args)
    return handler


def register(commands, audit_commands) -> None:
    rel = audit_commands.add_parser(
        "reliability", help="is the sandbox's timing repeatable? (repeat CV, rank drift, ICC, variance components)",
        description="Repeat CV and absolute sd per cell, rank drift of per-repeat scores against a fixed pool, "
                    "ICC of log durations across repeats, variance components of log duration, repeats needed, "
                    "and the share of faster reference pairs that are significantly faster; one row per run "
                    "(environment, campaign), each with its own repeat count, findings against documented thresholds (docs/reliability.md).")
    dis = audit_commands.add_parser(
        "discriminability", help="do the tests separate fast from slow? (robust CV, strong-weak gap, floor)",
        description="Robust CV of every problem across its optimization tests (and a noise-aware version), the "
                    "duration-filterable share, the strong-vs-weak gap of references, per-test discrimination "
                    "and the tests whose reference median is within 2x the sandbox floor (docs/reliability.md).")
    for name, parser in (("reliability", rel), ("discriminability", dis)):
        add_corpus_input(parser)
        add_result_options(parser)
        add_audit_options(parser, name)
        parser.set_defaults(func=_command(name))
