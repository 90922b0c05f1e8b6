"""Import pyperf / pyperformance JSON result files (a whole multi-machine archive) as a timing corpus.

Mapping (one input file = one build of the code under test on one machine, in one session):

* one benchmark             -> one ``problem`` with one ``test`` ("benchmark")
* the file's build          -> ``solution`` (``--solution-from build``, the default): metadata
                               ``commit_id`` when present (else the file name without
                               ``.json(.gz)``), plus its configure variants in brackets, e.g.
                               ``2e91dba437fe5c56c6f8 [JIT]``; ``--solution-from benchmark-suite``:
                               one solution, ``benchmark-suite``, for every file (the benchmarks
                               are the same programs whatever the build), so that builds become
                               campaigns of one solution and pair benchmark by benchmark
* the machine               -> ``environment``: hostname, OS (the system name that starts
                               ``platform``), architecture (``cpu_machine``, ``arch`` or the
                               architecture named in ``platform``), ``cpu_model_name`` when
                               present, the interpreter's pointer size (``64-bit`` / ``32-bit``,
                               from ``python_version`` "3.13.0 (64-bit) ..." or ``python_compiler``
                               "MSC v.1937 32 bit (Intel)") and the machine name in the file name,
                               joined by `` / ``, e.g. ``WIN-5FKPU9U7KDT / Windows / AMD64 / 32-bit``
                               (``--environment`` overrides; the whole ``platform`` string is kept
                               in the ``platform`` column). A 32-bit and a 64-bit interpreter on one
                               host are two environments whatever their files are called.
* the session               -> ``campaign``, by ``--campaign-from``:
                               ``date`` (default): the day (YYYY-MM-DD) of the earliest run of the
                               file's *commit* on that machine -- every file of one commit (its
                               base, JIT, NOGIL... variants) on one machine is one campaign even
                               when the variants ran on another day than the base, and a file that
                               runs past midnight stays in one; the file name when undated;
                               ``file``: the file name without ``.json(.gz)``;
                               ``build``: the build (commit and variants, as the solution above),
                               so that two builds compare as two campaigns -- the solution then
                               defaults to ``benchmark-suite`` (one build per campaign would leave
                               nothing to pair); ``--campaign NAME`` gives every file one name
* each process run          -> ``run`` 0, 1, 2, ... (pyperf's worker processes, in file order)
* each value of a run       -> ``repeat`` 0, 1, 2, ... over the benchmark's values in file order;
                               warmups are dropped and calibration runs (no values, or
                               ``calibrate_loops`` / ``recalibrate_loops`` metadata) skipped

Build ids: a commit id made of 7 to 40 hex digits that is the start of exactly one longer id
in the imported files is that build (``2e91dba`` and ``2e91dba437fe...`` are one build; the
longest id names it). Ids are compared in lower case; other ids are kept as they are.

Variants and machine names from file and folder names follow faster-cpython's bench_runner
archive layout (``results/bm-YYYYMMDD-VERSION-HASH[-FLAGS]/bm-YYYYMMDD-NICK-ARCH-FORK-REF-
VERSION-HASH[-FLAGS].json``, with ``-`` inside a field written ``%2d``): the machine name is
``NICK-ARCH`` (e.g. ``pythonperf1_win32-x86``), and the flags are the fields after the field
that starts the file's commit id (e.g. ``JIT``, ``NOGIL``, ``PYTHON_UOPS``). Builds configured
with ``--enable-experimental-jit`` or ``--disable-gil`` (pyperf's ``python_config_args``) are the
variants ``JIT`` / ``NOGIL`` whatever their names (``JIT=interpreter`` for
``--enable-experimental-jit=interpreter``). Names of other layouts are not parsed.

Two files that give the same solution on the same machine in the same campaign are two sessions:
their campaigns are the campaign followed by the file name (its path as given when two files have one
name), e.g. ``2024-01-24 (rerun.json)``. A file given twice (also through a folder) is an error.

Values are seconds per loop; benchmarks whose ``unit`` is not ``second`` are skipped with a
reason. Directories are searched for ``*.json`` / ``*.json.gz``; JSON files in them that are not
pyperf results (pystats, configuration) are skipped with the reason. The format is read as plain
JSON (pyperf itself is not needed at run time).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.api.types import union_categoricals

from audits.corpus.importers._json import (check_given_names, file_labels, format_hint, load_json, result_stem,
                                          skipped_lines)
from audits.corpus.io import CorpusError, normalize
from audits.corpus.table import result_file_format

__all__ = ["PyperfImport", "import_pyperf"]

_CALIBRATION_KEYS = ("calibrate_loops", "recalibrate_loops", "calibrate_warmups", "recalibrate_warmups")
# Architecture names as platform.platform() and uname report them (looked up, the string is not split).
_ARCHITECTURES = ("x86_64", "amd64", "AMD64", "i386", "i686", "x86", "aarch64", "arm64", "armv7l", "armv6l",
                  "ppc64le", "ppc64", "s390x", "riscv64", "loongarch64")
_HEX = re.compile(r"[0-9a-f]{7,40}")
_BENCH_RUNNER = re.compile(r"^bm-\d{8}-")
_CONFIG_FLAGS = (("--enable-experimental-jit", "JIT"), ("--disable-gil", "NOGIL"), ("--with-pydebug", "DEBUG"))
_BITS = re.compile(r"\b(\d{2})[ -]bit\b")
from audits.corpus.importers.choices import CAMPAIGN_FROM, SOLUTION_FROM  # noqa: E402 (light: --help lists them)
SUITE_SOLUTION = "benchmark-suite"


@dataclass(frozen=True)
class PyperfImport:
    """The imported corpus, what it holds and what was left out, with reasons."""

    corpus: pd.DataFrame
    skipped: tuple[tuple[str, str], ...]
    warmups_dropped: int
    calibration_runs_skipped: int
    files: int = 0
    builds: int = 0
    merged_build_ids: dict = field(default_factory=dict)
    split_campaigns: tuple[str, ...] = ()
    variants: int = 0
    campaign_from: str = "date"
    solution_from: str = "build"

    @property
    def machines(self) -> int:
        return int(self.corpus["environment"].nunique())

    @property
    def benchmarks(self) -> int:
        return int(self.corpus["problem"].nunique())

    def summary(self) -> str:
        c = self.corpus
        lines = [
            f"{len(c):,} values from {self.files} file(s): {self.builds} build(s) "
            f"({self.variants or c['solution'].nunique()} with their variants), {self.machines} machine(s), "
            f"{self.benchmarks} benchmark(s), {c['campaign'].nunique()} campaign(s); "
            f"{self.warmups_dropped:,} warmup values dropped, {self.calibration_runs_skipped:,} calibration runs skipped",
            "machines: " + "; ".join(sorted(map(str, c["environment"].unique()))),
            f"campaigns from the {self.campaign_from}, solutions from the {self.solution_from}",
        ]
        if self.merged_build_ids:
            lines.append("build ids merged (a short id and the full id of one commit): "
                         + ", ".join(f"{short} -> {full}" for short, full in sorted(self.merged_build_ids.items())))
        lines += [f"same solution, machine and campaign in several files; campaigns named by file: {name}"
                  for name in self.split_campaigns]
        return "\n".join(lines + skipped_lines(self.skipped))


def read_pyperf_file(path: str | os.PathLike) -> dict:
    """Parse one pyperf JSON file (plain or gzip), naming the file on error."""
    path = Path(path)
    data = load_json(path, what="a pyperf result file",
                     hint="pass pyperf JSON result files (e.g. written by 'pyperf timeit -o')")
    hint = format_hint(path, data, fmt="pyperf", hint="pass files written by pyperf/pyperformance")
    if not isinstance(data, dict) or "benchmarks" not in data or not isinstance(data["benchmarks"], list):
        raise CorpusError(f"{path}: no 'benchmarks' list: this is not a pyperf result file\n  -> {hint}")
    if result_file_format(data) != "pyperf":  # e.g. pytest-benchmark's 'benchmarks', which have no 'runs'
        raise CorpusError(f"{path}: its 'benchmarks' have no 'runs': this is not a pyperf result file\n  -> {hint}")
    return data


def _stem(path: Path) -> str:
    return result_stem(path.name) if path.name.endswith((".json", ".json.gz")) else path.stem


def _expand(paths: Sequence[str | os.PathLike]) -> list[tuple[Path, bool]]:
    """Files to read, each marked whether it was named (errors) or found in a folder (skipped)."""
    found: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.name.endswith((".json", ".json.gz")) and p.is_file())
            found.extend((p, False) for p in inside)
        else:
            found.append((path, True))
    return found


def normalize_build_ids(ids) -> dict[str, str]:
    """Map each build id to its canonical form: a hex id that starts exactly one longer one becomes it.

    Parameters
    ----------
    ids : iterable of str
        Commit ids as found (any case, short or full).

    Returns
    -------
    dict
        ``{id as given: canonical id}``. Hex ids (7-40 digits) are lower-cased; an
        id that is the prefix of several different longer ids stays as it is
        (ambiguous); other ids map to themselves.

    Examples
    --------
    >>> normalize_build_ids(["2e91dba", "2E91DBA437FE5C56", "abc1234", "main"])
    {'2e91dba': '2e91dba437fe5c56', '2E91DBA437FE5C56': '2e91dba437fe5c56', 'abc1234': 'abc1234', 'main': 'main'}
    """
    ids = list(dict.fromkeys(ids))
    hexes = sorted({i.lower() for i in ids if _HEX.fullmatch(i.lower())}, key=len, reverse=True)
    canonical: dict[str, str] = {}
    for h in hexes:
        longer = [o for o in hexes if len(o) > len(h) and o.startswith(h)]
        # the longest that start with h must all be prefixes of one another (one commit)
        target = h
        if longer:
            top = longer[0]
            if all(top.startswith(o) for o in longer):
                target = canonical.get(top, top)
        canonical[h] = target
    return {i: canonical.get(i.lower(), i) if _HEX.fullmatch(i.lower()) else i for i in ids}


def _name_fields(name: str) -> list[str] | None:
    if not _BENCH_RUNNER.match(name):
        return None
    return [f.replace("%2d", "-").replace("%2D", "-") for f in name.split("-")]


def _bench_runner_machine(path: Path) -> str | None:
    fields = _name_fields(_stem(path))
    return f"{fields[2]}-{fields[3]}" if fields and len(fields) >= 6 else None


def _name_flags(name: str, build: str) -> list[str]:
    fields = _name_fields(name)
    if not fields or not _HEX.fullmatch(build.lower()):
        return []
    for index in range(len(fields) - 1, 1, -1):
        f = fields[index].lower()
        if _HEX.fullmatch(f) and (build.lower().startswith(f) or f.startswith(build.lower())):
            return [x for x in fields[index + 1:] if x]
    return []


def _config_flags(meta: dict) -> list[str]:
    args = str(meta.get("python_config_args") or "")
    flags = []
    for option, flag in _CONFIG_FLAGS:
        for match in re.finditer(re.escape(option) + r"(=\S+)?", args):
            value = (match.group(1) or "=yes")[1:].strip("'\"").lower()
            if value in ("no", "false", "0", "off"):
                continue
            named = flag if value in ("yes", "true", "1", "on") else f"{flag}={value}"  # e.g. JIT=interpreter
            if named not in flags:
                flags.append(named)
    return flags


def _machine(meta: dict, file_machine: str | None) -> str:
    """hostname / OS / architecture / CPU model / machine name from the file name, those present.

    The OS is the system name that starts pyperf's ``platform`` (``platform.platform()``:
    ``Linux``, ``Windows``, ``macOS``...); the kernel and C-library versions that follow are
    left out of the name because they differ between two interpreters on one machine
    (``...-with-glibc2.2.5`` vs ``...-with-fedora-31``) and change with each kernel update.
    The whole string is kept in the ``platform`` column. The interpreter's pointer size
    (:func:`_pointer_bits`) is part of the machine: a 32-bit and a 64-bit build on one host differ.
    """
    platform = str(meta.get("platform") or "")
    fields = platform.split("-")
    arch = meta.get("cpu_machine") or meta.get("arch") or next((a for a in _ARCHITECTURES if a in fields), None)
    parts = [meta.get("hostname"), fields[0] if platform else None, arch, meta.get("cpu_model_name"),
             _pointer_bits(meta), file_machine]
    return " / ".join(dict.fromkeys(str(p) for p in parts if p)) or "default"


def _pointer_bits(meta: dict) -> str | None:
    """``64-bit`` / ``32-bit`` from pyperf's ``python_version`` ("3.13.0 (64-bit) revision ...") or, failing
    that, ``python_compiler`` ("MSC v.1937 64 bit (AMD64)", "[MSC v.1937 32 bit (Intel)]"); None when neither
    says."""
    for key in ("python_version", "python_compiler"):
        match = _BITS.search(str(meta.get(key) or ""))
        if match:
            return f"{match.group(1)}-bit"
    return None


def _first_date(data: dict) -> pd.Timestamp | None:
    dates = [run.get("metadata", {}).get("date") for bench in data["benchmarks"] for run in bench.get("runs", [])]
    dates.append((data.get("metadata") or {}).get("date"))
    dates = [str(d) for d in dates if d]
    try:
        parsed = pd.to_datetime(pd.Series(dates, dtype=object), errors="coerce", format="mixed").dropna()
    except (ValueError, TypeError):  # e.g. dates with and without a time zone in one file
        parsed = pd.to_datetime(pd.Series([d[:19] for d in dates], dtype=object), errors="coerce",
                                format="mixed").dropna()
    return parsed.min() if len(parsed) else None


def import_pyperf(
    paths: Sequence[str | os.PathLike],
    *,
    environment: str | None = None,
    campaign: str | None = None,
    campaign_from: str = "date",
    solution_from: str | None = None,
) -> PyperfImport:
    """Turn pyperf result files (or folders of them) into a validated corpus.

    Parameters
    ----------
    paths : sequence of path
        pyperf JSON files (``.json`` or ``.json.gz``) or folders searched for them.
    environment, campaign : str, optional
        One machine name / campaign for every file instead of the ones derived
        from the metadata (module docstring).
    campaign_from : {"date", "file", "build"}, default "date"
        What names a campaign (module docstring): the day of the commit's earliest run on the machine,
        the file, or the build.
    solution_from : {"build", "benchmark-suite"}, optional
        What names a solution: the build (default), or one ``benchmark-suite`` solution for every file
        (the default when ``campaign_from="build"``, so that builds pair as campaigns).

    Returns
    -------
    PyperfImport
        ``corpus`` holds one row per measured value, with ``run`` (the process
        run) and ``loops``; the summary counts files, builds, machines and benchmarks.

    Examples
    --------
    >>> result = import_pyperf(["results/"])  # doctest: +SKIP
    >>> result.corpus.groupby(["environment", "solution"])["duration_s"].median()  # doctest: +SKIP
    >>> builds = import_pyperf(["base.json", "jit.json"], campaign_from="build")  # doctest: +SKIP
    """
    check_given_names(environment=environment, campaign=campaign)
    if not paths:
        raise CorpusError("import pyperf: no files given\n  -> pass one or more pyperf JSON files or folders")
    if campaign_from not in CAMPAIGN_FROM:
        raise CorpusError(f"import pyperf: --campaign-from {campaign_from!r} is not one of {', '.join(CAMPAIGN_FROM)}"
                          f"\n  -> use date (default), file or build")
    if solution_from is None:
        solution_from = SOLUTION_FROM[1] if campaign_from == "build" else SOLUTION_FROM[0]
    if solution_from not in SOLUTION_FROM:
        raise CorpusError(f"import pyperf: --solution-from {solution_from!r} is not one of {', '.join(SOLUTION_FROM)}"
                          f"\n  -> use build (default) or benchmark-suite")
    if campaign is not None and campaign_from != "date":
        raise CorpusError(f"import pyperf: --campaign {campaign!r} and --campaign-from {campaign_from} both name the "
                          f"campaigns\n  -> pass one of them")
    skipped: list[tuple[str, str]] = []
    plans = []  # one per file: its rows (a small frame) and what names its build, machine and session
    warmups = calibrations = 0
    for path, named in _expand(paths):
        try:
            data = read_pyperf_file(path)
        except CorpusError as exc:
            if named:
                raise
            skipped.append((str(path), str(exc).splitlines()[0].removeprefix(f"{path}: ")))
            continue
        if not data["benchmarks"]:
            skipped.append((str(path), "no benchmarks in the file"))
            continue
        plan, n_warmups, n_calibrations = _read_file(path, data, environment, skipped)
        warmups += n_warmups
        calibrations += n_calibrations
        if plan is not None:
            plans.append(plan)
        del data  # an archive is ~1.5 GB of JSON: keep only each file's rows
    if not plans:
        raise CorpusError(f"{', '.join(map(str, paths))}: no benchmark values found "
                          f"({len(skipped)} benchmarks or files skipped)\n"
                          f"  -> pass finished pyperf result files, or folders holding them")

    canonical = normalize_build_ids([p["commit"] for p in plans if p["commit"]])
    merged = {i: c for i, c in canonical.items() if c != i}
    for plan in plans:
        build = canonical[plan["commit"]] if plan["commit"] else _stem(plan["path"])
        plan["build"] = build
        plan["label"] = f"{build} [{','.join(plan['flags'])}]" if plan["flags"] else build
        plan["solution"] = plan["label"] if solution_from == "build" else SUITE_SOLUTION
    _name_campaigns(plans, campaign_from)

    # Two files with one solution on one machine in one campaign are two sessions: campaign + file name
    sessions = Counter((env, plan["solution"], plan["session"]) for plan in plans for env in plan["environments"])
    split = []
    for plan, label in zip(plans, file_labels([plan["path"] for plan in plans], what="pyperf file")):
        clash = any(sessions[(env, plan["solution"], plan["session"])] > 1 for env in plan["environments"])
        if campaign is not None:
            if clash:
                raise CorpusError(
                    f"{plan['path']}: another file also holds build {plan['solution']!r} on the same machine, "
                    f"and --campaign {campaign!r} gives both one campaign (duplicate executions)\n"
                    f"  -> import them without --campaign (each file is then its own campaign) or separately")
            plan["campaign"] = campaign
        else:
            plan["campaign"] = f"{plan['session']} ({label})" if clash else plan["session"]
            if clash:
                split.append(plan["campaign"])

    frame = _concat(plans)
    frame["test"] = "benchmark"
    frame["status"] = "ok"
    frame["role"] = "reference"
    frame["correct"] = True
    frame["test_kind"] = "optimization"
    source = ", ".join(map(str, paths)) if len(paths) <= 3 else f"{len(paths)} paths ({paths[0]}, ...)"
    corpus = normalize(frame, source=source)
    return PyperfImport(corpus, tuple(skipped), warmups, calibrations, files=len(plans),
                        builds=len({p["build"] for p in plans}), merged_build_ids=merged,
                        split_campaigns=tuple(sorted(split)), variants=len({p["label"] for p in plans}),
                        campaign_from=campaign_from, solution_from=solution_from)


def _name_campaigns(plans: list[dict], campaign_from: str) -> None:
    """Each plan's ``session`` (its campaign before the same-session split), by ``campaign_from``.

    ``date``: the earliest day over the files of the plan's commit (``build``, variants included) on each of
    its machines -- the JIT and NOGIL files of a commit measured the day before its base build join the base
    build's campaign; undated files keep their file name. ``file``: the file name without its suffix.
    ``build``: the build label (commit and variants).
    """
    if campaign_from == "file":
        for plan in plans:
            plan["session"] = _stem(plan["path"])
        return
    if campaign_from == "build":
        for plan in plans:
            plan["session"] = plan["label"]
        return
    first: dict[tuple[str, str], str] = {}
    for plan in plans:
        if plan["dated"]:
            for env in plan["environments"]:
                key = (plan["build"], env)
                first[key] = min(first.get(key, plan["day"]), plan["day"])
    for plan in plans:
        days = [first[(plan["build"], env)] for env in plan["environments"] if (plan["build"], env) in first]
        plan["session"] = min(days) if plan["dated"] and days else plan["day"]


def _read_file(path: Path, data: dict, environment: str | None, skipped: list) -> tuple[dict | None, int, int]:
    """One file's rows and naming facts; benchmarks in other units are added to ``skipped``."""
    common = data.get("metadata") or {}
    first = data["benchmarks"][0].get("metadata") or {}
    commit = common.get("commit_id") or first.get("commit_id")
    commit = str(commit) if commit else None
    flags: list[str] = []
    if commit:
        for name in (path.parent.name, _stem(path)):
            flags += [f for f in _name_flags(name, commit) if f not in flags]
    flags += [f for f in _config_flags({**first, **common}) if f not in flags]
    date = _first_date(data)
    machine = _bench_runner_machine(path)
    cols: dict[str, list] = {k: [] for k in ("environment", "problem", "repeat", "duration_s", "run", "loops",
                                              "timestamp", "platform")}
    environments = set()
    warmups = calibrations = 0
    for b_index, bench in enumerate(data["benchmarks"]):
        meta = {**common, **(bench.get("metadata") or {})}
        name = str(meta.get("name") or f"benchmark{b_index}")
        unit = meta.get("unit", "second")
        if unit != "second":
            skipped.append((f"{path}:{name}", f"unit is {unit!r}, not seconds"))
            continue
        env = environment or _machine(meta, machine)
        repeat = run_index = 0
        for run in bench.get("runs", []):
            run_meta = run.get("metadata") or {}
            values = run.get("values") or []
            warmups += len(run.get("warmups") or [])
            if not values or any(k in run_meta for k in _CALIBRATION_KEYS):
                calibrations += 1
                continue
            environments.add(env)
            n = len(values)
            cols["environment"] += [env] * n
            cols["problem"] += [name] * n
            cols["repeat"] += range(repeat, repeat + n)
            cols["duration_s"] += values
            cols["run"] += [run_index] * n
            cols["loops"] += [run_meta.get("loops", meta.get("loops", np.nan))] * n
            cols["timestamp"] += [run_meta.get("date")] * n
            cols["platform"] += [meta.get("platform")] * n
            repeat += n
            run_index += 1
    if not cols["problem"]:
        return None, warmups, calibrations
    rows = pd.DataFrame({
        "environment": pd.Categorical(cols["environment"]), "problem": pd.Categorical(cols["problem"]),
        "repeat": np.asarray(cols["repeat"], dtype=np.int64),
        "duration_s": pd.to_numeric(pd.Series(cols["duration_s"], dtype=object), errors="coerce").to_numpy(float),
        "run": np.asarray(cols["run"], dtype=np.int64), "loops": pd.to_numeric(pd.Series(cols["loops"])),
        "timestamp": pd.Series(cols["timestamp"], dtype=object), "platform": pd.Categorical(cols["platform"]),
    })
    day = date.strftime("%Y-%m-%d") if date is not None else path.name  # undated: the file is the session
    return ({"path": path, "rows": rows, "commit": commit, "flags": flags, "day": day, "dated": date is not None,
             "environments": environments}, warmups, calibrations)


def _concat(plans: list[dict]) -> pd.DataFrame:
    """The files' rows as one frame; text columns stay categorical (union of the files' categories)."""
    frames = [plan.pop("rows") for plan in plans]
    sizes = np.array([len(f) for f in frames])
    out = {}
    for column in frames[0].columns:
        if isinstance(frames[0][column].dtype, pd.CategoricalDtype):
            # categories as plain objects: a file whose column is all missing has no string categories
            parts = [f[column].cat.set_categories(pd.Index(f[column].cat.categories, dtype=object)) for f in frames]
            out[column] = union_categoricals(parts)
        else:
            out[column] = np.concatenate([f[column].to_numpy() for f in frames])
    for column, values in (("campaign", [p["campaign"] for p in plans]), ("solution", [p["solution"] for p in plans]),
                           ("file", [str(p["path"]) for p in plans])):
        codes, labels = pd.factorize(pd.Series(values, dtype=object))
        out[column] = pd.Categorical.from_codes(np.repeat(codes, sizes), categories=list(labels))
    return pd.DataFrame(out)
