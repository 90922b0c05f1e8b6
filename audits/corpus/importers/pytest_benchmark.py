"""Import pytest-benchmark results (``--benchmark-json`` files and saved runs) as a timing corpus.

Mapping (one file = one saved run = one session):

* each benchmarked test   -> one ``problem``: its ``fullname`` (``tests/test_x.py::test_sort[quick]``),
                             with one ``test`` ("benchmark")
* the code under test     -> ``solution``: ``commit_info.id``, followed by `` (dirty)`` when the
                             working tree had changes; the project name (or ``code``) without git
* each saved run (file)   -> ``campaign``: the file name without ``.json`` (``0001_before``; its path
                             as given when two files of one machine have one name), ``--campaign`` overrides
* the machine             -> ``environment``: node / system / machine / CPU brand / Python
                             implementation and version, those present in ``machine_info``
                             (``--environment`` overrides)
* each round              -> one ``repeat``: the ``stats.data`` values (seconds per iteration, in
                             order); ``stats.iterations`` is kept as ``loops``. A round of 0 s (shorter
                             than a coarse ``--benchmark-timer``'s resolution) is refused, naming the benchmark

A folder given (pytest-benchmark's storage, ``.benchmarks``) stands for every ``*.json`` file under it, each a
saved run named as above.

``--benchmark-json`` always writes the rounds; saved runs (``--benchmark-save`` /
``--benchmark-autosave``) hold them only with ``--benchmark-save-data``, and a file without them is
rejected with that advice.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from audits.corpus.importers._json import (check_given_names, file_labels, format_hint, load_json, result_stem,
                                          skipped_lines)
from audits.corpus.io import CorpusError, normalize

__all__ = ["PytestBenchmarkImport", "import_pytest_benchmark"]


@dataclass(frozen=True)
class PytestBenchmarkImport:
    """The imported corpus: one problem per benchmarked test, one campaign per saved run."""

    corpus: pd.DataFrame
    files: int
    #: Files found in a folder and left out, with the reason: ``(path, why)`` (a file named is read or refused).
    skipped: tuple[tuple[str, str], ...] = ()

    def summary(self) -> str:
        c = self.corpus
        return "\n".join([f"{len(c):,} rounds from {self.files} saved run(s) (campaigns): {c['problem'].nunique()} "
                          f"test(s) (problems), {c['solution'].nunique()} commit(s) (solutions), "
                          f"{c['environment'].nunique()} machine(s)"] + skipped_lines(self.skipped))


def read_pytest_benchmark_file(path: str | os.PathLike) -> dict:
    """Parse one pytest-benchmark JSON file, naming the file on error."""
    path = Path(path)
    data = load_json(path, what="a pytest-benchmark JSON file",
                     hint="pass files written by pytest --benchmark-json or --benchmark-save")
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list) or "machine_info" not in data:
        hint = format_hint(path, data, fmt="pytest-benchmark",
                           hint="pass files written by pytest --benchmark-json or --benchmark-save")
        raise CorpusError(f"{path}: no 'benchmarks' list and 'machine_info': this is not a pytest-benchmark file\n"
                          f"  -> {hint}")
    if not data["benchmarks"]:
        raise CorpusError(f"{path}: the file holds no benchmarks\n  -> run pytest with tests that use the "
                          f"'benchmark' fixture")
    return data


def _expand(paths: Sequence[str | os.PathLike]) -> list[tuple[Path, bool]]:
    """The files to read, each marked whether it was named (its errors are errors) or found in a folder (skipped with
    the reason): each file given, and every ``*.json`` file under each folder given (pytest-benchmark's storage,
    ``.benchmarks/<machine>/NNNN_name.json``), in path order; a folder without one is refused."""
    files: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            files.append((path, True))
            continue
        inside = sorted(p for p in path.rglob("*.json") if p.is_file())
        if not inside:
            raise CorpusError(f"{path}: a folder without .json files: no saved pytest-benchmark runs in it\n"
                              f"  -> pass the storage folder runs were saved into (pytest --benchmark-autosave "
                              f"--benchmark-save-data writes .benchmarks/<machine>/NNNN_*.json), or the files")
        files.extend((p, False) for p in inside)
    return files


def _no_round_data(data: dict) -> str | None:
    """The first benchmark of a saved run without per-round data (``--benchmark-save-data`` not given), or None."""
    for bench in data["benchmarks"]:
        if not (bench.get("stats") or {}).get("data"):
            return str(bench.get("fullname") or bench.get("name"))
    return None


def _read_runs(expanded: list[tuple[Path, bool]]) -> tuple[list[tuple[Path, dict]], list[tuple[str, str]]]:
    """Each readable saved run with per-round data; a file found in a folder that is not one is skipped with the
    reason (pytest --benchmark-autosave alone keeps no rounds), a file named is refused."""
    files, skipped = [], []
    for path, named in expanded:
        try:
            data = read_pytest_benchmark_file(path)
            missing = _no_round_data(data)
            if missing is not None:
                raise CorpusError(f"{path}: benchmark {missing!r} has no per-round data ('stats.data')\n"
                                  f"  -> save runs with --benchmark-save-data (or write --benchmark-json)")
        except CorpusError as exc:
            if named:
                raise
            skipped.append((str(path), str(exc).splitlines()[0].removeprefix(f"{path}: ")))
            continue
        files.append((path, data))
    if not files:
        first, why = skipped[0]
        raise CorpusError(f"{first}: {why}; and every other saved run found is skipped too\n  -> save runs with "
                          f"--benchmark-save-data (pytest --benchmark-autosave alone keeps no rounds)"
                          + "\n" + "\n".join(skipped_lines(skipped)))
    return files, skipped


def _environment(info: dict) -> str:
    cpu = info.get("cpu") or {}
    python = " ".join(str(info[k]) for k in ("python_implementation", "python_version") if info.get(k))
    parts = [info.get("node"), info.get("system"), info.get("machine"), cpu.get("brand_raw") or cpu.get("brand"),
             python or None]
    return " / ".join(dict.fromkeys(str(p) for p in parts if p)) or "default"


def _solution(commit: dict) -> str:
    if commit.get("id"):
        return f"{commit['id']} (dirty)" if commit.get("dirty") else str(commit["id"])
    return str(commit.get("project") or "code")


def import_pytest_benchmark(
    paths: Sequence[str | os.PathLike],
    *,
    environment: str | None = None,
    campaign: str | None = None,
) -> PytestBenchmarkImport:
    """Turn pytest-benchmark JSON files into a validated corpus.

    Parameters
    ----------
    paths : sequence of path
        ``--benchmark-json`` outputs or saved runs (``.benchmarks/<machine>/NNNN_name.json``), or folders whose
        ``*.json`` files (searched in every subfolder) are all saved runs, such as the storage folder
        ``.benchmarks``.
    environment, campaign : str, optional
        One machine name / campaign for every file (defaults: ``machine_info``, the file name).

    Returns
    -------
    PytestBenchmarkImport

    Examples
    --------
    >>> result = import_pytest_benchmark([".benchmarks"])  # doctest: +SKIP
    >>> result.corpus.groupby(["campaign", "problem"])["duration_s"].median()  # doctest: +SKIP
    """
    check_given_names(environment=environment, campaign=campaign)
    if not paths:
        raise CorpusError("import pytest-benchmark: no files given\n  -> pass pytest-benchmark JSON files")
    given = paths
    expanded = _expand(paths)
    if campaign is not None and len(expanded) > 1:
        raise CorpusError("import pytest-benchmark: --campaign gives every file (saved run) one campaign\n"
                          "  -> drop --campaign (each saved run is then its own campaign) or import one file")
    rows: dict[str, list] = {k: [] for k in ("environment", "campaign", "problem", "solution", "repeat",
                                              "duration_s", "loops", "timestamp")}
    file_labels([p for p, _ in expanded], what="saved run")  # a file given twice is refused before any is read
    files, skipped = _read_runs(expanded)
    labels = file_labels([p for p, _ in files], what="saved run")
    envs = [environment or _environment(data.get("machine_info") or {}) for _, data in files]
    # a file name shared on one machine (two sessions) gives way to the path; on two machines it stays the name
    shared = Counter((env, path.name) for (path, _), env in zip(files, envs))
    for (path, data), env, label in zip(files, envs, labels):
        label = label if shared[(env, path.name)] > 1 else path.name
        solution = _solution(data.get("commit_info") or {})
        session = campaign or result_stem(label)
        for bench in data["benchmarks"]:
            stats = bench.get("stats") or {}
            values = stats.get("data")
            name = str(bench.get("fullname") or bench.get("name"))
            n = len(values)  # every benchmark has rounds (_read_runs)
            zeros = sum(1 for v in values if float(v) == 0)
            if zeros:  # a round shorter than the timer's resolution: no measurement
                timer = (bench.get("options") or {}).get("timer") or "the timer"
                raise CorpusError(f"{path}: benchmark {name!r}: {zeros} of its {n} rounds took 0 s, less than the "
                                  f"resolution of its timer ({timer})\n  -> time it with more iterations per round "
                                  f"(benchmark.pedantic(..., iterations=N)) or with the default timer "
                                  f"(--benchmark-timer time.perf_counter)")
            rows["environment"] += [env] * n
            rows["campaign"] += [session] * n
            rows["problem"] += [name] * n
            rows["solution"] += [solution] * n
            rows["repeat"] += range(n)
            rows["duration_s"] += [float(v) for v in values]
            rows["loops"] += [stats.get("iterations", 1)] * n
            rows["timestamp"] += [data.get("datetime")] * n
    frame = pd.DataFrame(rows)
    frame["test"] = "benchmark"
    frame["status"] = "ok"
    frame["role"] = "reference"
    frame["correct"] = True
    frame["test_kind"] = "optimization"
    corpus = normalize(frame, source=", ".join(map(str, given)))
    return PytestBenchmarkImport(corpus, files=len(files), skipped=tuple(skipped))
