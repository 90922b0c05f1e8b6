"""The timing corpus: loading, saving and summarizing.

One row per execution of one solution on one test in one environment (DESIGN.md,
"The timing corpus"). Files may be Parquet (primary), CSV (optionally gzipped) or
JSON lines; a partitioned dataset folder (:mod:`audits.corpus.dataset`) is read
whole. Reading one file, the column mapping, units and validation are
:mod:`audits.corpus.table`, whose names callers import from here too. Every check
names the file, the column and the first offending rows, and says what to do;
nothing is written unless the whole corpus is valid, and files are written
atomically (temporary file + rename), so a crash never leaves a half-written
corpus behind.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow

from audits.corpus.dataset import is_dataset, open_dataset
from audits.corpus.memory import return_freed_memory, small_pages
from audits.corpus.schema import KEY  # noqa: F401 -- reached as audits.corpus.io.KEY by the collect tests
from audits.corpus.table import (  # the reader and validator, also imported from here
    CorpusError,
    check_input_file,
    normalize,
    parse_mapping,
    read_table,
    result_file_format,
    unit_warnings,
)
from stats._groups import group_codes

__all__ = ["CorpusError", "check_input_file", "normalize", "load_corpus", "output_ending", "save_corpus",
           "summarize", "unit_warnings", "CorpusSummary"]


@small_pages()
def load_corpus(
    path: str | os.PathLike,
    *,
    mapping: Mapping[str, str] | str | None = None,
    unit: str = "s",
) -> pd.DataFrame:
    """Load and validate a corpus file (Parquet, CSV or JSON lines).

    Examples
    --------
    >>> corpus = load_corpus("runs.csv", mapping="task_id=problem,runtime=duration_s", unit="ms")  # doctest: +SKIP

    A partitioned dataset folder (:mod:`audits.corpus.dataset`) is read whole
    (it is already canonical; ``mapping`` and ``unit`` must be left at their defaults).
    """
    if is_dataset(path):
        if parse_mapping(mapping) or unit != "s":
            raise CorpusError(f"{path}: a dataset is already canonical; --map and --unit apply to the file it "
                              f"was converted from\n  -> drop --map/--unit")
        return open_dataset(path).load()
    if os.path.isdir(path):
        _refuse_result_folder(Path(path))
    corpus = normalize(read_table(path, mapping=mapping), source=str(path), mapping=mapping, unit=unit)
    _release_freed_memory()
    return corpus


#: The importers that read a whole folder (the others are given its files).
_FOLDER_IMPORTERS = ("pyperf", "pytest-benchmark")


def _refuse_result_folder(path: Path, *, look_at: int = 5) -> None:
    """Name the importer when the folder ``path`` holds another tool's result files (``.benchmarks``, a pyperf
    archive): read as a corpus it is only 'a directory'. The first ``look_at`` ``.json`` files are read, on this
    error path only; a folder of none of them is left to :func:`read_table`'s message."""
    for file in sorted(p for p in path.rglob("*.json") if p.is_file())[:look_at]:
        try:
            with open(file, encoding="utf-8-sig") as handle:
                fmt = result_file_format(json.load(handle))
        except (OSError, ValueError):
            continue
        if fmt is not None:
            given = shlex.quote(str(path)) if fmt in _FOLDER_IMPORTERS else f"{shlex.quote(str(path))}/*.json"
            raise CorpusError(f"{path}: a folder of {fmt} result files (such as {file.relative_to(path)}), not a "
                              f"timing corpus\n  -> import them first: speedaudit import {fmt} {given} "
                              f"--out corpus.parquet")


def _release_freed_memory() -> None:
    """Hand the memory of the raw table (freed by now) back to the system.

    pyarrow's allocator (mimalloc) keeps the pages of freed Arrow buffers for reuse, and the raw Parquet
    table's string columns live there: at 10^7 rows the process held 1.5 GB after loading a 0.4 GB corpus,
    and 0.6 GB after this call (measured; issue 17's peak-RSS target). glibc's ``malloc_trim`` returns what
    pandas freed on the normalising copies.
    """
    try:
        pyarrow.default_memory_pool().release_unused()
    except Exception:  # noqa: BLE001 - only a memory hint; never fails a load
        pass
    return_freed_memory()


def atomic_write(path: str | os.PathLike, writer) -> Path:
    """Call ``writer(tmp_path)`` and move the result into place only on success.

    The temporary file sits beside the target (same file system, so the final
    rename is atomic) and is removed on any failure. File-system failures
    (a folder that cannot be created or written, a target that is a directory,
    a full disk) become a :class:`CorpusError` naming the path and what to do.
    """
    path = Path(path)
    target = str(path)
    if path.is_dir():
        raise CorpusError(f"{target}: is a directory; cannot write the output onto it\n"
                          f"  -> name a file, e.g. {os.path.join(target, 'corpus.parquet')}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CorpusError(f"{target}: cannot create the folder {str(path.parent)!r} ({exc.strerror or exc})\n"
                          f"  -> choose an output path in a folder you can write") from exc
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CorpusError(f"{target}: cannot write into the folder {str(path.parent)!r} ({exc.strerror or exc})\n"
                          f"  -> choose an output path in a folder you can write") from exc
    os.close(fd)
    try:
        writer(tmp)
        # mkstemp creates 0600 files; give the result the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as exc:
        raise CorpusError(f"{target}: writing failed ({exc.strerror or exc}); nothing was written\n"
                          f"  -> free space or choose another output path") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


