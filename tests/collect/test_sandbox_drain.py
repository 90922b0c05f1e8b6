"""A run whose processes the kernel still holds after the program ended is flagged, not silently short.

After a run the launcher waits for the program's last processes to leave (the orphans it reaps,
then the run's cgroup) for at most 2 s (``DRAIN_NS`` in launcher.c), so that one stuck process
cannot stall a campaign. What such a process did after that is missing from ``cpu_s`` and
``max_rss_kb``, so the run's reason says so (:data:`audits.collect.sandbox.UNDRAINED_NOTE`).

A process the kernel holds is made for real here: the program's child is put into a frozen
cgroup v1 freezer (as root, by the test, from outside the sandbox), where the launcher's
SIGKILL stays pending until the test thaws it. Under ``local`` only: the program's child pid,
which it prints, is the host's pid there (bwrap gives the program a pid namespace of its own);
the drain is the same code in both (``watch`` in launcher.c, bwrap's inner launcher's too).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, make_sandbox, scratch_root

FREEZER = Path("/sys/fs/cgroup/freezer")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or sb.launcher_path() is None or not FREEZER.is_dir(),
                                reason="needs root, the C launcher and a cgroup v1 freezer hierarchy")

# The program's child names itself (its comm: the test finds it by that name in /proc), then
# would sleep for a minute; the program ends after 0.5 s.
KID = "sa-drain-kid"
PROGRAM = rf"""
import os, time
if os.fork() == 0:
    with open("/proc/self/comm", "w") as f:
        f.write("{KID}")
    time.sleep(60)
    os._exit(0)
time.sleep(0.5)
"""


def _kid() -> str | None:
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/comm").read_text().strip() == KID:
                return entry
        except OSError:  # gone meanwhile
            continue
    return None


def _freeze_child(folder: Path, stop: threading.Event) -> None:
    """Put the program's child into a frozen freezer cgroup, as soon as it has named itself."""
    while not stop.is_set():
        pid = _kid()
        if pid is not None:
            (folder / "cgroup.procs").write_text(pid)
            (folder / "freezer.state").write_text("FROZEN")
            return
        time.sleep(0.005)


def _run_in_own_launcher(program: str, *, freeze: bool) -> tuple[sb.Execution, float]:
    """One run through a launcher of its own (a fresh thread's), which is stopped afterwards, so
    the child it may still hold never meets another test's run."""
    root = scratch_root("speedaudit-drain-")
    folder = FREEZER / f"speedaudit-test-drain-{os.getpid()}-{threading.get_ident()}"
    folder.mkdir()
    result: dict = {}

    def work() -> None:
        stop = threading.Event()
        stdin = root / "stdin"
        stdin.write_bytes(b"")
        watcher = threading.Thread(target=_freeze_child, args=(folder, stop))
        if freeze:
            watcher.start()
        try:
            t0 = time.monotonic()
            result["ex"] = make_sandbox("local").run(["/usr/bin/python3", "-c",
                                                      program], stdin_path=stdin, workdir=root / "w",
                                                     limits=Limits(wall_s=20))
            result["elapsed"] = time.monotonic() - t0
        finally:
            stop.set()
            if freeze:
                watcher.join()
            (folder / "freezer.state").write_text("THAWED")   # the pending SIGKILL ends the child now
            for zygote in getattr(sb._THREAD, "zygotes", {}).values():
                zygote.destroy()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    try:
        for _ in range(400):   # the thawed child leaves the freezer folder as it dies
            if not (folder / "cgroup.procs").read_text().strip():
                break
            time.sleep(0.01)
        folder.rmdir()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return result["ex"], result["elapsed"]


def test_a_child_the_kernel_holds_is_waited_for_2_s_then_flagged():
    ex, elapsed = _run_in_own_launcher(PROGRAM, freeze=True)
    assert ex.status == "ok", ex
    assert ex.reason.endswith(sb.UNDRAINED_NOTE), ex.reason
    # the orphans' wait and the cgroup's wait are each capped at 2 s, measured to the nanosecond
    # (it was whole seconds of tv_sec: a cap could end after 1 s)
    assert 0.5 + 2 * 2.0 <= elapsed < 0.5 + 2 * 2.0 + 3.0, elapsed


def test_a_run_whose_processes_all_left_is_not_flagged():
    ex, elapsed = _run_in_own_launcher(PROGRAM, freeze=False)
    assert ex.status == "ok", ex
    assert sb.UNDRAINED_NOTE not in ex.reason
    assert elapsed < 0.5 + 2.0, elapsed
