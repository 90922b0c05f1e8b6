"""Sandboxes: every status through every backend, with real processes.

Measurements are checked against independent readings: the program's own
``/proc/self/status`` peak RSS (VmHWM) and ``time.process_time()``, and the test's
own monotonic clock around the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import (BwrapSandbox, CommandSandbox, Limits, LocalSandbox, SandboxError, make_sandbox,
                            parse_size, scratch_root)

PY = "/usr/bin/python3"
SANDBOXES = ["local", "bwrap", "cmd:prlimit --as={memory_bytes} -- {argv}"]


@pytest.fixture
def root():
    path = scratch_root("speedaudit-test-sandbox-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(box, code, root, *, stdin=b"", limits=None):
    stdin_path = root / f"in-{time.monotonic_ns()}"
    stdin_path.write_bytes(stdin)
    workdir = root / f"w-{time.monotonic_ns()}"
    return box.run([PY, "-c", code], stdin_path=stdin_path, workdir=workdir,
                   limits=limits or Limits(wall_s=5, memory_bytes=256 << 20))


@pytest.mark.parametrize("spec", SANDBOXES)
def test_every_status_through_every_sandbox(spec, root):
    box = make_sandbox(spec)
    box.check()
    ok = run(box, "import sys; data = sys.stdin.read(); print(data.upper(), end='')", root, stdin=b"hello 42\n")
    assert (ok.status, ok.exit_code, ok.signal) == ("ok", 0, None)
    assert ok.stdout_path.read_bytes() == b"HELLO 42\n"
    assert ok.stdout_bytes == 9 and not ok.stdout_truncated

    err = run(box, "import sys; print('boom', file=sys.stderr); sys.exit(3)", root)
    assert (err.status, err.exit_code) == ("runtime_error", 3)
    assert "boom" in err.stderr_tail and err.reason == "exit 3"

    t0 = time.monotonic()
    slow = run(box, "import time; time.sleep(30)", root, limits=Limits(wall_s=0.5, memory_bytes=256 << 20))
    outer = time.monotonic() - t0
    assert slow.status == "timeout" and slow.reason.startswith("wall limit")
    assert 0.5 <= slow.wall_s <= outer

    mem = run(box, "a = bytearray(512 << 20)", root, limits=Limits(wall_s=5, memory_bytes=128 << 20))
    assert mem.status == "memory_limit", (mem.reason, mem.stderr_tail)


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_program_runs_unprivileged_in_fresh_scratch_with_scrubbed_env(spec, root, monkeypatch):
    monkeypatch.setenv("SPEEDAUDIT_TEST_SECRET", "do-not-leak")
    box = make_sandbox(spec)
    code = ("import os, json; print(json.dumps({'uid': os.getuid(), 'cwd': os.getcwd(), "
            "'files': os.listdir('.'), 'env': sorted(os.environ)}))")
    first = run(box, code, root)
    second = run(box, code, root)
    import json
    a, b = (json.loads(ex.stdout_path.read_text()) for ex in (first, second))
    assert a["uid"] != 0 and b["uid"] != 0
    assert a["files"] == [] and b["files"] == []
    assert a["cwd"] != b["cwd"] and a["cwd"].endswith("/scratch")
    assert "SPEEDAUDIT_TEST_SECRET" not in a["env"]
    assert set(a["env"]) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "PYTHONDONTWRITEBYTECODE", "LC_CTYPE", "PWD"}


# Run alone: it compares the runner's CPU time with the program's own to within 0.2 s (the margin is the
# program's start-up and exit, ~0.05 s alone), which grows when a neighbouring worker competes for this
# 2-core machine's caches and memory bandwidth.
@pytest.mark.serial
@pytest.mark.parametrize("spec", SANDBOXES)
def test_cpu_rss_and_wall_agree_with_independent_readings(spec, root):
    """RSS = the program's own VmHWM, CPU >= its process_time, wall between its own span and ours."""
    box = make_sandbox(spec)
    code = (
        "import time, sys\n"
        "t0 = time.monotonic()\n"
        "buf = bytearray(80 << 20)\n"
        "for i in range(0, len(buf), 4096): buf[i] = 1\n"
        "x = 0\n"
        "while time.process_time() < 0.25: x += 1\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print(hwm, time.process_time(), time.monotonic() - t0)\n"
    )
    t0 = time.monotonic()
    ex = run(box, code, root)
    outer = time.monotonic() - t0
    assert ex.status == "ok", ex.reason
    hwm_kb, cpu_self, span = ex.stdout_path.read_text().split()
    assert abs(ex.max_rss_kb - int(hwm_kb)) <= 0.05 * int(hwm_kb)
    assert int(hwm_kb) >= 80 << 10
    assert float(cpu_self) <= ex.cpu_s <= float(cpu_self) + 0.2
    assert float(span) <= ex.wall_s <= outer


