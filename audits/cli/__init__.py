"""The ``speedaudit`` command line: one module per command, discovered by :mod:`audits.cli._main`."""

from audits.cli._main import build_parser, main

__all__ = ["build_parser", "main"]
