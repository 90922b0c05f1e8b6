"""Hostile programs at the campaign level: a checker bomb (links in a suite: test_suite_links.py), and a
campaign full of hostile programs that carries on and records each."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from test_campaign import make_suite
from test_hostile import DAEMON, FORK_BOMB

from audits.collect.campaign import CampaignSpec, plan_campaign, run_campaign
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite

ROOT = Path(__file__).resolve().parents[2]

_CAMPAIGN_RSS = """
import json, resource, sys
import pandas as pd
from audits.collect.campaign import CampaignSpec, plan_campaign, run_campaign
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite
suite = load_suite(sys.argv[1], n_largest_optimization=1)
spec = CampaignSpec(repeats=1, sandbox="local", test_kinds=("optimization",),
                    limits=Limits(wall_s=10, memory_bytes=512 << 20, output_bytes=48 << 20))
result = run_campaign(plan_campaign(suite, spec), out=sys.argv[2], progress=False)
corpus = pd.read_parquet(result.out)
print(json.dumps({"rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rows": corpus[["solution", "status", "reason"]].astype(str).values.tolist()}))
"""


def test_a_checker_bomb_is_a_wrong_answer_judged_in_bounded_memory(tmp_path):
    """16 million one-byte tokens (32 MB): split in memory that is ~700 MB of Python objects."""
    bomb = "import sys\nsys.stdout.write('1 ' * (16 << 20))\n"
    runs = {}
    for name, source in (("control", "print(sum(map(int, input().split())))\n"), ("bomb", bomb)):
        suite = make_suite(tmp_path / name, accepted={"add.py": source}, n_secret=1, n_sample=0)
        done = subprocess.run([sys.executable, "-c", _CAMPAIGN_RSS, str(suite), str(tmp_path / f"{name}.parquet")],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        runs[name] = json.loads(done.stdout.splitlines()[-1])
    statuses = {tuple(row[:2]) for row in runs["bomb"]["rows"]}
    assert ("accepted/add.py", "wrong_answer") in statuses
    reason = next(r[2] for r in runs["bomb"]["rows"] if r[0] == "accepted/add.py")
    assert reason.startswith("extra output")
    assert ("accepted/add.py", "ok") in {tuple(row[:2]) for row in runs["control"]["rows"]}
    # the runner judged 32 MB of output with little more memory than a correct answer needs
    assert runs["bomb"]["rss_kb"] - runs["control"]["rss_kb"] < 150 << 10, runs


def test_a_campaign_of_hostile_programs_carries_on_and_records_each(tmp_path):
    hostile = {
        "loop.py": "while True: pass",
        "sleep.py": "import time; time.sleep(60)",
        "memory.py": "a = []\nwhile True: a.append(bytearray(16 << 20))",
        "forkbomb.py": "import os, sys, time\n" + FORK_BOMB,
        "output.py": "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024): sys.stdout.buffer.write(b)",
        "stderr.py": "import sys\nb = b'x' * (1 << 20)\nfor _ in range(1024): sys.stderr.buffer.write(b)",
        "segfault.py": "import ctypes; ctypes.string_at(0)",
        "killgroup.py": "import os, signal; os.killpg(0, signal.SIGKILL)",
        "stdin.py": "input(); input()",
        "cheat.py": "import os\nprint(open(os.readlink('/proc/self/fd/0')[:-3] + '.ans').read())",
        "daemon.py": "import os, signal, sys, time\n" + DAEMON.replace('print("parent done")',
                                                                      "print(sum(map(int, input().split())))"),
    }
    suite_dir = make_suite(tmp_path / "suite", run_time_error=hostile, n_secret=1, n_sample=0)
    suite = load_suite(suite_dir, n_largest_optimization=1)
    for sandbox in ("local", "bwrap"):
        spec = CampaignSpec(sandbox=sandbox, repeats=1, workers=2, test_kinds=("optimization",),
                            limits=Limits(wall_s=2.0, memory_bytes=192 << 20, nproc=16, output_bytes=1 << 20,
                                          stderr_limit=64 << 10))
        result = run_campaign(plan_campaign(suite, spec), out=tmp_path / f"{sandbox}.parquet", progress=False)
        assert result.out is not None and not result.errors
        corpus = pd.read_parquet(result.out)
        status = dict(zip(corpus["solution"].astype(str), corpus["status"].astype(str)))
        expected = {"loop.py": "timeout", "sleep.py": "timeout", "memory.py": "memory_limit",
                    "forkbomb.py": "runtime_error", "output.py": "runtime_error", "stderr.py": "runtime_error",
                    "segfault.py": "runtime_error", "killgroup.py": "runtime_error", "stdin.py": "runtime_error",
                    "cheat.py": "runtime_error", "daemon.py": "ok"}
        for name, want in expected.items():
            assert status[f"run_time_error/{name}"] == want, (sandbox, name)
        assert status["accepted/add.py"] == "ok"
        timeouts = corpus[corpus["status"] == "timeout"]
        assert (timeouts["duration_s"] == 2.0).all() and (timeouts["wall_s"] >= 2.0).all()
