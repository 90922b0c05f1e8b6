"""Languages: detecting, compiling (real g++) and running prepared programs (real processes)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from audits.collect import languages
from audits.collect.languages import (DEFAULT_PYTHON, BuildError, Program, check_python, first_error_line,
                                      floor_program, language_of, prepare)
from audits.collect.suite import Submission

ADD_PY = "import sys\nprint(sum(map(int, sys.stdin.read().split())))\n"
ADD_CPP = "#include <cstdio>\nint main(){long long a,s=0;while(scanf(\"%lld\",&a)==1)s+=a;printf(\"%lld\\n\",s);}\n"


def _run(program: Program, stdin: str = "", **kw) -> subprocess.CompletedProcess:
    return subprocess.run(program.argv, input=stdin.encode(), capture_output=True, timeout=30, **kw)


def test_language_of_files_and_folders(tmp_path):
    expected = {"a.py": "python", "b.py3": "python", "c.cpp": "cpp", "d.cc": "cpp", "E.PY": "python",
                "Main.java": None, "main.kt": None, "run.sh": None, "noext": None, "x.c": "c", "y.cxx": "cpp"}
    for name, lang in expected.items():
        assert language_of(tmp_path / name) == lang, name
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "a.py").write_text("")
    (mixed / "b.cpp").write_text("")
    assert language_of(mixed) is None
    cpp_dir = tmp_path / "cppdir"
    cpp_dir.mkdir()
    (cpp_dir / "main.cpp").write_text("")
    (cpp_dir / "util.h").write_text("")
    assert language_of(cpp_dir) == "cpp"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert language_of(empty) is None


def test_python_program_runs_with_the_system_interpreter(tmp_path):
    src = tmp_path / "add.py"
    src.write_text(ADD_PY)
    program = prepare(src, tmp_path / "build")
    assert program.language == "python" and program.argv[0] == DEFAULT_PYTHON and program.build_s == 0.0
    assert program.source == src.resolve()
    copy = Path(program.argv[1])
    assert copy.is_absolute() and copy.read_text() == ADD_PY and copy.parent.parent == (tmp_path / "build")
    assert stat.S_IMODE(copy.stat().st_mode) == 0o644
    proc = _run(program, "1 2 39\n")
    assert proc.returncode == 0 and proc.stdout == b"42\n"
    # another interpreter can be chosen (one the box's unprivileged uid can reach, as programs run as it)
    with _reachable_wrapper() as wrapper:
        other = prepare(src, tmp_path / "build", python=str(wrapper))
        assert other.argv[0] == str(wrapper) and _run(other, "2 3").stdout == b"5\n"


@contextlib.contextmanager
def _reachable_wrapper():
    """A wrapper interpreter in a world-reachable folder (pytest's tmp_path is root's only) that runs python3."""
    folder = Path(tempfile.mkdtemp(prefix="speedaudit-test-bin-"))
    try:
        folder.chmod(0o755)
        wrapper = folder / "mypython"
        wrapper.write_text(f"#!/bin/sh\nexec {DEFAULT_PYTHON} \"$@\"\n")
        wrapper.chmod(0o755)
        yield wrapper
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_submission_object_is_accepted(tmp_path):
    src = tmp_path / "fast.py3"
    src.write_text(ADD_PY)
    sub = Submission("p", "accepted/fast.py3", src, "python", "accepted", True)
    assert _run(prepare(sub, tmp_path / "build"), "4 4").stdout == b"8\n"


def test_cpp_compiled_once_and_cached_by_content(tmp_path):
    src = tmp_path / "add.cpp"
    src.write_text(ADD_CPP)
    first = prepare(src, tmp_path / "build")
    exe = Path(first.argv[0])
    assert first.language == "cpp" and first.build_s > 0 and exe.is_absolute() and os.access(exe, os.X_OK)
    assert _run(first, "5 6 7").stdout == b"18\n"
    mtime = exe.stat().st_mtime_ns
    again = prepare(src, tmp_path / "build")
    assert again.argv == first.argv and again.build_s == 0.0 and exe.stat().st_mtime_ns == mtime
    # the same source elsewhere hits the same cache entry; a changed source builds a new program
    elsewhere = tmp_path / "copy" / "add.cpp"
    elsewhere.parent.mkdir()
    elsewhere.write_text(ADD_CPP)
    assert prepare(elsewhere, tmp_path / "build").argv == first.argv
    src.write_text(ADD_CPP.replace("s+=a", "s+=2*a"))
    changed = prepare(src, tmp_path / "build")
    assert changed.argv != first.argv and _run(changed, "5 6 7").stdout == b"36\n"
    assert _run(first, "5 6 7").stdout == b"18\n"


def test_cpp_is_optimised_with_O2(tmp_path):
    # __OPTIMIZE__ is defined by g++ exactly when optimisation is on
    src = tmp_path / "opt.cpp"
    src.write_text("#include <cstdio>\nint main(){\n#ifdef __OPTIMIZE__\nputs(\"O\");\n#else\nputs(\"-\");\n#endif\n}\n")
    assert _run(prepare(src, tmp_path / "build")).stdout == b"O\n"


def test_compile_error_names_the_file_and_carries_gxx_message(tmp_path):
    src = tmp_path / "broken.cpp"
    src.write_text("int main() { return undefined_name; }\n")
    with pytest.raises(BuildError) as info:
        prepare(src, tmp_path / "build")
    message = str(info.value)
    assert str(src) in message and "g++ failed" in message and "undefined_name" in message
    assert not list((tmp_path / "build").rglob("prog"))  # nothing half-built left behind


def test_unsupported_and_missing_inputs(tmp_path):
    java = tmp_path / "Main.java"
    java.write_text("class Main {}")
    with pytest.raises(BuildError, match="language not supported"):
        prepare(java, tmp_path / "build")
    with pytest.raises(BuildError, match="no such file"):
        prepare(tmp_path / "nope.py", tmp_path / "build")
    src = tmp_path / "a.py"
    src.write_text("pass")
    with pytest.raises(BuildError, match="Python interpreter 'no-such-python3' not found"):
        prepare(src, tmp_path / "build", python="no-such-python3")
    cpp = tmp_path / "a.cpp"
    cpp.write_text("int main(){}")
    with pytest.raises(BuildError, match="C\\+\\+ compiler"):
        prepare(cpp, tmp_path / "build", cxx="no-such-g++")


def test_multi_file_submissions(tmp_path):
    py = tmp_path / "pysol"
    py.mkdir()
    (py / "helper.py").write_text("def add(xs):\n    return sum(xs)\n")
    (py / "main.py").write_text("import sys\nfrom helper import add\nprint(add(map(int, sys.stdin.read().split())))\n")
    program = prepare(py, tmp_path / "build")
    assert Path(program.argv[1]).name == "main.py" and _run(program, "1 1 1").stdout == b"3\n"
    cpp = tmp_path / "cppsol"
    cpp.mkdir()
    (cpp / "lib.h").write_text("long long twice(long long);\n")
    (cpp / "lib.cpp").write_text('#include "lib.h"\nlong long twice(long long x){return 2*x;}\n')
    (cpp / "main.cpp").write_text('#include <cstdio>\n#include "lib.h"\nint main(){long long a;scanf("%lld",&a);'
                                  'printf("%lld\\n",twice(a));}\n')
    built = prepare(cpp, tmp_path / "build")
    assert _run(built, "21").stdout == b"42\n"
    # editing only a header is a new program (the cache key covers headers too)
    (cpp / "lib.h").write_text("long long twice(long long);\n#define UNUSED 1\n")
    assert prepare(cpp, tmp_path / "build").argv != built.argv
    ambiguous = tmp_path / "amb"
    ambiguous.mkdir()
    (ambiguous / "a.py").write_text("")
    (ambiguous / "b.py").write_text("")
    with pytest.raises(BuildError, match="cannot tell which one to run"):
        prepare(ambiguous, tmp_path / "build")


@pytest.mark.parametrize("language", ["python", "cpp", "c"])
def test_floor_program_does_nothing(tmp_path, language):
    program = floor_program(language, tmp_path / "build")
    assert program.language == language and program.source is None
    proc = _run(program, "ignored input\n")
    assert proc.returncode == 0 and proc.stdout == b"" and proc.stderr == b""
    assert floor_program(language, tmp_path / "build").argv == program.argv  # stable across calls


def test_floor_program_rejects_unknown_language(tmp_path):
    with pytest.raises(BuildError, match="no floor program for language 'java'"):
        floor_program("java", tmp_path)


def test_prepared_programs_run_as_an_unprivileged_uid():
    """Why DEFAULT_PYTHON is Debian's python3: the runner drops privileges before it starts a program.

    As root (as on these machines and in CI) the programs are run as uid/gid 65534 (nobody); otherwise
    as the current user, which is already unprivileged.
    """
    base = Path(tempfile.mkdtemp(prefix="speedaudit-lang-"))  # under /tmp, so another uid can traverse it
    try:
        os.chmod(base, 0o755)
        (base / "src").mkdir(mode=0o700)  # sources may sit where the unprivileged uid cannot read them
        (base / "src" / "add.py").write_text(ADD_PY)
        (base / "src" / "add.cpp").write_text(ADD_CPP)
        kwargs = {"user": 65534, "group": 65534, "extra_groups": []} if os.geteuid() == 0 else {}
        for name in ("add.py", "add.cpp"):
            program = prepare(base / "src" / name, base / "build")
            proc = _run(program, "20 22", cwd="/", **kwargs)
            assert proc.returncode == 0 and proc.stdout == b"42\n", (name, proc.stderr)
    finally:
        subprocess.run(["rm", "-rf", str(base)], check=True)


# ---------------------------------------------------------------- link errors, C, Python checks, scripts


def test_link_error_is_a_build_error_with_the_linkers_first_line(tmp_path):
    # two files that each define main: both compile, the link fails and ld removes its output file
    folder = tmp_path / "two"
    folder.mkdir()
    (folder / "a.cpp").write_text("int main(){return 0;}\n")
    (folder / "b.cpp").write_text("int main(){return 1;}\n")
    with pytest.raises(BuildError) as info:
        prepare(folder, tmp_path / "build")
    exc = info.value
    assert "multiple definition of `main'" in exc.first_line and exc.first_line in str(exc)
    assert "\n" not in str(exc) and "collect2" in exc.output  # the whole output is kept
    assert not [p for p in (tmp_path / "build").rglob("*") if p.is_file()]  # no half-built file left
    # an undefined symbol, in C: gcc's linker error, not a crash
    src = tmp_path / "undef.c"
    src.write_text("int f(void);\nint main(void){return f();}\n")
    with pytest.raises(BuildError, match=r"gcc failed \(exit 1\): .*undefined reference to `f'"):
        prepare(src, tmp_path / "build")


def test_first_error_line_skips_context_and_paths_that_say_error():
    out = ("/tmp/test_compile_error/a.cpp: In function 'int main()':\n"
           "/tmp/test_compile_error/a.cpp:1:21: error: 'x' was not declared in this scope\n"
           "    1 | int main(){ return x; }\n")
    assert first_error_line(out) == "/tmp/test_compile_error/a.cpp:1:21: error: 'x' was not declared in this scope"
    assert first_error_line("x.cpp:1:10: fatal error: validation.h: No such file or directory\n") == \
        "x.cpp:1:10: fatal error: validation.h: No such file or directory"
    assert first_error_line("just one line\n") == "just one line" and first_error_line("") == ""


def test_c_programs_compile_with_libm_and_run(tmp_path):
    src = tmp_path / "root.c"
    src.write_text("#include <math.h>\n#include <stdio.h>\nint main(void){double x;scanf(\"%lf\",&x);"
                   "printf(\"%.0f\\n\",sqrt(x));return 0;}\n")
    program = prepare(src, tmp_path / "build")
    assert program.language == "c" and _run(program, "1764").stdout == b"42\n"


def test_python_is_byte_compiled_by_the_chosen_interpreter(tmp_path, monkeypatch):
    # the check's box runs are counted on the real function (each still runs the wrapper in the box)
    calls = []
    real = languages._check_in_box
    monkeypatch.setattr(languages, "_check_in_box", lambda files, *a: calls.append(len(files)) or real(files, *a))
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(ADD_PY)
    bad.write_text("def f(:\n")
    with _reachable_wrapper() as wrapper:
        assert check_python([good, bad], python=str(wrapper)) == {
            good: None, bad: f"does not compile under {wrapper}: line 1: invalid syntax"}
        assert calls == [2]  # one process for both files
        with pytest.raises(BuildError, match="is it a Python 3 interpreter"):
            check_python([good], python="/bin/true")
        # prepare compiles once: a second prepare of the same source does not check it again
        calls.clear()
        prepare(good, tmp_path / "build", python=str(wrapper))
        prepare(good, tmp_path / "build", python=str(wrapper))
        assert calls == [1]
    with pytest.raises(BuildError, match=r"bad.py: does not compile under"):
        prepare(bad, tmp_path / "build")


def test_an_interpreter_the_box_cannot_reach_is_refused_with_the_reason(tmp_path):
    folder = tmp_path / "private"  # root's own folder: the box's unprivileged uid cannot reach it
    folder.mkdir(mode=0o700)
    wrapper = folder / "mypython"
    wrapper.write_text(f"#!/bin/sh\nexec {DEFAULT_PYTHON} \"$@\"\n")
    wrapper.chmod(0o755)
    src = tmp_path / "add.py"
    src.write_text(ADD_PY)
    with pytest.raises(BuildError, match="readable by an unprivileged uid"):
        check_python([src], python=str(wrapper), sandbox="bwrap")


@pytest.mark.parametrize("source, python2", [
    ("print 'hello'\n", True),
    ("import sys\nprint >>sys.stderr, 'x'\n", True),
    ("try:\n    pass\nexcept ValueError, e:\n    pass\n", True),
    ("for i in xrange(3):\n    print(i)\n", True),
    ("d = {}\nprint(d.has_key(1))\n", True),
    ("import sys\nprint(sys.maxint)\n", True),
    ("#!/usr/bin/env python2\nprint('x')\n", True),
    ("x = 0777\n", True),
    ("try:\n    input = raw_input\nexcept NameError:\n    pass\nprint(input())\n", False),
    ("from functools import reduce\nprint(reduce(lambda a, b: a + b, [1, 2]))\n", False),
    ("long = 5\nprint(long)\n", False),
    ("def file(x):\n    return x\nprint(file(1))\n", False),
    ("#!/usr/bin/env python3\nprint('x')\n", False),
    ("print('x', end='')\n", False),
])
def test_python2_programs_are_told_apart_without_running_them(tmp_path, source, python2):
    src = tmp_path / "prog.py"
    src.write_text(source)
    reason = check_python([src])[src]
    assert (reason is not None and reason.startswith("Python 2 program")) == python2, reason
    if not python2:
        assert reason is None
        # and it really runs under Python 3
        assert subprocess.run([DEFAULT_PYTHON, str(src)], input=b"x\n", capture_output=True,
                              timeout=30).returncode == 0


def test_python2_module_of_a_multi_file_submission_is_named(tmp_path):
    folder = tmp_path / "multi"
    folder.mkdir()
    (folder / "main.py").write_text("from util import f\nprint(f())\n")
    (folder / "util.py").write_text("def f():\n    return raw_input()\n")
    with pytest.raises(BuildError, match=r"multi/util.py: Python 2 program \(line 2 uses raw_input"):
        prepare(folder, tmp_path / "build")


def test_build_and_run_scripts_are_refused(tmp_path):
    folder = tmp_path / "scripted"
    folder.mkdir()
    (folder / "build").write_text("#!/bin/sh\ng++ -o sol sol.cpp\n")
    (folder / "run").write_text("#!/bin/sh\n./sol\n")
    (folder / "sol.cpp").write_text("int main(){}\n")
    with pytest.raises(BuildError, match="has a build and a run script; speedaudit does not run build/run scripts"):
        prepare(folder, tmp_path / "build")
