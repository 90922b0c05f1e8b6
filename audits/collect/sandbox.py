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

Timing: wall seconds are the monotonic clock read just before the spawn and
just after the reap (``os.wait4``); CPU seconds (user + system) and peak RSS
come from the rusage that ``wait4`` returns, which includes every descendant
that was waited for. The sandbox's own start-up cost is part of the wall time
by design: campaigns time it separately as the *floor* (DESIGN.md).

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
import hashlib
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
    "parse_size",
    "scratch_root",
    "stage_program",
    "RUN_STATUSES",
]

RUN_STATUSES = PROCESS_STATUSES
_MEMORY_MARKERS = ("memoryerror", "std::bad_alloc", "cannot allocate memory", "out of memory")
_SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
_READ = 1 << 16


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
    """

    wall_s: float = 10.0
    memory_bytes: int | None = 1 << 30
    cpu_s: float | None = None
    file_bytes: int = 64 << 20
    nproc: int = 64
    output_bytes: int = 64 << 20
    stderr_bytes: int = 4096

    def __post_init__(self):
        if not (isinstance(self.wall_s, (int, float)) and math.isfinite(self.wall_s) and self.wall_s > 0):
            raise ValueError(f"Limits.wall_s must be a positive number of seconds, got {self.wall_s!r}")
        if self.memory_bytes is not None and self.memory_bytes < (16 << 20):
            raise ValueError(f"Limits.memory_bytes must be at least 16 MiB (an interpreter needs that "
                             f"to start), got {self.memory_bytes!r}")
        if self.cpu_s is not None and not self.cpu_s > 0:
            raise ValueError(f"Limits.cpu_s must be positive or None, got {self.cpu_s!r}")
        for name in ("file_bytes", "nproc", "output_bytes", "stderr_bytes"):
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

    def with_status(self, status: str, reason: str) -> "Execution":
        return dataclasses.replace(self, status=status, reason=reason)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["stdout_path"] = None if self.stdout_path is None else str(self.stdout_path)
        return out


def _fast_tmp() -> str | None:
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
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base if base is not None else _fast_tmp()))
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


class _UidPool:
    """Unprivileged uids for the runs of this process, handed out in rotation.

    RLIMIT_NPROC counts every process of a uid, including killed children that are
    still zombies waiting for init to reap them (that took ~1.6 s on our machines).
    So concurrent runs each get their own uid, and a uid is reused only after at
    least ``MIN_POOL - 1`` other runs. The uids are ``100000 + (pid % 1000) * 64 + k``,
    k < 64 (the pid term keeps several worker processes on one machine apart); they
    need no /etc/passwd entry.
    """

    MIN_POOL = 8
    MAX_POOL = 64

    def __init__(self):
        self._lock = threading.Lock()
        self._free: collections.deque[int] = collections.deque()
        self._minted = 0

    def _uid(self, k: int) -> int:
        return 100000 + (os.getpid() % 1000) * self.MAX_POOL + k

    def acquire(self) -> int:
        with self._lock:
            if self._minted < self.MIN_POOL or (not self._free and self._minted < self.MAX_POOL):
                self._minted += 1
                return self._uid(self._minted - 1)
            if self._free:
                return self._free.popleft()
            return self._uid(0)  # more than MAX_POOL concurrent runs: share

    def release(self, uid: int) -> None:
        with self._lock:
            self._free.append(uid)

    def issued(self) -> list[int]:
        return [self._uid(k) for k in range(self._minted)]


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


# The launcher: a tiny C program between the runner and the measured program.
#
# Why hand-written (no library does this): the peak RSS that wait4 reports for a
# process includes what it had *before* exec, and a child forked (or vforked) from
# the runner starts as a copy of the runner (tens of MB with pandas loaded, GBs in a
# Dask worker). A small launcher process forks the program itself, so the program's
# pre-exec RSS is the launcher's (~1 MB), and reports the program's own rusage and
# wall time (monotonic clock around fork and reap). It also applies the rlimits and
# drops to the unprivileged uid in the child (no Python preexec_fn in a threaded
# process), puts the program in its own process group, kills that whole group when
# the program ends or when the runner sends it SIGUSR1 (wall limit, output cap) or
# dies (PR_SET_PDEATHSIG), and reaps the program only after the group was killed, so
# the group id cannot be reused while it is being signalled. As a subreaper it reaps
# every orphan of the program at once (zombies count against RLIMIT_NPROC) and kills
# survivors that left the group, by uid.
#
# It runs as a server ("zygote"), one per runner thread: a request (one SOCK_SEQPACKET
# message carrying the program's stdin/stdout/stderr as SCM_RIGHTS) costs one fork of
# a 1 MB process instead of a fork of the runner plus an exec of the launcher, which
# is what keeps the runner's throughput at that of a bare subprocess loop. Inside
# bwrap the same program runs once per execution ("one-shot" mode).
_LAUNCHER_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The program being run (0 = none) and whether it has been reaped. */
static volatile sig_atomic_t child = 0, reaped = 1, stop = 0;

static void on_kill(int sig) {           /* SIGUSR1 (serve) or SIGTERM (one-shot): kill the program's group */
    (void)sig;
    stop = 1;
    if (child > 0 && !reaped) kill(-child, SIGKILL);
}

static void on_die(int sig) {            /* serve mode: the runner is gone */
    (void)sig;
    if (child > 0 && !reaped) kill(-child, SIGKILL);
    _exit(0);
}

typedef void (*report_fn)(void *ctx, const char *text);

static void report_fd(void *ctx, const char *text) {
    int fd = *(int *)ctx;
    size_t n = strlen(text);
    while (n > 0) {
        ssize_t k = write(fd, text, n);
        if (k < 0) { if (errno == EINTR) continue; return; }
        text += k; n -= (size_t)k;
    }
}

static void report_sock(void *ctx, const char *text) {
    int fd = *(int *)ctx;
    while (send(fd, text, strlen(text), MSG_NOSIGNAL) < 0 && errno == EINTR) {}
}

/* Kill every process of `uid` (the sandbox's own uid: nothing else runs under it). */
static void sweep(long long uid) {
    if (uid < 0 && geteuid() == 0) return;        /* never kill(-1) as root */
    if (uid < 0) { kill(-1, SIGKILL); return; }   /* we already are the unprivileged uid */
    pid_t p = fork();
    if (p == 0) {
        if (setgroups(0, NULL) == 0 && setgid((gid_t)uid) == 0 && setuid((uid_t)uid) == 0) kill(-1, SIGKILL);
        _exit(0);
    }
}

static int limit(int which, long long soft, long long hard) {
    struct rlimit rl;
    if (soft < 0) return 0;
    rl.rlim_cur = (rlim_t)soft; rl.rlim_max = (rlim_t)hard;
    return setrlimit(which, &rl);
}

/* Fork, confine and exec argv; wait; kill its group; reap it and every orphan; report. */
static int run(long long uid, long long as, long long fsize, long long nproc, long long cpu, const char *cwd,
               char **argv, char **envp, const int *fds, int close_fd, report_fn say, void *ctx) {
    char buf[256];
    struct timespec t0, t1;
    if (stop) return 125;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(buf, sizeof buf, "error fork: %s\n", strerror(errno));
        say(ctx, buf);
        return 125;
    }
    if (pid == 0) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGUSR1, &dfl, NULL);
        setpgid(0, 0);
        if (close_fd >= 0) close(close_fd);
        if (fds) {   /* received close-on-exec: only the dup2 copies survive the exec */
            for (int i = 0; i < 3; i++) if (dup2(fds[i], i) < 0) _exit(126);
            if (fds[3] == 3) fcntl(3, F_SETFD, 0);
            else if (fds[3] >= 0 && dup2(fds[3], 3) < 0) _exit(126);
        }
        if (cwd && chdir(cwd) != 0) {
            fprintf(stderr, "sa-launch: cannot enter %s: %s\n", cwd, strerror(errno));
            _exit(126);
        }
        if (limit(RLIMIT_CORE, 0, 0) || limit(RLIMIT_AS, as, as) || limit(RLIMIT_FSIZE, fsize, fsize)
            || limit(RLIMIT_NPROC, nproc, nproc) || limit(RLIMIT_CPU, cpu, cpu < 0 ? cpu : cpu + 1)) {
            fprintf(stderr, "sa-launch: setrlimit: %s\n", strerror(errno));
            _exit(126);
        }
        if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)uid) || setuid((uid_t)uid))) {
            fprintf(stderr, "sa-launch: cannot switch to uid %lld: %s\n", uid, strerror(errno));
            _exit(126);
        }
        if (envp) execvpe(argv[0], argv, envp); else execvp(argv[0], argv);
        fprintf(stderr, "sa-launch: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    reaped = 0;
    child = pid;
    if (stop) kill(-pid, SIGKILL);   /* the kill arrived while forking */
    snprintf(buf, sizeof buf, "pid %d\n", (int)pid);
    say(ctx, buf);
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0) {
        if (errno != EINTR) { snprintf(buf, sizeof buf, "error waitid: %s\n", strerror(errno)); say(ctx, buf); return 125; }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kill(-pid, SIGKILL);             /* stray descendants in its group; the zombie keeps the id reserved */
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0) {
        if (errno != EINTR) { snprintf(buf, sizeof buf, "error wait4: %s\n", strerror(errno)); say(ctx, buf); return 125; }
    }
    reaped = 1;
    child = 0;
    /* Reap the rest at once: killed descendants would otherwise wait as zombies for init,
       and zombies still count against the uid's RLIMIT_NPROC. Survivors (a descendant that
       left the process group) are swept by uid. */
    int swept = 0;
    struct timespec ts, now;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    for (;;) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0) continue;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (!swept) { sweep(uid); swept = 1; }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - ts.tv_sec >= 2) break;
        usleep(1000);
    }
    long long wall = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    snprintf(buf, sizeof buf, "done %d %lld %lld %lld %ld\n", status, wall,
             (long long)ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec,
             (long long)ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec, ru.ru_maxrss);
    say(ctx, buf);
    stop = 0;
    return 0;
}

/* Serve mode: one request per SOCK_SEQPACKET message with the program's stdin, stdout and
   stderr (and optionally a 4th descriptor, which the program gets as fd 3) as SCM_RIGHTS;
   fields separated by NUL:
   uid as fsize nproc cpu cwd n_env env... argv...   Runs one program at a time. */
static int serve(int sock) {
    static char data[1 << 20];
    for (;;) {
        struct iovec iov = { data, sizeof data - 1 };
        union { char buf[CMSG_SPACE(4 * sizeof(int))]; struct cmsghdr align; } control;
        struct msghdr msg;
        memset(&msg, 0, sizeof msg);
        msg.msg_iov = &iov; msg.msg_iovlen = 1;
        msg.msg_control = control.buf; msg.msg_controllen = sizeof control.buf;
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n == 0) return 0;
        if (n < 0) { if (errno == EINTR) continue; return 1; }
        data[n] = 0;
        int fds[4] = { -1, -1, -1, -1 };
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            if (c->cmsg_len == CMSG_LEN(3 * sizeof(int))) memcpy(fds, CMSG_DATA(c), 3 * sizeof(int));
            else if (c->cmsg_len == CMSG_LEN(4 * sizeof(int))) memcpy(fds, CMSG_DATA(c), 4 * sizeof(int));
        }
        char *fields[8192];
        int count = 0;
        for (char *p = data; p < data + n && count < 8191; p += strlen(p) + 1) fields[count++] = p;
        fields[count] = NULL;
        if (fds[0] < 0 || count < 9 || atoi(fields[6]) < 0 || 7 + atoi(fields[6]) >= count) {
            report_sock(&sock, "error bad request\n");
        } else {
            int n_env = atoi(fields[6]);
            char *envp[4096];
            int k = 0;
            for (; k < n_env && k < 4095; k++) envp[k] = fields[7 + k];
            envp[k] = NULL;
            run(atoll(fields[0]), atoll(fields[1]), atoll(fields[2]), atoll(fields[3]), atoll(fields[4]),
                fields[5], fields + 7 + n_env, envp, fds, sock, report_sock, &sock);
        }
        for (int i = 0; i < 4; i++) if (fds[i] >= 0) close(fds[i]);
    }
}

/* sa-launch --serve SOCKFD
   sa-launch FD UID AS FSIZE NPROC CPU -- PROGRAM [ARGS...]   (one shot; -1 = unchanged) */
int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    prctl(PR_SET_CHILD_SUBREAPER, 1);   /* orphans of the program come to us, and we reap them */
    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        sa.sa_handler = on_kill;
        sigaction(SIGUSR1, &sa, NULL);
        sa.sa_handler = on_die;
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1) return 0;
        return serve(atoi(argv[2]));
    }
    if (argc < 9 || strcmp(argv[7], "--") != 0) {
        fprintf(stderr, "usage: sa-launch FD UID AS FSIZE NPROC CPU -- PROGRAM [ARGS...] | sa-launch --serve SOCKFD\n");
        return 125;
    }
    int fd = atoi(argv[1]);
    sa.sa_handler = on_kill;
    sigaction(SIGTERM, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    return run(atoll(argv[2]), atoll(argv[3]), atoll(argv[4]), atoll(argv[5]), atoll(argv[6]), NULL,
               argv + 8, NULL, NULL, fd, report_fd, &fd);
}
"""
_LAUNCHER: dict[str, str | None] = {}
_LAUNCHER_LOCK = threading.Lock()


