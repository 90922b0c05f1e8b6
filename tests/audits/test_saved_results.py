"""Results as versioned JSON (audits.protocol.saved): a real whole audit written and read back is equal to the
one written, field by field (DataFrames with their dtypes and index, NaN as NaN, tuples as tuples); the file is
standard JSON; a foreign type, a newer format or a file that is not one is refused with the file named."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd
import pytest

from audits.checks.clocks import run_clocks_audit
from audits.corpus.synthetic import synthesize
from audits.protocol.findings import Finding
from audits.engine.whole_audit import WholeAudit, run_whole_audit
from audits.protocol.saved import (FORMAT_VERSION, PACK_MIN_VALUES, ResultsFileError, decode, dump_results, encode, load_results,
                                   read_results)
from audits.report.results import CorpusSummary, NotSaved
from audits.report.inputs import CalibrationSkipped


def differences(a, b, where="result") -> list[str]:
    """Every place where ``b`` differs from ``a`` (types, dtypes, index, values; NaN equals NaN)."""
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, pd.DataFrame):
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
        except AssertionError as exc:
            return [f"{where}: {exc}"]
        return [] if a.attrs == b.attrs else [f"{where}.attrs"]
    if isinstance(a, pd.Series):
        try:
            pd.testing.assert_series_equal(a, b, check_exact=True)
        except AssertionError as exc:
            return [f"{where}: {exc}"]
        return []
    if isinstance(a, np.ndarray):
        same = a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        return [] if same else [f"{where}: arrays differ"]
    if dataclasses.is_dataclass(a):
        return [d for f in dataclasses.fields(a) for d in differences(getattr(a, f.name), getattr(b, f.name),
                                                                      f"{where}.{f.name}")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    if isinstance(a, dict):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)} vs {list(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}[{k!r}]")]
    if hasattr(a, "__dict__") and type(a).__module__.split(".")[0] in ("audits", "stats"):
        return differences(vars(a), vars(b), where)
    if isinstance(a, float) and math.isnan(a):
        return [] if math.isnan(b) else [f"{where}: nan vs {b!r}"]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


@pytest.fixture(scope="module")
def results():
    corpus = synthesize(n_problems=6, n_repeats=3, seed=1, campaigns=(("c0", 1, 0), ("c1", 0.6, 0.05))).corpus
    whole = run_whole_audit(corpus, pairs=[(("quiet", "c0"), ("quiet", "c1"))], simulation_run=("quiet", "c0"),
                            n_boot=30)
    return {"whole": whole, "clocks": run_clocks_audit(corpus, n_boot=20),
            "summary": CorpusSummary("six problems", pd.DataFrame({"rows": [1, 2]}, index=["a", "b"])),
            "skipped": CalibrationSkipped(None, None, "no pair"), "missing": NotSaved("clocks", "all.json")}


def test_round_trip_gives_equal_results(results, tmp_path):
    path = dump_results(results, tmp_path / "r.json", parameters={"whole": {"n_boot": 30}})
    back = load_results(path)
    assert list(back) == list(results)
    for name in results:
        assert differences(results[name], back[name]) == [], name
    assert read_results(path).parameters("whole") == {"n_boot": 30}
    # the comparison can fail: a changed value is found
    changed = WholeAudit(back["whole"].results, skipped={"simulation": "x"})
    assert differences(results["whole"], changed)


def test_the_file_is_standard_versioned_json(results, tmp_path):
    path = dump_results({"whole": results["whole"]}, tmp_path / "r.json")
    text = path.read_text(encoding="utf-8")

    def refuse(token):
        raise AssertionError(f"non-standard JSON literal {token}")

    doc = json.loads(text, parse_constant=refuse)
    assert doc["format"] == "speedaudit-results" and doc["format_version"] == FORMAT_VERSION


def test_edge_values_round_trip():
    frame = pd.DataFrame({"f": [0.1, math.nan, math.inf, -math.inf], "i": np.arange(4, dtype=np.int32),
                          "b": [True, False, True, False], "c": pd.Categorical(["x", "y", "x", "z"]),
                          "o": [{"a": (1, 2)}, None, [1.5, math.nan], "s"],
                          "s": pd.array(["u", None, "w", "v"], dtype="string")},
                         index=pd.MultiIndex.from_tuples([("p", 1), ("p", 2), ("q", 1), ("q", 2)], names=["k", "n"]))
    value = {"frame": frame, "series": frame["f"], "array": np.array([[1.0, math.nan]]), "scalar": np.float64(0.25),
             "keys": {("a", "b"): 1, 2: "two"}, "nan": math.nan, "set": frozenset({"a", "b"})}
    back = decode(json.loads(json.dumps(encode(value), allow_nan=False)))
    assert differences(value, back) == []


def test_refused_files_name_the_file(tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"format": "speedaudit-results", "format_version": 1,
                                   "results": {"x": {"parameters": None, "value": {"__type__": "os:system"}}}}))
    with pytest.raises(ResultsFileError, match=r"foreign\.json.*os:system"):
        read_results(foreign).value("x")
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps({"format": "speedaudit-results", "format_version": FORMAT_VERSION + 1, "results": {}}))
    with pytest.raises(ResultsFileError, match=r"newer\.json.*upgrade"):
        read_results(newer)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"audit": "reliability"}))
    with pytest.raises(ResultsFileError, match=r"plain\.json.*audit all"):
        read_results(plain)
    with pytest.raises(ResultsFileError, match="no such results file"):
        read_results(tmp_path / "absent.json")
    older = tmp_path / "older.json"  # a result type that has gained a field without a default since
    doc = json.loads(dump_results({"f": Finding("pass", "icc", 0.9, 0.75, "ok")}, tmp_path / "f.json").read_text())
    del doc["results"]["f"]["value"]["fields"]["subject"]  # has a default: filled in
    del doc["results"]["f"]["value"]["fields"]["message"]  # has none: refused
    older.write_text(json.dumps(doc))
    with pytest.raises(ResultsFileError, match=r"older\.json.*'message'.*recompute"):
        read_results(older).value("f")
    with pytest.raises(TypeError, match=r"value\.x.*cannot write"):
        encode({"x": object()})


def _long_frame(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    f = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 4, n)  # nanoseconds to hours, in seconds
    f[::7], f[1::11], f[2::13], f[3::17] = math.nan, math.inf, -math.inf, -0.0
    return pd.DataFrame({"f": f, "f32": f.astype(np.float32), "i": rng.integers(-2 ** 62, 2 ** 62, n),
                         "u8": rng.integers(0, 255, n).astype(np.uint8), "b": rng.random(n) < 0.3,
                         "c": pd.Categorical(rng.choice([f"p{k}" for k in range(300)], n)),
                         "s": pd.array(np.where(rng.random(n) < 0.1, None, rng.choice(["a", "b/c", "é"], n)),
                                       dtype="string"),
                         "n": pd.array(np.where(rng.random(n) < 0.2, None, rng.integers(0, 9, n)), dtype="Int64")},
                        index=pd.Index(rng.permutation(n), name="cell"))


@pytest.mark.parametrize("n", [PACK_MIN_VALUES - 1, PACK_MIN_VALUES, 5000])
def test_long_numeric_columns_are_bytes_and_exact(n):
    """At PACK_MIN_VALUES values and beyond, a numeric column (and a categorical's codes) is written as its bytes,
    below as a JSON list; both read back bit for bit (NaN, infinities and -0.0 included)."""
    frame = _long_frame(n)
    value = {"frame": frame, "array": frame["f"].to_numpy().reshape(-1, 1), "series": frame["i"]}
    doc = json.loads(json.dumps(encode(value), allow_nan=False))
    columns = doc["frame"]["__frame__"]["data"]
    packed = n >= PACK_MIN_VALUES
    assert all(("packed" in c) == packed for c in columns[:5]) and ("codes_packed" in columns[5]) == packed
    assert all(("levels" in c) == packed for c in columns[6:])  # extension columns: distinct values and codes
    assert ("packed" in doc["array"]) == packed
    back = decode(doc)
    assert differences(value, back) == []
    for name in ("f", "f32", "i"):  # bit for bit, not only equal: -0.0 stays -0.0
        assert back["frame"][name].to_numpy().tobytes() == frame[name].to_numpy().tobytes()


def test_a_version_1_file_with_long_list_columns_still_reads(tmp_path):
    """Files written before the packing (format version 1: every column a JSON list) are read as before."""
    frame = _long_frame(500)
    doc = json.loads(dump_results({"frame": frame}, tmp_path / "new.json").read_text())
    value = doc["results"]["frame"]["value"]["__frame__"]
    for column in value["data"]:  # rewrite as version 1 wrote it
        if "packed" in column:
            array = np.asarray(decode({"__array__": np.dtype(column["dtype"]).str, "shape": [500],
                                       "packed": column.pop("packed")}))
            column["values"] = [None if math.isnan(x) else "inf" if x == math.inf else "-inf" if x == -math.inf
                                else x for x in array.tolist()] if array.dtype.kind == "f" else array.tolist()
        if "levels" in column:
            source = frame[{"string": "s", "Int64": "n"}[column["dtype"]]]
            column["values"] = [None if pd.isna(v) else encode(v) for v in source.tolist()]
            del column["levels"], column["codes_dtype"], column["codes_packed"]
        if "codes_packed" in column:
            column["codes"] = np.asarray(decode({"__array__": column.pop("codes_dtype"), "shape": [500],
                                                 "packed": column.pop("codes_packed")})).tolist()
    value["index"]["values"].update(values=value["index"]["values"].pop("packed") and frame.index.tolist())
    doc["format_version"] = 1
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc, allow_nan=False))
    assert "packed" not in old.read_text()
    assert differences(frame, load_results(old)["frame"]) == []
