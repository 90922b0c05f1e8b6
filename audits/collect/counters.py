"""Instruction counters: the command that counts a program's instructions, and the parse of its report.

Issue 25 item 2 (``collect --measure instructions``). This module holds the parts that do not
depend on a sandbox: which tool counts, how its report reaches the collector without passing
through anything the program can write, and how the report is read.

Tools
    ``perf`` where the machine has hardware counters: ``perf stat -x, -e instructions:u``. Its
    exit code says nothing (on a VM without a PMU ``perf stat -e instructions true`` exits 0 and
    prints ``<not supported>``), so :func:`parse_perf` reads its output. Otherwise ``valgrind``
    (cachegrind without the cache simulation: every guest instruction is counted; the same count
    on repeats of a deterministic program, about 25x the wall time of a Python program on this machine).
    Deterministic includes where it is: an interpreter hashes its program's path into its dicts
    (sys.path, import caches), so the same script under another folder name counts a few dozen
    instructions differently (measured: 46-132 of 55.6 M); the job's scratch folder, whose name is
    random, moves nothing (measured: 0 over 8 runs, both sandboxes). What a program reads of its pid
    (not namespaced under ``local``), clock or environment moves its count by what it does with it:
    formatting a 3-, 4- or 5-digit pid differs by 74-157 instructions of 43.7 M.
The report's channel (valgrind)
    The program runs *inside* valgrind's process, so anything valgrind can write by path the program
    can write too. The report therefore goes to a descriptor only valgrind can use: a small bash
    step (:func:`valgrind_argv`) sets ``RLIMIT_NOFILE`` to :data:`NOFILE` (soft = hard), moves the
    collector's pipe from its inherited number to :data:`LOG_FD` and closes the original, then
    execs valgrind with ``--log-fd=LOG_FD``. With soft = hard valgrind cannot raise the limit, so it
    reserves the top 12 descriptors below it for itself (``NOFILE - 12`` and up, ``LOG_FD`` among
    them) and refuses every system call of the program on them (EBADF). The pipe is the
    collector's (root, mode 0600: ``Sandbox.run(report=True)`` makes it and hands it to the program
    as fd 3 under ``local`` and ``bwrap``), so that a program of another uid cannot reopen it
    through ``/proc/self/fd`` (a program of the *same* uid can: measured). A program that writes a
    fake summary to its standard output or error, or to any descriptor it has, or reopens the
    report through /proc, changes nothing (tests/collect/test_instructions.py, in every sandbox).
    ``--vgdb=no``: no gdbserver FIFOs in the program's /tmp. What this does not cover: valgrind
    is not a security boundary; a program that writes into valgrind's own memory (the same
    address space), or reopens valgrind's *other* reserved descriptors (its semaphore pipe is
    the program's uid's), can make it abort: no count (None), never a chosen one (tested).
Reading the report
    :func:`parse_valgrind_log`: the sum, over processes, of cachegrind's ``==PID== I   refs: N``
    lines (children are followed, ``--trace-children=yes``, so work moved into a child process
    that exec'd is counted); a line without valgrind's own ``==PID==`` prefix is not valgrind's
    (client requests print ``**PID**``). No summary (killed at the limit, valgrind failed), two
    for one pid, a process that exec'd (valgrind drops its count before the exec), one that
    started and left none, or a fork without exec (its count includes its parent's up to the
    fork) is ``None`` with the reason: n/a for that row, never 0.
Python's hash randomisation
    fixed with ``PYTHONHASHSEED=0`` (:data:`FIXED_ENVIRONMENT`) in every counted run, and recorded
    in the campaign manifest: without it set iteration order, and so the instruction count, changes
    from run to run.
The interpreter
    the real binary (:func:`resolved_binary`): a pyenv shim is a bash script, and valgrind would
    count bash.
The time limit
    :func:`counted_wall_limit`: ``--timeout`` times the measured slowdown (the counted floor's wall
    time over the native floor's, at least 1), so a program that fits the limit natively fits it
    counted.

Examples
--------
>>> log = "==7== Command: prog\\n==7== I   refs:      1,234,567\\n"
>>> parse_valgrind_log(log)
(1234567, '')
>>> parse_valgrind_log("I   refs: 5\\n")[0] is None
True
"""

