"""Every example of every ``--help`` text runs, as written (the rules and inputs: tests/cli/test_examples.py).

A file of its own, apart from README's examples, so that ``make test`` (``--dist loadfile``: one file per
worker) runs the two halves on two workers side by side; each module makes the same inputs (tests/cli/conftest.py's
``inputs``, cheap: the four pyperf processes behind it are a session fixture).
"""

from __future__ import annotations

import pytest

from tests.cli.test_examples import EXAMPLE_SCHEDULER, HELP_EXAMPLES, _run_all, _workdir

HELP_CASES = [(path, i, command) for path, commands in sorted(HELP_EXAMPLES.items())
              for i, command in enumerate(commands)]


@pytest.mark.slow
@pytest.mark.parametrize("path, i, command", HELP_CASES, ids=[f"{p}-{i}" for p, i, _ in HELP_CASES])
def test_help_examples_run(path, i, command, tmp_path, inputs, request):
    # The examples of one --help are alternatives, not steps: each runs in its own fresh directory.
    cluster = request.getfixturevalue("cluster") if EXAMPLE_SCHEDULER in command else None
    _run_all([command], _workdir(tmp_path, inputs), where=f"'{path} --help' example {i + 1}", cluster=cluster)
