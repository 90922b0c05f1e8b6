"""Background load: real busy processes that reproduce a busy training worker.

``--load cpu=2,mem=1G`` starts two CPU spinners (pure-Python busy loops, one core
each) and one memory hog that allocates 1 GiB and keeps writing one byte per
page across it (resident memory and memory traffic, with a 10 ms pause per
sweep so it is not a third spinner). They run while a campaign runs and are
stopped afterwards, also on Ctrl-C or an exception (context manager), and they
die with the process that started them even when that one is killed with
SIGKILL (``PR_SET_PDEATHSIG`` plus a parent-pid check in their loops).

Example
-------
>>> spec = LoadSpec.parse("cpu=2,mem=256M")
>>> spec.cpu, spec.mem_bytes
(2, 268435456)
>>> with BackgroundLoad(spec) as load:          # doctest: +SKIP
...     run_campaign(...)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from audits.collect.sandbox import parse_size

__all__ = ["LoadSpec", "BackgroundLoad"]

# Both programs: die with the parent (prctl PR_SET_PDEATHSIG = 1, SIGKILL) and also
# stop when the parent pid changes (covers the window before prctl took effect).
_PRELUDE = (
    "import os, sys, time, ctypes\n"
    "ppid = int(sys.argv[1])\n"
    "try:\n"
    "    ctypes.CDLL(None, use_errno=True).prctl(1, 9)\n"
    "except Exception:\n"
    "    pass\n"
    "if os.getppid() != ppid:\n"
    "    sys.exit(0)\n"
)
_SPINNER = _PRELUDE + (
    "while os.getppid() == ppid:\n"
    "    for _ in range(200000):\n"
    "        pass\n"
)
_HOG = _PRELUDE + (
    "size = int(sys.argv[2])\n"
    "buf = bytearray(size)\n"
    "pages = len(range(0, size, 4096))\n"
    "value = 0\n"
    "print('ready', flush=True)\n"
    "while os.getppid() == ppid:\n"
    "    value = (value + 1) % 256\n"
    "    buf[::4096] = bytes([value]) * pages\n"
    "    time.sleep(0.01)\n"
)


@dataclass(frozen=True)
class LoadSpec:
    """How much background load: ``cpu`` spinner processes and a ``mem_bytes`` memory hog (0 = none)."""

    cpu: int = 0
    mem_bytes: int = 0

    def __post_init__(self):
        if not isinstance(self.cpu, int) or self.cpu < 0:
            raise ValueError(f"--load cpu=N needs a whole number >= 0, got {self.cpu!r}")
        if not isinstance(self.mem_bytes, int) or self.mem_bytes < 0:
            raise ValueError(f"--load mem=SIZE needs a size >= 0, got {self.mem_bytes!r}")

    @property
    def empty(self) -> bool:
        return self.cpu == 0 and self.mem_bytes == 0

    @classmethod
    def parse(cls, text: str | None) -> "LoadSpec":
        """Parse ``"cpu=2,mem=1G"`` (either part may be left out; ``""``/None = no load)."""
        if text is None or not str(text).strip() or str(text).strip() == "none":
            return cls()
        values: dict = {}
        for part in filter(None, (p.strip() for p in str(text).split(","))):
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if not sep or key not in ("cpu", "mem"):
                raise ValueError(f"--load: {part!r} is not cpu=N or mem=SIZE (write e.g. --load cpu=2,mem=1G)")
            if key in values:
                raise ValueError(f"--load: {key} is given twice")
            if key == "cpu":
                try:
                    values["cpu"] = int(value)
                except ValueError:
                    raise ValueError(f"--load: cpu={value!r} is not a whole number") from None
            else:
                values["mem_bytes"] = parse_size(value)
        return cls(**values)

    def describe(self) -> str:
        if self.empty:
            return "none"
        parts = []
        if self.cpu:
            parts.append(f"{self.cpu} CPU spinner{'s' if self.cpu != 1 else ''}")
        if self.mem_bytes:
            parts.append(f"memory hog {self.mem_bytes / (1 << 20):.0f} MiB")
        return ", ".join(parts)


class BackgroundLoad:
    """Start the busy processes of a :class:`LoadSpec`; stop them on exit.

    Use as a context manager. ``pids`` lists the running load processes.
    """

    def __init__(self, spec: LoadSpec | str | None, *, python: str | None = None):
        self.spec = spec if isinstance(spec, LoadSpec) else LoadSpec.parse(spec)
        self.python = python or sys.executable
        self._procs: list[subprocess.Popen] = []

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs if p.poll() is None]

    def start(self) -> "BackgroundLoad":
        parent = str(os.getpid())
        try:
            # Each in a session of its own: with the kernel's autogroup scheduling (on by default in Debian,
            # /proc/sys/kernel/sched_autogroup_enabled) CPU time is shared between sessions first, and the
            # sandboxed programs each start a session; spinners sharing one session would together weigh
            # as one program, so cpu=2 would contend like one spinner.
            for _ in range(self.spec.cpu):
                self._procs.append(subprocess.Popen([self.python, "-c", _SPINNER, parent], start_new_session=True,
                                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL))
            if self.spec.mem_bytes:
                hog = subprocess.Popen([self.python, "-c", _HOG, parent, str(self.spec.mem_bytes)],
                                       start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE)
                self._procs.append(hog)
                line = hog.stdout.readline()  # wait until the memory is allocated and touched
                if line.strip() != b"ready":
                    err = hog.stderr.read().decode(errors="replace").strip()[-300:]
                    raise RuntimeError(f"--load mem={self.spec.mem_bytes}: the memory hog failed to start"
                                       + (f": {err}" if err else "") + "\n  -> ask for less memory")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    proc.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 5
        for proc in self._procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        self._procs = []

    def __enter__(self) -> "BackgroundLoad":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
