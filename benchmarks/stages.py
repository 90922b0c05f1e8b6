"""Benchmark stages: one stage of the audit, run in a fresh process, timed, with check values.

Every stage loads the corpus first (untimed, except for the ``load``, ``floor``
and ``audit`` stages, which include it), then runs its computation once under
``time.perf_counter``; afterwards (untimed) it computes the values that
:mod:`benchmarks.run` compares between the fast implementation and the
straightforward baseline (:mod:`benchmarks.baselines`).

Stages (``fast`` implementation = the project's own code):

=================  =====================================================================
load               ``audits.corpus.io.load_corpus`` (read Parquet + validate + normalise)
floor              the floor: ``pandas.read_parquet`` + one ``np.sort`` of ``duration_s``
percentiles        ``stats.ranking.percentile_table(per_repeat=True)`` of campaign c0
reliability        ``audits.checks.reliability.run_reliability_audit`` (all campaigns)
discriminability   ``audits.checks.discriminability.run_discriminability_audit``
calibration        ``audits.checks.calibration.run_calibration_audit(source="c0", target="c1")``
                   (every family, leave-one-problem-out over all problems, bootstrap CIs)
aggregation        ``audits.checks.aggregation.run_aggregation_audit`` (17+ aggregators, both campaigns)
simulation         ``audits.checks.simulation.run_simulation_audit`` over the shipped example
                   environments (fixtures/environments/*.yaml but the grid) on c0
audit              load + ``audits.engine.whole_audit.run_whole_audit`` (= ``speedaudit audit all``):
                   every audit above once on one shared run context (calibration c0 -> c1,
                   the simulator on c0), one process: the whole audit
report             ``speedaudit report`` of the corpus (``render_reports``: the five pages,
                   each audit computed once and read by the pages)
dask               (partitioned dataset) the whole audit on a loopback LocalCluster of 2
                   workers (``audits.engine.partitioned.run_partitioned_whole_audit``, what
                   ``speedaudit audit all --dask`` runs), with the ``audit`` stage's
                   parameters (calibration quiet · c0 -> quiet · c1, the simulator on
                   quiet · c0 over the pinned environments, N_BOOT); peak RSS of the
                   client and of the largest worker; parts: cluster start, the two shared
                   passes, the contention re-reads, each audit's combining step
memory_audit       (partitioned dataset, <= 1e6) the same whole audit in memory on the
                   loaded dataset (``whole_audit``), to check the Dask path's JSON
=================  =====================================================================

Child protocol (used by :mod:`benchmarks.run`)::

    python -m benchmarks.stages STAGE CORPUS.parquet --impl fast|baseline --out RESULT.json
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["STAGES", "AUDIT_PARTS", "ENVIRONMENT_DIR", "example_environments", "whole_audit", "run_stage", "main"]

ROOT = Path(__file__).resolve().parent.parent
ENVIRONMENT_DIR = ROOT / "fixtures" / "environments"
AUDIT_PARTS = ("percentiles", "reliability", "discriminability", "calibration", "aggregation", "simulation")
STAGES = ("load", "floor") + AUDIT_PARTS + ("audit", "report")
#: stages of a partitioned dataset (benchmarks.corpora.ensure_dataset)
DATASET_STAGES = ("dask", "memory_audit")
KEYS = ["problem", "test", "solution", "repeat"]
N_BOOT = 1000  # the audits' default bootstrap sizes are kept (what a user gets)


def example_environments():
    """The 7 example reward environments of the issue-10 benchmark (:data:`audits.engine.whole_audit.EXAMPLE_REWARD_ENVIRONMENTS`,
    what the overview report screens). Pinned by name: later example files (graded, noise_aware) are not in the
    benchmark, so figures stay comparable across runs; the noise-aware scheme is measured on its own
    (docs/performance.md)."""
    from audits.checks.reward_environments import load_reward_environments
    from audits.engine.whole_audit import EXAMPLE_REWARD_ENVIRONMENTS

    return load_reward_environments([ENVIRONMENT_DIR / f"{name}.yaml" for name in EXAMPLE_REWARD_ENVIRONMENTS])


def whole_audit(corpus, *, timings: dict | None = None, dask_workers: int | None = None, dask_audits: bool = False):
    """The benchmark's whole audit (``speedaudit audit all``): calibration quiet · c0 -> quiet · c1, the
    simulator on quiet · c0 over the pinned environments, the audits' default bootstrap sizes.
    ``dask_workers``: ``corpus`` is a partitioned dataset, audited on a loopback LocalCluster of that many
    workers (``speedaudit audit all --dask``) with the same parameters. ``dask_audits``: only the registered audits
    the Dask engine runs (the in-memory side of the Dask JSON check)."""
    from audits.engine.whole_audit import run_whole_audit

    options = dict(pairs=[(("quiet", "c0"), ("quiet", "c1"))], simulation_run=("quiet", "c0"),
                   reward_environments=example_environments(), n_boot=N_BOOT, timings=timings)
    if dask_workers is not None:
        from audits.engine.partitioned import run_partitioned_whole_audit

        return run_partitioned_whole_audit(corpus, n_workers=dask_workers, **options)
    if dask_audits:
        from audits.protocol import registry

        options["audits"] = [n for n in registry.names() if registry.get(n).dask is None]
    return run_whole_audit(corpus, **options)


def _c0(corpus: pd.DataFrame) -> pd.DataFrame:
    from stats.ranking import select_runs

    run = select_runs(corpus, campaign="c0")
    return run.loc[(run["role"] != "floor").to_numpy()]


# ----------------------------------------------------------------------------------------------
# fast implementations: return the computation's result (the timed part)
# ----------------------------------------------------------------------------------------------

def _fast_percentiles(corpus):
    from stats.ranking import percentile_table

    return percentile_table(_c0(corpus), per_repeat=True)


def _fast_reliability(corpus):
    from audits.checks.reliability import run_reliability_audit

    return run_reliability_audit(corpus, n_boot=N_BOOT)


def _fast_discriminability(corpus):
    from audits.checks.discriminability import run_discriminability_audit

    return run_discriminability_audit(corpus, n_boot=N_BOOT)


def _fast_calibration(corpus):
    from audits.checks.calibration import run_calibration_audit

    return run_calibration_audit(corpus, source="c0", target="c1", n_boot=N_BOOT)


def _fast_aggregation(corpus):
    from audits.checks.aggregation import run_aggregation_audit

    return run_aggregation_audit(corpus, n_boot=N_BOOT)


def _fast_simulation(corpus, environments=None):
    from audits.checks.simulation import run_simulation_audit

    return run_simulation_audit(corpus, reward_environments=environments or example_environments(),
                                environment="quiet", campaign="c0")


FAST = {
    "percentiles": _fast_percentiles,
    "reliability": _fast_reliability,
    "discriminability": _fast_discriminability,
    "calibration": _fast_calibration,
    "aggregation": _fast_aggregation,
    "simulation": _fast_simulation,
}


# ----------------------------------------------------------------------------------------------
# check values of the fast results (untimed), in the layout of benchmarks.baselines
# ----------------------------------------------------------------------------------------------

def _sorted_by_keys(frame: pd.DataFrame, keys) -> pd.DataFrame:
    keyed = frame.assign(**{k: frame[k].astype(str) for k in keys if k != "repeat"})
    return keyed.sort_values(list(keys), kind="stable")


def check_values(stage: str, result, corpus: pd.DataFrame) -> dict:
    if stage == "percentiles":
        return {"percentile": _sorted_by_keys(result, KEYS)["percentile"].to_numpy(dtype=float)}
    if stage == "reliability":
        env = result.result("quiet", "c0")  # each run on its own (audits.corpus.runs); c0 as the baseline
        icc = _sorted_by_keys(env.test_icc, ["problem", "test"])["ICC2"].to_numpy(dtype=float)
        return {"median_repeat_cv": env.median_repeat_cv.estimate, "mean_rank_range": env.drift.mean_range.estimate,
                "icc2": icc, "significant_share": env.significance.share.estimate}
    if stage == "discriminability":
        env = result.result("quiet", "c0")
        problems = env.problems.assign(problem=env.problems["problem"].astype(str)).sort_values("problem")
        return {"robust_cv": problems["robust_cv"].to_numpy(dtype=float), "mean_gap": env.gap.gap.estimate}
    if stage == "calibration":
        fits = result.fits.set_index("name")
        aff = result.params[(result.params["family"] == "affine") & (result.params["param"] == "slope")].iloc[0]
        return {"lopo_r2": {f: float(fits.loc[f, "lopo_r2"])
                            for f in ("multiplicative", "affine", "power", "poly2", "poly3")},
                "slope_ci": [float(aff["ci_low"]), float(aff["ci_high"])]}
    if stage == "aggregation":
        table = result.table
        return {"stability": {str(c): dict(zip(g["aggregator"], g["stability"]))
                              for c, g in table.groupby("campaign")}}
    if stage == "simulation":
        from stats.rewards import apply_environment

        run = corpus.loc[(corpus["campaign"].astype(str) == "c0").to_numpy()]
        out = {}
        for env in example_environments():
            scores = apply_environment(run, env).scores
            out[env.name] = {"mean_q": float(scores["q"].mean()), "share_g": float(scores["g"].mean()),
                             "share_c": float(scores["c"].mean())}
        return {"environments": out, "verdicts": result.diagnostics["verdict"].tolist()}
    return {}


# ----------------------------------------------------------------------------------------------
# running one stage
# ----------------------------------------------------------------------------------------------

def _load(path):
    from audits.corpus.io import load_corpus

    return load_corpus(path)


def preload(impl: str = "fast", stage: str | None = None) -> None:
    """Import every module a stage uses, so stage timings exclude imports (a one-off ~1-5 s)."""
    import audits.checks.aggregation  # noqa: F401
    import audits.checks.calibration  # noqa: F401
    import audits.checks.discriminability  # noqa: F401
    import audits.checks.reward_environments  # noqa: F401
    import audits.checks.reliability  # noqa: F401
    import audits.checks.simulation  # noqa: F401
    import scipy.stats  # noqa: F401

    if impl == "baseline":
        import benchmarks.baselines  # noqa: F401

        if stage in (None, "reliability"):
            import pingouin  # noqa: F401
            import statsmodels.stats.multitest  # noqa: F401
        if stage in (None, "calibration"):
            import sklearn.linear_model  # noqa: F401
            import sklearn.model_selection  # noqa: F401
            import sklearn.pipeline  # noqa: F401
            import sklearn.preprocessing  # noqa: F401


def run_stage(stage: str, path: str | Path, *, impl: str = "fast") -> dict:
    """Run one stage in this process; returns seconds, part timings and check values.

    Imports happen first (:func:`preload`) and are not timed; the ``floor``
    stage imports only pandas and numpy.
    """
    if stage not in STAGES + DATASET_STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose from {', '.join(STAGES + DATASET_STAGES)}")
    if impl not in ("fast", "baseline"):
        raise ValueError(f"impl must be 'fast' or 'baseline', got {impl!r}")
    if stage not in ("floor", "report"):
        preload(impl, stage)
    parts: dict[str, float] = {}
    checks: dict = {}
    if stage == "floor":
        start = time.perf_counter()
        frame = pd.read_parquet(path)
        np.sort(frame["duration_s"].to_numpy())
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "parts": parts, "checks": {"rows": len(frame)}}
    if stage == "load":
        start = time.perf_counter()
        corpus = _load(path)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "parts": parts, "checks": {"rows": len(corpus)}}
    if stage == "audit":  # `speedaudit audit all`: every audit once on one shared run context
        start = time.perf_counter()
        corpus = _load(path)
        parts["load"] = time.perf_counter() - start
        whole_audit(corpus, timings=parts)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "parts": parts, "checks": {"rows": len(corpus)}}
    if stage == "report":  # `speedaudit report` of the corpus: the five pages, each audit computed once
        import tempfile

        from audits.report.render import render_reports

        params = {"n_boot": N_BOOT, "stored_run": ["quiet", "c0"], "fresh_run": ["quiet", "c1"], "source_run": None,
                  "target_run": None, "aggregation_environment": "quiet", "aggregation_campaign": None,
                  "simulation_environment": "quiet", "simulation_campaign": "c0"}
        with tempfile.TemporaryDirectory(prefix="speedaudit-bench-report-") as out:
            start = time.perf_counter()
            index = render_reports([str(path)], out_dir=out, parameters=params, progress=None)
            seconds = time.perf_counter() - start
        return {"seconds": seconds, "parts": parts, "checks": {"pages": len(index.reports)}}
    if stage == "dask":  # the whole audit of the partitioned dataset on a loopback LocalCluster (2 workers)
        start = time.perf_counter()
        result = whole_audit(path, timings=parts, dask_workers=2)
        seconds = time.perf_counter() - start
        workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest worker (waited for)
        return {"seconds": seconds, "parts": parts,
                "checks": {"json": _dumped(result.to_dict()), "workers_maxrss_kb": workers}}
    if stage == "memory_audit":  # the same whole audit in memory on the loaded dataset (agreement check)
        from audits.corpus.dataset import open_dataset

        start = time.perf_counter()
        result = whole_audit(open_dataset(path).load(), dask_audits=True)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "parts": parts, "checks": {"json": _dumped(result.to_dict())}}
    corpus = _load(path)
    if impl == "baseline":
        from benchmarks import baselines

        args = (example_environments(),) if stage == "simulation" else ()
        start = time.perf_counter()
        checks = baselines.BASELINES[stage](corpus, *args)
        seconds = time.perf_counter() - start
    else:
        start = time.perf_counter()
        result = FAST[stage](corpus)
        seconds = time.perf_counter() - start
        checks = check_values(stage, result, corpus)
    return {"seconds": seconds, "parts": parts, "checks": checks}


def _dumped(value) -> str:
    from audits.protocol.findings import to_jsonable

    return json.dumps(to_jsonable(value), sort_keys=True)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return {"__array__": True}
    if isinstance(value, (np.floating, float)):
        return None if not np.isfinite(value) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    return value


def own_peak_kb() -> int | None:
    """This process's own peak resident set (``VmHWM`` of /proc/self/status, kB), None where there is none.

    Not ``ru_maxrss``: Linux carries the high-water mark of the memory a process replaced by ``exec`` into its
    ``ru_maxrss`` (``setmax_mm_hiwater_rss`` in exec), and a child that ``subprocess`` starts by vfork replaces
    its parent's memory, so every stage reported at least the parent's own peak (2976 MB for every stage after
    benchmarks.run had built a 10^7-row corpus in-process, 2026-12-06). ``VmHWM`` belongs to the memory the
    stage has had since its exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run one benchmark stage in this process (used by benchmarks.run)")
    parser.add_argument("stage", choices=STAGES + DATASET_STAGES)
    parser.add_argument("corpus", help="Parquet corpus from benchmarks.corpora")
    parser.add_argument("--impl", choices=("fast", "baseline"), default="fast")
    parser.add_argument("--out", required=True, help="JSON result file; arrays go to <out>.npz")
    args = parser.parse_args(argv)
    result = run_stage(args.stage, args.corpus, impl=args.impl)
    result["maxrss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result["hwm_kb"] = own_peak_kb()
    arrays = {k: v for k, v in result["checks"].items() if isinstance(v, np.ndarray)}
    if arrays:
        np.savez(args.out + ".npz", **arrays)
    Path(args.out).write_text(json.dumps(_jsonable(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
