"""What the local sandbox shares between runs, and why a hostile program gains nothing by it.

For speed, ``local`` (as root) keeps some things from one run to the next: one network
namespace per launcher (creating one per run cost 0.6 ms) and one standby child that
builds the next run's namespaces and tmpfs root before the request comes (see
docs/collecting.md, "The launcher"). Each test runs real programs through one launcher,
one after the other as a campaign's repeats do, and checks that the later run finds
nothing of the earlier one and reaches nothing of the host.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import time

import pytest

import audits.collect.sandbox as sb
from audits.collect.sandbox import Limits, make_sandbox, scratch_root

PY = "/usr/bin/python3"
LIMITS = Limits(wall_s=5, memory_bytes=256 << 20, scratch_bytes=16 << 20)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or sb.launcher_path() is None,
                                reason="the local sandbox isolates only as root, with its C launcher")


@pytest.fixture
def root():
    path = scratch_root("speedaudit-test-shared-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run(box, code, root, *, limits=LIMITS, args=()):
    stdin_path = root / f"in-{time.monotonic_ns()}"
    stdin_path.write_bytes(b"")
    ex = box.run([PY, "-c", code, *args], stdin_path=stdin_path, workdir=root / f"w-{time.monotonic_ns()}",
                 limits=limits)
    assert ex.status == "ok", (ex.reason, ex.stderr_tail)
    return ex.stdout_path.read_text()


# Run A binds abstract Unix names and TCP/UDP ports, then puts every one of those sockets in
# flight in a cycle of two Unix sockets (each carries the other's descriptor): after its last
# process dies they live on until the kernel's Unix garbage collector runs. Without the
# launcher's check (a fresh network namespace when any socket is left) the next run found
# every one of them (measured on this kernel: all six, and the run after that none).
PLANT = r"""
import socket, sys
secret = [int(b) for b in sys.argv[1]]
keep = []
for i, bit in enumerate(secret):
    if bit:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("\0speedaudit-shared-%d" % i); s.listen()
        keep.append(s)
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM); t.bind(("0.0.0.0", 4567)); t.listen(); keep.append(t)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("0.0.0.0", 4568)); keep.append(u)
n = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); n.bind((0, 0)); keep.append(n)
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
fds = [a.fileno(), b.fileno()] + [k.fileno() for k in keep]
socket.send_fds(a, [b"x"], fds)
socket.send_fds(b, [b"x"], fds)
print("planted", len(keep))
"""

PROBE = r"""
import json, socket, sys
found = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0speedaudit-shared-%d" % i); found.append("unix-%d" % i)
    except OSError:
        pass
for port, kind in ((4567, socket.SOCK_STREAM), (4568, socket.SOCK_DGRAM)):
    s = socket.socket(socket.AF_INET, kind)
    try:
        s.bind(("0.0.0.0", port))
    except OSError:
        found.append("port-%d" % port)
host = []
for port in json.loads(sys.argv[1]):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5); host.append(port)
    except OSError:
        pass
