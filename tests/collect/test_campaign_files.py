"""Campaign files under concurrency and kills: the lock on --out, SIGTERM, SIGKILL (also in the
middle of the final write), the janitor, and two concurrent campaigns whose uid blocks would
have collided. Every case runs real `speedaudit collect` processes on a real suite.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from test_campaign import ADD, make_suite

import audits.collect.sandbox as sb
from audits.collect.campaign import journal_path_for
from audits.corpus.io import KEY

ROOT = Path(__file__).resolve().parents[2]
SLOW_ADD = "import time\ntime.sleep(0.3)\n" + ADD


def collect(suite_dir: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "audits.cli", "collect", str(suite_dir), "--out", str(out), "--repeats", "2",
            "--timeout", "5", "--memory", "256M", "--no-progress", "--n-largest", "1", "--seed", "3", *extra]


def env(**more) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT), **more}


def wait_for_rows(journal: Path, proc: subprocess.Popen, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if journal.exists() and len(journal.read_bytes().splitlines()) > n:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the campaign journaled too few rows in time")


def work_dirs_of(pid: int) -> list[str]:
    return [name for name in os.listdir("/dev/shm") if name.startswith(f"speedaudit-collect-{pid}-")]


def block_uids_of(pid: int) -> list[int]:
    """The uid block the process ``pid`` leased (read back from the lease files)."""
    blocks = []
    for lease in sb._lease_dir().glob("block-*.lock"):
        try:
            if lease.read_text().strip() == str(pid):
                blocks.append(int(lease.name[6:9]))
        except OSError:
            pass
    return [sb.UID_BASE + b * sb.UID_BLOCK + k for b in blocks for k in range(sb.UID_BLOCK)]


def processes_of(uids) -> list[int]:
    wanted = set(uids)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                st = os.stat(f"/proc/{entry}")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if st.st_uid in wanted and state != "Z":
                found.append(int(entry))
    return found


# Run alone: a race with a timing margin (the second collect must start while the first's six 1 s jobs
# still run); beside another worker, under a load of 17, the first had finished before the second started.
@pytest.mark.serial
def test_a_second_collect_on_the_same_out_stops_at_once_naming_the_pid(tmp_path):
    # long enough (6 jobs of 1 s) that the first is still running when the second has started
    suite_dir = make_suite(tmp_path / "suite", accepted={"a.py": "import time\ntime.sleep(1)\n" + ADD}, n_secret=2)
    out = tmp_path / "c.parquet"
    first = subprocess.Popen(collect(suite_dir, out), cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        wait_for_rows(journal_path_for(out), first, 1)
        t0 = time.monotonic()
        second = subprocess.run(collect(suite_dir, out), cwd=ROOT, env=env(), capture_output=True, text=True)
        assert second.returncode == 1
        assert f"another campaign (pid {first.pid}) is collecting into it now" in second.stderr
        assert "Traceback" not in second.stderr
        assert time.monotonic() - t0 < 30  # it did not wait for the first one (not a timing assertion)
        assert first.poll() is None  # and it did not disturb it
    finally:
        stdout, stderr = first.communicate()
    assert first.returncode == 0, stderr
    corpus = pd.read_parquet(out)
    assert len(corpus) == 3 * 2 + 2 and not corpus.duplicated(list(KEY)).any()
    assert not journal_path_for(out).exists()


def test_sigkill_during_the_final_write_then_resume_gives_one_row_per_job_and_no_temp_file(tmp_path):
    suite_dir = make_suite(tmp_path / "suite", wrong_answer={"zero.py": "print(0)\n"}, n_secret=2)
    out = tmp_path / "c.parquet"
    sb.launcher_path()  # built (cached) before: the traced process must not compile it
    # strace delivers SIGKILL exactly when the process renames the finished temporary file into
    # place: its main thread's last rename, counted in a traced run of the same campaign
    # elsewhere (the builds before it rename their staged sources; the number is the same).
    renames = ["-e", "trace=rename,renameat,renameat2"]
    trace = tmp_path / "trace.txt"
    dry = subprocess.run(["strace", "-qq", "-o", str(trace), *renames, "--",
                          *collect(suite_dir, tmp_path / "dry" / "c.parquet", "--sandbox", "local")],
                         cwd=ROOT, env=env(), capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    calls = [line for line in trace.read_text().splitlines() if line.startswith("rename")]
    # the corpus's own rename (the campaign manifest <out>.campaign.json is renamed into place after it)
    target = f', "{tmp_path / "dry" / "c.parquet"}")'
    n = max(i for i, line in enumerate(calls, 1) if target in line)
    shutil.rmtree(tmp_path / "dry")
    trace.unlink()
    cmd = ["strace", "-qq", "-o", "/dev/null", *renames, "-e", f"inject=rename,renameat,renameat2:signal=SIGKILL:when={n}",
           "--", *collect(suite_dir, out, "--sandbox", "local")]
    killed = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL or killed.returncode == 128 + signal.SIGKILL, killed.stderr
    temporaries = [p for p in tmp_path.iterdir() if p.name.startswith(".c.parquet.") and p.name.endswith(".tmp")]
    assert len(temporaries) == 1 and temporaries[0].stat().st_size > 0  # the complete file, not yet renamed
    assert not out.exists() and journal_path_for(out).exists()
    n_rows = len(journal_path_for(out).read_text().splitlines()) - 1

    done = subprocess.run(collect(suite_dir, out, "--sandbox", "local"), cwd=ROOT, env=env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert f"{n_rows:,} from the journal, 0 run now" in done.stdout
    corpus = pd.read_parquet(out)
    n_real = 2 * 3 * 2  # 2 submissions x (1 sample + 2 secret) x 2 repeats, plus the Python floor
    assert len(corpus) == n_rows == n_real + max(2, math.ceil(n_real / 20))
    assert not corpus.duplicated(list(KEY)).any()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet", "c.parquet.campaign.json", "suite"]  # corpus and its campaign manifest


def test_sigterm_finishes_in_flight_jobs_journals_and_cleans_up(tmp_path):
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n"
              "time.sleep(0.3)\n" + ADD)
    suite_dir = make_suite(tmp_path / "suite", accepted={"a.py": SLOW_ADD, "d.py": daemon}, n_secret=3)
    out = tmp_path / "c.parquet"
    proc = subprocess.Popen(collect(suite_dir, out, "--workers", "2"), cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for_rows(journal_path_for(out), proc, 3)
    uids = block_uids_of(proc.pid)
    assert uids
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in stderr and "Traceback" not in stderr
    assert work_dirs_of(proc.pid) == []
    assert processes_of(uids) == []
    rows = [json.loads(line) for line in journal_path_for(out).read_text().splitlines()[1:]]
    assert len(rows) >= 3 and len({r["job"] for r in rows}) == len(rows)
    assert oct(journal_path_for(out).stat().st_mode & 0o777) == "0o600"
    done = subprocess.run(collect(suite_dir, out, "--workers", "2"), cwd=ROOT, env=env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    corpus = pd.read_parquet(out)
    assert len(corpus) == 2 * 4 * 2 + 2 and not corpus.duplicated(list(KEY)).any()
    assert set(corpus.loc[corpus["role"] == "reference", "status"].astype(str)) == {"ok"}


def test_after_sigkill_nothing_of_the_campaign_is_left_but_its_journal(tmp_path):
    suite_dir = make_suite(tmp_path / "suite", accepted={"a.py": SLOW_ADD}, n_secret=3)
    out = tmp_path / "c.parquet"
    proc = subprocess.Popen(collect(suite_dir, out), cwd=ROOT, env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    wait_for_rows(journal_path_for(out), proc, 2)
    assert work_dirs_of(proc.pid)
    uids = block_uids_of(proc.pid)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 20
    while (work_dirs_of(proc.pid) or processes_of(uids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert work_dirs_of(proc.pid) == [] and processes_of(uids) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet.journal.jsonl", "suite"]


def test_two_concurrent_campaigns_whose_uid_blocks_would_have_collided_both_finish_right(tmp_path):
    """Both ask for block 500 first (as two pids equal mod 1000 did); each sweeps daemons of its own."""
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\n" + ADD)
    outs, procs = [], []
    for name, sleep in (("short", 0.0), ("long", 0.25)):
        slow = f"import time\ntime.sleep({sleep})\n" + ADD
        suite_dir = make_suite(tmp_path / name, accepted={"slow.py": slow, "daemon.py": daemon},
                               wrong_answer={"zero.py": "print(0)\n"}, n_secret=2)
        out = tmp_path / f"{name}.parquet"
        outs.append(out)
        procs.append(subprocess.Popen(collect(suite_dir, out, "--workers", "2"), cwd=ROOT,
                                      env=env(SPEEDAUDIT_UID_BLOCK="500"), stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True))
    results = [p.communicate(timeout=300) for p in procs]
    for proc, (_stdout, stderr) in zip(procs, results):
        assert proc.returncode == 0, stderr
    for out in outs:
        corpus = pd.read_parquet(out)
        real = corpus[corpus["role"] == "reference"]
        status = real.groupby("solution", observed=True)["status"].agg(lambda s: set(map(str, s))).to_dict()
        assert status == {"accepted/slow.py": {"ok"}, "accepted/daemon.py": {"ok"},
                          "wrong_answer/zero.py": {"wrong_answer"}}, (out, real[["solution", "status", "reason"]])
        assert len(real) == 3 * 3 * 2


def test_a_kill_while_planning_leaves_no_work_dir(tmp_path):
    """Killed while its C++ submissions compile (before any job ran): the work dir goes too."""
    cpp = '#include <cstdio>\nint main(){long a,b;if(scanf("%ld %ld",&a,&b)!=2)return 1;printf("%ld\\n",a+b);}\n'
    suite_dir = make_suite(tmp_path / "suite", accepted={f"add{i}.cpp": cpp + f"// {i}\n" for i in range(6)})
    out = tmp_path / "c.parquet"
    proc = subprocess.Popen(collect(suite_dir, out), cwd=ROOT, env=env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any(Path("/dev/shm", d, "build").exists() for d in work_dirs_of(proc.pid)):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    assert not journal_path_for(out).exists()  # it was still planning
    deadline = time.monotonic() + 20
    while work_dirs_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert work_dirs_of(proc.pid) == []
