"""The main job behind ``make demo`` (placeholder until the collection and report layers land):
synthesise a corpus, validate it, print per-problem q of its solutions."""

from __future__ import annotations

import sys
from pathlib import Path

from audits.corpus import load_corpus, summarize
from audits.synthetic import synthesize, write_synthetic
from stats.ranking import percentile_table, problem_scores, select_runs


def main() -> int:
    out = Path("reports") / "demo-synthetic.parquet"
    synth = synthesize(n_problems=6, n_tests=6, n_solutions=8, seed=7)
    write_synthetic(synth, out)
    corpus = load_corpus(out)
    print(summarize(corpus).summary())
    runs = select_runs(corpus, environment="quiet", campaign="c0", roles=["reference", "candidate"])
    scores = problem_scores(percentile_table(runs), tau=30)
    table = scores.pivot(index="solution", columns="problem", values="q").round(2)
    print("\nper-problem q (0 = fastest, 1 = slowest) of every solution:")
    print(table.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
