"""The inner launcher (bwrap's one-shot launcher) reads a cgroup counter only from a descriptor that is one.

Under bwrap the standby hands the run cgroup's counters down as descriptors 5-8 (``cg_hand_down`` in
launcher.c); the inner launcher checks each with ``fstatfs`` before it resets and reads it. Here the one-shot
launcher is started as bwrap starts it, by hand, with descriptor 5 a real ``cpuacct.usage`` and descriptor 6 a
plain file holding a number: the peak it reports must be "none" (-1), never the file's number read as bytes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import audits.collect.sandbox as sb

CPUACCT = Path("/sys/fs/cgroup/cpuacct")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or sb.launcher_path() is None or not CPUACCT.is_dir(),
                                reason="needs root, the C launcher and a cgroup v1 cpuacct hierarchy")

#: the ``done`` line's fields (launcher.c): done STATUS WALL_NS USER_US SYS_US MAXRSS_KB TREE_CPU_US
#: TREE_RSS_KB CG_CPU_US CG_PEAK_KB OOM_KILLS DRAINED
CG_CPU, CG_PEAK = 8, 9


def _one_shot(fd5: Path, fd6: Path) -> list[str]:
    """The one-shot launcher running /bin/true as ``nobody``, with ``fd5`` and ``fd6`` open read-write as its
    descriptors 5 and 6 (the shell sets them in the child only); its ``done`` line, split."""
    command = f'exec "$0" 1 65534 {1 << 30} {1 << 20} 64 10 -- /bin/true 5<>"$1" 6<>"$2"'
    proc = subprocess.run(["sh", "-c", command, sb.launcher_path(), str(fd5), str(fd6)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    (done,) = [line.split() for line in proc.stdout.splitlines() if line.startswith("done ")]
    return done


def test_a_descriptor_that_is_not_a_cgroup_counter_is_not_read_as_one(tmp_path):
    group = CPUACCT / f"speedaudit-test-fds-{os.getpid()}"
    group.mkdir()
    try:
        number = tmp_path / "not-a-counter"
        number.write_text("999999999\n")
        done = _one_shot(group / "cpuacct.usage", number)
        assert done[CG_PEAK] == "-1"
        assert number.read_text() == "999999999\n"  # nor reset: it is not the launcher's to write
        # the real counter next to it is read (the program ran outside that group: no CPU of its own there)
        assert done[CG_CPU] == "0"
    finally:
        group.rmdir()
