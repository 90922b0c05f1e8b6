"""Results as versioned JSON, reloadable into the result types (as pyperf's ``Benchmark.dump``/``load``).

:func:`dump_results` writes ``{name: result}`` (any audit result, a :class:`~audits.engine.whole_audit.WholeAudit`,
the report's corpus summary, ...) with the parameters each was computed from into one JSON document;
:func:`load_results` reads it back into objects equal to the ones written: the same dataclasses with the same
field values, DataFrames with the same columns, dtypes, index and values (floats exactly: JSON's shortest
round-trip repr), tuples as tuples, NaN as NaN. A report renders its pages from such a file without
recomputing any audit (``speedaudit report --results all.json``).

The document::

    {"format": "speedaudit-results", "format_version": 2, "speedaudit": "0.1.0",
     "results": {"reliability": {"parameters": {...}, "value": <encoded>}, ...}, ...}

Encoded values are plain JSON (no NaN or Infinity literals: a non-finite float is ``{"__float__": "nan"}``; a
numeric column of at least :data:`PACK_MIN_VALUES` values is ``{"dtype": "float64", "packed": "<base64>"}``, its
little-endian bytes);
objects carry their type as ``{"__type__": "audits.checks.reliability:ReliabilityAudit", "fields": {...}}``.
Only types of speedaudit's own packages (``audits``, ``stats``) are rebuilt, without running their
``__init__`` (a results file names classes, never code to run); anything else in a file is refused with the
path of the value named. A file of a newer ``format_version`` is refused with what to do.

Examples
--------
>>> import pandas as pd
>>> from audits.protocol.findings import Finding
>>> value = {"findings": (Finding("pass", "icc", 0.93, 0.75, "ok"),), "table": pd.DataFrame({"x": [0.1, float("nan")]})}
>>> back = decode(encode(value))
>>> back["findings"] == value["findings"], back["table"].equals(value["table"])
(True, True)
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

import numpy as np
import pandas as pd

from audits import version
from audits.corpus.io import atomic_write
from audits.errors import UserError

__all__ = ["SavedResults", "dump_results", "encoded_entry", "write_entries", "load_results", "read_results"]

FORMAT = "speedaudit-results"
#: Raised when the encoding changes in a way an older reader cannot read (2: long numeric columns as bytes,
#: :data:`PACK_MIN_VALUES`; a version-1 file is still read).
FORMAT_VERSION = 2
#: The packages whose types a results file may name.
_OWN = ("audits", "stats")


class ResultsFileError(UserError, ValueError):
    """A results file that cannot be read (not one, a newer format, a value of an unknown type)."""


# --- encoding ------------------------------------------------------------------------------------------

def _float(value: float):
    if math.isfinite(value):
        return value
    return {"__float__": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}


def _type_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


#: Numeric columns at least this long are written as bytes (``"packed"``: base64 of the little-endian values),
#: shorter ones as a readable JSON list. The cut-off is about reading the file, not the data: a column of a few
#: dozen values is one a person may read in the file, while for long ones parsing JSON number text is what
#: reading costs (10^6 floats: about 1 s as text, 10 ms as bytes; a report at 10^7 rows held 2.5·10^7 of them
#: and every page read them). Bytes are exact for every value, NaN and infinities included.
PACK_MIN_VALUES = 64


def _packed(array: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()).decode("ascii")


def _unpacked(text: str, dtype: np.dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype.newbyteorder("<")).astype(dtype)


def _codes(codes: np.ndarray) -> dict:
    """A column's integer codes: ``{"codes": [...]}`` or, for a long column (see :data:`PACK_MIN_VALUES`), its
    bytes ``{"codes_dtype": "<i1", "codes_packed": "<base64>"}``."""
    if len(codes) >= PACK_MIN_VALUES:
        return {"codes_dtype": codes.dtype.str, "codes_packed": _packed(codes)}
    return {"codes": codes.tolist()}


def _column(values: pd.Series | pd.Index, where: str) -> dict:
    """One column (or index level): its dtype and its values as JSON."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = np.asarray(values.codes if isinstance(values, pd.Index) else values.cat.codes)
        return {"dtype": "category", "categories": _column(pd.Index(dtype.categories), where),
                "ordered": bool(dtype.ordered), **_codes(codes)}
    kind = getattr(dtype, "kind", "O")
    if kind in "fiub" and isinstance(dtype, np.dtype) and len(values) >= PACK_MIN_VALUES:
        return {"dtype": str(dtype), "packed": _packed(np.asarray(values, dtype=dtype))}
    if kind == "f" and isinstance(dtype, np.dtype):
        array = np.asarray(values, dtype=float)
        if np.isfinite(array).all():
            return {"dtype": str(dtype), "values": array.tolist()}
        out = array.astype(object)
        out[np.isnan(array)] = None
        out[np.isposinf(array)] = "inf"
        out[np.isneginf(array)] = "-inf"
        return {"dtype": str(dtype), "values": out.tolist()}
    if kind in "iub" and isinstance(dtype, np.dtype):
        return {"dtype": str(dtype), "values": np.asarray(values).tolist()}
    if kind in "mM":
        return {"dtype": str(dtype), "values": [None if pd.isna(v) else str(v) for v in values]}
    if isinstance(dtype, np.dtype) and kind == "O":
        return {"dtype": "object", "values": [encode(v, f"{where}[{i}]") for i, v in enumerate(values)]}
    if len(values) >= PACK_MIN_VALUES:
        codes, levels = pd.factorize(values, use_na_sentinel=True)  # -1: missing
        if len(levels) <= len(values) // 2:  # a long column that repeats its values (the cells' names): each once
            return {"dtype": str(dtype), "levels": [encode(v, where) for v in levels.tolist()],
                    "codes_dtype": codes.dtype.str, "codes_packed": _packed(codes)}
    # pandas extension dtypes (string, Int64, boolean, ...): values with missing ones as null
    return {"dtype": str(dtype), "values": [None if pd.isna(v) else encode(v, where) for v in values.tolist()]}


