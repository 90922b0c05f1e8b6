"""Reward environments relative to the run's reference medians judge a corpus the same in any unit of time.

The study's duration filters (drop optimization tests whose reference median exceeds 2 / 0.5 / 0.1 s) and its
uniform 1 s timeout are constants in seconds: on quiet-a's programs timed as microsecond benchmarks (x 1e-4) the
filters dropped nothing and duration_filter_0.1s passed as top30 does, while on ten-second programs (x 100) every
one of them dropped every test and failed "sparse, non-monotone, off-diagonal, dead groups"; the timeout passed
everything (saturated) or nothing (sparse). The relative keys -- ``pre.max_reference_quantile`` and a uniform
``limit.reference_quantile`` x ``factor``, quantiles of the reference medians of the run's optimization tests --
scale with the corpus; the shipped duration_filter_q90/q50/q10 and uniform_timeout_2x use them.

Checked: every level and figure of the simulation is the same at x 1e-4, 1 and 100 (real and synthetic corpora);
the cut and the limit equal an independent pandas computation of the pools' medians and numpy's quantile; the
partition steps (what Dask runs per partition of problems) take the whole run's quantile; and a limit given in
seconds with a factor, which was ignored silently, is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audits.checks.reward_environments import EnvironmentFileError, load_reward_environments
from audits.checks.simulation import (combine_parts, fact_columns, facts_part, partition_part, plan_run,
                                      run_simulation_audit)
from audits.corpus.synthetic import synthesize
from audits.protocol.context import AuditContext
from audits.protocol.findings import to_jsonable
from audits.report.inputs import load_corpora
from stats.rewards import EnvironmentSpecError, RewardEnvironment, apply_environment

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "fixtures" / "environments"
RELATIVE = ("top30", "duration_filter_q90", "duration_filter_q50", "duration_filter_q10", "uniform_timeout_2x")
SECONDS = ("duration_s", "cpu_s", "timeout_s", "wall_s")


def _scaled(corpus: pd.DataFrame, factor: float) -> pd.DataFrame:
    out = corpus.copy()
    for column in SECONDS:
        if column in out.columns:
            out[column] = out[column] * factor
    return out


def _environments():
    return load_reward_environments([SHIPPED / f"{name}.yaml" for name in RELATIVE])


CORPORA = {
    "quiet-a": (lambda: load_corpora([str(ROOT / "fixtures" / "corpora" / "quiet-a.parquet")]), None),
    "synthetic": (lambda: synthesize(n_problems=8, n_tests=5, n_solutions=8, n_repeats=3, seed=4).corpus, "quiet"),
}


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_every_level_and_figure_is_the_same_in_any_unit_of_time(name):
    make, environment = CORPORA[name]
    corpus = make()
    audits = {f: run_simulation_audit(_scaled(corpus, f), reward_environments=_environments(),
                                      environment=environment, n_boot=30) for f in (1e-4, 1.0, 100.0)}
    base = audits[1.0].diagnostics.set_index("reward_environment").sort_index()
    assert (base["kept_test_share"] < 1).sum() >= 2 and base.loc["uniform_timeout_2x", "limited_share"] > 0
    for factor in (1e-4, 100.0):
        other = audits[factor].diagnostics.set_index("reward_environment").sort_index()
        assert list(other["level"]) == list(base["level"]) and list(other["verdict"]) == list(base["verdict"])
        for column in ("auc", "monotonicity", "diagonal_deviation", "zero_advantage_rate", "kept_test_share",
                       "limited_share", "n_samples"):
            np.testing.assert_allclose(other[column].to_numpy(float), base[column].to_numpy(float), rtol=1e-9,
                                       err_msg=f"{column} at x{factor}")
        levels = sorted((f.subject, f.metric, f.level) for f in audits[factor].findings)
        assert levels == sorted((f.subject, f.metric, f.level) for f in audits[1.0].findings)


def _hand_medians(corpus: pd.DataFrame) -> pd.Series:
    """Per optimization test, the median over correct references of each reference's median ok duration."""
    rows = corpus[(corpus["role"].astype(str) == "reference") & corpus["correct"].astype(bool)
                  & (corpus["status"].astype(str) == "ok") & (corpus["test_kind"].astype(str) == "optimization")]
    cells = rows.groupby(["problem", "test", "solution"], observed=True)["duration_s"].median()
    return cells.groupby(level=["problem", "test"], observed=True).median()


