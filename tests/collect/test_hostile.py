"""Hostile programs: each one is a real program, contained, recorded with its status,
and a campaign full of them carries on.

Safety: the fork bomb stops by itself after 300 forks and its children exit after
5 s, so even a sandbox that enforces nothing cannot take the machine down.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, make_sandbox, scratch_root

PY = "/usr/bin/python3"
BOTH = ["local", "bwrap"]
LIMITS = Limits(wall_s=1.0, memory_bytes=256 << 20, nproc=16, output_bytes=1 << 20)


@pytest.fixture
def root():
    path = scratch_root("speedaudit-test-hostile-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(spec, argv, root, *, limits=LIMITS, stdin=b""):
    stdin_path = root / f"in-{time.monotonic_ns()}"
    stdin_path.write_bytes(stdin)
    return make_sandbox(spec).run(argv, stdin_path=stdin_path, workdir=root / f"w-{time.monotonic_ns()}",
                                  limits=limits)


def live_sandbox_processes(grace_s: float = 3.0) -> list[tuple[int, int]]:
    """(pid, uid) of live (non-zombie) processes under the uids the sandbox handed out.

    Waits up to ``grace_s`` for them to go: the kernel tears a pid namespace down
    asynchronously after its init was killed (a few ms).
    """
    deadline = time.monotonic() + grace_s
    while True:
        found = _scan_sandbox_processes()
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _scan_sandbox_processes() -> list[tuple[int, int]]:
    uids = set(sb._UIDS.issued())
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
    return found


@pytest.mark.parametrize("spec", BOTH)
def test_endless_loop_and_sleep_past_the_limit_time_out(spec, root):
    for code in ("while True: pass", "import time; time.sleep(60)"):
        ex = run(spec, [PY, "-c", code], root)
        assert ex.status == "timeout" and ex.signal == 9
        assert ex.wall_s >= LIMITS.wall_s
    assert live_sandbox_processes() == []


@pytest.mark.parametrize("spec", BOTH)
def test_memory_bombs_hit_the_memory_limit(spec, root):
    grow = run(spec, [PY, "-c", "a = []\nwhile True: a.append(bytearray(16 << 20))"], root)
    assert grow.status == "memory_limit", grow.reason
    assert "MemoryError" in grow.stderr_tail
    assert grow.max_rss_kb * 1024 <= LIMITS.memory_bytes

    src = root / "bomb.cpp"
    src.write_text("#include <cstring>\n#include <vector>\nint main(){std::vector<char*> v;"
                   "for(;;){char*p=new char[16<<20];std::memset(p,1,16<<20);v.push_back(p);}}\n")
    exe = root / "bomb"
    subprocess.run(["g++", "-O2", "-o", str(exe), str(src)], check=True)
    os.chmod(exe, 0o755)
    cpp = run(spec, [str(exe)], root)
    assert cpp.status == "memory_limit", cpp.reason
    assert "bad_alloc" in cpp.stderr_tail and cpp.signal == 6


FORK_BOMB = """
import os, sys, time
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


@pytest.mark.parametrize("spec", BOTH)
def test_fork_bomb_hits_the_process_limit_and_leaves_nothing_behind(spec, root):
    ex = run(spec, [PY, "-c", FORK_BOMB], root)
    assert ex.status == "runtime_error" and ex.exit_code == 3, (ex.reason, ex.stderr_tail)
    forks = int(ex.stderr_tail.split("forks")[1].split()[0])
    assert forks < LIMITS.nproc
    assert live_sandbox_processes() == []
    # the next run under the same sandbox is unaffected
    assert run(spec, [PY, "-c", "print(1)"], root).status == "ok"


@pytest.mark.parametrize("spec", BOTH)
def test_a_gigabyte_of_output_is_capped_recorded_and_not_stored(spec, root):
    code = "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.buffer.write(b)"
    ex = run(spec, [PY, "-c", code], root)
    assert ex.status == "runtime_error" and ex.reason.startswith("output limit")
    assert ex.stdout_truncated and ex.stdout_bytes == LIMITS.output_bytes
    assert ex.stdout_path.stat().st_size == LIMITS.output_bytes


@pytest.mark.parametrize("spec", BOTH)
def test_crashes_are_runtime_errors(spec, root):
    segv = run(spec, [PY, "-c", "import ctypes; ctypes.string_at(0)"], root)
    assert (segv.status, segv.signal, segv.reason) == ("runtime_error", 11, "killed by SIGSEGV")
    exc = run(spec, [PY, "-c", "raise ValueError('nope')"], root)
    assert (exc.status, exc.exit_code) == ("runtime_error", 1) and "ValueError: nope" in exc.stderr_tail


@pytest.mark.parametrize("spec", BOTH)
def test_reading_stdin_that_never_comes_gets_eof_not_a_hang(spec, root):
    limits = Limits(wall_s=5, memory_bytes=256 << 20)
    waits = run(spec, [PY, "-c", "import sys; data = sys.stdin.read(); print(len(data))"], root, limits=limits)
    assert waits.status == "ok" and waits.stdout_path.read_text() == "0\n"
    prompt = run(spec, [PY, "-c", "input(); input()"], root, limits=limits)
    assert prompt.status == "runtime_error" and "EOFError" in prompt.stderr_tail


