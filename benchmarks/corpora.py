"""Benchmark corpora: synthetic Parquet files of 10^k executions, built once and cached.

Geometry (the row count is honest: exactly ``rows`` executions plus 20 floor
rows per campaign): ``rows / 10^4`` problems x 20 optimization tests x 50
correct reference solutions x 5 repeats x 2 campaigns. The two campaigns are
the "stored" (c0) and the "fresh" (c1) run of the *same* 50 references, with
the planted affine drift c1 = 0.63 c0 + 0.053 s, so calibration has pairs
without adding rows: at 10^7 that is 1,000 problems x 20 tests x 100
(solution, campaign) runs x 5 repeats = 10^7 executions, every one of which
some audit reads (reliability, discriminability and the aggregator comparison
audit each campaign as a run of its own; percentiles and the simulator use the
first; calibration pairs the two).

Files go to ``benchmarks/results/corpora/`` (git-ignored) and are re-used when
present; building them is not timed.

Partitioned datasets (:func:`ensure_dataset`, for the Dask path up to 10^8
executions) have the same geometry, generated ``CHUNK_PROBLEMS`` problems at a
time (each chunk its own seed, ``seed * 1_000_003 + chunk``; problems renamed
``p00000``... by their global index; the 20 floor rows per campaign in the first
chunk only) and written ``PARTITION_PROBLEMS`` whole problems per file as each chunk is made, so
that generating 10^8 executions holds one chunk (10^6 rows) in memory.
"""

from __future__ import annotations

import json
from pathlib import Path

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

__all__ = ["CACHE", "GEOMETRY", "CHUNK_PROBLEMS", "spec_for", "corpus_path", "ensure_corpus", "dataset_path",
           "dataset_chunks", "ensure_dataset"]

CACHE = Path(__file__).resolve().parent / "results" / "corpora"
GEOMETRY = {"n_tests": 20, "n_solutions": 50, "n_repeats": 5, "campaigns": 2}
CHUNK_PROBLEMS = 100
PARTITION_PROBLEMS = 10  # 10^5 rows per file: 1,000 files at 10^8 (one problem per file would be 10^4 small files)
PER_PROBLEM = GEOMETRY["n_tests"] * GEOMETRY["n_solutions"] * GEOMETRY["n_repeats"] * GEOMETRY["campaigns"]


def spec_for(rows: int, *, seed: int = 0) -> dict:
    """:func:`audits.corpus.synthetic.synthesize` keywords for a corpus of about ``rows`` executions."""
    n_problems = max(2, int(round(rows / PER_PROBLEM)))
    return dict(n_problems=n_problems, n_tests=GEOMETRY["n_tests"], n_correctness_tests=0,
                n_solutions=GEOMETRY["n_solutions"], n_incorrect=0, n_candidates=0,
                n_repeats=GEOMETRY["n_repeats"], campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)),
                floor_rows=20, seed=seed)


def corpus_path(rows: int, *, seed: int = 0, cache: Path = CACHE) -> Path:
    return Path(cache) / f"synthetic_{int(rows):d}_s{seed}.parquet"


def ensure_corpus(rows: int, *, seed: int = 0, cache: Path = CACHE) -> Path:
    """Build (once) and return the Parquet file of a ``rows``-execution corpus."""
    path = corpus_path(rows, seed=seed, cache=cache)
    meta = path.with_suffix(".json")
    spec = spec_for(rows, seed=seed)
    if path.exists() and meta.exists():
        recorded = json.loads(meta.read_text())
        if recorded.get("spec") == json.loads(json.dumps(spec)):
            return path
    synth = synthesize(**spec)
    save_corpus(synth.corpus, path)
    meta.write_text(json.dumps({"spec": spec, "rows": len(synth.corpus)}, indent=1))
    return path


def dataset_path(rows: int, *, seed: int = 0, cache: Path = CACHE) -> Path:
    return Path(cache) / f"synthetic_{int(rows):d}_s{seed}.dataset"


def dataset_chunks(rows: int, *, seed: int = 0, chunk_problems: int = CHUNK_PROBLEMS,
                   problems_per_partition: int = PARTITION_PROBLEMS):
    """Yield the corpus of ``rows`` executions as validated frames of ``problems_per_partition`` whole
    problems, one chunk of ``chunk_problems`` problems in memory at a time."""
    import pandas as pd

    from audits.corpus.dataset import split_by_problem
    from audits.corpus.io import normalize

    n_problems = spec_for(rows, seed=seed)["n_problems"]
    width = max(5, len(str(n_problems - 1)))
    for chunk, first in enumerate(range(0, n_problems, chunk_problems)):
        size = min(chunk_problems, n_problems - first)
        spec = {**spec_for(rows, seed=seed), "n_problems": size, "seed": seed * 1_000_003 + chunk,
                "floor_rows": 20 if chunk == 0 else 0}
        corpus = synthesize(**spec).corpus
        names = [name if name == "_floor" else f"p{first + int(name[1:]):0{width}d}"
                 for name in corpus["problem"].cat.categories.astype(str)]
        corpus["problem"] = corpus["problem"].cat.rename_categories(pd.Index(names))
        corpus = normalize(corpus, source=f"synthetic chunk {chunk}")  # validated once per chunk
        yield from split_by_problem(corpus, problems_per_partition=problems_per_partition)
        del corpus


def ensure_dataset(rows: int, *, seed: int = 0, cache: Path = CACHE, chunk_problems: int = CHUNK_PROBLEMS,
                   problems_per_partition: int = PARTITION_PROBLEMS) -> Path:
    """Build (once) and return the partitioned dataset of a ``rows``-execution corpus."""
    from audits.corpus.dataset import is_dataset, write_dataset

    path = dataset_path(rows, seed=seed, cache=cache)
    # NAME.dataset.json: NAME.json is the Parquet corpus's (ensure_corpus), which overwrote the dataset's and made
    # every run rebuild it; a dataset described by the old NAME.json (the 1e8 one) is still recognised
    meta, legacy = path.with_suffix(".dataset.json"), path.with_suffix(".json")
    spec = {**spec_for(rows, seed=seed), "chunk_problems": chunk_problems,
            "problems_per_partition": problems_per_partition, "layout": "dataset"}
    for known in (meta, legacy):
        if is_dataset(path) and known.exists() and json.loads(known.read_text()).get("spec") == json.loads(json.dumps(spec)):
            return path
    chunks = dataset_chunks(rows, seed=seed, chunk_problems=chunk_problems,
                            problems_per_partition=problems_per_partition)
    dataset = write_dataset(chunks, path, validate=False)  # each chunk was validated as a whole
    meta.write_text(json.dumps({"spec": spec, "rows": dataset.rows}, indent=1))
    return path
