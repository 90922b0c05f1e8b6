"""``speedaudit collect``: time a suite's submissions in a sandbox and write a corpus."""

from __future__ import annotations

import argparse
import sys

from audits.cli._common import add_connection_options, positive_seconds, read_security, whole_number
from audits.collect.background_load import LoadSpec
from audits.collect.candidates import load_candidates, parse_candidate_option
from audits.collect.languages import DEFAULT_PYTHON
from audits.collect.sandbox import Limits, SandboxError, make_sandbox, parse_size
from audits.corpus.schema import OPTIONAL_DEFAULTS, TEST_KINDS
from audits.errors import UserError

_DESCRIPTION = """\
Run every submission of a suite (a folder of Kattis problem packages) on every test,
REPEATS times, in a sandbox, in a seeded interleaved order, and write a timing corpus
(Parquet). Every campaign also times the sandbox's floor (the empty program of each
language; role 'floor'). Results go to a journal beside --out as they arrive
(<out>.journal.jsonl); if the campaign is interrupted or killed, run the same command
again and it finishes the remaining jobs (exactly one row per job).

What cannot be used is skipped and listed with the reason, never a crash: submissions
that do not build (the compiler's first error line), Python 2 or non-compiling Python,
problems whose output validator does not build, tests without .in or .ans. When sizes
cannot tell the optimization tests apart, a probe run of the references picks the
heaviest (kept in <out>.probe.json; --no-probe chooses by name).
"""

_EPILOG = """\
sandboxes (programs are treated as adversaries; docs/collecting.md has the threat model):
  auto           the default: bwrap when it works here, else local
  local          as root: an unprivileged uid with rlimits, no network, a private root view
                 (system dirs and the program read-only, a quota'd tmpfs scratch, own /proc)
  bwrap          the same view inside bubblewrap, plus its own user and pid namespaces
  cmd:TEMPLATE   any other sandbox command; {argv} expands to the program's arguments, and
                 {workdir} {stdin} {wall_s} {cpu_s} {memory_bytes} {memory_mb} {nproc} are filled in,
                 e.g. --sandbox 'cmd:prlimit --as={memory_bytes} -- {argv}'

instruction counts (--measure instructions; docs/collecting.md "Instruction counts"):
  every run is counted by valgrind (cachegrind, no cache simulation; perf cannot count inside
  the sandboxes, whose seccomp filter refuses perf_event_open) and its count is the row's
  'instructions' (empty, with the reason in 'reason', where there is none: killed at the
  limit, a fork without exec, an exec). The report comes through a descriptor the program
  cannot reach, so a program that prints a fake summary changes nothing. Each language's
  floor is first timed natively and counted; --timeout (and --cpu-limit) are scaled by that
  slowdown (here about 50x for Python and 60x for C++: start-up is what valgrind slows most,
  so a 2 s --timeout becomes about 100 s), and duration_s, cpu_s and max_rss_kb are then the
  counted runs'. PYTHONHASHSEED=0 in every counted run. The tool, its version, the
  slowdowns and limits go to <out>.campaign.json. local or bwrap only.

examples:
  speedaudit collect fixtures/suites/speedbench --problems twosum --repeats 3 --timeout 3 \\
      --submission 'twosum/accepted/counter.py' --submission 'twosum/accepted/two_pointers.py' \\
      --submission 'twosum/wrong_answer/*' --out corpus.parquet
  speedaudit collect fixtures/suites/speedbench --optimization-tests 2 --tests optimization \\
      --submission 'lis/accepted/bisect_tails.py' --submission 'lis/wrong_answer/*' --repeats 2 \\
      --timeout 3 --out subset.parquet
  speedaudit collect fixtures/suites/speedbench --problems twosum --submission 'twosum/accepted/*dict*' \\
      --adaptive --confidence 0.95 --max-repeats 6 --timeout 3 --tests optimization \\
      --optimization-tests 2 --out adaptive.parquet
  speedaudit collect archive/ --sandbox bwrap --workers 2 --load cpu=2,mem=1G \\
      --environment busy --campaign day1 --out busy.parquet
  speedaudit collect archive/ --scheduler tls://127.0.0.1:8786 --tls-ca-file ca.pem \\
      --tls-cert client.pem --tls-key client.key --out corpus.parquet
"""


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


SUBSET_HELP = {
    "optimization_tests": "keep only each problem's N largest optimization tests (by input bytes, ties by name), "
                          "e.g. 3 for a campaign of 3 optimization tests per problem (default: all)",
    "submission": "keep only the submissions whose PROBLEM/SOLUTION id matches this fnmatch pattern, e.g. "
                  "'lis/accepted/*' or '*/accepted/*.cpp' (the id is the corpus's problem and solution columns, "
                  "e.g. lis/accepted/bisect_tails.py; a name equal to the pattern matches too); repeatable, never "
                  "split on commas; a pattern that matches nothing is an error",
    "submissions_from": "the same patterns from a file, one per line taken as written (lines starting with # and "
                        "blank lines ignored)",
}


