"""Benchmark corpora: synthetic Parquet files of 10^k executions, built once and cached.

Geometry (the row count is honest: exactly ``rows`` executions plus 20 floor
rows per campaign): ``rows / 10^4`` problems x 20 optimization tests x 50
correct reference solutions x 5 repeats x 2 campaigns. The two campaigns are
the "stored" (c0) and the "fresh" (c1) run of the *same* 50 references, with
the planted affine drift c1 = 0.63 c0 + 0.053 s, so calibration has pairs
without adding rows: at 10^7 that is 1,000 problems x 20 tests x 100
(solution, campaign) runs x 5 repeats = 10^7 executions, every one of which
some audit reads (reliability's repeat CV, variance components and the
aggregator comparison use both campaigns; percentiles, discriminability and the
simulator use the first; calibration pairs the two).

Files go to ``benchmarks/results/corpora/`` (git-ignored) and are re-used when
present; building them is not timed.
"""

from __future__ import annotations

import json
from pathlib import Path

from audits.corpus.io import save_corpus
from audits.corpus.synthetic import synthesize

__all__ = ["CACHE", "GEOMETRY", "spec_for", "corpus_path", "ensure_corpus"]

CACHE = Path(__file__).resolve().parent / "results" / "corpora"
GEOMETRY = {"n_tests": 20, "n_solutions": 50, "n_repeats": 5, "campaigns": 2}
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
