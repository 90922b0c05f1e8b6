"""Sandboxes: run one program on one input under limits, and measure it.

A sandbox runs ``argv`` with its standard input read from a file, in a fresh
scratch directory, under resource limits, and returns an :class:`Execution`:
status, wall seconds, CPU seconds, peak resident memory, exit code or signal,
where its (capped) standard output went and the tail of its standard error.

Backends (``make_sandbox(spec)``):

``local`` (:class:`LocalSandbox`)
    A child process in a new session (its own process group) with a scrubbed
    environment, rlimits (address space, CPU, file size, process count, no core
    dumps), running under an unprivileged uid when we are root (RLIMIT_NPROC is
    not enforced for root), killed as a whole group at the wall-clock limit.
``bwrap`` (:class:`BwrapSandbox`)
    The same, inside bubblewrap: read-only root, private ``/tmp``, only the
    scratch directory writable, no network (``--unshare-all``: own user, pid,
    net, ipc, uts and cgroup namespaces), dies with its parent.
``cmd:TEMPLATE`` (:class:`CommandSandbox`)
    Any other sandbox command, e.g. ``cmd:prlimit --as={memory_bytes} -- {argv}``.
    Placeholders: ``{argv}`` (a token that expands to the program's argv),
    ``{argv_str}`` (the argv shell-quoted into one string), ``{workdir}``
    (the scratch directory), ``{stdin}``, ``{wall_s}``, ``{cpu_s}``,
    ``{memory_bytes}``, ``{memory_mb}``, ``{nproc}``, ``{file_bytes}``, ``{uid}``.
    The command runs as the calling user with the wall-clock kill and output
    cap of this module; the external sandbox is responsible for the rest.

Timing: wall seconds are the launcher's monotonic clock from the moment its child takes
the request (bwrap: from the inner launcher's child's own reading, inside the sandbox) to
the reap of the program. CPU seconds and peak memory are the program's whole process tree's:
from a cgroup per run when the cgroup v1 memory and cpuacct hierarchies can be used (as root),
else the rusage of every process the launcher reaps (:func:`accounting`, ``Execution.accounting``).
What the sandbox still costs is timed separately as the *floor* (DESIGN.md).

Status rules (``wrong_answer`` is set by the caller after the output check):

* ``timeout``: killed at the wall-clock limit, or by the CPU limit (SIGXCPU,
  or SIGKILL once the CPU time reached the limit).
* ``memory_limit``: the program failed (non-zero exit or a signal) and either
  its standard error names an allocation failure (``MemoryError``,
  ``std::bad_alloc``, ``Cannot allocate memory``, ``out of memory``), or it
  was killed by SIGKILL that the runner did not send while its peak RSS was at
  least 90 % of the memory limit (a cgroup / OOM kill).
* ``runtime_error``: any other failure: non-zero exit, a signal (segfault,
  abort, SIGXFSZ from the file-size limit, killing its own process group),
  more output than the output cap (the runner kills it: "output limit"),
  or a program that could not be started.
* ``ok``: exit status 0.

Example
-------
>>> from audits.collect.sandbox import LocalSandbox, Limits
>>> box = LocalSandbox()                                         # doctest: +SKIP
>>> ex = box.run(["/usr/bin/python3", "-c", "print(input())"],   # doctest: +SKIP
...              stdin_path="in.txt", workdir="/tmp/job1", limits=Limits(wall_s=2))
>>> ex.status, round(ex.wall_s, 3)                               # doctest: +SKIP
('ok', 0.021)
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import errno
import fcntl
import functools
import hashlib
import importlib.resources
import math
import os
import resource
import selectors
import shlex
import shutil
import signal as _signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from audits.corpus.schema import PROCESS_STATUSES
from audits.errors import UserError

__all__ = [
    "Limits",
    "Execution",
    "SandboxError",
    "Sandbox",
    "LocalSandbox",
    "BwrapSandbox",
    "CommandSandbox",
    "make_sandbox",
    "strongest_sandbox",
    "launcher_source",
    "LAUNCHER",
    "parse_size",
    "scratch_root",
    "fast_tmp",
    "stage_program",
    "RUN_STATUSES",
    "accounting",
    "REPORT_BYTES",
]

RUN_STATUSES = PROCESS_STATUSES
_MEMORY_MARKERS = ("memoryerror", "std::bad_alloc", "cannot allocate memory", "out of memory")
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
#: What every program's view has (read-only): the system directories.
_SYSTEM_PREFIXES = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/etc/")
_READ = 1 << 16
#: The most of a report channel kept (``run(report=True)``): a counter's report is a few lines per
#: process; a run whose report is longer is flagged (``Execution.report_truncated``), not cut silently.
REPORT_BYTES = 4 << 20
#: The fields of the launcher's ``done`` line (see :func:`_parse_report`).
_DONE_FIELDS = 11
#: Appended to a run's reason when some process of its tree was still there 2 s after the program
#: ended (the kernel held it: the launcher stops waiting then, see DRAIN_NS in launcher.c).
UNDRAINED_NOTE = ("; accounting incomplete: a process of the program's tree had not exited 2 s after the "
                  "program ended (cpu_s and max_rss_kb may miss what it did last)")


class SandboxError(UserError, RuntimeError):
    """The sandbox itself cannot be used (missing tool, bad directory, bad template)."""


def parse_size(text: str | int) -> int:
    """Parse a byte size such as ``"1G"``, ``"256M"``, ``"64k"`` or ``"1048576"``.

    Suffixes are binary (K = 1024). ``parse_size("1G") == 1 << 30``.
    """
    if isinstance(text, int):
        return text
    units = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    raw = str(text).strip().upper().removesuffix("IB").removesuffix("B") if str(text).strip() else ""
    number = raw.rstrip("KMGT")
    suffix = raw[len(number):]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (write e.g. 1G, 256M, 64K or a number of bytes)") from None
    if suffix not in units or value < 0 or not math.isfinite(value):
        raise ValueError(f"not a size: {text!r} (write e.g. 1G, 256M, 64K or a number of bytes)")
    return int(value * units[suffix])


@dataclass(frozen=True)
class Limits:
    """Resource limits of one execution.

    Parameters
    ----------
    wall_s : float
        Wall-clock limit; at it the whole process group is killed (status ``timeout``).
    memory_bytes : int or None
        Address-space limit (RLIMIT_AS), default 1 GiB. None = unlimited.
    cpu_s : float or None
        CPU-time limit (RLIMIT_CPU, soft = ceil(cpu_s), hard = soft + 1). None = none
        (the wall-clock limit still applies).
    file_bytes : int
        Largest file the program may write (RLIMIT_FSIZE), default 64 MiB.
    nproc : int
        Processes/threads its uid may have (RLIMIT_NPROC), default 64.
    output_bytes : int
        Standard output kept; a program that writes more is killed ("output limit",
        ``runtime_error``) and ``stdout_truncated`` is set. Default 64 MiB.
    stderr_bytes : int
        Tail of standard error kept in ``Execution.stderr_tail`` (default 4096).
    stderr_limit : int
        Standard error a program may write; more is killed like too much output
        ("output limit", ``runtime_error``) instead of being drained. Default 1 MiB.
    scratch_bytes : int
        Size of the program's private tmpfs (its scratch directory, /tmp, /var/tmp and
        /dev/shm together under ``local``; each of them under ``bwrap``); a write beyond it
        fails with ENOSPC. Default 256 MiB.
    """

    wall_s: float = 10.0
    memory_bytes: int | None = 1 << 30
    cpu_s: float | None = None
    file_bytes: int = 64 << 20
    nproc: int = 64
    output_bytes: int = 64 << 20
    stderr_bytes: int = 4096
    stderr_limit: int = 1 << 20
    scratch_bytes: int = 256 << 20

    def __post_init__(self):
        if not (isinstance(self.wall_s, (int, float)) and math.isfinite(self.wall_s) and self.wall_s > 0):
            raise ValueError(f"Limits.wall_s must be a positive number of seconds, got {self.wall_s!r}")
        if self.memory_bytes is not None and self.memory_bytes < (16 << 20):
            raise ValueError(f"Limits.memory_bytes must be at least 16 MiB (an interpreter needs that "
                             f"to start), got {self.memory_bytes!r}")
        if self.cpu_s is not None and not self.cpu_s > 0:
            raise ValueError(f"Limits.cpu_s must be positive or None, got {self.cpu_s!r}")
        for name in ("file_bytes", "nproc", "output_bytes", "stderr_bytes", "stderr_limit", "scratch_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive integer, got {value!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def rlimits(self) -> list[tuple[int, tuple[int, int]]]:
        """The (resource, (soft, hard)) pairs applied in the child."""
        pairs = [
            (resource.RLIMIT_CORE, (0, 0)),
            (resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes)),
            (resource.RLIMIT_NPROC, (self.nproc, self.nproc)),
        ]
        if self.memory_bytes is not None:
            pairs.append((resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes)))
        if self.cpu_s is not None:
            soft = max(1, math.ceil(self.cpu_s))
            pairs.append((resource.RLIMIT_CPU, (soft, soft + 1)))
        return pairs


@dataclass(frozen=True)
class Execution:
    """What one run of one program did.

    ``status`` is one of ok | timeout | runtime_error | memory_limit (the caller
    may turn ``ok`` into ``wrong_answer`` with :meth:`with_status`). ``reason`` says
    why in words ("exit 1", "killed by SIGSEGV", "wall limit 1 s", ...).
    """

    status: str
    wall_s: float
    cpu_s: float
    max_rss_kb: int
    exit_code: int | None
    signal: int | None
    stdout_path: Path | None
    stdout_bytes: int
    stdout_truncated: bool
    stderr_tail: str
    reason: str
    sandbox: str = "local"
    #: how cpu_s and max_rss_kb were taken: ``cgroup`` (the run's own cgroup: every process of
    #: its tree, also children never waited for) or ``rusage`` (every process the launcher
    #: reaped; a child the kernel reaped itself, SIGCHLD ignored, is missed): see accounting()
    accounting: str = "rusage"
    #: ``run(report=True)``: what arrived on the report channel (the program's fd 3), at most
    #: :data:`REPORT_BYTES`; None without a channel
    report: bytes | None = None
    #: the report channel carried more than :data:`REPORT_BYTES` (the rest was not read)
    report_truncated: bool = False

    def with_status(self, status: str, reason: str) -> "Execution":
        return dataclasses.replace(self, status=status, reason=reason)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["stdout_path"] = None if self.stdout_path is None else str(self.stdout_path)
        out["report"] = None if self.report is None else self.report.decode("utf-8", "replace")
        return out


def fast_tmp() -> str | None:
    """``/dev/shm`` when it is a writable tmpfs, else None (the system temp dir).

    Scratch directories are created and removed for every execution; on a disk
    file system mounted with ``discard`` that costs milliseconds per run (we measured
    6-8 ms for an empty directory on ext4), on tmpfs microseconds.
    """
    shm = "/dev/shm"
    try:
        if os.path.isdir(shm) and os.access(shm, os.W_OK) and os.statvfs(shm).f_bavail > 0:
            return shm
    except OSError:
        pass
    return None


def scratch_root(prefix: str = "speedaudit-", *, base: str | os.PathLike | None = None) -> Path:
    """A fresh directory that unprivileged uids can traverse (0711).

    Under ``base``, else ``/dev/shm`` (tmpfs) when usable, else the system temp dir.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base if base is not None else fast_tmp()))
    os.chmod(path, 0o711)
    return path


