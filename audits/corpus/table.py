"""One corpus table: reading a file, column mapping, units and validation.

One row per execution of one solution on one test in one environment (DESIGN.md,
"The timing corpus"). :func:`read_table` reads a Parquet, CSV (optionally gzipped),
TSV or JSON-lines file; :func:`normalize` validates it and gives it the canonical
columns and dtypes. Every check names the file, the column and the first offending
rows, and says what to do. Loading (a file or a partitioned dataset folder), saving
and summaries are :mod:`audits.corpus.io`, which re-exports these names; this module
is what it and :mod:`audits.corpus.dataset` both read with.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import json
import os
import shlex
import unicodedata
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from dateutil import parser
from pandas._libs.parsers import STR_NA_VALUES  # read_csv's default missing-value texts (public as its docs' list)

from audits.corpus.paths import CorpusError, check_input_file  # re-exported: the readers' first check
from audits.corpus.schema import (
    CATEGORICAL,
    DURATION_COLUMNS,
    INCORRECT_STATUSES,
    NUMERIC_EXTRAS,
    OPTIONAL_DEFAULTS,
    REQUIRED,
    RUN_COLUMNS,
    ROLES,
    STATUSES,
    TEST_KINDS,
    UNITS,
    key_columns,
)
from stats._groups import dense_range, group_codes, mixed_radix_key

__all__ = ["CorpusError", "read_table", "check_input_file", "id_defect", "normalize", "check_frame", "parse_mapping",
           "result_file_format", "unit_warnings"]

_INCORRECT_STATUSES = INCORRECT_STATUSES
#: Columns of names and labels, read from CSV as the text written (:func:`read_table`).
TEXT_COLUMNS = CATEGORICAL + ("status", "role", "test_kind", "language")
_SHOW_ROWS = 5
#: An ``ok`` execution longer than this is taken for a wrong unit (or a broken timer).
MAX_DURATION_S = 86_400.0


def _rows_hint(frame: pd.DataFrame, mask: np.ndarray, columns: list[str]) -> str:
    """Render the first offending rows (1-based data row numbers)."""
    idx = np.flatnonzero(mask)
    shown = frame.iloc[idx[:_SHOW_ROWS]]
    cols = [c for c in columns if c in frame.columns]
    lines = []
    for pos, (_, row) in zip(idx[:_SHOW_ROWS], shown.iterrows()):
        values = ", ".join(f"{c}={row[c]!r}" for c in cols)
        lines.append(f"    row {pos + 1}: {values}")
    more = f"\n    ... and {len(idx) - _SHOW_ROWS} more" if len(idx) > _SHOW_ROWS else ""
    return "\n".join(lines) + more


def _fail(source: str, column: str | None, problem: str, fix: str,
          frame: pd.DataFrame | None = None, mask: np.ndarray | None = None,
          show: list[str] | None = None) -> None:
    where = f"{source}: column '{column}'" if column else source
    rows = ""
    if frame is not None and mask is not None:
        rows = f" ({int(mask.sum())} rows); first offending rows:\n" + _rows_hint(
            frame, mask, list(dict.fromkeys(show or [c for c in ("problem", "test", "solution", column) if c])))
    raise CorpusError(f"{where}: {problem}{rows}\n  -> {fix}")


def _codes_and_labels(values: pd.Series, default: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and string labels of a column, without building 10^7 Python strings.

    The labels are the values present, sorted (so the categories of a file depend neither on its row order nor on
    its format: set semantics; a categorical column's unused categories and their order are not kept, as text
    formats cannot keep them and the corpus would read back otherwise). Labels that coincide after conversion to
    ``str`` are merged. Missing values get code -1, or the ``default`` label when one is given.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy(dtype=np.int64)
        labels = np.asarray(values.cat.categories.astype(str), dtype=object)
        used = np.bincount(codes[codes >= 0], minlength=len(labels)) > 0
        if not used.all():  # drop the unused categories (renumbering the codes)
            new_code = np.cumsum(used) - 1
            codes = np.where(codes >= 0, new_code[np.maximum(codes, 0)], -1)
            labels = labels[used]
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        codes = codes.astype(np.int64, copy=False)
        labels = np.asarray([str(u) for u in uniques], dtype=object)
    if default is not None and (codes < 0).any() and default not in set(labels):
        labels = np.append(labels, default).astype(object)
    if default is not None:
        codes = np.where(codes < 0, int(np.flatnonzero(labels == default)[0]) if default in set(labels) else -1, codes)
    order_needed = len(labels) and (not pd.Index(labels).is_unique or list(labels) != sorted(labels))
    if order_needed:  # sorted labels; e.g. 1 and "1" merged
        # (no labels: every value is missing, a column left empty, as the code -1 already says)
        labels, inverse = np.unique(labels, return_inverse=True)
        labels = labels.astype(object)
        codes = np.where(codes >= 0, inverse[np.maximum(codes, 0)], -1)
    return codes, labels


CONTROL_CHARACTERS = "control characters (NUL, tab, newline, escape...)"
PADDED = "leading or trailing white space"


def id_defect(label: str) -> str | None:
    """Why ``label`` cannot be an id (of a problem, test, solution, environment or campaign), or None.

    An id holds no control character (NUL, tab, newline, ESC, DEL, C1: a broken export, and an escape sequence
    would reach the terminal of whoever prints it) and no leading or trailing white space. Names are data and are
    never altered, so such an id is refused rather than cleaned: stripping could silently merge two ids that
    differ only in spaces ("a" and "a ") or split one a user meant. One rule for a corpus's columns
    (:func:`normalize`) and for the names a suite's folders and files give (audits.collect.suite), so a campaign
    never writes an id its corpus would refuse.

    >>> id_defect("two sum"), id_defect("a\x1b[31m"), id_defect("a ")
    (None, 'control characters (NUL, tab, newline, escape...)', 'leading or trailing white space')
    """
    if any(unicodedata.category(ch) == "Cc" for ch in label):
        return CONTROL_CHARACTERS
    if label != label.strip():
        return PADDED
    return None


def _check_names(codes: np.ndarray, labels: np.ndarray, source: str, column: str, raw: pd.DataFrame) -> None:
    """Reject ids that :func:`id_defect` refuses (control characters, surrounding white space), naming the rows.

    Checked on the distinct labels, so the cost does not grow with the rows.
    """
    if not len(labels):
        return
    defects = [id_defect(lab) for lab in labels]
    control = np.array([d == CONTROL_CHARACTERS for d in defects], dtype=bool)
    if control.any():
        shown = [repr(lab) for lab in labels[control][:3]]
        _fail(source, column, f"ids with control characters (NUL, tab, newline, escape...): {', '.join(shown)}",
              "remove the control characters from these ids (a broken export or a binary column?)",
              raw, control[np.maximum(codes, 0)] & (codes >= 0))
    padded = np.array([d == PADDED for d in defects], dtype=bool)
    if padded.any():
        shown = [repr(lab) for lab in labels[padded][:3]]
        _fail(source, column, f"ids with leading or trailing white space: {', '.join(shown)}",
              "strip the spaces in the file (ids are used exactly as written, so 'a' and 'a ' would be two ids)",
              raw, padded[np.maximum(codes, 0)] & (codes >= 0))


def _enumerated(values: pd.Series, allowed: tuple[str, ...], source: str, column: str, fix: str,
                raw: pd.DataFrame, default: str | None = None) -> pd.Categorical:
    """A column restricted to ``allowed`` labels, as a Categorical over exactly those."""
    codes, labels = _codes_and_labels(values, default)
    position = np.array([allowed.index(lab) if lab in allowed else -1 for lab in labels], dtype=np.int64)
    mapped = np.where(codes >= 0, position[np.maximum(codes, 0)] if len(position) else -1, -1)
    bad = mapped < 0
    if bad.any():
        unknown = sorted({str(labels[c]) if c >= 0 else "<missing>" for c in np.unique(codes[bad])})[:5]
        _fail(source, column, f"unknown {column} values {unknown}", fix, raw, bad)
    return pd.Categorical.from_codes(mapped, categories=list(allowed))


def parse_mapping(text: str | Mapping[str, str] | None) -> dict[str, str]:
    """Parse ``"task_id=problem,runtime=duration_s"`` into ``{source: target}``."""
    if text is None:
        return {}
    if isinstance(text, Mapping):
        return dict(text)
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        if "=" not in item:
            raise CorpusError(f"--map: '{item}' is not SOURCE=TARGET\n  -> write e.g. --map task_id=problem,runtime=duration_s")
        source, target = (s.strip() for s in item.split("=", 1))
        if not source or not target:
            raise CorpusError(f"--map: '{item}' has an empty side\n  -> write e.g. --map task_id=problem")
        mapping[source] = target
    return mapping


def _open_text(path: Path):
    """The file as text; a UTF-8 byte-order mark (Windows editors write one) is not content, as for read_csv."""
    return gzip.open(path, "rt", encoding="utf-8-sig", newline="") if path.name.lower().endswith(".gz") \
        else open(path, encoding="utf-8-sig", newline="")


def _csv_header(path: Path, sep: str) -> list[str]:
    """The header row as written (pandas renames a repeated name to ``name.1``, so read it with :mod:`csv`)."""
    with _open_text(path) as handle:
        return next(csv.reader(handle, delimiter=sep), [])


def result_file_format(data) -> str | None:
    """The ``speedaudit import`` format of another tool's parsed JSON result file, or None.

    ``hyperfine`` (a ``results`` list of commands), ``pytest-benchmark`` (``benchmarks`` beside
    ``machine_info``) or ``pyperf`` (``benchmarks``, each with its ``runs``): told apart by the keys
    each tool always writes, so that such a file given to the wrong reader is named for what it is.

    >>> result_file_format({"results": [{"command": "sleep 1", "times": [1.0]}]})
    'hyperfine'
    >>> result_file_format({"benchmarks": [{"stats": {}}], "machine_info": {}}), result_file_format([1])
    ('pytest-benchmark', None)
    """
    if not isinstance(data, dict):
        return None
    results, benchmarks = data.get("results"), data.get("benchmarks")
    if isinstance(results, list) and results and all(isinstance(r, dict) and "command" in r for r in results):
        return "hyperfine"
    if isinstance(benchmarks, list) and "machine_info" in data:
        return "pytest-benchmark"
    if isinstance(benchmarks, list) and all(isinstance(b, dict) and isinstance(b.get("runs"), list)
                                            for b in benchmarks):
        return "pyperf"
    return None


def _read_json_lines(path: Path) -> pd.DataFrame:
    """JSON lines, one object a line, naming the first broken line and repeated keys.

    Hand-written over :mod:`json` because :func:`pandas.read_json` reports neither
    the line number of a broken line nor repeated keys (it keeps the last value).
    """
    source = str(path)

    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            raise _RepeatedKey(repeated)
        return dict(pairs)

    records = []
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=no_repeats)
            except _RepeatedKey as exc:
                raise CorpusError(f"{source}: line {number}: the key(s) {exc.args[0]} appear twice in one record\n"
                                  f"  -> give every field once per line") from None
            except json.JSONDecodeError as exc:
                if not records:  # a JSON document over several lines: another tool's result file?
                    _refuse_result_file(path)
                raise CorpusError(f"{source}: line {number}: not valid JSON ({exc.msg} at column {exc.colno})\n"
                                  f"  -> fix or remove that line (one JSON object per line)") from None
            if not isinstance(record, dict):
                raise CorpusError(f"{source}: line {number}: a JSON {type(record).__name__}, not an object\n"
                                  f"  -> write one JSON object ({{\"problem\": ..., ...}}) per line")
            records.append(record)
    if len(records) == 1:
        _refuse_result_file(path, records[0])
    return pd.DataFrame.from_records(records)


def _refuse_result_file(path: Path, data=None) -> None:
    """Name the importer when ``path`` (whose parsed JSON is ``data``, else read here) is another tool's result
    file, which a corpus reader would otherwise refuse for its lines or its columns."""
    if data is None:
        try:
            with _open_text(path) as handle:
                data = json.load(handle)
        except (OSError, EOFError, ValueError):
            return
    fmt = result_file_format(data)
    if fmt is not None:
        raise CorpusError(f"{path}: a {fmt} result file, not a timing corpus\n"
                          f"  -> import it first: speedaudit import {fmt} {shlex.quote(str(path))} --out corpus.parquet")


class _RepeatedKey(Exception):
    pass


def read_table(path: str | os.PathLike, *, mapping: Mapping[str, str] | str | None = None) -> pd.DataFrame:
    """Read a Parquet, CSV (.csv, .csv.gz), TSV or JSON-lines (.jsonl, .ndjson, .json(.gz)) file.

    Rejects, with the file named: missing, unreadable or special files
    (:func:`check_input_file`), repeated column names, and broken JSON lines
    (with the line number). In a CSV or TSV file the text columns (:data:`TEXT_COLUMNS`, or the file columns
    ``mapping`` maps onto them) are read as written: ``007`` stays ``'007'`` and ``NA`` is a name; only an empty
    cell is missing.
    """
    path = check_input_file(path)
    source = str(path)
    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            frame = pd.read_parquet(path)
        elif name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
            sep = "\t" if name.endswith((".tsv", ".tsv.gz")) else ","
            header = _csv_header(path, sep)
            other = next((o for o in (";", "\t", ",", "|") if o != sep and len(header) == 1 and o in header[0]), None)
            if other:  # a corpus has five columns at least: one column holding another separator is misread
                raise CorpusError(f"{source}: the header is one column, {header[0]!r}, separated by {other!r}, not "
                                  f"{sep!r}\n  -> write the file with {sep!r} between columns (and '.' as the decimal "
                                  f"point), e.g. pandas to_csv(sep={sep!r}){', or name it .csv' if other == ',' else ''}")
            repeated = sorted({c for c in header if header.count(c) > 1})
            if repeated:
                raise CorpusError(f"{source}: column '{repeated[0]}': the header names it "
                                  f"{header.count(repeated[0])} times (repeated columns: {repeated})\n"
                                  f"  -> give each column once (rename or drop the copies)")
            # ids are text as written: left to guess, a column of '007' read as the number 7 (and named '7'), and one
            # of 'NA', 'None' or 'null' as missing (refused as an empty id); only an empty cell is missing there
            mapped = parse_mapping(mapping)
            text = [c for c in header if mapped.get(c, c) in TEXT_COLUMNS]
            options = dict(sep=sep, low_memory=False, dtype=dict.fromkeys(text, str), keep_default_na=False,
                           na_values={c: [""] if c in text else list(STR_NA_VALUES) for c in header})
            frame = pd.read_csv(path, **options)
            if (not isinstance(frame.index, pd.RangeIndex) and frame.iloc[:, -1].isna().all()
                    and _ends_with_separator(path, sep, len(header))):
                # every row ends with a separator (an empty field more than the header names): pandas made each row's
                # first field the index, as for R's row names, and every value stood under the name of the column
                # before it. Read as the header says.
                frame = pd.read_csv(path, index_col=False, usecols=range(len(header)), **options)
        elif name.endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")):
            frame = _read_json_lines(path)
        else:
            raise CorpusError(f"{source}: unknown file type '{path.suffix}'\n"
                              f"  -> use .parquet, .csv, .csv.gz, .tsv or .jsonl (JSON lines)")
    except CorpusError:
        raise
    except UnicodeDecodeError as exc:  # e.g. Excel's plain "CSV" in a Western locale writes Windows-1252
        raise CorpusError(f"{source}: not UTF-8 text ({_first_undecodable(path)})\n"
                          f"  -> save it as UTF-8 (Excel: 'CSV UTF-8'; or iconv -f cp1252 -t utf-8)") from exc
    except Exception as exc:  # the reader's own message is the useful part
        raise CorpusError(f"{source}: cannot be read as {path.suffix} ({type(exc).__name__}: {exc})\n"
                          f"  -> check that the file is complete and of the format its name says") from exc
    columns = [str(c) for c in frame.columns]
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise CorpusError(f"{source}: column '{repeated[0]}' appears {columns.count(repeated[0])} times\n"
                          f"  -> give each column once (rename or drop the copies)")
    return frame


def _ends_with_separator(path: Path, sep: str, width: int) -> bool:
    """Whether every data row has only empty fields beyond the header's ``width`` (a separator at each row's end),
    read with :mod:`csv`; a row name before the values (R's ``write.table``) is not (its last field is a value)."""
    with _open_text(path) as handle:
        rows = csv.reader(handle, delimiter=sep)
        next(rows, None)
        return all(len(row) > width and not any(row[width:]) for row in rows if row)


def _first_undecodable(path: Path) -> str:
    """Where the first byte that is not UTF-8 sits: ``byte 0xe9 on line 2`` (the file is read whole, on error only)."""
    raw = gzip.decompress(path.read_bytes()) if path.name.lower().endswith(".gz") else path.read_bytes()
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return f"byte 0x{raw[exc.start]:02x} on line {line}"
    return "a byte that is not UTF-8"


def _check_durations(d: np.ndarray, ok: np.ndarray, *, source: str, unit: str, rows: pd.DataFrame,
                     file: bool = True) -> None:
    """The rules every duration of a corpus keeps (in seconds, ``d``; ``ok`` the rows whose status is ok), each
    refused with the rows that break it (``rows`` shows them): :func:`normalize`'s, and :func:`check_durations`'s
    for a DataFrame given to the audits without a loader (``file=False``).

    A DataFrame keeps the rules no figure can be computed without (a NaN duration on an ok row, an infinite or a
    negative one); the other two are a file reader's judgement of its timer and unit, so they are the loader's
    only: a zero on an ok row (a coarse timer's reading of a fast program, which the estimators handle: a 0 s
    test is infinitely fast), and more than a day (in a frame ``duration_s`` may hold another measure, e.g.
    ``--measure instructions``)."""
    checks = [
        (ok & np.isnan(d), "missing (NaN) duration on ok rows", "an ok execution needs its measured duration"),
        (np.isinf(d), "infinite durations", "record the measured wall time (for a timeout: the limit)"),
        (d < 0, "negative durations", "durations are elapsed wall-clock time and cannot be negative"),
    ]
    if file:
        checks += [(ok & (d == 0), "zero durations on ok rows",
                    "a finished execution takes some time: check the timer, or store failed runs with their status"),
                   (ok & (d > MAX_DURATION_S), f"durations above one day ({MAX_DURATION_S:,.0f} s) on ok rows",
                    f"check the unit: {_fitting_unit_advice(d[ok & np.isfinite(d)] / UNITS[unit], unit)}")]
    for mask, problem, fix in checks:
        if mask.any():
            _fail(source, "duration_s", problem, fix, rows, mask, ["problem", "test", "solution", "status", "duration_s"])


def check_durations(corpus: pd.DataFrame, *, source: str = "the corpus") -> None:
    """Refuse a corpus DataFrame whose durations no figure can use (a NaN duration on an ok row; an infinite or
    negative one anywhere), naming the rows as :func:`normalize` does, for a DataFrame that reached the audits
    without it (``speedaudit.run_all(frame)``, ``run_audits(frame)``): an ok execution without a duration is
    refused on every path instead of ranked as NaN. A frame without a ``duration_s`` or ``status`` column is left
    to the audits' own messages.

    Raises
    ------
    CorpusError
    """
    if "duration_s" not in corpus.columns or "status" not in corpus.columns:
        return
    d = corpus["duration_s"].to_numpy(dtype=float)
    _check_durations(d, np.asarray(corpus["status"] == "ok"), source=source, unit="s", rows=corpus, file=False)


#: Columns an audit context reads by name, beyond :data:`REQUIRED` (a frame from :func:`normalize` always has them).
_CONTEXT_COLUMNS = REQUIRED + RUN_COLUMNS + ("repeat",)
_NORMALIZE = ("load the frame through audits.corpus.io.normalize(frame), which fills environment, campaign and "
              "repeat with their defaults, converts text to numbers and names the rows it cannot read")


def check_frame(corpus: pd.DataFrame, *, source: str = "the corpus") -> None:
    """Refuse a corpus DataFrame given to the audits without :func:`normalize` (``speedaudit.run_all(frame)``,
    ``run_audits(frame)``, an audit function) that no audit can read, with the column and rows, instead of a
    KeyError or a ValueError from deep inside an estimator: a column the audits read by name missing
    (:data:`_CONTEXT_COLUMNS`); text in a numeric column (``cpu_s``, ``load_1m``, ``repeat``, ``run``, ...); a
    missing, negative or fractional ``repeat`` or ``run`` (NaN was cast to an arbitrary integer and the audit went
    on); and :func:`check_durations`'s rules. Dtype checks and one pass over a float index column: a frame from
    the loader pays next to nothing.

    Raises
    ------
    CorpusError
    """
    missing = [c for c in _CONTEXT_COLUMNS if c not in corpus.columns]
    if missing:
        raise CorpusError(f"{source}: no column {', '.join(map(repr, missing))}: every audit reads it\n  -> add it, "
                          f"or {_NORMALIZE}")
    for name in (c for c in NUMERIC_EXTRAS + ("repeat", "run") if c in corpus.columns):
        column = corpus[name]
        if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
            continue
        text = pd.to_numeric(column.astype(object), errors="coerce").isna().to_numpy() & column.notna().to_numpy()
        if text.any() or pd.api.types.is_bool_dtype(column):
            mask = text if text.any() else np.ones(len(column), dtype=bool)
            _fail(source, name, "not numbers (the audits compute with this column)", f"convert it, or {_NORMALIZE}",
                  corpus, mask, ["problem", "test", "solution", name])
    for name in (c for c in ("repeat", "run") if c in corpus.columns):
        values = pd.to_numeric(corpus[name].astype(object) if corpus[name].dtype == object else corpus[name])
        if pd.api.types.is_integer_dtype(values):
            bad = values.to_numpy() < 0
        else:
            v = values.to_numpy(dtype=float)
            bad = ~np.isfinite(v) | (v < 0) | (v != np.floor(v))
        if bad.any():
            _fail(source, name, "missing, negative or fractional values (an index counts from 0)",
                  f"number every {name} 0, 1, 2, ..., or {_NORMALIZE}", corpus, bad,
                  ["problem", "test", "solution", name])
    check_durations(corpus, source=source)


def normalize(
    frame: pd.DataFrame,
    *,
    source: str = "<frame>",
    mapping: Mapping[str, str] | str | None = None,
    unit: str = "s",
) -> pd.DataFrame:
    """Validate a raw table and return a corpus with canonical columns and dtypes.

    Applies the column ``mapping`` ({file column: corpus column}), converts
    ``duration_s`` (and ``cpu_s``, ``timeout_s``) from ``unit`` to seconds, fills
    optional columns with their defaults, derives ``correct`` when absent
    (a solution is correct unless one of its executions is ``wrong_answer`` or
    ``runtime_error``), and sets categorical dtypes.

    Raises
    ------
    CorpusError
        Naming ``source``, the column and the first offending rows.
    """
    mapping = parse_mapping(mapping)
    if unit not in UNITS:
        raise CorpusError(f"{source}: unknown unit '{unit}'\n  -> use one of {', '.join(UNITS)}")
    if len(frame) == 0:
        _fail(source, None, "the table has no rows", "collect or export timings into it first")
    missing_sources = [s for s in mapping if s not in frame.columns]
    if missing_sources:
        _fail(source, missing_sources[0],
              f"the mapping names a column the file lacks (file columns: {list(map(str, frame.columns))})",
              "fix the --map SOURCE=TARGET pairs to name existing columns")
    targets = list(mapping.values())
    dup_targets = sorted({t for t in targets if targets.count(t) > 1})
    if dup_targets:
        _fail(source, dup_targets[0], "several file columns are mapped onto it", "map each corpus column once")
    clashes = [t for s, t in mapping.items() if t in frame.columns and t not in mapping and s != t]
    if clashes:
        _fail(source, clashes[0], "the file already has this column and the mapping maps another one onto it",
              "drop or rename one of them in the mapping")
    frame = frame.rename(columns=mapping)

    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        _fail(source, missing[0],
              f"required column missing (required: {', '.join(REQUIRED)}; file columns: {list(map(str, frame.columns))})",
              "add it, or map a file column onto it with --map FILE_COLUMN=" + missing[0])

    # The columns are gathered in a dict and the frame built once, in its final order: assigning them one by
    # one into a DataFrame and reordering at the end copied every column (0.6 s at 10^7 rows, 2026-12-06).
    out: dict = {}
    raw = frame.reset_index(drop=True)

    for column in ("problem", "test", "solution"):
        codes, labels = _codes_and_labels(raw[column])
        blank = np.array([not lab.strip() for lab in labels], dtype=bool)
        bad = (codes < 0) | (blank[np.maximum(codes, 0)] if len(blank) else True)
        if bad.any():
            _fail(source, column, "empty or missing ids", "every row needs a problem, test and solution id", raw, bad)
        _check_names(codes, labels, source, column, raw)
        out[column] = pd.Categorical.from_codes(codes, categories=list(labels))

    out["status"] = _enumerated(raw["status"], STATUSES, source, "status",
                                f"use one of {', '.join(STATUSES)} (map your labels before loading)", raw)

    for column in DURATION_COLUMNS + tuple(c for c in NUMERIC_EXTRAS if c not in DURATION_COLUMNS):
        if column not in raw.columns:
            continue
        values = raw[column]
        if values.dtype == bool or not (pd.api.types.is_numeric_dtype(values) or values.dtype == object
                                       or pd.api.types.is_string_dtype(values)):
            _fail(source, column, f"expected numbers, found dtype {values.dtype}", "store plain numbers")
        numeric = pd.to_numeric(values, errors="coerce")
        not_numeric = (numeric.isna() & values.notna()).to_numpy()
        if not_numeric.any():
            comma = values[not_numeric].astype(str).str.fullmatch(r"\s*[-+]?\d*,\d+\s*").all()
            _fail(source, column, "values that are not numbers",
                  "write plain numbers with '.' as the decimal point and no thousands separator (1.5, 1500; not 1,5 or 1,500)"
                  if comma else "store plain numbers (no units in the cell)",
                  raw, not_numeric)
        scale = UNITS[unit] if column in DURATION_COLUMNS else 1.0
        out[column] = numeric.to_numpy(dtype=float) * scale

    d = np.asarray(out["duration_s"])
    _check_durations(d, np.asarray(out["status"] == "ok"), source=source, unit=unit, rows=raw.assign(duration_s=d))

    for column, default in OPTIONAL_DEFAULTS.items():
        if column in raw.columns:
            values = raw[column]
        else:
            values = pd.Series(default, index=raw.index)
        if column == "repeat":
            numeric = pd.to_numeric(values, errors="coerce")
            bad = (numeric.isna() | (numeric < 0) | (numeric != np.floor(numeric))).to_numpy()
            if bad.any():
                _fail(source, column, "repeat indices must be whole numbers >= 0", "number repeats 0, 1, 2, ...",
                      raw, bad)
            out[column] = numeric.astype(np.int64)
            continue
        if column == "role":
            out[column] = _enumerated(values, ROLES, source, column, f"use one of {', '.join(ROLES)}", raw, default)
        elif column == "test_kind":
            out[column] = _enumerated(values, TEST_KINDS, source, column, f"use one of {', '.join(TEST_KINDS)}",
                                      raw, default)
        else:
            codes, labels = _codes_and_labels(values, default)
            _check_names(codes, labels, source, column, raw)
            out[column] = pd.Categorical.from_codes(codes, categories=list(labels))

    if "correct" in raw.columns:
        out["correct"] = _parse_bool(raw["correct"], source, raw)
    else:
        incorrect_row = np.asarray(out["status"].isin(_INCORRECT_STATUSES))
        solution_code, n_solutions = group_codes(pd.DataFrame({c: out[c] for c in ("problem", "solution")}, copy=False),
                                                 ["problem", "solution"])
        incorrect = np.bincount(solution_code[incorrect_row], minlength=n_solutions) > 0
        out["correct"] = ~incorrect[solution_code]

    if "timestamp" in raw.columns:
        out["timestamp"] = _timestamps(raw["timestamp"], source, raw)
    if "language" in raw.columns:
        codes, labels = _codes_and_labels(raw["language"])
        _check_names(codes, labels, source, "language", raw)
        out["language"] = pd.Categorical.from_codes(codes, categories=list(labels))
    if "run" in raw.columns:
        numeric = pd.to_numeric(raw["run"], errors="coerce")
        bad = (numeric.isna() | (numeric < 0) | (numeric != np.floor(numeric))).to_numpy()
        if bad.any():
            _fail(source, "run", "process-run indices must be whole numbers >= 0", "number runs 0, 1, 2, ...",
                  raw, bad)
        out["run"] = numeric.astype(np.int64)
    known_columns = set(out) | set(REQUIRED)
    for column in raw.columns:
        if column not in known_columns and column not in out:
            out[column] = raw[column]

    key = key_columns(list(out))
    ordered = key + ["duration_s", "status", "role", "correct", "test_kind"]
    corpus = pd.DataFrame({c: out[c] for c in ordered + [c for c in out if c not in ordered]},
                          index=pd.RangeIndex(len(raw)), copy=False)
    if _has_duplicates(corpus, key):  # finding which rows (hashing 10^7 keys) only when there are some
        key_code, n_keys = group_codes(corpus, key)
        duplicated = np.bincount(key_code, minlength=n_keys)[key_code] > 1
        _fail(source, "repeat", f"duplicate ({', '.join(key)}) keys",
              "each execution needs its own repeat index (or campaign/environment)", corpus, duplicated, key)
    return corpus


def _undated(value) -> bool:
    """Whether the text ``value`` leaves out part of its date (day, month or year): read with two different
    defaults for the missing parts, it gives two instants (dateutil, as pandas' mixed reading; an unreadable
    text is not this rule's to judge)."""
    if not isinstance(value, str):
        return False
    try:
        return parser.parse(value, default=_DEFAULTS[0]) != parser.parse(value, default=_DEFAULTS[1])
    except (ValueError, OverflowError):
        return False


_DEFAULTS = (datetime.datetime(2001, 1, 1), datetime.datetime(2002, 2, 2))

#: The dtype of a loaded ``timestamp`` column: one instant per execution, in UTC (an offset in the file is kept as
#: the instant it names), nanoseconds (a clock's finest), so that a corpus reads back the same from every format.
TIMESTAMP_DTYPE = "datetime64[ns, UTC]"


def _timestamps(values: pd.Series, source: str, raw: pd.DataFrame) -> pd.Series:
    """The ``timestamp`` column as :data:`TIMESTAMP_DTYPE`: datetimes (naive ones read as UTC) or text in any date form
    pandas reads (ISO 8601 first, at C speed; naive text is UTC, as :func:`audits.corpus.runs.timestamps` reads it).

    Text and JSON lines carry no dtype: kept as the file gave it, a corpus written as CSV or JSON lines read back
    its timestamps as text, and one written from such a corpus as Parquet kept text where the original had
    datetimes. Missing values are NaT; a value that is not a date (numbers included: seconds or nanoseconds since
    when?) is refused with its rows, not turned into NaT, which would silently drop it from the run order.
    """
    if pd.api.types.is_datetime64_any_dtype(values):
        parsed = values if values.dt.tz is not None else values.dt.tz_localize("UTC")
    elif values.isna().all():
        parsed = pd.Series(pd.NaT, index=values.index, dtype=TIMESTAMP_DTYPE)
    elif values.dtype == bool or pd.api.types.is_numeric_dtype(values):
        _fail(source, "timestamp", f"numbers (dtype {values.dtype}), not dates: the unit and epoch are unknown",
              "write when each execution ran as ISO 8601 text, e.g. 2026-01-31T14:05:00.123456+00:00 (pandas' "
              "to_json writes datetimes as epoch milliseconds unless given date_format='iso')",
              raw, values.notna().to_numpy())
    else:
        try:
            parsed = pd.to_datetime(values, utc=True, format="ISO8601")
        except (ValueError, TypeError, OverflowError):
            # a number among the texts (a JSON line's epoch) would be read as nanoseconds after 1970: refused
            numbers = values.map(lambda v: isinstance(v, (bool, int, float, np.bool_, np.number)) and v == v)
            if numbers.any():
                _fail(source, "timestamp", "numbers among the dates: their unit and epoch are unknown",
                      "write when each execution ran as ISO 8601 text, e.g. 2026-01-31T14:05:00.123456+00:00",
                      raw, numbers.to_numpy(dtype=bool))
            parsed = pd.to_datetime(values, utc=True, format="mixed", errors="coerce")
            # that reading fills what a text leaves out (its day, month or year) from the day it is read: '12:30'
            # named today, so the run order changed with the day of the audit. Such a text names no date.
            codes, distinct = pd.factorize(values)
            undated = np.array([_undated(v) for v in distinct] + [False], dtype=bool)  # each text once; -1: missing
            parsed = parsed.mask(undated[codes])
        not_dates = (parsed.isna() & values.notna()).to_numpy().copy()
        if not_dates.any():  # an empty text (a JSON "" or a Parquet string column's empty cell) is not known either
            blank = values[not_dates].map(lambda v: isinstance(v, str) and not v.strip()).to_numpy(dtype=bool)
            not_dates[np.flatnonzero(not_dates)[blank]] = False
        if not_dates.any():
            _fail(source, "timestamp", "values that are not dates",
                  "write when each execution ran as ISO 8601 text, e.g. 2026-01-31T14:05:00.123456+00:00 "
                  "(or leave the cell empty when it is not known)", raw, not_dates)
    try:
        return parsed.dt.tz_convert("UTC").astype(TIMESTAMP_DTYPE).reset_index(drop=True)
    except (OverflowError, ValueError) as exc:  # pandas' OutOfBoundsDatetime is a ValueError
        low, high = pd.Timestamp.min.year + 1, pd.Timestamp.max.year - 1
        outside = ~parsed.isna().to_numpy() & ~parsed.between(pd.Timestamp(f"{low}-01-01", tz="UTC"),
                                                               pd.Timestamp(f"{high}-12-31", tz="UTC")).to_numpy()
        _fail(source, "timestamp", f"dates outside {low}-{high} ({exc})",
              "check the column: an execution's start time is a date of this era", raw, outside)


def _has_duplicates(frame: pd.DataFrame, columns: list[str]) -> bool:
    """Whether two rows share their ``columns`` values, from the mixed-radix key: a presence count when the
    keys span a small range (:func:`stats._groups.dense_range`: 0.05 s at 10^7 rows), else one sort (0.8 s;
    hashing 10^7 distinct keys takes seconds)."""
    key = mixed_radix_key(frame, columns)
    if dense_range(key):
        return bool(np.bincount(key).max() > 1)
    ordered = np.sort(key)
    return bool((ordered[1:] == ordered[:-1]).any())


def _parse_bool(values: pd.Series, source: str, raw: pd.DataFrame) -> np.ndarray:
    if values.dtype == bool:
        return values.to_numpy()
    truth = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False,
             "1.0": True, "0.0": False}
    mapped = values.astype(str).str.strip().str.lower().map(truth)
    bad = mapped.isna().to_numpy()
    if bad.any():
        _fail(source, "correct", "values that are not booleans", "use true/false (or 1/0)", raw, bad)
    return mapped.to_numpy(dtype=bool)


