"""The ``speedaudit`` command line.

Each sub-command lives in its own module under :mod:`audits.cli` and
exposes ``register(commands, audit_commands)``, which adds its parsers to the
top-level sub-parsers and (for audits) to those of ``speedaudit audit``. A
parser stores its handler as ``func``; handlers return an exit status.
Errors meant for the user (bad corpus, bad option) are printed without a
traceback and exit with status 1 (2 for usage errors, as argparse does).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from audits import version
from audits.errors import UserError  # defined apart so `python -m audits.cli` and imports share one class

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="speedaudit",
        description=(
            "Audit the measurement chain behind runtime-based rewards for code: is the sandbox's timing "
            "repeatable, can stored reference timings be calibrated onto today's service, do the tests "
            "separate fast from slow programs, which aggregation is stable, and is the reward learnable."
        ),
        epilog="Run 'speedaudit COMMAND --help' for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"speedaudit {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    audit = commands.add_parser("audit", help="run one audit on a corpus and print its findings",
                                description="Run one audit on a timing corpus and print its findings.")
    audit_commands = audit.add_subparsers(dest="audit", metavar="AUDIT")
    audit_commands.required = True
    package = importlib.import_module("audits.cli")
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue  # _main, _common and __main__ are not commands
        module = importlib.import_module(f"audits.cli.{info.name}")
        module.register(commands, audit_commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:  # CorpusError and every other layer's error derive from it
        print(f"speedaudit: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("speedaudit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # 'speedaudit suite ... | head': the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's final flush of stdout must not fail again
        return 141


if __name__ == "__main__":
    sys.exit(main())
