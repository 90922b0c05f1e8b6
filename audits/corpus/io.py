"""The timing corpus: loading, column mapping, units, validation and saving.

One row per execution of one solution on one test in one environment (DESIGN.md,
"The timing corpus"). Files may be Parquet (primary), CSV (optionally gzipped) or
JSON lines. Every check names the file, the column and the first offending rows,
and says what to do; nothing is written unless the whole corpus is valid, and
files are written atomically (temporary file + rename), so a crash never leaves
a half-written corpus behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from audits.corpus.schema import (
    DURATION_COLUMNS,
    INCORRECT_STATUSES,
    KEY,
    NUMERIC_EXTRAS,
    OPTIONAL_DEFAULTS,
    REQUIRED,
    ROLES,
    STATUSES,
    TEST_KINDS,
    key_columns,
)
from audits.errors import UserError
from stats._groups import group_codes, mixed_radix_key

__all__ = [
    "CorpusError",
    "REQUIRED",
    "OPTIONAL_DEFAULTS",
    "ROLES",
    "TEST_KINDS",
    "KEY",
    "UNITS",
    "parse_mapping",
    "read_table",
    "normalize",
    "load_corpus",
    "save_corpus",
    "summarize",
    "CorpusSummary",
]

# The schema (columns, dtypes, statuses, roles, test kinds, key, defaults) is audits.corpus.schema;
# its names are re-exported here for callers of this module.
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_INCORRECT_STATUSES = INCORRECT_STATUSES
_SHOW_ROWS = 5


class CorpusError(UserError, ValueError):
    """A corpus that cannot be used, with the file, column and rows named."""


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
            frame, mask, show or [c for c in ("problem", "test", "solution", column) if c])
    raise CorpusError(f"{where}: {problem}{rows}\n  -> {fix}")


def _codes_and_labels(values: pd.Series, default: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes and string labels of a column, without building 10^7 Python strings.

    Categorical columns are used as they are; others are factorised once. Labels
    that coincide after conversion to ``str`` are merged. Missing values get
    code -1, or the ``default`` label when one is given.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy(dtype=np.int64)
        labels = np.asarray(values.cat.categories.astype(str), dtype=object)
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        codes = codes.astype(np.int64, copy=False)
        labels = np.asarray([str(u) for u in uniques], dtype=object)
    if not pd.Index(labels).is_unique:  # e.g. 1 and "1": merge them
        labels, inverse = np.unique(labels, return_inverse=True)
        labels = labels.astype(object)
        codes = np.where(codes >= 0, inverse[np.maximum(codes, 0)], -1)
    if default is not None and (codes < 0).any():
        if default in labels:
            codes = np.where(codes < 0, int(np.flatnonzero(labels == default)[0]), codes)
        else:
            labels = np.append(labels, default).astype(object)
            codes = np.where(codes < 0, len(labels) - 1, codes)
    return codes, labels


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


def read_table(path: str | os.PathLike) -> pd.DataFrame:
    """Read a Parquet, CSV (.csv, .csv.gz) or JSON-lines (.jsonl, .ndjson, .json) file."""
    path = Path(path)
    source = str(path)
    if not path.exists():
        raise CorpusError(f"{source}: no such file\n  -> check the path")
    if path.is_dir():
        raise CorpusError(f"{source}: is a directory, not a corpus file\n  -> pass a .parquet, .csv or .jsonl file")
    if path.stat().st_size == 0:
        raise CorpusError(f"{source}: the file is empty (0 bytes)\n  -> collect or export timings into it first")
    name = path.name.lower()
    try:
        if name.endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        if name.endswith((".csv", ".csv.gz", ".tsv")):
            return pd.read_csv(path, sep="\t" if name.endswith(".tsv") else ",", low_memory=False)
        if name.endswith((".jsonl", ".ndjson", ".json", ".jsonl.gz")):
            return pd.read_json(path, lines=True, precise_float=True)
    except CorpusError:
        raise
    except Exception as exc:  # the reader's own message is the useful part
        raise CorpusError(f"{source}: cannot be read as {path.suffix} ({type(exc).__name__}: {exc})\n"
                          f"  -> check that the file is complete and of the format its name says") from exc
    raise CorpusError(f"{source}: unknown file type '{path.suffix}'\n"
                      f"  -> use .parquet, .csv, .csv.gz, .tsv or .jsonl (JSON lines)")


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

    out = pd.DataFrame(index=pd.RangeIndex(len(frame)))
    raw = frame.reset_index(drop=True)

    for column in ("problem", "test", "solution"):
        codes, labels = _codes_and_labels(raw[column])
        blank = np.array([not lab.strip() for lab in labels], dtype=bool)
        bad = (codes < 0) | (blank[np.maximum(codes, 0)] if len(blank) else True)
        if bad.any():
            _fail(source, column, "empty or missing ids", "every row needs a problem, test and solution id", raw, bad)
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
            _fail(source, column, "values that are not numbers", "store plain numbers (no units in the cell)",
                  raw, not_numeric)
        scale = UNITS[unit] if column in DURATION_COLUMNS else 1.0
        out[column] = numeric.to_numpy(dtype=float) * scale

    d = out["duration_s"].to_numpy()
    ok = (out["status"] == "ok").to_numpy()
    checks = [
        (ok & np.isnan(d), "missing (NaN) duration on ok rows", "an ok execution needs its measured duration"),
        (np.isinf(d), "infinite durations", "record the measured wall time (for a timeout: the limit)"),
        (d < 0, "negative durations", "durations are elapsed wall-clock time and cannot be negative"),
    ]
    for mask, problem, fix in checks:
        if mask.any():
            _fail(source, "duration_s", problem, fix, raw.assign(duration_s=d), mask,
                  ["problem", "test", "solution", "status", "duration_s"])

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
            out[column] = pd.Categorical.from_codes(codes, categories=list(labels))

    if "correct" in raw.columns:
        out["correct"] = _parse_bool(raw["correct"], source, raw)
    else:
        incorrect_row = out["status"].isin(_INCORRECT_STATUSES).to_numpy()
        solution_code, n_solutions = group_codes(out, ["problem", "solution"])
        incorrect = np.bincount(solution_code[incorrect_row], minlength=n_solutions) > 0
        out["correct"] = ~incorrect[solution_code]

    if "timestamp" in raw.columns:
        out["timestamp"] = raw["timestamp"]
    if "language" in raw.columns:
        codes, labels = _codes_and_labels(raw["language"])
        out["language"] = pd.Categorical.from_codes(codes, categories=list(labels))
    if "run" in raw.columns:
        numeric = pd.to_numeric(raw["run"], errors="coerce")
        bad = (numeric.isna() | (numeric < 0) | (numeric != np.floor(numeric))).to_numpy()
        if bad.any():
            _fail(source, "run", "process-run indices must be whole numbers >= 0", "number runs 0, 1, 2, ...",
                  raw, bad)
        out["run"] = numeric.astype(np.int64)
    known_columns = set(out.columns) | set(REQUIRED)
    for column in raw.columns:
        if column not in known_columns and column not in out.columns:
            out[column] = raw[column]

    key = key_columns(out.columns)
    if _has_duplicates(out, key):  # one sort; finding which rows (hashing 10^7 keys) only when needed
        key_code, n_keys = group_codes(out, key)
        duplicated = np.bincount(key_code, minlength=n_keys)[key_code] > 1
        _fail(source, "repeat", f"duplicate ({', '.join(key)}) keys",
              "each execution needs its own repeat index (or campaign/environment)", out, duplicated, key)

    ordered = key + ["duration_s", "status", "role", "correct", "test_kind"]
    return out[ordered + [c for c in out.columns if c not in ordered]]


def _has_duplicates(frame: pd.DataFrame, columns: list[str]) -> bool:
    """Whether two rows share their ``columns`` values: one sort of the mixed-radix key
    (SIMD sort: ~0.1-0.2 s at 10^7 rows, against seconds for hashing 10^7 distinct keys)."""
    ordered = np.sort(mixed_radix_key(frame, columns))
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
    """
    frame = read_table(path)
    return normalize(frame, source=str(path), mapping=mapping, unit=unit)


