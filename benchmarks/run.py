"""The performance benchmark: the whole audit at 10^5..10^7 executions vs a baseline and the floor.

Run (from the repository root)::

    .venv/bin/python -m benchmarks.run [--sizes 1e5,1e6,1e7] [--baseline-max 1e6] \
        [--budget 300] [--out benchmarks/results/latest.json]

For every size it builds (once, untimed, cached under ``benchmarks/results/``)
a synthetic corpus (:mod:`benchmarks.corpora`), then runs every stage of
:mod:`benchmarks.stages` in a *fresh* child process and records the stage's
wall time (measured inside the child, after imports) and the child's peak RSS
(its own ``VmHWM``, :func:`benchmarks.stages.own_peak_kb`, so stages do not pollute each other). On
sizes up to ``--baseline-max`` it also runs the straightforward baseline of
each audit stage (:mod:`benchmarks.baselines`) under a time budget per stage,
checks that baseline and fast results agree, and reports the ratio. A baseline
that exceeds the budget is killed and reported as ``> budget`` (the ratio is
then a lower bound); an extrapolation from the largest size where it finished
(linear in problems: every baseline loops over problems) is printed beside it,
labelled as such.

Targets (issue 17, on the machine it runs on, as ratios measured in the same
run): the whole audit (``speedaudit audit all``) of 10^7 executions at most 40x
the floor (read the Parquet + sort the duration column once) and at most 3 GB
peak RSS; growth from 10^6 to 10^7 no worse than n log n; at least 50x the
baseline at 10^6; ``speedaudit report`` at 10^7 at most 1.5x the whole audit;
the aggregator comparison under a third of the whole audit; the Dask path at
10^8 with at most 6 GB peak RSS in any process. The load average at start and
end is recorded: timings on a shared machine are inflated.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from audits.collect.provenance import machine_info as provenance_machine_info

from benchmarks.corpora import ensure_corpus, ensure_dataset
from benchmarks.stages import AUDIT_PARTS, STAGES

__all__ = ["run_child", "compare", "targets", "benchmark", "format_table", "main"]

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "latest.json"
REPEATED = ("floor", "load", "audit")  # the stages the targets are judged on: median of --repeats runs
TARGETS = {"audit_rss_gb_1e7": 3.0, "speedup_1e6": 50.0, "floor_ratio": 40.0, "report_ratio": 1.5,
           "aggregation_share": 1 / 3, "dask_rss_gb_1e8": 6.0}


def _size(text: str) -> int:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a number of executions like 1e6, got {text!r}") from exc
    if not value >= 1e3:
        raise argparse.ArgumentTypeError(f"sizes must be >= 1e3 executions, got {text!r}")
    return int(value)


def _sizes(text: str) -> list[int]:
    return [_size(t) for t in text.split(",") if t.strip()]


def run_child(stage: str, corpus: Path, *, impl: str = "fast", budget: float | None = None,
              workdir: str | Path) -> dict:
    """Run one stage in a fresh interpreter; return its timing, peak RSS and check values.

    The child is killed when it runs longer than ``budget`` seconds (then
    ``status`` is ``"over budget"``). ``maxrss_mb`` is the child's own peak
    resident set size (its ``VmHWM``, :func:`benchmarks.stages.own_peak_kb`; ``os.wait4``'s where it has none
    or was killed), interpreter and imports included.
    """
    out = Path(workdir) / f"{stage}.{impl}.json"
    for stale in (out, Path(str(out) + ".npz")):
        stale.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "benchmarks.stages", stage, str(corpus), "--impl", impl, "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if budget is not None and time.perf_counter() - start > budget and not killed:
            proc.kill()
            killed = True
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    record = {"stage": stage, "impl": impl, "process_seconds": time.perf_counter() - start,
              "maxrss_mb": usage.ru_maxrss / 1024.0}
    if killed:
        return {**record, "status": "over budget", "budget_s": budget}
    if proc.returncode != 0 or not out.exists():
        return {**record, "status": "error", "error": stderr.strip().splitlines()[-1:] or ["exit " + str(proc.returncode)]}
    result = json.loads(out.read_text())
    if result.get("hwm_kb"):  # the stage's own peak (benchmarks.stages.own_peak_kb): wait4's carries this one's
        record["maxrss_mb"] = result["hwm_kb"] / 1024.0
    arrays = Path(str(out) + ".npz")
    if arrays.exists():
        with np.load(arrays) as data:
            for key in data.files:
                result["checks"][key] = data[key]
    return {**record, "status": "ok", "seconds": result["seconds"], "parts": result["parts"],
            "checks": result["checks"]}


def _close(a, b, *, rtol=1e-7, atol=1e-9) -> tuple[bool, float]:
    """(agree, largest absolute difference) of two nested results."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return False, math.inf
        parts = [_close(a[k], b[k], rtol=rtol, atol=atol) for k in a]
        return all(p[0] for p in parts), max((p[1] for p in parts), default=0.0)
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        x = np.asarray(a, dtype=float) if a is not None else np.array([np.nan])
        y = np.asarray(b, dtype=float) if b is not None else np.array([np.nan])
        if x.shape != y.shape:
            return False, math.inf
        both = np.isfinite(x) & np.isfinite(y)
        diff = float(np.max(np.abs(x[both] - y[both]))) if both.any() else 0.0
        same_nan = bool(np.array_equal(np.isfinite(x), np.isfinite(y)))
        return bool(same_nan and np.allclose(x[both], y[both], rtol=rtol, atol=atol)), diff
    x = math.nan if a is None else float(a)
    y = math.nan if b is None else float(b)
    if math.isnan(x) and math.isnan(y):
        return True, 0.0
    return math.isclose(x, y, rel_tol=rtol, abs_tol=atol), abs(x - y)


