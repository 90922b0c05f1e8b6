"""Import ``hyperfine --export-json`` files as a timing corpus.

Mapping (one file = one hyperfine invocation):

* the file                -> one ``problem``: the file name without ``.json`` (``--problem`` overrides;
                             files given one problem are its campaigns)
* a parameter combination -> one ``test``: ``name=value`` pairs in the file's order, joined by ``, ``
                             (``-P``/``-L`` scans; a value with a space at either end is quoted,
                             ``x='a '``); ``default`` when the run had no parameters
* a command               -> one ``solution``: the k-th command of every parameter combination is the
                             same solution. It is named by its command (or ``--command-name``) when
                             that text is the same in every combination and can be an id (no
                             newline of a multi-line command, no space at either end), else
                             ``command k`` (the exact text of each execution is kept in the
                             ``command`` column); give
                             hyperfine ``-n NAME`` without ``{param}`` to choose the names
* each ``times`` value    -> one ``repeat`` (0, 1, ... in file order); status ``ok`` when its
                             ``exit_codes`` entry is 0 (or absent), ``runtime_error`` otherwise. A file
                             with a 0 s time of an ``ok`` run is refused: hyperfine subtracts the time of
                             starting its shell and writes 0 when a run took less (time such commands
                             with ``--shell=none``)
* the file                -> ``campaign``: the file name, or its path as given when two files have one
                             name (``a/run.json``, ``b/run.json``); ``--campaign`` overrides
* ``environment``         -> ``default`` (hyperfine records no machine; ``--environment`` sets it)

hyperfine writes wall-clock seconds; its per-command ``user``/``system`` means are not per execution
and are not kept.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from audits.corpus.importers._json import check_given_names, file_labels, format_hint, load_json, result_stem
from audits.corpus.io import CorpusError, normalize
from audits.corpus.table import id_defect

__all__ = ["HyperfineImport", "import_hyperfine"]


@dataclass(frozen=True)
class HyperfineImport:
    """The imported corpus and how its solutions were named."""

    corpus: pd.DataFrame
    files: int
    commands: tuple[tuple[str, str], ...]  # (solution, the command texts it stands for)

    def summary(self) -> str:
        c = self.corpus
        failed = int((c["status"] != "ok").sum())
        lines = [f"{len(c):,} executions from {self.files} file(s): {c['problem'].nunique()} problem(s), "
                 f"{c['test'].nunique()} test(s) (parameter combinations), {c['solution'].nunique()} solution(s) "
                 f"(commands); {failed:,} with a non-zero exit code (runtime_error)"]
        # a multi-line command is printed on one line, its control characters escaped (as repr does)
        lines += [f"solution {name!r}: " + "".join(repr(ch)[1:-1] if unicodedata.category(ch) == "Cc" else ch
                                                   for ch in texts)
                  for name, texts in self.commands if name != texts]
        return "\n".join(lines)


def read_hyperfine_file(path: str | os.PathLike) -> dict:
    """Parse one ``hyperfine --export-json`` file, naming the file on error."""
    path = Path(path)
    data = load_json(path, what="a hyperfine JSON file", hint="pass files written by hyperfine --export-json")
    results = data.get("results") if isinstance(data, dict) else None
    if not isinstance(results, list) or not results:
        hint = format_hint(path, data, fmt="hyperfine", hint="pass files written by hyperfine --export-json")
        raise CorpusError(f"{path}: no 'results' list: this is not a hyperfine --export-json file\n  -> {hint}")
    for index, result in enumerate(results):
        if not isinstance(result, dict) or "command" not in result or not isinstance(result.get("times"), list):
            raise CorpusError(f"{path}: result {index + 1} has no 'command' or no 'times' list\n"
                              f"  -> pass files written by hyperfine --export-json (hyperfine >= 1.6 writes 'times')")
    return data


def _test_name(parameters) -> str:
    if not parameters:
        return "default"
    # a value that cannot stand in an id as it is (a space at either end, a newline) is quoted, as repr does
    return ", ".join(f"{k}={v}" if id_defect(str(v)) is None else f"{k}={str(v)!r}" for k, v in parameters.items())


def import_hyperfine(
    paths: Sequence[str | os.PathLike],
    *,
    problem: str | None = None,
    environment: str | None = None,
    campaign: str | None = None,
) -> HyperfineImport:
    """Turn ``hyperfine --export-json`` files into a validated corpus.

    Parameters
    ----------
    paths : sequence of path
        hyperfine JSON files.
    problem : str, optional
        One problem for every file (each file is then one campaign of it).
    environment, campaign : str, optional
        Names for the machine and the session (defaults: ``default`` and the file name).

    Returns
    -------
    HyperfineImport
        ``corpus`` holds one row per timed execution, with its exact ``command``.

    Examples
    --------
    >>> result = import_hyperfine(["sort.json"])  # doctest: +SKIP
    >>> result.corpus.groupby(["test", "solution"])["duration_s"].median()  # doctest: +SKIP
    """
    check_given_names(problem=problem, environment=environment, campaign=campaign)
    if not paths:
        raise CorpusError("import hyperfine: no files given\n  -> pass one or more hyperfine --export-json files")
    if campaign is not None and problem is not None and len(paths) > 1:
        raise CorpusError("import hyperfine: --problem and --campaign give every file the same problem and "
                          "campaign (duplicate executions)\n  -> drop --campaign (each file is then a campaign)")
    rows: dict[str, list] = {k: [] for k in ("problem", "test", "solution", "campaign", "repeat", "duration_s",
                                              "status", "command")}
    commands: dict[str, list[str]] = {}
    for raw_path, label in zip(paths, file_labels(paths, what="hyperfine file")):
        path = Path(raw_path)
        data = read_hyperfine_file(path)
        name = problem or result_stem(path.name)
        # the k-th command of each parameter combination is one solution
        position: dict[str, int] = {}
        slots = []
        for result in data["results"]:
            test = _test_name(result.get("parameters"))
            k = position.get(test, 0)
            position[test] = k + 1
            slots.append((test, k, result))
        texts: dict[int, list[str]] = {}
        for _, k, result in slots:
            texts.setdefault(k, []).append(str(result["command"]))
        # a text that cannot be an id (a multi-line shell command, a trailing space) is named like a scan's
        labels = {k: (t[0] if len(set(t)) == 1 and id_defect(t[0]) is None else f"command {k + 1}")
                  for k, t in texts.items()}
        repeated = {lab for lab in labels.values() if list(labels.values()).count(lab) > 1}
        labels = {k: (f"{lab} (#{k + 1})" if lab in repeated else lab) for k, lab in labels.items()}
        for k, lab in labels.items():
            commands.setdefault(lab, [])
            commands[lab] += [t for t in dict.fromkeys(texts[k]) if t not in commands[lab]]
        for test, k, result in slots:
            times = result["times"]
            codes = result.get("exit_codes") or [0] * len(times)
            if len(codes) != len(times):
                raise CorpusError(f"{path}: command {result['command']!r} has {len(times)} times but "
                                  f"{len(codes)} exit codes\n  -> pass an unmodified hyperfine --export-json file")
            n = len(times)
            zeros = sum(1 for t, code in zip(times, codes) if code == 0 and float(t) <= 0)
            if zeros:
                # hyperfine subtracts the time of starting its shell from each run and writes 0 when a run took
                # less: such a value is no measurement, and the others of the command are cut off at it too
                raise CorpusError(f"{path}: command {result['command']!r}: {zeros} of its {n} times are 0 s, "
                                  f"which hyperfine writes when a run took less than starting its shell (it "
                                  f"subtracts that time)\n  -> run hyperfine again with --shell=none (-N), which "
                                  f"times the command without a shell, or time a longer command")
            rows["problem"] += [name] * n
            rows["test"] += [test] * n
            rows["solution"] += [labels[k]] * n
            rows["campaign"] += [campaign or label] * n
            rows["repeat"] += range(n)
            rows["duration_s"] += [float(t) for t in times]
            rows["status"] += ["ok" if code == 0 else "runtime_error" for code in codes]
            rows["command"] += [str(result["command"])] * n
    frame = pd.DataFrame(rows)
    frame["environment"] = environment or "default"
    frame["role"] = "reference"
    frame["test_kind"] = "optimization"
    frame["command"] = pd.Categorical(frame["command"])
    source = ", ".join(map(str, paths))
    corpus = normalize(frame, source=source)
    return HyperfineImport(corpus, files=len(paths),
                           commands=tuple((lab, ", ".join(t)) for lab, t in sorted(commands.items())))
