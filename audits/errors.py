"""Errors meant for the user, shared by every layer.

:class:`UserError` is the one base: a corpus that cannot be used
(:class:`audits.corpus.io.CorpusError`), a path that is not a suite
(``SuiteError``), a sandbox or campaign that cannot run (``SandboxError``,
``CampaignError``), a reward-environment file that does not parse
(``EnvironmentFileError``), a report that cannot render (``ReportError``) all
derive from it. The command line prints any ``UserError`` without a traceback
(exit status 1); library callers catch the specific class or ``UserError``.
Each message says what is wrong (naming the file, column, row or program) and
what to do. This module imports nothing, so every layer (corpus, collect, the
audits, report, cli) can import it without importing the others.
"""

from __future__ import annotations

__all__ = ["UserError"]


class UserError(Exception):
    """An error in the user's input (an option, a path, a name, a file): the message says what to do."""