def launcher_path() -> str | None:
    """The compiled launcher (built once per machine into the cache), or None without a C compiler.

    Cache: ``$SPEEDAUDIT_CACHE`` or ``$XDG_CACHE_HOME/speedaudit`` or ``~/.cache/speedaudit``.
    """
    with _LAUNCHER_LOCK:
        if "path" in _LAUNCHER:
            return _LAUNCHER["path"]
        compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("g++")
        digest = hashlib.sha256(_LAUNCHER_C.encode()).hexdigest()[:16]
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
                src.write_text(_LAUNCHER_C)
                exe = Path(tmp) / "sa-launch"
                done = subprocess.run([compiler, "-x", "c", "-O2", "-o", str(exe), str(src)], capture_output=True)
                if done.returncode == 0:
                    os.replace(exe, target)
                    path = str(target)
        _LAUNCHER["path"] = path
        return path


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

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.spec()!r}, uid={self.uid!r})"

    # -- the runner ------------------------------------------------------------------
    def run(self, argv, *, stdin_path, workdir, limits: Limits = Limits()) -> Execution:
        """Run ``argv`` with standard input from ``stdin_path``.

        ``workdir`` is a directory for this execution (created if missing, removed by
        the caller): the program runs in ``workdir/scratch`` (fresh, owned by the
        sandbox uid) and its standard output is kept in ``workdir/stdout`` (root-owned,
        at most ``limits.output_bytes``).
        """
        if not argv:
            raise SandboxError("empty argv: nothing to run")
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
            return self._run(argv, stdin_path, workdir, limits, uid)
        finally:
            if uid is not None and self.uid == "auto":
                _UIDS.release(uid)

    def _run(self, argv, stdin_path: Path, workdir: Path, limits: Limits, uid: int | None) -> Execution:
        scratch = workdir / "scratch"
        scratch.mkdir(exist_ok=False)
        stdout_path = workdir / "stdout"
        if uid is not None:
            os.chmod(workdir, 0o711)
            os.chown(scratch, uid, uid)
            os.chmod(scratch, 0o700)
            _check_traversable(workdir, uid)
        launcher = launcher_path()
        if launcher is None:
            return self._run_fallback(argv, stdin_path, scratch, stdout_path, limits, uid)
        pipes: list[int] = []
        try:
            inner_r = None
            if self.nest_launcher:
                # A second launcher inside the sandbox measures the program itself (see BwrapSandbox).
                inner_r, inner_w = os.pipe()
                pipes += [inner_r, inner_w]
                # the zygote hands the pipe to the sandbox as fd 3
                argv = [_staged_launcher(launcher), "3", "-1", "-1", "-1", "-1", "-1", "--", *argv]
            cmd = self.command(argv, scratch=scratch, stdin_path=stdin_path, limits=limits, uid=uid)
            lim = limits if self.confine else None
            cpu = max(1, math.ceil(lim.cpu_s)) if lim is not None and lim.cpu_s is not None else -1
            env = self.environment(scratch)
            fields = [str(uid if uid is not None else -1),
                      str(lim.memory_bytes if lim is not None and lim.memory_bytes is not None else -1),
                      str(lim.file_bytes if lim is not None else -1), str(lim.nproc if lim is not None else -1),
                      str(cpu), str(scratch), str(len(env)), *(f"{k}={v}" for k, v in env.items()), *cmd]
            payload = b"\0".join(os.fsencode(f) for f in fields)
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            pipes += [out_r, out_w, err_r, err_w]
            with open(stdin_path, "rb") as stdin, open(stdout_path, "wb") as out:
                os.chmod(stdout_path, 0o600)
                zygote = _zygote(launcher)
                t0 = time.monotonic()
                zygote.send(payload, [stdin.fileno(), out_w, err_w] + ([inner_w] if self.nest_launcher else []))
                for fd in (out_w, err_w) + ((inner_w,) if self.nest_launcher else ()):
                    os.close(fd)
                    pipes.remove(fd)
                return self._watch_zygote(zygote, t0, out, stdout_path, limits, out_r, err_r, inner_r)
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
        with open(stdin_path, "rb") as stdin, open(stdout_path, "wb") as out:
            os.chmod(stdout_path, 0o600)
            t0 = time.monotonic()
            try:
                proc = subprocess.Popen(cmd, stdin=stdin, **popen)
            except OSError as exc:
                return Execution("runtime_error", time.monotonic() - t0, 0.0, 0, None, None, stdout_path, 0,
                                 False, "", f"could not start {cmd[0]}: {exc}", self.name)
            return self._watch(proc, t0, out, stdout_path, limits)

    def _watch_zygote(self, zygote: "_Zygote", t0: float, out, stdout_path: Path, limits: Limits, out_r: int,
                      err_r: int, inner_r: int | None) -> Execution:
        # The clock starts when the launcher reports the fork (so the program gets its full
        # wall_s); until then allow one extra second.
        deadline = t0 + limits.wall_s + 1.0
        sel = selectors.DefaultSelector()
        sel.register(out_r, selectors.EVENT_READ, "out")
        sel.register(err_r, selectors.EVENT_READ, "err")
        sel.register(zygote.sock, selectors.EVENT_READ, "outer")
        if inner_r is not None:
            sel.register(inner_r, selectors.EVENT_READ, "inner")
        written = 0
        truncated = False
        err_tail = bytearray()
        inner_text = bytearray()
        killed = None
        kill_sent = 0.0
        child = None
        final = failed = None
        escalated = False

        def consume(key) -> None:
            nonlocal written, truncated
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
                err_tail.extend(chunk)
                if len(err_tail) > 2 * limits.stderr_bytes:
                    del err_tail[:-limits.stderr_bytes]
            else:
                inner_text.extend(chunk)

        try:
            while final is None and failed is None:
                now = time.monotonic()
                if killed is None and now >= deadline:
                    killed = "wall"
                    kill_sent = now
                    zygote.interrupt()
                elif killed is not None and now - kill_sent > 2.0:
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
                                deadline = time.monotonic() + limits.wall_s
                            elif parts and parts[0] == "done" and len(parts) == 6:
                                final = tuple(int(p) for p in parts[1:])
                            elif parts and parts[0] == "error":
                                failed = " ".join(parts[1:])
                    elif key.data == "out" and truncated:
                        sel.unregister(key.fd)  # over the cap: stop reading, the program is being killed
                    else:
                        consume(key)
                        if truncated and killed is None:
                            killed = "output"
                            kill_sent = time.monotonic()
                            zygote.interrupt()
            t1 = time.monotonic()
            if "outer" in {k.data for k in sel.get_map().values()}:
                sel.unregister(zygote.sock)
            drain_until = time.monotonic() + 1.0
            while sel.get_map() and time.monotonic() < drain_until:
                for key, _ in sel.select(max(0.0, drain_until - time.monotonic())):
                    if key.data == "out" and truncated:
                        sel.unregister(key.fd)
                    else:
                        consume(key)
        finally:
            sel.close()
        if final is None and not escalated and killed is None:
            raise SandboxError(f"the launcher failed ({failed}); the run was not measured")
        if final is not None:
            wstatus, wall_ns, user_us, sys_us, rss = final
            wall, cpu = wall_ns / 1e9, (user_us + sys_us) / 1e6
        else:  # escalated: we killed it ourselves
            wstatus, wall, cpu, rss = _signal.SIGKILL, t1 - t0, 0.0, 0
        inner = _parse_report(inner_text)[0]
        if inner is not None:  # the program's own status, CPU and peak RSS, measured inside the sandbox
            wstatus_in, _, user_us, sys_us, rss = inner
            cpu = (user_us + sys_us) / 1e6
            code, sig = _split_wait(wstatus_in)
        else:
            code, sig = self._translate_exit(*_split_wait(wstatus))
        tail = bytes(err_tail[-limits.stderr_bytes:]).decode("utf-8", "replace")
        status, reason = _classify(code, sig, killed, cpu, rss, tail, limits)
        failure = self._sandbox_failure(code, sig, tail)
        if failure and killed is None:
            status, reason = "runtime_error", f"sandbox failed to start the program: {failure}"
        return Execution(status, wall, cpu, rss, code, sig, stdout_path, written, truncated, tail, reason,
                         self.name)

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

        def consume(key) -> None:
            nonlocal written, truncated
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
                    elif key.data == "out" and truncated:
                        sel.unregister(key.fd)
                    else:
                        consume(key)
                        if truncated and killed is None:
                            killed = "output"
                            kill_group()
            _, wstatus, usage = os.wait4(proc.pid, 0)
            t1 = time.monotonic()
            proc.returncode = os.waitstatus_to_exitcode(wstatus)
            kill_group()  # stray descendants in its group must not outlive the run
            drain_until = time.monotonic() + 1.0
            while any(k.data != "exit" for k in sel.get_map().values()) and time.monotonic() < drain_until:
                for key, _ in sel.select(max(0.0, drain_until - time.monotonic())):
                    if key.data == "exit" or (key.data == "out" and truncated):
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


