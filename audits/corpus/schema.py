"""The timing corpus schema: the one place that says which columns a corpus has.

One row is one execution of one solution on one test in one environment
(DESIGN.md, "The timing corpus"). Every module that reads, writes, collects or
imports a corpus takes its column names, dtypes, enumerations, defaults and the
duplicate key from here (:mod:`audits.corpus.io` validates against it,
:mod:`audits.collect` writes rows of it, :mod:`audits.corpus.runs` names runs
with it).

Columns
-------
Required (a file must have them, possibly through ``--map``):

==============  ==========  =================================================
problem         category    problem id (any text)
test            category    test id within the problem
solution        category    solution id within the problem
duration_s      float64     wall time in seconds (for a timeout: the limit)
status          category    one of :data:`STATUSES`
==============  ==========  =================================================

Optional with a default (filled when absent, :data:`OPTIONAL_DEFAULTS`):
``environment`` (category, ``"default"``: the sandbox or machine),
``campaign`` (category, ``"c0"``: one collection session), ``repeat`` (int64,
``0``), ``role`` (category of :data:`ROLES`, ``"reference"``), ``test_kind``
(category of :data:`TEST_KINDS`, ``"optimization"``). ``correct`` (bool) is
derived when absent: a solution is correct unless one of its executions is
``wrong_answer``, ``runtime_error`` or ``checker_error`` (:data:`INCORRECT_STATUSES`).
Estimators time only ``ok`` rows (``timeout`` is censored at the limit); every other
status, ``checker_error`` included, is no timing.

Optional without a default (kept when present, never invented): ``timestamp``
(when the execution ran, as UTC datetimes whatever the file held: datetimes or date
text, naive ones read as UTC; orders runs, :mod:`audits.corpus.runs`),
``language`` (category: the solution's language), ``run`` (int64 >= 0: the
process-run level inside a repeat, as pyperf has several values per process
run), and the numeric extras ``cpu_s``, ``max_rss_kb``, ``instructions``,
``input_bytes``, ``timeout_s``, ``load_1m`` (the machine's 1-minute load
average when the execution started: contention evidence) and ``cpu`` (the core a
pinned execution ran on, ``collect --pin-cpus``).

A **run** is one (environment, campaign): :data:`RUN_COLUMNS`. An execution is
identified by :data:`KEY` (plus ``run`` when the corpus has that column,
:func:`key_columns`).

The statuses are restated in :data:`stats.ranking.STATUSES` as the estimators'
input contract (stats imports nothing of audits); a test checks the two agree.

Examples
--------
>>> from audits.corpus import schema
>>> schema.STATUSES[0], schema.KEY[:2], schema.OPTIONAL_DEFAULTS["campaign"]
('ok', ('environment', 'campaign'), 'c0')
>>> schema.COLUMNS["run"].dtype, schema.COLUMNS["run"].required
('int64', False)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["UNITS", "REQUIRED", "OPTIONAL_DEFAULTS", "STATUSES", "PROCESS_STATUSES", "INCORRECT_STATUSES", "ROLES",
           "TEST_KINDS", "RUN_COLUMNS", "KEY", "DURATION_COLUMNS", "NUMERIC_EXTRAS", "key_columns"]

#: Duration units a corpus file may use (factor to seconds); ``--unit`` on the command line.
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}

#: Every status an execution can have; ``ok`` first (estimators index into this order).
#: ``checker_error``: the program ran but the package's output validator failed on its output
#: (a harness error that running again repeats, issue 22): neither a timing nor a correct run.
STATUSES = ("ok", "wrong_answer", "timeout", "runtime_error", "memory_limit", "checker_error")
#: Statuses that come from judging the output, not from how the sandboxed process ended.
CHECKER_STATUSES = ("wrong_answer", "checker_error")
#: Statuses a sandboxed process can end with.
PROCESS_STATUSES = tuple(s for s in STATUSES if s not in CHECKER_STATUSES)
#: Statuses that make a solution incorrect when the corpus has no ``correct`` label (an output
#: no validator could judge is no evidence of correctness).
INCORRECT_STATUSES = ("wrong_answer", "runtime_error", "checker_error")
#: ``reference``: pool solutions; ``candidate``: scored against the pool; ``floor``: the empty program.
ROLES = ("reference", "candidate", "floor")
#: ``correctness`` tests decide c only; ``optimization`` tests are timed and ranked.
TEST_KINDS = ("correctness", "optimization")


@dataclass(frozen=True)
class Column:
    """One corpus column: its dtype after loading, whether required, its default and allowed values."""

    name: str
    dtype: str
    required: bool = False
    default: object = None
    values: tuple[str, ...] | None = None
    description: str = ""


_COLUMNS = (
    Column("problem", "category", True, description="problem id"),
    Column("test", "category", True, description="test id within the problem"),
    Column("solution", "category", True, description="solution id within the problem"),
    Column("duration_s", "float64", True, description="wall time in seconds (a timeout: the limit)"),
    Column("status", "category", True, values=STATUSES, description="how the execution ended"),
    Column("environment", "category", default="default", description="the sandbox or machine"),
    Column("campaign", "category", default="c0", description="one collection session in an environment"),
    Column("repeat", "int64", default=0, description="repeat index of the (test, solution) cell, >= 0"),
    Column("role", "category", default="reference", values=ROLES, description="reference, candidate or floor"),
    Column("test_kind", "category", default="optimization", values=TEST_KINDS,
           description="correctness or optimization test"),
    Column("correct", "bool", description="the solution is correct (derived from the statuses when absent)"),
    Column("timestamp", "datetime64[ns, UTC]",
           description="when the execution ran (orders runs): read from dates or date text, naive ones as UTC"),
    Column("language", "category", description="language of the solution"),
    Column("run", "int64", description="process-run index inside a repeat (pyperf's runs), >= 0"),
    Column("cpu_s", "float64", description="CPU time in seconds"),
    Column("max_rss_kb", "float64", description="peak resident memory in KiB"),
    Column("instructions", "float64", description="retired instructions"),
    Column("input_bytes", "float64", description="size of the test input"),
    Column("timeout_s", "float64", description="the wall-time limit in seconds"),
    Column("load_1m", "float64", description="the machine's 1-minute load average when the execution started"),
    Column("cpu", "float64", description="the core the execution was pinned to (collect --pin-cpus)"),
)

#: Every column by name.
COLUMNS: dict[str, Column] = {c.name: c for c in _COLUMNS}
REQUIRED = tuple(c.name for c in _COLUMNS if c.required)
#: Optional columns filled with their default when absent, in this order.
OPTIONAL_DEFAULTS = {c.name: c.default for c in _COLUMNS if not c.required and c.default is not None}
#: Optional columns kept when present and never invented.
OPTIONAL = tuple(c.name for c in _COLUMNS if not c.required and c.default is None)
#: The two columns that name a run.
RUN_COLUMNS = ("environment", "campaign")
#: One execution; no two rows may share it (``run`` joins it when present: :func:`key_columns`).
KEY = RUN_COLUMNS + ("problem", "test", "solution", "repeat")
#: Text columns stored as categoricals (ids, names).
CATEGORICAL = ("problem", "test", "solution", "environment", "campaign")
#: Columns in seconds, converted from ``--unit``.
DURATION_COLUMNS = ("duration_s", "cpu_s", "timeout_s")
#: Numeric extras kept as float64 when present.
NUMERIC_EXTRAS = ("cpu_s", "max_rss_kb", "instructions", "input_bytes", "timeout_s", "load_1m", "cpu")


def key_columns(columns: Iterable[str]) -> list[str]:
    """The duplicate key of a corpus with these ``columns``: :data:`KEY`, plus ``run`` when present.

    >>> key_columns(["problem", "run"])[-2:]
    ['repeat', 'run']
    """
    return list(KEY) + (["run"] if "run" in set(columns) else [])