def _fitting_unit(raw: np.ndarray) -> str:
    """The coarsest unit that puts the median of ``raw`` (values as written) at or below 10 s."""
    median = float(np.median(raw)) if len(raw) else 0.0
    return next((u for u in ("s", "ms", "us", "ns") if median * UNITS[u] <= 10.0), "ns")


def _fitting_unit_advice(raw: np.ndarray, unit: str) -> str:
    fits = _fitting_unit(raw)
    if fits == unit:
        return "pass --unit ms, us or ns when the file is not in seconds"
    return (f"the median, {float(np.median(raw)):,.6g} {unit}, reads as {float(np.median(raw)) * UNITS[fits]:.3g} s "
            f"with --unit {fits}")


_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}


def unit_warnings(corpus: pd.DataFrame, *, unit: str = "s", source: str = "<corpus>") -> tuple[str, ...]:
    """Warnings when the durations look like they are in another unit than ``unit``.

    Two signs, on ``ok`` rows: (1) the floor (role ``floor``, the sandbox's empty
    program) has a median above 1 s (floor rows with an ``instructions`` count are left out: they ran under
    the counter, whose start-up takes seconds); (2) every duration, read in ``unit``, is a
    whole number of at least 1,000 (the look of integer milliseconds or
    nanoseconds stored as seconds). Each warning names the ``--unit`` that
    fits: for (1) the coarsest unit that puts the floor's median below 1 s,
    for (2) the coarsest that puts the median duration at or below 10 s.
    A corpus without a floor is checked by (2) only.

    Examples
    --------
    >>> ms = normalize(pd.DataFrame({"problem": "p", "test": "t", "solution": "a", "status": "ok",
    ...     "duration_s": [1200, 1350, 1500], "repeat": [0, 1, 2]}))
    >>> print(unit_warnings(ms)[0].splitlines()[-1])
      -> load it with --unit ms (the median would be 1.35 s)
    """
    if unit not in UNITS:
        raise CorpusError(f"{source}: unknown unit '{unit}'\n  -> use one of {', '.join(UNITS)}")
    d = corpus["duration_s"].to_numpy(dtype=float)
    ok = (corpus["status"] == "ok").to_numpy() & np.isfinite(d) & (d > 0)
    raw = d / UNITS[unit]
    coarse_to_fine = ("s", "ms", "us", "ns")
    warnings = []
    if "role" in corpus.columns:
        floor = ok & (corpus["role"] == "floor").to_numpy()
        if "instructions" in corpus.columns:
            # a floor row with an instruction count ran under the counter (collect --measure instructions):
            # its wall time is valgrind's start-up (about 1.7 s for Python, 0.4 s for C++ here, 53-64x the
            # native floor), not a sign of another unit; such floors say nothing about the unit
            counted = np.isfinite(pd.to_numeric(corpus["instructions"], errors="coerce").to_numpy(dtype=float))
            floor &= ~counted
        if floor.any():
            median = float(np.median(d[floor]))
            if median > 1.0:
                fits = next((u for u in coarse_to_fine if np.median(raw[floor]) * UNITS[u] < 1.0), "ns")
                warnings.append(
                    f"{source}: the floor (the empty program, role 'floor') takes a median of {median:.3g} s; "
                    f"an empty program rarely takes over 1 s, so the durations look like {_UNIT_WORDS[fits]}\n"
                    f"  -> load it with --unit {fits} (the floor would be "
                    f"{np.median(raw[floor]) * UNITS[fits]:.3g} s)")
    if ok.any():
        values = raw[ok]
        whole = np.abs(values - np.round(values)) <= 1e-9 * np.maximum(1.0, np.abs(values))
        if whole.all() and values.min() >= 1000:
            median = float(np.median(values))
            fits = _fitting_unit(values)
            if fits != unit:
                warnings.append(
                    f"{source}: every ok duration is a whole number of at least 1,000 {unit} "
                    f"(median {median:,.0f}); that is how integer {_UNIT_WORDS[fits]} look\n"
                    f"  -> load it with --unit {fits} (the median would be {median * UNITS[fits]:.3g} s)")
    return tuple(warnings)