def _index(index: pd.Index, where: str) -> dict:
    if isinstance(index, pd.RangeIndex):
        return {"range": [index.start, index.stop, index.step], "name": encode(index.name, where)}
    if isinstance(index, pd.MultiIndex):
        return {"levels": [_column(index.get_level_values(i), where) for i in range(index.nlevels)],
                "names": [encode(n, where) for n in index.names]}
    return {"values": _column(index, where), "name": encode(index.name, where)}


def encode(obj, where: str = "value"):
    """``obj`` as plain JSON values that :func:`decode` turns back into an equal object.

    Raises
    ------
    TypeError
        For a value of a type it cannot write, with its path in ``obj`` (``where``) named.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int) and not isinstance(obj, np.integer):
        return obj
    if type(obj) is float:
        return _float(obj)
    if isinstance(obj, (np.generic,)):
        value = obj.item()
        return {"__np__": obj.dtype.str, "value": _float(value) if isinstance(value, float) else encode(value, where)}
    if isinstance(obj, list):
        return [encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, tuple) and not hasattr(obj, "_fields"):
        return {"__tuple__": [encode(v, f"{where}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, dict):
        if all(isinstance(k, str) and not k.startswith("__") for k in obj):
            return {k: encode(v, f"{where}.{k}") for k, v in obj.items()}
        return {"__dict__": [[encode(k, where), encode(v, f"{where}[{k!r}]")] for k, v in obj.items()]}
    if isinstance(obj, (set, frozenset)):
        return {"__set__": [encode(v, where) for v in sorted(obj, key=repr)], "frozen": isinstance(obj, frozenset)}
    if isinstance(obj, pd.DataFrame):
        return {"__frame__": {
            "columns": _index(obj.columns, f"{where}.columns"),
            "index": _index(obj.index, f"{where}.index"),
            "data": [_column(obj.iloc[:, i], f"{where}[{obj.columns[i]!r}]") for i in range(obj.shape[1])],
            "attrs": encode(dict(obj.attrs), f"{where}.attrs")}}
    if isinstance(obj, pd.Series):
        return {"__series__": {"values": _column(obj, where), "index": _index(obj.index, f"{where}.index"),
                               "name": encode(obj.name, where)}}
    if isinstance(obj, pd.Index):
        return {"__index__": _index(obj, where)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "O":
            return {"__array__": "object", "shape": list(obj.shape),
                    "values": [encode(v, where) for v in obj.ravel().tolist()]}
        column = _column(pd.Series(obj.ravel()), where)
        return {"__array__": obj.dtype.str, "shape": list(obj.shape),
                **{k: column[k] for k in ("values", "packed") if k in column}}
    if isinstance(obj, PurePath):
        return {"__path__": str(obj)}
    if isinstance(obj, pd.Timestamp):
        return {"__timestamp__": obj.isoformat()}
    cls = type(obj)
    if cls.__module__.split(".")[0] not in _OWN:
        raise TypeError(f"{where}: cannot write a {_type_name(cls)} into a results file")
    if isinstance(obj, enum.Enum):
        return {"__type__": _type_name(cls), "enum": encode(obj.value, where)}
    if dataclasses.is_dataclass(obj):
        return {"__type__": _type_name(cls),
                "fields": {f.name: encode(getattr(obj, f.name), f"{where}.{f.name}") for f in dataclasses.fields(obj)}}
    if isinstance(obj, tuple):  # a named tuple of ours
        return {"__type__": _type_name(cls), "items": [encode(v, where) for v in obj]}
    state = getattr(obj, "__dict__", None)
    if state is None:
        raise TypeError(f"{where}: cannot write a {_type_name(cls)} (no fields) into a results file")
    return {"__type__": _type_name(cls), "state": {k: encode(v, f"{where}.{k}") for k, v in state.items()}}


# --- decoding ------------------------------------------------------------------------------------------

_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _own_type(name: str):
    module, _, qualname = name.partition(":")
    if module.split(".")[0] not in _OWN or not qualname:
        raise ResultsFileError(f"type {name!r} is not one of speedaudit's result types")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ResultsFileError(f"type {name!r} no longer exists in this speedaudit ({exc}); recompute the results "
                               f"with this version") from None
    return obj


def _values(spec: dict):
    dtype = spec["dtype"]
    if dtype == "category":
        categories = _values(spec["categories"])
        codes = (_unpacked(spec["codes_packed"], np.dtype(spec["codes_dtype"])) if "codes_packed" in spec
                 else spec["codes"])
        return pd.Categorical.from_codes(codes, categories=categories, ordered=spec["ordered"])
    if "packed" in spec:  # format version 2: a long numeric column as bytes
        return _unpacked(spec["packed"], np.dtype(dtype))
    if "levels" in spec:  # format version 2: a long extension column as its distinct values and their codes
        levels = pd.array([decode(v) for v in spec["levels"]], dtype=dtype)
        return levels.take(_unpacked(spec["codes_packed"], np.dtype(spec["codes_dtype"])), allow_fill=True)
    values = spec["values"]
    if dtype == "object":
        out = np.empty(len(values), dtype=object)
        out[:] = [decode(v) for v in values]
        return out
    numpy_dtype = None
    try:
        numpy_dtype = np.dtype(dtype)
    except TypeError:
        pass
    if numpy_dtype is not None and numpy_dtype.kind == "f":
        array = np.array([math.nan if v is None else _NONFINITE.get(v, v) if isinstance(v, str) else v
                          for v in values], dtype=numpy_dtype) if any(not isinstance(v, (int, float)) or
                                                                       isinstance(v, bool) for v in values) \
            else np.array(values, dtype=numpy_dtype)
        return array
    if numpy_dtype is not None and numpy_dtype.kind in "iub":
        return np.array(values, dtype=numpy_dtype)
    if numpy_dtype is not None and numpy_dtype.kind in "mM":
        return pd.array(pd.to_datetime(values) if numpy_dtype.kind == "M" else pd.to_timedelta(values),
                        dtype=dtype)
    return pd.array([None if v is None else decode(v) for v in values], dtype=dtype)


def _decode_index(spec: dict) -> pd.Index:
    if "range" in spec:
        return pd.RangeIndex(*spec["range"], name=decode(spec["name"]))
    if "levels" in spec:
        return pd.MultiIndex.from_arrays([_values(level) for level in spec["levels"]],
                                         names=[decode(n) for n in spec["names"]])
    values = _values(spec["values"])
    return pd.Index(values, name=decode(spec["name"]), dtype=getattr(values, "dtype", None), tupleize_cols=False)


def _frame(spec: dict) -> pd.DataFrame:
    columns = _decode_index(spec["columns"])
    data = {i: _values(col) for i, col in enumerate(spec["data"])}
    frame = pd.DataFrame(data, index=_decode_index(spec["index"]))
    frame.columns = columns
    frame.attrs.update(decode(spec["attrs"]))
    return frame


def _rebuild(cls, values: Mapping[str, object]):
    if dataclasses.is_dataclass(cls):  # a field added since the file was written: its default, else refused
        values = dict(values)
        for f in dataclasses.fields(cls):
            if f.name in values:
                continue
            if f.default is not dataclasses.MISSING:
                values[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                values[f.name] = f.default_factory()
            else:
                raise ResultsFileError(f"{_type_name(cls)} has a field {f.name!r} the file does not hold (written by "
                                       f"another speedaudit); recompute the results with this one")
    obj = object.__new__(cls)
    for key, value in values.items():
        object.__setattr__(obj, key, value)  # frozen dataclasses too; no __init__/__post_init__ runs
    return obj


def decode(obj):
    """The object :func:`encode` wrote."""
    if isinstance(obj, list):
        return [decode(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if len(obj) and next(iter(obj)).startswith("__"):
        tag = next(iter(obj))
        body = obj[tag]
        if tag == "__float__":
            return _NONFINITE[body]
        if tag == "__np__":
            value = decode(obj["value"])
            return np.array(value, dtype=np.dtype(body))[()]
        if tag == "__tuple__":
            return tuple(decode(v) for v in body)
        if tag == "__dict__":
            return {_hashable(decode(k)): decode(v) for k, v in body}
        if tag == "__set__":
            items = (_hashable(decode(v)) for v in body)
            return frozenset(items) if obj.get("frozen") else set(items)
        if tag == "__frame__":
            return _frame(body)
        if tag == "__series__":
            return pd.Series(_values(body["values"]), index=_decode_index(body["index"]), name=decode(body["name"]))
        if tag == "__index__":
            return _decode_index(body)
        if tag == "__array__":
            if body == "object":
                out = np.empty(len(obj["values"]), dtype=object)
                out[:] = [decode(v) for v in obj["values"]]
            else:
                out = np.asarray(_values({"dtype": np.dtype(body).name,
                                          **{k: obj[k] for k in ("values", "packed") if k in obj}}))
            return out.reshape(obj["shape"])
        if tag == "__path__":
            return Path(body)
        if tag == "__timestamp__":
            return pd.Timestamp(body)
        if tag == "__type__":
            cls = _own_type(body)
            if "enum" in obj:
                return cls(decode(obj["enum"]))
            if "items" in obj:
                return cls(*(decode(v) for v in obj["items"]))
            return _rebuild(cls, {k: decode(v) for k, v in obj.get("fields", obj.get("state", {})).items()})
    return {k: decode(v) for k, v in obj.items()}


def _hashable(value):
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


# --- files ---------------------------------------------------------------------------------------------

class SavedResults:
    """A results file read back: ``{name: (parameters, value)}`` and what the file says of itself (``meta``:
    the corpora, whether it is a saved audit, ...). Read from a file, each value is decoded when first asked
    for (a page decodes only the results it shows); built from a mapping, the values are taken as they are."""

    def __init__(self, entries: Mapping[str, tuple], meta: Mapping[str, object] | None = None,
                 path: Path | None = None, *, encoded: bool = False):
        self.entries, self.meta, self.path = dict(entries), dict(meta or {}), path
        self._encoded = encoded
        self._decoded: dict[str, object] = {}
        self._files: dict[str, SavedResults] = {}  # a union's names: the file that holds each

    @classmethod
    def union(cls, files: Sequence[SavedResults]) -> SavedResults:
        """The results of several files as one (a name in several: the first file's), the first file's ``meta``
        and ``path``; each value is decoded by, and a damaged one named with, the file that holds it."""
        out = cls({}, files[0].meta if files else {}, files[0].path if files else None)
        for file in files:
            for name in file.names():
                if name not in out.entries:
                    out.entries[name], out._files[name] = file.entries[name], file
        return out

    def names(self) -> tuple[str, ...]:
        return tuple(self.entries)

    def parameters(self, name: str):
        entry = self.entries.get(name)
        return None if entry is None else entry[0]

    def value(self, name: str):
        if name in self._files:
            return self._files[name].value(name)
        if not self._encoded:
            return self.entries[name][1]
        if name not in self._decoded:
            try:
                self._decoded[name] = decode(self.entries[name][1])
            except ResultsFileError as exc:
                raise ResultsFileError(f"{self.path}: {exc}") from None
            except (KeyError, TypeError, ValueError) as exc:
                raise ResultsFileError(f"{self.path}: {name}: a damaged results file ({type(exc).__name__}: "
                                       f"{exc}); recompute it") from None
        return self._decoded[name]


def document(results: Mapping[str, object], *, parameters: Mapping[str, Mapping] | None = None,
             meta: Mapping[str, object] | None = None) -> dict:
    """The JSON document of ``results`` (``{name: result}``), each with ``parameters[name]`` (the values it
    was computed from; None when not given), and ``meta`` (anything JSON can hold, e.g. the corpus files)."""
    parameters = parameters or {}
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "speedaudit": version(),
            "meta": encode(dict(meta or {}), "meta"),
            "results": {name: {"parameters": encode(parameters.get(name), f"{name}.parameters"),
                               "value": encode(value, name)} for name, value in results.items()}}


def dump_results(results: Mapping[str, object], path: str | os.PathLike, *,
                 parameters: Mapping[str, Mapping] | None = None, meta: Mapping[str, object] | None = None,
                 extra: Mapping[str, object] | None = None) -> Path:
    """Write ``results`` (``{name: result}``) as a versioned JSON file (atomically) and return its path.

    ``extra`` adds top-level keys beside the document's own (``speedaudit audit all --json`` keeps every
    audit's plain JSON there, so one file is both the readable summary and the reloadable results).

    Examples
    --------
    >>> import tempfile
    >>> from audits.protocol.findings import Finding
    >>> path = dump_results({"one": Finding("pass", "icc", 0.9, 0.75, "ok")}, tempfile.mkdtemp() + "/r.json")
    >>> load_results(path)["one"].metric
    'icc'
    """
    parameters = parameters or {}
    entries = {name: encoded_entry(name, value, parameters.get(name)) for name, value in results.items()}
    return write_entries(entries, path, meta=meta, extra=extra)


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=False, separators=(",", ":"))


def encoded_entry(name: str, value, parameters: Mapping | None = None) -> str:
    """One result's entry of a results document (``{"parameters": ..., "value": ...}``) as JSON text, so a result
    written into several files (``speedaudit report``'s one file per page) is encoded once."""
    return _dumps({"parameters": encode(parameters, f"{name}.parameters"), "value": encode(value, name)})


def write_entries(entries: Mapping[str, str], path: str | os.PathLike, *, meta: Mapping[str, object] | None = None,
                  extra: Mapping[str, object] | None = None) -> Path:
    """Write a results document of entries already encoded (:func:`encoded_entry`), atomically; the same text
    :func:`dump_results` writes for those results."""
    doc = {**dict(extra or {}), **document({}, meta=meta)}
    del doc["results"]  # the document's last key: spliced in as text below
    body = ",".join(f"{_dumps(name)}:{entry}" for name, entry in entries.items())
    text = "".join([_dumps(doc)[:-1], ',"results":{', body, "}}"])

    def writer(tmp):
        Path(tmp).write_text(text, encoding="utf-8")

    return atomic_write(path, writer)


def read_results(path: str | os.PathLike) -> SavedResults:
    """Read a file :func:`dump_results` wrote (or ``speedaudit audit all --json``) into :class:`SavedResults`.

    Raises
    ------
    ResultsFileError
        Not a results file, a newer format, or a value of a type this speedaudit does not have; the file is named.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsFileError(f"{path}: no such results file; write one with 'speedaudit audit all CORPUS "
                               f"--json {path.name}'") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsFileError(f"{path}: not a results file ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultsFileError(f"{path}: not a speedaudit results file (no \"format\": \"{FORMAT}\"); write one "
                               f"with 'speedaudit audit all CORPUS --json FILE'")
    file_version = doc.get("format_version")
    if not isinstance(file_version, int) or file_version > FORMAT_VERSION:
        raise ResultsFileError(f"{path}: results format version {file_version!r}, newer than this speedaudit reads "
                               f"({FORMAT_VERSION}); upgrade speedaudit or recompute the results with this one")
    try:
        entries = {name: (decode(entry["parameters"]), entry["value"]) for name, entry in doc["results"].items()}
        meta = decode(doc.get("meta", {}))
    except ResultsFileError as exc:
        raise ResultsFileError(f"{path}: {exc}") from None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ResultsFileError(f"{path}: a damaged results file ({type(exc).__name__}: {exc}); recompute it") from None
    return SavedResults(entries, meta, path, encoded=True)


def load_results(path: str | os.PathLike) -> dict[str, object]:
    """``{name: result}`` of a file :func:`dump_results` wrote: the result types, equal to those written."""
    saved = read_results(path)
    return {name: saved.value(name) for name in saved.names()}
