"""Hostile programs: every kind of attack a policy under RL could learn, as a real program,
under both sandboxes (``local`` as root, and ``bwrap``).

Each kind asserts three things (``contained``): the status the runner records; that
nothing escaped (no file written outside the program's scratch, no byte of the answer,
of a journal or of another run read, no connection or datagram accepted by the servers
this test runs on 127.0.0.1); and that nothing is left (no process and no file of the
sandbox's uids in the host's world-writable directories). The table of kinds is in
docs/collecting.md ("Hostile programs"); the campaign-level kinds (checker bomb, symbolic
links in a suite, uid blocks of concurrent campaigns, Dask's ``Client.run``) are in
test_hostile_campaign.py, test_campaign.py and test_dask_campaign.py.

Safety: the fork bomb stops by itself after 300 forks and its children exit after 5 s;
every loop is bounded by the wall limit; servers only listen on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, SandboxError, make_sandbox, scratch_root

PY = "/usr/bin/python3"
BOTH = ["local", "bwrap"]
LIMITS = Limits(wall_s=2.0, memory_bytes=192 << 20, nproc=16, output_bytes=1 << 20, stderr_limit=64 << 10,
                scratch_bytes=16 << 20)
ANSWER = b"ANSWER-" + secrets.token_hex(8).encode()
JOURNAL_SECRET = b"JOURNAL-" + secrets.token_hex(8).encode()
VICTIM_SECRET = b"VICTIM-" + secrets.token_hex(8).encode()
PRELUDE = "import json, os, sys, socket, time, signal, errno, ctypes\nT = json.loads(sys.argv[1])\n"


@dataclass
class World:
    """What a hostile program goes after: the host's files, servers, the measurer."""

    base: Path
    suite: Path
    input: Path
    answer: Path
    journal: Path
    canaries: list[Path]
    tcp: socket.socket
    udp: socket.socket
    programs: Path
    extra: dict = field(default_factory=dict)

    def targets(self) -> dict:
        return {"answer": str(self.answer), "suite": str(self.suite), "journal": str(self.journal),
                "canaries": [str(c) for c in self.canaries], "tcp": self.tcp.getsockname()[1],
                "udp": self.udp.getsockname()[1], **{k: v for k, v in self.extra.items() if k != "before"}}


@pytest.fixture(scope="module")
def world():
    # files an earlier holder of our uid block left (e.g. pytest keeps old tmp_path folders): not ours
    before = set(files_of_sandbox_uids(deep=True))
    base = scratch_root("speedaudit-test-hostile-")
    os.chmod(base, 0o755)  # like a suite on a shared disk: world-readable
    suite = base / "suite" / "add" / "data" / "secret"
    suite.mkdir(parents=True)
    for folder in (base / "suite", base / "suite" / "add", base / "suite" / "add" / "data", suite):
        os.chmod(folder, 0o755)
    (suite / "01.in").write_bytes(b"7 8\n")
    (suite / "01.ans").write_bytes(ANSWER + b"\n")
    journal = base / "c.parquet.journal.jsonl"
    journal.write_bytes(JOURNAL_SECRET + b"\n")
    os.chmod(journal, 0o600)
    canaries = []
    for parent in ("/tmp", "/var/tmp", "/dev/shm"):
        canary = Path(parent) / f"speedaudit-canary-{os.getpid()}-{secrets.token_hex(4)}"
        canary.mkdir()
        os.chmod(canary, 0o1777)  # world-writable, like /tmp itself
        canaries.append(canary)
    programs = base / "programs"
    programs.mkdir()
    os.chmod(programs, 0o755)
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(16)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    w = World(base, suite.parents[2], suite / "01.in", suite / "01.ans", journal, canaries, tcp, udp, programs)
    w.extra["before"] = before
    yield w
    tcp.close()
    udp.close()
    for canary in canaries:
        shutil.rmtree(canary, ignore_errors=True)
    shutil.rmtree(base, ignore_errors=True)
    assert sorted(set(files_of_sandbox_uids(deep=True)) - before) == []


@pytest.fixture(scope="module")
def cpp_bomb(world):
    src = world.programs / "bomb.cpp"
    src.write_text("#include <cstring>\n#include <vector>\nint main(){std::vector<char*> v;"
                   "for(;;){char*p=new char[16<<20];std::memset(p,1,16<<20);v.push_back(p);}}\n")
    exe = world.programs / "cppbomb" / "bomb"
    exe.parent.mkdir(mode=0o755)
    subprocess.run(["g++", "-O2", "-o", str(exe), str(src)], check=True)
    os.chmod(exe, 0o755)
    return str(exe)


