"""The ``speedaudit`` command line: one module per command, discovered by :mod:`audits.cli._main`."""

from audits.cli._main import main
from audits.cli._main import build_parser  # noqa: F401 -- reached here by the CLI tests, not exported

__all__ = ["main"]
