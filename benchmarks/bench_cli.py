"""Benchmark how instant the command line feels (issue 26 item 4).

Measured, each as the median of ``--repeats`` fresh processes, interleaved with the baseline so that load
changes hit both alike:

* ``speedaudit --help`` and ``speedaudit COMMAND --help`` for every command (target: 0.3 s wall each);
* ``speedaudit validate`` of a 10^4-row CSV corpus written here (target: 1 s wall);
* the baseline: the same interpreter starting and doing nothing (``python -c pass``), so that the figure
  that moves with the machine is visible beside the ones with a target. Each command's figure is also given
  as a ratio to that baseline (the part that is speedaudit's own: imports and work).

The targets are absolute (the issue states them so); on a loaded machine the ratio to the baseline is the
figure to compare between machines. The load average before and after is printed and kept in the JSON.

Usage::

    .venv/bin/python -m benchmarks.bench_cli               # ~30 s
    .venv/bin/python -m benchmarks.bench_cli --repeats 3   # quicker

Writes ``benchmarks/results/bench_cli-<UTC time>.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.results_file import RESULTS_DIR, write_results

ROOT = Path(__file__).resolve().parents[1]
HELP_TARGET_S = 0.3  # issue 26 item 4
VALIDATE_TARGET_S = 1.0  # issue 26 item 4, for a 10^4-row CSV
VALIDATE_ROWS = 10_000


def _commands() -> list[list[str]]:
    """Every command and sub-command of the CLI, read from its parser (so a new command is benchmarked too)."""
    import argparse as ap

    from audits.cli._main import build_parser

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, ap._SubParsersAction):
                for name in sorted(action.choices):
                    yield path + [name]
                    yield from walk(action.choices[name], path + [name])

    return list(walk(build_parser(), []))


def _write_corpus(path: Path) -> None:
    from audits.corpus.synthetic import synthesize

    corpus = synthesize(n_problems=12, n_tests=5, n_solutions=20, n_repeats=5, seed=1).corpus
    if len(corpus) < VALIDATE_ROWS:
        raise SystemExit(f"bench_cli: the synthetic corpus has {len(corpus)} rows, fewer than {VALIDATE_ROWS}")
    corpus.iloc[:VALIDATE_ROWS].to_csv(path, index=False)


def _wall(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"bench_cli: {' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()[:400]}")
    return elapsed


def measure(*, repeats: int, log=print) -> dict:
    """Median wall seconds of every case and of the baseline (interleaved), with the load before and after."""
    python = sys.executable
    cli = [python, "-m", "audits.cli"]
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        work = Path(tmp)
        _write_corpus(work / "corpus.csv")
        cases = {"speedaudit --help": cli + ["--help"]}
        cases.update({f"speedaudit {' '.join(c)} --help": cli + c + ["--help"] for c in _commands()})
        cases[f"speedaudit validate ({VALIDATE_ROWS:,}-row CSV)"] = cli + ["validate", str(work / "corpus.csv")]
        baseline = [python, "-c", "pass"]
        load_before = os.getloadavg()
        times: dict[str, list[float]] = {name: [] for name in cases}
        base: list[float] = []
        for _ in range(repeats):
            for name, argv in cases.items():
                base.append(_wall(baseline, ROOT))
                times[name].append(_wall(argv, ROOT))
        load_after = os.getloadavg()
    base_s = statistics.median(base)
    rows = []
    for name, values in times.items():
        target = HELP_TARGET_S if name.endswith("--help") else VALIDATE_TARGET_S
        median = statistics.median(values)
        rows.append({"case": name, "median_s": median, "min_s": min(values), "max_s": max(values),
                     "ratio_to_python_startup": median / base_s, "target_s": target, "met": median <= target})
    return {"repeats": repeats, "python_startup_s": base_s, "load_before": load_before, "load_after": load_after,
            "cases": rows}


def report(result: dict, log=print) -> None:
    lo, hi = result["load_before"][0], result["load_after"][0]
    log(f"command line, median of {result['repeats']} fresh processes each (python -c pass: "
        f"{result['python_startup_s'] * 1e3:.0f} ms; load average {lo:.2f} before, {hi:.2f} after"
        + ("" if max(lo, hi) < 0.5 else "; not an idle machine") + ")")
    for row in result["cases"]:
        log(f"  {row['case']:<48} {row['median_s'] * 1e3:6.0f} ms  ({row['ratio_to_python_startup']:4.1f}x startup)"
            f"  target <= {row['target_s']:g} s -> {'MET' if row['met'] else 'MISSED'}")
    missed = [r["case"] for r in result["cases"] if not r["met"]]
    log("command line: every target MET" if not missed else f"command line: MISSED for {', '.join(missed)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh processes per case (median; default 7)")
    parser.add_argument("--out-dir", default=str(RESULTS_DIR), help="where the JSON goes")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    result = measure(repeats=args.repeats)
    report(result)
    write_results("bench_cli", result, out_dir=args.out_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