@pytest.mark.parametrize("spec", BOTH)
def test_killing_its_own_process_group_or_every_process_it_can(spec, root):
    group = run(spec, [PY, "-c", "import os, signal; os.killpg(0, signal.SIGKILL)"], root)
    assert group.status == "runtime_error" and group.signal == 9
    everyone = run(spec, [PY, "-c", "import os, signal, time; os.kill(-1, signal.SIGKILL); time.sleep(0.2)"],
                   root)
    assert everyone.status in ("runtime_error", "ok")  # kill(-1) as the sandbox uid reaches only itself
    assert run(spec, [PY, "-c", "print(2)"], root).status == "ok"  # we (and the runner) are still here


NET = """
import socket, sys
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    print("connected")
except OSError as exc:
    print("failed", exc.errno)
"""


@pytest.mark.parametrize("spec", BOTH)
def test_network(spec, root):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.5)
    try:
        ex = run(spec, [PY, "-c", NET, str(server.getsockname()[1])], root,
                 limits=Limits(wall_s=5, memory_bytes=256 << 20))
        try:
            server.accept()[0].close()
            accepted = True
        except socket.timeout:
            accepted = False
    finally:
        server.close()
    assert ex.status == "ok"
    if spec == "bwrap":  # own network namespace: the host's loopback is not reachable
        assert ex.stdout_path.read_text().startswith("failed") and not accepted
    else:  # documented: the local sandbox does not contain the network
        assert ex.stdout_path.read_text() == "connected\n" and accepted


WRITE = """
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "w") as fh:
            fh.write("escaped")
        print("wrote", path)
    except OSError as exc:
        print("failed", path, exc.errno)
open("inside.txt", "w").write("fine")
print("inside ok")
"""


@pytest.mark.parametrize("spec", BOTH)
def test_writing_outside_its_directory(spec, root):
    shared = scratch_root("speedaudit-test-shared-")
    os.chmod(shared, 0o1777)  # a world-writable folder, like /tmp
    protected = scratch_root("speedaudit-test-protected-")
    os.chmod(protected, 0o755)  # root's folder
    targets = [shared / "escape.txt", protected / "escape.txt"]
    try:
        ex = run(spec, [PY, "-c", WRITE, *map(str, targets)], root, limits=Limits(wall_s=5, memory_bytes=256 << 20))
        out = ex.stdout_path.read_text()
        assert ex.status == "ok" and "inside ok" in out
        assert not targets[1].exists()  # the unprivileged uid cannot write root's folders, in both sandboxes
        if spec == "bwrap":  # read-only root and a private /tmp: nothing reaches the host
            assert not targets[0].exists()
        else:  # documented: locally a world-writable folder is writable by the sandbox uid
            assert targets[0].read_text() == "escaped"
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        shutil.rmtree(protected, ignore_errors=True)


def test_a_campaign_of_hostile_programs_carries_on_and_records_each(tmp_path):
    from test_campaign import make_suite

    from audits.collect.campaign import CampaignSpec, plan_campaign, run_campaign
    from audits.collect.suite import load_suite

    hostile = {
        "loop.py": "while True: pass",
        "sleep.py": "import time; time.sleep(60)",
        "memory.py": "a = []\nwhile True: a.append(bytearray(16 << 20))",
        "forkbomb.py": FORK_BOMB,
        "output.py": "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.buffer.write(b)",
        "segfault.py": "import ctypes; ctypes.string_at(0)",
        "killgroup.py": "import os, signal; os.killpg(0, signal.SIGKILL)",
        "stdin.py": "input(); input()",
    }
    suite_dir = make_suite(tmp_path / "suite", run_time_error=hostile, n_secret=1, n_sample=0)
    suite = load_suite(suite_dir, n_largest_optimization=1)
    spec = CampaignSpec(sandbox="bwrap", repeats=1, workers=2, test_kinds=("optimization",),
                        limits=Limits(wall_s=1.0, memory_bytes=256 << 20, nproc=16, output_bytes=1 << 20))
    result = run_campaign(plan_campaign(suite, spec), out=tmp_path / "c.parquet", progress=False)
    assert result.out is not None and not result.errors
    corpus = pd.read_parquet(result.out)
    status = dict(zip(corpus["solution"].astype(str), corpus["status"].astype(str)))
    expected = {"loop.py": "timeout", "sleep.py": "timeout", "memory.py": "memory_limit",
                "forkbomb.py": "runtime_error", "output.py": "runtime_error", "segfault.py": "runtime_error",
                "killgroup.py": "runtime_error", "stdin.py": "runtime_error"}
    for name, want in expected.items():
        assert status[f"run_time_error/{name}"] == want, name
    assert status["accepted/add.py"] == "ok"
    timeouts = corpus[corpus["status"] == "timeout"]
    assert (timeouts["duration_s"] == 1.0).all() and (timeouts["wall_s"] >= 1.0).all()
    assert live_sandbox_processes() == []


ESCAPE = """
import os, time
if os.fork() == 0:
    os.setsid()                 # leave the process group the runner kills
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    os._exit(0)
time.sleep(0.1)
print("parent done")
"""


@pytest.mark.parametrize("spec", BOTH)
def test_a_descendant_that_leaves_the_process_group_is_still_killed(spec, root):
    ex = run(spec, [PY, "-c", ESCAPE], root)
    assert ex.status == "ok" and ex.stdout_path.read_text() == "parent done\n"
    assert live_sandbox_processes() == []
