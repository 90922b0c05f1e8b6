"""Every figure of every audit is a function of the corpus as a set of rows (DESIGN.md, "Set semantics").

Each corpus -- the shipped fixtures, a synthetic one with planted truth, and a pyperf import of files
written with pyperf's own API -- is audited as it is and after shuffling its rows; the JSON of every
audit (reliability, discriminability, calibration, aggregation, simulation), estimates, CIs (fixed
seed), findings and their messages included, must be identical character for character -- also for
a shuffled CSV file, whose categories are built on loading. Before the
fixes this failed on, e.g., quiet-a's aggregation dynamic range (61.2 in file order, 64.2 / 67.1 /
72.6 after shuffles: ties at the quartile cut broken by input order) and on every bootstrap CI
(problems coded by first appearance).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.calibration import run_calibration_audit
from audits.corpus.importers.pyperf_json import import_pyperf
from audits.corpus.io import load_corpus, save_corpus
from audits.corpus.synthetic import synthesize
from audits.checks.discriminability import run_discriminability_audit
from audits.protocol.findings import to_jsonable
from audits.checks.reliability import run_reliability_audit
from audits.report.inputs import load_corpora
from audits.checks.reward_environments import load_environments
from audits.checks.simulation import run_simulation_audit

ROOT = Path(__file__).resolve().parents[2]
CORPORA = [ROOT / "fixtures" / "corpora" / f"{name}.parquet" for name in ("quiet-a", "quiet-b", "busy-a")]
ENVIRONMENTS = [ROOT / "fixtures" / "environments" / name for name in ("top30.yaml", "uniform_timeout.yaml",
                                                                       "ranked_worst_p80.yaml")]
N_BOOT = 40


def _pyperf_files(root: Path) -> list[Path]:
    """Two machines x three builds, each file a pyperf BenchmarkSuite of 5 benchmarks x 6 processes x 3 values.

    Written with pyperf's API (Run, Benchmark, BenchmarkSuite.dump); the values are seeded draws with a
    per-process offset (what real pyperf processes show), a per-build speed and a machine factor.
    """
    import pyperf

    rng = np.random.default_rng(7)
    paths = []
    for machine, factor in (("alpha", 1.0), ("beta", 1.4)):
        for build, speed in (("main", 1.0), ("fast", 0.8), ("slow", 1.25)):
            benchmarks = []
            for b, base in enumerate((2e-3, 5e-3, 1e-2, 3e-2, 8e-2)):
                runs = []
                for process in range(6):
                    offset = rng.normal(0, 0.02)
                    values = base * speed * factor * np.exp(offset + rng.normal(0, 0.01, 3))
                    meta = {"name": f"bench{b}", "unit": "second", "loops": 4, "hostname": machine,
                            "date": f"2026-11-{10 + process:02d}T10:00:00"}
                    runs.append(pyperf.Run([float(v) for v in values], warmups=[(4, float(values[0]))],
                                           metadata=meta, collect_metadata=False))
                benchmarks.append(pyperf.Benchmark(runs))
            (root / machine).mkdir(exist_ok=True)
            path = root / machine / f"{build}.json"   # the file stem names the build (solution)
            pyperf.BenchmarkSuite(benchmarks).dump(str(path), replace=True)
            paths.append((machine, path))
    return paths


@pytest.fixture(scope="module")
def shipped():
    return load_corpora([str(p) for p in CORPORA])


@pytest.fixture(scope="module")
def synthetic():
    return synthesize(n_problems=8, n_tests=5, n_solutions=9, n_repeats=4, n_candidates=2,
                      campaigns=(("stored", 1.0, 0.0), ("fresh", 0.7, 0.02)), busy=True, seed=3).corpus


@pytest.fixture(scope="module")
def pyperf_corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("pyperf_perm")
    frames = [import_pyperf([path], environment=machine, campaign="nov").corpus for machine, path in _pyperf_files(root)]
    out = root / "pyperf.parquet"
    save_corpus(pd.concat(frames, ignore_index=True), out)
    return load_corpus(out)


def _audits(corpus: pd.DataFrame, *, source: str, target: str, run: tuple[str, str]) -> str:
    env, campaign = run
    envs = load_environments([str(p) for p in ENVIRONMENTS])
    out = {
        "reliability": run_reliability_audit(corpus, n_boot=N_BOOT).to_dict(),
        "discriminability": run_discriminability_audit(corpus, n_boot=N_BOOT).to_dict(),
        "calibration": run_calibration_audit(corpus, source=source, target=target, n_boot=N_BOOT,
                                             n_boot_rank=N_BOOT).to_dict(),
        "aggregation": run_aggregation_audit(corpus, environment=env, campaign=campaign, n_boot=N_BOOT).to_dict(),
        "simulation": run_simulation_audit(corpus, environments=envs, environment=env, campaign=campaign,
                                           n_boot=N_BOOT).to_dict(),
    }
    return json.dumps(to_jsonable(out), sort_keys=True, default=str)


def _first_difference(a: str, b: str) -> str:
    def flat(d, prefix=""):
        if isinstance(d, dict):
            return {k2: v2 for k, v in d.items() for k2, v2 in flat(v, f"{prefix}/{k}").items()}
        if isinstance(d, list):
            return {k2: v2 for i, v in enumerate(d) for k2, v2 in flat(v, f"{prefix}[{i}]").items()}
        return {prefix: d}
    fa, fb = flat(json.loads(a)), flat(json.loads(b))
    diffs = [(k, fa.get(k), fb.get(k)) for k in sorted(set(fa) | set(fb)) if repr(fa.get(k)) != repr(fb.get(k))]
    return f"{len(diffs)} figures differ, e.g. {diffs[:5]}"


CASES = {
    "shipped": dict(source="quiet-a", target="quiet-b", run=("quiet", "quiet-a")),
    "synthetic": dict(source="stored", target="fresh", run=("quiet", "stored")),
    "pyperf": dict(source="alpha", target="beta", run=("alpha", "nov")),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_audit_figure_is_identical_after_shuffling_rows(name, request, tmp_path):
    corpus = request.getfixturevalue({"shipped": "shipped", "synthetic": "synthetic", "pyperf": "pyperf_corpus"}[name])
    reference = _audits(corpus, **CASES[name])
    assert '"findings"' in reference and '"ci_low"' in reference  # the JSON really carries verdicts and CIs
    for seed in (1, 2):
        order = np.random.default_rng(seed).permutation(len(corpus))
        shuffled = corpus.iloc[order].reset_index(drop=True)
        got = _audits(shuffled, **CASES[name])
        assert got == reference, f"{name}, shuffle {seed}: {_first_difference(reference, got)}"
    # Reversed and written to Parquet and read back (the on-disk categories stay those of the corpus).
    path = tmp_path / "reversed.parquet"
    save_corpus(corpus.iloc[::-1].reset_index(drop=True), path)
    got = _audits(load_corpus(path), **CASES[name])
    assert got == reference, f"{name}, reversed file: {_first_difference(reference, got)}"
    # A text file has no stored categories: loading builds them, and they must not follow row order.
    in_order, shuffled = tmp_path / "in_order.csv", tmp_path / "shuffled.csv"
    corpus.to_csv(in_order, index=False)
    corpus.iloc[np.random.default_rng(3).permutation(len(corpus))].to_csv(shuffled, index=False)
    from_csv = _audits(load_corpus(in_order), **CASES[name])
    got = _audits(load_corpus(shuffled), **CASES[name])
    assert got == from_csv, f"{name}, shuffled CSV: {_first_difference(from_csv, got)}"


def test_a_shuffle_really_reorders_the_rows(shipped):
    """Guard against a vacuous test: the shuffled frame differs row-wise from the original."""
    order = np.random.default_rng(1).permutation(len(shipped))
    shuffled = shipped.iloc[order].reset_index(drop=True)
    assert not shuffled["duration_s"].equals(shipped["duration_s"].reset_index(drop=True))
    assert sorted(shuffled["duration_s"].dropna()) == sorted(shipped["duration_s"].dropna())
