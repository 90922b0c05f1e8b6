"""Every verdict is the same whatever the unit of time: no rule holds an absolute constant in seconds.

The guide's rule ("check each rule on nanosecond benchmarks and ten-second ones"): the same corpus with
every duration column (``duration_s``, ``cpu_s``, ``timeout_s``, ``wall_s``) multiplied by 1e-4 (programs of
microseconds, as pyperf and pytest-benchmark time them) and by 100 (programs of seconds) must get the
same level on every finding of every audit. Before, two rules were constants in ms: the affine intercept
(|b| >= 5 / 20 ms) failed the planted 53 ms drift at 100 ms programs but passed it, scaled, on microsecond
ones, and failed a harmless 5 s offset on 100 s ones; the median absolute repeat sd (>= 15 / 50 ms) failed a
quiet machine's ten-second programs and could never fail a microsecond benchmark.

The simulation runs with its default screen (the relative forms of the study's duration filters and uniform
timeout since 6c25cc9: a quantile of the run's own reference medians, so the same tests are kept and limited at
any unit) plus the graded and noise-aware rewards. The study's files in seconds (duration_filter_2s, ...,
uniform_timeout) stay out: they are a reward designer's own constants, which rightly act differently on other
durations.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from audits.checks.registered import EXAMPLE_REWARD_ENVIRONMENTS
from audits.checks.reward_environments import load_environments
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import legacy_options, run_audits
from audits.protocol import registry
from audits.report.inputs import load_corpora

ROOT = Path(__file__).resolve().parents[2]
SECONDS = ("duration_s", "cpu_s", "timeout_s", "wall_s")
FACTORS = (1e-4, 100.0)
RELATIVE_ENVIRONMENTS = (*EXAMPLE_REWARD_ENVIRONMENTS, "graded", "noise_aware")


def _scaled(corpus, factor: float):
    out = corpus.copy()
    for column in SECONDS:
        if column in out.columns:
            out[column] = out[column] * factor
    return out


def _findings(node, audit: str = "", out: dict | None = None) -> dict:
    """Every finding in a whole audit's JSON, keyed by audit, metric and whom it judges."""
    out = {} if out is None else out
    if isinstance(node, dict):
        if "metric" in node and "level" in node:
            key = (audit, node["metric"]) + tuple(str(node.get(k)) for k in ("subject", "environment", "campaign",
                                                                               "problem"))
            assert key not in out, key
            out[key] = node
        for name, value in node.items():
            _findings(value, name if name in registry.names() else audit, out)
    elif isinstance(node, list):
        for value in node:
            _findings(value, audit, out)
    return out


def _audit(corpus, *, simulation_run, pairs, compare, names=None) -> dict:
    environments = load_environments([ROOT / "fixtures" / "environments" / f"{n}.yaml"
                                      for n in RELATIVE_ENVIRONMENTS])
    options = legacy_options(n_boot=30, simulation_run=simulation_run, pairs=pairs,
                             reward_environments=environments)
    options["compare"] = replace(options["compare"], **compare)
    whole = run_audits(corpus, names or registry.names(), options=options)
    assert not whole.skipped, whole.skipped
    return _findings(whole.to_dict())


CORPORA = {
    # the drift (c1 = 0.63 c0 + 53 ms on programs of about 100 ms), a busy and a quiet environment
    "synthetic": dict(simulation_run=("quiet", "stored"), compare={"a": "ref-001", "b": "ref-006"},
                      pairs=[(("quiet", "stored"), ("quiet", "fresh")), (("busy", "stored"), ("quiet", "stored"))]),
    # two real campaigns of the shipped suite, collected in the sandbox
    "shipped": dict(simulation_run=("quiet", "quiet-b"), compare={"a": "accepted", "b": "time_limit_exceeded"},
                    pairs=[(("quiet", "quiet-a"), ("quiet", "quiet-b"))]),
}


def _corpus(name: str):
    if name == "synthetic":
        return synthesize(n_problems=12, n_tests=4, n_solutions=9, n_repeats=4, n_candidates=2, busy=True, seed=3,
                          campaigns=(("stored", 1.0, 0.0), ("fresh", 0.63, 0.053))).corpus
    return load_corpora([str(ROOT / "fixtures" / "corpora" / f"{n}.parquet") for n in ("quiet-a", "quiet-b")])


@pytest.fixture(scope="module", params=sorted(CORPORA))
def audited(request):
    corpus = _corpus(request.param)
    return corpus, CORPORA[request.param], _audit(corpus, **CORPORA[request.param])


@pytest.mark.parametrize("factor", FACTORS)
def test_every_level_is_the_same_in_any_unit_of_time(audited, factor):
    corpus, how, base = audited
    scaled = _audit(_scaled(corpus, factor), **how)
    assert scaled.keys() == base.keys()
    moved = {key: (base[key]["level"], scaled[key]["level"], base[key].get("value"), scaled[key].get("value"))
             for key in base if base[key]["level"] != scaled[key]["level"]}
    # The one constant in seconds left: contention reads wall/CPU only from executions of >= 0.1 s CPU, since a
    # process's start-up is a fixed cost (audits.checks.declared.clocks.CONTENTION_MIN_CPU_S). Programs of
    # microseconds then have nothing to read it from: n/a with that reason, never another verdict.
    short = {key for key, (_, level, *_) in moved.items() if key[:2] == ("reliability", "contention")
             and level == "n/a" and factor < 1 and "at least 0.1 s of CPU" in scaled[key]["reason"]}
    assert not set(moved) - short, {k: moved[k] for k in set(moved) - short}
    judged = [key for key in base if base[key]["level"] in ("pass", "warn", "fail")]
    assert len(judged) > 20  # the comparison has something to compare


def test_the_planted_intercept_fails_at_every_scale_and_says_its_share():
    corpus = _corpus("synthetic")
    for factor in (1.0, *FACTORS):
        found = _audit(_scaled(corpus, factor), **CORPORA["synthetic"], names=["calibration"])
        intercept = next(f for k, f in found.items() if k[1] == "affine_intercept_ms" and "fresh" in k[2])
        assert intercept["level"] == "fail"
        assert intercept["value"] == pytest.approx(53 * factor, rel=0.05)
        share = float(intercept["message"].split("], ")[1].split("%")[0]) / 100
        assert share == pytest.approx(53 / np.median(_fresh_cell_medians_ms(corpus)), rel=0.15)


def _fresh_cell_medians_ms(corpus):
    fresh = corpus[(corpus["environment"] == "quiet") & (corpus["campaign"] == "fresh") & (corpus["status"] == "ok")
                   & (corpus["role"] != "floor")]
    return fresh.groupby(["problem", "test", "solution"], observed=True)["duration_s"].median().to_numpy() * 1000
