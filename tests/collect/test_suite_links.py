"""No link is followed anywhere in a package (issue 22, item 2).

Every kind of link a hostile or careless archive can hold (a data file or folder, a submission file, a
file or folder inside a folder submission, a validator source, problem.yaml, a hard link, a package
folder) skips *that* package naming the link, never the whole suite; the other package loads.
The links point at a FIFO with no writer: following one (open, read, stat of the content) would block
the loader, so a passing test also shows that nothing was read through the link.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from audits.collect.suite import load_suite
from tests.collect.package_files import write

CLI = [sys.executable, "-c", "import sys; from audits.cli import main; sys.exit(main())"]
ECHO_PY = "import sys\nsys.stdout.write(sys.stdin.read())\n"


def package(root: Path) -> Path:
    return write(root, {"problem.yaml": "name: Echo\n", "data/sample/1.in": "a\n", "data/sample/1.ans": "a\n",
                        "data/secret/1.in": "b\n", "data/secret/1.ans": "b\n",
                        "submissions/accepted/echo.py": ECHO_PY,
                        "submissions/accepted/folder/main.py": ECHO_PY})


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    return fifo


# (name, the link inside the package, what it points to: "fifo", an absolute path, or a relative one)
CASES = [
    ("data file", "data/secret/leak.in", "/etc/shadow"),
    ("data file to a fifo", "data/secret/2.in", "fifo"),
    ("data folder to /etc", "data/secret/x", "/etc"),
    ("data folder to /", "data/secret/root", "/"),
    ("data folder inside the package", "data/secret/again", "../sample"),
    ("verdict folder", "submissions/time_limit_exceeded", "accepted"),
    ("submission file", "submissions/accepted/shadow.py", "/etc/shadow"),
    ("file in a folder submission", "submissions/accepted/folder/x.txt", "/etc/shadow"),
    ("data link in a folder submission", "submissions/accepted/folder/data", "../../../data"),
    ("header linked to an answer", "submissions/accepted/folder/ans.h", "../../../data/secret/1.ans"),
    ("validator source", "output_validators/v/validate.cpp", "/etc/passwd"),
    ("generator", "generators/gen.py", "fifo"),
    ("problem.yaml", "problem.yaml", "/etc/shadow"),
]


@pytest.mark.parametrize("kind,rel,target", CASES, ids=[c[0] for c in CASES])
def test_a_link_skips_its_package_naming_it_and_the_rest_of_the_suite_loads(tmp_path, kind, rel, target):
    suite = tmp_path / "suite"
    package(suite / "good")
    bad = package(suite / "bad")
    link = bad / rel
    if link.exists() or link.is_symlink():
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(str(_fifo(tmp_path)) if target == "fifo" else target, link)
    loaded = load_suite(suite)
    assert [p.id for p in loaded.problems] == ["good"]
    (skip,) = [s for s in loaded.skipped if s.problem == "bad"]
    assert skip.what == "package" and skip.path == link
    assert skip.reason.startswith(f"{rel} is a symbolic link (to ") and "not followed" in skip.reason
    assert "package skipped" in skip.reason
    assert f"bad/{rel}: {rel} is a symbolic link" in loaded.summary()


def test_a_hard_link_and_a_linked_package_folder_are_refused(tmp_path):
    suite = tmp_path / "suite"
    package(suite / "good")
    bad = package(suite / "bad")
    outside = tmp_path / "secret.ans"
    outside.write_text("42\n")
    os.link(outside, bad / "data" / "secret" / "2.ans")
    (bad / "data" / "secret" / "2.in").write_text("x\n")
    os.symlink(bad, suite / "alias")
    loaded = load_suite(suite)
    assert [p.id for p in loaded.problems] == ["good"]
    reasons = {s.path.name: s.reason for s in loaded.skipped}
    assert reasons["2.ans"].startswith("data/secret/2.ans is a hard link (2 names for one file")
    assert reasons["alias"].startswith(f"is a symbolic link (to {bad}, not followed)")


def test_suite_lists_the_skip_and_strict_makes_it_an_error(tmp_path):
    suite = tmp_path / "suite"
    package(suite / "good")
    os.symlink("/etc/shadow", package(suite / "bad") / "data" / "secret" / "leak.ans")
    plain = subprocess.run([*CLI, "suite", str(suite), "--no-probe"], capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    assert "bad/data/secret/leak.ans: data/secret/leak.ans is a symbolic link (to /etc/shadow" in plain.stdout
    assert "root:" not in plain.stdout + plain.stderr
    strict = subprocess.run([*CLI, "suite", str(suite), "--no-probe", "--strict"], capture_output=True, text=True,
                            timeout=300)
    assert strict.returncode == 1
    assert "1 item(s) skipped" in strict.stderr and "--strict" in strict.stderr
