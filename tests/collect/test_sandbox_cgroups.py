"""The run's cgroup under back-to-back runs: nothing of one run is charged to the next.

Each run has a fresh cgroup, joined by its own standby child before the request; under bwrap
the launcher keeps two standby children: the one that takes the next request, and the one for
the run after it, forked between runs, which joins its own fresh cgroup while the run before
it is set up (so the RCU grace period of that migration is off the runner's path;
docs/collecting.md, "Standby child"); bwrap, the inner launcher and the program are born in the
run's cgroup. The risks, each tested here under both sandboxes through
one launcher, runs back to back as a campaign's repeats are:

* a run charged with the one before it (its CPU, its peak memory: anonymous, tmpfs, page
  cache; its OOM kill) because two runs' cgroups got mixed up;
* a standby that joined its cgroup during the run before it, counted in that run;
* the launcher mistaking the waiting standby (its own child) for an orphan of the program,
  or the program's orphans for the standby: every process of a run is gone after it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, make_sandbox, scratch_root

PY = "/usr/bin/python3"
SANDBOXES = ["local", "bwrap"]
LIMITS = Limits(wall_s=20, memory_bytes=512 << 20, scratch_bytes=96 << 20, nproc=16)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or sb.launcher_path() is None,
                                reason="per-run cgroups are made as root, by the C launcher")

# Heavy on every counter: ~0.3 s of CPU in a child nobody waits for (the cgroup counts it,
# and only it), 160 MiB of touched memory, 48 MiB written to the run's tmpfs, and a 32 MiB
# file read back (page cache the run is the first to read).
HEAVY = r"""
import os, signal
signal.signal(signal.SIGCHLD, signal.SIG_IGN)        # the kernel reaps the child itself
if os.fork() == 0:
    x = 0
    for i in range(4_000_000):
        x += i * i
    os._exit(0)