def add_subset_options(group) -> None:
    """--optimization-tests, --submission, --submissions-from (``speedaudit collect`` and ``speedaudit suite``)."""
    group.add_argument("--optimization-tests", type=whole_number(1), default=None, metavar="N",
                       help=SUBSET_HELP["optimization_tests"])
    group.add_argument("--submission", action="append", default=None, metavar="PATTERN",
                       help=SUBSET_HELP["submission"])
    group.add_argument("--submissions-from", default=None, metavar="FILE", help=SUBSET_HELP["submissions_from"])


def subset_patterns(args: argparse.Namespace) -> list[str] | None:
    """The submission patterns of --submission and --submissions-from (None when neither is given)."""
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.collect.suite import SuiteError, read_patterns

    patterns = list(args.submission or [])
    if args.submissions_from is not None:
        try:
            patterns += read_patterns(args.submissions_from)
        except SuiteError as exc:
            raise UserError(f"--submissions-from {exc}") from None
    return patterns if (args.submission is not None or args.submissions_from is not None) else None


def _pins(text: str | None):
    """--pin-cpus: None (not given), 'auto' (the flag alone) or a list of core numbers."""
    if text is None or text == "auto":
        return text
    try:
        return tuple(int(part) for part in _names(text))
    except ValueError:
        raise UserError(f"--pin-cpus {text!r}: give core numbers separated by commas (e.g. 0,1), or the flag "
                        f"alone for the last --workers cores") from None


def _run(args: argparse.Namespace) -> int:
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.collect.campaign import CampaignError, CampaignSpec, WorkDir, run_campaign
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.collect.suite import SuiteError, load_suite

    try:
        make_sandbox(args.sandbox)
        load = LoadSpec.parse(args.load)
        limits = Limits(wall_s=args.timeout, memory_bytes=args.memory, cpu_s=args.cpu_limit,
                        output_bytes=args.output_limit, nproc=args.nproc, stderr_limit=args.stderr_limit,
                        scratch_bytes=args.scratch_limit)
        security = read_security(args)
        kinds = tuple(_names(args.tests))
        bad = [k for k in kinds if k not in TEST_KINDS]
        if bad or not kinds:
            raise UserError(f"--tests {args.tests!r}: use correctness, optimization or both (comma-separated)")
        repeats = args.repeats if args.repeats is not None else (3 if args.adaptive else 5)
        if not args.adaptive:
            given = [flag for flag, value in (("--max-repeats", args.max_repeats), ("--confidence", args.confidence),
                                              ("--tau", args.tau), ("--adaptive-target", args.adaptive_target))
                     if value is not None]
            if given:
                raise UserError(f"{', '.join(given)} set(s) the adaptive repeats: add --adaptive")
        adaptive = {"adaptive": True, "max_repeats": args.max_repeats,
                    "confidence": 0.95 if args.confidence is None else args.confidence,
                    "tau": 30.0 if args.tau is None else args.tau,
                    "adaptive_target": args.adaptive_target or "gate"} if args.adaptive else {}
        spec = CampaignSpec(environment=args.environment, campaign=args.campaign, sandbox=args.sandbox,
                            repeats=repeats, **adaptive, workers=args.workers, limits=limits, seed=args.seed,
                            floor_every=args.floor_every, load=load, python=args.python, test_kinds=kinds,
                            cxx_std=args.cxx_std,
                            scheduler=args.scheduler, security=security, connect_timeout_s=args.connect_timeout,
                            pin_cpus=_pins(args.pin_cpus),
                            measure=args.measure)
        if args.scheduler and not load.empty:
            print("speedaudit: note: --load runs on this machine, not on the Dask workers", file=sys.stderr)
        problems = _names(args.problems) if args.problems else None
        suite = load_suite(args.suite, n_largest_optimization=args.n_largest, problems=problems,
                           python=args.python, sandbox=args.sandbox, progress=not args.no_progress,
                           optimization_tests=args.optimization_tests, submissions=subset_patterns(args))
        for line in suite.selection:
            print(f"selection: {line}", file=sys.stderr)
        work = WorkDir.make(args.work_dir)  # the probe builds the references where the campaign will
        try:
            plan = _probe_and_plan(args, suite, spec, work)
        except BaseException:
            work.discard()
            raise
        if args.strict and plan.skipped:  # the suite's skips and the submissions that do not build
            for skip in plan.skipped:
                print(f"  skipped {skip.name}: {skip.reason}", file=sys.stderr)
            raise UserError(f"{args.suite}: {len(plan.skipped)} item(s) skipped (listed "
                            f"above) and --strict makes any skip an error\n  -> fix or remove them, or run "
                            f"without --strict")
        print(f"campaign {spec.environment}/{spec.campaign}: {len(plan.jobs):,} jobs "
              f"({len(suite.problems)} problems, "
              f"{f'{spec.repeats} to {spec.max_repeats} repeats (adaptive)' if spec.adaptive else f'{spec.repeats} repeats'}"
              f"{' planned' if spec.adaptive else ''}, sandbox {spec.sandbox}, "
              f"{'scheduler ' + spec.scheduler if spec.scheduler else f'{spec.workers} worker(s)'}, "
              f"cores: {spec.describe_pinning()}), "
              f"{len(plan.skipped)} skipped", file=sys.stderr)
        result = run_campaign(plan, out=args.out, progress=not args.no_progress, keep_journal=args.keep_journal,
                              restart=args.restart, overwrite=args.overwrite)
    except (CampaignError, SandboxError, SuiteError, ValueError) as exc:
        raise UserError(str(exc)) from exc
    print(result.summary())
    return 0 if result.out is not None else 1


