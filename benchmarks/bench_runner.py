"""Benchmark the sandbox runner against a bare subprocess loop and against hyperfine.

(a) Throughput, per sandbox (``--sandboxes local,bwrap``): the runner (``local``: a
    sealed in-memory copy of stdin, a leased unprivileged uid, rlimits, no new
    privileges, an empty network namespace, a private IPC and mount namespace with a
    new root on a quota'd tmpfs and its own /proc, a seccomp filter, a cgroup per run,
    the launcher, the wall-clock watch, output and stderr caps; ``bwrap``: the same
    around bubblewrap with the inner launcher) against a bare ``subprocess.run`` loop
    over the same commands (same stdin file, stdout captured): for ``local`` the plain
    program, which isolates nothing; for ``bwrap`` the same bwrap command line the
    sandbox uses (without the launchers, cgroup or uid), so the ratio is the runner's
    own cost, not bubblewrap's. Target: the runner reaches >= 95 % of the bare loop's
    runs/s under each (issue 17 item 4, issue 26 item 5).
(c) The floor per language and sandbox: the median measured ``wall_s`` of the empty
    C++ and Python programs (:func:`audits.collect.languages.floor_program`, what a
    campaign records as its ``floor`` rows) under each sandbox, runs interleaved.
(b) Accuracy: the runner's mean measured duration of ``python3 -c pass`` against
    ``hyperfine -N`` on the same machine in the same run. Target: means within 2 ms.

(a) alternates single runs (bare, runner, bare, ...), (b) alternates blocks of
hyperfine and runner runs, so that drift in machine load hits both sides alike. Timings on a shared machine are noisy; read the spread too.

Usage::

    .venv/bin/python benchmarks/bench_runner.py            # ~1 minute
    .venv/bin/python benchmarks/bench_runner.py --quick    # ~15 s
    .venv/bin/python benchmarks/bench_runner.py --profile  # + where the runner's own CPU goes (cProfile)
    .venv/bin/python benchmarks/bench_runner.py --launcher /tmp/sa-launch-old   # another build of launcher.c

``--launcher`` runs the same benchmark with another compiled launcher (e.g. an older
revision's: ``git show REV:audits/collect/launcher.c > /tmp/old.c && cc -O2 -pthread -o
/tmp/sa-launch-old /tmp/old.c``), to compare two launchers on one machine in one session.

The load average before and after is printed and kept in the JSON: on a shared machine
the ratio moves with it. The last lines state each target, the measured figure and
MET/MISSED: for (a) the ratio of runs/s, the median pair's ratio and its overhead in ms
(load-robust), and the overhead the target allows (5 % of a bare run).

Writes ``benchmarks/results/bench_runner-<UTC time>.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from audits.collect import sandbox  # noqa: E402
from audits.collect.languages import floor_program  # noqa: E402
from audits.collect.sandbox import Limits, accounting, launcher_path, make_sandbox, scratch_root  # noqa: E402
from benchmarks.results_file import write_results  # noqa: E402

PYTHON = "/usr/bin/python3"
COMMANDS = {"true": ["/bin/true"], "python3 -c pass": [PYTHON, "-c", "pass"]}


def bare_command(spec: str, argv: list[str], work: Path) -> list[str]:
    """What the bare loop runs for ``argv`` under ``spec``: the program itself (``local``), or the
    same bubblewrap command line as the bwrap sandbox's, without its launchers (``bwrap``)."""
    if spec == "local":
        return list(argv)
    box = make_sandbox(spec)
    return box.command(list(argv), scratch=work / "scratch", stdin_path=work / "stdin", limits=Limits(), uid=None)


