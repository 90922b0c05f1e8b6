"""Reading another tool's JSON result file, with the file named on every error (shared by the importers)."""

from __future__ import annotations

import gzip
import json
import os
import shlex
from collections import Counter
from pathlib import Path

from audits.corpus.io import CorpusError, check_input_file
from audits.corpus.table import id_defect, result_file_format

__all__ = ["load_json", "format_hint", "file_labels", "result_stem", "skipped_lines", "check_given_names"]


def load_json(path: str | os.PathLike, *, what: str, hint: str):
    """Parse a JSON (or gzip-compressed ``.gz`` JSON) file; a :class:`CorpusError` names the file and says ``hint``.

    Examples
    --------
    >>> load_json("/", what="a pyperf result file", hint="pass pyperf files")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    audits.corpus.paths.CorpusError: /: is a directory, not a pyperf result file
    ...
    """
    path = Path(check_input_file(path, what=what, hint=hint))
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8-sig") as handle:  # a BOM (Windows editors) is not content
            return json.load(handle)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: not {what} (not readable JSON: {exc})\n  -> {hint}") from exc


def format_hint(path: str | os.PathLike, data, *, fmt: str, hint: str) -> str:
    """``hint``, or the ``speedaudit import`` command that reads ``data`` when it is another tool's file than ``fmt``."""
    other = result_file_format(data)
    if other is None or other == fmt:
        return hint
    return f"it is a {other} result file: speedaudit import {other} {shlex.quote(str(path))} --out corpus.parquet"


def result_stem(name: str) -> str:
    """A result file's name without ``.json`` or ``.json.gz`` (every importer reads both): what a problem or a
    campaign derived from the file is called.

    >>> [result_stem(n) for n in ("bench.json", "bench.json.gz", "a/run.json.gz", "notes")]
    ['bench', 'bench', 'a/run', 'notes']
    """
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def skipped_lines(skipped) -> list[str]:
    """The summary's lines of skipped files or benchmarks, ``(what, why)`` pairs grouped by reason, the largest group
    first, three named each and "and K more".

    >>> skipped_lines([("a.json", "no data"), ("b.json", "no data"), ("c.json", "broken")])
    ['skipped 2 (no data): a.json, b.json', 'skipped 1 (broken): c.json']
    """
    by_reason: dict[str, list[str]] = {}
    for what, why in skipped:
        by_reason.setdefault(why, []).append(what)
    return [f"skipped {len(items)} ({why}): " + ", ".join(items[:3]) + (f" and {len(items) - 3} more"
                                                                        if len(items) > 3 else "")
            for why, items in sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


def file_labels(paths, *, what: str) -> list[str]:
    """Each file's name, or its path as given where another of ``paths`` has the same name (``a/run.json`` and
    ``b/run.json``: two sessions, which their names alone would make one); a file given twice is a CorpusError.

    >>> file_labels(["a/run.json", "b/run.json", "c/other.json"], what="hyperfine file")
    ['a/run.json', 'b/run.json', 'other.json']
    """
    seen: dict[str, str] = {}
    for raw in paths:
        key = os.path.realpath(raw)  # never raises (a symlink loop is said when the file is read)
        if key in seen:
            same = "" if str(raw) == seen[key] else f" (as {seen[key]} and as {raw})"
            raise CorpusError(f"{raw}: the same file is given twice{same}: its executions would be imported twice\n"
                              f"  -> pass each {what} once")
        seen[key] = str(raw)
    names = Counter(Path(raw).name for raw in paths)
    return [Path(raw).name if names[Path(raw).name] == 1 else str(raw) for raw in paths]


def check_given_names(**names: str | None) -> None:
    """Refuse a name given as an option (``--environment``, ``--campaign``, ``--problem``) that cannot be an id,
    naming the option, before any file is read; None is "not given" (an empty name is not: it is refused).

    >>> check_given_names(environment="lab ", campaign=None)
    Traceback (most recent call last):
    ...
    audits.corpus.paths.CorpusError: --environment 'lab ': leading or trailing white space; a name is used exactly as written
      -> give --environment a name without leading or trailing white space (or leave it out for the default)
    """
    for option, name in names.items():
        if name is None:
            continue
        why = id_defect(name) if name.strip() else "nothing but white space" if name else "empty"
        if why is not None:
            fix = f"give --{option} a name without {why}" if name.strip() else f"give --{option} a name"
            raise CorpusError(f"--{option} {name!r}: {why}; a name is used exactly as written\n"
                              f"  -> {fix} (or leave it out for the default)")
