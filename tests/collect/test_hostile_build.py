"""Hostile builds (issue 22, item 1): real g++ in the real sandbox, under local, bwrap and auto.

A submission's compilation is part of the untrusted program. Each case is a real source that tries to
read what it must not (the answers by a relative #include, every .in/.ans by an absolute .incbin, the
root-only /etc/shadow) or to exhaust the machine (a 1.5 GiB .fill, a file that includes itself twice,
#include "/dev/zero"). Each must fail the build with the compiler's own message, show no byte of the
file it tried to read, stay within the build limits, and leave nothing behind but the cache folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.collect.package_files import shadow_lines
from audits.collect.languages import BUILD_LIMITS, STAGE_PREFIX, BuildError, prepare
from audits.collect.sandbox import scratch_root

SECRET = "918273645546372819"
HONEST = '#include <cstdio>\nint main(){long long a,b;if(scanf("%lld %lld",&a,&b)!=2)return 1;printf("%lld\\n",a+b);}\n'
SANDBOXES = ("local", "bwrap", "auto")


def _package(root: Path) -> Path:
    for rel, text in {"problem.yaml": "name: Add\n", "data/secret/1.in": "1 2\n", "data/secret/1.ans": f"{SECRET}\n",
                      "data/secret/2.in": "3 4\n", "data/secret/2.ans": "7\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "submissions" / "accepted").mkdir(parents=True, exist_ok=True)
    return root


def _sources(pkg: Path) -> dict[str, str]:
    data = pkg / "data" / "secret"
    incbin = "".join(f'asm(".section .rodata\\n.incbin \\"{data / n}\\"\\n.previous");\n'
                     for n in ("1.in", "1.ans", "2.in", "2.ans"))
    return {
        "relative_include.cpp": '#include <cstdio>\nlong long a =\n#include "../../data/secret/1.ans"\n;\n'
                                'int main(){printf("%lld\\n", a);}\n',
        "absolute_incbin.cpp": incbin + "int main(){}\n",
        "incbin_shadow.cpp": 'asm(".section .rodata\\n.incbin \\"/etc/shadow\\"\\n.previous");\nint main(){}\n',
        "include_shadow.cpp": '#include "/etc/shadow"\nint main(){}\n',
        "fill_bomb.cpp": 'asm(".section .data\\n.fill 1610612736,1,0\\n.previous");\nint main(){}\n',
        "self_include.cpp": "#include __FILE__\n#include __FILE__\nint main(){}\n",
        "dev_zero.cpp": '#include "/dev/zero"\nint main(){}\n',
    }


def _leftovers() -> set[str]:
    # Only this process's staging folders (the name carries the collector's pid, audits.collect.languages):
    # under pytest-xdist another worker's build may be staging beside this one at the same moment.
    return {str(p) for base in ("/dev/shm", "/tmp") for p in Path(base).glob(f"speedaudit-build-{os.getpid()}-*")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every hostile source built once per sandbox: {(sandbox, name): (BuildError or None, seconds)}."""
    base = tmp_path_factory.mktemp("hostile-build")
    pkg = _package(base / "suite" / "add")
    sources = _sources(pkg)
    for name, text in {**sources, "honest.cpp": HONEST}.items():
        (pkg / "submissions" / "accepted" / name).write_text(text)
    before = _leftovers()
    out = {}
    for sandbox in SANDBOXES:
        build = base / f"build-{sandbox}"
        for name in [*sources, "honest.cpp"]:
            t0 = time.monotonic()
            try:
                program = prepare(pkg / "submissions" / "accepted" / name, build, sandbox=sandbox)
                out[sandbox, name] = (program, time.monotonic() - t0)
            except BuildError as exc:
                out[sandbox, name] = (exc, time.monotonic() - t0)
    return {"results": out, "pkg": pkg, "base": base, "new_leftovers": _leftovers() - before}


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_the_honest_build_works_in_the_box(built, sandbox):
    program, _ = built["results"][sandbox, "honest.cpp"]
    assert not isinstance(program, BuildError), program
    done = subprocess.run(program.argv, input="20 22\n", capture_output=True, text=True, timeout=30)
    assert done.stdout == "42\n"


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("name,message", [
    ("relative_include.cpp", "../../data/secret/1.ans: No such file or directory"),
    ("absolute_incbin.cpp", "1.in"),
    ("incbin_shadow.cpp", "/etc/shadow"),
    ("include_shadow.cpp", "/etc/shadow: Permission denied"),
])
def test_a_build_cannot_read_the_answers_or_host_files(built, sandbox, name, message):
    result, _ = built["results"][sandbox, name]
    assert isinstance(result, BuildError), f"{name} built under {sandbox}: the box let it read the file"
    text = f"{result}\n{result.output}"
    assert message in text, text
    assert SECRET not in text and "\n3 4" not in text
    for line in shadow_lines():
        assert line not in text
    assert "root:" not in text


