"""cProfile of the benchmark's whole audit (load + ``speedaudit audit all``) on one benchmark corpus.

    python -m benchmarks.profile_audit 1e6 /tmp/audit_1e6.prof      # prints the parts, peak RSS, top 70

Not a benchmark (the profiler slows every call); it says where the time goes (docs/performance.md).
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import sys
import time


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python -m benchmarks.profile_audit ROWS OUT.prof", file=sys.stderr)
        return 2
    from audits.corpus.io import load_corpus
    from benchmarks.corpora import ensure_corpus
    from benchmarks.stages import preload, whole_audit

    preload()
    path = ensure_corpus(int(float(argv[0])))
    profile, parts = cProfile.Profile(), {}
    start = time.perf_counter()
    profile.enable()
    corpus = load_corpus(path)
    parts["load"] = time.perf_counter() - start
    whole_audit(corpus, timings=parts)
    profile.disable()
    print(f"total {time.perf_counter() - start:.2f} s; parts " + ", ".join(f"{k} {v:.2f} s" for k, v in parts.items()))
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    profile.dump_stats(argv[1])
    pstats.Stats(argv[1]).sort_stats("cumulative").print_stats(70)
    return 0


if __name__ == "__main__":
    sys.exit(main())