print(json.dumps({"found": found, "host": host, "sockets": open("/proc/net/unix").read().count("\n") - 1}))
"""


def test_sockets_left_in_flight_never_reach_the_next_run(root):
    box = make_sandbox("local")  # one launcher, so one network namespace for consecutive runs
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    try:
        for secret in ("10110001", "01001110"):
            assert run(box, PLANT, root, args=(secret,)).split()[0] == "planted"
            seen = json.loads(run(box, PROBE, root, args=(json.dumps([server.getsockname()[1]]),)))
            assert seen == {"found": [], "host": [], "sockets": 0}
        with pytest.raises(BlockingIOError):
            server.accept()  # no run connected to the host's loopback
    finally:
        server.close()


def test_a_clean_run_keeps_the_network_namespace_and_it_stays_empty(root):
    """Nothing left behind: the next run is in the same namespace, which has no interface up."""
    box = make_sandbox("local")
    code = ("import os, socket, json\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind('\\0speedaudit-clean')\n"
            "print(json.dumps({'ns': os.readlink('/proc/self/ns/net'), "
            "'up': sorted(n for n in os.listdir('/sys/class/net')) if os.path.isdir('/sys/class/net') else None, "
            "'if': [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]}))\n")
    first, second = (json.loads(run(box, code, root)) for _ in range(2))
    assert first["ns"] == second["ns"]  # a run that leaves no socket does not cost a new namespace
    assert first["ns"] != os.readlink("/proc/self/ns/net")
    assert first["if"] == ["lo"] and second["if"] == ["lo"]
    # and lo is down: no address to reach, not even its own (ENETUNREACH)
    probe = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=0.5)\n"
             "except OSError as exc:\n    print(exc.errno)\n")
    assert int(run(box, probe, root)) == errno.ENETUNREACH


def test_each_run_gets_the_quota_it_asks_for_although_its_root_was_made_before(root):
    """The standby child mounts the tmpfs before it knows the request: it resizes to the request's quota."""
    box = make_sandbox("local")
    code = "import os\nst = os.statvfs('/')\nprint(st.f_blocks * st.f_frsize)"
    for quota in (16 << 20, 4 << 20, 4 << 20, 32 << 20, 16 << 20):
        limits = Limits(wall_s=5, memory_bytes=256 << 20, scratch_bytes=quota)
        assert int(run(box, code, root, limits=limits)) == quota


def test_files_and_ipc_of_a_run_are_gone_for_the_next_one_from_the_same_standby_launcher(root):
    box = make_sandbox("local")
    plant = ("import os, ctypes\nfor d in ('.', '/tmp', '/var/tmp', '/dev/shm'):\n"
             "    open(os.path.join(d, 'left-behind'), 'w').write('1.03 s')\n"
             "libc = ctypes.CDLL(None, use_errno=True)\nprint(libc.shmget(0x5A5B, 4096, 0o1000 | 0o666) >= 0)\n")
    probe = ("import os, ctypes, json\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "print(json.dumps({d: sorted(os.listdir(d)) for d in ('.', '/tmp', '/var/tmp', '/dev/shm')} | "
             "{'shm': libc.shmget(0x5A5B, 4096, 0)}))\n")
    assert run(box, plant, root).strip() == "True"
    seen = json.loads(run(box, probe, root))
    assert seen.pop("shm") == -1
    # what is there: only the folders leading to this run's own (empty) scratch, at its host path
    own = {d: ([root.relative_to(d).parts[0]] if root.is_relative_to(d) else []) for d in ("/tmp", "/var/tmp", "/dev/shm")}
    assert seen == {".": [], **own}


def test_the_standby_child_dies_with_its_launcher(root):
    """The launcher keeps one child ready between runs; it must not outlive the launcher."""
    box = make_sandbox("local")
    run(box, "print(1)", root)
    zygote = next(z for z in sb._ALL_ZYGOTES if z.alive() and z.box is not None)
    deadline = time.monotonic() + 5
    while not (children := _children(zygote.proc.pid)):  # forked right after the report of the last run
        assert time.monotonic() < deadline, "no standby child"
        time.sleep(0.001)
    assert len(children) == 1  # the standby, ready for the next request
    zygote.destroy()
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{pid}") and _state(pid) != "Z" for pid in children):
        assert time.monotonic() < deadline, "the standby outlived its launcher"
        time.sleep(0.01)
    # the mount point is one directory for the machine, never the host's view of a run
    assert zygote.box == str(sb._machine_dir("speedaudit-launch") / "view") and os.listdir(zygote.box) == []
    assert run(box, "print(2)", root).strip() == "2"  # a new launcher takes over


def _children(pid: int) -> list[int]:
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as fh:
            out += [int(p) for p in fh.read().split()]
    return out


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"
