"""Errors meant for the user: printed without a traceback by the CLI (exit status 1)."""

from __future__ import annotations


class UserError(Exception):
    """An error in the user's input (an option, a path, a name): the message says what to do."""