def atomic_write(path: str | os.PathLike, writer) -> Path:
    """Call ``writer(tmp_path)`` and move the result into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        writer(tmp)
        # mkstemp creates 0600 files; give the result the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def save_corpus(corpus: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a corpus to Parquet atomically (the target appears only when complete)."""
    return atomic_write(path, lambda tmp: corpus.to_parquet(tmp, index=False))


@dataclass(frozen=True)
class CorpusSummary:
    """Counts that describe a corpus (``speedaudit validate``)."""

    rows: int
    problems: int
    tests: int
    solutions: int
    environments: tuple[str, ...]
    campaigns: tuple[str, ...]
    repeats: int
    roles: dict
    statuses: dict

    def summary(self) -> str:
        lines = [
            f"rows          {self.rows:,}",
            f"problems      {self.problems:,}",
            f"tests         {self.tests:,}  (problem, test) pairs",
            f"solutions     {self.solutions:,}  (problem, solution) pairs",
            f"environments  {len(self.environments)}: {', '.join(self.environments)}",
            f"campaigns     {len(self.campaigns)}: {', '.join(self.campaigns)}",
            f"repeats       {self.repeats} (max per cell)",
            "roles         " + ", ".join(f"{k} {v:,}" for k, v in self.roles.items()),
            "status        " + ", ".join(f"{k} {v:,}" for k, v in self.statuses.items()),
        ]
        return "\n".join(lines)


def summarize(corpus: pd.DataFrame) -> CorpusSummary:
    """Count rows, problems, tests, solutions, environments, campaigns, repeats and statuses."""
    _, n_tests = group_codes(corpus, ["problem", "test"])
    _, n_solutions = group_codes(corpus, ["problem", "solution"])
    return CorpusSummary(
        rows=len(corpus),
        problems=int(corpus["problem"].nunique()),
        tests=n_tests,
        solutions=n_solutions,
        environments=tuple(sorted(map(str, corpus["environment"].unique()))),
        campaigns=tuple(sorted(map(str, corpus["campaign"].unique()))),
        repeats=int(corpus["repeat"].max()) + 1 if len(corpus) else 0,
        roles={str(k): int(v) for k, v in corpus["role"].value_counts().items() if v},
        statuses={str(k): int(v) for k, v in corpus["status"].value_counts().items() if v},
    )
