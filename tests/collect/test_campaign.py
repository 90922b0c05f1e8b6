"""Campaigns: job order, journal and resume (also after SIGKILL), corpus output, CLI, background load.

Suites are small real Kattis packages built in a temp dir; every job runs a real
program in a real sandbox.
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
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.collect.background_load import BackgroundLoad, LoadSpec
from audits.collect.campaign import (CampaignError, CampaignSpec, Journal, interleave, job_id, journal_path_for,
                             plan_campaign, run_campaign)
from audits.cli import main as cli_main
from audits.corpus.io import KEY, load_corpus
from audits.collect.sandbox import Limits, scratch_root
from audits.collect.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]
ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
ADD_CPP = '#include <cstdio>\nint main(){long a,b;if(scanf("%ld %ld",&a,&b)!=2)return 1;printf("%ld\\n",a+b);}\n'


def make_suite(path: Path, *, accepted=None, wrong_answer=None, run_time_error=None, time_limit_exceeded=None,
               n_secret: int = 3, n_sample: int = 1) -> Path:
    """One Kattis package 'add' (print a + b) with the given submissions {file name: source}."""
    pkg = path / "add"
    (pkg / "data" / "sample").mkdir(parents=True)
    (pkg / "data" / "secret").mkdir(parents=True)
    (pkg / "problem.yaml").write_text("name: Add\n")
    for folder, n in (("sample", n_sample), ("secret", n_secret)):
        for i in range(1, n + 1):
            a, b = 7 * i, 10 ** i
            (pkg / "data" / folder / f"{i:02d}.in").write_text(f"{a} {b}\n")
            (pkg / "data" / folder / f"{i:02d}.ans").write_text(f"{a + b}\n")
    groups = {"accepted": accepted if accepted is not None else {"add.py": ADD}, "wrong_answer": wrong_answer,
              "run_time_error": run_time_error, "time_limit_exceeded": time_limit_exceeded}
    for verdict, files in groups.items():
        for name, text in (files or {}).items():
            target = pkg / "submissions" / verdict / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    return path


def adjacent_repeats(frame: pd.DataFrame) -> int:
    ordered = frame.sort_values("order")
    unit = ordered["problem"].astype(str) + "|" + ordered["test"].astype(str) + "|" + ordered["solution"].astype(str)
    return int((unit.to_numpy()[1:] == unit.to_numpy()[:-1]).sum())


# --------------------------------------------------------------------------- order and ids

def test_interleave_runs_every_job_once_never_back_to_back_and_is_seeded():
    order = interleave(7, 5, seed=3, n_floor_units=2, floor_repeats=4)
    real = [(u, r) for f, u, r in order if not f]
    floor = [(u, r) for f, u, r in order if f]
    assert sorted(real) == [(u, r) for u in range(7) for r in range(5)]
    assert sorted(floor) == [(u, r) for u in range(2) for r in range(4)]
    units = [u for f, u, _ in order if not f]
    assert all(a != b for a, b in zip(units, units[1:]))  # never two repeats of a unit in a row
    assert order == interleave(7, 5, seed=3, n_floor_units=2, floor_repeats=4)
    assert order != interleave(7, 5, seed=4, n_floor_units=2, floor_repeats=4)
    # floors are spread over the run, not bunched at one end
    positions = np.flatnonzero([f for f, _, _ in order])
    assert positions.min() < len(order) / 2 < positions.max()
    # two units, many repeats: the round boundary swap keeps them alternating
    two = [u for _, u, _ in interleave(2, 50, seed=0)]
    assert all(a != b for a, b in zip(two, two[1:]))


def test_job_id_is_deterministic_and_distinguishes_every_field():
    base = job_id("p", "secret/01", "accepted/a.py", 0)
    assert base == job_id("p", "secret/01", "accepted/a.py", 0) and len(base) == 16
    others = {job_id("q", "secret/01", "accepted/a.py", 0), job_id("p", "secret/02", "accepted/a.py", 0),
              job_id("p", "secret/01", "accepted/b.py", 0), job_id("p", "secret/01", "accepted/a.py", 1)}
    assert base not in others and len(others) == 4


# --------------------------------------------------------------------------- end to end

@pytest.mark.serial  # a 0.5 s wall limit on accepted Python programs: a neighbouring worker's load pushed one past it
def test_local_campaign_records_every_status_floor_and_skips_what_does_not_build(tmp_path):
    suite_dir = make_suite(
        tmp_path / "suite",
        accepted={"add.py": ADD, "add.cpp": ADD_CPP, "broken.cpp": "int main( {\n"},
        wrong_answer={"zero.py": "print(0)\n"},
        run_time_error={"crash.py": "raise SystemExit(3)\n"},
        time_limit_exceeded={"slow.py": "import time\ntime.sleep(5)\n" + ADD},
    )
    suite = load_suite(suite_dir, n_largest_optimization=2)
    spec = CampaignSpec(environment="quiet", campaign="day1", repeats=2, workers=2,
                        limits=Limits(wall_s=0.5, memory_bytes=256 << 20))
    plan = plan_campaign(suite, spec)
    out = tmp_path / "corpus.parquet"
    result = run_campaign(plan, out=out, progress=False)
    assert result.out == out and not result.errors
    assert not journal_path_for(out).exists()  # removed once the Parquet is written
    assert not plan.work_dir.exists()
    assert [s.name for s in result.skipped] == ["add/accepted/broken.cpp"]
    assert "g++" in result.skipped[0].reason

    corpus = load_corpus(out)
    assert len(corpus) == len(plan.jobs) == result.n_jobs
    assert not corpus.duplicated(list(KEY)).any()
    assert (corpus["environment"] == "quiet").all() and (corpus["campaign"] == "day1").all()
    real = corpus[corpus["role"] == "reference"]
    n_tests = 4  # 1 sample + 3 secret
    assert len(real) == 5 * n_tests * 2
    status = real.groupby("solution", observed=True)["status"].agg(lambda s: set(map(str, s)))
    assert status.to_dict() == {"accepted/add.py": {"ok"}, "accepted/add.cpp": {"ok"},
                                "wrong_answer/zero.py": {"wrong_answer"}, "run_time_error/crash.py": {"runtime_error"},
                                "time_limit_exceeded/slow.py": {"timeout"}}
    correct = real.groupby("solution", observed=True)["correct"].first().to_dict()
    assert correct == {"accepted/add.py": True, "accepted/add.cpp": True, "wrong_answer/zero.py": False,
                       "run_time_error/crash.py": False, "time_limit_exceeded/slow.py": True}
    timeouts = real[real["status"] == "timeout"]
    assert (timeouts["duration_s"] == 0.5).all() and (timeouts["wall_s"] >= 0.5).all()
    assert (real["timeout_s"] == 0.5).all()
    kinds = real.groupby("test", observed=True)["test_kind"].first().astype(str).to_dict()
    assert kinds == {"sample/01": "correctness", "secret/01": "correctness", "secret/02": "optimization",
                     "secret/03": "optimization"}
    sizes = {t.name: t.input_bytes for t in suite.problems[0].tests}
    assert (real["input_bytes"] == real["test"].astype(str).map(sizes)).all()
    assert (real.loc[real["status"] == "ok", "cpu_s"] > 0).all()

    floor = corpus[corpus["role"] == "floor"]
    per_language = Counter(floor["solution"].astype(str))
    expected_floor = max(2, math.ceil(len(real) / 20))
    assert per_language == {"python": expected_floor, "cpp": expected_floor}
    assert (floor["problem"] == "_floor").all() and (floor["test"] == "empty").all()
    assert (floor["status"] == "ok").all()
    assert adjacent_repeats(corpus) == 0


def test_resume_after_interruption_keeps_rows_and_drops_a_half_written_line(tmp_path):
    suite = load_suite(make_suite(tmp_path / "suite", wrong_answer={"zero.py": "print(0)\n"}),
                       n_largest_optimization=2)
    spec = CampaignSpec(repeats=2, limits=Limits(wall_s=5, memory_bytes=256 << 20))
    plan = plan_campaign(suite, spec)
    out = tmp_path / "c.parquet"
    first = run_campaign(plan, out=out, progress=False, stop_after=5)
    assert first.out is None and first.ran == 5 and not out.exists()
    journal = journal_path_for(out)
    before = {r["job"]: r for r in map(json.loads, journal.read_text().splitlines()[1:])}
    assert len(before) == 5
    with open(journal, "a") as fh:  # a crash in the middle of writing a line
        fh.write('{"type":"row","job":"abc')
    again = run_campaign(plan_campaign(suite, spec), out=out, progress=False)
    assert again.resumed == 5 and again.ran == len(plan.jobs) - 5 and again.out == out
    corpus = pd.read_parquet(out)
    assert len(corpus) == len(plan.jobs) and not corpus.duplicated(list(KEY)).any()
    keyed = corpus.set_index(["problem", "test", "solution", "repeat"])
    for row in before.values():
        kept = keyed.loc[(row["problem"], row["test"], row["solution"], row["repeat"])]
        assert kept["duration_s"] == row["duration_s"]  # the journaled measurement, not a re-run


def test_a_run_name_the_corpus_would_refuse_is_refused_before_the_campaign(tmp_path, capsys):
    """--environment / --campaign with a control character or white space at either end (the corpus's id rule,
    audits.corpus.table.id_defect): refused by CampaignSpec, so the command line and the API stop before anything
    runs. Before, the campaign ran and then could not write its corpus (the journal's ids refused)."""
    with pytest.raises(CampaignError, match="control characters"):
        CampaignSpec(environment="a\tb")
    with pytest.raises(CampaignError, match="white space"):
        CampaignSpec(campaign=" monday")
    assert CampaignSpec(environment="quiet <i> 日本 a/b:c", campaign="%s{0}").environment == "quiet <i> 日本 a/b:c"
    suite = make_suite(tmp_path / "suite", n_secret=1)
    out = tmp_path / "c.parquet"
    assert cli_main(["collect", str(suite), "--out", str(out), "--environment", "a\x1b[2Jb", "--no-progress",
                     "--no-probe"]) == 1
    assert "--environment" in capsys.readouterr().err
    assert not out.exists() and not journal_path_for(out).exists()


def test_journal_of_other_arguments_is_refused_unless_restarted(tmp_path):
    suite = load_suite(make_suite(tmp_path / "suite", n_secret=1), n_largest_optimization=1)
    out = tmp_path / "c.parquet"
    run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, seed=0)), out=out, progress=False, stop_after=2)
    other = plan_campaign(suite, CampaignSpec(repeats=2, seed=1))
    with pytest.raises(CampaignError, match="other arguments"):
        run_campaign(other, out=out, progress=False)
    # a plan is used once (its work dir goes with the run), as the CLI does: plan again
    result = run_campaign(plan_campaign(suite, CampaignSpec(repeats=2, seed=1)), out=out, progress=False,
                          restart=True)
    assert result.resumed == 0 and len(pd.read_parquet(out)) == len(other.jobs)
    with pytest.raises(CampaignError, match="--overwrite"):
        run_campaign(other, out=out, progress=False)
    bad = tmp_path / "bad.parquet"
    journal_path_for(bad).write_text("not a journal\n")
    with pytest.raises(CampaignError, match="not a speedaudit campaign journal"):
        Journal(journal_path_for(bad), "x").read()