from __future__ import annotations

import collections
import math
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FIXED_ENVIRONMENT", "parse_valgrind_log", "valgrind_argv", "resolved_binary", "counted_wall_limit"]

#: RLIMIT_NOFILE (soft = hard) of a counted run: valgrind reserves descriptors NOFILE - 12 .. NOFILE - 1.
NOFILE = 1024
#: Where valgrind's report goes: inside that reserved range, out of the program's reach.
LOG_FD = NOFILE - 4
#: Set in every counted run (recorded in the manifest).
FIXED_ENVIRONMENT = {"PYTHONHASHSEED": "0"}

_SUMMARY = re.compile(r"^==(\d+)== I\s+refs:\s+([\d,]+)\s*$")
#: valgrind's preamble line, once per program image a process runs (again after an exec)
_COMMAND = re.compile(r"^==(\d+)== Command: ")
_PERF_LINE = re.compile(r"^\s*([\d.,]+|<not supported>|<not counted>),[^,]*,(instructions[^,]*)")


@dataclass(frozen=True)
class Counter:
    """The tool that counts instructions here: ``name`` (perf or valgrind), its ``path`` and ``version``."""

    name: str
    path: str
    version: str

    def to_dict(self) -> dict:
        return {"tool": self.name, "path": self.path, "version": self.version}


def parse_valgrind_log(text: str | bytes) -> tuple[int | None, str]:
    """Instructions from a cachegrind log: ``(count, "")``, or ``(None, reason)``.

    The count is the sum over processes (pids) of their ``==PID== I   refs: N`` summary, where
    every process started a program of its own (one ``==PID== Command:`` line: the program, and
    each child that exec'd). It is ``None`` when the log cannot account for every process:
    a pid with two summaries; a pid whose program started twice (it exec'd: valgrind drops what
    it counted before an exec, so a program could hide its work behind ``exec /bin/true``); a pid
    that started but left no summary (killed by a signal); a summary without a ``Command:`` line,
    i.e. a child that forked without exec: its count *includes its parent's up to the fork*
    (measured: 213 M of a parent's 220 M), so summing would count that twice. Other lines are
    ignored. (``Command:`` lines cannot be forged through argv: valgrind escapes newlines in it.)
    Not seen: a forked child killed by a signal leaves no line at all, so its work is missing.

    >>> parse_valgrind_log("==1== Command: a\\n==2== Command: b\\n==1== I   refs: 10\\n==2== I   refs: 5\\n")
    (15, '')
    >>> parse_valgrind_log("==1== I   refs: 10\\n==1== I   refs: 5\\n")
    (None, 'two instruction summaries for pid 1: the log is not one valgrind run per process')
    >>> parse_valgrind_log("==1== Command: a\\n==1== Command: b\\n==1== I   refs: 5\\n")[1]
    "process 1 exec'd a new program: valgrind drops what it counted before an exec"
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    counts: dict[str, int] = {}
    started: collections.Counter = collections.Counter()
    for line in text.splitlines():
        command = _COMMAND.match(line)
        if command:
            started[command.group(1)] += 1
            continue
        match = _SUMMARY.match(line)
        if not match:
            continue
        pid, number = match.group(1), int(match.group(2).replace(",", ""))
        if pid in counts:
            return None, f"two instruction summaries for pid {pid}: the log is not one valgrind run per process"
        counts[pid] = number
    if not counts:
        return None, ("no instruction summary in valgrind's report (killed at the limit, exec'd out of "
                      "valgrind, or valgrind failed)")
    forked = sorted(set(counts) - set(started))
    if forked:
        return None, (f"process {forked[0]} forked without exec: valgrind's count for it includes its parent's "
                      f"up to the fork, so the sum over processes would count that twice")
    for pid, n in sorted(started.items()):
        if n > 1:
            return None, f"process {pid} exec'd a new program: valgrind drops what it counted before an exec"
        if pid not in counts:
            return None, (f"process {pid} left no instruction summary (killed by a signal?): its "
                          f"instructions are not in the count")
    return sum(counts.values()), ""


def parse_perf(text: str | bytes) -> tuple[int | None, str]:
    """Instructions from ``perf stat -x,`` output: ``(count, "")`` or ``(None, reason)``.

    ``<not supported>`` (no hardware counter) and ``<not counted>`` are ``None``: perf's exit code is 0
    in both cases, so only its output tells.

    >>> parse_perf("123456,,instructions:u,1000,100.00,,\\n")
    (123456, '')
    >>> parse_perf("<not supported>,,instructions:u,0,100.00,,\\n")
    (None, 'perf: instructions <not supported> (no hardware counter)')
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for line in text.splitlines():
        match = _PERF_LINE.match(line)
        if not match:
            continue
        value = match.group(1)
        if value.startswith("<"):
            return None, f"perf: instructions {value} (no hardware counter)"
        try:
            return int(float(value.replace(",", ""))), ""
        except ValueError:
            break
    return None, "perf printed no instructions line"


