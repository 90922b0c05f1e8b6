"""Hostile kinds through the Dask path (issue 22, "Done when": "... and through the Dask path").

One suite holds a representative of each class of the hostile suites (the programs are imported
from test_hostile_build.py, test_suite_links.py and test_hostile_kernel.py, not copied): a build
that reads the answer by a relative ``#include`` and a ``.fill`` build bomb, a folder submission
with a ``data -> ../../../data`` link, a program that plants a secret in every keyring it can name
and looks for the earlier repeat's, an unwaited child doing the work (CPU and memory), memfd and
``/dev`` fills, and renice/SCHED_IDLE/affinity. The same plan runs as a local campaign and as a
campaign on a real LocalCluster over TLS on loopback (the session's ``cluster`` fixture: one
cluster for this module); both must give the same rows and the same containment.

Programs whose containment the runner cannot see from outside (keyrings, /dev, priority) are
*gated*: they run the imported program, check its findings themselves and print the right answer
only when everything was refused, so a row is ``ok`` exactly when the program was contained (and
``wrong_answer`` when not: the control ``gate_control.py`` checks that branch).
"""

from __future__ import annotations

import json
import os
import secrets

import pandas as pd
import pytest

from test_campaign import ADD, make_suite
from test_hostile import files_of_sandbox_uids, live_sandbox_processes
from test_hostile_build import _sources
from test_hostile_kernel import DEV_FILL, KEYS, MEMFD, PRIORITY, UNWAITED, keys_on_host
from test_suite_links import package

import audits.collect.sandbox as sb
from audits.collect.campaign import CampaignSpec, plan_campaign, run_campaign
from audits.collect.sandbox import Limits
from audits.collect.suite import load_suite

SECRET = "sa-dask-" + secrets.token_hex(6)
LIMITS = Limits(wall_s=5.0, memory_bytes=192 << 20, nproc=16, output_bytes=1 << 20, stderr_limit=64 << 10,
                scratch_bytes=16 << 20)
N = 2_000_000  # the unwaited child's work: about 0.3 s of CPU

#: gate(program, argv, condition): runs ``program`` (an imported hostile program) with ``argv``, its
#: standard output captured; ``condition`` is an expression over ``out`` (that output) that is true
#: when every attempt was refused; then prints the answer, or what escaped.
_GATE = '''
import contextlib, io, json, sys
def _run(argv):
    sys.argv[1:] = argv
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(PROGRAM, "hostile", "exec"), {{"__name__": "__main__"}})
    return buf.getvalue()
PROGRAM = {program!r}
{body}
answer = sum(map(int, input().split()))
print(answer if contained else "ESCAPED " + json.dumps(findings)[:300])
'''


def gate(program: str, body: str) -> str:
    """A submission that prints the right answer only if ``body`` sets ``contained`` (see _GATE)."""
    return _GATE.format(program=program, body=body)


KEYRING = gate(KEYS, f'''
found = json.loads(_run(["find", {SECRET!r}]))["found"]          # what an earlier repeat planted
planted = json.loads(_run(["plant", {SECRET!r}]))
findings = {{"found": found, "planted": planted}}
contained = found == [] and all(err == 1 for err in planted.values())
''')
DEVICES = gate(DEV_FILL, f'''
lines = [line.split() for line in _run([]).splitlines()]
findings = lines
contained = len(lines) == 2 and all(int(mb) <= {LIMITS.scratch_bytes >> 20} and int(err) in (13, 28, 30)
                                    for _, mb, err in lines)
''')
NICE = gate(PRIORITY, '''
findings = json.loads(_run([]))
before = findings.pop("nice before")  # the worker's niceness (0, or what `nice make test` gave it)
contained = (findings.pop("nice now"), findings.pop("policy now")) == (before, 0) and set(findings.values()) == {1}
''')

#: The gate's other branch: the same program, its findings judged by the opposite condition, must give a
#: wrong_answer row (so an ok row of a gated program above means contained).
GATE_CONTROL = gate(PRIORITY, '''
findings = json.loads(_run([]))
contained = set(findings.values()) == {0}
''')


def unwaited(how: str) -> str:
    """UNWAITED with its arguments: prints the work's result, not the answer (a wrong_answer row)."""
    return f"import sys\nsys.argv[1:] = [{how!r}, '{N}', '96']\n" + UNWAITED


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-dask") / "suite"
    make_suite(root, n_secret=1, n_sample=0, accepted={"add.py": ADD, "keyring.py": KEYRING, "devices.py": DEVICES,
                                                         "nice.py": NICE},
               wrong_answer={"unwaited_parent.py": unwaited("parent"), "unwaited_zombie.py": unwaited("zombie"),
                             "unwaited_ignored.py": unwaited("ignored"),
                             "gate_control.py": GATE_CONTROL},
               run_time_error={"memfd.py": MEMFD})
    pkg = root / "add"
    # make_suite's answer (17) can occur in a temporary path (pytest-17), which the build's message names; a
    # random 19-digit answer cannot, so "the answer is not in the reason" tests the sandbox, not the path.
    a, b = (10 ** 18 + secrets.randbelow(10 ** 17) for _ in range(2))
    (pkg / "data" / "secret" / "01.in").write_text(f"{a} {b}\n")
    (pkg / "data" / "secret" / "01.ans").write_text(f"{a + b}\n")
    sources = _sources(pkg)
    for name in ("relative_include.cpp", "fill_bomb.cpp"):
        text = sources[name].replace("data/secret/1.ans", "data/secret/01.ans")  # make_suite's answer
        (pkg / "submissions" / "wrong_answer" / name).write_text(text)
    linked = package(root / "linked")
    os.symlink("../../../data", linked / "submissions" / "accepted" / "folder" / "data")
    return root


