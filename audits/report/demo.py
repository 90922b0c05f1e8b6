"""The main job behind ``make demo``: measure this machine, then render every report.

Steps (each prints progress; the whole run is sized for well under 10 minutes on 2 cores):

1. **Collect** the shipped suite ``fixtures/suites/speedbench`` on this machine twice, with
   ``speedaudit collect`` in real sandboxed processes: a *quiet* environment (one worker, no
   background load) and a *busy* one (workers competing with a background CPU/memory load, the
   situation of a busy RL training worker). The campaign is short: ``--repeats 3``, the 3 largest
   optimization tests (:data:`DEMO_OPTIMIZATION_TESTS`, those of the shipped corpora) of four problems
   (:data:`DEMO_PROBLEMS`, ``--problems all`` for every one) and a 1 s time limit. Of those problems it
   times only the programs the stored campaign it is compared with holds (:func:`stored_run`), at most :data:`DEMO_PROGRAMS_PER_PROBLEM` per problem
   (:func:`demo_submissions`: every incorrect and time-limit-exceeded one, and accepted ones spread from
   the fastest to the slowest of the stored run), passed to ``speedaudit collect --submissions-from``;
   so ``make demo`` keeps its length as the suite's pools grow (issue 25), the stored->fresh
   calibration compares the same cells, and the demo prints which subset it times
   (``--all-programs`` times every program). Both corpora land in ``reports/demo/`` (git-ignored)
   under the campaign name ``today``; a rerun reuses them (an interrupted collection resumes from its
   journal; ``--fresh`` measures again).
2. **Render** every report (``speedaudit report``) into ``reports/`` from today's corpora plus the
   shipped corpora in ``fixtures/corpora`` (collected from the same suite earlier on a real machine),
   so calibration compares today's quiet run with the stored one and quiet with busy.
3. Print the path of ``reports/index.html`` as the **last line**.

If collection fails (no sandbox, missing interpreter), the demo says why and what to do, and exits 1.

Examples
--------
``make demo`` or ``python -m audits.report.demo --repeats 3 --out reports``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from audits.corpus.runs import runs_of
from audits.report.inputs import load_corpora, repo_root
from audits.report.render import ReportError, render_reports

__all__: list[str] = []  # run as a script (make demo); nothing outside it imports its names

CAMPAIGN = "today"
#: Problems of the short demo campaign: two filterable (wide workload span) and two that are not.
DEMO_PROBLEMS = ("lis", "sortdedup", "twosum", "unionfind")
#: Programs timed per problem: the demo's pools before issue 25 grew the suite (5-6 accepted + 1
#: time_limit_exceeded + 2 wrong_answer = 8-9), so that ``make demo`` keeps its length (issue 25: "a subset
#: of problems/solutions is fine") while the shipped pools grow to 20+ programs.
DEMO_PROGRAMS_PER_PROBLEM = 9
#: Optimization tests timed per problem: the 3 largest, those of every shipped corpus of the grown suite
#: (``--optimization-tests 3``), so that every cell the demo times has a stored counterpart to calibrate on.
DEMO_OPTIMIZATION_TESTS = 3


@dataclass(frozen=True)
class DemoRun:
    """One collection run of the demo: environment name and the extra ``speedaudit collect`` options."""

    environment: str
    workers: int
    load: str | None
    description: str


class DemoError(RuntimeError):
    """A step of the demo failed; the reason and what to do were already printed."""


def demo_runs(*, workers: int = 2) -> tuple[DemoRun, ...]:
    """The two environments the demo measures: quiet (1 worker, idle) and busy (``workers`` + load)."""
    return (
        DemoRun("quiet", 1, None, "one worker, no background load"),
        DemoRun("busy", workers, "cpu=2,mem=256M", f"{workers} workers plus 2 CPU burners and 256 MB of memory churn"),
    )


def shipped_corpora() -> list[Path]:
    """The corpora that ship with the project (fixtures/corpora/*.parquet), sorted."""
    return sorted((repo_root() / "fixtures" / "corpora").glob("*.parquet"))


@dataclass(frozen=True)
class DemoSelection:
    """The programs the demo times: ``PROBLEM/SOLUTION`` ids per problem, the suite's number of programs per
    problem (``available``), and how they were chosen."""

    ids: dict[str, tuple[str, ...]]
    available: dict[str, int]
    source: str

    @property
    def patterns(self) -> list[str]:
        return [i for ids in self.ids.values() for i in ids]

    def describe(self, tests: dict[str, int]) -> str:
        per = ", ".join(f"{p} {len(ids)} of {self.available[p]}" for p, ids in self.ids.items())
        n_tests = sum(tests.get(p, 0) for p in self.ids)
        return (f"{len(self.ids)} problems ({', '.join(self.ids)}), {len(self.patterns)} programs ({per}; "
                f"{self.source}), {n_tests} optimization tests")


def demo_submissions(stored_rows, suite: Path, problems, *, per_problem: int = DEMO_PROGRAMS_PER_PROBLEM
                     ) -> DemoSelection | None:
    """The programs of ``problems`` the demo times, chosen from the stored run's rows (a corpus frame).

    Per problem: the solutions of the stored run's reference rows that are still in ``suite``; when there
    are more than ``per_problem``, every one outside ``accepted/`` (wrong answers and time-limit-exceeded
    programs, whose statuses the reports show) and accepted ones evenly spaced over the stored run's
    order by median ``duration_s`` on the problem's largest test (most input bytes; on small tests the
    interpreter's start-up hides the order), fastest and slowest included, so the subset keeps the pool's
    spread of speeds (ties by name). None when no problem has a stored program in the suite.
    """
    ref = stored_rows[stored_rows["role"].astype(str) == "reference"]
    ids: dict[str, tuple[str, ...]] = {}
    available: dict[str, int] = {}
    for problem in problems:
        rows = ref[ref["problem"].astype(str) == problem]
        if rows.empty:
            continue
        largest = rows[rows["input_bytes"] == rows["input_bytes"].max()]
        median = largest.groupby(largest["solution"].astype(str), observed=True)["duration_s"].median()
        present = sorted(s for s in set(rows["solution"].astype(str))
                         if (suite / problem / "submissions" / s).exists())
        if not present:
            continue
        subs = suite / problem / "submissions"
        available[problem] = sum(1 for verdict in subs.iterdir() if verdict.is_dir() and not verdict.name.startswith(".")
                                 for entry in verdict.iterdir() if not entry.name.startswith("."))
        chosen = present
        if len(present) > per_problem:
            others = [s for s in present if not s.startswith("accepted/")]
            accepted = sorted((s for s in present if s.startswith("accepted/")),
                              key=lambda s: (median.get(s, float("inf")), s))
            slots = max(2, per_problem - len(others))
            picks = sorted({int(round(x)) for x in np.linspace(0, len(accepted) - 1, min(slots, len(accepted)))})
            chosen = sorted(others + [accepted[i] for i in picks])
        ids[problem] = tuple(f"{problem}/{s}" for s in chosen)
    if not ids:
        return None
    return DemoSelection(ids, available, f"those of the stored run, at most {per_problem} per problem")


def _optimization_tests(suite: Path, problem: str) -> int:
    """The optimization tests the demo times of ``problem``: its largest :data:`DEMO_OPTIMIZATION_TESTS`."""
    return min(DEMO_OPTIMIZATION_TESTS, len(list((suite / problem / "data" / "secret" / "optimization").glob("*.in"))))


def _collect_command(run: DemoRun, suite: Path, out: Path, *, repeats: int, problems: str | None,
                     timeout: float, fresh: bool, submissions_file: Path | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "audits.cli", "collect", str(suite), "--sandbox", "local",
           "--repeats", str(repeats), "--campaign", CAMPAIGN, "--environment", run.environment,
           "--workers", str(run.workers), "--timeout", f"{timeout:g}", "--tests", "optimization",
           "--optimization-tests", str(DEMO_OPTIMIZATION_TESTS), "--out", str(out)]
    if run.load:
        cmd += ["--load", run.load]
    if problems:
        cmd += ["--problems", problems]
    if submissions_file is not None:
        cmd += ["--submissions-from", str(submissions_file)]
    if fresh:
        cmd += ["--overwrite", "--restart"]
    return cmd


def _say(text: str) -> None:
    print(text, flush=True)


def collect(run: DemoRun, suite: Path, out: Path, *, repeats: int, problems: str | None, timeout: float,
            fresh: bool, step: str, submissions_file: Path | None = None) -> Path:
    """Run ``speedaudit collect`` for one environment (output streamed); on failure print why and what to do
    and raise :class:`DemoError`."""
    cmd = _collect_command(run, suite, out, repeats=repeats, problems=problems, timeout=timeout, fresh=fresh,
                           submissions_file=submissions_file)
    _say(f"{step} collecting {suite.name} in the {run.environment} environment ({run.description}), "
         f"{repeats} repeats -> {out}")
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=repo_root())
    if result.returncode != 0 or not out.exists():
        _say(f"speedaudit demo: collecting the {run.environment} run failed (exit status {result.returncode}); "
             "the error is printed above.\n"
             "  what to do: run the command below by hand to see it fail on one job; 'speedaudit collect --help' "
             "lists the sandboxes (--sandbox local needs only Python; bwrap needs bubblewrap: "
             "scripts/system-deps.sh installs it).\n"
             f"  command: {' '.join(cmd)}\n"
             "  the reports can still be rendered from the shipped corpora alone: "
             "speedaudit report fixtures/corpora/*.parquet --out reports")
        raise DemoError(f"collection of the {run.environment} run failed")
    _say(f"{step} {run.environment}: done in {time.perf_counter() - start:.0f} s")
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m audits.report.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="reports", help="report folder (default: reports/)")
    p.add_argument("--suite", default=str(repo_root() / "fixtures" / "suites" / "speedbench"))
    p.add_argument("--repeats", type=int, default=3, help="repeats per job (default 3)")
    p.add_argument("--problems", default=",".join(DEMO_PROBLEMS),
                   help=f"comma-separated problems to measure, or 'all' (default: {','.join(DEMO_PROBLEMS)})")
    p.add_argument("--workers", type=int, default=2, help="workers of the busy run (default 2)")
    p.add_argument("--timeout", type=float, default=1.0,
                   help="per-execution time limit in seconds (default 1: the time-limit-exceeded submissions "
                        "would otherwise dominate the demo's run time)")
    p.add_argument("--n-boot", type=int, default=500, help="bootstrap resamples in the reports (default 500)")
    p.add_argument("--fresh", action="store_true", help="measure again even if today's corpora exist")
    p.add_argument("--all-programs", action="store_true",
                   help=f"time every program of the problems (default: those of the stored campaign, at most "
                        f"{DEMO_PROGRAMS_PER_PROBLEM} per problem, so that the demo keeps its length)")
    p.add_argument("--skip-collect", action="store_true",
                   help="render from the corpora already collected in OUT/demo (no new measurements)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Path(args.out).resolve()
    work = out / "demo"
    work.mkdir(parents=True, exist_ok=True)
    suite = Path(args.suite).resolve()
    started = time.perf_counter()
    _say("speedaudit demo: measure this machine (quiet and busy), then render every report")
    # The demo's short limit is a choice (its time-limit-exceeded submissions would dominate its run time),
    # so collect's warning about it is expected here and said so before it appears.
    _say(f"speedaudit demo: every run is cut at --timeout {args.timeout:g} s; where a problem's own time limit "
         f"is longer, collect warns about it: expected in the demo (only the time-limit-exceeded submissions "
         f"reach the cut; pass --timeout to change it)")
    shipped = shipped_corpora()
    stored = stored_run(shipped)
    submissions_file = None
    if not args.skip_collect and suite.is_dir():
        submissions_file = _announce_subset(args, suite, shipped, stored, work)
    fresh = []
    runs = demo_runs(workers=args.workers)
    for i, run in enumerate(runs, 1):
        path = work / f"{run.environment}-{CAMPAIGN}.parquet"
        step = f"[collect {i}/{len(runs)}]"
        if args.skip_collect or (path.exists() and not args.fresh):
            if not path.exists():
                _say(f"speedaudit demo: --skip-collect but {path} does not exist; run without --skip-collect")
                return 1
            _say(f"{step} {run.environment}: reusing {path} from an earlier run (--fresh measures again)")
        else:
            if not suite.is_dir():
                _say(f"speedaudit demo: suite {suite} not found; pass --suite or check out fixtures/suites")
                return 1
            problems = None if args.problems == "all" else args.problems
            try:
                collect(run, suite, path, repeats=args.repeats, problems=problems, timeout=args.timeout,
                        fresh=args.fresh, step=step, submissions_file=submissions_file)
            except DemoError:
                return 1
        fresh.append(path)
    corpora = fresh + shipped
    _say(f"[report] rendering the reports from {len(fresh)} fresh and {len(shipped)} shipped corpora "
         f"into {out}")
    if stored is None:
        _say("speedaudit demo: note: no stored quiet campaign in fixtures/corpora/*.parquet (incomplete checkout?); "
             "the calibration of stored reference timings is skipped")
    parameters = demo_parameters(n_boot=args.n_boot, stored_run=stored)
    try:
        index = render_reports(corpora, out_dir=out, parameters=parameters,
                               progress=lambda line: _say(f"[report] {line}"))
    except ReportError as exc:
        _say(f"speedaudit demo: a report failed:\n{exc}")
        return 1
    _say(f"speedaudit demo: done in {time.perf_counter() - started:.0f} s; open this page in a browser:")
    _say(str(index.path))
    return 0


def _announce_subset(args, suite: Path, shipped: list[Path], stored: list[str] | None, work: Path) -> Path | None:
    """Choose the programs to time (:func:`demo_submissions`), write them as a --submissions-from file in
    ``work`` and print the subset; None (and the reason printed) when every program is timed."""
    if args.problems == "all":
        problems = sorted(p.parent.name for p in suite.glob("*/problem.yaml"))
    else:
        problems = [p for p in args.problems.split(",") if p]
    tests = {p: _optimization_tests(suite, p) for p in problems}
    selection = None
    why = "--all-programs"
    if not args.all_programs:
        why = "no stored campaign to choose from"
        if stored is not None:
            corpus = load_corpora(shipped)
            rows = corpus[(corpus["environment"].astype(str) == stored[0])
                          & (corpus["campaign"].astype(str) == stored[1])]
            selection = demo_submissions(rows, suite, problems)
            why = f"no program of the stored run {stored[0]}/{stored[1]} is in {suite}"
    if selection is None:
        _say(f"speedaudit demo: timing every program of {len(problems)} problems ({', '.join(problems)}), "
             f"{sum(tests.values())} optimization tests ({why})")
        return None
    path = work / "demo-submissions.txt"
    path.write_text(f"# the programs make demo times (python -m audits.report.demo; from the stored run "
                    f"{stored[0]}/{stored[1]})\n" + "".join(f"{i}\n" for i in selection.patterns))
    _say(f"speedaudit demo: timing {selection.describe(tests)}; --all-programs times every program "
         f"(list: {path})")
    return path


def stored_run(shipped: list[Path]) -> list[str] | None:
    """The stored run today's quiet run is compared with, as ``[environment, campaign]``: the earliest quiet
    campaign of the shipped corpora (by timestamp; :func:`audits.corpus.runs.runs_of`)."""
    if not shipped:
        return None
    corpus = load_corpora(shipped)
    quiet = [s for s in runs_of(corpus, order=corpus.attrs.get("run_order")).of_environment("quiet")
             if s.campaign != CAMPAIGN]
    return [quiet[0].environment, quiet[0].campaign] if quiet else None


def demo_parameters(*, n_boot: int, stored_run: list[str] | None = ("quiet", "quiet-a")) -> dict:
    """Notebook parameters of the demo: today's quiet run against the stored one, quiet against busy today.

    Reliability, aggregation and the simulator look at today's runs (this machine); calibration compares
    ``stored_run`` (a shipped campaign) with today's quiet run, and today's quiet run with today's busy one.
    """
    # without a stored run, no stored -> fresh pair: naming only its fresh half is an error (inputs.named_pairs)
    return {"n_boot": n_boot, "seed": 0, "campaign": CAMPAIGN,
            "stored_run": None if stored_run is None else list(stored_run),
            "fresh_run": None if stored_run is None else ["quiet", CAMPAIGN],
            "source_run": ["quiet", CAMPAIGN], "target_run": ["busy", CAMPAIGN],
            # The short campaign measures 4 of the suite's problems (optimization tests only), so most stored
            # cells have no fresh partner by design: only flag the pairing when almost nothing pairs up.
            "calibration_thresholds": {"pairs_lost_share.warn": 0.95, "pairs_lost_share.fail": 0.99},
            "aggregation_environment": None, "aggregation_campaign": CAMPAIGN,
            "simulation_environment": "quiet", "simulation_campaign": CAMPAIGN}


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("speedaudit demo: interrupted (rerun resumes the collection)", file=sys.stderr)
        sys.exit(130)