def _spinner_pids(parent: int) -> list[int]:
    """Background-load processes started by ``parent`` (their last argument is the parent pid)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if len(argv) >= 4 and b"range(200000)" in argv[2] and argv[3] == str(parent).encode() and state != "Z":
            found.append(int(entry))
    return found


def test_campaign_killed_with_sigkill_resumes_to_exactly_one_row_per_job(tmp_path, request):
    slow_add = "import time\ntime.sleep(0.05)\n" + ADD
    suite_dir = make_suite(tmp_path / "suite", accepted={"a.py": slow_add, "b.py": slow_add}, n_secret=3)
    out = tmp_path / "crash.parquet"
    work = scratch_root("speedaudit-test-crash-")  # a SIGKILLed run cannot remove its own work dir
    request.addfinalizer(lambda: shutil.rmtree(work, ignore_errors=True))
    cmd = [sys.executable, "-m", "audits.cli", "collect", str(suite_dir), "--out", str(out), "--repeats", "3",
           "--timeout", "5", "--memory", "256M", "--no-progress", "--n-largest", "2", "--seed", "7",
           "--work-dir", str(work)]
    journal = journal_path_for(out)
    proc = subprocess.Popen(cmd + ["--load", "cpu=1"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if journal.exists() and len(journal.read_text().splitlines()) > 6:
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert _spinner_pids(proc.pid), "the background load should be running"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert not out.exists()
    before = {r["job"]: r for r in map(json.loads, journal.read_text().splitlines()[1:]) if r.get("type") == "row"}
    assert len(before) >= 6
    deadline = time.monotonic() + 10
    while _spinner_pids(proc.pid) and time.monotonic() < deadline:  # they die with their parent
        time.sleep(0.05)
    assert _spinner_pids(proc.pid) == []

    done = subprocess.run(cmd + ["--load", "cpu=1"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    corpus = pd.read_parquet(out)
    n_real = 2 * 4 * 3  # 2 submissions x (1 sample + 3 secret tests) x 3 repeats, plus the Python floor
    assert len(corpus) == n_real + max(3, math.ceil(n_real / 20))
    assert not corpus.duplicated(list(KEY)).any()
    assert f"{len(before):,} from the journal" in done.stdout
    keyed = corpus.set_index(["problem", "test", "solution", "repeat"])
    for row in before.values():
        assert keyed.loc[(row["problem"], row["test"], row["solution"], row["repeat"]), "duration_s"] \
            == row["duration_s"]


# --------------------------------------------------------------------------- CLI

@pytest.mark.parametrize("args, message", [
    (["--sandbox", "docker"], "unknown sandbox"),
    (["--load", "gpu=1"], "not cpu=N or mem=SIZE"),
    (["--tests", "speed"], "--tests"),
    (["--problems", "nope"], "no problem 'nope'"),
    (["--scheduler", "localhost:8786"], "tls://HOST:PORT"),
    (["--scheduler", "tcp://127.0.0.1:8786"], "plain TCP scheduler accepts work from anyone"),
    (["--scheduler", "tls://127.0.0.1:8786"], "needs the cluster's certificates"),
    (["--tls-cert", "c.pem"], "go together"),
])
def test_cli_rejects_bad_options_with_a_clear_message(tmp_path, capsys, args, message):
    suite_dir = make_suite(tmp_path / "suite", n_secret=1)
    code = cli_main(["collect", str(suite_dir), "--out", str(tmp_path / "o.parquet"), "--no-progress", *args])
    assert code == 1
    assert message in capsys.readouterr().err


def test_cli_rejects_bad_numbers_at_parse_time(tmp_path, capsys):
    for args in (["--memory", "lots"], ["--timeout", "0"], ["--repeats", "0"]):
        with pytest.raises(SystemExit) as info:
            cli_main(["collect", str(tmp_path), "--out", "x.parquet", *args])
        assert info.value.code == 2
    assert "not a size" in capsys.readouterr().err


def test_cli_collects_with_progress_and_status_counts(tmp_path, capsys):
    suite_dir = make_suite(tmp_path / "suite", wrong_answer={"zero.py": "print(0)\n"}, n_secret=1)
    out = tmp_path / "o.parquet"
    code = cli_main(["collect", str(suite_dir), "--out", str(out), "--repeats", "2", "--timeout", "5",
                     "--memory", "256M", "--sandbox", "cmd:prlimit --as={memory_bytes} -- {argv}",
                     "--environment", "svc", "--campaign", "k1", "--keep-journal"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    corpus = load_corpus(out)
    counts = Counter(corpus["status"].astype(str))
    assert counts == {"ok": 4 + 2, "wrong_answer": 4}
    assert f"ok={counts['ok']}" in captured.err and f"wrong_answer={counts['wrong_answer']}" in captured.err
    assert "wrote" in captured.out and journal_path_for(out).exists()
    assert set(corpus["environment"]) == {"svc"} and set(corpus["campaign"]) == {"k1"}


# --------------------------------------------------------------------------- background load

def test_load_spec_parsing():
    assert LoadSpec.parse("cpu=2,mem=1G") == LoadSpec(2, 1 << 30)
    assert LoadSpec.parse("mem=512M") == LoadSpec(0, 512 << 20)
    assert LoadSpec.parse(None).empty and LoadSpec.parse("").empty
    for bad, message in (("cpu=two", "whole number"), ("cpu=1,cpu=2", "twice"), ("disk=1", "cpu=N or mem=SIZE"),
                         ("mem=lots", "not a size")):
        with pytest.raises(ValueError, match=message):
            LoadSpec.parse(bad)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# Run alone: it asserts the spinner got > 0.1 s of CPU within 0.6 s of wall time, which a neighbouring
# test's load (e.g. test_contention's spinners) on this 2-core machine could starve.
@pytest.mark.serial
def test_background_load_burns_cpu_holds_memory_and_stops():
    with BackgroundLoad(LoadSpec.parse("cpu=1,mem=64M")) as load:
        spinner, hog = load.pids
        first = _cpu_seconds(spinner)
        time.sleep(0.6)
        assert _cpu_seconds(spinner) - first > 0.1
        rss_kb = int(next(line for line in Path(f"/proc/{hog}/status").read_text().splitlines()
                          if line.startswith("VmRSS")).split()[1])
        assert rss_kb >= 64 << 10
    assert load.pids == []
    for pid in (spinner, hog):
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
