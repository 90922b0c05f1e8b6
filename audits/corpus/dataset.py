"""Partitioned corpora: a folder of Parquet files, each holding whole problems, read lazily.

A corpus too large for one machine's memory (10^8 executions of an RL run take
~30 GB as a DataFrame) is stored as a **dataset**: a folder with one Parquet file
per partition and a manifest, ``_speedaudit_dataset.json``::

    corpus.dataset/
        _speedaudit_dataset.json   {"format": "speedaudit-dataset", "version": 1,
                                    "partition_by": "problem", "rows": N,
                                    "partitions": [{"file": "part-000000.parquet",
                                                    "rows": n, "problems": ["p0", ...]}, ...]}
        part-000000.parquet
        part-000001.parquet
        ...

Every problem lives in exactly one file (``--partition-by problem``), so any
figure that is computed per problem (reference pools, collapsed cells,
per-problem scores) needs one file only, and a corpus-wide figure is a
combination of per-problem aggregates (:mod:`audits.engine.partitioned`).

Why the problem stays a column and the files are numbered (rather than a Hive
``problem=NAME/`` folder per problem): problem names are data and may contain
any character, including ``/``, ``=``, ``%`` and names longer than a file
name may be; a name in a path would have to be encoded, and decoding paths is
parsing names. The manifest lists every file's problems (JSON escapes any
character), so a reader plans the work without opening a file.

Writing is atomic: the partitions go into a hidden temporary folder beside the
target, which is renamed onto the target only when every file and the manifest
are complete; on any error nothing is left behind. Each partition is
validated (:func:`audits.corpus.table.normalize`) before it is written, and again
when it is read, with the file named in any message.

Examples
--------
>>> from audits.corpus.synthetic import synthesize
>>> corpus = synthesize(n_problems=3, n_repeats=2, seed=1).corpus
>>> ds = save_dataset(corpus, "/tmp/doc.dataset")                    # doctest: +SKIP
>>> ds.n_partitions, ds.rows == len(corpus)                          # doctest: +SKIP
(4, True)
>>> [len(part) for part in ds.partitions()]                          # doctest: +SKIP
[48, 288, 288, 288]
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as pads

from audits.corpus.table import CorpusError, normalize, read_table
from stats._groups import column_codes

__all__ = ["CorpusDataset", "is_dataset", "open_dataset", "save_dataset", "write_dataset", "split_by_problem"]

MANIFEST = "_speedaudit_dataset.json"
FORMAT = "speedaudit-dataset"
VERSION = 1
PARTITION_BY = ("problem",)
#: Name columns whose categories are sorted on reading (``status``, ``role``, ``test_kind`` keep their
#: enumeration order): the loaded dataset and every partition number names in the same order, whatever the
#: order of the files or of the rows (set semantics; the partitioned audits rely on it).
NAME_COLUMNS = ("environment", "campaign", "problem", "test", "solution", "language")


def _sorted_names(corpus: pd.DataFrame) -> pd.DataFrame:
    for column in NAME_COLUMNS:
        if column in corpus.columns and isinstance(corpus[column].dtype, pd.CategoricalDtype):
            cats = corpus[column].cat.categories
            order = sorted(cats.astype(str))
            if list(cats.astype(str)) != order:
                corpus[column] = corpus[column].cat.reorder_categories(pd.Index(order, dtype=cats.dtype))
    return corpus


def is_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder holding a dataset manifest."""
    path = Path(path)
    return path.is_dir() and (path / MANIFEST).is_file()


@dataclass(frozen=True)
class Partition:
    """One file of a dataset: its path, its row count and the problems it holds."""

    path: Path
    rows: int
    problems: tuple[str, ...]