@pytest.fixture(scope="module")
def campaigns(suite, cluster, tmp_path_factory):
    """The same plan as a local campaign and on Dask: {"local"|"dask": (result, corpus)}."""
    address, security = cluster
    out_dir = tmp_path_factory.mktemp("hostile-dask-out")
    before_files = set(files_of_sandbox_uids(deep=True))
    loaded = load_suite(suite, n_largest_optimization=1)
    out = {}
    for name, extra in (("local", {}), ("dask", {"scheduler": address, "security": security})):
        spec = CampaignSpec(sandbox="auto", repeats=2, workers=2, test_kinds=("optimization",), limits=LIMITS,
                            **extra)
        result = run_campaign(plan_campaign(loaded, spec), out=out_dir / f"{name}.parquet", progress=False)
        assert result.out is not None and not result.errors, result.summary()
        out[name] = (result, pd.read_parquet(result.out))
    out["new_files"] = sorted(set(files_of_sandbox_uids(deep=True)) - before_files)
    return out


def rows(corpus: pd.DataFrame, solution: str) -> pd.DataFrame:
    found = corpus[corpus["solution"].astype(str) == solution]
    assert len(found) == 2, (solution, len(found))  # one test, two repeats
    return found


@pytest.mark.parametrize("path", ["local", "dask"])
def test_the_builds_that_read_or_bomb_are_skipped_without_the_answer(campaigns, path, suite):
    result, corpus = campaigns[path]
    skipped = {s.name: s.reason for s in result.skipped}
    secret_answer = (suite / "add" / "data" / "secret" / "01.ans").read_text().strip()
    for name in ("relative_include.cpp", "fill_bomb.cpp"):
        reason = skipped[f"add/wrong_answer/{name}"]
        assert reason.startswith("build failed"), reason
        assert secret_answer not in reason
        assert f"wrong_answer/{name}" not in set(corpus["solution"].astype(str))
    assert "01.ans: No such file or directory" in skipped["add/wrong_answer/relative_include.cpp"]
    # the folder link skips its package, naming the link; the package's honest solutions do not run
    (link,) = [r for n, r in skipped.items() if "linked" in n]
    assert "submissions/accepted/folder/data is a symbolic link" in link and "not followed" in link
    assert "linked" not in set(corpus["problem"].astype(str))


@pytest.mark.parametrize("path", ["local", "dask"])
def test_gated_programs_find_every_door_shut(campaigns, path):
    _, corpus = campaigns[path]
    for name in ("accepted/add.py", "accepted/keyring.py", "accepted/devices.py", "accepted/nice.py"):
        found = rows(corpus, name)
        assert (found["status"].astype(str) == "ok").all(), found[["status", "reason"]].values.tolist()
    assert keys_on_host(SECRET) == []  # and root sees no such key anywhere
    control = rows(corpus, "wrong_answer/gate_control.py")
    assert (control["status"].astype(str) == "wrong_answer").all()


@pytest.mark.parametrize("path", ["local", "dask"])
def test_an_unwaited_child_s_cpu_and_memory_are_in_the_row(campaigns, path):
    _, corpus = campaigns[path]
    parent = rows(corpus, "wrong_answer/unwaited_parent.py")
    assert (parent["status"].astype(str) == "wrong_answer").all()
    accounting = sb.accounting("auto")
    for how in ("zombie", "ignored"):
        child = rows(corpus, f"wrong_answer/unwaited_{how}.py")
        assert (child["status"].astype(str) == "wrong_answer").all(), child["reason"].tolist()
        if how == "ignored" and not accounting.startswith("cgroup"):
            continue  # documented: without a cgroup a child the kernel reaps itself is in no rusage
        # the same work as the parent's: the same order (CPU per work moves with the shared machine's load)
        assert (child["cpu_s"] >= parent["cpu_s"].min() / 3).all(), (how, child["cpu_s"], parent["cpu_s"])
        assert (child["max_rss_kb"] >= 96 << 10).all(), (how, child["max_rss_kb"])


@pytest.mark.parametrize("path", ["local", "dask"])
def test_memfd_pages_end_the_run_at_the_memory_limit(campaigns, path):
    _, corpus = campaigns[path]
    memfd = rows(corpus, "run_time_error/memfd.py")
    if not sb.accounting("auto").startswith("cgroup"):
        pytest.fail("no per-run memory cgroup here: memfd pages are bounded per file only (docs/collecting.md)")
    assert (memfd["status"].astype(str) == "memory_limit").all(), memfd["reason"].tolist()


def test_dask_gives_the_local_rows_and_leaves_nothing(campaigns):
    key = ["problem", "test", "solution", "repeat"]
    local, dask = (campaigns[p][1][key + ["status"]].astype(str) for p in ("local", "dask"))
    merged = local.merge(dask, on=key, suffixes=("_local", "_dask"))
    assert len(merged) == len(local) == len(dask)
    assert (merged["status_local"] == merged["status_dask"]).all(), merged.to_dict("records")
    assert {s.name for s in campaigns["local"][0].skipped} == {s.name for s in campaigns["dask"][0].skipped}
    assert live_sandbox_processes() == []
    assert campaigns["new_files"] == []
    assert json.dumps(campaigns["dask"][0].to_dict(), default=str).count(SECRET) == 0