def stage_program(argv: list[str] | tuple[str, ...], stage_dir: str | os.PathLike, *,
                  keep: tuple[str, ...] = ("/usr/", "/bin/", "/lib", "/opt/", "/etc/")) -> list[str]:
    """Copy the files a program's argv names into a world-readable directory.

    The sandboxed uid cannot read files under a private directory (e.g. root's home
    or a 0700 temp dir). Every argv element that is an existing regular file outside
    the system directories in ``keep`` is copied to ``stage_dir/<k>/<name>`` with
    mode 0755 (0644 if not executable), and the argv is rewritten to point there.
    """
    stage_dir = Path(stage_dir)
    out = []
    for k, item in enumerate(argv):
        path = Path(item)
        if path.is_absolute() and path.is_file() and not str(path).startswith(keep):
            target_dir = stage_dir / str(k)
            target_dir.mkdir(parents=True, exist_ok=True)
            os.chmod(stage_dir, 0o755)
            os.chmod(target_dir, 0o755)
            target = target_dir / path.name
            shutil.copy2(path, target)
            executable = os.stat(path).st_mode & stat.S_IXUSR
            os.chmod(target, 0o755 if executable else 0o644)
            out.append(str(target))
        else:
            out.append(str(item))
    return out


#: First uid of the blocks the sandboxes lease (decision: far above the uids a distribution
#: hands out and above the 100000-164000 range of speedaudit's older pid-derived blocks, so a
#: campaign of an older version cannot collide either).
UID_BASE = 3_000_000
UID_BLOCK = 64
UID_BLOCKS = 1000


def _machine_dir(name: str) -> Path:
    """A directory for the whole machine under /run/lock (else /run, /var/lock, the temp dir)."""
    for candidate in ("/run/lock", "/run", "/var/lock"):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK):
            return Path(candidate) / name
    return Path(tempfile.gettempdir()) / name


def _lease_dir() -> Path:
    """Where uid-block leases live: one directory for the whole machine (root-owned, 0755)."""
    if os.environ.get("SPEEDAUDIT_UID_LEASES"):
        return Path(os.environ["SPEEDAUDIT_UID_LEASES"])
    return _machine_dir("speedaudit-uids")