block = bytearray(160 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
with open("/tmp/fill", "wb") as f:
    f.write(os.urandom(48 << 20))
path = os.path.join(os.getcwd(), "read-me")
with open(path, "wb") as f:
    f.write(os.urandom(32 << 20))
with open(path, "rb") as f:
    while f.read(1 << 20):
        pass
x = 0
for i in range(2_000_000):
    x += i
print("done")
"""


@pytest.fixture
def root():
    path = scratch_root("speedaudit-test-cgroups-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(box, argv, root, limits=LIMITS):
    stdin_path = root / f"in-{time.monotonic_ns()}"
    stdin_path.write_bytes(b"")
    ex = box.run(argv, stdin_path=stdin_path, workdir=root / f"w-{time.monotonic_ns()}", limits=limits)
    assert ex.status == "ok", (ex.reason, ex.stderr_tail)
    return ex


@pytest.mark.parametrize("spec", SANDBOXES)
def test_a_heavy_run_leaves_nothing_in_the_next_runs_cpu_or_peak(spec, root):
    box = make_sandbox(spec)
    light = [run(box, ["/bin/true"], root) for _ in range(3)]   # the launcher and its standbys are warm
    heavy = run(box, [PY, "-c", HEAVY], root)
    after = [run(box, ["/bin/true"], root) for _ in range(3)]
    # the heavy run itself is measured in full (else the checks below would prove nothing)
    assert heavy.accounting == "cgroup", "no per-run cgroup here (docs/collecting.md): this test needs one"
    assert heavy.cpu_s >= 0.2, heavy.cpu_s
    assert heavy.max_rss_kb >= 160 << 10, heavy.max_rss_kb
    # and the runs after it, the first of which was waiting (in its cgroup) while it ran, carry
    # none of it: their figures are those of the runs before it
    ceiling_kb = max(ex.max_rss_kb for ex in light) + (8 << 10)
    for ex in after:
        assert ex.accounting == "cgroup"
        assert ex.cpu_s < 0.1, [e.cpu_s for e in after]
        assert ex.max_rss_kb < min(ceiling_kb, 32 << 10), ([e.max_rss_kb for e in light], [e.max_rss_kb for e in after])


# memfd pages are no address space: only the cgroup's limit (address space + scratch) stops them
MEMFD_FILL = r"""
import os
fds = []
while True:
    fd = os.memfd_create("fill")
    for _ in range(8):
        os.write(fd, b"x" * (1 << 20))
    fds.append(fd)
"""


@pytest.mark.parametrize("spec", SANDBOXES)
def test_an_oom_kill_is_charged_to_its_own_run_only(spec, root):
    box = make_sandbox(spec)
    small = Limits(wall_s=20, memory_bytes=64 << 20, scratch_bytes=16 << 20)
    stdin_path = root / "in-oom"
    stdin_path.write_bytes(b"")
    killed = box.run([PY, "-c", MEMFD_FILL], stdin_path=stdin_path, workdir=root / "w-oom", limits=small)
    assert killed.status == "memory_limit" and "kernel" in killed.reason, (killed.status, killed.reason)
    # a failure of the next run that is not about memory keeps its own reason: had the first
    # run's OOM kill been read as this one's, it would say memory_limit
    for _ in range(2):
        after = box.run(["/bin/false"], stdin_path=stdin_path, workdir=root / f"w-{time.monotonic_ns()}",
                        limits=small)
        assert (after.status, after.reason) == ("runtime_error", "exit 1"), (after.status, after.reason)


@pytest.mark.parametrize("spec", SANDBOXES)
def test_the_waiting_standby_is_no_orphan_and_orphans_are_reaped(spec, root):
    box = make_sandbox(spec)
    run(box, ["/bin/true"], root)
    # an orphan in the program's group and one that left it (setsid); both must be gone after
    # the run, and the next run must start (its standby was not taken for an orphan and killed)
    code = ("import os, time\n"
            "if os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n"
            "if os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
            "print(os.getuid())\n")
    ex = run(box, [PY, "-c", code], root)
    uid = int(ex.stdout_path.read_text())
    deadline = time.monotonic() + 5
    while sb._live_uids([uid]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not sb._live_uids([uid]), f"a process of uid {uid} outlived its run"
    for _ in range(3):
        assert run(box, ["/bin/true"], root).accounting == "cgroup"


def _launcher_folders(pid: int) -> list[str]:
    return [os.path.join(base, name) for base in sb._cgroup_bases() for name in os.listdir(base)
            if name.startswith(f"{pid}-")]


def _fresh_launcher(box) -> None:
    """Stop this thread's launcher for ``box``'s settings: its next run starts a new one, whose
    runs are numbered from 1 (so a test knows which folders must be there)."""
    zygote = getattr(sb._THREAD, "zygotes", {}).pop((box.netns, box.private_view, box.nest_launcher), None)
    if zygote is not None:
        zygote.destroy()


def _settled(pid: int, *, runs: int, ready: int) -> bool:
    """After ``runs`` runs, the launcher's folders are exactly its ``ready`` standbys' (runs + 1 ...),
    each in every hierarchy. (Their count alone can be right in passing: the next standby's folder
    made before the last run's is removed, one hierarchy after the other; a failed CI of
    2026-12-07 read such a moment.)"""
    return sorted(_launcher_folders(pid)) == sorted(
        os.path.join(base, f"{pid}-{seq}") for base in sb._cgroup_bases() for seq in range(runs + 1, runs + ready + 1))


def _children(pid: int) -> list[int]:
    return [int(p) for p in open(f"/proc/{pid}/task/{pid}/children").read().split()]


def _wait_for(condition, seconds: float = 10.0) -> bool:
    """Poll ``condition`` until it holds (a state to reach, not a duration to assert)."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def _gone(pid: int) -> bool:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


@pytest.mark.parametrize("spec", SANDBOXES)
def test_a_stopped_launcher_leaves_no_standby_and_no_cgroup(spec, root):
    box = make_sandbox(spec)
    _fresh_launcher(box)
    run(box, ["/bin/true"], root)
    zygote = sb._THREAD.zygotes[(box.netns, box.private_view, box.nest_launcher)]
    pid = zygote.proc.pid
    # between runs: the next run's standby (bwrap: and the one after it), each with its own cgroup
    ready = 2 if box.nest_launcher else 1
    assert _wait_for(lambda: len(_children(pid)) == ready), _children(pid)
    standbys = _children(pid)
    assert _wait_for(lambda: _settled(pid, runs=1, ready=ready)), _launcher_folders(pid)
    zygote.destroy()
    assert _wait_for(lambda: all(_gone(p) for p in standbys)), standbys
    assert _launcher_folders(pid) == []


@pytest.mark.parametrize("spec", SANDBOXES)
def test_a_run_folder_still_busy_after_the_run_is_removed_once_it_empties(spec, root):
    # A process that takes seconds to leave its run's cgroup (on a loaded machine: a killed process
    # freeing a large address space) must not leave the folder behind for the launcher's life.
    # Stand-in: a process of the test's own, put into the next run's cgroup, living past the run's
    # drain (2 s) and the closer's old patience (2 s per folder), which left the memory folder.
    box = make_sandbox(spec)
    _fresh_launcher(box)
    run(box, ["/bin/true"], root)
    pid = sb._THREAD.zygotes[(box.netns, box.private_view, box.nest_launcher)].proc.pid
    ready = 2 if box.nest_launcher else 1
    assert _wait_for(lambda: _settled(pid, runs=1, ready=ready)), _launcher_folders(pid)
    next_run = f"{pid}-2"
    lingering = subprocess.Popen(["sleep", "5"])
    try:
        for base in sb._cgroup_bases():
            with open(os.path.join(base, next_run, "prog", "cgroup.procs"), "w") as procs:
                procs.write(str(lingering.pid))
        (root / "in-busy").write_bytes(b"")
        box.run(["/bin/true"], stdin_path=root / "in-busy", workdir=root / "w-busy", limits=LIMITS)
        assert any(path.endswith("/" + next_run) for path in _launcher_folders(pid)), "the folder went while still busy?"
    finally:
        lingering.wait()
    assert _wait_for(lambda: not any(path.endswith("/" + next_run) for path in _launcher_folders(pid))), \
        _launcher_folders(pid)
    assert run(box, ["/bin/true"], root).accounting == "cgroup"
