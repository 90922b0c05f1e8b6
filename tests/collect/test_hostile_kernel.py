"""Hostile programs against the kernel's shared state and the run's accounting (issue 22, items 3-5),
as real programs (Python, and C built here with cc) in the real sandboxes: ``local`` (as root),
``bwrap`` and ``auto``.

* Keyrings: a program stores a secret in every keyring it can name (its user keyring, its session
  and user-session keyrings, its persistent keyring, and a keyring of its own made world-searchable
  and linked into them); the next repeat under the same uid, a run under a uid of another block and
  another campaign (another process, its own uid block) look for it in the same places and in
  /proc/keys, and the host (root) looks in /proc/keys and /proc/key-users.
* Other shared kernel state: io_uring, memfd_secret, bpf, perf_event_open, userfaultfd refused.
* Accounting: the CPU and memory of a child that does the work and is never waited for (a zombie
  its parent leaves, or one the kernel reaps because the parent ignores SIGCHLD) are the run's; a
  run the runner kills at the wall limit carries the program's CPU and peak under bwrap too
  (checked against the program's own readings); memfd and /dev fills are bounded; priority,
  scheduling class and affinity cannot be changed (neither the program's nor its measurer's).

Every program here is bounded by the wall limit; the memory fills stop at 1 GiB.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, make_sandbox, scratch_root

PY = "/usr/bin/python3"
SANDBOXES = ["local", "bwrap", "auto"]
LIMITS = Limits(wall_s=5.0, memory_bytes=192 << 20, nproc=16, output_bytes=1 << 20, stderr_limit=64 << 10,
                scratch_bytes=16 << 20)
SECRET = "sa-secret-" + secrets.token_hex(6)
ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# the programs

KEYS = r'''
import ctypes, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_add_key, SYS_keyctl = 248, 250
USER, SESSION, USER_SESSION = -4, -3, -5
GET_PERSISTENT, SEARCH, READ, SETPERM, LINK = 22, 10, 11, 5, 8
mode, secret = sys.argv[1], sys.argv[2]
out = {}

def call(*args):
    r = libc.syscall(*args)
    return r, (ctypes.get_errno() if r < 0 else 0)

def persistent():
    return call(SYS_keyctl, GET_PERSISTENT, ctypes.c_long(-1), ctypes.c_long(USER))

rings = {"user": USER, "session": SESSION, "user-session": USER_SESSION}
serial, err = persistent()
out["persistent"] = err
if serial > 0:
    rings["persistent"] = serial
if mode == "plant":
    for name, ring in rings.items():
        out["add " + name] = call(SYS_add_key, b"user", secret.encode(), b"the answer", 10,
                                  ctypes.c_long(ring))[1]
    ring, err = call(SYS_add_key, b"keyring", (secret + "-ring").encode(), None, 0, ctypes.c_long(SESSION))
    out["add world-searchable keyring"] = err
    if ring > 0:
        out["setperm"] = call(SYS_keyctl, SETPERM, ctypes.c_long(ring), ctypes.c_long(0x3f3f3f3f))[1]
        out["add into it"] = call(SYS_add_key, b"user", secret.encode(), b"the answer", 10, ctypes.c_long(ring))[1]
        out["link into user"] = call(SYS_keyctl, LINK, ctypes.c_long(ring), ctypes.c_long(USER))[1]
else:
    found = []
    for name, ring in rings.items():
        for kind, desc in (("user", secret), ("keyring", secret + "-ring")):
            r, err = call(SYS_keyctl, SEARCH, ctypes.c_long(ring), kind.encode(), desc.encode(), ctypes.c_long(0))
            if r > 0:
                found.append(f"{kind} {desc} in {name}")
    try:
        listing = open("/proc/keys").read()
    except OSError as exc:
        listing = ""
    for line in listing.splitlines():
        if secret in line:
            found.append("/proc/keys: " + line)
            serial = int(line.split()[0], 16)
            buf = ctypes.create_string_buffer(64)
            n = libc.syscall(SYS_keyctl, READ, ctypes.c_long(serial), buf, ctypes.c_long(64))
            if n > 0:
                found.append("read " + buf.raw[:n].decode(errors="replace"))
    out["found"] = found
print(json.dumps(out))
'''

KEYS_C = r'''
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
    const long rings[] = {-4, -3, -5};
    for (int i = 0; i < 3; i++) {
        long r = syscall(SYS_add_key, "user", argv[1], "the answer", 10, rings[i]);
        printf("%ld %d\n", r, r < 0 ? errno : 0);
    }
    long p = syscall(SYS_keyctl, 22, -1L, -4L);                 /* KEYCTL_GET_PERSISTENT */
    printf("%ld %d\n", p, p < 0 ? errno : 0);
    if (p > 0) { long r = syscall(SYS_add_key, "user", argv[1], "the answer", 10, p); printf("%ld %d\n", r, r < 0 ? errno : 0); }
    return 0;
}
'''

SHARED_STATE = r'''
import ctypes, errno, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {"io_uring_setup": (425, 8, ctypes.create_string_buffer(120)), "io_uring_enter": (426, 0, 0, 0, 0, 0),
         "io_uring_register": (427, 0, 0, 0, 0), "memfd_secret": (447, 0), "bpf": (321, 0, 0, 0),
         "perf_event_open": (298, ctypes.create_string_buffer(128), 0, -1, -1, 0), "userfaultfd": (323, 0),
         "keyctl": (250, 0, -3), "add_key": (248, b"user", b"x", b"y", 1, -3), "request_key": (249, b"user", b"x", 0, 0)}
out = {}
for name, (nr, *args) in calls.items():
    r = libc.syscall(nr, *args)
    out[name] = ctypes.get_errno() if r < 0 else 0
print(json.dumps(out))
'''

PRIORITY = r'''
import json, os
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = 0
    except OSError as exc:
        out[name] = exc.errno
parent = os.getppid()
out["nice before"] = os.getpriority(os.PRIO_PROCESS, 0)
attempt("nice", lambda: os.nice(5))
attempt("setpriority self", lambda: os.setpriority(os.PRIO_PROCESS, 0, 10))
attempt("setpriority measurer", lambda: os.setpriority(os.PRIO_PROCESS, parent, 19))
attempt("setpriority group", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
attempt("SCHED_IDLE", lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)))
attempt("SCHED_BATCH", lambda: os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0)))
attempt("SCHED_IDLE measurer", lambda: os.sched_setscheduler(parent, os.SCHED_IDLE, os.sched_param(0)))
attempt("affinity self", lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
attempt("affinity measurer", lambda: os.sched_setaffinity(parent, {min(os.sched_getaffinity(0))}))
out["nice now"] = os.getpriority(os.PRIO_PROCESS, 0)
out["policy now"] = os.sched_getscheduler(0)
print(json.dumps(out))
'''

# work: ~0.3 s of CPU; the answer is printed by whoever did the work
WORK = "s = 0\nfor i in range(N): s += i * i\n"

UNWAITED = r'''
import os, signal, sys, time
how, N, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def work():
    block = bytearray(mb << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    s = 0
    for i in range(N):
        s += i * i
    print(s, time.process_time(), flush=True)          # the answer, and the worker's own CPU
if how == "parent":
    work()
    sys.exit(0)
if how == "ignored":
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)      # the kernel reaps the child: no rusage anywhere
r, w = os.pipe()
if os.fork() == 0:
    work()
    os.close(w)
    os._exit(0)
os.close(w)
os.read(r, 1)          # EOF: the child has finished; it is never waited for
time.sleep(0.05)
os._exit(0)
'''

SPLIT = r'''
import os, sys, time
# four processes of 48 MiB each at once, none ever waited for: the largest process is 48 MiB,
# the tree 192 MiB
r, w = os.pipe()
kids = []
for k in range(4):
    if os.fork() == 0:
        block = bytearray(48 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        os.write(w, b"x")
        time.sleep(0.5)
        os._exit(0)
for k in range(4):
    os.read(r, 1)
print("all four up", flush=True)
os._exit(0)
'''

SPIN = r'''
import os, time
# reports its own CPU time as it goes; killed at the wall limit
last = 0.0
while True:
    now = time.process_time()
    if now - last >= 0.01:
        os.write(1, f"{now:.4f}\n".encode())
        last = now
'''

BIG = r'''
import os, time
block = bytearray(200 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
os.write(1, f"{hwm}\n".encode())
time.sleep(60)
'''

MEMFD = r'''
import os
# many memfds of 8 MiB each (each under RLIMIT_FSIZE), up to 1 GiB, written, never mapped
fds, total = [], 0
chunk = b"x" * (1 << 20)
try:
    while total < (1 << 30):
        fd = os.memfd_create(f"fill{len(fds)}")
        for _ in range(8):
            os.write(fd, chunk)
            total += 1 << 20
        fds.append(fd)
        if total % (32 << 20) == 0:
            os.write(1, f"{total >> 20}\n".encode())
except OSError as exc:
    os.write(1, f"{total >> 20}\nerror {exc.errno}\n".encode())
    raise SystemExit(3)
os.write(1, f"{total >> 20}\ndone\n".encode())
'''

DEV_FILL = r'''
import os
written, err = 0, 0
for target in ("/dev/fill", "/dev/shm/fill"):
    n = 0
    try:
        with open(target, "wb", buffering=0) as fh:
            while n < (64 << 20):
                fh.write(b"x" * (1 << 20))
                n += 1 << 20
    except OSError as exc:
        err = exc.errno
    print(target, n >> 20, err, flush=True)
'''


# ---------------------------------------------------------------------------------------------
# fixtures and helpers


@pytest.fixture(scope="module")
def base():
    root = scratch_root("speedaudit-test-kernel-")
    os.chmod(root, 0o755)
    (root / "empty.in").write_bytes(b"")
    programs = root / "programs"
    programs.mkdir(mode=0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def keys_c(base):
    folder = base / "programs" / "keys"
    folder.mkdir(mode=0o755)
    src = folder / "keys.c"
    src.write_text(KEYS_C)
    exe = folder / "keys"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], check=True)
    os.chmod(exe, 0o755)
    return str(exe)


def run(box, code, base, *args, limits=LIMITS):
    workdir = base / f"w-{time.monotonic_ns()}"
    return box.run([PY, "-c", code, *map(str, args)], stdin_path=base / "empty.in", workdir=workdir, limits=limits)


def stdout(ex) -> str:
    return ex.stdout_path.read_text() if ex.stdout_path and ex.stdout_path.exists() else ""


def as_json(ex) -> dict:
    assert ex.status == "ok", (ex.status, ex.reason, ex.stderr_tail)
    return json.loads(stdout(ex))


def keys_on_host(secret: str) -> list[str]:
    """Lines of the host's /proc/keys (read as root) that name the secret."""
    return [line for line in Path("/proc/keys").read_text().splitlines() if secret in line]


