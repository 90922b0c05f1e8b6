"""Hostile Python checks (issue 22, item 1): the byte-compile step runs in the build box, under local, bwrap, auto.

The check of a Python source (``compile()``, to refuse syntax errors before the campaign) is part of
the untrusted build, as g++ is for C++. Each case is real: the chosen interpreter is a hostile
stand-in that reads the package's answer file and /etc/shadow and forges them into its verdict
(outside the box, as root, both reads succeed and the content reaches the reason); a source whose
AST exceeds the build's memory limit is that file's reason, not the others' nor the collector's.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.collect.package_files import shadow_lines
from audits.collect import languages
from audits.collect.languages import DEFAULT_PYTHON, check_python, prepare

SECRET = "5551234987654321"
SANDBOXES = ("local", "bwrap", "auto")


@pytest.fixture
def bin_dir():
    """A folder the box's uid can reach (pytest's tmp_path is root's only), as a system interpreter's is."""
    path = Path(tempfile.mkdtemp(prefix="speedaudit-test-bin-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _hostile_interpreter(bin_dir: Path, answer: Path) -> Path:
    """An interpreter that, when it can read the answer or /etc/shadow, reports their bytes as the verdict."""
    wrapper = bin_dir / "python3"
    wrapper.write_text(f"""#!/bin/sh
for a; do last=$a; done
leak=$(cat {answer} /etc/shadow 2>/dev/null | tr -d '"\\\\' | tr '\\n' ' ')
if [ -n "$leak" ]; then printf '{{"%s": ["syntax", "%s"]}}\\n' "$last" "$leak"; exit 0; fi
exec {DEFAULT_PYTHON} "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_the_python_check_cannot_read_the_answers_or_host_files(tmp_path, bin_dir, sandbox):
    pkg = tmp_path / "pkg"
    answer = pkg / "data" / "secret" / "1.ans"
    answer.parent.mkdir(parents=True)
    answer.write_text(f"{SECRET}\n")
    src = pkg / "submissions" / "accepted" / "add.py"
    src.parent.mkdir(parents=True)
    src.write_text("print(sum(map(int, input().split())))\n")
    wrapper = _hostile_interpreter(bin_dir, answer)
    reason = check_python([src], python=str(wrapper), sandbox=sandbox)[src]
    assert reason is None  # every read was refused, so the wrapper handed over to the real interpreter
    program = prepare(src, tmp_path / "build", python=str(wrapper), sandbox=sandbox)
    assert program.language == "python"


def test_the_hostile_interpreter_does_leak_outside_the_box(tmp_path, bin_dir):
    # the control: run as root on the host (what the check did before), the same wrapper reads the answer
    import subprocess

    answer = tmp_path / "1.ans"
    answer.write_text(f"{SECRET}\n")
    src = tmp_path / "add.py"
    src.write_text("print(1)\n")
    wrapper = _hostile_interpreter(bin_dir, answer)
    out = subprocess.run([str(wrapper), "-I", "-c", "pass", str(src)], capture_output=True, text=True).stdout
    assert SECRET in out
    shadow = shadow_lines()
    assert not shadow or shadow[0].split(":")[0] in out


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_compile_bomb_is_its_own_files_reason(tmp_path, sandbox, monkeypatch):
    # 10^6 list elements: about 700 MB of AST unbounded (3x10^6 took 2.2 GB and 20 s here); a 256 MiB limit
    # keeps the test light. The honest file checked with it still passes: the bomb is checked alone.
    monkeypatch.setitem(languages.BUILD_LIMITS, "memory_bytes", 256 << 20)
    honest, bomb = tmp_path / "honest.py", tmp_path / "bomb.py"
    honest.write_text("print(int(input()) + 1)\n")
    bomb.write_text("x = [" + "0," * 1_000_000 + "]\n")
    result = check_python([honest, bomb], sandbox=sandbox)
    assert result[honest] is None
    assert result[bomb] is not None and "build's" in result[bomb] and "limit" in result[bomb]
    assert "0,0," not in result[bomb]


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_coding_tricks_fail_with_the_interpreters_message_only(tmp_path, sandbox):
    # an unknown codec, and a declared codec the bytes do not decode under (the bytes carry the secret)
    unknown, undecodable = tmp_path / "unknown.py", tmp_path / "undecodable.py"
    unknown.write_text("# coding: speedaudit_no_such_codec\nx = 1\n")
    undecodable.write_bytes(b"# -*- coding: ascii -*-\nx = '" + SECRET.encode() + b"\xff'\n")
    result = check_python([unknown, undecodable], sandbox=sandbox)
    assert "unknown encoding" in result[unknown]
    assert result[undecodable] is not None and result[undecodable].startswith("does not compile")
    assert SECRET not in result[undecodable]
