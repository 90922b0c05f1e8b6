"""Every bad input of issue 15 item 6, fed to `speedaudit validate` and `speedaudit convert` as real subprocesses.

Each case checks the exit status, that the message names the file (and the column and rows where there are
some) and says what to do, that there is no traceback, and that no file (output or temporary) is left behind.

Unreadable files and non-writable folders: the tests run as root, for whom permission bits do not apply, so
those two cases run the command under the unprivileged uid 65534 (``setpriv``; as a non-root user they run
directly). Special files need no privilege: a FIFO, a directory where a file is expected, a symlink loop and a
dangling symlink.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

GOOD = pd.DataFrame({
    "problem": ["p1", "p1", "p1", "p2"],
    "test": ["t1", "t1", "t2", "t1"],
    "solution": ["a", "a", "a", "b"],
    "duration_s": [0.5, 0.6, 1.0, 2.0],
    "status": ["ok", "ok", "timeout", "ok"],
    "repeat": [0, 1, 0, 0],
})
NOBODY = 65534
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def work():
    """A folder uid 65534 can enter (pytest's tmp_path is private to root), removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="speedaudit-bad-input-"))
    os.chmod(root, 0o755)
    data = root / "data"
    data.mkdir()
    os.chmod(data, 0o755)
    yield data
    for path in root.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o755)
    shutil.rmtree(root)


def _cli(*args, unprivileged=False):
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "audits.cli", *map(str, args)]
    if unprivileged and os.geteuid() == 0:
        home = Path(tempfile.mkdtemp(prefix="speedaudit-nobody-home-"))  # removed by the caller
        os.chown(home, NOBODY, NOBODY)
        env.update(HOME=str(home), MPLCONFIGDIR=str(home))
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd="/")
        finally:
            shutil.rmtree(home, ignore_errors=True)
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, cwd="/")


def _csv(path, frame):
    frame.to_csv(path, index=False)
    return path


def _edit(**columns):
    frame = GOOD.copy()
    for column, (row, value) in columns.items():
        frame[column] = frame[column].astype(object)
        frame.loc[row, column] = value
    return frame


# name -> (make the input in folder d, words the message must hold)
BAD_INPUTS = {
    "zero duration on an ok row": (
        lambda d: _csv(d / "bad.csv", _edit(duration_s=(1, 0.0))),
        ["bad.csv: column 'duration_s'", "zero durations on ok rows", "row 2:", "check the timer"]),
    "duration above a day on an ok row": (
        lambda d: _csv(d / "bad.csv", _edit(duration_s=(3, 90_000.0))),
        ["bad.csv: column 'duration_s'", "above one day", "row 4:", "--unit ms"]),
    "NUL in a problem id": (
        lambda d: _csv(d / "bad.csv", _edit(problem=(0, "p\x001"))),
        ["bad.csv: column 'problem'", "control characters", r"'p\x001'", "row 1:", "-> remove"]),
    "escape sequence in a solution id": (
        lambda d: _csv(d / "bad.csv", _edit(solution=(2, "a\x1b[31m"))),
        ["bad.csv: column 'solution'", "control characters", r"'a\x1b[31m'", "row 3:"]),
    "tab in an environment name (Parquet)": (
        lambda d: GOOD.assign(environment=["quiet", "quiet\t", "quiet", "quiet"]).to_parquet(d / "bad.parquet")
        or d / "bad.parquet",
        ["bad.parquet: column 'environment'", "control characters", r"'quiet\t'", "row 2:"]),
    "leading space in a test id": (
        lambda d: _csv(d / "bad.csv", _edit(test=(2, " t2"))),
        ["bad.csv: column 'test'", "leading or trailing white space", "' t2'", "row 3:", "strip the spaces"]),
    "trailing space in a campaign name": (
        lambda d: _csv(d / "bad.csv", GOOD.assign(campaign=["monday", "monday ", "monday", "monday"])),
        ["bad.csv: column 'campaign'", "leading or trailing white space", "'monday '", "row 2:"]),
    "duplicate column names in CSV": (
        lambda d: (d / "bad.csv").write_text("problem,test,solution,duration_s,status,duration_s\n"
                                             "p1,t1,a,0.5,ok,0.7\n") and d / "bad.csv",
        ["bad.csv: column 'duration_s'", "names it 2 times", "give each column once"]),
    "broken JSON line": (
        lambda d: (d / "bad.jsonl").write_text(
            "\n".join(json.dumps(r) for r in GOOD.iloc[:2].to_dict("records")) + '\n{"problem": "p1", "test":\n')
        and d / "bad.jsonl",
        ["bad.jsonl: line 3: not valid JSON", "fix or remove that line"]),
    "repeated key in a JSON line": (
        lambda d: (d / "bad.jsonl").write_text(
            json.dumps(GOOD.iloc[0].to_dict()) + '\n{"problem": "p1", "problem": "p2", "test": "t1"}\n')
        and d / "bad.jsonl",
        ["bad.jsonl: line 2: the key(s) ['problem'] appear twice", "give every field once"]),
    "symlink loop": (
        lambda d: os.symlink("loop.csv", d / "loop.csv") or d / "loop.csv",
        ["loop.csv: symbolic link loop", "-> point the link at a real file"]),
    "dangling symlink": (
        lambda d: os.symlink("gone.csv", d / "link.csv") or d / "link.csv",
        ["link.csv: dangling symbolic link (it points to 'gone.csv'"]),
    "FIFO": (
        lambda d: os.mkfifo(d / "pipe.csv") or d / "pipe.csv",
        ["pipe.csv: is a FIFO (named pipe), not a corpus file", "save the data to a regular file first"]),
    "directory where a file is expected": (
        lambda d: (d / "runs.csv").mkdir() or d / "runs.csv",
        ["runs.csv: is a directory, not a corpus file"]),
}