def test_cpu_limit_is_a_timeout(root):
    ex = run(LocalSandbox(), "while True: pass", root,
             limits=Limits(wall_s=10, cpu_s=0.5, memory_bytes=256 << 20))
    assert ex.status == "timeout" and ex.reason.startswith("CPU limit")
    # RLIMIT_CPU counts whole seconds (soft limit ceil(0.5) = 1 s, checked on scheduler ticks)
    assert ex.signal == 24 and ex.cpu_s >= 0.5  # SIGXCPU


def test_output_cap_keeps_the_first_bytes_and_flags_truncation(root):
    ex = run(LocalSandbox(), "import sys\nfor _ in range(100): sys.stdout.write('y' * 10000)", root,
             limits=Limits(wall_s=5, memory_bytes=256 << 20, output_bytes=4096))
    assert ex.status == "runtime_error" and ex.reason.startswith("output limit")
    assert ex.stdout_truncated and ex.stdout_bytes == 4096
    assert ex.stdout_path.read_bytes() == b"y" * 4096


def test_python_fallback_without_launcher_gives_the_same_statuses(root, monkeypatch):
    # Simulates a machine without a C compiler (the launcher cannot be built): the
    # Python preexec path must classify every status the same way.
    monkeypatch.setattr(sb, "LAUNCHER", {"path": None})
    for isolating in (LocalSandbox(), BwrapSandbox()):  # they need the launcher: refused, not weakened
        with pytest.raises(SandboxError, match="install gcc"):
            run(isolating, "print(1)", root)
    box = CommandSandbox("cmd:prlimit --as={memory_bytes} -- {argv}")
    assert run(box, "import os; print(os.getuid())", root).status == "ok"
    assert run(box, "raise SystemExit(4)", root).exit_code == 4
    assert run(box, "import time; time.sleep(9)", root, limits=Limits(wall_s=0.3)).status == "timeout"
    mem = run(box, "a = bytearray(512 << 20)", root, limits=Limits(wall_s=5, memory_bytes=128 << 20))
    assert mem.status == "memory_limit"


def test_command_template_expansion_and_errors(tmp_path):
    box = CommandSandbox("cmd:prlimit --as={memory_bytes} --cpu={wall_s} -- {argv}")
    cmd = box.command(["/usr/bin/python3", "-c", "print(1)"], scratch=tmp_path, stdin_path=tmp_path / "in",
                      limits=Limits(wall_s=2, memory_bytes=1 << 28), uid=None)
    assert cmd == ["prlimit", f"--as={1 << 28}", "--cpu=2", "--", "/usr/bin/python3", "-c", "print(1)"]
    box = CommandSandbox("cmd:sh -c {argv_str}")
    cmd = box.command(["echo", "a b"], scratch=tmp_path, stdin_path=tmp_path, limits=Limits(), uid=None)
    assert cmd == ["sh", "-c", "echo 'a b'"]
    with pytest.raises(SandboxError, match="never mentions the program"):
        CommandSandbox("cmd:nice -n 5")
    with pytest.raises(SandboxError, match="unknown placeholder"):
        CommandSandbox("cmd:run --dir={nowhere} {argv}")
    with pytest.raises(SandboxError, match="not an executable"):
        CommandSandbox("cmd:no-such-sandbox-tool {argv}").check()
    with pytest.raises(SandboxError, match="unknown sandbox"):
        make_sandbox("docker")