def test_the_cut_and_the_limit_are_the_quantiles_of_the_reference_medians():
    corpus = synthesize(n_problems=6, n_tests=4, n_solutions=6, n_repeats=3, seed=9).corpus
    corpus = corpus[corpus["environment"] == "quiet"].reset_index(drop=True)
    medians = _hand_medians(corpus)
    for q in (0.1, 0.5, 0.9):
        env = RewardEnvironment.from_dict({"name": "f", "pre": {"max_reference_quantile": q}, "post": {"tau": 30}})
        tests = apply_environment(corpus, env).tests
        opt = tests[tests["test_kind"] == "optimization"]
        kept = {(str(p), str(t)) for p, t, k in zip(opt["problem"], opt["test"], opt["kept"]) if k}
        cut = np.quantile(medians.to_numpy(), q)
        assert kept == {(str(p), str(t)) for (p, t), m in medians.items() if m <= cut}
        assert 0 < len(kept) < len(opt)
    env = RewardEnvironment.from_dict({"name": "u", "limit": {"reference_quantile": 1.0, "factor": 1.5},
                                       "post": {"tau": 100}})
    tests = apply_environment(corpus, env).tests
    limits = tests.loc[tests["test_kind"] == "optimization", "limit_s"].to_numpy()
    np.testing.assert_allclose(limits, 1.5 * medians.max(), rtol=1e-12)
    assert tests.loc[tests["test_kind"] != "optimization", "limit_s"].isna().all()


def test_partitions_of_problems_take_the_whole_run_quantile():
    corpus = synthesize(n_problems=6, n_tests=4, n_solutions=6, n_repeats=3, seed=9).corpus
    corpus = corpus[corpus["environment"] == "quiet"].reset_index(drop=True)
    envs = _environments()
    problem = corpus["problem"].astype(str)
    floor = corpus["role"].astype(str) == "floor"
    names = sorted(problem[~floor].unique())

    def audit(groups, floor_apart=False):
        parts = [AuditContext(corpus.loc[(problem.isin(g) | (floor & ~floor_apart)).to_numpy()].reset_index(drop=True))
                 for g in groups]
        if floor_apart:  # the floor pseudo-problem in a partition of its own, as a dataset stores it
            parts.append(AuditContext(corpus.loc[floor.to_numpy()].reset_index(drop=True)))
        plan = plan_run(AuditContext(corpus), [facts_part(p, fact_columns(envs), False) for p in parts], envs,
                        environment=None, campaign=None, group_sizes=(2, 4, 8, 16), n_bins=10,
                        quality_distribution="uniform", include_incorrect=False)
        result = combine_parts([partition_part(p, plan) for p in parts], plan, thresholds=None, n_boot=30, seed=0)
        return json.dumps(to_jsonable(result.to_dict()), sort_keys=True)

    whole = audit([names])
    assert whole == audit([names[i:i + 2] for i in range(0, len(names), 2)])
    assert whole == audit([[n] for n in names], floor_apart=True)


@pytest.mark.parametrize(("spec", "key"), [
    ({"limit": {"kind": "uniform", "seconds": 1.0, "factor": 2.0}}, "limit.factor"),
    ({"limit": {"kind": "uniform", "seconds": 1.0, "reference_quantile": 0.5}}, "limit.reference_quantile"),
    ({"limit": {"kind": "uniform"}}, "limit.seconds"),
    ({"limit": {"kind": "ranked_worst", "fastest_percent": 80, "reference_quantile": 0.5}}, "limit.reference_quantile"),
    ({"pre": {"max_reference_s": 2.0, "max_reference_quantile": 0.5}}, "pre.max_reference_quantile"),
    ({"pre": {"max_reference_quantile": 0}}, "pre.max_reference_quantile"),
    ({"pre": {"max_reference_quantile": 1.5}}, "pre.max_reference_quantile"),
])
def test_contradictions_are_refused_naming_the_key(tmp_path, spec, key):
    with pytest.raises(EnvironmentSpecError) as info:
        RewardEnvironment.from_dict({"name": "x", "post": {"tau": 30}, **spec})
    assert info.value.key == key
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"post": {"tau": 30}, **spec}))
    with pytest.raises(EnvironmentFileError, match=rf"x.json \(key {key}\)"):
        load_reward_environments([path])


def test_the_relative_environments_round_trip():
    for env in _environments():
        assert RewardEnvironment.from_dict(env.to_dict()) == env