class _UidPool:
    """Unprivileged uids for the runs of this process, from a block leased for the machine.

    Concurrent campaigns (processes) on one machine must never share a uid: a run's
    end-of-run sweep kills every process of its uid, and RLIMIT_NPROC counts them. So each
    process leases a block of ``UID_BLOCK`` uids, ``UID_BASE + b * UID_BLOCK + k``, by an
    exclusive ``flock`` on ``<lease dir>/block-<b>.lock`` that it holds for its lifetime
    (the kernel drops it when the process dies, even by SIGKILL). It tries blocks from
    ``$SPEEDAUDIT_UID_BLOCK`` (default: pid mod ``UID_BLOCKS``) upwards and takes the first
    free one; on taking a block it kills what a dead holder may have left under its uids.
    A forked copy of the process leases a block of its own.

    Within the block, concurrent runs each get their own uid, handed out in rotation, and a
    uid is reused only after at least ``MIN_POOL - 1`` other runs: RLIMIT_NPROC counts
    killed children that are still zombies. The uids need no /etc/passwd entry.
    """

    MIN_POOL = 8
    MAX_POOL = UID_BLOCK

    def __init__(self):
        self._lock = threading.Lock()
        self._free: collections.deque[int] = collections.deque()
        self._minted = 0
        self._block: int | None = None
        self._lease_fd: int | None = None
        self._owner: int | None = None

    @property
    def block(self) -> int:
        """The leased block (leases one on first use)."""
        with self._lock:
            return self._ensure_block()

    def _ensure_block(self) -> int:
        if self._block is not None and self._owner == os.getpid():
            return self._block
        # first use, or a forked copy: the flock we inherited is our parent's
        self._free.clear()
        self._minted = 0
        folder = _lease_dir()
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o755)
        hint = os.environ.get("SPEEDAUDIT_UID_BLOCK")
        start = int(hint) % UID_BLOCKS if hint and hint.strip().isdigit() else os.getpid() % UID_BLOCKS
        for step in range(UID_BLOCKS):
            block = (start + step) % UID_BLOCKS
            fd = os.open(folder / f"block-{block:03d}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self._block, self._lease_fd, self._owner = block, fd, os.getpid()
            first = UID_BASE + block * UID_BLOCK
            for uid in _live_uids(range(first, first + UID_BLOCK)):
                _kill_uid(uid)  # left by a holder that died: ours now
            return block
        raise SandboxError(f"all {UID_BLOCKS} uid blocks in {folder} are leased by running processes\n"
                           f"  -> wait for other campaigns to finish")

    def _uid(self, k: int) -> int:
        return UID_BASE + self._block * UID_BLOCK + k

    def acquire(self) -> int:
        with self._lock:
            self._ensure_block()
            if self._minted < self.MIN_POOL or (not self._free and self._minted < self.MAX_POOL):
                self._minted += 1
                return self._uid(self._minted - 1)
            if self._free:
                return self._free.popleft()
            return self._uid(0)  # more than MAX_POOL concurrent runs: share

    def release(self, uid: int) -> None:
        with self._lock:
            if self._block is not None and self._uid(0) <= uid < self._uid(UID_BLOCK):
                self._free.append(uid)

    def issued(self) -> list[int]:
        with self._lock:
            if self._block is None or self._owner != os.getpid():
                return []
            return [self._uid(k) for k in range(self._minted)]


def _live_uids(uids) -> set[int]:
    """Which of ``uids`` own a process now (one pass over /proc)."""
    wanted = set(uids)
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                uid = os.stat(f"/proc/{entry}").st_uid
            except OSError:
                continue
            if uid in wanted:
                found.add(uid)
    return found


_UIDS = _UidPool()
_traversable_ok: set[str] = set()


def _check_traversable(path: Path, uid: int) -> None:
    """Raise SandboxError when an unprivileged uid cannot reach ``path``."""
    key = str(path)
    if key in _traversable_ok:
        return
    for parent in [path, *path.parents]:
        st = os.stat(parent)
        if st.st_uid != uid and not st.st_mode & stat.S_IXOTH:
            raise SandboxError(
                f"{path}: the sandbox runs programs as uid {uid}, which cannot enter {parent} "
                f"(mode {stat.filemode(st.st_mode)})\n  -> put the work directory under a world-traversable "
                f"directory, e.g. audits.collect.sandbox.scratch_root() (campaigns do this for you)")
    _traversable_ok.add(key)


def _split_wait(wstatus: int) -> tuple[int | None, int | None]:
    if os.WIFSIGNALED(wstatus):
        return None, os.WTERMSIG(wstatus)
    return os.WEXITSTATUS(wstatus), None


def _decode_status(code: int | None, sig: int | None) -> str:
    if sig is not None:
        try:
            return f"killed by {_signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exit {code}"


# The launcher: a small C program between the runner and the measured program
# (audits/collect/launcher.c, shipped as package data; its header says what it does and why
# it is hand-written). It is compiled once per machine into the cache, under a name that
# carries the SHA-256 of its source, so that versions of speedaudit sharing one cache never
# run each other's launcher.
_LAUNCHER_SOURCE = "launcher.c"


def launcher_source() -> bytes:
    """The launcher's C source (package data beside this module)."""
    return (importlib.resources.files("audits.collect") / _LAUNCHER_SOURCE).read_bytes()


#: What :func:`launcher_path` found, once per process: ``{"path": the compiled launcher, or None}``; setting
#: ``"path"`` first makes the sandboxes run that binary (benchmarks/bench_runner.py --launcher).
LAUNCHER: dict[str, str | None] = {}
_LAUNCHER_LOCK = threading.Lock()


def launcher_path() -> str | None:
    """The compiled launcher (built once per machine into the cache), or None without a C compiler.

    Cache: ``$SPEEDAUDIT_CACHE`` or ``$XDG_CACHE_HOME/speedaudit`` or ``~/.cache/speedaudit``.
    """
    with _LAUNCHER_LOCK:
        if "path" in LAUNCHER:
            return LAUNCHER["path"]
        compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")
        source = launcher_source()
        digest = hashlib.sha256(source).hexdigest()[:16]
        base = os.environ.get("SPEEDAUDIT_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "speedaudit")
        target = Path(base) / f"sa-launch-{digest}"
        path = None
        if target.is_file() and os.access(target, os.X_OK):
            path = str(target)
        elif compiler:
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
                src = Path(tmp) / "sa-launch.c"
                src.write_bytes(source)
                exe = Path(tmp) / "sa-launch"
                # static where the C library's archive is installed: bwrap execs the launcher once per
                # run, and a static one starts without the dynamic loader (85.7 -> 87.6 % of a bare
                # loop's runs/s under bwrap, measured 2026-12-06 on this machine, idle); else dynamic
                for static in (["-static"], []):
                    done = subprocess.run([compiler, "-x", "c", "-O2", "-pthread", *static, "-o", str(exe), str(src)],
                                          capture_output=True)
                    if done.returncode == 0:
                        break
                if done.returncode == 0:
                    os.replace(exe, target)
                    path = str(target)
        LAUNCHER["path"] = path
        return path


_CGROUP: dict[str, tuple[str, ...]] = {}
#: The controllers a run's cgroup needs (cgroup v1): CPU of every task, and memory (peak, limit).
_CGROUP_CONTROLLERS = ("memory", "cpuacct")


def _cgroup_bases() -> tuple[str, ...]:
    """Folders for per-run cgroups: ``<hierarchy><this process's cgroup>/speedaudit``, one per
    cgroup v1 hierarchy of memory and cpuacct, or () when they cannot be used here.

    Detected once per process from /proc/self/mountinfo and /proc/self/cgroup, as root only
    (a cgroup's files are root's). Nested under the runner's own cgroup, so every limit the
    runner lives under still holds for its programs. cgroup v2 is not used: a cgroup that holds
    processes cannot enable controllers for children (the "no internal processes" rule), so it
    needs a delegated cgroup (``systemd-run --scope -p Delegate=yes``); without v1 hierarchies
    the runs are accounted by rusage (see :func:`accounting`).
    """
    with _LAUNCHER_LOCK:
        if "bases" in _CGROUP:
            return _CGROUP["bases"]
        bases: list[str] = []
        if os.geteuid() == 0:
            try:
                bases = _find_cgroup_bases()
            except OSError:
                bases = []
        _CGROUP["bases"] = tuple(bases)
        return _CGROUP["bases"]


def _find_cgroup_bases() -> list[str]:
    mounts: dict[str, tuple[str, str]] = {}  # controller -> (mount point, root of the mount)
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] != "cgroup":
            continue
        for option in tail[2].split(","):
            if option in _CGROUP_CONTROLLERS and option not in mounts:
                mounts[option] = (fields[4], fields[3])
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                own[controller] = parts[2]
    bases: list[str] = []
    for controller in _CGROUP_CONTROLLERS:
        if controller not in mounts or controller not in own:
            return []
        point, root = mounts[controller]
        path = own[controller]
        if root != "/" and (path == root or path.startswith(root + "/")):
            path = path[len(root):]
        base = os.path.join(point, path.lstrip("/"), "speedaudit")
        if not os.path.isdir(base):
            os.mkdir(base, 0o755)
        if not os.access(base, os.W_OK) or base in bases:
            continue
        bases.append(base)
    return bases


def _remove_run_cgroups(*, launcher: int | None = None) -> None:
    """Remove the run folders (``<pid>-<n>``, see launcher.c) of ``launcher``, or of every launcher
    that is no longer alive: a launcher that was killed leaves the folder of its next run."""
    for base in _CGROUP.get("bases", ()):
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            pid, _, seq = name.partition("-")
            if not (pid.isdigit() and seq.isdigit()):
                continue
            if launcher is not None and int(pid) != launcher:
                continue
            if launcher is None and os.path.exists(f"/proc/{pid}"):
                continue
            for leaf in ("prog", "box", ""):
                for _ in range(50):  # a killed standby leaves its folder a few ms later (EBUSY until then)
                    try:
                        os.rmdir(os.path.join(base, name, leaf))
                    except OSError as exc:
                        if exc.errno == errno.EBUSY:
                            time.sleep(0.01)
                            continue
                    break


@atexit.register
def _remove_cgroup_bases() -> None:
    _remove_run_cgroups()
    for base in _CGROUP.get("bases", ()):  # only when empty: other processes may still use it
        try:
            os.rmdir(base)
        except OSError:
            pass


def accounting(spec: str = "local") -> str:
    """How a sandbox here measures CPU and peak memory, in words (recorded in each campaign's manifest).

    ``cgroup v1 (memory, cpuacct) ...`` when per-run cgroups can be made (as root, with the v1
    memory and cpuacct hierarchies): every process of the program's tree is counted, also a
    child that was never waited for, and the memory limit covers tmpfs and memfd pages.
    Otherwise ``rusage ...``: the launcher sums the rusage of every process it reaps.
    """
    if spec.startswith("cmd:"):
        return "rusage of the sandbox command (its own accounting is the external sandbox's)"
    if _cgroup_bases():
        inner = ("; under bwrap, bwrap's own processes are in it too: the inner launcher resets its counters when "
                 "it forks the program and reads them when the program's tree is gone, the peak less bwrap's usage "
                 "then") if spec.startswith("bwrap") else ""
        return ("cgroup v1 (memory, cpuacct): one cgroup per run holding the program's whole process tree; "
                "cpu_s = its CPU, max_rss_kb = max(its peak, the largest process's peak RSS); memory limit = "
                f"address space + scratch (tmpfs, memfd and pipes included){inner}")
    return ("rusage: CPU summed over every process the launcher reaps (subreaper / pid 1), max_rss_kb = the "
            "largest process's peak; a child reaped by the kernel itself (its parent ignored SIGCHLD) is not "
            "counted, and memfd pages are bounded only per file (no cgroup here)")


@functools.lru_cache(maxsize=4096)
def _keep_paths(argv: tuple[str, ...]) -> tuple[str, ...]:
    """:meth:`Sandbox.keep_paths`, cached."""
    keep: list[str] = []

    def add(path: str) -> None:
        if path and path != "/" and not path.startswith(_SYSTEM_PREFIXES) and path not in keep and os.path.exists(path):
            keep.append(path)

    for item in argv:
        if not item.startswith("/") or item.startswith(_SYSTEM_PREFIXES) or not os.path.exists(item):
            continue
        if os.path.isdir(item) or os.path.dirname(os.path.normpath(item)) == "/":
            add(os.path.normpath(item))
        else:
            add(os.path.dirname(os.path.normpath(item)))
            real = os.path.realpath(item)  # an interpreter: its virtualenv and its real prefix
            bindir = os.path.dirname(os.path.normpath(item))
            if os.path.exists(os.path.join(os.path.dirname(bindir), "pyvenv.cfg")):
                add(os.path.dirname(bindir))
            if real != item:
                add(os.path.dirname(os.path.dirname(real)))
    return tuple(keep)


class Sandbox:
    """Base class: spawn, watch, kill and measure. Subclasses choose the command and the uid."""

    name = "base"
    #: switch to an unprivileged uid and apply rlimits in the child
    confine = True
    #: run a second launcher inside the sandbox command to measure the program itself
    nest_launcher = False

    def __init__(self, *, uid: int | str | None = "auto"):
        if uid == "auto":
            uid = "auto" if os.geteuid() == 0 else None
        elif uid is not None and not (isinstance(uid, int) and uid > 0):
            raise SandboxError(f"uid must be 'auto', None or a positive integer, got {uid!r}")
        self.uid = uid

    # -- what subclasses override -------------------------------------------------
    def spec(self) -> str:
        """The text that rebuilds this sandbox with :func:`make_sandbox` (e.g. on a Dask worker)."""
        return self.name

    def command(self, argv: list[str], *, scratch: Path, stdin_path: Path, limits: Limits,
                uid: int | None) -> list[str]:
        return list(argv)

    def environment(self, scratch: Path) -> dict[str, str]:
        return {"PATH": _SAFE_PATH, "HOME": str(scratch), "TMPDIR": str(scratch), "LANG": "C.UTF-8",
                "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}

    def check(self) -> None:
        """Raise :class:`SandboxError` when this sandbox cannot run here."""

    def _try_true(self, failure: str, advice: str) -> None:
        """Run ``/bin/true`` in this sandbox (with its launcher); SandboxError with ``advice`` if that fails."""
        if launcher_path() is None:
            raise SandboxError(f"the {self.name} sandbox needs its C launcher, and no C compiler (cc, gcc) was "
                               f"found\n  -> install gcc (Debian: apt-get install gcc; or run scripts/system-deps.sh)")
        root = scratch_root(f"speedaudit-{self.name}-check-")
        try:
            empty = root / "stdin"
            empty.write_bytes(b"")
            ex = self.run(["/bin/true"], stdin_path=empty, workdir=root / "w", limits=Limits(wall_s=10))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if ex.status != "ok":
            raise SandboxError(f"{failure} ({ex.reason}): {ex.stderr_tail.strip()}\n  -> {advice}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec()!r}, uid={self.uid!r})"

    # -- the runner ------------------------------------------------------------------
    #: the launcher builds a private root view for the program (LocalSandbox, when root)
    private_view = False
    #: the zygote sits in an empty network namespace (LocalSandbox, when root)
    netns = False
    #: ``run(report=True)`` works: the launcher hands the channel to the program as fd 3
    report_channel = False

    def run(self, argv, *, stdin_path, workdir, limits: Limits = Limits(), report: bool = False) -> Execution:
        """Run ``argv`` with standard input from ``stdin_path``.

        ``workdir`` is a directory for this execution (created if missing, removed by
        the caller): the program runs in ``workdir/scratch`` (fresh, owned by the
        sandbox uid; under ``local`` as root and under ``bwrap`` that path exists only in
        the program's own view, on its private tmpfs) and its standard output is kept in
        ``workdir/stdout`` (root-owned, at most ``limits.output_bytes``). Standard input
        is a sealed in-memory copy of ``stdin_path`` (``/proc/self/fd/0`` names no file),
        which the runner opens without following a symbolic link.

        With ``report`` the program also gets a *report channel* as fd 3: the write end of a pipe
        made by the runner (so its inode is the runner's, mode 0600: a program of another uid cannot
        reopen it through ``/proc``), read like its output and returned as ``Execution.report``. It is
        meant for an instruction counter that moves it out of the program's reach
        (:func:`audits.collect.counters.valgrind_argv`); ``local`` and ``bwrap`` only.
        """
        if not argv:
            raise SandboxError("empty argv: nothing to run")
        if report and not self.report_channel:
            raise SandboxError(f"the {self.spec()} sandbox has no report channel (an instruction counter's "
                               f"side channel)\n  -> use --sandbox local or bwrap")
        if not isinstance(limits, Limits):
            raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
        argv = [str(a) for a in argv]
        stdin_path = Path(stdin_path)
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        uid = None
        if self.confine and self.uid is not None:
            uid = _UIDS.acquire() if self.uid == "auto" else int(self.uid)
        try:
            return self._run(argv, stdin_path, workdir, limits, uid, report)
        finally:
            if uid is not None and self.uid == "auto":
                _UIDS.release(uid)

    def keep_paths(self, argv: list[str]) -> list[str]:
        """What of the host a program's view needs besides the system directories.

        For every argument that is an existing absolute path outside them: a directory
        itself, a file's folder (a program's build folder holds only that program); for a
        virtualenv interpreter its environment, and an interpreter's real prefix. Read-only.
        Cached per argv (a campaign runs each program many times; build folders do not change).
        """
        return list(_keep_paths(tuple(argv)))


    def _stdin(self, stdin_path: Path) -> int:
        """A read-only descriptor of a sealed in-memory copy of the input file."""
        try:
            src = os.open(stdin_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SandboxError(f"{stdin_path}: the input is a symbolic link; the runner reads inputs only "
                                   f"as plain files\n  -> give the file it points to") from None
            raise SandboxError(f"{stdin_path}: cannot open the input ({exc.strerror})") from None
        try:
            if not stat.S_ISREG(os.fstat(src).st_mode):
                raise SandboxError(f"{stdin_path}: the input is not a regular file")
            mem = os.memfd_create("speedaudit-stdin", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            try:
                size = os.fstat(src).st_size
                sent = 0
                while sent < size:
                    n = os.sendfile(mem, src, sent, size - sent)
                    if n == 0:
                        break
                    sent += n
                fcntl.fcntl(mem, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SHRINK
                            | fcntl.F_SEAL_SEAL)
                reader = os.open(f"/proc/self/fd/{mem}", os.O_RDONLY | os.O_CLOEXEC)
            finally:
                os.close(mem)
            return reader
        finally:
            os.close(src)

    def _run(self, argv, stdin_path: Path, workdir: Path, limits: Limits, uid: int | None,
             report: bool = False) -> Execution:
        scratch = workdir / "scratch"
        stdout_path = workdir / "stdout"
        launcher = launcher_path()
        view = self.private_view and launcher is not None
        on_host = not view and not self.nest_launcher
        if on_host or launcher is None:
            scratch.mkdir(exist_ok=False)
            if uid is not None:
                os.chown(scratch, uid, uid)
                os.chmod(scratch, 0o700)
        if uid is not None and (on_host or launcher is None):  # a view has its own scratch: nothing to reach
            os.chmod(workdir, 0o711)
            _check_traversable(workdir, uid)
        if launcher is None:
            if self.private_view or self.nest_launcher or report:
                raise SandboxError(f"the {self.name} sandbox needs its C launcher, and no C compiler (cc, gcc) "
                                   f"was found\n  -> install gcc (Debian: apt-get install gcc; or run "
                                   f"scripts/system-deps.sh)")
            return self._run_fallback(argv, stdin_path, scratch, stdout_path, limits, uid)
        pipes: list[int] = []
        try:
            pipes.append(self._stdin(stdin_path))
            inner_r = None
            if self.nest_launcher:
                # A second launcher inside the sandbox measures the program itself (see BwrapSandbox).
                inner_r, inner_w = os.pipe()
                kill_r, kill_w = os.pipe()  # its kill line (fd 4): closing kill_w kills the program
                pipes += [inner_r, inner_w, kill_r, kill_w]
                # the zygote hands the pipe to the sandbox as fd 3
                argv = [_staged_launcher(launcher), "3", "-1", "-1", "-1", "-1", "-1", "--", *argv]
            cmd = self.command(argv, scratch=scratch, stdin_path=stdin_path, limits=limits, uid=uid)
            lim = limits if self.confine else None
            cpu = max(1, math.ceil(lim.cpu_s)) if lim is not None and lim.cpu_s is not None else -1
            env = self.environment(scratch)
            keep = self.keep_paths(argv) if view else []
            cwd = str(scratch) if (view or on_host) else "/"
            fields = [str(uid if uid is not None else -1),
                      str(lim.memory_bytes if lim is not None and lim.memory_bytes is not None else -1),
                      str(lim.file_bytes if lim is not None else -1), str(lim.nproc if lim is not None else -1),
                      str(cpu), cwd, str(1 if view else 0), str(limits.scratch_bytes),
                      str(len(keep)), *keep, str(len(env)), *(f"{k}={v}" for k, v in env.items()), *cmd]
            payload = "\0".join(fields).encode("utf-8", "surrogateescape")  # = os.fsencode of each, at once
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            pipes += [out_r, out_w, err_r, err_w]
            handed = [out_w, err_w] + ([inner_w, kill_r] if self.nest_launcher else [])
            report_r = None
            if report:  # the 4th descriptor (program's fd 3); nested: the 6th (fd 9, see REPORT_FD in launcher.c)
                report_r, report_w = os.pipe()
                pipes += [report_r, report_w]
                handed.append(report_w)
            with open(stdout_path, "wb") as out:
                os.chmod(stdout_path, 0o600)
                zygote = _zygote(launcher, netns=self.netns, view=view, nested=self.nest_launcher)
                t0 = time.monotonic()
                zygote.send(payload, [pipes[0], *handed])
                for fd in handed:
                    os.close(fd)
                    pipes.remove(fd)
                kill_line = [None]
                if self.nest_launcher:
                    kill_line[0] = kill_w
                    pipes.remove(kill_w)  # _watch_zygote closes it (to kill) or we do, below
                try:
                    return self._watch_zygote(zygote, t0, out, stdout_path, limits, out_r, err_r, inner_r,
                                              kill_line, report_r)
                finally:
                    if kill_line[0] is not None:
                        os.close(kill_line[0])
        finally:
            for fd in pipes:
                os.close(fd)

    def _run_fallback(self, argv, stdin_path, scratch, stdout_path, limits, uid) -> Execution:
        """Without a C compiler: rlimits and uid from Python (peak RSS then includes the runner's own)."""
        cmd = self.command(argv, scratch=scratch, stdin_path=stdin_path, limits=limits, uid=uid)
        popen = dict(stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=scratch, env=self.environment(scratch),
                     start_new_session=True, close_fds=True)
        rlimits = limits.rlimits() if self.confine else []
        if rlimits:
            def preexec():  # between fork and exec: only setrlimit calls
                for which, pair in rlimits:
                    resource.setrlimit(which, pair)
            popen["preexec_fn"] = preexec
        if uid is not None and self.confine:
            popen.update(user=uid, group=uid, extra_groups=[])
        stdin = self._stdin(stdin_path)
        try:
            with open(stdout_path, "wb") as out:
                os.chmod(stdout_path, 0o600)
                t0 = time.monotonic()
                try:
                    proc = subprocess.Popen(cmd, stdin=stdin, **popen)
                except OSError as exc:
                    return Execution("runtime_error", time.monotonic() - t0, 0.0, 0, None, None, stdout_path, 0,
                                     False, "", f"could not start {cmd[0]}: {exc}", self.name)
                return self._watch(proc, t0, out, stdout_path, limits)
        finally:
            os.close(stdin)

    def _watch_zygote(self, zygote: "_Zygote", t0: float, out, stdout_path: Path, limits: Limits, out_r: int,
                      err_r: int, inner_r: int | None, kill_line: list | None = None,
                      report_r: int | None = None) -> Execution:
        # The clock starts when the launcher reports the fork (so the program gets its full
        # wall_s); until then allow one extra second.
        deadline = t0 + limits.wall_s + 1.0
        sel = selectors.DefaultSelector()
        sel.register(out_r, selectors.EVENT_READ, "out")
        sel.register(err_r, selectors.EVENT_READ, "err")
        sel.register(zygote.sock, selectors.EVENT_READ, "outer")
        if inner_r is not None:
            sel.register(inner_r, selectors.EVENT_READ, "inner")
        report_text = bytearray() if report_r is not None else None
        report_over = False
        if report_r is not None:
            sel.register(report_r, selectors.EVENT_READ, "report")
        written = 0
        truncated = False
        err_written = 0
        err_over = False
        err_tail = bytearray()
        inner_text = bytearray()
        killed = None
        kill_sent = 0.0
        child = None
        final = failed = None
        escalated = False
        inner_started = False
        interrupted = False

        def stop() -> None:
            # nested (bwrap): close the inner launcher's kill line, so it kills, reaps and
            # measures the program itself; the outer launcher's kill is the fall-back (below)
            nonlocal interrupted
            if kill_line is not None and kill_line[0] is not None:
                os.close(kill_line[0])
                kill_line[0] = None
            else:
                interrupted = True
                zygote.interrupt()

        def consume(key) -> None:
            nonlocal written, truncated, err_written, err_over, report_over
            try:
                chunk = os.read(key.fd, _READ)
            except BlockingIOError:
                return
            if not chunk:
                sel.unregister(key.fd)
                return
            if key.data == "out":
                room = limits.output_bytes - written
                if len(chunk) > room:
                    truncated = True
                    chunk = chunk[:max(room, 0)]
                if chunk:
                    out.write(chunk)
                    written += len(chunk)
            elif key.data == "err":
                err_written += len(chunk)
                err_tail.extend(chunk)
                if len(err_tail) > 2 * limits.stderr_bytes:
                    del err_tail[:-limits.stderr_bytes]
                if err_written > limits.stderr_limit:
                    err_over = True
            elif key.data == "report":
                room = REPORT_BYTES - len(report_text)
                report_over = report_over or len(chunk) > room
                report_text.extend(chunk[:max(room, 0)])
            else:
                inner_text.extend(chunk)

        try:
            while final is None and failed is None:
                now = time.monotonic()
                if killed is None and now >= deadline:
                    killed = "wall"
                    kill_sent = now
                    stop()
                elif killed is not None and not interrupted and now - kill_sent > 0.5:
                    interrupted = True  # the inner launcher did not end it: kill bwrap
                    zygote.interrupt()
                elif killed is not None and now - kill_sent > 2.5:
                    # the launcher did not finish: kill it and the program's group ourselves
                    escalated = True
                    zygote.destroy()
                    if child:
                        try:
                            os.killpg(child, _signal.SIGKILL)
                        except (ProcessLookupError, PermissionError):
                            pass
                    break
                wait = (deadline - now) if killed is None else 0.25
                for key, _ in sel.select(max(wait, 0.0)):
                    if key.data == "outer":
                        try:
                            message = zygote.sock.recv(4096)
                        except OSError as exc:
                            message = b""
                            failed = f"launcher connection failed: {exc}"
                        if not message:
                            zygote.dead = True
                            failed = failed or "the launcher died"
                            sel.unregister(key.fd)
                            break
                        for line in message.decode(errors="replace").splitlines():
                            parts = line.split()
                            if parts and parts[0] == "pid":
                                child = int(parts[1])
                                # nested: the program's clock starts at the inner launcher's pid
                                # (below); until then the sandbox may take max(wall_s, 1 s) to start
                                start = max(limits.wall_s, 1.0) if inner_r is not None else 0.0
                                deadline = time.monotonic() + limits.wall_s + start
                            elif parts and parts[0] == "done" and len(parts) == _DONE_FIELDS + 1:
                                final = tuple(int(p) for p in parts[1:])
                            elif parts and parts[0] == "error":
                                failed = " ".join(parts[1:])
                    elif (key.data == "out" and truncated) or (key.data == "err" and err_over):
                        sel.unregister(key.fd)  # over the cap: stop reading, the program is being killed
                    else:
                        consume(key)
                        if key.data == "inner" and not inner_started and b"pid " in inner_text:
                            # the program started inside the sandbox: its wall limit counts from
                            # here, as wall_s does (bwrap's set-up is not the program's time)
                            inner_started = True
                            if killed is None:
                                deadline = time.monotonic() + limits.wall_s
                        if (truncated or err_over) and killed is None:
                            killed = "output" if truncated else "stderr"
                            kill_sent = time.monotonic()
                            stop()
            t1 = time.monotonic()
            if "outer" in {k.data for k in sel.get_map().values()}:
                sel.unregister(zygote.sock)
            drain_until = time.monotonic() + 1.0
            while sel.get_map() and time.monotonic() < drain_until:
                for key, _ in sel.select(max(0.0, drain_until - time.monotonic())):
                    if (key.data == "out" and truncated) or (key.data == "err" and err_over):
                        sel.unregister(key.fd)
                    else:
                        consume(key)
        finally:
            sel.close()
        if final is None and not escalated and killed is None:
            raise SandboxError(f"the launcher failed ({failed}); the run was not measured")
        cg_cpu_us = cg_peak_kb = oom = -1
        drained = True
        if final is not None:
            wstatus, wall_ns, _, _, _, tree_us, tree_kb, cg_cpu_us, cg_peak_kb, oom, drained_out = final
            drained = drained_out == 1
            wall, cpu, rss = wall_ns / 1e9, tree_us / 1e6, tree_kb
        else:  # escalated: we killed it ourselves
            wstatus, wall, cpu, rss = _signal.SIGKILL, t1 - t0, 0.0, 0
        inner = _parse_report(inner_text)[0]
        if inner is not None:
            # the program's own status, tree CPU and peak, and its wall time from inside the sandbox
            # (from the inner launcher's fork to the reap: bwrap's own set-up and tear-down are not the
            # program's time); with a cgroup, the run's counters as the inner launcher read them around
            # the program (reset at its fork, read once its tree was reaped, the peak less bwrap's and
            # the launcher's own usage then): bwrap's processes are in the run's cgroup too
            wstatus_in, wall_in_ns, _, _, _, tree_us, tree_kb, in_cg_cpu_us, in_cg_peak_kb, _, drained_in = inner
            drained = drained and drained_in == 1
            wall, cpu, rss = wall_in_ns / 1e9, tree_us / 1e6, tree_kb
            code, sig = _split_wait(wstatus_in)
            if in_cg_cpu_us >= 0 and cg_cpu_us >= 0:
                cg_cpu_us, cg_peak_kb = in_cg_cpu_us, in_cg_peak_kb
        else:
            code, sig = self._translate_exit(*_split_wait(wstatus))
        accounting = "rusage"
        if cg_cpu_us >= 0:  # the run's cgroup: every process of the program's tree
            cpu, accounting = cg_cpu_us / 1e6, "cgroup"
            rss = max(cg_peak_kb, rss if (inner is not None or not self.nest_launcher) else 0)
        tail = bytes(err_tail[-limits.stderr_bytes:]).decode("utf-8", "replace")
        status, reason = _classify(code, sig, killed, cpu, rss, tail, limits, oom=oom)
        failure = self._sandbox_failure(code, sig, tail)
        if failure and killed is None:
            status, reason = "runtime_error", f"sandbox failed to start the program: {failure}"
        if not drained:
            reason += UNDRAINED_NOTE
        return Execution(status, wall, cpu, rss, code, sig, stdout_path, written, truncated, tail, reason,
                         self.name, accounting, None if report_text is None else bytes(report_text), report_over)

    def _watch(self, proc: subprocess.Popen, t0: float, out, stdout_path: Path, limits: Limits) -> Execution:
        """The fallback watch (no launcher): our own child, its group killed by us."""
        deadline = t0 + limits.wall_s
        pidfd = os.pidfd_open(proc.pid)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
        sel.register(proc.stderr.fileno(), selectors.EVENT_READ, "err")
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        written = 0
        truncated = False
        err_tail = bytearray()
        killed = None  # "wall" | "output" when the runner killed it

        def kill_group():
            try:
                os.killpg(proc.pid, _signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        err_written = 0

        def consume(key) -> None:
            nonlocal written, truncated, err_written
            chunk = os.read(key.fd, _READ)
            if not chunk:
                sel.unregister(key.fd)
            elif key.data == "out":
                room = limits.output_bytes - written
                if len(chunk) > room:
                    truncated = True
                    chunk = chunk[:max(room, 0)]
                out.write(chunk)
                written += len(chunk)
            else:
                err_written += len(chunk)
                err_tail.extend(chunk)
                if len(err_tail) > 2 * limits.stderr_bytes:
                    del err_tail[:-limits.stderr_bytes]

        try:
            exited = False
            while not exited:
                remaining = deadline - time.monotonic()
                if remaining <= 0 and killed is None:
                    killed = "wall"
                    kill_group()
                for key, _ in sel.select(max(remaining, 0.0) if killed is None else 0.25):
                    if key.data == "exit":
                        exited = True
                    elif (key.data == "out" and truncated) or (key.data == "err"
                                                               and err_written > limits.stderr_limit):
                        sel.unregister(key.fd)
                    else:
                        consume(key)
                        if (truncated or err_written > limits.stderr_limit) and killed is None:
                            killed = "output" if truncated else "stderr"
                            kill_group()
            _, wstatus, usage = os.wait4(proc.pid, 0)
            t1 = time.monotonic()
            proc.returncode = os.waitstatus_to_exitcode(wstatus)
            kill_group()  # stray descendants in its group must not outlive the run
            drain_until = time.monotonic() + 1.0
            while any(k.data != "exit" for k in sel.get_map().values()) and time.monotonic() < drain_until:
                for key, _ in sel.select(max(0.0, drain_until - time.monotonic())):
                    if key.data == "exit" or (key.data == "out" and truncated) or (
                            key.data == "err" and err_written > limits.stderr_limit):
                        sel.unregister(key.fd)
                    else:
                        consume(key)
        finally:
            sel.close()
            os.close(pidfd)
            proc.stdout.close()
            proc.stderr.close()
        code, sig = self._translate_exit(*_split_wait(wstatus))
        cpu = usage.ru_utime + usage.ru_stime
        rss = int(usage.ru_maxrss)
        tail = bytes(err_tail[-limits.stderr_bytes:]).decode("utf-8", "replace")
        status, reason = _classify(code, sig, killed, cpu, rss, tail, limits)
        failure = self._sandbox_failure(code, sig, tail)
        if failure and killed is None:
            status, reason = "runtime_error", f"sandbox failed to start the program: {failure}"
        return Execution(status, t1 - t0, cpu, rss, code, sig, stdout_path, written, truncated, tail, reason,
                         self.name)

    def _translate_exit(self, code, sig):
        return code, sig

    def _sandbox_failure(self, code, sig, stderr_tail: str) -> str | None:
        return None

    def sweep(self) -> None:
        """Kill every process left under the uids this process handed out (e.g. a
        descendant that left its process group with ``setsid``). Campaigns call it at the end."""
        if os.geteuid() != 0:
            return
        for uid in _UIDS.issued():
            _kill_uid(uid)


def _parse_report(text: bytes) -> tuple[tuple[int, ...] | None, str | None]:
    """The launcher's ``done`` line (``STATUS WALL_NS USER_US SYS_US MAXRSS_KB TREE_CPU_US TREE_RSS_KB
    CG_CPU_US CG_PEAK_KB OOM_KILLS DRAINED``, see launcher.c's ``watch``) as integers, or its error."""
    final = failed = None
    for line in bytes(text).decode(errors="replace").splitlines():
        parts = line.split()
        if parts and parts[0] == "done" and len(parts) == _DONE_FIELDS + 1:
            final = tuple(int(p) for p in parts[1:])
        elif parts and parts[0] == "error":
            failed = " ".join(parts[1:])
    return final, failed


_STAGED: dict[str, str] = {}


def _staged_launcher(launcher: str) -> str:
    """A world-readable copy of the launcher (bound into bwrap sandboxes, which run as the
    unprivileged uid and cannot read the cache under root's home). It lives in a machine-wide
    directory, named like the cached build (by the source's hash), so it is shared, never
    half-written (renamed into place) and never left in /tmp by a killed campaign."""
    with _LAUNCHER_LOCK:
        staged = _STAGED.get(launcher)
        if staged is None or not os.path.exists(staged):
            folder = _machine_dir("speedaudit-launch")
            folder.mkdir(parents=True, exist_ok=True)
            os.chmod(folder, 0o755)
            target = folder / Path(launcher).name
            if not target.is_file():
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".staging-")
                os.close(fd)
                shutil.copy2(launcher, tmp)
                os.chmod(tmp, 0o755)
                os.replace(tmp, target)
            staged = _STAGED[launcher] = str(target)
        return staged


def _view_mount_point() -> str:
    """The directory on which launchers build private roots: one for the whole machine.

    It is only a mount point: each run's child mounts its own tmpfs on it inside its own
    mount namespace, so all launchers and runs share it without seeing each other, and the
    host never sees anything in it. Fixed (``<machine dir>/speedaudit-launch/view``, root's,
    0700) so that a runner that dies without clean-up (SIGKILL, a Dask worker's ``os._exit``)
    leaves nothing behind: a directory per launcher did (one empty folder per killed process).
    """
    with _LAUNCHER_LOCK:
        folder = _machine_dir("speedaudit-launch")
        folder.mkdir(parents=True, exist_ok=True)
        box = folder / "view"
        try:
            box.mkdir(mode=0o700)
        except FileExistsError:
            pass
        st = os.lstat(box)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise SandboxError(f"{box}: not a directory of ours with mode 0700 (someone else made it?)\n"
                               f"  -> remove it; the sandbox recreates it")
        return str(box)


class _Zygote:
    """A launcher in serve mode, owned by one runner thread (it dies with that thread).

    With ``view`` it builds each run's private root on ``box`` (:func:`_view_mount_point`) and keeps one standby child with the request-independent half of
    the view ready before the request comes (see ``standby`` in launcher.c); under bwrap with
    cgroups a second one waits in the cgroup of the run after it, joined while the run before is
    set up (a migration waits for an RCU grace period; ``serve`` in launcher.c).
    """

    def __init__(self, launcher: str, *, netns: bool = False, view: bool = False, nested: bool = False):
        self.box = _view_mount_point() if view else None
        self.cgroups = bool(_cgroup_bases())
        cgroups = [arg for base in _cgroup_bases() for arg in ("--cgroup", base)]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen([launcher, "--serve", str(theirs.fileno()), *(["--netns"] if netns else []),
                                          *(["--view", self.box] if view else []),
                                          *(["--nested"] if nested else []), *cgroups],
                                         pass_fds=(theirs.fileno(),),
                                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        self.sock = ours
        self.dead = False
        self.owner = os.getpid()

    def alive(self) -> bool:
        # a forked copy of the runner must not share its parent's launcher
        return not self.dead and self.owner == os.getpid() and self.proc.poll() is None

    def send(self, payload: bytes, fds: list[int]) -> None:
        try:
            socket.send_fds(self.sock, [payload], fds)
        except OSError as exc:
            self.dead = True
            raise SandboxError(f"cannot reach the launcher: {exc}") from exc

    def interrupt(self) -> None:
        """Kill the running program's process group (the launcher then reports and reaps)."""
        try:
            self.proc.send_signal(_signal.SIGUSR1)
        except ProcessLookupError:
            pass

    def destroy(self) -> None:
        self.dead = True
        try:
            self.proc.kill()
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.sock.close()  # its standby child (killed with it: PR_SET_PDEATHSIG) held the other end
        if self.cgroups:
            _remove_run_cgroups(launcher=self.proc.pid)


_THREAD = threading.local()
_ALL_ZYGOTES: list[_Zygote] = []


def _zygote(launcher: str, *, netns: bool = False, view: bool = False, nested: bool = False) -> _Zygote:
    """This thread's launcher server (started on first use, restarted if it died).

    One per thread and setting: with ``netns`` it lives in an empty network namespace of
    its own, which every program it starts inherits; with ``view`` it builds private roots.
    """
    zygotes = getattr(_THREAD, "zygotes", None)
    if zygotes is None:
        zygotes = _THREAD.zygotes = {}
    zygote = zygotes.get((netns, view, nested))
    if zygote is None or not zygote.alive():
        if zygote is not None and zygote.owner == os.getpid():
            zygote.destroy()
        zygote = zygotes[(netns, view, nested)] = _Zygote(launcher, netns=netns, view=view, nested=nested)
        with _LAUNCHER_LOCK:
            _ALL_ZYGOTES[:] = [z for z in _ALL_ZYGOTES if z.alive()]
            _ALL_ZYGOTES.append(zygote)
    return zygote


@atexit.register
def _stop_zygotes() -> None:
    for zygote in list(_ALL_ZYGOTES):
        if zygote.proc.poll() is None:
            zygote.destroy()


def _kill_uid(uid: int) -> None:
    """kill(-1, SIGKILL) as ``uid``: signals every process of that uid (and nothing else)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, _signal.SIGKILL)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def _classify(code, sig, killed, cpu, rss_kb, stderr_tail, limits: Limits, *, oom: int = -1) -> tuple[str, str]:
    how = _decode_status(code, sig)
    if killed == "wall":
        return "timeout", f"wall limit {limits.wall_s:g} s"
    if killed == "output":
        return "runtime_error", f"output limit: wrote more than {limits.output_bytes} bytes"
    if killed == "stderr":
        return "runtime_error", f"output limit: wrote more than {limits.stderr_limit} bytes to stderr"
    if code == 0 and sig is None:
        return "ok", how
    if limits.cpu_s is not None and (sig == _signal.SIGXCPU or
                                     (sig == _signal.SIGKILL and cpu >= math.ceil(limits.cpu_s))):
        return "timeout", f"CPU limit {limits.cpu_s:g} s ({how})"
    if oom > 0 and limits.memory_bytes is not None:
        return "memory_limit", (f"killed by the kernel at the run's memory limit ({limits.memory_bytes} bytes of "
                                f"address space + {limits.scratch_bytes} of scratch: memory, tmpfs and memfd "
                                f"together; {how})")
    lowered = stderr_tail.lower()
    marker = next((m for m in _MEMORY_MARKERS if m in lowered), None)
    if marker:
        return "memory_limit", f"allocation failed ({marker}; {how})"
    if (sig == _signal.SIGKILL and limits.memory_bytes is not None
            and rss_kb * 1024 >= 0.9 * limits.memory_bytes):
        return "memory_limit", f"killed at {rss_kb} KiB peak RSS ({how})"
    if sig == _signal.SIGXFSZ:
        return "runtime_error", f"file size limit {limits.file_bytes} bytes ({how})"
    return "runtime_error", how


class LocalSandbox(Sandbox):
    """A child process of the launcher, confined with kernel namespaces when we are root.

    As root (``isolated``): an unprivileged uid from this process's leased block, rlimits,
    no new privileges, a scrubbed environment, an empty network namespace, a private IPC
    namespace and a private root: a fresh tmpfs of ``Limits.scratch_bytes`` holding its
    scratch, /tmp, /var/tmp and /dev/shm, the system directories and the program's own
    files read-only, a few device nodes and a /proc that shows only its own processes
    (hidepid=2), a fresh session keyring, a seccomp filter that refuses user namespaces of
    its own, keyrings, io_uring, memfd_secret, bpf, perf events and any change of priority,
    scheduling class or affinity, and (cgroup v1) a cgroup per run whose memory limit covers
    memfd and tmpfs pages too. Nothing else of the host's file system is in its view, and
    nothing of the run outlives it. *Not* contained: kernel-wide figures in /proc; see
    docs/collecting.md.

    Not root: only rlimits and a scrubbed environment; ``isolated`` is False and
    :meth:`check` says so (use ``bwrap``).
    """

    name = "local"
    report_channel = True

    def __init__(self, *, uid: int | str | None = "auto"):
        super().__init__(uid=uid)
        self.isolated = os.geteuid() == 0
        self.private_view = self.netns = self.isolated
        self._checked = False

    def check(self) -> None:
        if self._checked:
            return
        if not self.isolated:
            raise SandboxError("the local sandbox isolates programs only when it runs as root (network, file "
                               "system and IPC namespaces); as another user it would only apply rlimits\n"
                               "  -> run as root, or use --sandbox bwrap")
        self._try_true("the local sandbox cannot isolate a program here",
                       "the kernel must allow mount, network and IPC namespaces to root; or use --sandbox bwrap")
        self._checked = True


class BwrapSandbox(Sandbox):
    """The program inside bubblewrap, run by the launcher as the unprivileged uid.

    The view is built from nothing: the system directories and the program's own files
    read-only, a fresh tmpfs of ``Limits.scratch_bytes`` for each of its scratch, /tmp,
    /var/tmp and /dev/shm, bwrap's own /dev (read-only) and /proc, the root read-only; its own user
    (no further user namespaces), pid, network, IPC, UTS and cgroup namespaces, a new
    session, and it dies with the runner. bwrap itself runs as the unprivileged uid
    (unprivileged user namespaces), so the rlimits including RLIMIT_NPROC apply inside.
    """

    name = "bwrap"
    # bwrap's outer process does not wait for the sandboxed program, so its rusage
    # lacks the program's CPU and memory: a launcher inside the sandbox (pid 1 of its pid
    # namespace) measures the program and reports through an inherited pipe: its status, its
    # wall time from inside (bwrap's own set-up and tear-down are not in duration_s), and,
    # with the run's cgroup, which the inner launcher's child joins, its tree's CPU and peak
    # for every status (also when the runner killed bwrap at the wall limit).
    nest_launcher = True
    report_channel = True

    def __init__(self, *, uid: int | str | None = "auto", bwrap: str | None = None):
        super().__init__(uid=uid)
        self.bwrap = bwrap or shutil.which("bwrap")
        self._checked = False

    def check(self) -> None:
        if self._checked:
            return
        if not self.bwrap:
            raise SandboxError("the bwrap sandbox needs bubblewrap, which is not installed\n"
                               "  -> install it (Debian/Ubuntu: apt-get install bubblewrap; or run "
                               "scripts/system-deps.sh), or use --sandbox local")
        self._try_true("bwrap cannot start a sandbox here", "bwrap needs unprivileged user namespaces "
                       "(sysctl kernel.unprivileged_userns_clone=1); or use --sandbox local")
        self._checked = True

    def command(self, argv, *, scratch, stdin_path, limits, uid):
        if not self.bwrap:
            raise SandboxError("bwrap is not installed\n  -> apt-get install bubblewrap, or use --sandbox local")
        size = str(limits.scratch_bytes)
        cmd = [self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
               "--new-session", "--as-pid-1", "--cap-drop", "ALL"]
        for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"):
            if os.path.islink(top):
                cmd += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                cmd += ["--ro-bind", top, top]
        # bwrap's /dev is a tmpfs of its own with no size option: read-only, so that only the
        # quota'd /dev/shm below is writable there (a 12 GiB fill of /dev was measured)
        cmd += ["--dev", "/dev", "--remount-ro", "/dev", "--proc", "/proc"]
        for place in ("/tmp", "/var/tmp", "/dev/shm"):
            cmd += ["--perms", "1777", "--size", size, "--tmpfs", place]
        for path in self.keep_paths(argv):
            cmd += ["--ro-bind", path, path]
        cmd += ["--perms", "0700", "--size", size, "--tmpfs", str(scratch), "--remount-ro", "/",
                "--chdir", str(scratch), "--", *argv]
        return cmd

    def _sandbox_failure(self, code, sig, stderr_tail):
        text = stderr_tail.strip()
        if code == 1 and text.startswith("bwrap:"):
            return text.splitlines()[0]
        return None

    def _translate_exit(self, code, sig):
        # bwrap reports a child killed by signal N as exit 128 + N.
        if sig is None and code is not None and 128 < code <= 128 + 64:
            return None, code - 128
        return code, sig


class CommandSandbox(Sandbox):
    """Any sandbox command, from a template such as ``"prlimit --as={memory_bytes} -- {argv}"``.

    The template is split like a shell command line; the token ``{argv}`` expands
    to the program's arguments, other placeholders are substituted in place (see the
    module docstring). It runs as the calling user without rlimits of its own.
    """

    name = "cmd"
    confine = False
    PLACEHOLDERS = ("argv", "argv_str", "workdir", "stdin", "wall_s", "cpu_s", "memory_bytes", "memory_mb",
                    "nproc", "file_bytes", "uid")

    def __init__(self, template: str, *, uid: int | str | None = None):
        super().__init__(uid=uid)
        template = template.removeprefix("cmd:").strip()
        if not template:
            raise SandboxError("cmd: sandbox needs a command template, e.g. 'cmd:prlimit --as={memory_bytes} -- {argv}'")
        try:
            self.tokens = shlex.split(template)
        except ValueError as exc:
            raise SandboxError(f"cmd:{template}: cannot split the template ({exc})") from exc
        if not any("{argv}" in t or "{argv_str}" in t for t in self.tokens):
            raise SandboxError(f"cmd:{template}: the template never mentions the program\n"
                               "  -> put {argv} (expands to the program's arguments) or {argv_str} in it")
        for token in self.tokens:
            try:
                token.format(**{k: "" for k in self.PLACEHOLDERS})
            except (KeyError, IndexError, ValueError) as exc:
                raise SandboxError(f"cmd:{template}: unknown placeholder in {token!r} ({exc})\n"
                                   f"  -> use {{{'}, {'.join(self.PLACEHOLDERS)}}}") from None
        self.template = template

    def spec(self) -> str:
        return f"cmd:{self.template}"

    def check(self) -> None:
        if "{" not in self.tokens[0] and not shutil.which(self.tokens[0]):
            raise SandboxError(f"cmd:{self.template}: '{self.tokens[0]}' is not an executable on PATH")

    def command(self, argv, *, scratch, stdin_path, limits, uid):
        values = dict(argv_str=shlex.join(argv), workdir=str(scratch), stdin=str(stdin_path),
                      wall_s=f"{limits.wall_s:g}", cpu_s="" if limits.cpu_s is None else f"{limits.cpu_s:g}",
                      memory_bytes="" if limits.memory_bytes is None else str(limits.memory_bytes),
                      memory_mb="" if limits.memory_bytes is None else str(limits.memory_bytes >> 20),
                      nproc=str(limits.nproc), file_bytes=str(limits.file_bytes),
                      uid="" if uid is None else str(uid))
        cmd = []
        for token in self.tokens:
            if token == "{argv}":
                cmd.extend(argv)
            else:
                cmd.append(token.format(argv=shlex.join(argv), **values))
        return cmd

    def environment(self, scratch):
        env = super().environment(scratch)
        env["PATH"] = os.environ.get("PATH", _SAFE_PATH)
        return env


_AUTO: dict[str, str] = {}


def strongest_sandbox() -> str:
    """The strongest sandbox that works on this machine: ``bwrap``, else ``local``.

    bwrap adds its own user and pid namespaces to what ``local`` does as root, and it
    needs no root; ``local`` (isolated only as root) is the fall-back. Checked once per
    process by running ``/bin/true`` in it.
    """
    with _LAUNCHER_LOCK:
        if "spec" in _AUTO:
            return _AUTO["spec"]
    choice = "local"
    try:
        BwrapSandbox().check()
        choice = "bwrap"
    except SandboxError:
        pass
    with _LAUNCHER_LOCK:
        _AUTO["spec"] = choice
    return choice


def make_sandbox(spec: str, *, uid: int | str | None = "auto") -> Sandbox:
    """Build a sandbox from ``"auto"`` (the strongest available), ``"local"``, ``"bwrap"`` or ``"cmd:TEMPLATE"``."""
    if not isinstance(spec, str) or not spec.strip():
        raise SandboxError("--sandbox: give auto, local, bwrap or cmd:TEMPLATE")
    spec = spec.strip()
    if spec == "auto":
        spec = strongest_sandbox()
    if spec == "local":
        return LocalSandbox(uid=uid)
    if spec == "bwrap":
        return BwrapSandbox(uid=uid)
    if spec.startswith("cmd:"):
        return CommandSandbox(spec)
    raise SandboxError(f"--sandbox {spec!r}: unknown sandbox\n  -> use auto, local, bwrap or cmd:TEMPLATE "
                       f"(e.g. 'cmd:prlimit --as={{memory_bytes}} -- {{argv}}')")
