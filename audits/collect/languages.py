"""Languages: turn a submission's source into a command that the sandbox can time.

Three languages are supported: Python (``.py``, ``.py3``), C++ (``.cpp``,
``.cc``, ``.cxx``, ``.c++``) and C (``.c``). :func:`prepare` returns a :class:`Program`
whose ``argv`` reads the test input on stdin and writes its answer to stdout:

* Python: ``(python, <copy of the source>)``. The source (a file, or the whole
  folder of a multi-file submission) is copied into ``build_dir`` under its
  content hash so that the runner can make one folder readable to the
  unprivileged uid it runs programs as (and bind it into a sandbox). Every
  file is byte-compiled (``compile()``, nothing written) **by the chosen
  interpreter, in the build box** (as C/C++ are compiled) before any timing: a syntax error is a :class:`BuildError`
  with the interpreter's message, and a Python 2 program (a ``python2``
  shebang, a ``print`` statement, or a Python-2-only builtin such as
  ``raw_input``/``xrange`` used without being defined and outside a
  ``try``/``except NameError`` fallback) is a :class:`BuildError` that says so,
  instead of a run-time error that would read as a wrong reference.
* C++: compiled **once**, before any timing, with ``g++ -O2`` (see
  :data:`DEFAULT_CXXFLAGS`) into ``build_dir/<content hash>/prog``. The build is
  cached by the hash of the sources, the compiler and its flags, so preparing
  the same program again (another worker, a resumed campaign) costs nothing.
  Compile time is recorded in :attr:`Program.build_s` and is never part of a
  runtime. A compile or link error raises :class:`BuildError` naming the
  file, with the compiler's first error line (:attr:`BuildError.first_line`)
  and its whole output (:attr:`BuildError.output`). The compiler runs **in the
  sandbox** (:func:`build_sandbox`, limits :data:`BUILD_LIMITS`) on a fresh copy
  of the submission's own files; messages about files outside the submission
  are withheld (:func:`shown_messages`); see docs/collecting.md.
* C: the same with ``gcc -O2 -std=gnu17`` (:data:`DEFAULT_CFLAGS`), linked
  with ``-lm`` as on judges.

A submission folder with a ``build`` or ``run`` script (the problem package
format's way to build other languages) is refused with a :class:`BuildError`:
those scripts would run outside the sandbox (*decision*).

Why the default interpreter is ``/usr/bin/python3`` (:data:`DEFAULT_PYTHON`): the
runner drops privileges before it starts a program, so the interpreter, its
standard library and its shared libraries must be readable by an unprivileged
uid. Debian's system Python lives under ``/usr`` and is world-readable; a Python
built under root's home (``/root/.pyenv``, a virtualenv in ``/root``) is not,
and the program would fail with "permission denied" before it starts. It also
keeps third-party site-packages of the tool's own virtualenv out of the timed
programs. Pass ``python=`` to time another interpreter.

Example
-------
>>> from pathlib import Path
>>> import tempfile
>>> d = Path(tempfile.mkdtemp())
>>> _ = (d / "sol.py").write_text("print(int(input()) + 1)")
>>> p = prepare(d / "sol.py", d / "build")
>>> p.language, p.argv[0]
('python', '/usr/bin/python3')
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from audits.collect.sandbox import Limits, SandboxError, fast_tmp, make_sandbox, scratch_root, strongest_sandbox

__all__ = ["DEFAULT_PYTHON", "DEFAULT_CXX", "DEFAULT_CC", "DEFAULT_CFLAGS", "LANGUAGES", "EXTENSIONS", "Program",
           "BuildError", "language_of", "prepare", "floor_program", "check_python", "check_python_copies",
           "build_sandbox", "newest_cxx_std", "cxx_flags"]

#: Debian's system Python: readable by the unprivileged uid the runner executes programs as.
DEFAULT_PYTHON = "/usr/bin/python3"
#: The C++ compiler (looked up on PATH).
DEFAULT_CXX = "g++"
#: Flags for every C++ build: optimised as on a judge; the standard is the newest the compiler knows
#: (:func:`newest_cxx_std`) unless the package or ``--cxx-std`` names one (:func:`cxx_flags`).
DEFAULT_CXXFLAGS: tuple[str, ...] = ("-O2", "-std=gnu++17")
#: C++ standards tried, newest first, when nothing names one (*decision*: judges moved to C++20 and later).
CXX_STANDARDS: tuple[str, ...] = ("gnu++23", "gnu++20", "gnu++17")
#: The C compiler and its flags (``-lm`` is added after the sources, as judges link C).
DEFAULT_CC = "gcc"
DEFAULT_CFLAGS: tuple[str, ...] = ("-O2", "-std=gnu17")
#: Seconds a single compilation may take before it is abandoned.
COMPILE_TIMEOUT_S = 120.0

#: File extension -> language.
EXTENSIONS: dict[str, str] = {".py": "python", ".py3": "python", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp",
                              ".c++": "cpp", ".c": "c"}
LANGUAGES: tuple[str, ...] = ("python", "cpp", "c")

_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inc", ".tcc")
#: Build/run scripts of the problem package format (not executed: they would run outside the sandbox).
_SCRIPTS = ("build", "run")

_FLOOR_SOURCES = {"python": ("floor.py", ""), "cpp": ("floor.cpp", "int main() { return 0; }\n"),
                  "c": ("floor.c", "int main(void) { return 0; }\n")}


class BuildError(Exception):
    """A program could not be prepared: unsupported language, missing tool, compile or link error.

    ``str(exc)`` is one line (the file and the compiler's first error line);
    ``first_line`` is that error line alone, ``output`` the tool's whole output.
    """

    def __init__(self, message: str, *, first_line: str | None = None, output: str = ""):
        super().__init__(message)
        self.first_line = first_line
        self.output = output


def first_error_line(output: str) -> str:
    r"""The first line of a compiler's output that reports an error, else its first non-empty line.

    g++ and ld print context lines ("In function 'int main()':") before the
    error; the error is the line that says ``error``.

    >>> first_error_line("a.cpp: In function 'int main()':\na.cpp:3:5: error: 'x' was not declared\n")
    "a.cpp:3:5: error: 'x' was not declared"
    >>> first_error_line("/usr/bin/ld: b.o: in function `main':\nb.cpp:(.text+0x0): multiple definition of `main'")
    "b.cpp:(.text+0x0): multiple definition of `main'"
    """
    lines = [line.strip() for line in (output or "").splitlines() if line.strip()]
    for line in lines:
        if _ERROR_LINE.search(line):
            return line
    return lines[0] if lines else ""


# "error:" as the compiler writes it (after a location or a space), not inside a path such as
# /tmp/test_compile_error/..., and the linker's own wording
_ERROR_LINE = re.compile(r"(?:^|[\s:])(?:fatal )?error:|multiple definition of|undefined reference to", re.I)


@dataclass(frozen=True)
class Program:
    """A ready-to-run program.

    Attributes
    ----------
    language : {"python", "cpp"}
    argv : tuple of str
        The command, with absolute paths. It reads the test input on stdin and
        writes its output to stdout; run it in any working directory.
    source : Path or None
        The submission's source (file or folder) it was prepared from; None for
        generated programs such as the floor.
    build_s : float
        Seconds spent compiling (0 for Python, and for a build found in the cache).
        Never part of a measured runtime.
    """

    language: str
    argv: tuple[str, ...]
    source: Path | None
    build_s: float = 0.0

    def to_dict(self) -> dict:
        return {"language": self.language, "argv": list(self.argv),
                "source": None if self.source is None else str(self.source), "build_s": self.build_s}


def _source_files(path: Path) -> list[Path]:
    """Regular, non-hidden files of a multi-file submission folder, sorted; no link is followed.

    Raises BuildError at a symbolic link (or a hard-linked file): a folder
    submission is copied and built as its own files only (issue 22).
    """
    out = []
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in dirnames + filenames:
            entry = Path(dirpath) / name
            st = os.lstat(entry)
            if stat.S_ISLNK(st.st_mode):
                raise BuildError(f"{entry}: a symbolic link inside the submission (not followed); copy the file "
                                 f"in instead")
            if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                raise BuildError(f"{entry}: a hard link inside the submission (its other names may be outside "
                                 f"it); copy the file in instead")
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        out.extend(Path(dirpath) / f for f in filenames
                   if not f.startswith(".") and stat.S_ISREG(os.lstat(Path(dirpath) / f).st_mode))
    return sorted(out)


def _read_nofollow(path: Path) -> bytes:
    """The bytes of a regular file, opened without following a link (OSError otherwise)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return fh.read()


def copy_files(files: list[Path], root: Path, dest: Path) -> None:
    """Copy ``files`` (below ``root``) into ``dest`` under the same relative names, world-readable.

    Each file is opened with ``O_NOFOLLOW``; folders are made 0755 and files
    0644. Nothing is copied through a link.
    """
    _ensure_dir(dest)
    for f in files:
        rel = f.relative_to(root)
        target = dest / rel
        for depth in range(1, len(rel.parts)):
            _ensure_dir(dest.joinpath(*rel.parts[:depth]))
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(_read_nofollow(f))
        os.chmod(target, 0o644)


def language_of(path) -> str | None:
    """Language of a source file or multi-file submission folder.

    ``.py``/``.py3`` -> ``"python"``, ``.cpp``/``.cc``/``.cxx``/``.c++`` ->
    ``"cpp"``, ``.c`` -> ``"c"``, anything else -> None. A folder has the
    language of its source files when they all agree (headers and data files
    are ignored); a folder mixing languages, or with no source file, is None.

    >>> language_of("submissions/accepted/fast.py3"), language_of("a/Main.java")
    ('python', None)
    """
    path = Path(path)
    if path.is_dir():
        found = {EXTENSIONS[p.suffix.lower()] for p in _source_files(path) if p.suffix.lower() in EXTENSIONS}
        return found.pop() if len(found) == 1 else None
    return EXTENSIONS.get(path.suffix.lower())


def _hash_tree(paths: list[Path], root: Path, extra: tuple[str, ...]) -> str:
    h = hashlib.sha256()
    for item in extra:
        h.update(item.encode() + b"\0")
    for p in paths:
        h.update(str(p.relative_to(root) if p.is_relative_to(root) and p != root else p.name).encode() + b"\0")
        h.update(hashlib.sha256(_read_nofollow(p)).digest())
    return h.hexdigest()[:20]


def _ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    try:  # other uids (the runner's unprivileged one) must be able to read and traverse it
        path.chmod(0o755)
    except PermissionError:
        pass
    return path


def _resolve_tool(name: str, what: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise BuildError(f"{what} {name!r} not found (not on PATH or not executable); "
                         f"install it or pass its absolute path")
    return os.path.abspath(found)


def build_cpp(sources: list[Path], build_dir: Path, *, cxx: str = DEFAULT_CXX,
              cxxflags: tuple[str, ...] = DEFAULT_CXXFLAGS, include: Path | None = None,
              headers: list[Path] | None = None, label: str | None = None,
              libs: tuple[str, ...] = (), sandbox: str = "auto") -> tuple[Path, float]:
    """Compile C++ (or C, with ``cxx="gcc"``) sources into one executable, cached by content hash.

    Returns ``(executable, seconds spent compiling)``; the seconds are 0 when the
    executable was already in ``build_dir``. Concurrent builds of the same
    program are safe: each compiles into a private temporary name and the result
    is moved into place atomically. ``include`` is added as ``-I`` so that local
    headers (``validate.h``, ``testlib.h``) are found. The cache key is the
    content (not the location) of the sources and of ``headers`` (default: the
    header files directly in ``include``), the compiler and the flags: the same
    program copied elsewhere is found again, an edited header forces a rebuild.
    ``libs`` go after the sources (``-lm``).

    Raises
    ------
    BuildError
        Compiler missing, compile or link error (message: the file and the
        compiler's first error line; ``output``: everything it printed),
        compile timeout, or a source or the build folder that cannot be read
        or written.
    """
    if not sources:
        raise BuildError(f"{label or build_dir}: no C/C++ source file to compile")
    compiler = _resolve_tool(cxx, "C compiler" if "-lm" in libs else "C++ compiler")
    try:
        sources = sorted(Path(s).resolve() for s in sources)
        root = Path(include).resolve() if include is not None else sources[0].parent
        if headers is None:  # by default, the headers beside the sources (a folder submission passes its own)
            headers = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in _HEADER_SUFFIXES] \
                if include is not None else []
        headers = sorted(Path(h).resolve() for h in headers)
        digest = _hash_tree([*sources, *headers], root, (compiler, *cxxflags, *libs))
        out_dir = _ensure_dir(Path(build_dir) / f"cpp-{digest}")
        exe = out_dir / "prog"
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe.resolve(), 0.0
        fd, tmp_name = tempfile.mkstemp(prefix=".prog-", dir=out_dir)
        os.close(fd)
    except OSError as exc:  # an unreadable source, a build folder we cannot write
        raise BuildError(f"{label or sources[0]}: cannot build: {exc.strerror or exc} "
                         f"({exc.filename or ''})".replace(" ()", "")) from exc
    name = Path(compiler).name
    where = label or str(sources[0])
    try:  # the build sees the submission's own files only: a fresh copy (that the box's uid can reach)
        stage = _stage_dir()
        copy_files([*sources, *(h for h in headers if h not in sources)], root, stage / "src")
    except OSError as exc:
        _remove(tmp_name)
        if "stage" in locals():
            shutil.rmtree(locals()["stage"], ignore_errors=True)
        raise BuildError(f"{where}: cannot copy the sources to build them ({exc.strerror or exc})") from exc
    src = stage / "src"
    staged = [src / s.relative_to(root) for s in sources]
    flags = tuple(cxxflags) + (("-I", str(src)) if include is not None else ())
    try:
        elapsed, built = _build_in_box([compiler, *flags, "-fno-diagnostics-show-caret", "-fmax-errors=20", "-o", "prog",
                                            *(str(s) for s in staged), *libs],
                                           stage=stage, src=src, root=root, where=where, name=name, sandbox=sandbox)
        shutil.copyfile(built, tmp_name)
        os.chmod(tmp_name, 0o755)
        os.replace(tmp_name, exe)
    except OSError as exc:
        raise BuildError(f"{where}: {name} wrote no program ({exc.strerror or exc})") from exc
    finally:
        _remove(tmp_name)
        shutil.rmtree(stage, ignore_errors=True)
    return exe.resolve(), elapsed


#: Build staging folders are ``<scratch>/speedaudit-build-<pid of the collector>-<random>``: the pid says whose.
STAGE_PREFIX = "speedaudit-build-"
_STAGES_SWEPT: set[int] = set()


def _stage_dir() -> Path:
    """A fresh staging folder for one build, after removing those of collectors that died (once per process).

    A collector killed mid-build (SIGKILL, the OOM killer) runs no ``finally``: its folder, on the
    tmpfs ``/dev/shm`` where a build bomb's objects can be large, would outlive it. The pid in the
    name lets the next collector remove it (*decision*: at its first build).
    """
    if os.getpid() not in _STAGES_SWEPT:  # a forked child sweeps again: its parent may have died since
        _STAGES_SWEPT.add(os.getpid())
        sweep_stale_stages()
    return scratch_root(f"{STAGE_PREFIX}{os.getpid()}-")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a live process of another user
        return True
    return True


def sweep_stale_stages() -> list[Path]:
    """Remove the staging folders of dead collectors; return them.

    Only folders of this user whose name carries a pid of no live process (in this pid
    namespace: a collector in another namespace, e.g. another container sharing ``/dev/shm``,
    may look dead; *decision*: such setups give each container its own ``/dev/shm``, as
    container runtimes do). A pid that was reused keeps its folder until that process ends.
    """
    removed = []
    for base in dict.fromkeys(filter(None, (fast_tmp(), tempfile.gettempdir()))):
        for entry in Path(base).glob(f"{STAGE_PREFIX}*"):
            pid = entry.name[len(STAGE_PREFIX):].split("-", 1)[0]
            try:
                st = entry.lstat()
            except OSError:
                continue
            if not pid.isdigit() or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if not _pid_alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
    return removed


#: Limits of one compilation in the box (*decision*, documented in docs/collecting.md): 2 GiB of address space
#: and 60 CPU seconds per process of the build (cc1plus, as, ld), 120 s of wall time, 256 MiB per file the
#: build writes (objects, the executable), 512 MiB of scratch tmpfs (its temporary files), 64 processes.
BUILD_LIMITS = {"wall_s": COMPILE_TIMEOUT_S, "memory_bytes": 2 << 30, "cpu_s": 60.0, "file_bytes": 256 << 20,
                "output_bytes": 256 << 20, "scratch_bytes": 512 << 20, "nproc": 64, "stderr_bytes": 1 << 16,
                "stderr_limit": 1 << 20}
#: What of the compiler's messages is shown: the first 64 KiB of them, each line at most this long.
_MESSAGE_LINE = 300
#: The build script: the compiler's messages go to a file of the scratch (the first 64 KiB are then shown,
#: not the tail), and the executable leaves the box as standard output (the only thing that outlives it).
_BUILD_SCRIPT = ('"$@" 2>diag; rc=$?; head -c 65536 diag >&2; [ "$rc" -eq 0 ] || exit "$rc"; '
                 '[ -f prog ] || exit 97; exec cat prog')

#: How the compiler driver reports a part of the build (cc1, as, ld) killed by SIGXFSZ, the file-size rlimit:
#: glibc's strsignal text in the C locale, which the build's scrubbed environment runs in.
_FILE_LIMIT_TEXT = "File size limit exceeded"

_BOXES: dict[str, object] = {}


def build_sandbox(spec: str = "auto"):
    """The sandbox builds run in: ``spec`` when it is ``local``/``bwrap``/``auto``, else the strongest here.

    A ``cmd:`` sandbox runs programs in a command we cannot vouch for, so its
    builds run in the strongest built-in sandbox (*decision*). Checked once per
    process; :class:`BuildError` when no sandbox can isolate a build here.
    """
    name = spec if spec in ("local", "bwrap") else strongest_sandbox()
    box = _BOXES.get(name)
    if box is None:
        try:
            box = make_sandbox(name)
            box.check()
        except SandboxError as exc:
            raise BuildError(f"cannot compile in a sandbox here: {exc}", first_line=str(exc)) from None
        _BOXES[name] = box
    return box


def _build_in_box(cmd: list[str], *, stage: Path, src: Path, root: Path, where: str, name: str,
                  sandbox: str) -> tuple[float, Path]:
    """Run one compiler command in the sandbox; return (seconds, the executable it wrote to standard output)."""
    box = build_sandbox(sandbox)
    work = stage / "run"
    empty = stage / "stdin"
    empty.write_bytes(b"")
    start = time.perf_counter()
    try:
        ex = box.run(["/bin/sh", "-c", _BUILD_SCRIPT, "build", *cmd], stdin_path=empty, workdir=work,
                     limits=Limits(**BUILD_LIMITS))
    except SandboxError as exc:
        raise BuildError(f"{where}: cannot run {name} in the {box.name} sandbox: {exc}") from None
    elapsed = time.perf_counter() - start
    output = shown_messages(ex.stderr_tail, src=src, root=root, scratch=work / "scratch")
    if ex.status != "ok":
        first = first_error_line(output)
        limits = Limits(**BUILD_LIMITS)
        if ex.status == "timeout":
            why = f"the build exceeded its time limit ({limits.cpu_s:g} s CPU, {limits.wall_s:g} s wall; {ex.reason})"
        elif ex.status == "memory_limit":
            why = f"the build exceeded its memory limit ({limits.memory_bytes >> 20} MiB; {ex.reason})"
        elif ex.stdout_truncated:
            why = f"the executable is larger than {limits.output_bytes >> 20} MiB ({ex.reason})"
        elif ex.exit_code == 97:
            why = "the compiler wrote no program"
        elif _FILE_LIMIT_TEXT in output:
            why = (f"the build exceeded its file-size limit ({limits.file_bytes >> 20} MiB per file it writes: "
                   f"objects, the executable; {name} exited {ex.exit_code})")
        else:
            why = f"{name} failed ({ex.reason})"
        if first:
            why = f"{why}: {first}"
        raise BuildError(f"{where}: {why}", first_line=first or why, output=output)
    if not ex.stdout_bytes:
        raise BuildError(f"{where}: {name} wrote no program", output=output)
    return elapsed, Path(ex.stdout_path)


#: Where a diagnostic comes from: "file:line[:col]: " at the start of a line.
_LOCATED = re.compile(r"^(?P<file>[^\s:][^:]*?):(?P<line>\d+)(?::\d+)?:\s")
_SEVERITY = re.compile(r"^\s*((?:fatal )?error|warning|note|Error|Warning):")
#: Messages of the tools themselves (no location).
_TOOL_LINE = re.compile(r"^(?:collect2|g\+\+|c\+\+|gcc|cc|cc1plus|cc1|as|ld|/usr/bin/ld|/usr/bin/[\w.+-]+)(?=:)"
                        r"|^compilation terminated"
                        r"|^In file included from |^\s+from |^.*: In (?:function|member function|instantiation)"
                        r"|^.*: Assembler messages:$|^.*: (?:undefined reference|multiple definition)")


def shown_messages(text: str, *, src: Path, root: Path, scratch: Path) -> str:
    """The compiler's messages as shown to the user: paths of the copy mapped back, other files withheld.

    A build runs on a copy (``src``) of the submission (``root``); its paths are
    shown as the submission's. A message located in a file that is neither the
    submission's, nor the toolchain's (``/usr/``), nor the build's own
    temporary assembly (``scratch``) is replaced by its location and
    "message withheld": a message about an ``#include``-d host file could quote
    its content (e.g. ``error: 'root' does not name a type`` for
    ``/etc/passwd``). Lines that are neither located nor a tool's own are
    dropped (source lines echoed by the compiler), every line is cut at
    :data:`_MESSAGE_LINE` characters.
    """
    src_text, root_text, scratch_text = f"{src}/", f"{root}/", f"{scratch}/"
    out = []
    for raw in (text or "").splitlines():
        line = raw.rstrip()
        if not line.strip():
            continue
        located = _LOCATED.match(line)
        if located:  # where the message is about, as the box saw it, with every ".." resolved
            f = located.group("file").strip()
            f = f[len("In file included from "):] if f.startswith("In file included from ") else f
            norm = os.path.normpath(f)
            if norm.startswith(scratch_text) or not os.path.isabs(norm):
                ours = not norm.startswith("..")  # the build's own temporary files (the assembly)
            else:
                ours = norm.startswith((src_text, "/usr/"))
            if not ours:
                severity = _SEVERITY.search(line[located.end():])
                shown = norm.replace(src_text, root_text)
                line = (f"{shown}:{located.group('line')}: {severity.group(1) if severity else 'error'}: (message "
                        f"withheld: it is about {shown}, a file outside the submission)")
        line = line.replace(src_text, root_text).replace(scratch_text, "")
        if not located and not _TOOL_LINE.search(line):
            continue
        out.append(line if len(line) <= _MESSAGE_LINE else line[:_MESSAGE_LINE] + " ...")
    return "\n".join(out)


@functools.lru_cache(maxsize=8)
def newest_cxx_std(cxx: str = DEFAULT_CXX) -> str:
    """The newest of :data:`CXX_STANDARDS` that ``cxx`` accepts (``gnu++17`` when none answers).

    Probed once per compiler with ``-std=X -fsyntax-only`` on an empty
    translation unit (no submission code involved).

    >>> newest_cxx_std() in CXX_STANDARDS
    True
    """
    try:
        compiler = _resolve_tool(cxx, "C++ compiler")
    except BuildError:
        return CXX_STANDARDS[-1]
    for std in CXX_STANDARDS:
        try:
            done = subprocess.run([compiler, f"-std={std}", "-fsyntax-only", "-x", "c++", "-"], input=b"",
                                  capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return std
    return CXX_STANDARDS[-1]


def cxx_flags(std: str | None = None, *, cxx: str = DEFAULT_CXX) -> tuple[str, ...]:
    """``("-O2", "-std=STD")``: ``std`` (e.g. ``c++20``, ``gnu++20``), else :func:`newest_cxx_std`."""
    return ("-O2", f"-std={std or newest_cxx_std(cxx)}")


def _remove(path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# Run by the *chosen* interpreter (so a syntax new to it, or gone from it, is judged by it), with
# the files to check as arguments; prints one JSON object {path: null | [kind, message]}.
# Hand-written because no library tells Python 2 from Python 3 source without running it
# (lib2to3, which could, is gone from Python 3.13).
_CHECK_SCRIPT = r"""
import ast, json, sys
PY2_NAMES = {"raw_input", "xrange", "unichr", "unicode", "basestring", "long", "execfile", "cmp", "reduce",
             "file", "reload", "intern", "apply", "buffer"}
PY2_METHODS = {"has_key", "iteritems", "itervalues", "iterkeys"}
PY2_SYNTAX = ("Missing parentheses in call to", "multiple exception types must be parenthesized",
              "leading zeros in decimal integer literals", "invalid hexadecimal literal")
CATCHES = {"NameError", "Exception", "BaseException", "AttributeError"}

def guarded(node, parents):
    while node in parents:
        node, child = parents[node], node
        if isinstance(node, ast.Try) and child in node.body:
            for h in node.handlers:
                if h.type is None:
                    return True
                names = [h.type] + (list(h.type.elts) if isinstance(h.type, ast.Tuple) else [])
                if any(isinstance(n, ast.Name) and n.id in CATCHES for n in names):
                    return True
    return False

def check(path):
    data = open(path, "rb").read()
    first = data.split(b"\n", 1)[0]
    if first.startswith(b"#!") and b"python2" in first:
        return ["python2", "its first line asks for Python 2 (" + first.decode("utf-8", "replace").strip() + ")"]
    try:
        tree = compile(data, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        compile(tree, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        msg = "line %s: %s" % (exc.lineno, exc.msg)
        kind = "python2" if any(m in (exc.msg or "") for m in PY2_SYNTAX) else "syntax"
        return [kind, msg]
    except (ValueError, UnicodeDecodeError) as exc:
        return ["syntax", str(exc)]
    except (MemoryError, RecursionError) as exc:
        return ["limit", "too large or too deeply nested to compile within the build's limits (%s)"
                % type(exc).__name__]
    parents, bound, defined = {}, set(), set()
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            defined.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in PY2_NAMES \
                and node.id not in bound and not guarded(node, parents):
            return ["python2", "line %d uses %s, a Python 2 builtin" % (node.lineno, node.id)]
        if isinstance(node, ast.Attribute) and node.attr in PY2_METHODS and node.attr not in defined \
                and not guarded(node, parents):
            return ["python2", "line %d calls .%s(), a Python 2 dict method" % (node.lineno, node.attr)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.RShift) and isinstance(node.left, ast.Name) \
                and node.left.id == "print" and "print" not in bound:
            return ["python2", "line %d: print >>file, ... (a Python 2 print statement)" % node.lineno]
        if isinstance(node, ast.Attribute) and node.attr == "maxint" and isinstance(node.value, ast.Name) \
                and node.value.id == "sys" and not guarded(node, parents):
            return ["python2", "line %d uses sys.maxint (Python 2)" % node.lineno]
    return None

out = {}
for path in sys.argv[1:]:
    try:
        out[path] = check(path)
    except OSError as exc:
        out[path] = ["unreadable", str(exc)]
print(json.dumps(out))
"""


def check_python(files, *, python: str = DEFAULT_PYTHON, sandbox: str = "auto") -> dict[Path, str | None]:
    r"""Byte-compile Python sources with ``python`` in the build box and tell Python 2 programs apart.

    One interpreter process checks every file (``compile()`` only: nothing is
    run or written), **in the sandbox** as the C/C++ compilers are
    (:func:`build_sandbox`, limits :data:`BUILD_LIMITS`): it sees a fresh copy
    of the files only, as an unprivileged uid. Returns ``{file: None}`` for a
    file that compiles under ``python`` and shows no Python 2 sign, else
    ``{file: reason}``, the reason starting with ``"Python 2 program"`` (a
    ``python2`` shebang, a ``print`` statement or another Python-2-only syntax,
    or a Python-2-only builtin such as ``raw_input``, ``xrange`` or
    ``dict.has_key`` used without a definition or a ``try``/``except NameError``
    fallback) or ``"does not compile"`` (with the interpreter's message and
    line, or the build limit the check of that file exceeded: a compile bomb
    is that file's reason, checked alone, not the others').

    Raises
    ------
    BuildError
        The interpreter is missing or cannot run the check, or no sandbox can
        isolate it here.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.py").write_text("n = int(raw_input())\nprint n + 1\n")
    >>> _ = (d / "b.py").write_text("print(int(input()) + 1)\n")
    >>> result = check_python([d / "a.py", d / "b.py"])
    >>> result[d / "a.py"].startswith("Python 2 program"), result[d / "b.py"]
    (True, None)
    """
    files = [Path(f) for f in files]
    if not files:
        return {}
    interpreter = _resolve_tool(python, "Python interpreter")
    found, failure = _check_in_box(files, interpreter, sandbox)
    if failure is not None and len(files) > 1:  # one file's bomb is its own reason: check each alone
        found = {}
        for f in files:
            one, why = _check_in_box([f], interpreter, sandbox)
            found.update(one if why is None else {str(f): ["limit", why]})
    elif failure is not None:
        found = {str(files[0]): ["limit", failure]}
    out: dict[Path, str | None] = {}
    for f in files:
        verdict = found.get(str(f))
        if verdict is None:
            out[f] = None
        elif verdict[0] == "python2":
            out[f] = f"Python 2 program ({verdict[1]}); speedaudit runs Python 3 ({interpreter})"
        elif verdict[0] == "unreadable":
            out[f] = f"cannot be read ({verdict[1]})"
        else:
            out[f] = f"does not compile under {interpreter}: {verdict[1]}"
    return out


def _check_in_box(files: list[Path], interpreter: str, sandbox: str) -> tuple[dict, str | None]:
    """Run the check script on fresh copies of ``files`` in the build box.

    Returns ``({original path: verdict}, None)``, or ``({...}, why)`` when the
    check itself exceeded a build limit (``why`` names it). Each file is copied
    into its own folder of the staging area (``O_NOFOLLOW``); a file that cannot
    be copied is ``unreadable`` without being checked.
    """
    box = build_sandbox(sandbox)
    found: dict[str, list] = {}
    staged: dict[str, Path] = {}
    try:
        stage = _stage_dir()
    except OSError as exc:
        raise BuildError(f"{interpreter}: cannot stage the Python sources to check them ({exc.strerror or exc})") \
            from exc
    try:
        for i, f in enumerate(files):
            try:
                copy_files([f], f.parent, stage / "src" / str(i))
            except OSError as exc:
                found[str(f)] = ["unreadable", exc.strerror or str(exc)]
                continue
            staged[str(stage / "src" / str(i) / f.name)] = f
        if not staged:
            return found, None
        (stage / "stdin").write_bytes(b"")
        limits = Limits(**BUILD_LIMITS)
        try:
            ex = box.run([interpreter, "-I", "-c", _CHECK_SCRIPT, *staged], stdin_path=stage / "stdin",
                         workdir=stage / "run", limits=limits)
        except SandboxError as exc:
            raise BuildError(f"{interpreter}: cannot byte-compile the Python sources in the {box.name} sandbox: "
                             f"{exc}") from None
        if ex.status in ("timeout", "memory_limit") or ex.stdout_truncated:
            return found, _limit_reason(ex, limits)
        try:
            text = Path(ex.stdout_path).read_bytes().decode(errors="replace") if ex.stdout_bytes else ""
            verdicts = json.loads(text.strip().splitlines()[-1])
        except (OSError, json.JSONDecodeError, IndexError):
            message = first_error_line(shown_messages(ex.stderr_tail, src=stage / "src", root=stage / "src",
                                                      scratch=stage / "run" / "scratch"))
            raise BuildError(f"{interpreter}: cannot byte-compile the Python sources ({ex.reason or ex.status}: "
                             f"{message or 'no output'}); is it a Python 3 interpreter, readable by an unprivileged uid "
                             f"(the box runs it as one, as it runs programs; {DEFAULT_PYTHON} is)?") from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    for copy, original in staged.items():
        verdict = verdicts.get(copy) if isinstance(verdicts, dict) else None
        if isinstance(verdict, list) and len(verdict) == 2:  # the staged path never reaches the message
            verdict = [str(verdict[0]), str(verdict[1]).replace(copy, str(original))]
        found[str(original)] = verdict
    return found, None


def _limit_reason(ex, limits) -> str:
    """Which build limit a box run exceeded, in words."""
    if ex.status == "timeout":
        return f"the check exceeded the build's time limit ({limits.cpu_s:g} s CPU, {limits.wall_s:g} s wall; " \
               f"{ex.reason})"
    if ex.status == "memory_limit":
        return f"the check exceeded the build's memory limit ({limits.memory_bytes >> 20} MiB; {ex.reason})"
    return f"the check wrote more than {limits.output_bytes >> 20} MiB ({ex.reason})"


def _copy_python(source: Path, build_dir: Path, python: str) -> tuple[Path, Path]:
    """Copy a Python file or folder into build_dir/<hash>/ (world-readable); return (entry script, that folder)."""
    if source.is_dir():
        files = _source_files(source)
        entry = _python_entry(source, files)
        digest = _hash_tree(files, source, (python,))
        dest = Path(build_dir) / f"py-{digest}"
        target = dest / entry.relative_to(source)
        if not target.is_file():
            tmp = Path(tempfile.mkdtemp(prefix=".py-", dir=_ensure_dir(Path(build_dir))))
            copy_files([f for f in files if "__pycache__" not in f.relative_to(source).parts], source, tmp / "src")
            try:
                os.replace(tmp / "src", dest)
            except OSError:  # another worker won the race; its copy is identical
                shutil.rmtree(tmp / "src", ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
        return target.resolve(), dest.resolve()
    digest = _hash_tree([source], source.parent, (python,))
    dest = _ensure_dir(Path(build_dir) / f"py-{digest}")
    target = dest / source.name
    if not target.is_file():
        fd, tmp_name = tempfile.mkstemp(prefix=".src-", dir=dest)
        with os.fdopen(fd, "wb") as out:
            out.write(_read_nofollow(source))
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    return target.resolve(), dest.resolve()


def _python_entry(folder: Path, files: list[Path]) -> Path:
    """Entry script of a multi-file Python submission (Kattis rules, simplified).

    One ``.py`` file: that one. Otherwise ``main.py``, or a file named like the
    folder; anything else is ambiguous.
    """
    scripts = [p for p in files if p.suffix.lower() in (".py", ".py3")]
    if len(scripts) == 1:
        return scripts[0]
    for candidate in (folder / "main.py", folder / f"{folder.name}.py", folder / f"{folder.name}.py3"):
        if candidate in scripts:
            return candidate
    raise BuildError(f"{folder}: {len(scripts)} Python files and none is main.py or {folder.name}.py; "
                     f"cannot tell which one to run")


def prepare(submission_or_path, build_dir: Path, *, python: str = DEFAULT_PYTHON, cxx: str = DEFAULT_CXX,
            cxxflags: tuple[str, ...] | None = None, cc: str = DEFAULT_CC,
            cflags: tuple[str, ...] = DEFAULT_CFLAGS, sandbox: str = "auto", siblings: bool = False) -> Program:
    """Prepare a submission (or a source file/folder) for timing.

    Parameters
    ----------
    submission_or_path : audits.collect.suite.Submission or path-like
        Anything with a ``path`` attribute, or the path of a source file or of a
        multi-file submission folder.
    build_dir : Path
        Where compiled programs and copies of Python sources go (created if
        missing; shared safely between workers).
    python : str, default :data:`DEFAULT_PYTHON`
        Interpreter for Python programs (an absolute path, or a name on PATH).
    cxx, cxxflags
        C++ compiler and its flags (default :func:`cxx_flags`: ``-O2`` and the
        newest standard ``cxx`` supports).
    cc, cflags
        C compiler and its flags (default ``gcc -O2 -std=gnu17``, linked with ``-lm``).
    sandbox : str, default "auto"
        Where C and C++ are compiled and Python is byte-compiled
        (:func:`build_sandbox`): the compiler runs as an unprivileged uid in a
        private root holding only a fresh copy of the submission's files and
        the system's toolchain, under :data:`BUILD_LIMITS`; only the executable
        (for Python, the check's verdict) leaves it.
    siblings : bool, default False
        A single source file is built with the headers beside it (a validator's
        ``testlib.h``); a submission is built alone (its folder holds the other
        submissions).

    Returns
    -------
    Program

    Raises
    ------
    BuildError
        Unsupported language, a build/run script, missing interpreter or
        compiler, a compile or link error (message: the compiler's first
        error line), a Python source that does not byte-compile under
        ``python``, or a Python 2 program (see :func:`check_python`).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "a.cpp").write_text("int main(){return 0;}")
    >>> prog = prepare(d / "a.cpp", d / "build")
    >>> prog.language, Path(prog.argv[0]).name
    ('cpp', 'prog')
    """
    path = Path(getattr(submission_or_path, "path", submission_or_path))
    if path.is_symlink():
        raise BuildError(f"{path}: a symbolic link (not followed); give the file or folder itself")
    if not path.exists():
        raise BuildError(f"{path}: no such file or folder")
    path = path.resolve()
    scripts = [name for name in _SCRIPTS if path.is_dir() and (path / name).is_file()]
    if scripts:
        raise BuildError(f"{path}: has a {' and a '.join(scripts)} script; speedaudit does not run build/run "
                         f"scripts (they would run outside the sandbox): build it yourself and add the program "
                         f"as a .py/.cpp/.c source")
    language = language_of(path)
    if language is None:
        kind = "folder with no single language" if path.is_dir() else f"extension {path.suffix or '(none)'!r}"
        raise BuildError(f"{path}: language not supported ({kind}); supported: "
                         + ", ".join(f"{e} ({lang})" for e, lang in EXTENSIONS.items()))
    build_dir = _ensure_dir(Path(build_dir).resolve())
    if language == "python":
        interpreter = _resolve_tool(python, "Python interpreter")
        try:
            entry, copy_root = _copy_python(path, build_dir, interpreter)
        except OSError as exc:
            raise BuildError(f"{path}: cannot copy the Python source ({exc.strerror or exc})") from exc
        _check_python_copy(path, copy_root, entry, interpreter, sandbox)
        return Program("python", (interpreter, str(entry)), path)
    if path.is_dir():
        files = _source_files(path)
        sources = [p for p in files if EXTENSIONS.get(p.suffix.lower()) == language]
        headers = [p for p in files if p.suffix.lower() in _HEADER_SUFFIXES]
        include = path
    else:
        sources, include, headers = [path], path.parent, (None if siblings else [])
    if language == "c":
        exe, seconds = build_cpp(sources, build_dir, cxx=cc, cxxflags=cflags, include=include, headers=headers,
                                 label=str(path), libs=("-lm",), sandbox=sandbox)
    else:
        cxxflags = cxx_flags(cxx=cxx) if cxxflags is None else cxxflags
        exe, seconds = build_cpp(sources, build_dir, cxx=cxx, cxxflags=cxxflags, include=include, headers=headers,
                                 label=str(path), sandbox=sandbox)
    return Program(language, (str(exe),), path, build_s=seconds)


_CHECKED = ".speedaudit-compiled"


def _check_python_copy(source: Path, copy_root: Path, entry: Path, interpreter: str, sandbox: str) -> None:
    """Byte-compile a prepared Python copy once, in the build box (a marker in its folder records success)."""
    marker = copy_root / (_CHECKED if source.is_dir() else f"{_CHECKED}-{entry.name}")
    if marker.is_file():
        return
    files = [p for p in _source_files(copy_root) if p.suffix.lower() in (".py", ".py3")] if source.is_dir() \
        else [entry]
    problems = {f: why for f, why in check_python(files, python=interpreter, sandbox=sandbox).items() if why}
    if problems:
        f, why = min(problems.items(), key=lambda item: (item[0] != entry, str(item[0])))
        shown = source / f.relative_to(copy_root) if source.is_dir() else source
        raise BuildError(f"{shown}: {why}", first_line=why)
    with contextlib.suppress(OSError):
        marker.touch()


def check_python_copies(sources, build_dir: Path, *, python: str = DEFAULT_PYTHON, sandbox: str = "auto") -> None:
    """Copy many Python submissions into ``build_dir`` and byte-compile the copies in **one** box run.

    What :func:`prepare` does for one Python program (copy, then :func:`check_python` on the copy, a marker
    beside it on success), for many at once: a campaign's plan calls it per problem (issue 26: one box run
    for a problem's programs instead of one each; the load already checks the originals in one run per
    problem). A copy that passes gets its marker, so :func:`prepare` does not check it again; one that fails
    (or that cannot be copied, or a source that is not Python) is left as it is, and :func:`prepare` raises
    its :class:`BuildError` with the same message as ever. Never raises: a check that cannot run here leaves
    every copy to :func:`prepare`.
    """
    todo: list[tuple[Path, list[Path]]] = []
    try:
        interpreter = _resolve_tool(python, "Python interpreter")
        build_dir = _ensure_dir(Path(build_dir).resolve())
    except (BuildError, OSError):
        return
    for source in sources:
        path = Path(getattr(source, "path", source))
        try:
            if path.is_symlink() or not path.exists():
                continue
            path = path.resolve()
            if language_of(path) != "python" or any(path.is_dir() and (path / n).is_file() for n in _SCRIPTS):
                continue
            entry, copy_root = _copy_python(path, build_dir, interpreter)
            marker = copy_root / (_CHECKED if path.is_dir() else f"{_CHECKED}-{entry.name}")
            if marker.is_file():
                continue
            files = [p for p in _source_files(copy_root) if p.suffix.lower() in (".py", ".py3")] \
                if path.is_dir() else [entry]
        except (BuildError, OSError):
            continue  # prepare says why
        todo.append((marker, files))
    if not todo:
        return
    try:
        verdicts = check_python([f for _, files in todo for f in files], python=interpreter, sandbox=sandbox)
    except BuildError:
        return
    for marker, files in todo:
        if not any(verdicts.get(f) for f in files):
            with contextlib.suppress(OSError):
                marker.touch()


def floor_program(language: str, build_dir: Path, *, python: str = DEFAULT_PYTHON, cxx: str = DEFAULT_CXX,
                  cxxflags: tuple[str, ...] | None = None, cc: str = DEFAULT_CC,
                  cflags: tuple[str, ...] = DEFAULT_CFLAGS, sandbox: str = "auto") -> Program:
    """The empty program of ``language``: what the sandbox costs before any work.

    Python: an empty script run by ``python``; C++ and C: ``int main() { return 0; }``
    built exactly like the submissions. ``source`` is None. Each language has
    its own floor (a Python start-up costs ~10-30 ms, a C++ one ~1 ms).

    >>> import tempfile
    >>> floor_program("python", Path(tempfile.mkdtemp())).argv[0]
    '/usr/bin/python3'
    """
    if language not in _FLOOR_SOURCES:
        raise BuildError(f"no floor program for language {language!r}; supported: {', '.join(LANGUAGES)}")
    build_dir = _ensure_dir(Path(build_dir).resolve())
    name, text = _FLOOR_SOURCES[language]
    src_dir = _ensure_dir(build_dir / "floor")
    src = src_dir / name
    if not src.is_file() or src.read_text() != text:
        fd, tmp = tempfile.mkstemp(prefix=".floor-", dir=src_dir)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, src)
    program = prepare(src, build_dir, python=python, cxx=cxx, cxxflags=cxxflags, cc=cc, cflags=cflags,
                      sandbox=sandbox)
    return Program(program.language, program.argv, None, program.build_s)