def block_uids() -> range:
    first = sb.UID_BASE + sb._UIDS.block * sb.UID_BLOCK
    return range(first, first + sb.UID_BLOCK)


def live_sandbox_processes(grace_s: float = 3.0) -> list[tuple[int, int]]:
    """(pid, uid) of live (non-zombie) processes under this process's uid block.

    Waits up to ``grace_s`` for them to go: the kernel tears a pid namespace down
    asynchronously after its init was killed (a few ms).
    """
    uids = set(block_uids())
    deadline = time.monotonic() + grace_s
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                status = Path(f"/proc/{entry}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            uid = int(fields["Uid"].split()[0])
            if uid in uids and not fields["State"].strip().startswith("Z"):
                found.append((int(entry), uid))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


WORLD_WRITABLE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")


def files_of_sandbox_uids(*, deep: bool = False, extra=()) -> list[str]:
    """Files owned by the sandbox's uids in the host's world-writable directories."""
    uids = set(block_uids())
    found = []
    for top in (*WORLD_WRITABLE, *map(str, extra)):
        if not os.path.isdir(top):
            continue
        if deep:
            for dirpath, dirnames, filenames in os.walk(top, onerror=lambda e: None):
                for name in dirnames + filenames:
                    try:
                        if os.lstat(os.path.join(dirpath, name)).st_uid in uids:
                            found.append(os.path.join(dirpath, name))
                    except OSError:
                        pass
        else:
            with os.scandir(top) as it:
                for entry in it:
                    try:
                        if entry.stat(follow_symlinks=False).st_uid in uids:
                            found.append(entry.path)
                    except OSError:
                        pass
    return found


def run(spec, code, world, *, limits=LIMITS, argv=None, box=None, workdir=None):
    box = box or make_sandbox(spec)
    argv = argv or [PY, "-c", PRELUDE + code, json.dumps(world.targets())]
    workdir = workdir or world.base / f"w-{time.monotonic_ns()}"
    return box.run(argv, stdin_path=world.input, workdir=workdir, limits=limits)


def output(ex) -> bytes:
    return ex.stdout_path.read_bytes() if ex.stdout_path and ex.stdout_path.exists() else b""


def contained(ex, world) -> None:
    """Nothing escaped and nothing is left (see the module docstring; files are compared with
    what the world's creation found, which an earlier holder of the uid block may have left)."""
    seen = output(ex) + ex.stderr_tail.encode()
    assert ANSWER not in seen and JOURNAL_SECRET not in seen and VICTIM_SECRET not in seen
    assert world.answer.read_bytes() == ANSWER + b"\n"
    for canary in world.canaries:
        assert os.listdir(canary) == [], canary
    with pytest.raises(BlockingIOError):
        world.tcp.accept()[0].close()
    with pytest.raises(BlockingIOError):
        world.udp.recv(100)
    assert live_sandbox_processes() == []
    assert sorted(set(files_of_sandbox_uids(extra=world.canaries)) - world.extra["before"]) == []


FORK_BOMB = """
n = 0
for i in range(300):          # stops by itself: a broken sandbox still only sees 300 processes
    try:
        pid = os.fork()
    except OSError as exc:
        print("forks", n, exc.errno, file=sys.stderr)
        sys.exit(3)
    if pid == 0:
        time.sleep(5)
        os._exit(0)
    n += 1
print("forks", n)
"""

THREAD_BOMB = """
import threading
threads = []
try:
    for i in range(1000):
        t = threading.Thread(target=time.sleep, args=(5,), daemon=True)
        t.start()
        threads.append(t)
except (RuntimeError, MemoryError) as exc:
    print("threads", len(threads), file=sys.stderr)
    os._exit(3)
print("threads", len(threads))
os._exit(0)
"""

DAEMON = """
if os.fork() == 0:
    os.setsid()                 # leave the process group the runner kills
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(30)
        os._exit(0)
    os._exit(0)
time.sleep(0.1)
print("parent done")
"""

WRITE_OUTSIDE = """
places = [os.path.join(c, "escape") for c in T["canaries"]] + [
    "/tmp/escape-" + str(os.getpid()), "/var/tmp/escape", "/dev/shm/escape", "/etc/escape", "/escape",
    os.path.join(T["suite"], "escape"), T["answer"], "/run/lock/escape"]
for path in places:
    try:
        with open(path, "w") as fh:
            fh.write("escaped")
        print("wrote", path)
    except OSError as exc:
        print("failed", path, exc.errno)
open("inside.txt", "w").write("fine")
print("inside ok")
"""

ANSWER_VIA_FD0 = """
link = os.readlink("/proc/self/fd/0")
print("fd0", link)
for cand in (link[:-3] + ".ans" if link.endswith(".in") else link + ".ans",
             os.path.join(os.path.dirname(link), "01.ans"), "/proc/self/fd/0"):
    try:
        print("read", cand, open(cand, "rb").read())
    except OSError as exc:
        print("no", cand, exc.errno)
"""

ANSWER_BY_PATH = """
for path in (T["answer"], T["journal"]):
    try:
        print("read", open(path, "rb").read())
    except OSError as exc:
        print("no", path, exc.errno)
for folder in (T["suite"], os.path.dirname(T["answer"])):
    try:
        print("list", os.listdir(folder))
    except OSError as exc:
        print("no", folder, exc.errno)
"""

PTRACE = """
libc = ctypes.CDLL(None, use_errno=True)
ppid = os.getppid()
for request, name in ((16, "attach"), (0x4206, "seize")):
    r = libc.ptrace(request, ppid, 0, 0)
    print(name, r, ctypes.get_errno())
for what in ("mem", "environ", "maps"):
    try:
        open(f"/proc/{ppid}/{what}", "rb").read(64)
        print(what, "read")
    except OSError as exc:
        print(what, "denied", exc.errno)
"""

KILL_MEASURER = """
ppid = os.getppid()
for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGUSR1, signal.SIGSTOP):
    try:
        os.kill(ppid, sig)
        print("sent", sig)
    except OSError as exc:
        print("denied", sig, exc.errno)
time.sleep(0.3)
x = 0
while time.process_time() < 0.05:
    x += 1
print("alive")
"""

PROC_OTHERS = """
seen = []
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\\0", b" ")
        except OSError:
            continue
        seen.append(cmd)
own = b"T = json.loads"  # this program's code (also in its measurer's argv under bwrap)
print("foreign", sum(1 for c in seen if (b"pytest" in c or b"-m audits" in c) and own not in c))
print("visible", len(seen))
"""

CACHE = """
marks = [os.path.join(os.getcwd(), "cache"), os.path.join(os.environ["HOME"], "cache2"), "/tmp/cache",
         "/var/tmp/cache", "/dev/shm/cache"]
libc = ctypes.CDLL(None, use_errno=True)
found = [m for m in marks if os.path.exists(m)]
shm = libc.shmget(0x5A5A, 4096, 0)          # a System V segment outlives the process that made it
print("found", found, "shm", shm)
for m in marks:
    try:
        open(m, "w").write("1.03 s")
    except OSError:
        pass
libc.shmget(0x5A5A, 4096, 0o1000 | 0o666)   # IPC_CREAT
"""

FILL = """
total, err = 0, None
block = b"x" * (1 << 20)
try:
    with open(T["fill"], "wb") as fh:
        for _ in range(4096):
            fh.write(block)
            fh.flush()
            total += len(block)
except OSError as exc:
    err = exc.errno
print("wrote", total, "errno", err)
"""

SETUID = """
try:
    os.setuid(0)
    print("setuid ok")
except OSError as exc:
    print("setuid denied", exc.errno)
import subprocess
r = subprocess.run(["mount", "-t", "tmpfs", "none", os.getcwd()], capture_output=True)
print("mount", r.returncode)
"""

USERNS = """
libc = ctypes.CDLL(None, use_errno=True)
r = libc.unshare(0x10000000)   # CLONE_NEWUSER: caps over namespaces of its own
print("unshare", r, ctypes.get_errno())
"""

NET = """
s = socket.socket()
s.settimeout(1)
try:
    s.connect(("127.0.0.1", T["tcp"]))
    print("connected")
except OSError as exc:
    print("failed", exc.errno)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"hello", ("127.0.0.1", T["udp"]))
    print("sent")
except OSError as exc:
    print("udp failed", exc.errno)
for host in ("10.255.255.1",):   # nothing to route to (never reached: no interface is up)
    try:
        socket.create_connection((host, 9), timeout=0.2)
    except OSError as exc:
        print("route", exc.errno)
"""


@dataclass(frozen=True)
class Kind:
    code: str
    status: str
    check: object = None
    limits: Limits = LIMITS


def _lines(ex) -> str:
    return output(ex).decode(errors="replace")


#: the kinds that end at the wall limit wait it out (two of them spinning a core): 1 s shows the same kill as
#: LIMITS' 2 s (a Python start-up in a sandbox takes ~0.05 s) for half the wait and half the spinning
TIMED_OUT = replace(LIMITS, wall_s=1.0)

KINDS = {
    "endless loop": Kind("while True: pass", "timeout", lambda ex: ex.wall_s >= TIMED_OUT.wall_s and ex.signal == 9,
                         TIMED_OUT),
    "sleep past the limit": Kind("time.sleep(60)", "timeout", lambda ex: ex.signal == 9, TIMED_OUT),
    "ignoring every signal": Kind("for s in range(1, 65):\n    try:\n        signal.signal(s, signal.SIG_IGN)\n"
                                  "    except (OSError, ValueError, RuntimeError):\n        pass\nwhile True: pass",
                                  "timeout", lambda ex: ex.signal == 9, TIMED_OUT),
    "memory bomb": Kind("a = []\nwhile True: a.append(bytearray(16 << 20))", "memory_limit",
                        lambda ex: "MemoryError" in ex.stderr_tail and ex.max_rss_kb * 1024 <= LIMITS.memory_bytes),
    "raising its own rlimits": Kind(
        "import resource\nfor r in (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_FSIZE):\n"
        "    try:\n        resource.setrlimit(r, (resource.RLIM_INFINITY, resource.RLIM_INFINITY)); print('raised', r)\n"
        "    except (ValueError, OSError):\n        print('denied', r)\nsys.stdout.flush()\na = bytearray(1 << 30)",
        "memory_limit", lambda ex: "raised" not in _lines(ex) and _lines(ex).count("denied") == 3),
    "fork bomb": Kind(FORK_BOMB, "runtime_error",
                      lambda ex: ex.exit_code == 3 and int(ex.stderr_tail.split("forks")[1].split()[0]) < LIMITS.nproc),
    "thread bomb": Kind(THREAD_BOMB, "runtime_error",
                        lambda ex: ex.exit_code == 3 and int(ex.stderr_tail.split()[-1]) < LIMITS.nproc),
    "huge stdout": Kind("b = b'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.buffer.write(b)", "runtime_error",
                        lambda ex: ex.reason.startswith("output limit") and ex.stdout_truncated
                        and ex.stdout_path.stat().st_size == LIMITS.output_bytes),
    "huge stderr": Kind("b = b'e' * (1 << 20)\nfor _ in range(2048): sys.stderr.buffer.write(b)", "runtime_error",
                        lambda ex: ex.reason.startswith("output limit") and "stderr" in ex.reason
                        and len(ex.stderr_tail) <= LIMITS.stderr_bytes),
    "crash (segfault)": Kind("ctypes.string_at(0)", "runtime_error",
                             lambda ex: (ex.signal, ex.reason) == (11, "killed by SIGSEGV")),
    "crash (exception)": Kind("raise ValueError('nope')", "runtime_error",
                              lambda ex: ex.exit_code == 1 and "ValueError: nope" in ex.stderr_tail),
    "stdin starvation": Kind("print(len(sys.stdin.read()))\nsys.stdout.flush()\ninput()", "runtime_error",
                             lambda ex: _lines(ex) == "4\n" and "EOFError" in ex.stderr_tail),
    "double-fork daemon": Kind(DAEMON, "ok", lambda ex: _lines(ex) == "parent done\n"),
    "killing its process group": Kind("os.killpg(0, signal.SIGKILL)", "runtime_error", lambda ex: ex.signal == 9),
    "killing every process it can": Kind("try:\n    os.kill(-1, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
                                         "time.sleep(0.2)\nprint('alive')", "ok",
                                         lambda ex: _lines(ex) == "alive\n"),
    "writing outside scratch": Kind(WRITE_OUTSIDE, "ok",
                                    lambda ex: "inside ok" in _lines(ex) and not any(
                                        line.startswith("wrote") and not line.startswith(("wrote /tmp/", "wrote /var/tmp/",
                                                                                           "wrote /dev/shm/escape"))
                                        for line in _lines(ex).splitlines())),
    "reading /etc/shadow": Kind("try:\n    print('read', open('/etc/shadow').read())\n"
                                "except OSError as exc:\n    print('denied', exc.errno)", "ok",
                                lambda ex: _lines(ex).startswith("denied")),
    "TCP and UDP to the host's loopback": Kind(NET, "ok",
                                               lambda ex: "connected" not in _lines(ex) and "failed" in _lines(ex)),
    "reading the answer via /proc/self/fd/0": Kind(ANSWER_VIA_FD0, "ok",
                                                   lambda ex: "fd0 /memfd:speedaudit-stdin" in _lines(ex)),
    "reading the answer and the journal by path": Kind(ANSWER_BY_PATH, "ok",
                                                       lambda ex: "read" not in _lines(ex) and "list" not in _lines(ex)),
    "filling its scratch": Kind(FILL.replace('T["fill"]', '"fill.bin"'), "ok",
                                lambda ex: "errno 28" in _lines(ex)
                                and int(_lines(ex).split()[1]) <= LIMITS.scratch_bytes),
    "filling /dev/shm": Kind(FILL.replace('T["fill"]', '"/dev/shm/fill.bin"'), "ok",
                             lambda ex: "errno 28" in _lines(ex)
                             and int(_lines(ex).split()[1]) <= LIMITS.scratch_bytes),
    "one file past the file-size limit": Kind(
        "open('big', 'wb').write(b'x' * (8 << 20))", "runtime_error",
        lambda ex: ex.exit_code == 1 and "File too large" in ex.stderr_tail,  # Python ignores SIGXFSZ: EFBIG
        Limits(wall_s=2.0, memory_bytes=192 << 20, nproc=16, file_bytes=4 << 20, scratch_bytes=16 << 20)),
    "ptrace of the measurer": Kind(PTRACE, "ok",
                                   lambda ex: "attach -1" in _lines(ex) and "seize -1" in _lines(ex)
                                   and " read" not in _lines(ex)),
    "killing or stopping the measurer": Kind(KILL_MEASURER, "ok",
                                             lambda ex: _lines(ex).endswith("alive\n") and ex.cpu_s >= 0.05
                                             and ex.max_rss_kb > 1000),
    "reading other processes' command lines": Kind(PROC_OTHERS, "ok", lambda ex: "foreign 0\n" in _lines(ex)),
    "setuid(0) and a setuid-root binary": Kind(SETUID, "ok",
                                               lambda ex: "setuid denied" in _lines(ex) and "mount 0" not in _lines(ex)),
}


@pytest.mark.parametrize("spec", BOTH)
@pytest.mark.parametrize("kind", list(KINDS))
def test_hostile_program_is_recorded_and_contained(spec, kind, world):
    k = KINDS[kind]
    ex = run(spec, k.code, world, limits=k.limits)
    assert ex.status == k.status, (ex.reason, ex.stderr_tail[-500:], _lines(ex)[-500:])
    assert k.check is None or k.check(ex), (ex, _lines(ex)[-800:])
    contained(ex, world)
    # the runner carries on: the next program in the same sandbox is unaffected
    after = run(spec, "print(sum(map(int, sys.stdin.read().split())))", world)
    assert after.status == "ok" and _lines(after) == "15\n"


# Run alone: the bomb must reach the 192 MB limit before the 2 s wall limit; beside another worker, under
# a load of 17 on this 2-core machine, it was starved past the wall limit (status timeout).
@pytest.mark.serial
@pytest.mark.parametrize("spec", BOTH)
def test_cpp_memory_bomb(spec, world, cpp_bomb):
    ex = run(spec, "", world, argv=[cpp_bomb])
    assert ex.status == "memory_limit", ex.reason
    assert "bad_alloc" in ex.stderr_tail and ex.signal == 6
    contained(ex, world)


@pytest.mark.parametrize("spec", BOTH)
def test_nested_user_namespace(spec, world):
    ex = run(spec, USERNS, world)
    assert ex.status == "ok"
    result, err = _lines(ex).split()[1:]
    # bwrap: --disable-userns (ENOSPC or EPERM); local: a seccomp filter (EPERM)
    assert result == "-1" and int(err) in ((1, 28) if spec == "bwrap" else (1,))
    contained(ex, world)


@pytest.mark.parametrize("spec", BOTH)
def test_threads_and_forks_still_work_under_the_filter(spec, world):
    code = ("import threading, subprocess\n"
            "t = threading.Thread(target=print, args=('thread',)); t.start(); t.join()\n"
            "print(subprocess.run(['/bin/echo', 'child'], capture_output=True, text=True).stdout.strip())\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "print('newns', libc.unshare(0x00020000), 'ipc', libc.unshare(0x08000000))")
    ex = run(spec, code, world)
    assert ex.status == "ok", ex.stderr_tail
    # clone3 refused (ENOSYS) falls back to clone: threads and children as usual; other
    # namespaces than a user namespace still need privileges the program does not have
    assert _lines(ex) == "thread\nchild\nnewns -1 ipc -1\n"
    contained(ex, world)


@pytest.mark.parametrize("spec", BOTH)
def test_caching_across_repeats_finds_nothing(spec, world):
    box = make_sandbox(spec)  # one sandbox, one launcher: consecutive repeats, as in a campaign
    first = run(spec, CACHE, world, box=box)
    second = run(spec, CACHE, world, box=box)
    for ex in (first, second):
        assert ex.status == "ok", (ex.reason, ex.stderr_tail)
        assert _lines(ex) == "found [] shm -1\n"
        contained(ex, world)


# Run alone: a race with timing margins (the spy starts 0.5 s after the victim, which must still be
# running, and the victim sleeps 1.5 s under a 2 s wall limit); a neighbouring worker's load can push a
# Python start-up past them.
@pytest.mark.serial
@pytest.mark.parametrize("spec", BOTH)
def test_reading_another_runs_scratch(spec, world):
    box = make_sandbox(spec)
    victim_dir = world.base / f"victim-{time.monotonic_ns()}"
    victim_code = (f"open('secret.txt', 'wb').write({VICTIM_SECRET!r})\n"
                   f"open('/tmp/victim.txt', 'wb').write({VICTIM_SECRET!r})\ntime.sleep(1.5)\nprint('victim done')")
    result = {}
    victim = threading.Thread(target=lambda: result.update(ex=run(spec, victim_code, world, box=box,
                                                                  workdir=victim_dir)))
    victim.start()
    time.sleep(0.5)
    world.extra["victim"] = str(victim_dir / "scratch")
    try:
        spy = run(spec, (
            "for path in (os.path.join(T['victim'], 'secret.txt'), '/tmp/victim.txt'):\n"
            "    try:\n        print('read', open(path, 'rb').read())\n"
            "    except OSError as exc:\n        print('no', exc.errno)\n"
            "for entry in os.listdir('/proc'):\n"
            "    if entry.isdigit():\n"
            "        try:\n            print('cwd', os.listdir(f'/proc/{entry}/cwd'))\n"
            "        except OSError:\n            pass\n"), world, box=box)
    finally:
        victim.join()
        world.extra.pop("victim")
    assert result["ex"].status == "ok" and _lines(result["ex"]) == "victim done\n"
    assert spy.status == "ok" and "read" not in _lines(spy)
    contained(spy, world)
    contained(result["ex"], world)


@pytest.mark.parametrize("spec", BOTH)
def test_symlinked_input_is_never_read_as_root(spec, world):
    link = world.base / f"leak-{time.monotonic_ns()}.in"
    os.symlink("/etc/shadow", link)
    with pytest.raises(SandboxError, match="symbolic link"):
        make_sandbox(spec).run([PY, "-c", "print(input())"], stdin_path=link, workdir=world.base / "w-link",
                               limits=LIMITS)
    assert live_sandbox_processes() == []


def test_every_kind_is_in_the_documented_table():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "collecting.md").read_text()
    table = doc.split("### Hostile programs", 1)[1].split("\n## ", 1)[0]
    for kind in [*KINDS, "C++ memory bomb", "nested user namespace", "caching across repeats",
                 "reading another run's scratch", "symbolic link as the input"]:
        assert f"| {kind} |" in table, kind
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| kind")
            and not line.startswith("|---")]
    assert len(rows) >= 30


def test_scratch_and_view_are_private_and_fresh(world):
    """The program's view: no host /tmp, a private /proc, its cwd empty and its own."""
    code = ("print(json.dumps({'uid': os.getuid(), 'cwd': os.getcwd(), 'files': os.listdir('.'), "
            "'tmp': os.listdir('/tmp'), 'shm': os.listdir('/dev/shm'), 'root': sorted(os.listdir('/')), "
            "'mode': oct(os.stat('.').st_mode & 0o7777)}))")
    for spec in BOTH:
        ex = run(spec, code, world)
        seen = json.loads(_lines(ex))
        assert seen["uid"] in block_uids() and seen["files"] == [] and seen["mode"] == "0o700"
        assert not any(name.startswith("speedaudit-canary") for name in seen["tmp"] + seen["shm"])
        assert "work" not in seen["root"] and "root" not in seen["root"] and "home" not in seen["root"]
        assert stat.S_ISDIR(os.stat(world.base).st_mode)
