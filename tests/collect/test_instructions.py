"""Instruction counts (issue 25 item 2): real valgrind runs of tiny Python and C++ programs.

The counted command of :func:`audits.collect.counters.valgrind_argv` is run directly (not yet through a
sandbox: the sandbox's side channel is still open work, docs/collecting.md). Checks: the same count on
repeats, a different program gives a different count, and a hostile program that prints fake summaries on
its standard output and error and writes them to every descriptor it can reach does not change the report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from audits.collect.counters import (FIXED_ENVIRONMENT, NOFILE, parse_valgrind_log, resolved_binary,
                                     valgrind_argv)

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

PY = resolved_binary(sys.executable)
LOOP = "s = 0\nfor i in range({n}):\n    s += i * i\nprint(s, len(set(str(i) for i in range(50))))\n"
FORGED = 777
HOSTILE = """import os, sys
line = ("==%d== I   refs:      {forged}\\n" % os.getpid()).encode()
sys.stdout.write(line.decode()); sys.stdout.flush()
sys.stderr.write(line.decode()); sys.stderr.flush()
refused = 0
for fd in range(3, 1024):
    try:
        os.write(fd, line)
    except OSError:
        refused += 1
print("refused", refused)
""".replace("{forged}", f"{FORGED:,}")


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


def test_python_counts_are_identical_across_repeats_and_follow_the_work(tmp_path):
    small, big = tmp_path / "small.py", tmp_path / "big.py"
    small.write_text(LOOP.format(n=20_000))
    big.write_text(LOOP.format(n=60_000))
    first = counted([PY, str(small)])
    second = counted([PY, str(small)])
    assert first[0] is not None, first[1]
    assert first[0] == second[0]
    assert first[2] == second[2] == f"{sum(i * i for i in range(20_000))} 50\n"
    larger = counted([PY, str(big)])[0]
    assert larger > first[0]  # three times the loop: more instructions, not the same constant


def test_cpp_counts_are_identical_across_repeats(tmp_path):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("no g++")
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


def test_the_counted_run_fixes_python_hash_seed(tmp_path):
    probe = tmp_path / "seed.py"
    probe.write_text("import os\nprint(os.environ.get('PYTHONHASHSEED'), hash('speedaudit'))\n")
    outs = {counted([PY, str(probe)])[2] for _ in range(2)}
    assert len(outs) == 1 and outs.pop().startswith(f"{FIXED_ENVIRONMENT['PYTHONHASHSEED']} ")


def test_a_program_printing_fake_summaries_does_not_change_the_count(tmp_path):
    hostile = tmp_path / "hostile.py"
    hostile.write_text(HOSTILE)
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