def _probe_and_plan(args: argparse.Namespace, suite, spec, work):
    """The optimization-test probe (unless --no-probe), the candidates and the plan, in ``work`` (one build of each
    program for the probe and the campaign)."""
    # deferred: speedaudit --help stays light (issue 26 item 4: within 0.3 s)
    from audits.collect.campaign import plan_campaign, probe_tests

    if not args.no_probe:
        suite = probe_tests(suite, spec, out=args.out, work=work, progress=not args.no_progress)
        for problem in suite.problems:
            if problem.probe_seconds:
                print(f"{problem.id}: optimization tests: {problem.optimization_choice}", file=sys.stderr)
    candidates = None
    if args.candidates:  # other programs for the same problems, shuffled in with the references
        candidates = load_candidates([parse_candidate_option(o) for o in args.candidates],
                                     [p.id for p in suite.problems])
        print(candidates.summary(), file=sys.stderr)
    for warning in suite.warnings(timeout_s=args.timeout):
        print(f"speedaudit: warning: {warning}", file=sys.stderr)
    return plan_campaign(suite, spec, work_dir=work, candidates=candidates, progress=not args.no_progress)


def register(commands, audit_commands) -> None:
    p = commands.add_parser(
        "collect", help="time a suite's submissions in a sandbox and write a timing corpus",
        description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("suite", help="a folder of Kattis problem packages (or one package)")
    p.add_argument("--out", required=True, help="the corpus to write (.parquet); the journal goes beside it")
    g = p.add_argument_group("sandbox and limits")
    g.add_argument("--sandbox", default="auto", metavar="auto|local|bwrap|cmd:TEMPLATE",
                   help="where programs run (default: auto, the strongest available; see below)")
    g.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="SECONDS",
                   help="wall-clock limit per run; a timeout is recorded at the limit (default: 10)")
    g.add_argument("--memory", type=_size, default="1G", metavar="SIZE",
                   help="address-space limit per run, e.g. 512M, 1G (default: 1G)")
    g.add_argument("--cpu-limit", type=positive_seconds, default=None, metavar="SECONDS",
                   help="CPU-time limit per run (default: none; the wall-clock limit applies)")
    g.add_argument("--output-limit", type=_size, default="64M", metavar="SIZE",
                   help="standard output kept per run; more is a runtime_error (default: 64M)")
    g.add_argument("--nproc", type=whole_number(1), default=64, metavar="N",
                   help="processes/threads a program may have (default: 64)")
    g.add_argument("--stderr-limit", type=_size, default="1M", metavar="SIZE",
                   help="standard error a program may write; more is a runtime_error (default: 1M)")
    g.add_argument("--scratch-limit", type=_size, default="256M", metavar="SIZE",
                   help="size of each program's private tmpfs (scratch, /tmp, /dev/shm) (default: 256M)")
    g.add_argument("--cxx-std", default=None, metavar="STD",
                   help="C++ standard of every C++ build, e.g. c++20 (default: the newest g++ supports, of "
                        "gnu++23, gnu++20, gnu++17)")
    g.add_argument("--measure", choices=("instructions",), default=None,
                   help="also count every run's instructions (valgrind; the 'instructions' column): the runs are "
                        "then slowed (limits scaled by the measured slowdown); see 'instruction counts' below")
    g.add_argument("--python", default=DEFAULT_PYTHON, metavar="PATH",
                   help=f"interpreter for Python programs; must be readable by an unprivileged uid "
                        f"(default: {DEFAULT_PYTHON})")
    g = p.add_argument_group("campaign")
    g.add_argument("--repeats", type=whole_number(1), default=None,
                   help="runs of every submission on every test (default: 5; with --adaptive the first round's, "
                        "default 3)")
    g.add_argument("--campaign", default=OPTIONAL_DEFAULTS["campaign"], metavar="NAME",
                   help=f"campaign name written into the rows (default: {OPTIONAL_DEFAULTS['campaign']})")
    g.add_argument("--environment", default=OPTIONAL_DEFAULTS["environment"], metavar="NAME",
                   help=f"environment name written into the rows (default: {OPTIONAL_DEFAULTS['environment']})")
    g.add_argument("--workers", type=whole_number(1), default=1, metavar="N",
                   help="parallel runs on this machine (default: 1; more runs faster but measures a busier machine)")
    g.add_argument("--load", default=None, metavar="cpu=N,mem=SIZE",
                   help="background load while collecting: N CPU spinners and a memory hog (e.g. cpu=2,mem=1G)")
    g.add_argument("--pin-cpus", nargs="?", const="auto", default=None, metavar="CORES",
                   help="pin each worker to one core (worker i on the i-th of CORES, e.g. 0,1; the flag alone: the "
                        "last --workers cores) and run the background load on the other cores; recorded per row "
                        "(cpu) and in <out>.campaign.json")
    g.add_argument("--seed", type=int, default=0, help="seed of the interleaved order (default: 0)")
    g.add_argument("--floor-every", type=whole_number(1), default=20, metavar="N",
                   help="one floor run per N jobs, at least REPEATS per language (default: 20)")
    g.add_argument("--scheduler", default=None, metavar="tls://HOST:PORT",
                   help="run the jobs on a Dask distributed cluster secured with TLS (suite and work dir on a "
                        "shared filesystem); plain tcp:// is refused")
    add_connection_options(g)
    g = p.add_argument_group("adaptive repeats (docs/collecting.md, docs/noise.md)")
    g.add_argument("--adaptive", action="store_true",
                   help="after --repeats runs of everything, re-execute round by round only the cells whose gate "
                        "decision (or rank) is still ambiguous, until decided or at --max-repeats")
    g.add_argument("--max-repeats", type=whole_number(2), default=None, metavar="N",
                   help="with --adaptive: the most runs of one cell (default: 15)")
    g.add_argument("--confidence", type=float, default=None, metavar="C",
                   help="with --adaptive: a gate is decided when P(pass) >= C or <= 1 - C (default: 0.95)")
    g.add_argument("--tau", type=float, default=None, metavar="PERCENTILE",
                   help="with --adaptive: the gate threshold in percentile points (default: 30)")
    g.add_argument("--adaptive-target", choices=("gate", "rank"), default=None,
                   help="with --adaptive: decide each solution's gate (default) or each cell's order against "
                        "its pool")
    g = p.add_argument_group("suite selection")
    g.add_argument("--problems", default=None, metavar="A,B", help="only these problem ids")
    g.add_argument("--strict", action="store_true",
                   help="refuse to start when anything is skipped (a package, test, submission that does not "
                        "build, or validator)")
    g.add_argument("--tests", default=",".join(TEST_KINDS), metavar="KINDS",
                   help="test kinds to run: correctness, optimization or both (default: both)")
    g.add_argument("--n-largest", type=whole_number(0), default=6, metavar="N",
                   help="without data/secret/optimization/, the N largest secret inputs are optimization tests "
                        "(default: 6)")
    add_subset_options(g)
    g.add_argument("--candidates", action="append", metavar="NAME=DIR",
                   help="also time the programs in DIR (one sub-folder per problem id) as role candidate, solution "
                        "ids NAME/<program>, shuffled into the same campaign as the references (repeatable: "
                        "two sets give a shared-execution 'speedaudit compare CORPUS --a NAME --b OTHER')")
    g.add_argument("--no-probe", action="store_true",
                   help="when sizes cannot tell the optimization tests apart, choose them by name instead of a "
                        "probe run of the references (one run of up to 3 references per tied test)")
    g = p.add_argument_group("files")
    g.add_argument("--work-dir", default=None, metavar="DIR",
                   help="where programs are built and run (default: a fresh folder in /dev/shm, else the temp dir, removed "
                        "at the end); must be reachable by an unprivileged uid")
    g.add_argument("--keep-journal", action="store_true", help="keep the journal after writing the corpus")
    g.add_argument("--restart", action="store_true", help="discard an existing journal instead of resuming it")
    g.add_argument("--overwrite", action="store_true", help="collect again into an existing --out")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