def test_bwrap_missing_gives_a_clear_message(monkeypatch):
    # bwrap is installed here; pretend it is not (cannot uninstall it for a test).
    monkeypatch.setattr(sb.shutil, "which", lambda name: None)
    box = BwrapSandbox()
    with pytest.raises(SandboxError, match="apt-get install bubblewrap"):
        box.check()


def test_workdir_unreachable_by_the_sandbox_uid_is_reported(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("these tests expect to run as root, as CI does")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o700)
    (tmp_path / "in").write_bytes(b"")
    # a program whose scratch is on the host (no private view) must reach it: refused up front
    on_host = LocalSandbox()
    on_host.private_view = False
    with pytest.raises(SandboxError, match="cannot enter"):
        on_host.run([PY, "-c", "pass"], stdin_path=tmp_path / "in", workdir=private / "w", limits=Limits(wall_s=2))
    # with its own view (local as root, bwrap) the scratch is its tmpfs: any work dir will do
    for box in (LocalSandbox(), BwrapSandbox()):
        ex = box.run([PY, "-c", "import os; print(os.getcwd())"], stdin_path=tmp_path / "in",
                     workdir=private / box.name, limits=Limits(wall_s=5))
        assert ex.status == "ok" and ex.stdout_path.read_text() == f"{private / box.name / 'scratch'}\n"


def test_limits_and_sizes_are_validated():
    assert parse_size("1G") == 1 << 30 and parse_size("256M") == 256 << 20 and parse_size("64k") == 64 << 10
    assert parse_size("1GiB") == 1 << 30 and parse_size("1000") == 1000
    for bad in ("lots", "-1G", "1X"):
        with pytest.raises(ValueError, match="not a size"):
            parse_size(bad)
    with pytest.raises(ValueError, match="wall_s"):
        Limits(wall_s=0)
    with pytest.raises(ValueError, match="16 MiB"):
        Limits(memory_bytes=1000)
    with pytest.raises(ValueError, match="nproc"):
        Limits(nproc=0)


def test_concurrent_runs_get_distinct_uids():
    pool = sb._UidPool()
    held = [pool.acquire() for _ in range(5)]
    assert len(set(held)) == 5 and all(u >= 100000 for u in held)
    for uid in held:
        pool.release(uid)
    again = [pool.acquire() for _ in range(pool.MIN_POOL)]
    # rotation: the uids released first come back last, after fresh ones
    assert again[:pool.MIN_POOL - 5] == [u for u in again if u not in held]


def test_the_launcher_is_built_here():
    # g++/cc is installed on CI (scripts/system-deps.sh): the measurement path must not
    # silently fall back to the Python one, whose peak RSS includes the runner's own.
    path = sb.launcher_path()
    assert path is not None and os.access(path, os.X_OK)


def test_the_launcher_source_is_package_data_and_its_hash_names_the_build():
    import hashlib
    import importlib.resources

    source = (importlib.resources.files("audits.collect") / "launcher.c").read_bytes()
    assert source == sb.launcher_source() and b"int main(" in source
    assert "_LAUNCHER_C" not in Path(sb.__file__).read_text()  # no C in a Python string
    assert Path(sb.launcher_path()).name == f"sa-launch-{hashlib.sha256(source).hexdigest()[:16]}"


_LEASE = """
import json, os, sys
import audits.collect.sandbox as sb
pool = sb._UidPool()
block = pool.block
print(json.dumps({"block": block, "uid": pool.acquire()}), flush=True)
sys.stdin.read()   # hold the lease until the test says so
"""


