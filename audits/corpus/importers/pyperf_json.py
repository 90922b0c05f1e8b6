"""Import pyperf / pyperformance JSON result files as a timing corpus.

Mapping (one input file = one build of the code under test):

* one benchmark           -> one ``problem`` with one ``test`` ("benchmark")
* the file's build/commit -> ``solution``: metadata ``commit_id`` when present,
                             otherwise the file name without ``.json(.gz)``
* the machine             -> ``environment``: ``hostname/cpu_model_name`` from
                             the metadata (``--environment`` overrides)
* each process run's values -> ``repeat`` 0, 1, 2, ... in file order; warmup
                             values are dropped and calibration runs (no values, or
                             ``calibrate_loops`` / ``recalibrate_loops`` metadata)
                             skipped
* the file's date         -> ``campaign``: the date (YYYY-MM-DD) of its first run
                             (``--campaign`` overrides)

Values are seconds per loop; benchmarks whose ``unit`` is not ``second`` are
skipped with a reason. The format is read as plain JSON (pyperf itself is not
needed at run time).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from audits.corpus.io import CorpusError, normalize

__all__ = ["PyperfImport", "import_pyperf", "read_pyperf_file"]

_CALIBRATION_KEYS = ("calibrate_loops", "recalibrate_loops", "calibrate_warmups", "recalibrate_warmups")


@dataclass(frozen=True)
class PyperfImport:
    """The imported corpus and what was left out, with reasons."""

    corpus: pd.DataFrame
    skipped: tuple[tuple[str, str], ...]
    warmups_dropped: int
    calibration_runs_skipped: int

    def summary(self) -> str:
        lines = [f"{len(self.corpus):,} executions from {self.corpus['solution'].nunique()} file(s), "
                 f"{self.corpus['problem'].nunique()} benchmark(s); {self.warmups_dropped} warmup values dropped, "
                 f"{self.calibration_runs_skipped} calibration runs skipped"]
        lines += [f"skipped {what}: {why}" for what, why in self.skipped]
        return "\n".join(lines)


def read_pyperf_file(path: str | os.PathLike) -> dict:
    """Parse one pyperf JSON file (plain or gzip), naming the file on error."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such file\n  -> pass pyperf JSON result files (e.g. written by 'pyperf timeit -o')")
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: not a readable pyperf JSON file ({exc})\n"
                          f"  -> pass files written by pyperf/pyperformance (.json or .json.gz)") from exc
    if not isinstance(data, dict) or "benchmarks" not in data or not isinstance(data["benchmarks"], list):
        raise CorpusError(f"{path}: no 'benchmarks' list: this is not a pyperf result file\n"
                          f"  -> pass files written by pyperf/pyperformance")
    return data


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def import_pyperf(
    paths: Sequence[str | os.PathLike],
    *,
    environment: str | None = None,
    campaign: str | None = None,
) -> PyperfImport:
    """Turn pyperf result files into a validated corpus.

    Parameters
    ----------
    paths : sequence of path
        pyperf JSON files (``.json`` or ``.json.gz``); each is one build (solution).
    environment, campaign : str, optional
        Override the machine name and the date taken from the metadata.

    Returns
    -------
    PyperfImport
        ``corpus`` holds one row per measured value.

    Examples
    --------
    >>> result = import_pyperf(["main.json", "patched.json"])  # doctest: +SKIP
    >>> result.corpus.groupby("solution")["duration_s"].median()  # doctest: +SKIP
    """
    if not paths:
        raise CorpusError("import pyperf: no files given\n  -> pass one or more pyperf JSON files")
    rows: dict[str, list] = {k: [] for k in ("environment", "campaign", "problem", "solution", "repeat",
                                              "duration_s", "run", "loops", "timestamp")}
    skipped: list[tuple[str, str]] = []
    warmups = calibrations = 0
    for raw_path in paths:
        path = Path(raw_path)
        data = read_pyperf_file(path)
        common = data.get("metadata") or {}
        for b_index, bench in enumerate(data["benchmarks"]):
            meta = {**common, **(bench.get("metadata") or {})}
            name = str(meta.get("name") or f"benchmark{b_index}")
            unit = meta.get("unit", "second")
            if unit != "second":
                skipped.append((f"{path}:{name}", f"unit is {unit!r}, not seconds"))
                continue
            solution = str(meta.get("commit_id") or _stem(path))
            env = environment or "/".join(str(meta[k]) for k in ("hostname", "cpu_model_name") if meta.get(k)) or "default"
            run_dates = [r.get("metadata", {}).get("date") for r in bench.get("runs", [])]
            first_date = next((d for d in run_dates if d), None) or meta.get("date")
            camp = campaign or (str(first_date)[:10] if first_date else
                                pd.Timestamp(path.stat().st_mtime, unit="s").strftime("%Y-%m-%d"))
            repeat = 0
            for r_index, run in enumerate(bench.get("runs", [])):
                run_meta = {**meta, **(run.get("metadata") or {})}
                values = run.get("values") or []
                warmups += len(run.get("warmups") or [])
                if not values or any(k in (run.get("metadata") or {}) for k in _CALIBRATION_KEYS):
                    calibrations += 1
                    continue
                for value in values:
                    rows["environment"].append(env)
                    rows["campaign"].append(camp)
                    rows["problem"].append(name)
                    rows["solution"].append(solution)
                    rows["repeat"].append(repeat)
                    rows["duration_s"].append(float(value))
                    rows["run"].append(r_index)
                    rows["loops"].append(run_meta.get("loops", np.nan))
                    rows["timestamp"].append(run_meta.get("date"))
                    repeat += 1
    if not rows["problem"]:
        raise CorpusError(f"{', '.join(map(str, paths))}: no benchmark values found "
                          f"({len(skipped)} benchmarks skipped)\n  -> check that the files hold finished pyperf runs")
    frame = pd.DataFrame(rows)
    frame["test"] = "benchmark"
    frame["status"] = "ok"
    frame["role"] = "reference"
    frame["correct"] = True
    frame["test_kind"] = "optimization"
    corpus = normalize(frame, source=", ".join(map(str, paths)))
    return PyperfImport(corpus, tuple(skipped), warmups, calibrations)