# What is compared between the fast stage and its baseline, with (rtol, atol) per value. The share of
# significant pairs gets an absolute 0.005: its ties (equal medians, equal per-repeat scores) depend on the last
# bit of a mean (numpy's plain sum in the audit, pandas' compensated sum in the baseline), which moves a few
# pairs in 10^4 in or out of the test.
COMPARED = {
    "percentiles": {"percentile": (1e-9, 1e-9)},
    "reliability": {"median_repeat_cv": (1e-7, 1e-9), "mean_rank_range": (1e-7, 1e-9), "icc2": (1e-7, 1e-9),
                    "significant_share": (0.0, 0.005)},
    "discriminability": {"robust_cv": (1e-9, 1e-9), "mean_gap": (1e-9, 1e-9)},
    "calibration": {"lopo_r2": (1e-7, 1e-9)},
    "aggregation": {"stability": (1e-9, 1e-9)},
    "simulation": {"environments": (1e-9, 1e-9)},
}


def compare(stage: str, fast: dict, baseline: dict) -> dict:
    """Agreement of the fast and baseline check values of one stage."""
    if stage not in COMPARED:
        return {"compared": [], "agree": None,
                "note": "not compared value by value (the baseline ranks scores among repeats, the audit among "
                        "the references' collapsed scores)"}
    keys = COMPARED[stage]
    out = {"compared": list(keys), "agree": True, "max_abs_diff": 0.0}
    for key, (rtol, atol) in keys.items():
        ok, diff = _close(fast["checks"].get(key), baseline["checks"].get(key), rtol=rtol, atol=atol)
        out["agree"] &= ok
        out["max_abs_diff"] = max(out["max_abs_diff"], diff)
    return out


def machine_info() -> dict:
    """The machine (audits.collect.provenance) plus the versions of the numerical stack."""
    import pandas
    import pyarrow

    return {**provenance_machine_info(), "numpy": np.__version__, "pandas": pandas.__version__,
            "pyarrow": pyarrow.__version__}


def _nlogn(n: float) -> float:
    return n * math.log(n)


