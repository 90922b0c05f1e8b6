"""Same figures before and after a speed change: the whole audit's JSON of a benchmark corpus, to 1e-12.

A performance change must not move any figure. This check writes the JSON of
the benchmark's whole audit (:func:`benchmarks.stages.whole_audit`, i.e.
``speedaudit audit all`` with calibration quiet · c0 -> quiet · c1 and the
simulator on quiet · c0 over the pinned reward environments) of the synthetic
corpus of ``--rows`` executions (default 10^5, :func:`benchmarks.corpora.ensure_corpus`)
and compares it with one written before the change::

    git stash; python -m benchmarks.json_check write /tmp/before.json; git stash pop
    python -m benchmarks.json_check compare /tmp/before.json        # exit 1 and the paths when they differ

Two JSON trees agree when they have the same structure, the same strings,
booleans and nulls, and every pair of numbers differs by at most
``rtol * max(1, |a|, |b|)`` (default ``rtol`` = 1e-12; NaN, written as null,
only equals null). Every difference is printed with its path, so a change that
moves a figure says which one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

__all__ = ["audit_json", "differences", "main"]


def audit_json(rows: int = 10**5) -> dict:
    """The whole audit's JSON (as :func:`json.loads` reads it back) of the ``rows``-execution benchmark corpus."""
    from audits.corpus.io import load_corpus
    from audits.protocol.findings import to_jsonable
    from benchmarks.corpora import ensure_corpus
    from benchmarks.stages import whole_audit

    corpus = load_corpus(ensure_corpus(rows))
    return json.loads(json.dumps(to_jsonable(whole_audit(corpus).to_dict()), sort_keys=True))


def differences(a, b, *, rtol: float = 1e-12, path: str = "$") -> list[str]:
    """Paths where two JSON trees differ (structure, value, or numbers by more than ``rtol`` relative).

    Examples
    --------
    >>> differences({"x": [1.0, "a"]}, {"x": [1.0 + 1e-15, "a"]})
    []
    >>> differences({"x": [1.0, "a"]}, {"x": [1.1, "b"]})
    ['$.x[0]: 1.0 != 1.1', "$.x[1]: 'a' != 'b'"]
    """
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))[:5]} in one only"]
        return [d for k in sorted(a) for d in differences(a[k], b[k], rtol=rtol, path=f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, rtol=rtol, path=f"{path}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isnan(a) and math.isnan(b):
            return []
        return [] if abs(a - b) <= rtol * max(1.0, abs(a), abs(b)) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="the whole audit's JSON before vs after a change (to 1e-12)")
    parser.add_argument("action", choices=("write", "compare"))
    parser.add_argument("json", help="write: where to write the JSON; compare: the JSON written before the change")
    parser.add_argument("--rows", type=lambda t: int(float(t)), default=10**5,
                        help="benchmark corpus size in executions (default 1e5)")
    parser.add_argument("--rtol", type=float, default=1e-12, help="relative tolerance of numbers (default 1e-12)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    now = audit_json(args.rows)
    seconds = time.perf_counter() - start
    if args.action == "write":
        Path(args.json).write_text(json.dumps(now, indent=1, sort_keys=True))
        print(f"wrote the whole audit's JSON of {args.rows:.0e} executions to {args.json} ({seconds:.1f} s)")
        return 0
    found = differences(json.loads(Path(args.json).read_text()), now, rtol=args.rtol)
    if found:
        print(f"{len(found)} figure(s) differ from {args.json} by more than {args.rtol:g} (relative):")
        print("\n".join(found[:50]))
        return 1
    print(f"the whole audit's JSON of {args.rows:.0e} executions equals {args.json} to {args.rtol:g} ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