def _parse_report(text: bytes) -> tuple[tuple[int, int, int, int, int] | None, str | None]:
    """The launcher's ``done STATUS WALL_NS USER_US SYS_US MAXRSS_KB`` line, or its error."""
    final = failed = None
    for line in bytes(text).decode(errors="replace").splitlines():
        parts = line.split()
        if parts and parts[0] == "done" and len(parts) == 6:
            final = tuple(int(p) for p in parts[1:])
        elif parts and parts[0] == "error":
            failed = " ".join(parts[1:])
    return final, failed


_STAGED: dict[str, str] = {}


def _staged_launcher(launcher: str) -> str:
    """A world-readable copy of the launcher under the temp dir (bound into bwrap sandboxes)."""
    with _LAUNCHER_LOCK:
        staged = _STAGED.get(launcher)
        if staged is None or not os.path.exists(staged):
            folder = Path(tempfile.mkdtemp(prefix="speedaudit-launcher-"))
            os.chmod(folder, 0o755)
            target = folder / "sa-launch"
            shutil.copy2(launcher, target)
            os.chmod(target, 0o755)
            staged = _STAGED[launcher] = str(target)
            atexit.register(shutil.rmtree, folder, True)
        return staged


class _Zygote:
    """A launcher in serve mode, owned by one runner thread (it dies with that thread)."""

    def __init__(self, launcher: str):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen([launcher, "--serve", str(theirs.fileno())], pass_fds=(theirs.fileno(),),
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
        self.sock.close()


_THREAD = threading.local()
_ALL_ZYGOTES: list[_Zygote] = []


def _zygote(launcher: str) -> _Zygote:
    """This thread's launcher server (started on first use, restarted if it died)."""
    zygote = getattr(_THREAD, "zygote", None)
    if zygote is None or not zygote.alive():
        if zygote is not None and zygote.owner == os.getpid():
            zygote.destroy()
        zygote = _THREAD.zygote = _Zygote(launcher)
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


def _classify(code, sig, killed, cpu, rss_kb, stderr_tail, limits: Limits) -> tuple[str, str]:
    how = _decode_status(code, sig)
    if killed == "wall":
        return "timeout", f"wall limit {limits.wall_s:g} s"
    if killed == "output":
        return "runtime_error", f"output limit: wrote more than {limits.output_bytes} bytes"
    if code == 0 and sig is None:
        return "ok", how
    if limits.cpu_s is not None and (sig == _signal.SIGXCPU or
                                     (sig == _signal.SIGKILL and cpu >= math.ceil(limits.cpu_s))):
        return "timeout", f"CPU limit {limits.cpu_s:g} s ({how})"
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
    """A local child process with rlimits, an unprivileged uid and a scrubbed environment.

    Contained: CPU, memory, file size, process count, wall time, output size, its
    process group, and (as uid nobody) files that only root may write. *Not*
    contained: the network, reading world-readable files, writing into
    world-writable directories such as ``/tmp``, and a descendant that leaves the
    process group with ``setsid`` (use ``bwrap`` for those).
    """

    name = "local"


class BwrapSandbox(Sandbox):
    """The local sandbox inside bubblewrap (read-only root, private /tmp, no network, own pid namespace).

    bwrap itself runs as the unprivileged uid (unprivileged user namespaces), so
    the rlimits including RLIMIT_NPROC apply inside.
    """

    name = "bwrap"
    # bwrap's outer process does not wait for the sandboxed program, so its rusage
    # lacks the program's CPU and memory: a launcher inside the sandbox measures the
    # program and reports through an inherited pipe (wall time stays the outer one,
    # which includes the sandbox's own set-up, as a service using bwrap would see).
    nest_launcher = True

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
        root = scratch_root("speedaudit-bwrap-check-")
        try:
            empty = root / "stdin"
            empty.write_bytes(b"")
            ex = self.run(["/bin/true"], stdin_path=empty, workdir=root / "w", limits=Limits(wall_s=10))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if ex.status != "ok":
            raise SandboxError(f"bwrap cannot start a sandbox here ({ex.reason}): {ex.stderr_tail.strip()}\n"
                               "  -> bwrap needs unprivileged user namespaces "
                               "(sysctl kernel.unprivileged_userns_clone=1); or use --sandbox local")
        self._checked = True

    def command(self, argv, *, scratch, stdin_path, limits, uid):
        if not self.bwrap:
            raise SandboxError("bwrap is not installed\n  -> apt-get install bubblewrap, or use --sandbox local")
        cmd = [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               "--bind", str(scratch), str(scratch)]
        for item in argv:  # program files hidden by the private /tmp and /dev are bound read-only
            if item.startswith(("/tmp/", "/dev/shm/")) and os.path.exists(item):
                cmd += ["--ro-bind", item, item]
        cmd += ["--chdir", str(scratch), "--unshare-all", "--die-with-parent", "--", *argv]
        return cmd

    def environment(self, scratch):
        env = super().environment(scratch)
        env["TMPDIR"] = "/tmp"
        return env

    def _sandbox_failure(self, code, sig, stderr_tail):
        text = stderr_tail.strip()
        if code == 1 and text.startswith("bwrap:"):
            return text.splitlines()[0]
        return None

    def _translate_exit(self, code, sig):
        # bwrap's pid-1 reports a child killed by signal N as exit 128 + N.
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


def make_sandbox(spec: str, *, uid: int | str | None = "auto") -> Sandbox:
    """Build a sandbox from ``"local"``, ``"bwrap"`` or ``"cmd:TEMPLATE"``."""
    if not isinstance(spec, str) or not spec.strip():
        raise SandboxError("--sandbox: give local, bwrap or cmd:TEMPLATE")
    spec = spec.strip()
    if spec == "local":
        return LocalSandbox(uid=uid)
    if spec == "bwrap":
        return BwrapSandbox(uid=uid)
    if spec.startswith("cmd:"):
        return CommandSandbox(spec)
    raise SandboxError(f"--sandbox {spec!r}: unknown sandbox\n  -> use local, bwrap or cmd:TEMPLATE "
                       f"(e.g. 'cmd:prlimit --as={{memory_bytes}} -- {{argv}}')")