def targets(sizes: dict, dask: dict | None = None) -> list[dict]:
    """Judge the issue's targets on the measured sizes (those present); ``met`` None = not measured there."""
    out = []
    if 10**7 in sizes:
        entry = sizes[10**7]
        audit = entry["stages"].get("audit", {})
        if audit.get("status") == "ok":
            out.append({"target": "whole audit at 1e7 <= 3 GB peak RSS", "value": audit["maxrss_mb"] / 1024,
                        "met": audit["maxrss_mb"] / 1024 <= TARGETS["audit_rss_gb_1e7"]})
            agg = audit.get("parts", {}).get("aggregation")
            if agg is not None:
                share = agg / audit["seconds"]
                out.append({"target": "aggregator comparison < 1/3 of the whole audit at 1e7", "value": share,
                            "met": share < TARGETS["aggregation_share"]})
        if entry.get("floor_ratio") is not None:
            out.append({"target": "whole audit <= 40x the floor at 1e7", "value": entry["floor_ratio"],
                        "met": entry["floor_ratio"] <= TARGETS["floor_ratio"]})
        report = entry["stages"].get("report", {})
        if report.get("status") == "ok" and audit.get("status") == "ok":
            ratio = report["seconds"] / audit["seconds"]
            out.append({"target": "speedaudit report at 1e7 <= 1.5x the whole audit", "value": ratio,
                        "met": ratio <= TARGETS["report_ratio"]})
    if 10**6 in sizes:
        sp = sizes[10**6].get("speedup")
        if sp is not None:
            met = sp["ratio"] >= TARGETS["speedup_1e6"]
            if sp["bound"] and not met:
                met = None  # a lower bound below the target decides nothing
            out.append({"target": ">= 50x faster than the baseline at 1e6" + (" (lower bound)" if sp["bound"] else ""),
                        "value": sp["ratio"], "met": met})
    if 10**6 in sizes and 10**7 in sizes:
        a6 = sizes[10**6]["stages"].get("audit", {})
        a7 = sizes[10**7]["stages"].get("audit", {})
        if a6.get("status") == "ok" and a7.get("status") == "ok":
            growth = a7["seconds"] / a6["seconds"]
            limit = _nlogn(10**7) / _nlogn(10**6)
            out.append({"target": f"growth 1e6 -> 1e7 <= n log n ({limit:.2f}x)", "value": growth,
                        "met": growth <= limit})
    top = (dask or {}).get(10**8, {}).get("dask", {})
    if top.get("status") == "ok":
        peak = max(top["maxrss_mb"], top.get("workers_maxrss_mb", 0.0)) / 1024
        out.append({"target": "Dask path at 1e8 <= 6 GB peak RSS in any process", "value": peak,
                    "met": peak <= TARGETS["dask_rss_gb_1e8"]})
    return out


def benchmark_datasets(sizes: list[int], *, budget: float | None, workdir, log=print) -> dict:
    """The Dask path's whole audit on partitioned datasets: time, client and largest-worker peak RSS, and
    (<= 1e6) the in-memory whole audit of the loaded dataset, whose JSON must equal the Dask one's."""
    out = {}
    for size in sizes:
        t0 = time.perf_counter()
        path = ensure_dataset(size)
        log(f"== dataset of {size:,} executions: {path.name} ready in {time.perf_counter() - t0:.1f} s (untimed)")
        entry = {"rows": size, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "load_average_start": os.getloadavg()}
        dask = run_child("dask", path, budget=budget, workdir=workdir)
        if dask["status"] == "ok":
            dask["workers_maxrss_mb"] = dask["checks"].pop("workers_maxrss_kb", 0) / 1024.0
        log(f"   dask (whole audit)      {_fmt_s(dask):>12s}  client {dask['maxrss_mb']:8.0f} MB"
            + (f"  largest worker {dask.get('workers_maxrss_mb', 0):8.0f} MB" if dask["status"] == "ok" else
               f"  {dask.get('error', '')}"))
        entry["dask"] = {k: v for k, v in dask.items() if k != "checks"}
        if size <= 10**6:
            memory = run_child("memory_audit", path, budget=budget, workdir=workdir)
            entry["memory"] = {k: v for k, v in memory.items() if k != "checks"}
            if memory["status"] == "ok" and dask["status"] == "ok":
                entry["equal_json"] = _json_equal(json.loads(dask["checks"]["json"]),
                                                  json.loads(memory["checks"]["json"]))
            log(f"   in memory               {_fmt_s(memory):>12s}  {memory['maxrss_mb']:8.0f} MB"
                f"  JSON equal to 1e-12: {entry.get('equal_json')}")
        entry["load_average_end"] = os.getloadavg()
        out[size] = entry
    return out