def _listing(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("command", ["validate", "convert"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_is_rejected_with_a_message_and_leaves_nothing(work, case, command):
    make, words = BAD_INPUTS[case]
    src = make(work)
    before = _listing(work)
    args = [command, src] + (["--out", work / "out.parquet"] if command == "convert" else [])
    proc = _cli(*args)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"speedaudit: error: {src}")  # the file first
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)
    assert "\n  -> " in proc.stderr  # says what to do
    assert _listing(work) == before  # no output, no temporary file


def test_unreadable_file_says_permission_denied(work):
    src = _csv(work / "secret.csv", GOOD)
    os.chmod(src, 0)
    for command in ("validate", "convert"):
        out = ["--out", work / "out.parquet"] if command == "convert" else []
        proc = _cli(command, src, *out, unprivileged=True)
        assert proc.returncode == 1, (proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert f"{src}: permission denied (the file exists but this user may not read it)" in proc.stderr
        assert "no such file" not in proc.stderr
    assert _listing(work) == ["secret.csv"]


def test_convert_into_a_non_writable_folder(work):
    src = _csv(work / "good.csv", GOOD)
    locked = work / "locked"
    locked.mkdir()
    os.chmod(locked, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    proc = _cli("convert", src, "--out", locked / "out.parquet", unprivileged=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{locked / 'out.parquet'}: cannot write into the folder '{locked}' (Permission denied)" in proc.stderr
    assert "-> choose an output path in a folder you can write" in proc.stderr
    assert _listing(work) == ["good.csv", "locked"]


def test_convert_onto_a_directory_or_below_a_file(work):
    src = _csv(work / "good.csv", GOOD)
    (work / "out.parquet").mkdir()
    proc = _cli("convert", src, "--out", work / "out.parquet")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{work / 'out.parquet'}: is a directory; cannot write the output onto it" in proc.stderr
    proc = _cli("convert", src, "--out", work / "good.csv" / "out.parquet")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "cannot create the folder" in proc.stderr
    assert _listing(work) == ["good.csv", "out.parquet"] and not any((work / "out.parquet").iterdir())


def test_the_same_file_without_the_fault_is_accepted(work):
    """The cases above fail for the fault they plant, not for something else in the table."""
    src = _csv(work / "good.csv", GOOD)
    assert _cli("validate", src).returncode == 0
    proc = _cli("convert", src, "--out", work / "out.parquet")
    assert proc.returncode == 0, proc.stderr
    assert _listing(work) == ["good.csv", "out.parquet"]


@pytest.mark.parametrize("fmt", ["pyperf", "hyperfine", "pytest-benchmark"])
def test_importers_say_why_a_file_cannot_be_read(work, fmt):
    os.mkfifo(work / "pipe.json")
    os.symlink("loop.json", work / "loop.json")
    (work / "broken.json").write_text('{"benchmarks": [')
    before = _listing(work)
    for name, words in (("pipe.json", "is a FIFO (named pipe)"), ("loop.json", "symbolic link loop"),
                        ("broken.json", "(not readable JSON: ")):
        proc = _cli("import", fmt, work / name, "--out", work / "out.parquet")
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith(f"speedaudit: error: {work / name}: ") and words in proc.stderr, proc.stderr
        assert "\n  -> " in proc.stderr
    assert _listing(work) == before
