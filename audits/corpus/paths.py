"""Whether a path names a file a corpus can be read from: the first check of every reader, without numpy or pandas.

:func:`check_input_file` tells a missing file, a link that leads nowhere, a folder, a FIFO and an unreadable file
apart. The readers (:func:`audits.corpus.table.read_table`, the importers) call it first; the command line calls it
before it loads the numeric stack (``speedaudit validate`` on a FIFO answers at once), so it lives apart from
:mod:`audits.corpus.table`, which re-exports both names.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from audits.errors import UserError

__all__ = ["CorpusError", "check_input_file", "check_corpus_path"]


class CorpusError(UserError, ValueError):
    """A corpus that cannot be used, with the file, column and rows named."""


def check_input_file(path: str | os.PathLike, *, what: str = "a corpus file",
                     hint: str = "pass a .parquet, .csv or .jsonl file") -> Path:
    """A path that names a readable regular file, or a :class:`CorpusError` that says why not.

    Tells apart a missing file, a dangling symlink, a symlink loop, a directory,
    a FIFO / socket / device (which would block or never end when read) and a
    file the current user may not read, instead of reporting each as "no such
    file". Hand-written because :meth:`pathlib.Path.exists` folds all of them
    into ``False``.

    Examples
    --------
    >>> check_input_file("/")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    audits.corpus.paths.CorpusError: /: is a directory, not a corpus file
    ...
    """
    path = Path(path)
    source = str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CorpusError(f"{source}: symbolic link loop (the link points, directly or not, to itself)\n"
                              f"  -> point the link at a real file, or pass the file itself") from exc
        if exc.errno == errno.ENOENT and os.path.islink(path):
            raise CorpusError(f"{source}: dangling symbolic link (it points to {os.readlink(path)!r}, "
                              f"which does not exist)\n  -> fix the link or pass the file itself") from exc
        if exc.errno == errno.ENOENT:
            raise CorpusError(f"{source}: no such file\n  -> check the path") from exc
        if exc.errno == errno.ENOTDIR:
            raise CorpusError(f"{source}: a component of the path is a file, not a folder\n"
                              f"  -> check the path") from exc
        if exc.errno == errno.EACCES:
            raise CorpusError(f"{source}: permission denied while looking the file up\n"
                              f"  -> run as a user who may read its folder, or copy the file elsewhere") from exc
        raise CorpusError(f"{source}: cannot be looked up ({exc.strerror})\n  -> check the path") from exc
    if stat.S_ISDIR(info.st_mode):
        raise CorpusError(f"{source}: is a directory, not {what}\n  -> {hint}")
    if not stat.S_ISREG(info.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a socket" if stat.S_ISSOCK(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a regular file")
        raise CorpusError(f"{source}: is {kind}, not {what}\n  -> {hint} (save the data to a regular file first)")
    try:
        with open(path, "rb"):
            pass
    except PermissionError as exc:
        raise CorpusError(f"{source}: permission denied (the file exists but this user may not read it)\n"
                          f"  -> make it readable (chmod a+r) or run as a user who may read it") from exc
    except OSError as exc:
        raise CorpusError(f"{source}: cannot be opened ({exc.strerror})\n  -> {hint}") from exc
    if info.st_size == 0:
        raise CorpusError(f"{source}: the file is empty (0 bytes)\n  -> collect or export timings into it first")
    return path


def check_corpus_path(path: str | os.PathLike) -> None:
    """The first check :func:`audits.corpus.io.load_corpus` makes, without numpy or pandas, for the command line to
    make before it loads them: a path that is not a folder must name a readable regular file
    (:func:`check_input_file`, the same message); a folder may be a partitioned dataset, which the loader tells
    apart from a folder that is not one.

    Examples
    --------
    >>> check_corpus_path("/no/such/corpus.parquet")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    audits.corpus.paths.CorpusError: /no/such/corpus.parquet: no such file
    ...
    """
    if not os.path.isdir(path):
        check_input_file(path)