def _a_free_block() -> int:
    """A block no process holds now (other test runs may share this machine)."""
    import fcntl
    import random

    folder = sb._lease_dir()
    folder.mkdir(parents=True, exist_ok=True)
    start = random.randrange(sb.UID_BLOCKS)
    for step in range(sb.UID_BLOCKS):
        block = (start + step) % sb.UID_BLOCKS
        with open(folder / f"block-{block:03d}.lock", "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            return block  # closing the file releases it
    raise AssertionError("no free uid block")


def test_uid_blocks_are_leased_so_concurrent_processes_never_share_one(tmp_path):
    """Two processes asking for the same block (as pid % 1000 collisions did) get different ones."""
    hint = _a_free_block()
    env = {**os.environ, "SPEEDAUDIT_UID_BLOCK": str(hint), "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = [subprocess.Popen([sys.executable, "-c", _LEASE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env=env, text=True) for _ in range(2)]
    try:
        leases = [json.loads(p.stdout.readline()) for p in procs]
    finally:
        for p in procs:
            p.stdin.close()
            p.wait()
    blocks = [lease["block"] for lease in leases]
    assert len(set(blocks)) == 2 and hint in blocks
    uids = [lease["uid"] for lease in leases]
    assert len(set(uids)) == 2 and all(u >= sb.UID_BASE for u in uids)
    # once both are gone the block is free again
    again = subprocess.run([sys.executable, "-c", _LEASE], input="", capture_output=True, text=True, env=env)
    assert json.loads(again.stdout)["block"] in blocks  # a block is free again once its holder is gone


def test_a_forked_copy_leases_a_block_of_its_own():
    pool = sb._UidPool()
    parent = pool.block
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        os.close(read)
        os.write(write, str(pool.block).encode())
        os._exit(0)
    os.close(write)
    child = int(os.read(read, 100))
    os.close(read)
    os.waitpid(pid, 0)
    assert child != parent


def test_stderr_over_its_limit_fails_the_run(root):
    for spec in ("local", "bwrap"):
        ex = run(make_sandbox(spec), "import sys\nfor _ in range(64): sys.stderr.write('e' * 4096)", root,
                 limits=Limits(wall_s=5, memory_bytes=256 << 20, stderr_limit=16 << 10))
        assert ex.status == "runtime_error" and ex.reason == f"output limit: wrote more than {16 << 10} bytes to stderr"
        quiet = run(make_sandbox(spec), "import sys\nsys.stderr.write('e' * 1000)", root,
                    limits=Limits(wall_s=5, memory_bytes=256 << 20, stderr_limit=16 << 10))
        assert quiet.status == "ok" and quiet.stderr_tail == "e" * 1000


def test_the_default_is_the_strongest_sandbox_here():
    assert sb.strongest_sandbox() == "bwrap"  # bubblewrap is installed by scripts/system-deps.sh
    assert make_sandbox("auto").name == "bwrap"
    from audits.collect.campaign import CampaignSpec
    assert CampaignSpec().sandbox == "bwrap"


def test_local_says_when_it_cannot_isolate(monkeypatch):
    # We are root here; pretend not to be (cannot drop root for one test in this process).
    monkeypatch.setattr(sb.os, "geteuid", lambda: 1000)
    box = LocalSandbox()
    assert not box.isolated
    with pytest.raises(SandboxError, match="only when it runs as root"):
        box.check()


def test_scratch_quota_is_the_limit(root):
    ex = run(make_sandbox("local"), "import os\nopen('f', 'wb').write(b'x' * (6 << 20))", root,
             limits=Limits(wall_s=5, memory_bytes=256 << 20, scratch_bytes=4 << 20))
    assert ex.status == "runtime_error" and "No space left on device" in ex.stderr_tail
    ok = run(make_sandbox("local"), "import os\nopen('f', 'wb').write(b'x' * (3 << 20))", root,
             limits=Limits(wall_s=5, memory_bytes=256 << 20, scratch_bytes=4 << 20))
    assert ok.status == "ok"