def _json_equal(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))
    return a == b


def benchmark(sizes: list[int], *, baseline_max: float, budget: float, fast_budget: float | None = None,
              stages=STAGES, repeats: int = 3, cache: Path | None = None, log=print) -> dict:
    """Run the benchmark; return the results (JSON-able apart from check arrays, which are dropped)."""
    result = {"started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join([Path(sys.executable).name, "-m", "benchmarks.run"] + sys.argv[1:]),
              "machine": machine_info(), "load_average_start": os.getloadavg(),
              "baseline_max": baseline_max, "budget_s": budget, "sizes": {}}
    finished_at: dict[str, tuple[int, float]] = {}  # stage -> (size, seconds) of the largest finished baseline
    with tempfile.TemporaryDirectory(prefix="speedaudit-bench-") as work:
        for size in sizes:
            t0 = time.perf_counter()
            path = ensure_corpus(size) if cache is None else ensure_corpus(size, cache=cache)
            log(f"== {size:,} executions: corpus {path.name} ready in {time.perf_counter() - t0:.1f} s (untimed)")
            entry = {"rows": size, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     "corpus": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
                     "load_average_start": os.getloadavg(), "stages": {}, "baselines": {}, "agreement": {}}
            for stage in stages:
                fast = _repeated(stage, path, repeats=repeats if stage in REPEATED else 1, budget=fast_budget,
                                 workdir=work)
                log(f"   {stage:17s} fast     {_fmt_s(fast):>12s}  {fast['maxrss_mb']:8.0f} MB"
                    + (f"  {fast['error']}" if fast["status"] == "error" else "")
                    + (f"  (median of {', '.join(f'{x:.2f}' for x in fast['runs_s'])})" if "runs_s" in fast else ""))
                if stage in AUDIT_PARTS and size <= baseline_max:
                    base = run_child(stage, path, impl="baseline", budget=budget, workdir=work)
                    log(f"   {stage:17s} baseline {_fmt_s(base):>12s}  {base['maxrss_mb']:8.0f} MB"
                        + (f"  {base['error']}" if base["status"] == "error" else ""))
                    if base["status"] == "ok" and fast["status"] == "ok":
                        entry["agreement"][stage] = agreement = compare(stage, fast, base)
                        if agreement["agree"] is False:
                            log(f"   !! {stage}: baseline and fast DISAGREE (max |diff| "
                                f"{agreement['max_abs_diff']:.3g}); no ratio is reported for it")
                        finished_at[stage] = (size, base["seconds"])
                    elif base["status"] == "over budget" and stage in finished_at:
                        m, secs = finished_at[stage]
                        base["extrapolated_s"] = secs * size / m
                        base["extrapolated_from"] = m
                    entry["baselines"][stage] = {k: v for k, v in base.items() if k != "checks"}
                elif stage in AUDIT_PARTS and stage in finished_at:
                    m, secs = finished_at[stage]  # not run: labelled extrapolation, linear in problems
                    entry["baselines"][stage] = {"stage": stage, "impl": "baseline", "status": "not run",
                                                 "reason": "size > --baseline-max", "extrapolated_s": secs * size / m,
                                                 "extrapolated_from": m}
                entry["stages"][stage] = {k: v for k, v in fast.items() if k != "checks"}
            _derive(entry)
            entry["load_average_end"] = os.getloadavg()
            result["sizes"][size] = entry
    result["load_average_end"] = os.getloadavg()
    result["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    result["targets"] = targets(result["sizes"])
    return result


def _repeated(stage: str, path: Path, *, repeats: int, budget, workdir) -> dict:
    """Run a fast stage ``repeats`` times (fresh process each); report the median run, keep all times."""
    runs = [run_child(stage, path, impl="fast", budget=budget, workdir=workdir) for _ in range(max(repeats, 1))]
    done = [r for r in runs if r["status"] == "ok"]
    if len(done) < len(runs):
        return next(r for r in runs if r["status"] != "ok")
    done.sort(key=lambda r: r["seconds"])
    median = dict(done[(len(done) - 1) // 2])
    if len(done) > 1:
        median["runs_s"] = [r["seconds"] for r in runs]
        median["maxrss_mb"] = max(r["maxrss_mb"] for r in runs)
    return median


def _derive(entry: dict) -> None:
    """Ratios: per stage (baseline / fast), the whole baseline vs the audit, the audit vs the floor."""
    stages, bases, agree = entry["stages"], entry["baselines"], entry["agreement"]
    for stage, base in bases.items():
        fast = stages.get(stage, {})
        if fast.get("status") != "ok" or agree.get(stage, {}).get("agree") is False:
            continue
        if base["status"] == "ok":
            base["ratio"] = base["seconds"] / fast["seconds"]
        elif base["status"] == "over budget":
            base["ratio_lower_bound"] = base["budget_s"] / fast["seconds"]
        if "extrapolated_s" in base:
            base["ratio_extrapolated"] = base["extrapolated_s"] / fast["seconds"]
    if bases and all(stages.get(s, {}).get("status") == "ok" for s in bases):
        usable = [s for s in AUDIT_PARTS if s in bases and agree.get(s, {}).get("agree") is not False
                  and bases[s]["status"] in ("ok", "over budget")]
        base_total = sum(bases[s]["seconds"] if bases[s]["status"] == "ok" else bases[s].get("budget_s", 0.0)
                         for s in usable)
        fast_total = sum(stages[s]["seconds"] for s in usable)
        bound = any(bases[s]["status"] != "ok" for s in usable)
        if usable:
            entry["speedup"] = {"ratio": base_total / fast_total, "bound": bound, "stages": usable,
                                "baseline_s": base_total, "fast_s": fast_total}
    audit, floor = stages.get("audit", {}), stages.get("floor", {})
    if audit.get("status") == "ok" and floor.get("status") == "ok":
        entry["floor_ratio"] = audit["seconds"] / floor["seconds"]


def _fmt_s(record: dict | None) -> str:
    if not record:
        return "-"
    if record["status"] == "ok":
        return f"{record['seconds']:.2f} s"
    if record["status"] == "over budget":
        return f"> {record['budget_s']:.0f} s"
    return "error"


def format_table(result: dict) -> str:
    """The measured table (markdown), one row per stage, a column group per size."""
    sizes = sorted(result["sizes"], key=int)
    head = "| stage | " + " | ".join(f"{int(s):.0e} time | {int(s):.0e} / floor | {int(s):.0e} peak RSS | "
                                     f"{int(s):.0e} baseline (ratio)" for s in sizes) + " |"
    lines = [head, "|---|" + "---:|" * (4 * len(sizes))]
    stage_names = list(dict.fromkeys(st for s in sizes for st in result["sizes"][s]["stages"]))
    for stage in stage_names:
        cells = []
        for s in sizes:
            entry = result["sizes"][s]
            fast = entry["stages"].get(stage)
            base = entry["baselines"].get(stage)
            cells.append(_fmt_s(fast))
            floor = entry["stages"].get("floor", {})
            cells.append(f"{fast['seconds'] / floor['seconds']:.1f}x" if fast and fast.get("status") == "ok"
                         and floor.get("status") == "ok" and stage != "floor" else "")
            cells.append(f"{fast['maxrss_mb']:.0f} MB" if fast else "-")
            if base is None:
                cells.append("not run" if stage in AUDIT_PARTS else "")
            elif base["status"] == "ok":
                ag = entry["agreement"].get(stage, {})
                mark = "" if ag.get("agree") else " (not compared)" if ag.get("agree") is None else " DISAGREE"
                ratio = f" ({base['ratio']:.0f}x)" if "ratio" in base else ""
                cells.append(f"{base['seconds']:.1f} s{ratio}{mark}")
            elif base["status"] in ("over budget", "not run"):
                extra = (f"; extrapolated {base['extrapolated_s']:.0f} s from {int(base['extrapolated_from']):.0e}"
                         + (f" (~{base['ratio_extrapolated']:.0f}x)" if "ratio_extrapolated" in base else "")
                         if "extrapolated_s" in base else "")
                bound = f" (>{base['ratio_lower_bound']:.0f}x)" if "ratio_lower_bound" in base else ""
                why = (f"> {base['budget_s']:.0f} s budget" if base["status"] == "over budget"
                       else "> --baseline-max")
                cells.append(f"not run ({why}){bound}{extra}")
            else:
                cells.append("error")
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    parts = [p for p in dict.fromkeys(k for s in sizes
                                      for k in result["sizes"][s]["stages"].get("audit", {}).get("parts", {}))]
    if parts:
        lines.append("\nThe whole audit (one process), part by part" +
                     (" and its growth between consecutive sizes (n log n per 10x = "
                      f"{_nlogn(10**7) / _nlogn(10**6):.2f}x from 1e6 to 1e7)" if len(sizes) > 1 else "") + ":\n")
        lines.append("| part | " + " | ".join(f"{int(s):.0e}" for s in sizes)
                     + "".join(f" | {int(a):.0e} -> {int(b):.0e}" for a, b in zip(sizes, sizes[1:])) + " |")
        lines.append("|---|" + "---:|" * (2 * len(sizes) - 1))
        for part in parts + ["total"]:
            values = []
            for s in sizes:
                audit = result["sizes"][s]["stages"].get("audit", {})
                values.append(audit.get("seconds") if part == "total" else audit.get("parts", {}).get(part))
            cells = [f"{v:.2f} s" if v is not None else "-" for v in values]
            cells += [f"{b / a:.1f}x" if a and b else "-" for a, b in zip(values, values[1:])]
            lines.append(f"| {part} | " + " | ".join(cells) + " |")
    for s in sizes:
        entry = result["sizes"][s]
        extra = []
        if "floor_ratio" in entry:
            extra.append(f"audit / floor = {entry['floor_ratio']:.1f}x")
        if "speedup" in entry:
            sp = entry["speedup"]
            extra.append(f"baseline / fast over the audit stages = {'>= ' if sp['bound'] else ''}{sp['ratio']:.0f}x "
                         f"({sp['baseline_s']:.3g} s vs {sp['fast_s']:.3g} s)")
        guessed = [b for b in entry["baselines"].values() if b["status"] == "not run" and "extrapolated_s" in b]
        if guessed and len(guessed) == len(AUDIT_PARTS) and "audit" in entry["stages"]:
            fast_parts = sum(entry["stages"][b["stage"]]["seconds"] for b in guessed if b["stage"] in entry["stages"])
            total = sum(b["extrapolated_s"] for b in guessed)
            extra.append(f"EXTRAPOLATED (not measured) baseline / fast = ~{total / fast_parts:.0f}x "
                         f"(~{total:.0f} s vs {fast_parts:.1f} s)")
        if extra:
            lines.append(f"\n{int(s):.0e}: " + "; ".join(extra))
    return "\n".join(lines)


def format_dask(result: dict) -> str:
    """The Dask path's table (markdown)."""
    dask = result.get("dask") or {}
    if not dask:
        return ""
    lines = ["| Dask path (whole audit, 2 loopback workers) | time | client peak RSS | largest worker peak RSS "
             "| in memory | JSON equal (1e-12) | load average |", "|---|---:|---:|---:|---:|---|---|"]
    for size in sorted(dask, key=int):
        e = dask[size]
        d, m = e["dask"], e.get("memory")
        lines.append(f"| {int(size):.0e} | {_fmt_s(d)} | {d['maxrss_mb']:.0f} MB | "
                     f"{d.get('workers_maxrss_mb', float('nan')):.0f} MB | "
                     f"{_fmt_s(m) + ', ' + format(m['maxrss_mb'], '.0f') + ' MB' if m else 'not run (> 1e6)'} | "
                     f"{e.get('equal_json', 'not compared')} | "
                     f"{e['load_average_start'][0]:.2f} -> {e['load_average_end'][0]:.2f} |")
    return "\n".join(lines)


def format_targets(result: dict) -> str:
    lines = []
    for t in result["targets"]:
        verdict = {True: "MET", False: "MISSED", None: "n/a"}[t["met"]]
        lines.append(f"  [{verdict:6s}] {t['target']}: {t['value']:.3g}")
    return "\n".join(lines)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="speedaudit performance benchmark (issue 10)")
    parser.add_argument("--sizes", type=_sizes, default=[10**5, 10**6, 10**7],
                        help="corpus sizes in executions, comma-separated (default 1e5,1e6,1e7)")
    parser.add_argument("--baseline-max", type=_size, default=10**6,
                        help="run the straightforward baseline on sizes up to this (default 1e6)")
    parser.add_argument("--budget", type=float, default=300.0,
                        help="seconds a baseline stage may run before it is killed (default 300)")
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"comma-separated subset of {','.join(STAGES)}")
    parser.add_argument("--repeats", type=int, default=3,
                        help="runs of the floor, load and whole-audit stages (median reported; default 3)")
    parser.add_argument("--stage-budget", type=float, default=5400.0,
                        help="seconds any fast stage may run before it is killed (default 5400: the 1e8 Dask audit takes most of an hour on 2 cores)")
    parser.add_argument("--dask-sizes", type=_sizes, default=[10**6, 10**8],
                        help="partitioned datasets audited on Dask (default 1e6,1e8; empty to skip)")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results JSON (a .md table is written beside it)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other sizes already in --out (each size keeps its own load average and "
                             "time stamp), e.g. to measure 1e7 separately from the smaller sizes")
    args = parser.parse_args(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"unknown stage(s) {unknown}; choose from {', '.join(STAGES)}")
    result = benchmark(sorted(args.sizes), baseline_max=args.baseline_max, budget=args.budget,
                       fast_budget=args.stage_budget, stages=stages, repeats=args.repeats)
    if args.dask_sizes:
        with tempfile.TemporaryDirectory(prefix="speedaudit-bench-dask-") as work:
            result["dask"] = benchmark_datasets(sorted(args.dask_sizes), budget=args.stage_budget, workdir=work)
        result["load_average_end"] = os.getloadavg()
        result["targets"] = targets(result["sizes"], result.get("dask"))
    out = Path(args.out)
    if args.merge and out.exists():
        previous = json.loads(out.read_text())
        kept = {int(k): v for k, v in previous.get("sizes", {}).items() if int(k) not in result["sizes"]}
        result["sizes"] = dict(sorted({**kept, **result["sizes"]}.items()))
        result["merged_from"] = previous.get("merged_from", []) + [
            {"started": previous.get("started"), "command": previous.get("command"), "sizes": sorted(kept)}]
        result["targets"] = targets(result["sizes"], result.get("dask"))
    table = format_table(result) + ("\n\n" + format_dask(result) if result.get("dask") else "")
    info = result["machine"]
    la0, la1 = result["load_average_start"], result["load_average_end"]
    header = (f"machine: {info['cpu']}, {info['cores']} cores, {info['memory_gb']:.0f} GB; Python {info['python']}, "
              f"numpy {info['numpy']}, pandas {info['pandas']}\n"
              f"load average (1/5/15 min) at start {la0[0]:.2f}/{la0[1]:.2f}/{la0[2]:.2f}, "
              f"at end {la1[0]:.2f}/{la1[1]:.2f}/{la1[2]:.2f}\ncommand: {result['command']}")
    for size, entry in result["sizes"].items():
        la0, la1 = entry["load_average_start"], entry.get("load_average_end", la0)
        header += (f"\n{int(size):.0e}: measured from {entry.get('started', result['started'])}, load average "
                   f"{la0[0]:.2f} at start, {la1[0]:.2f} at end")
    print("\n" + header + "\n\n" + table + "\n\ntargets\n" + format_targets(result))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(_jsonable(result), indent=1))
    out.with_suffix(".md").write_text(header + "\n\n" + table + "\n\ntargets\n\n" + format_targets(result) + "\n")
    print(f"\nwrote {out} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