def floors(boxes: dict, work: Path, stdin_path: Path, runs: int, limits: Limits) -> dict:
    """Median wall_s (ms) of the empty program of each language under each sandbox, interleaved."""
    programs = {lang: floor_program(lang, work / "floors").argv for lang in ("cpp", "python")}
    walls: dict = {spec: {lang: [] for lang in programs} for spec in boxes}
    for _ in range(runs):
        for spec, box in boxes.items():
            for lang, argv in programs.items():
                walls[spec][lang] += runner_loop(box, argv, stdin_path, work, 1, limits)[1]
    return {spec: {lang: {"median_ms": 1e3 * statistics.median(w), "p10_ms": 1e3 * sorted(w)[len(w) // 10],
                          "p90_ms": 1e3 * sorted(w)[(9 * len(w)) // 10], "n": len(w)} for lang, w in langs.items()}
            for spec, langs in walls.items()}


def bare_loop(argv, stdin_path: Path, n: int) -> float:
    """Seconds for n plain subprocess.run calls (stdin from the file, stdout captured)."""
    t0 = time.perf_counter()
    for _ in range(n):
        with open(stdin_path, "rb") as stdin:
            subprocess.run(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return time.perf_counter() - t0


def runner_loop(box, argv, stdin_path: Path, work: Path, n: int, limits: Limits) -> tuple[float, list[float]]:
    """Seconds for n runner executions (including scratch creation and clean-up), and their wall_s."""
    walls = []
    t0 = time.perf_counter()
    for _ in range(n):
        workdir = Path(tempfile.mkdtemp(dir=work))
        ex = box.run(argv, stdin_path=stdin_path, workdir=workdir, limits=limits)
        if ex.status != "ok":
            raise SystemExit(f"runner: {argv} failed: {ex.reason} {ex.stderr_tail}")
        walls.append(ex.wall_s)
        shutil.rmtree(workdir)
    return time.perf_counter() - t0, walls


def use_launcher(path: str) -> None:
    """Run the sandboxes with the launcher binary at ``path`` (built from another revision)."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise SystemExit(f"--launcher {path}: not an executable file")
    sandbox.LAUNCHER["path"] = os.path.abspath(path)


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def hyperfine_mean(argv, runs: int, out: Path) -> dict:
    cmd = ["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--export-json", str(out), "--style", "none",
           " ".join(argv)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())["results"][0]
    return {"mean_s": result["mean"], "stddev_s": result["stddev"], "median_s": result["median"],
            "times": result["times"]}


def profile_runner(box, argv, stdin_path: Path, work: Path, limits: Limits, n: int = 200) -> list[dict]:
    """Where the runner's own CPU goes: cProfile (CPU clock) over n runs, top 12 functions by own time."""
    import cProfile
    import pstats

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    runner_loop(box, argv, stdin_path, work, n, limits)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, name), (_, _, own, cum, _) in stats.stats.items():
        rows.append({"function": f"{Path(filename).name}:{line}({name})", "own_ms_per_run": 1e3 * own / n,
                     "cum_ms_per_run": 1e3 * cum / n})
    rows.sort(key=lambda r: -r["own_ms_per_run"])
    return rows[:12]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (~15 s)")
    parser.add_argument("--blocks", type=int, default=None, help="alternating blocks per comparison")
    parser.add_argument("--per-block", type=int, default=None, help="runs per block")
    parser.add_argument("--profile", action="store_true",
                        help="also profile 200 runner runs of python3 -c pass (own CPU by function)")
    parser.add_argument("--sandboxes", default="local,bwrap",
                        help="sandboxes for the throughput and the floors (default local,bwrap)")
    parser.add_argument("--launcher", default=None,
                        help="a compiled launcher to use instead of this checkout's launcher.c (to compare two)")
    args = parser.parse_args(argv)
    if args.launcher:
        use_launcher(args.launcher)
    blocks = args.blocks or (4 if args.quick else 10)
    per_block = args.per_block or (15 if args.quick else 25)
    if shutil.which("hyperfine") is None:
        raise SystemExit("hyperfine is not installed (apt-get install hyperfine, or run scripts/system-deps.sh)")

    work = scratch_root("speedaudit-bench-")
    stdin_path = work / "stdin"
    stdin_path.write_bytes(b"")
    specs = [s.strip() for s in args.sandboxes.split(",") if s.strip()]
    boxes = {spec: make_sandbox(spec) for spec in specs}
    for b in boxes.values():
        b.check()
    box = boxes.get("local") or make_sandbox("local")
    limits = Limits(wall_s=10)
    results: dict = {"when": datetime.now(timezone.utc).isoformat(), "host": os.uname().nodename,
                     "load_before": os.getloadavg(), "isolated": getattr(box, "isolated", None),
                     "cpus": os.cpu_count(), "launcher": launcher_path() is not None,
                     "launcher_path": launcher_path(), "uid_switch": box.uid is not None,
                     "accounting": accounting(), "blocks": blocks, "per_block": per_block, "throughput": {},
                     "accuracy": {}}
    try:
        for spec, b in boxes.items():  # warm caches
            for cmd in COMMANDS.values():
                bare_loop(bare_command(spec, cmd, work), stdin_path, 3)
                runner_loop(b, cmd, stdin_path, work, 3, limits)
        # (a) throughput: bare and runner alternate run by run, so load changes hit both alike
        for (spec, runner_box), (name, cmd) in ((x, c) for x in boxes.items() for c in COMMANDS.items()):
            bare = bare_command(spec, cmd, work)
            bare_s, runner_s = [], []
            cpu = {"bare": 0.0, "runner": 0.0}  # CPU of this process per run: independent of the load
            for _ in range(blocks * per_block):
                c0 = _self_cpu()
                bare_s.append(bare_loop(bare, stdin_path, 1))
                c1 = _self_cpu()
                runner_s.append(runner_loop(runner_box, cmd, stdin_path, work, 1, limits)[0])
                cpu["bare"] += c1 - c0
                cpu["runner"] += _self_cpu() - c1
            bare_rate = len(bare_s) / sum(bare_s)
            runner_rate = len(runner_s) / sum(runner_s)
            pair_ratios = sorted(b / r for b, r in zip(bare_s, runner_s))
            results["throughput"][f"{spec}: {name}"] = {
                "bare_runs_per_s": bare_rate, "runner_runs_per_s": runner_rate, "ratio": runner_rate / bare_rate,
                "median_pair_ratio": statistics.median(pair_ratios), "n": len(bare_s), "target": 0.95,
                # the runner's cost per run over the bare loop, median over the alternating pairs
                # (what the target allows: 5 % of a bare run, ~0.8 ms at 16 ms per run)
                "median_pair_overhead_ms": 1e3 * statistics.median(r - b for b, r in zip(bare_s, runner_s)),
                "self_cpu_ms_per_run": {k: 1e3 * v / len(bare_s) for k, v in cpu.items()}}
        # (b) accuracy against hyperfine, alternating blocks
        cmd = COMMANDS["python3 -c pass"]
        hyper_times, runner_walls = [], []
        for b in range(blocks):
            hyper_times += hyperfine_mean(cmd, per_block, work / f"hf-{b}.json")["times"]
            runner_walls += runner_loop(box, cmd, stdin_path, work, per_block, limits)[1]
        h_mean, r_mean = statistics.fmean(hyper_times), statistics.fmean(runner_walls)
        results["accuracy"]["python3 -c pass"] = {
            "hyperfine_mean_ms": 1e3 * h_mean, "hyperfine_sd_ms": 1e3 * statistics.stdev(hyper_times),
            "hyperfine_median_ms": 1e3 * statistics.median(hyper_times),
            "runner_mean_ms": 1e3 * r_mean, "runner_sd_ms": 1e3 * statistics.stdev(runner_walls),
            "runner_median_ms": 1e3 * statistics.median(runner_walls),
            "difference_ms": 1e3 * (r_mean - h_mean), "target_ms": 2.0, "n": len(runner_walls)}
        # (c) the floor of each language under each sandbox
        results["floors"] = floors(boxes, work, stdin_path, max(blocks * per_block // 5, 10), limits)
        if args.profile:
            results["profile"] = profile_runner(box, COMMANDS["python3 -c pass"], stdin_path, work, limits)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["load_after"] = os.getloadavg()

    print(f"runner benchmark ({blocks} alternating blocks x {per_block} runs; launcher={results['launcher']}, "
          f"uid switch={results['uid_switch']}, isolated={results['isolated']}; load average "
          f"{results['load_before'][0]:.2f} before, {results['load_after'][0]:.2f} after)")
    print(f"{'throughput':<18}{'bare runs/s':>12}{'runner runs/s':>15}{'ratio':>8}{'median pair':>13}"
          f"{'target':>9}{'own CPU ms/run bare, runner':>30}")
    for name, r in results["throughput"].items():
        own = r["self_cpu_ms_per_run"]
        print(f"{name:<18}{r['bare_runs_per_s']:>12.1f}{r['runner_runs_per_s']:>15.1f}{r['ratio']:>8.1%}"
              f"{r['median_pair_ratio']:>13.1%}{'>= 95%':>9}{own['bare']:>22.2f}, {own['runner']:.2f}")
    print(f"{'floor wall_s (ms)':<18}" + "".join(f"{lang + ' median [p10, p90]':>30}" for lang in ("cpp", "python")))
    for spec, langs in results["floors"].items():
        print(f"{spec:<18}" + "".join(f"{f['median_ms']:>14.2f} [{f['p10_ms']:.2f}, {f['p90_ms']:.2f}]".rjust(30)
                                      for f in langs.values()))
    a = results["accuracy"]["python3 -c pass"]
    print(f"{'duration (ms)':<18}{'hyperfine':>12}{'runner':>15}{'diff':>8}{'target':>9}")
    print(f"{'python3 -c pass':<18}{a['hyperfine_mean_ms']:>9.2f} ±{a['hyperfine_sd_ms']:.1f}"
          f"{a['runner_mean_ms']:>10.2f} ±{a['runner_sd_ms']:.1f}{a['difference_ms']:>+8.2f}{'|d|<=2':>9}")
    print(f"{'  (medians)':<18}{a['hyperfine_median_ms']:>9.2f}{'':>5}{a['runner_median_ms']:>10.2f}{'':>5}"
          f"{a['runner_median_ms'] - a['hyperfine_median_ms']:>+8.2f}")
    if "profile" in results:
        print("runner's own CPU per run of python3 -c pass, by function (cProfile, top 12 by own time):")
        for row in results["profile"]:
            print(f"  {row['own_ms_per_run']:6.3f} ms own, {row['cum_ms_per_run']:6.3f} ms with callees  {row['function']}")
    results["verdict"] = {"accuracy_target_met": abs(a["difference_ms"]) <= a["target_ms"]}
    for spec in boxes:
        t = results["throughput"][f"{spec}: python3 -c pass"]
        met = t["ratio"] >= t["target"]
        results["verdict"][f"throughput_target_met_{spec}"] = met
        print(f"TARGET (issue 26, item 5): runner under {spec} >= {t['target']:.0%} of the bare loop's runs/s on "
              f"python3 -c pass; measured {t['ratio']:.1%} (median pair {t['median_pair_ratio']:.1%}; "
              f"{1e3 / t['runner_runs_per_s'] - 1e3 / t['bare_runs_per_s']:+.2f} ms per run, median pair "
              f"{t['median_pair_overhead_ms']:+.2f} ms; allowed {(1 / t['target'] - 1) * 1e3 / t['bare_runs_per_s']:.2f} "
              f"ms) -> {'MET' if met else 'MISSED'} at load average "
              f"{results['load_before'][0]:.2f}-{results['load_after'][0]:.2f}"
              + ("" if results["load_before"][0] < 0.5 else " (not an idle machine: the ratio moves with the load)"))
    print(f"TARGET (accuracy): runner mean within {a['target_ms']:g} ms of hyperfine's; measured "
          f"{a['difference_ms']:+.2f} ms -> {'MET' if results['verdict']['accuracy_target_met'] else 'MISSED'}")
    write_results("bench_runner", results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