def resolved_binary(path: str) -> str:
    """The real executable behind ``path`` (links resolved); a script (``#!``, e.g. a pyenv shim) is refused.

    Raises
    ------
    ValueError
        ``path`` is not an executable ELF file.
    """
    found = shutil.which(path) or path
    real = os.path.realpath(found)
    try:
        with open(real, "rb") as handle:
            head = handle.read(4)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the interpreter ({exc.strerror})") from None
    if head != b"\x7fELF":
        raise ValueError(f"{path} ({real}) is not a binary (a script such as a pyenv shim?): an instruction "
                         f"counter would count the script's shell\n  -> give the real interpreter, e.g. "
                         f"--python $(python3 -c 'import os,sys; print(os.path.realpath(sys.executable))')")
    return real


def valgrind_argv(argv: Sequence[str], *, inherited_fd: int, valgrind: str = "/usr/bin/valgrind",
                  bash: str = "/bin/bash") -> list[str]:
    """``argv`` counted by cachegrind, its report written to the pipe the program inherited at ``inherited_fd``.

    See "The report's channel" in the module docstring: the bash step moves that pipe into valgrind's
    reserved range (:data:`LOG_FD`) and closes the original before valgrind starts; it also sets
    :data:`FIXED_ENVIRONMENT`.
    """
    env = " && ".join(f"export {k}={v}" for k, v in FIXED_ENVIRONMENT.items())
    step = (f'ulimit -n {NOFILE} && exec {LOG_FD}>&{int(inherited_fd)} {int(inherited_fd)}>&- && {env} '
            f'&& exec "$@"')
    return [bash, "-c", step, "speedaudit-count", valgrind, "--tool=cachegrind", "--cache-sim=no",
            "--cachegrind-out-file=/dev/null", "--trace-children=yes", "--vgdb=no", f"--log-fd={LOG_FD}", *map(str, argv)]


def counted_wall_limit(timeout_s: float, *, native_floor_s: float, counted_floor_s: float) -> tuple[float, float]:
    """The wall limit of a counted run and the slowdown it is scaled by: ``(timeout_s * slowdown, slowdown)``.

    ``slowdown = max(1, counted_floor_s / native_floor_s)``: the empty program of the language, counted
    over natively (medians of a few runs each). The empty program is all start-up, which the counter
    slows more than computation (valgrind's own start-up), so the rule errs on the long side.

    >>> counted_wall_limit(2.0, native_floor_s=0.02, counted_floor_s=1.0)
    (100.0, 50.0)
    """
    if not (native_floor_s > 0 and math.isfinite(counted_floor_s)):
        raise ValueError("counted_wall_limit needs a positive native floor time and a finite counted one")
    slowdown = max(1.0, counted_floor_s / native_floor_s)
    return timeout_s * slowdown, slowdown


def _version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else ""


def find_counter() -> Counter | None:
    """perf when ``perf stat -e instructions:u`` counts here (read from its output), else valgrind, else None."""
    perf = shutil.which("perf")
    if perf:
        try:
            done = subprocess.run([perf, "stat", "-x,", "-e", "instructions:u", "--", "/bin/true"],
                                  capture_output=True, text=True, timeout=20)
            count, _ = parse_perf(done.stderr)
        except (OSError, subprocess.TimeoutExpired):
            count = None
        if count is not None:
            return Counter("perf", perf, _version([perf, "--version"]))
    valgrind = shutil.which("valgrind")
    if valgrind:
        return Counter("valgrind", os.path.realpath(valgrind), _version([valgrind, "--version"]))
    return None
