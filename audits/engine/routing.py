"""Which engine audits a corpus: in memory, or on Dask per partition. One rule for ``speedaudit audit all`` and
:func:`speedaudit.run_all`.

A corpus file (Parquet, CSV, ...) is always audited in memory. A partitioned dataset folder (``speedaudit convert
--partition-by problem``) is audited on Dask when a scheduler is named, when Dask is asked for, or when it holds
more than :data:`MEMORY_ROWS` rows; otherwise it is loaded whole and audited in memory.
"""

from __future__ import annotations

import os

from audits.errors import UserError

__all__ = ["MEMORY_ROWS", "on_dask", "refuse_whole_load"]

#: Datasets with more rows than this are audited on Dask unless told otherwise: about 6 GB as a loaded
#: DataFrame, above which the in-memory audit's peak (2.8 GB at 10^7 rows, docs/performance.md) would pass a
#: 16 GB machine's memory; the Dask engine keeps every process under 6 GB at 10^8 (README, issue 26 item 3).
MEMORY_ROWS = 20_000_000


def on_dask(corpus, *, scheduler: str | None = None, dask: bool = False) -> bool:
    """Whether ``corpus`` (a path, or a loaded DataFrame) is audited on Dask.

    Raises :class:`~audits.errors.UserError` when a scheduler or Dask is asked for a corpus that is not a
    partitioned dataset folder (the Dask engine reads partitions; write them with ``speedaudit convert``).
    """
    # deferred: the dataset reader loads pyarrow, and the command line's parsers import this module
    from audits.corpus.dataset import is_dataset, open_dataset

    if not isinstance(corpus, (str, os.PathLike)) or not is_dataset(corpus):
        if scheduler or dask:
            name = corpus if isinstance(corpus, (str, os.PathLike)) else "a loaded corpus"
            raise UserError(f"{name}: a Dask audit (--scheduler/--dask, scheduler=/dask=) reads a partitioned "
                            f"dataset folder\n  -> write one with 'speedaudit convert CORPUS --out FOLDER "
                            f"--partition-by problem'")
        return False
    return bool(scheduler or dask or open_dataset(corpus).rows > MEMORY_ROWS)


def refuse_whole_load(path) -> None:
    """Raise :class:`~audits.errors.UserError` when ``path`` is a dataset :func:`on_dask` sends to Dask by its size:
    a command or a report that loads a corpus whole (every one but ``audit all``) would hold all its rows. The
    message names the commands that audit it on Dask and render its report from the saved results."""
    if on_dask(path):
        raise UserError(f"{path}: a partitioned dataset of more than {MEMORY_ROWS:,} rows is audited on Dask, not "
                        f"loaded whole\n  -> speedaudit audit all {path} --json all.json (on Dask: every audit that "
                        f"runs there), then speedaudit report --results all.json --out DIR")
