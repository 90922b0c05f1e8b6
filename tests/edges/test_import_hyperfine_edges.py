"""hyperfine files written in odd but legal ways, imported with `speedaudit import hyperfine` (the real hyperfine)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pandas as pd

HYPERFINE = shutil.which("hyperfine")  # Debian's package; `make test` installs it (scripts/system-deps.sh)
CLI = [sys.executable, "-m", "audits.cli"]


def _hyperfine(out, *args):
    assert HYPERFINE, "hyperfine is missing: run scripts/system-deps.sh (make test does)"
    subprocess.run([HYPERFINE, "--style", "none", *args, "--export-json", str(out)], check=True, capture_output=True,
                   timeout=120)
    return out


def test_times_hyperfine_clamped_to_zero_behind_its_shell_are_refused_with_the_way_out(tmp_path):
    # hyperfine's default runs each command in a shell and subtracts the shell's start-up time; a command about
    # as fast as that start-up gets 0 s for the runs that were quicker. Those are no measurements: before the
    # fix the import failed with "zero durations on ok rows ... check the timer" over rows of the corpus it
    # was building, naming neither the command nor hyperfine's --shell=none.
    shell = _hyperfine(tmp_path / "shell.json", "--runs", "60", ":")
    times = json.loads(shell.read_text())["results"][0]["times"]
    assert 0.0 in times  # what the real hyperfine wrote (the premise of the test)
    out = tmp_path / "out.parquet"
    proc = subprocess.run([*CLI, "import", "hyperfine", str(shell), "--out", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    zeros = times.count(0.0)
    assert f"{shell}: command ':': {zeros} of its {len(times)} times are 0 s" in proc.stderr
    assert "--shell=none (-N)" in proc.stderr
    assert not out.exists() and not list(tmp_path.glob(".out.parquet*"))
    # timed without a shell, the same command imports, every value exactly as hyperfine wrote it
    direct = _hyperfine(tmp_path / "direct.json", "--runs", "5", "-N", "true")
    proc = subprocess.run([*CLI, "import", "hyperfine", str(direct), "--out", str(out)], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    corpus = pd.read_parquet(out)
    assert corpus.sort_values("repeat")["duration_s"].tolist() == json.loads(direct.read_text())["results"][0]["times"]


def test_commands_that_cannot_be_ids_are_named_command_k_and_kept_exactly(tmp_path):
    # a multi-line shell command (newlines) and one with a trailing space are legal hyperfine commands; before the
    # fix the import refused them as solution ids ("remove the control characters ... a broken export or a binary
    # column?", "strip the spaces in the file"), which the user cannot do to a file hyperfine wrote
    # (60 ms of sleep: in shell mode hyperfine subtracts the shell's start-up, and a 2 ms loop wrote 0 s
    # times under make test's load, which the import rightly refuses)
    loop = "for i in 1 2; do\n  sleep 0.03\ndone"
    path = _hyperfine(tmp_path / "odd.json", "--runs", "3", "-N", "true ", "seq 50")
    shell = _hyperfine(tmp_path / "loop.json", "--runs", "3", loop)
    out = tmp_path / "odd.parquet"
    proc = subprocess.run([*CLI, "import", "hyperfine", str(path), str(shell), "--out", str(out)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    corpus = pd.read_parquet(out)
    for file in (path, shell):
        rows = corpus.loc[corpus.campaign == file.name]
        for result in json.loads(file.read_text())["results"]:
            mine = rows.loc[rows.command == result["command"]].sort_values("repeat")
            assert mine["duration_s"].tolist() == result["times"]
            expected = "seq 50" if result["command"] == "seq 50" else "command 1"
            assert set(mine["solution"]) == {expected}
    assert set(corpus["command"]) == {"true ", "seq 50", loop}
    # the summary names what 'command 1' stands for on one line, the newlines escaped
    assert "for i in 1 2; do\\n  sleep 0.03\\ndone" in proc.stdout and "\ndone" not in proc.stdout


def test_a_parameter_value_with_a_space_at_its_end_is_quoted_in_the_test_name(tmp_path):
    # hyperfine -L x 'a ,b' scans the values 'a ' and 'b'; before the fix the test 'x=a ' was refused ("ids with
    # leading or trailing white space ... strip the spaces in the file")
    path = _hyperfine(tmp_path / "scan.json", "-N", "--runs", "2", "-L", "x", "a ,b", "echo {x}")
    data = json.loads(path.read_text())
    assert [r["parameters"]["x"] for r in data["results"]] == ["a ", "b"]
    out = tmp_path / "scan.parquet"
    proc = subprocess.run([*CLI, "import", "hyperfine", str(path), "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    corpus = pd.read_parquet(out)
    for result, test in zip(data["results"], ["x='a '", "x=b"]):
        rows = corpus.loc[corpus.test == test].sort_values("repeat")
        assert rows["duration_s"].tolist() == result["times"] and set(rows["command"]) == {result["command"]}