@pytest.mark.parametrize("sandbox", SANDBOXES)
@pytest.mark.parametrize("name", ["fill_bomb.cpp", "self_include.cpp", "dev_zero.cpp"])
def test_build_bombs_are_contained_and_leave_nothing(built, sandbox, name):
    result, seconds = built["results"][sandbox, name]
    assert isinstance(result, BuildError), f"{name} built under {sandbox}"
    assert seconds < BUILD_LIMITS["wall_s"] + 15
    assert len(result.output) <= 1 << 16 and len(str(result)) < 2000
    build = built["base"] / f"build-{'bwrap' if sandbox == 'auto' else sandbox}"
    big = [p for p in Path(built["base"]).rglob("*") if p.is_file() and p.stat().st_size > 8 << 20]
    assert not big, big  # no object, executable or message file of the bomb outlives the build
    assert build.is_dir()
    assert not built["new_leftovers"]


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_file_bomb_names_the_limit_it_hit(built, sandbox):
    """The 1.5 GiB .fill is stopped by the build's file-size limit (the assembler gets SIGXFSZ), and the message says
    so: a real archive's 512 MiB static array (BAPCtools' test-memstatic.cc) read 'g++ failed (exit 4)' before."""
    result, _ = built["results"][sandbox, "fill_bomb.cpp"]
    assert isinstance(result, BuildError)
    assert f"the build exceeded its file-size limit ({BUILD_LIMITS['file_bytes'] >> 20} MiB per file" in str(result)


def test_builds_run_as_an_unprivileged_uid_without_the_package(tmp_path):
    """The compiler's own view: the package's answers are not in it, the toolchain's system files are."""
    pkg = _package(tmp_path / "suite" / "add")
    probe = pkg / "submissions" / "accepted" / "probe.cpp"
    probe.write_text(f'#if __has_include("{pkg}/data/secret/1.ans")\n#error the package is visible\n#endif\n'
                     f'#if __has_include("/etc/passwd") == 0\n#error no system files\n#endif\nint main(){{}}\n')
    for sandbox in ("local", "bwrap"):
        prepare(probe, tmp_path / f"b-{sandbox}", sandbox=sandbox)  # builds: the package is not in its view


_PREPARE = ("import sys\nfrom pathlib import Path\nfrom audits.collect.languages import prepare\n"
            "prepare(Path(sys.argv[1]), Path(sys.argv[2]), sandbox='local')\n")


def _stages(pid: int) -> list[Path]:
    return [p for base in ("/dev/shm", tempfile.gettempdir()) for p in Path(base).glob(f"{STAGE_PREFIX}{pid}-*")]


def test_a_collector_killed_mid_build_leaves_no_staging_folder_to_the_next(tmp_path):
    """SIGKILL runs no ``finally``: the killed collector's staging folder is removed by the next collector."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    slow = tmp_path / "slow.cpp"  # the whole standard library: seconds of cc1plus, time to kill it mid-build
    slow.write_text("#include <bits/stdc++.h>\nint main(){}\n")
    collector = subprocess.Popen([sys.executable, "-c", _PREPARE, str(slow), str(tmp_path / "b1")], env=env)
    deadline = time.monotonic() + 120
    while not _stages(collector.pid) and collector.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    collector.kill()
    collector.wait()
    (stale,) = _stages(collector.pid)  # what the kill left behind
    live = scratch_root(f"{STAGE_PREFIX}{os.getpid()}-")  # a live collector's (ours): must be kept
    try:
        honest = tmp_path / "honest.cpp"
        honest.write_text(HONEST)
        subprocess.run([sys.executable, "-c", _PREPARE, str(honest), str(tmp_path / "b2")], env=env, check=True,
                       timeout=300)
        assert not stale.exists()
        assert live.is_dir()
    finally:
        shutil.rmtree(live, ignore_errors=True)
