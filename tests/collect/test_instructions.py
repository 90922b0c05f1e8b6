"""Instruction counts (issue 25 item 2): real valgrind runs of tiny Python and C++ programs.

The counted command of :func:`audits.collect.counters.valgrind_argv` is run directly and through every
sandbox with a report channel (``Sandbox.run(report=True)``: the program's fd 3, moved into valgrind's
reserved range). Checks: the same count on repeats, a different program gives a different count, and a
hostile program that prints fake summaries on its standard output and error, writes them to every
descriptor it can reach and tries to reopen valgrind's through /proc does not change the report; a program
that hides its work behind an exec, or in a child that kills itself, gets no count (None), not a small one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from audits.collect.counters import (FIXED_ENVIRONMENT, LOG_FD, NOFILE, parse_valgrind_log, resolved_binary,
                                     valgrind_argv)
from audits.collect.sandbox import Limits, SandboxError, make_sandbox, scratch_root

# valgrind is installed by scripts/system-deps.sh (make test runs it), so these tests run everywhere make test
# does; slow: the file takes two minutes or more under make test's load (142 s in CI), so it is handed out first
pytestmark = pytest.mark.slow

#: Debian's Python, the collector's default interpreter (audits.collect.languages.DEFAULT_PYTHON), also for the
#: counts taken outside a sandbox: under valgrind it executes a third of the instructions of this venv's
#: pyenv build (56 M against 169 M for LOOP at n=20 000; 1.5 s of CPU against 2.6 s a run), and what is
#: checked (repeats agree, more work counts more, forgeries change nothing) is the same with either
PY = resolved_binary("/usr/bin/python3")
LOOP = "s = 0\nfor i in range({n}):\n    s += i * i\nprint(s, len(set(str(i) for i in range(50))))\n"
FORGED = 777
HOSTILE = """import os, sys
line = ("==%d== Command: prog\\n==%d== I   refs:      {forged}\\n" % (os.getpid(), os.getpid())).encode()
sys.stdout.write(line.decode()); sys.stdout.flush()
sys.stderr.write(line.decode()); sys.stderr.flush()
refused = 0
for fd in range(3, 1024):
    try:
        os.write(fd, line)
    except OSError:
        refused += 1
reopened = []
for fd in range(1024 - 12, 1024) if {reopen} else ():  # valgrind's reserved descriptors naming its report
    path = "/proc/self/fd/%d" % fd
    if not os.path.lexists(path) or os.readlink(path) != os.readlink("/proc/self/fd/{log_fd}"):
        continue
    try:
        again = os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    try:
        os.write(again, line)
        reopened.append(os.readlink("/proc/self/fd/%d" % again))
    except OSError:
        pass
    os.close(again)
print("refused", refused, "reopened", len(reopened), *reopened)
"""
HOSTILE_SAME_UID = HOSTILE.replace("{forged}", f"{FORGED:,}").replace("{reopen}", "False")
HOSTILE = HOSTILE.replace("{forged}", f"{FORGED:,}").replace("{log_fd}", str(LOG_FD)).replace("{reopen}", "True")
#: writes a forged summary into every descriptor valgrind reserved, reopened through /proc (its own
#: semaphore pipe among them: valgrind aborts); what it may cause is no count, never the forged one
SABOTAGE = """import os
line = ("==%d== Command: prog\\n==%d== I   refs:      777\\n" % (os.getpid(), os.getpid())).encode()
for fd in range(1024 - 12, 1024):
    try:
        again = os.open("/proc/self/fd/%d" % fd, os.O_WRONLY | os.O_NONBLOCK)
        os.write(again, line)
        os.close(again)
    except OSError:
        pass
