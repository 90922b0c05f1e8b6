"""Languages: turn a submission's source into a command that the sandbox can time.

Two languages are supported, as in the issue: Python (``.py``, ``.py3``) and C++
(``.cpp``, ``.cc``). :func:`prepare` returns a :class:`Program` whose ``argv`` reads
the test input on stdin and writes its answer to stdout:

* Python: ``(python, <copy of the source>)``. The source (a file, or the whole
  folder of a multi-file submission) is copied into ``build_dir`` under its
  content hash so that the runner can make one folder readable to the
  unprivileged uid it runs programs as (and bind it into a sandbox).
* C++: compiled **once**, before any timing, with ``g++ -O2`` (see
  :data:`DEFAULT_CXXFLAGS`) into ``build_dir/<content hash>/prog``. The build is
  cached by the hash of the sources, the compiler and its flags, so preparing
  the same program again (another worker, a resumed campaign) costs nothing.
  Compile time is recorded in :attr:`Program.build_s` and is never part of a
  runtime. A compile error raises :class:`BuildError` naming the file, with
  g++'s message.

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

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PYTHON", "DEFAULT_CXX", "DEFAULT_CXXFLAGS", "LANGUAGES", "EXTENSIONS",
    "Program", "BuildError", "language_of", "prepare", "floor_program", "build_cpp",
]

#: Debian's system Python: readable by the unprivileged uid the runner executes programs as.
DEFAULT_PYTHON = "/usr/bin/python3"
#: The C++ compiler (looked up on PATH).
DEFAULT_CXX = "g++"
#: Flags for every C++ build: optimised as on a judge, one language standard for all.
DEFAULT_CXXFLAGS: tuple[str, ...] = ("-O2", "-std=gnu++17")
#: Seconds a single compilation may take before it is abandoned.
COMPILE_TIMEOUT_S = 120.0

#: File extension -> language.
EXTENSIONS: dict[str, str] = {".py": "python", ".py3": "python", ".cpp": "cpp", ".cc": "cpp"}
LANGUAGES: tuple[str, ...] = ("python", "cpp")

_HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".inc", ".tcc")

_FLOOR_SOURCES = {"python": ("floor.py", ""), "cpp": ("floor.cpp", "int main() { return 0; }\n")}


class BuildError(Exception):
    """A program could not be prepared: unsupported language, missing tool, compile error."""


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
    """Regular, non-hidden files of a multi-file submission folder, sorted."""
    return sorted(p for p in path.rglob("*")
                  if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))


def language_of(path) -> str | None:
    """Language of a source file or multi-file submission folder.

    ``.py``/``.py3`` -> ``"python"``, ``.cpp``/``.cc`` -> ``"cpp"``, anything else
    -> None. A folder has the language of its source files when they all agree
    (headers and data files are ignored); a folder mixing Python and C++, or with
    no source file, is None.

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
        h.update(hashlib.sha256(p.read_bytes()).digest())
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
              headers: list[Path] | None = None, label: str | None = None) -> tuple[Path, float]:
    """Compile C++ sources into one executable, cached by content hash.

    Returns ``(executable, seconds spent compiling)``; the seconds are 0 when the
    executable was already in ``build_dir``. Concurrent builds of the same
    program are safe: each compiles into a private temporary name and the result
    is moved into place atomically. ``include`` is added as ``-I`` so that local
    headers (``validate.h``, ``testlib.h``) are found. The cache key is the
    content (not the location) of the sources and of ``headers`` (default: the
    header files directly in ``include``), the compiler and the flags: the same
    program copied elsewhere is found again, an edited header forces a rebuild.

    Raises
    ------
    BuildError
        g++ missing, compile error (with g++'s message), or compile timeout.
    """
    if not sources:
        raise BuildError(f"{label or build_dir}: no C++ source file to compile")
    compiler = _resolve_tool(cxx, "C++ compiler")
    flags = tuple(cxxflags) + (("-I", str(include)) if include is not None else ())
    sources = sorted(Path(s).resolve() for s in sources)
    root = Path(include).resolve() if include is not None else sources[0].parent
    if headers is None:  # by default, the headers beside the sources (a folder submission passes its own)
        headers = [p for p in root.iterdir() if p.is_file() and p.suffix.lower() in _HEADER_SUFFIXES] \
            if include is not None else []
    headers = sorted(Path(h).resolve() for h in headers)
    digest = _hash_tree([*sources, *headers], root, (compiler, *cxxflags))
    out_dir = _ensure_dir(Path(build_dir) / f"cpp-{digest}")
    exe = out_dir / "prog"
    if exe.is_file() and os.access(exe, os.X_OK):
        return exe.resolve(), 0.0
    fd, tmp_name = tempfile.mkstemp(prefix=".prog-", dir=out_dir)
    os.close(fd)
    cmd = [compiler, *flags, "-o", tmp_name, *(str(s) for s in sources)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        os.unlink(tmp_name)
        raise BuildError(f"{label or sources[0]}: compilation took longer than {COMPILE_TIMEOUT_S:g} s") from exc
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        os.unlink(tmp_name)
        message = proc.stderr.decode(errors="replace").strip()
        if len(message) > 4000:
            message = message[:4000] + "\n[... truncated]"
        raise BuildError(f"{label or sources[0]}: g++ failed (exit {proc.returncode}):\n{message}")
    os.chmod(tmp_name, 0o755)
    os.replace(tmp_name, exe)
    return exe.resolve(), elapsed


def _copy_python(source: Path, build_dir: Path, python: str) -> Path:
    """Copy a Python file or folder into build_dir/<hash>/ (world-readable); return the entry script."""
    if source.is_dir():
        files = _source_files(source)
        entry = _python_entry(source, files)
        digest = _hash_tree(files, source, (python,))
        dest = Path(build_dir) / f"py-{digest}"
        target = dest / entry.relative_to(source)
        if not target.is_file():
            tmp = Path(tempfile.mkdtemp(prefix=".py-", dir=_ensure_dir(Path(build_dir))))
            shutil.copytree(source, tmp / "src", ignore=shutil.ignore_patterns(".*", "__pycache__"))
            _make_readable(tmp / "src")
            try:
                os.replace(tmp / "src", dest)
            except OSError:  # another worker won the race; its copy is identical
                shutil.rmtree(tmp / "src", ignore_errors=True)
            shutil.rmtree(tmp, ignore_errors=True)
        return target.resolve()
    digest = _hash_tree([source], source.parent, (python,))
    dest = _ensure_dir(Path(build_dir) / f"py-{digest}")
    target = dest / source.name
    if not target.is_file():
        fd, tmp_name = tempfile.mkstemp(prefix=".src-", dir=dest)
        os.close(fd)
        shutil.copyfile(source, tmp_name)
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    return target.resolve()


def _make_readable(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


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
            cxxflags: tuple[str, ...] = DEFAULT_CXXFLAGS) -> Program:
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
        C++ compiler and its flags (default ``g++ -O2 -std=gnu++17``).

    Returns
    -------
    Program

    Raises
    ------
    BuildError
        Unsupported language, missing interpreter/compiler, or compile error.

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
    if not path.exists():
        raise BuildError(f"{path}: no such file or folder")
    path = path.resolve()
    language = language_of(path)
    if language is None:
        kind = "folder with no single language" if path.is_dir() else f"extension {path.suffix or '(none)'!r}"
        raise BuildError(f"{path}: language not supported ({kind}); supported: "
                         + ", ".join(f"{e} ({lang})" for e, lang in EXTENSIONS.items()))
    build_dir = _ensure_dir(Path(build_dir).resolve())
    if language == "python":
        interpreter = _resolve_tool(python, "Python interpreter")
        entry = _copy_python(path, build_dir, interpreter)
        return Program("python", (interpreter, str(entry)), path)
    if path.is_dir():
        files = _source_files(path)
        sources = [p for p in files if EXTENSIONS.get(p.suffix.lower()) == "cpp"]
        headers = [p for p in files if p.suffix.lower() in _HEADER_SUFFIXES]
        include = path
    else:
        sources, include, headers = [path], path.parent, None
    exe, seconds = build_cpp(sources, build_dir, cxx=cxx, cxxflags=cxxflags, include=include, headers=headers,
                             label=str(path))
    return Program("cpp", (str(exe),), path, build_s=seconds)


def floor_program(language: str, build_dir: Path, *, python: str = DEFAULT_PYTHON, cxx: str = DEFAULT_CXX,
                  cxxflags: tuple[str, ...] = DEFAULT_CXXFLAGS) -> Program:
    """The empty program of ``language``: what the sandbox costs before any work.

    Python: an empty script run by ``python``; C++: ``int main() { return 0; }``
    built exactly like the submissions. ``source`` is None.

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
    program = prepare(src, build_dir, python=python, cxx=cxx, cxxflags=cxxflags)
    return Program(program.language, program.argv, None, program.build_s)