def other_block_uid() -> int:
    """A uid of another block than this process's (no campaign holds it: we take it by hand)."""
    block = (sb._UIDS.block + 500) % sb.UID_BLOCKS
    return sb.UID_BASE + block * sb.UID_BLOCK + 7


# ---------------------------------------------------------------------------------------------
# keyrings


@pytest.mark.parametrize("spec", SANDBOXES)
def test_a_secret_in_every_keyring_reaches_no_later_run(spec, base, keys_c):
    secret = f"{SECRET}-{spec}"
    uid = sb.UID_BASE + sb._UIDS.block * sb.UID_BLOCK + 5      # one uid of our block, for both runs
    same = make_sandbox(spec, uid=uid)
    planted = as_json(run(same, KEYS, base, "plant", secret))
    # every attempt is refused by the filter (EPERM), none merely failed for want of a keyring
    assert planted and all(err == 1 for err in planted.values()), planted
    compiled = same.run([keys_c, secret], stdin_path=base / "empty.in", workdir=base / f"c-{spec}", limits=LIMITS)
    assert compiled.status == "ok", compiled.reason
    assert [line.split()[1] for line in stdout(compiled).splitlines()] == ["1"] * 4, stdout(compiled)
    # the next repeat (same uid), a uid of another block, another campaign (another process)
    assert as_json(run(same, KEYS, base, "find", secret))["found"] == []
    assert as_json(run(make_sandbox(spec, uid=other_block_uid()), KEYS, base, "find", secret))["found"] == []
    script = textwrap.dedent(f"""
        import json, sys, tempfile
        from pathlib import Path
        from audits.collect.sandbox import Limits, make_sandbox
        box = make_sandbox({spec!r})
        ex = box.run([{PY!r}, "-c", {KEYS!r}, "find", {secret!r}], stdin_path={str(base / "empty.in")!r},
                     workdir=Path(tempfile.mkdtemp(dir={str(base)!r})), limits=Limits(wall_s=5))
        print(ex.stdout_path.read_text())
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPEEDAUDIT_UID_BLOCK": str((sb._UIDS.block + 250) % sb.UID_BLOCKS)}
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["found"] == []
    # and the host sees no such key anywhere (root reads every key another uid may view)
    assert keys_on_host(secret) == []


def test_the_finder_finds_a_key_planted_outside_the_sandbox(base):
    """The finder is not blind: a key the test plants for a uid (outside any sandbox, as that uid)
    is found by the same program run under that uid without a sandbox."""
    secret = f"{SECRET}-control"
    uid = other_block_uid() + 1
    env = {"PATH": "/usr/bin:/bin"}
    plant = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c", KEYS,
                            "plant", secret], capture_output=True, text=True, env=env, cwd="/", timeout=30)
    try:
        assert json.loads(plant.stdout)["add user"] == 0, plant.stdout + plant.stderr
        find = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c", KEYS,
                               "find", secret], capture_output=True, text=True, env=env, cwd="/", timeout=30)
        assert any("in user" in f for f in json.loads(find.stdout)["found"]), find.stdout
    finally:  # clear that uid's user keyring (KEYCTL_CLEAR)
        subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", PY, "-c",
                        "import ctypes; ctypes.CDLL(None).syscall(250, 7, -4)"], env=env, cwd="/", timeout=30)


@pytest.mark.parametrize("spec", SANDBOXES)
def test_io_uring_memfd_secret_bpf_perf_userfaultfd_are_refused(spec, base):
    out = as_json(run(make_sandbox(spec), SHARED_STATE, base))
    assert out == {name: 1 for name in out}, out          # EPERM from the filter, each of them


# ---------------------------------------------------------------------------------------------
# CPU and memory of the whole tree


# Serial (OPEN, issue 22): in one fresh-clone parallel run (load ~4) the bwrap run counted 0.16 s of an
# 'ignored' child's own 0.56 s: the cgroup's CPU was read before that child's last time slices were charged.
# Alone it has passed every time; the race is recorded in docs/collecting.md's open rows and the closing note.
@pytest.mark.serial
@pytest.mark.parametrize("spec", SANDBOXES)
def test_an_unwaited_child_s_cpu_and_memory_are_the_run_s(spec, base):
    box = make_sandbox(spec)
    n = 2_000_000
    rows = {how: run(box, UNWAITED, base, how, n, 96) for how in ("parent", "zombie", "ignored")}
    for how, ex in rows.items():
        assert ex.status == "ok", (how, ex.reason, ex.stderr_tail)
        assert stdout(ex).split()[0] == str(sum(i * i for i in range(n))), how
    parent = rows["parent"]
    assert parent.cpu_s >= 0.9 * float(stdout(parent).split()[1]) > 0.05
    for how in ("zombie", "ignored"):
        ex = rows[how]
        if how == "ignored" and ex.accounting != "cgroup":
            continue  # documented: without a cgroup a child the kernel reaps itself is in no rusage
        worker = float(stdout(ex).split()[1])          # the child's own reading of its CPU
        assert ex.cpu_s >= 0.9 * worker, (how, ex.cpu_s, worker)
        # and the same work done in the parent: the same order (CPU per work moves with the load
        # of this shared machine, so the margin is wide; the reading above is the exact check)
        assert parent.cpu_s / 3 <= ex.cpu_s <= 3 * parent.cpu_s, (how, ex.cpu_s, parent.cpu_s)
        assert ex.max_rss_kb >= 96 << 10, (how, ex.max_rss_kb)
    assert rows["zombie"].accounting == ("cgroup" if sb._cgroup_bases() else "rusage")


@pytest.mark.parametrize("spec", SANDBOXES)
def test_memory_split_across_unwaited_children_is_summed(spec, base):
    ex = run(make_sandbox(spec), SPLIT, base, limits=Limits(wall_s=5, memory_bytes=256 << 20, nproc=16))
    assert ex.status == "ok", (ex.reason, ex.stderr_tail)
    assert ex.accounting == "cgroup", "no per-run cgroup here: the tree's peak is not its sum (docs/collecting.md)"
    assert ex.max_rss_kb >= 4 * 48 << 10, ex.max_rss_kb


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_a_timeout_row_carries_the_program_s_cpu_and_peak(spec, base):
    box = make_sandbox(spec)
    spin = run(box, SPIN, base, limits=Limits(wall_s=1.0))
    assert spin.status == "timeout"
    own = float(stdout(spin).split()[-1])              # the program's last reading of its own CPU
    assert own > 0.05, own
    assert abs(spin.cpu_s - own) <= 0.1 * own + 0.03, (spin.cpu_s, own)
    big = run(box, BIG, base, limits=Limits(wall_s=1.5, memory_bytes=512 << 20))
    assert big.status == "timeout"
    hwm = int(stdout(big).split()[0])
    assert abs(big.max_rss_kb - hwm) <= 0.1 * hwm, (big.max_rss_kb, hwm)


# ---------------------------------------------------------------------------------------------
# memory that is not address space, /dev


@pytest.mark.parametrize("spec", SANDBOXES)
def test_memfd_pages_count_against_the_memory_limit(spec, base):
    ex = run(make_sandbox(spec), MEMFD, base)
    lines = stdout(ex).split()
    assert "done" not in lines, "1 GiB of memfd pages under a 192 MiB limit"
    if ex.accounting != "cgroup":
        pytest.fail("no per-run memory cgroup here: memfd pages are bounded per file only (docs/collecting.md)")
    limit_mb = (LIMITS.memory_bytes + LIMITS.scratch_bytes) >> 20
    assert ex.status == "memory_limit", (ex.status, ex.reason)
    assert int([x for x in lines if x.isdigit()][-1]) <= limit_mb, lines


@pytest.mark.parametrize("spec", SANDBOXES)
def test_dev_is_no_unbounded_tmpfs(spec, base):
    ex = run(make_sandbox(spec), DEV_FILL, base)
    assert ex.status == "ok", (ex.reason, ex.stderr_tail)
    quota_mb = LIMITS.scratch_bytes >> 20
    for line in stdout(ex).splitlines():
        target, mb, err = line.split()
        # /dev: read-only (bwrap) or root's folder on the run's one quota'd tmpfs (local); /dev/shm: the quota
        assert int(mb) <= quota_mb and int(err) in (13, 28, 30), line   # EACCES, ENOSPC or EROFS


# ---------------------------------------------------------------------------------------------
# priority, scheduling class, affinity


@pytest.mark.parametrize("spec", SANDBOXES)
def test_priority_scheduling_class_and_affinity_cannot_be_changed(spec, base):
    out = as_json(run(make_sandbox(spec), PRIORITY, base))
    # the program starts at the collector's niceness (0, or whatever `nice make test` gave it) and stays there
    before = out.pop("nice before")
    assert before == os.getpriority(os.PRIO_PROCESS, 0), out
    assert out.pop("nice now") == before and out.pop("policy now") == os.SCHED_OTHER, out
    assert out == {name: 1 for name in out}, out          # EPERM from the filter, each of them


# ---------------------------------------------------------------------------------------------
# through a campaign: the rows and the manifest


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_a_campaign_counts_the_unwaited_child_and_names_its_accounting(spec, tmp_path):
    from test_campaign import make_suite

    from audits.collect.campaign import CampaignSpec, manifest_path_for, plan_campaign, run_campaign
    from audits.collect.suite import load_suite

    hidden = ("import os, signal, sys\nsignal.signal(signal.SIGCHLD, signal.SIG_IGN)\nr, w = os.pipe()\n"
              "if os.fork() == 0:\n    s = 0\n    for i in range(1500000): s += i\n"
              "    print(sum(map(int, input().split())), flush=True)\n    os._exit(0)\n"
              "os.close(w)\nos.read(r, 1)\n")
    suite = load_suite(make_suite(tmp_path / "suite", accepted={"hidden.py": hidden}, n_secret=1, n_sample=0),
                       n_largest_optimization=1)
    out = tmp_path / "c.parquet"
    result = run_campaign(plan_campaign(suite, CampaignSpec(sandbox=spec, repeats=1, workers=1)), out=out,
                          progress=False)
    import pandas as pd

    corpus = pd.read_parquet(result.out)
    manifest = json.loads(manifest_path_for(result.out).read_text())
    assert manifest["accounting"] == sb.accounting(spec)
    rows = corpus[corpus["solution"].astype(str) == "accepted/hidden.py"]
    assert len(rows) and (rows["status"] == "ok").all()
    if sb._cgroup_bases():
        assert manifest["accounting"].startswith("cgroup")
        # the kernel reaped the worker (SIGCHLD ignored): only the cgroup counts its ~0.1 s
        assert (rows["cpu_s"] >= 0.05).all(), rows["cpu_s"].tolist()


def test_without_a_cgroup_a_bwrap_timeout_row_is_still_the_program_s(base):
    """The rusage fall-back (no cgroup: e.g. a cgroup-v2-only machine): the runner ends a bwrap
    run through the inner launcher's kill line, which measures the program as for any end."""
    script = textwrap.dedent(f"""
        import json, tempfile
        from pathlib import Path
        import audits.collect.sandbox as sb
        sb._CGROUP["bases"] = ()          # as on a machine without the v1 hierarchies
        box = sb.make_sandbox("bwrap")
        ex = box.run([{PY!r}, "-c", {SPIN!r}], stdin_path={str(base / "empty.in")!r},
                     workdir=Path(tempfile.mkdtemp(dir={str(base)!r})), limits=sb.Limits(wall_s=1.0))
        print(json.dumps([ex.status, ex.cpu_s, ex.accounting, ex.stdout_path.read_text().split()[-1]]))
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    status, cpu, how, own = json.loads(done.stdout)
    assert (status, how) == ("timeout", "rusage")
    assert abs(cpu - float(own)) <= 0.1 * float(own) + 0.03, (cpu, own)


def test_timeout_rows_under_bwrap_equal_local_s(base):
    """The same timeout rows under both sandboxes: a spin loop stopped by the CPU limit (so both
    get the same CPU whatever the machine's load) and a 200 MB program stopped at the wall limit."""
    rows = {}
    for spec in ("local", "bwrap"):
        box = make_sandbox(spec)
        # the wall limit is far beyond the CPU limit, so that the CPU limit stops the spin loop even
        # when a loaded machine gives it a small share of a core (a full parallel test run on 2
        # cores once read 0.84 s under bwrap with a 10 s wall limit, reason not recorded)
        rows[spec] = (run(box, "while True: pass", base, limits=Limits(wall_s=30.0, cpu_s=1.0)),
                      run(box, BIG, base, limits=Limits(wall_s=1.5, memory_bytes=512 << 20)))
    (spin_l, big_l), (spin_b, big_b) = rows["local"], rows["bwrap"]
    assert {spin_l.status, spin_b.status, big_l.status, big_b.status} == {"timeout"}
    assert all(row.reason.startswith("CPU limit") for row in (spin_l, spin_b)), (spin_l.reason, spin_b.reason)
    # Both are the program's CPU at its CPU limit, not the sandbox's few ms (the bug: 1.97 ms under bwrap).
    # The band is relative to the limit that stopped them: on the idle machine both read 1.004 s (3 runs
    # each); under a full test run on 2 cores CI read 0.98 (local) and 1.08 (bwrap), the SIGXCPU landing a
    # few scheduler ticks late and the start-up before the cgroup join differing with the load.
    for row in (spin_l, spin_b):
        assert abs(row.cpu_s - 1.0) <= 0.15, (row.sandbox, row.cpu_s)
    assert abs(spin_b.cpu_s - spin_l.cpu_s) <= 0.15 * spin_l.cpu_s, (spin_b.cpu_s, spin_l.cpu_s)
    assert abs(big_b.max_rss_kb - big_l.max_rss_kb) <= 0.1 * big_l.max_rss_kb, (big_b.max_rss_kb, big_l.max_rss_kb)
    assert big_l.max_rss_kb >= 200 << 10