print("done")
"""


def counted(argv, *, stdin: bytes = b"") -> tuple[int | None, str, str, str]:
    """Run ``argv`` counted; returns (count, reason, stdout, stderr). The report comes through our own pipe."""
    read, write = os.pipe()
    try:
        proc = subprocess.run(valgrind_argv(argv, inherited_fd=write), input=stdin, capture_output=True,
                              pass_fds=(write,), timeout=600)
        os.close(write)
        write = -1
        log = b""
        while chunk := os.read(read, 1 << 16):
            log += chunk
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    count, reason = parse_valgrind_log(log)
    return count, reason, proc.stdout.decode(), proc.stderr.decode()


#: LOOP, after a line naming the hash seed and a string's hash (test_the_counted_run_fixes_python_hash_seed)
SEEDED_LOOP = "import os\nprint(os.environ.get('PYTHONHASHSEED'), hash('speedaudit'))\n" + LOOP


@pytest.fixture(scope="module")
def small_twice(tmp_path_factory):
    """Two counted runs of one small Python program outside a sandbox: what the repeat test and the hash-seed
    test both need (each ran its own pair: two Python start-ups under valgrind, ~1.5 s of CPU each, saved)."""
    small = tmp_path_factory.mktemp("counted") / "small.py"
    small.write_text(SEEDED_LOOP.format(n=20_000))
    return [counted([PY, str(small)]) for _ in range(2)]


def test_python_counts_are_identical_across_repeats_and_follow_the_work(tmp_path, small_twice):
    big = tmp_path / "big.py"
    big.write_text(SEEDED_LOOP.format(n=60_000))
    first, second = small_twice
    assert first[0] is not None, first[1]
    assert first[0] == second[0]
    assert first[2] == second[2] and first[2].split("\n", 1)[1] == f"{sum(i * i for i in range(20_000))} 50\n"
    larger = counted([PY, str(big)])[0]
    assert larger > first[0]  # three times the loop: more instructions, not the same constant


def test_cpp_counts_are_identical_across_repeats(tmp_path):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.fail("no g++: scripts/system-deps.sh installs it (make test runs it first)")
    src = tmp_path / "sum.cpp"
    src.write_text('#include <cstdio>\nint main(){long n,s=0;if(scanf("%ld",&n)!=1)return 1;'
                   'for(long i=0;i<n;i++)s+=i*i%7;printf("%ld\\n",s);}\n')
    exe = tmp_path / "sum"
    subprocess.run([gxx, "-O2", "-o", str(exe), str(src)], check=True)
    runs = [counted([str(exe)], stdin=b"100000\n") for _ in range(2)]
    assert runs[0][0] is not None and runs[0][0] == runs[1][0]
    assert runs[0][2] == f"{sum(i * i % 7 for i in range(100000))}\n"
    more = counted([str(exe)], stdin=b"300000\n")[0]
    assert more > runs[0][0]


def test_the_counted_run_fixes_python_hash_seed(small_twice):
    outs = {out.split("\n", 1)[0] for _, _, out, _ in small_twice}  # its first line: the seed and a str's hash
    assert len(outs) == 1 and outs.pop().startswith(f"{FIXED_ENVIRONMENT['PYTHONHASHSEED']} ")


def test_a_program_printing_fake_summaries_does_not_change_the_count(tmp_path):
    hostile = tmp_path / "hostile.py"
    hostile.write_text(HOSTILE_SAME_UID)  # as root, like the test: /proc/self/fd/1020 would reopen (docs)
    count, reason, out, err = counted([PY, str(hostile)])
    # the forgery would work on the program's own channels ...
    assert parse_valgrind_log(out)[0] == FORGED and parse_valgrind_log(err)[0] == FORGED
    # ... but not on the report: valgrind's summary only, the program's instructions (far more than 777)
    assert count is not None, reason
    assert count > 10 * FORGED
    assert count != FORGED
    # every descriptor of valgrind's reserved range (the log among them) refused the program's write
    refused = int(out.split("refused ")[1].split()[0])
    assert refused == NOFILE - 3  # fds 3..1023: closed ones and valgrind's reserved 12, the log among them


# --------------------------------------------------------------------------- through the sandboxes

SYSTEM_PY = PY  # readable by the sandboxes' uids (a pyenv under /root is not)
SANDBOXES = ["local", "bwrap", "auto"]


@pytest.fixture
def root():
    path = scratch_root("speedaudit-test-instructions-")
    (path / "src").mkdir()
    os.chmod(path / "src", 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def boxed(spec: str, root: Path, source: str, *, name: str = "prog.py"):
    """``source`` run by the system Python, counted, in sandbox ``spec`` (skipped where it cannot run here)."""
    box = make_sandbox(spec)
    try:
        box.check()
    except SandboxError as exc:
        pytest.fail(f"{spec} cannot run here: {exc} (scripts/system-deps.sh installs bubblewrap)")
    program = root / "src" / name
    program.write_text(source)
    os.chmod(program, 0o644)
    stdin = root / f"{name}.in"
    stdin.write_bytes(b"")
    workdir = root / f"w-{name}-{len(list(root.iterdir())):04d}"  # one length: a path's length moves the count
    ex = box.run(valgrind_argv([SYSTEM_PY, str(program)], inherited_fd=3), stdin_path=stdin, workdir=workdir,
                 limits=Limits(wall_s=120), report=True)
    return ex, (workdir / "stdout").read_text(), parse_valgrind_log(ex.report)


@pytest.mark.parametrize("spec", SANDBOXES)
def test_the_report_channel_keeps_the_count_from_a_forging_program_in_every_sandbox(spec, root):
    ex, out, (count, reason) = boxed(spec, root, HOSTILE)
    assert ex.status == "ok", (ex.reason, ex.stderr_tail)
    assert parse_valgrind_log(out)[0] == FORGED and parse_valgrind_log(ex.stderr_tail)[0] == FORGED
    assert count is not None, reason
    assert count > 10 * FORGED
    assert f"I   refs:      {FORGED:,}" not in ex.report.decode()  # nothing of the program's reached the report
    words = out.split()
    refused, reopened = int(words[words.index("refused") + 1]), int(words[words.index("reopened") + 1])
    assert refused == NOFILE - 3  # fd 3 (the channel's number) closed before valgrind, the rest closed or reserved
    assert reopened == 0  # /proc/self/fd/1020 names the runner's pipe (root's, 0600): another uid cannot open it
    # the same program, twice: the same count (the forgery does not move it either way), up to what its pid
    # moves: it formats its pid, which under local is the machine's (a fresh machine's pids cross from 4 to 5
    # digits: CI saw 43731408 then 43731503; measured 74-157 instructions between 3-, 4- and 5-digit pids).
    # 1e-5 of the count (437) is 3x that, and far below what a random hash seed moves it (2e-4 to 1.3e-3)
    again = boxed(spec, root, HOSTILE)[2][0]
    assert again is not None and abs(again - count) <= 1e-5 * count, (again, count)


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_counts_in_a_sandbox_repeat_and_follow_the_work(spec, root):
    small = boxed(spec, root, LOOP.format(n=20_000), name="small.py")
    again = boxed(spec, root, LOOP.format(n=20_000), name="small.py")
    big = boxed(spec, root, LOOP.format(n=60_000), name="big.py")
    assert small[2][0] is not None, small[2][1]
    assert small[2][0] == again[2][0]  # another job folder, the same program's path: exact (docs/collecting.md)
    assert big[2][0] > small[2][0]


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_a_program_reopening_valgrinds_descriptors_gets_no_count_or_the_true_one(spec, root):
    ex, _, (count, reason) = boxed(spec, root, SABOTAGE)
    assert count != FORGED
    assert count is None or count > 10 * FORGED, reason


def test_work_hidden_behind_an_exec_or_a_fork_gives_no_count(root):
    hidden = "import os\ns = sum(i * i for i in range(200000))\nprint(s, flush=True)\nos.execv('/bin/true', ['true'])\n"
    ex, out, (count, reason) = boxed("local", root, hidden, name="exec.py")
    assert ex.status == "ok" and out.strip() == str(sum(i * i for i in range(200000)))
    assert count is None and "exec" in reason
    # a fork's count includes its parent's up to the fork (summing would count that twice)
    child = ("import os\ns = sum(i * i for i in range(200000))\npid = os.fork()\nif pid == 0:\n    print(s, "
             "flush=True)\n    os._exit(0)\nos.waitpid(pid, 0)\n")
    ex, out, (count, reason) = boxed("local", root, child, name="child.py")
    assert ex.status == "ok" and out.strip() == str(sum(i * i for i in range(200000)))
    assert count is None and "forked without exec" in reason
    # fork + exec (subprocess): each program counted from its own start, and summed
    spawn = "import subprocess\nsubprocess.run(['/bin/true'], check=True)\nprint('spawned')\n"
    ex, out, (count, reason) = boxed("local", root, spawn, name="spawn.py")
    assert ex.status == "ok" and out == "spawned\n"
    assert count is not None, reason
    assert ex.report.decode().count("Command: ") == 2


def test_a_sandbox_without_a_report_channel_refuses_one(root):
    box = make_sandbox("cmd:{argv}")
    (root / "in").write_bytes(b"")
    with pytest.raises(SandboxError, match="no report channel"):
        box.run(["/bin/true"], stdin_path=root / "in", workdir=root / "w", limits=Limits(wall_s=5), report=True)


def test_the_report_channel_is_fd_3_and_nothing_else_is_added(root):
    """Without valgrind: what the program finds on fd 3 is the channel, and without ``report`` fd 3 is closed."""
    (root / "in").write_bytes(b"")
    for spec in ("local", "bwrap"):
        box = make_sandbox(spec)
        try:
            box.check()
        except SandboxError:
            continue
        probe = ["/bin/sh", "-c", "echo via-3 >&3 && ls /proc/self/fd"]
        ex = box.run(probe, stdin_path=root / "in", workdir=root / f"w-{spec}", limits=Limits(wall_s=10), report=True)
        assert ex.status == "ok" and ex.report == b"via-3\n", (spec, ex.reason, ex.stderr_tail)
        # 0-3, and ls's own directory descriptor (4): nothing else of the launchers' or bwrap's
        assert sorted(int(fd) for fd in (root / f"w-{spec}" / "stdout").read_text().split()) == [0, 1, 2, 3, 4]
        plain = box.run(probe, stdin_path=root / "in", workdir=root / f"p-{spec}", limits=Limits(wall_s=10))
        assert plain.status == "runtime_error" and plain.report is None


# --------------------------------------------------------------------------- collect --measure instructions

SLOW_ADD = ("a, b = map(int, input().split())\ns = 0\nfor i in range(100000):\n    s += i\n"
            "print(a + b)\n")
#: right answer, but a fork without exec: valgrind's count of the child includes the parent's (no count)
FORKS = "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint(sum(map(int, input().split())))\n"


@pytest.mark.parametrize("spec", ["local", "bwrap"])
def test_collect_measure_instructions_fills_the_column_and_the_manifest(spec, tmp_path, capsys):
    import json

    import numpy as np
    import pandas as pd

    from audits.cli import main as cli_main
    from tests.collect.test_campaign import ADD, ADD_CPP, make_suite

    try:
        make_sandbox(spec).check()
    except SandboxError as exc:
        pytest.fail(f"{spec} cannot run here: {exc} (scripts/system-deps.sh installs bubblewrap)")
    if shutil.which("g++") is None:
        pytest.fail("no g++: scripts/system-deps.sh installs it (make test runs it first)")
    # one test: every check below is per cell or per language, and each cell's repeats are what the determinism
    # check compares (a sample test doubled the Python runs under valgrind, ~1.5 s of CPU each, for no check)
    suite = make_suite(tmp_path / "suite", accepted={"add.py": ADD, "slow.py": SLOW_ADD, "add.cpp": ADD_CPP,
                                                     "forks.py": FORKS}, n_secret=1, n_sample=0)
    out = tmp_path / "counted.parquet"
    code = cli_main(["collect", str(suite), "--out", str(out), "--sandbox", spec, "--measure", "instructions",
                     "--repeats", "2", "--timeout", "2", "--no-progress", "--no-probe"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "instructions counted by valgrind" in printed.out
    corpus = pd.read_parquet(out)
    assert corpus["instructions"].dtype == np.float64
    real = corpus[corpus["role"] != "floor"]
    forks = real[real["solution"].str.endswith("forks.py")]
    assert (forks["status"] == "ok").all() and len(forks) == 2  # one test, two repeats
    assert forks["instructions"].isna().all()  # no count it could trust: n/a, never 0
    assert forks["reason"].str.contains("instructions n/a: process .* forked without exec").all()
    timed = corpus[~corpus["solution"].str.endswith("forks.py")]  # the floors too: counted like the rest
    assert (timed["status"] == "ok").all(), timed[["solution", "status", "reason"]]
    assert (timed["instructions"] > 0).all()
    per_cell = timed.groupby(["problem", "test", "solution"])["instructions"]
    assert (per_cell.nunique() == 1).all(), per_cell.unique()  # deterministic programs: the same count each repeat
    assert (per_cell.size() >= 2).all()
    cells = timed[timed["role"] != "floor"].groupby(["test", "solution"])["instructions"].first().unstack()
    add = next(c for c in cells.columns if c.endswith("add.py"))
    slow = next(c for c in cells.columns if c.endswith("slow.py"))
    assert len(cells) == 1 and (cells[slow] > cells[add]).all()  # the 100 000-step loop: more instructions
    manifest = json.loads(out.with_name(out.name + ".campaign.json").read_text())
    counter = manifest["instructions"]
    assert counter["tool"] == "valgrind" and counter["version"].startswith("valgrind-")
    assert counter["environment"] == {"PYTHONHASHSEED": "0"}
    assert set(counter["slowdown"]) == {"python", "cpp"} and all(x >= 1 for x in counter["slowdown"].values())
    for language, slowdown in counter["slowdown"].items():
        assert counter["wall_limit_s"][language] == pytest.approx(2 * slowdown)
        floor = counter["floor_s"][language]
        assert floor["counted_median_s"] > floor["native_median_s"] > 0
    # the rows' own limit is the scaled one (duration_s of a timeout would be it)
    by_language = real.groupby("language")["timeout_s"].first()
    for language, limit in by_language.items():
        assert limit == pytest.approx(counter["wall_limit_s"][language])
    assert counter["rows_not_counted"] == len(forks)


def test_collect_measure_instructions_refuses_a_sandbox_without_a_report_channel(tmp_path, capsys):
    from audits.cli import main as cli_main
    from tests.collect.test_campaign import make_suite

    suite = make_suite(tmp_path / "suite", n_secret=1)
    code = cli_main(["collect", str(suite), "--out", str(tmp_path / "o.parquet"), "--sandbox", "cmd:{argv}",
                     "--measure", "instructions", "--no-progress", "--no-probe"])
    assert code != 0
    assert "no report channel" in capsys.readouterr().err


#: the wall limit of the stopped-and-resumed campaign below: a sleeper waits out the scaled limit (about 60
#: times this one under valgrind), so 0.05 s, not 0.1 s, waits ~3 s instead of ~6 s for the same row
KILLED_TIMEOUT_S = 0.05


@pytest.fixture(scope="module")
def stopped_and_resumed(tmp_path_factory):
    """One counted campaign stopped after its first job and resumed: what the two tests below each ran on its own.

    A program that sleeps forever and the Python floor, one repeat: two jobs (the sleeper's and the floor's), one
    run before the stop and one after it, under a wall limit of :data:`KILLED_TIMEOUT_S`. The resume test needs a
    counted campaign stopped and resumed; the kill test a counted run waiting out the scaled limit. Each ran its
    own campaign, so each calibrated (3 native and 3 counted runs of the empty Python program, ~1.5 s of CPU
    each counted) and ran its own floor: one campaign does both, and the sleeper's row is the kill test's whether
    it ran before the stop or after it (a resumed campaign runs under the limits it started with, which the
    resume test checks)."""
    from audits.collect.campaign import CampaignSpec, journal_path_for, plan_campaign, run_campaign
    from audits.collect.suite import load_suite
    from tests.collect.test_campaign import make_suite

    tmp_path = tmp_path_factory.mktemp("resumed")
    sleeper = "import time\nwhile True:\n    time.sleep(1)\n"
    suite = load_suite(make_suite(tmp_path / "suite", accepted={}, time_limit_exceeded={"sleeps.py": sleeper},
                                  n_secret=1, n_sample=0), n_largest_optimization=1)
    spec = CampaignSpec(sandbox="local", repeats=1, limits=Limits(wall_s=KILLED_TIMEOUT_S), measure="instructions")
    out = tmp_path / "c.parquet"
    first = run_campaign(plan_campaign(suite, spec), out=out, progress=False, stop_after=1)
    header = json.loads(journal_path_for(out).read_text().splitlines()[0])
    again = run_campaign(plan_campaign(suite, spec), out=out, progress=False)
    return first, header, again, out


def test_a_resumed_counted_campaign_keeps_the_limits_it_started_with(stopped_and_resumed):
    first, header, again, out = stopped_and_resumed
    assert first.out is None and first.ran == 1
    calibrated = header["instructions"]
    assert calibrated["slowdown"]["python"] >= 1
    assert again.resumed == 1 and again.ran == 1 and again.out == out
    # the floors were not measured again: the record (its time of calibration too) is the journal's
    assert again.instructions == calibrated
    manifest = json.loads(out.with_name(out.name + ".campaign.json").read_text())["instructions"]
    assert manifest["calibrated"] == calibrated["calibrated"] and manifest["slowdown"] == calibrated["slowdown"]


def test_a_counted_run_killed_at_the_scaled_limit_has_no_count_and_the_limit_as_duration(stopped_and_resumed):
    import pandas as pd

    _, _, result, out = stopped_and_resumed
    row = pd.read_parquet(out).query("role != 'floor'").iloc[0]
    limit = result.instructions["wall_limit_s"]["python"]
    assert limit == pytest.approx(KILLED_TIMEOUT_S * result.instructions["slowdown"]["python"])
    assert limit > KILLED_TIMEOUT_S
    assert row["status"] == "timeout" and row["duration_s"] == pytest.approx(limit)
    assert pd.isna(row["instructions"]) and "instructions n/a: no instruction summary" in row["reason"]