@dataclass(frozen=True)
class CorpusDataset:
    """A partitioned corpus on disk (see the module docstring); nothing is read until asked.

    Attributes
    ----------
    path : Path
        The dataset folder.
    partitions_info : tuple of Partition
        The files in manifest order, each with its rows and problems.
    """

    path: Path
    partitions_info: tuple[Partition, ...]
    partition_by: str = "problem"

    @property
    def rows(self) -> int:
        return int(sum(p.rows for p in self.partitions_info))

    @property
    def n_partitions(self) -> int:
        return len(self.partitions_info)

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(name for p in self.partitions_info for name in p.problems)

    def read_partition(self, index: int, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """Read and validate partition ``index`` (a corpus of whole problems)."""
        info = self.partitions_info[index]
        frame = read_table(info.path)
        if columns is not None:
            frame = frame[[c for c in frame.columns if c in set(columns)]]
        corpus = _sorted_names(normalize(frame, source=str(info.path)))
        found = set(map(str, corpus["problem"].cat.categories[np.unique(corpus["problem"].cat.codes)]))
        if found != set(info.problems) or len(corpus) != info.rows:
            raise CorpusError(f"{info.path}: holds {len(corpus):,} rows of {len(found)} problems, the manifest "
                              f"{self.path / MANIFEST} says {info.rows:,} rows of {len(info.problems)}\n"
                              f"  -> the dataset was changed after it was written; write it again with "
                              f"'speedaudit convert --partition-by problem'")
        return corpus

    def partitions(self, *, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """Yield the partitions one at a time (only one is in memory at once)."""
        for index in range(self.n_partitions):
            yield self.read_partition(index, columns=columns)

    def load(self) -> pd.DataFrame:
        """The whole corpus in memory (validated as one table: the duplicate-key check spans files).

        pyarrow reads the files into one table, unifying their dictionaries, so
        this costs what reading one Parquet file of the same rows costs.
        """
        files = [str(p.path) for p in self.partitions_info]
        try:
            table = pads.dataset(files, format="parquet").to_table()
        except Exception as exc:  # pyarrow's message names the file
            raise CorpusError(f"{self.path}: cannot be read as a dataset ({type(exc).__name__}: {exc})\n"
                              f"  -> write it again with 'speedaudit convert --partition-by problem'") from exc
        corpus = _sorted_names(normalize(table.to_pandas(), source=str(self.path)))
        if len(corpus) != self.rows:
            raise CorpusError(f"{self.path}: holds {len(corpus):,} rows, its manifest says {self.rows:,}\n"
                              f"  -> write it again with 'speedaudit convert --partition-by problem'")
        return corpus


def open_dataset(path: str | os.PathLike) -> CorpusDataset:
    """Open a dataset folder (reads only the manifest)."""
    path = Path(path)
    manifest = path / MANIFEST
    if not path.is_dir():
        raise CorpusError(f"{path}: is not a folder; a partitioned dataset is a folder with {MANIFEST}\n"
                          f"  -> write one with 'speedaudit convert CORPUS --out FOLDER --partition-by problem'")
    if not manifest.is_file():
        raise CorpusError(f"{path}: is a folder without {MANIFEST}, not a speedaudit dataset\n"
                          f"  -> write one with 'speedaudit convert CORPUS --out FOLDER --partition-by problem'")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{manifest}: cannot be read ({exc})\n  -> write the dataset again") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise CorpusError(f"{manifest}: not a {FORMAT} manifest of version {VERSION}\n"
                          f"  -> write the dataset again with this version of speedaudit")
    parts = []
    seen: set[str] = set()
    entries = meta.get("partitions", [])
    if not isinstance(entries, list):
        raise CorpusError(f"{manifest}: 'partitions' is not a list\n  -> write the dataset again with "
                          f"'speedaudit convert CORPUS --out FOLDER --partition-by problem'")
    for index, entry in enumerate(entries):
        # a manifest edited by hand or cut short: said with the entry, not a KeyError or TypeError
        if not (isinstance(entry, dict) and isinstance(entry.get("file"), str) and isinstance(entry.get("rows"), int)
                and not isinstance(entry.get("rows"), bool) and entry["rows"] >= 0
                and isinstance(entry.get("problems"), list)):
            shown = json.dumps(entry, ensure_ascii=False)
            raise CorpusError(f"{manifest}: partition {index} is not an entry of 'file' (a name), 'rows' (a count) "
                              f"and 'problems' (a list): {shown[:200]}{'...' if len(shown) > 200 else ''}\n"
                              f"  -> write the dataset again with 'speedaudit convert CORPUS --out FOLDER "
                              f"--partition-by problem'")
        file = path / entry["file"]
        if Path(entry["file"]).name != entry["file"]:
            raise CorpusError(f"{manifest}: partition file {entry['file']!r} is not a plain file name\n"
                              f"  -> write the dataset again")
        problems = tuple(str(p) for p in entry["problems"])
        twice = seen.intersection(problems)
        if twice:
            raise CorpusError(f"{manifest}: problem {sorted(twice)[0]!r} is listed in two partitions\n"
                              f"  -> write the dataset again")
        seen.update(problems)
        parts.append(Partition(path=file, rows=int(entry["rows"]), problems=problems))
    if not parts:
        raise CorpusError(f"{manifest}: lists no partitions\n  -> write the dataset again")
    return CorpusDataset(path=path, partitions_info=tuple(parts), partition_by=str(meta.get("partition_by")))


def split_by_problem(corpus: pd.DataFrame, *, problems_per_partition: int = 1) -> Iterator[pd.DataFrame]:
    """Split a corpus into frames of whole problems (``problems_per_partition`` each, in name order).

    One stable argsort of the problem codes; problems are taken in the order of
    their names (``str`` order), so the split is a function of the rows as a set.
    """
    if problems_per_partition < 1:
        raise ValueError("problems_per_partition must be >= 1")
    codes, k = column_codes(corpus["problem"])
    if isinstance(corpus["problem"].dtype, pd.CategoricalDtype):
        names = np.asarray(corpus["problem"].cat.categories.astype(str), dtype=object)
    else:
        names = np.asarray(pd.unique(corpus["problem"].dropna().astype(str)), dtype=object)
        codes = pd.Index(names).get_indexer(corpus["problem"].astype(str))
        k = len(names)
    present = np.bincount(codes[codes >= 0], minlength=k) > 0
    rank = np.full(k, -1, dtype=np.int64)
    by_name = [c for c in np.argsort(names, kind="stable") if present[c]]
    rank[by_name] = np.arange(len(by_name)) // problems_per_partition
    order = np.argsort(rank[codes], kind="stable")
    bounds = np.searchsorted(rank[codes][order], np.arange(rank.max() + 2))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if hi > lo:
            yield corpus.iloc[order[lo:hi]].reset_index(drop=True)


def write_dataset(partitions: Iterable[pd.DataFrame], path: str | os.PathLike, *,
                  partition_by: str = "problem", validate: bool = True) -> CorpusDataset:
    """Write frames of whole problems as a dataset folder, atomically.

    ``partitions`` may be a generator (a synthetic corpus written partition by
    partition never exists in memory as a whole). Each frame is validated
    (``validate=True``) and must hold problems no earlier frame held.

    Raises
    ------
    CorpusError
        For an invalid partition, a problem in two partitions, or a target that
        cannot be written; then nothing is written.
    """
    if partition_by not in PARTITION_BY:
        raise CorpusError(f"--partition-by {partition_by}: not supported\n  -> use one of {', '.join(PARTITION_BY)}")
    path = Path(path)
    if path.exists() and not is_dataset(path):
        raise CorpusError(f"{path}: exists and is not a speedaudit dataset; will not replace it\n"
                          f"  -> choose a new output folder, or remove it first")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    except OSError as exc:
        raise CorpusError(f"{path}: cannot write into the folder {str(path.parent)!r} ({exc.strerror or exc})\n"
                          f"  -> choose an output folder you can write") from exc
    entries = []
    seen: dict[str, int] = {}
    try:
        for index, frame in enumerate(partitions):
            corpus = normalize(frame, source=f"{path} (partition {index})") if validate else frame
            corpus = corpus.assign(**{c: corpus[c].cat.remove_unused_categories() for c in corpus.columns
                                      if isinstance(corpus[c].dtype, pd.CategoricalDtype)})
            codes = np.unique(corpus["problem"].cat.codes.to_numpy())
            problems = sorted(str(corpus["problem"].cat.categories[c]) for c in codes)
            for name in problems:
                if name in seen:
                    raise CorpusError(f"{path}: problem {name!r} is in partitions {seen[name]} and {index}\n"
                                      f"  -> give each partition whole problems")
                seen[name] = index
            file = f"part-{index:06d}.parquet"
            corpus.to_parquet(tmp / file, index=False)
            entries.append({"file": file, "rows": int(len(corpus)), "problems": problems})
        if not entries:
            raise CorpusError(f"{path}: no partitions to write (the corpus has no rows)")
        meta = {"format": FORMAT, "version": VERSION, "partition_by": partition_by,
                "rows": int(sum(e["rows"] for e in entries)), "partitions": entries}
        (tmp / MANIFEST).write_text(json.dumps(meta, ensure_ascii=False, indent=0), encoding="utf-8")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700 folders
        if path.exists():  # replacing an older dataset: move it aside, then swap
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, old / "d")
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except OSError as exc:
        raise CorpusError(f"{path}: writing failed ({exc.strerror or exc}); nothing was written\n"
                          f"  -> free space or choose another output folder") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return open_dataset(path)


def save_dataset(corpus: pd.DataFrame, path: str | os.PathLike, *, partition_by: str = "problem",
                 problems_per_partition: int = 1) -> CorpusDataset:
    """Write an in-memory corpus as a dataset, one partition per ``problems_per_partition`` problems."""
    if partition_by not in PARTITION_BY:
        raise CorpusError(f"--partition-by {partition_by}: not supported\n  -> use one of {', '.join(PARTITION_BY)}")
    return write_dataset(split_by_problem(corpus, problems_per_partition=problems_per_partition), path,
                         partition_by=partition_by)