#: The formats :func:`save_corpus` writes, by file-name ending (those :func:`read_table` reads back).
WRITE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".csv.gz": "csv", ".tsv": "tsv",
                 ".tsv.gz": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".jsonl.gz": "jsonl", ".ndjson.gz": "jsonl"}


def output_ending(path: str | os.PathLike) -> str:
    """The ending of :data:`WRITE_FORMATS` that ``path``'s name has; a CorpusError when it has none.

    Called by :func:`save_corpus`, and by the commands before they read their input, so that a long import is
    not lost to an output name that says no format.
    """
    name = Path(path).name.lower()
    ending = next((e for e in sorted(WRITE_FORMATS, key=len, reverse=True) if name.endswith(e)), None)
    if ending is None:
        raise CorpusError(f"{path}: cannot tell the format from the name\n"
                          f"  -> name the output .parquet (recommended), .csv, .csv.gz, .tsv or .jsonl")
    return ending


def save_corpus(corpus: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a corpus atomically (the target appears only when complete) in the format its name says.

    ``.parquet`` (the primary format, which keeps categories and ``attrs``), ``.csv(.gz)``, ``.tsv(.gz)`` or
    ``.jsonl`` / ``.ndjson`` (JSON lines, optionally gzipped): every format :func:`load_corpus` reads back. Any
    other name is refused (``CorpusError``) rather than written in a format its name does not say.
    """
    ending = output_ending(path)
    kind = WRITE_FORMATS[ending]
    compression = "gzip" if ending.endswith(".gz") else None
    if kind == "parquet":
        return atomic_write(path, lambda tmp: corpus.to_parquet(tmp, index=False))
    if kind in ("csv", "tsv"):
        sep = "," if kind == "csv" else "\t"
        return atomic_write(path, lambda tmp: corpus.to_csv(tmp, index=False, sep=sep, compression=compression))
    return atomic_write(path, lambda tmp: _write_json_lines(corpus, tmp, gzipped=compression is not None))


def _write_json_lines(corpus: pd.DataFrame, path: str, *, gzipped: bool, chunk: int = 100_000) -> None:
    """One JSON object a line, every float as Python writes it: the shortest text that reads back to the same number.

    pandas' ``to_json`` keeps 10 decimal places (15 at most): a pyperf value of 6.2907 ns was written 6.3e-09 and a
    duration below 5e-11 s as 0. Missing and infinite values are ``null``, as pandas writes them; rows are encoded
    ``chunk`` at a time, so memory does not grow with the corpus.
    """
    columns = [str(c) for c in corpus.columns]
    encode = json.JSONEncoder(allow_nan=False, default=str, separators=(",", ":")).encode
    with (gzip.open(path, "wt", encoding="utf-8") if gzipped else open(path, "w", encoding="utf-8")) as handle:
        for start in range(0, len(corpus), chunk):
            part = corpus.iloc[start:start + chunk]
            values = []
            for name in part.columns:
                column = part[name]
                keep = column.notna().to_numpy()
                if pd.api.types.is_float_dtype(column):
                    keep = keep & np.isfinite(column.to_numpy(dtype=float))
                if pd.api.types.is_datetime64_any_dtype(column):
                    text = _iso_times(column).astype(object)
                    text[~keep] = None
                    values.append(text.tolist())
                    continue
                values.append(column.astype(object).where(keep, None).tolist())
            handle.writelines(encode(dict(zip(columns, row))) + "\n" for row in zip(*values))


def _iso_times(column: pd.Series) -> np.ndarray:
    """Datetimes as ISO 8601 text to the nanosecond, in numpy's vectorised formatter: an instant with a time zone in
    UTC (``...Z``), a naive one as it is (NaT as ``'NaT'``: the caller writes null there). Each ``pd.Timestamp``
    through ``str`` took most of a JSON-lines write of a corpus with timestamps (measured in the commit)."""
    if getattr(column.dtype, "tz", None) is not None:
        naive = column.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
        return np.datetime_as_string(naive, unit="ns", timezone="UTC")
    return np.datetime_as_string(column.to_numpy(dtype="datetime64[ns]"), unit="ns")


@dataclass(frozen=True)
class CorpusSummary:
    """Counts that describe a corpus as a user thinks of it (``speedaudit validate``).

    ``problems``, ``tests`` and ``solutions`` leave out the floor pseudo-problem
    (rows of role ``floor``: the sandbox's empty program), which is counted
    apart in ``floor_rows``. ``repeats_per_cell`` is (min, median, max) of the
    number of repeats of one solution on one test in one run; ``runs`` lists
    every (environment, campaign) with its rows.
    """

    rows: int
    problems: int
    tests: int
    solutions: int
    environments: tuple[str, ...]
    campaigns: tuple[str, ...]
    repeats: int
    roles: dict
    statuses: dict
    floor_rows: int = 0
    floor_problems: tuple[str, ...] = ()
    repeats_per_cell: tuple[int, float, int] = (0, 0.0, 0)
    runs: tuple[tuple[str, str, int], ...] = ()
    process_runs: int | None = None

    def summary(self) -> str:
        low, mid, high = self.repeats_per_cell
        spread = f"{low}" if low == high else f"{low}-{high}, median {mid:g}"
        floor = (f"  (+ the floor: {self.floor_rows:,} rows of the empty program, problem "
                 f"{', '.join(map(repr, self.floor_problems))}, not counted)" if self.floor_rows else "")
        lines = [
            f"rows          {self.rows:,}",
            f"problems      {self.problems:,}{floor}",
            f"tests         {self.tests:,}  (problem, test) pairs",
            f"solutions     {self.solutions:,}  (problem, solution) pairs",
            f"environments  {len(self.environments)}: {', '.join(self.environments)}",
            f"campaigns     {len(self.campaigns)}: {', '.join(self.campaigns)}",
            f"runs          {len(self.runs)} (environment, campaign): "
            + "; ".join(f"{e!r}, {c!r} ({n:,} rows)" for e, c, n in self.runs),
            f"repeats       {spread} per solution cell (one solution on one test in one run)",
        ]
        if self.process_runs is not None:
            lines.append(f"process runs  {self.process_runs} at most per cell (column 'run')")
        lines += [
            "roles         " + ", ".join(f"{k} {v:,}" for k, v in self.roles.items()),
            "status        " + ", ".join(f"{k} {v:,}" for k, v in self.statuses.items()),
        ]
        return "\n".join(lines)


def summarize(corpus: pd.DataFrame) -> CorpusSummary:
    """Count rows, problems, tests, solutions, runs, repeats per cell and statuses.

    Examples
    --------
    >>> runs = normalize(pd.DataFrame({"problem": ["p", "p", "_floor"], "test": ["t", "t", "empty"],
    ...     "solution": ["a", "a", "python"], "duration_s": [1.0, 1.1, 0.02], "status": "ok",
    ...     "repeat": [0, 1, 0], "role": ["reference", "reference", "floor"]}))
    >>> s = summarize(runs)
    >>> s.problems, s.floor_rows, s.repeats_per_cell
    (1, 1, (2, 2.0, 2))
    """
    is_floor = (corpus["role"] == "floor").to_numpy() if "role" in corpus.columns else np.zeros(len(corpus), bool)
    real = corpus.loc[~is_floor]
    floor_problems = set(map(str, corpus.loc[is_floor, "problem"].unique())) - set(map(str, real["problem"].unique()))
    _, n_tests = group_codes(real, ["problem", "test"]) if len(real) else (None, 0)
    _, n_solutions = group_codes(real, ["problem", "solution"]) if len(real) else (None, 0)
    if len(real):
        cell_code, n_cells = group_codes(real, ["environment", "campaign", "problem", "test", "solution"])
        # distinct repeat indices per cell (with a 'run' column, several rows share one repeat)
        rep_code, n_rep = group_codes(real, ["environment", "campaign", "problem", "test", "solution", "repeat"])
        cell_of_repeat = np.zeros(n_rep, dtype=np.int64)
        cell_of_repeat[rep_code] = cell_code
        per_cell = np.bincount(cell_of_repeat, minlength=n_cells)
        repeats_per_cell = (int(per_cell.min()), float(np.median(per_cell)), int(per_cell.max()))
    else:
        repeats_per_cell = (0, 0.0, 0)
    run_code, n_runs = group_codes(corpus, ["environment", "campaign"])
    counts = np.bincount(run_code, minlength=n_runs)
    first_row = np.full(n_runs, len(corpus), dtype=np.int64)
    np.minimum.at(first_row, run_code, np.arange(len(corpus)))
    runs = sorted((str(corpus["environment"].iloc[r]), str(corpus["campaign"].iloc[r]), int(counts[k]))
                  for k, r in enumerate(first_row))
    process_runs = None
    if "run" in corpus.columns and len(corpus):
        process_runs = int(corpus["run"].max()) + 1
    return CorpusSummary(
        rows=len(corpus),
        problems=int(real["problem"].nunique()),
        tests=n_tests,
        solutions=n_solutions,
        environments=tuple(sorted(map(str, corpus["environment"].unique()))),
        campaigns=tuple(sorted(map(str, corpus["campaign"].unique()))),
        repeats=int(corpus["repeat"].max()) + 1 if len(corpus) else 0,
        roles={str(k): int(v) for k, v in corpus["role"].value_counts().items() if v},
        statuses={str(k): int(v) for k, v in corpus["status"].value_counts().items() if v},
        floor_rows=int(is_floor.sum()),
        floor_problems=tuple(sorted(floor_problems)),
        repeats_per_cell=repeats_per_cell,
        runs=tuple(runs),
        process_runs=process_runs,
    )
