"""The shared per-run tables (issues 23 and 26): one in-memory ``audit all`` builds each of a run's tables once,
and what it computes equals the separate audits and a fresh computation of every table.

The counts are taken on the real functions: a counting wrapper replaces ``stats.ranking``'s
``solution_cells``, ``reference_pools``, ``percentile_table`` and ``cell_codes`` at every module that imported
them, and each call records which runs its rows belong to and how many rows it was given. Before the shared
tables, the same audit collapsed a whole run's rows into cells three times per run (the context's cells, the
aggregator comparison's cell table and the pool's) and ranked every row of a run three times (the aggregator
comparison, the per-repeat scores).
"""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

import stats.ranking
from audits.corpus.synthetic import synthesize
from audits.engine.whole_audit import run_whole_audit
from audits.protocol.context import AuditContext
from stats.ranking import percentile_table, reference_pools, solution_cells

N_BOOT = 30
PAIR = (("quiet", "c0"), ("quiet", "c1"))
COUNTED = ("solution_cells", "reference_pools", "percentile_table", "cell_codes")


@pytest.fixture(scope="module")
def corpus():
    return synthesize(n_problems=6, n_tests=4, n_correctness_tests=1, n_solutions=8, n_incorrect=1, n_candidates=2,
                      n_repeats=3, campaigns=(("c0", 1.0, 0.0), ("c1", 0.63, 0.053)), seed=11).corpus


def _runs_of(frame: pd.DataFrame) -> frozenset:
    if not {"environment", "campaign"} <= set(frame.columns) or not len(frame):
        return frozenset()
    pairs = frame[["environment", "campaign"]].astype(str).drop_duplicates()
    return frozenset(map(tuple, pairs.to_numpy().tolist()))


@pytest.fixture
def calls(monkeypatch):
    """Every call of the counted functions: (name, per_repeat, runs of its rows, number of rows)."""
    seen: list[tuple] = []
    for name in COUNTED:
        real = getattr(stats.ranking, name)

        def counting(frame, *args, _real=real, _name=name, **kwargs):
            seen.append((_name, bool(kwargs.get("per_repeat", False)), _runs_of(frame), len(frame)))
            return _real(frame, *args, **kwargs)

        for module in list(sys.modules.values()):
            if getattr(module, "__name__", "").startswith(("stats", "audits")) and getattr(module, name, None) is real:
                monkeypatch.setattr(module, name, counting)
    return seen


def _whole(corpus):
    return run_whole_audit(corpus, pairs=[PAIR], simulation_run=PAIR[0], n_boot=N_BOOT, simulation_n_boot=20)


def test_each_runs_tables_are_built_once_during_audit_all(corpus, calls):
    whole = _whole(corpus)
    assert set(whole.audits()) >= {"reliability", "discriminability", "aggregation", "calibration", "simulation"}
    runs = {(str(s.environment), str(s.campaign)) for s in AuditContext(corpus).runs}
    assert len(runs) == 2
    body = corpus.loc[(corpus["role"] != "floor").to_numpy()]
    run_rows = {run: int(((body["environment"].astype(str) == run[0]) & (body["campaign"].astype(str) == run[1]))
                         .sum()) for run in runs}
    # a call over one whole run's rows (floor rows aside): the per-run tables
    whole_run = Counter((name, per_repeat, next(iter(rs))) for name, per_repeat, rs, n in calls
                        if len(rs) == 1 and n == run_rows[next(iter(rs))])
    for run in runs:
        assert whole_run[("cell_codes", False, run)] == 1, (run, whole_run)
        assert whole_run[("solution_cells", False, run)] == 1, (run, whole_run)  # the cells
        assert whole_run[("reference_pools", False, run)] == 1, (run, whole_run)  # the pool, from the same codes
        assert whole_run[("percentile_table", False, run)] == 1, (run, whole_run)  # the cells ranked
        assert whole_run[("percentile_table", True, run)] == 1, (run, whole_run)  # every row ranked
    # no other call groups a whole run's rows again: per-run tables are not rebuilt anywhere
    assert sum(whole_run.values()) == 5 * len(runs), whole_run
    # the pool groups from the run's codes, never with its own pass
    assert Counter(name for name, *_ in calls)["cell_codes"] == len(runs)


def test_reliability_tables_are_built_once_per_run(corpus, monkeypatch):
    """The repeat cells, the per-test ICCs and the test table of a run (read by the reliability,
    discriminability and clock audits) are computed once per run in ``audit all``: each counted function is
    called over a whole run's reference rows (or, for the test table, its rows) exactly once. Before, the
    clock audit computed all three again and the discriminability audit its ICCs."""
    import stats.discriminability
    import stats.reliability

    seen: list[tuple] = []
    for module, name in ((stats.reliability, "repeat_cv"), (stats.reliability, "log_duration_icc"),
                         (stats.discriminability, "test_table")):
        real = getattr(module, name)

        def counting(frame, *args, _real=real, _name=name, **kwargs):
            seen.append((_name, _runs_of(frame), len(frame)))
            return _real(frame, *args, **kwargs)

        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith(("stats", "audits")) and getattr(loaded, name, None) is real:
                monkeypatch.setattr(loaded, name, counting)
    _whole(corpus)
    ctx = AuditContext(corpus)
    for summary in ctx.runs:
        run = ctx.run(summary)
        key = (str(summary.environment), str(summary.campaign))
        sizes = {"repeat_cv": len(run.reference_rows), "log_duration_icc": len(run.reference_rows),
                 "test_table": len(run.rows)}
        for name, size in sizes.items():
            hits = [c for c in seen if c[0] == name and c[1] == frozenset({key}) and c[2] == size]
            assert len(hits) == 1, (name, key, hits)


def test_audit_all_json_equals_the_separate_audits(corpus):
    whole = _whole(corpus).to_dict()
    for name in ("reliability", "discriminability", "aggregation", "clocks", "simulation", "calibration"):
        alone = run_whole_audit(corpus, audits=[name], pairs=[PAIR], simulation_run=PAIR[0], n_boot=N_BOOT,
                                simulation_n_boot=20).to_dict()   # a fresh context of its own
        assert alone[name] == whole[name], name


def _language_corpus(seed: int = 3) -> pd.DataFrame:
    """Two campaigns; problem 'mix' has references in two languages (split pools, Python 30x slower, the
    candidates twice as fast as the references of their language), a solution whose
    ``correct`` label differs between its repeats, and timeouts without a duration."""
    rng = np.random.default_rng(seed)
    speed = {"cpp": 1.0, "python": 30.0}  # an interpreter's constant: fast Python candidates, slow next to C++
    rows = []
    for campaign, scale in (("c0", 1.0), ("c1", 1.3)):
        for problem in ("mix", "one", "two"):
            for test in ("t0", "t1", "t2"):
                for solution, language, role in (("a", "cpp", "reference"), ("b", "python", "reference"),
                                                 ("c", "cpp", "reference"), ("d", "python", "reference"),
                                                 ("e", "python", "candidate"), ("f", "cpp", "candidate")):
                    if problem != "mix":
                        language = "cpp"
                    for repeat in range(3):
                        status = "timeout" if rng.random() < 0.08 else "ok"
                        rows.append({"environment": "quiet", "campaign": campaign, "problem": problem,
                                     "test": test, "solution": solution, "repeat": repeat,
                                     "duration_s": np.nan if status != "ok" else
                                     scale * speed[language] * (0.5 if role == "candidate" else 1.0)
                                     * float(rng.lognormal(-3, 0.2)),
                                     "status": status, "role": role, "language": language,
                                     "correct": not (solution == "c" and repeat == 1),
                                     "test_kind": "optimization"})
    frame = pd.DataFrame(rows)
    for column in ("environment", "campaign", "problem", "test", "solution", "status", "role", "language",
                   "test_kind"):
        frame[column] = frame[column].astype("category")
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


@pytest.mark.parametrize("make", [lambda: synthesize(n_problems=5, n_repeats=3, seed=2).corpus, _language_corpus],
                         ids=["synthetic", "languages"])
def test_shared_tables_equal_a_fresh_computation(make):
    """Each shared table equals the stats function run on the run's rows from scratch (its own grouping pass)."""
    ctx = AuditContext(make())
    for summary in ctx.runs:
        run = ctx.run(summary)
        fresh_pools = reference_pools(run.rows)
        pd.testing.assert_frame_equal(run.pools, fresh_pools)
        pd.testing.assert_frame_equal(run.cells, solution_cells(run.rows))
        pd.testing.assert_frame_equal(run.cell_percentiles, percentile_table(run.rows, pools=fresh_pools))
        pd.testing.assert_frame_equal(run.repeat_percentiles,
                                      percentile_table(run.rows, per_repeat=True, pools=fresh_pools))
        if "language" in run.rows.columns:
            assert "pool_language" in run.pools.columns  # the split pools are what was compared


def test_ptau_ranks_each_candidate_in_its_own_languages_pool():
    """p_tau of the fresh candidates against the stored pool, by hand with scipy: a candidate of a problem whose
    references mix languages is ranked among the references of its own language (before, ``ptau_sides``
    dropped ``language`` and ranked it among both languages' references)."""
    from scipy.stats import percentileofscore

    from stats.calibration import ptau_sensitivity

    corpus = _language_corpus()
    ok = corpus["status"] == "ok"
    src, tgt = corpus[corpus["campaign"] == "c0"], corpus[corpus["campaign"] == "c1"]
    pool_rows = src[ok[src.index] & (src["role"] == "reference") & src["correct"]]
    pool = pool_rows.groupby(["problem", "test", "solution"], observed=True).agg(
        d=("duration_s", "median"), language=("language", "first")).reset_index()
    cand = tgt[tgt["role"] == "candidate"]
    passed = {10.0: 0, 30.0: 0}
    n = 0
    for (problem, _solution), rows in cand.groupby(["problem", "solution"], observed=True):
        language = rows["language"].iloc[0]
        pct, c = [], True
        for test, cell in rows.groupby("test", observed=True):
            oks = cell["status"] == "ok"
            if 2 * oks.sum() < len(cell):
                pct.append(100.0)
                c = False
                continue
            mine = pool[(pool["problem"] == problem) & (pool["test"] == test)]
            if problem == "mix":
                mine = mine[mine["language"] == language]
            pct.append(percentileofscore(mine["d"].to_numpy(), cell.loc[oks, "duration_s"].median(), kind="mean"))
        n += 1
        q = np.mean(pct) / 100.0
        for tau in passed:
            passed[tau] += int(c and q <= tau / 100.0)
    table = ptau_sensitivity(corpus, source="c0", target="c1", slope=1.0, intercepts=[0.0], key="campaign")
    assert table["n_solutions"].tolist() == [n, n]
    assert dict(zip(table["tau"], table["n_pass"])) == passed


def test_clocks_from_the_shared_tables_equal_the_clocks_audit_alone(corpus):
    """With a second clock, the clocks audit given the whole audit's context (wall-time q from the run's shared
    cell table, runs found by label codes) equals it computed from the frame alone and from shuffled rows."""
    from audits.checks.clocks import run_clocks_audit

    rng = np.random.default_rng(4)
    with_cpu = corpus.assign(cpu_s=corpus["duration_s"] * rng.lognormal(0.0, 0.3, len(corpus)),
                             load_1m=np.where(corpus["campaign"] == "c0", 0.5, 2.0))
    ctx = AuditContext(with_cpu)
    shared = run_clocks_audit(with_cpu, context=ctx, n_boot=N_BOOT)
    alone = run_clocks_audit(with_cpu, n_boot=N_BOOT)
    shuffled = run_clocks_audit(with_cpu.sample(frac=1.0, random_state=1), n_boot=N_BOOT)
    assert shared.measures == ("duration_s", "cpu_s") and len(shared.agreement)
    assert shared.quietest == ("quiet", "c0")
    for other in (alone, shuffled):
        assert shared.to_dict() == other.to_dict()


def test_simulator_quality_ranks_each_reference_in_its_own_languages_pool():
    """The simulator's per-repeat quality (and so the simulation audit) ranks a reference of a problem whose
    references mix languages among the references of its own language, like every other table: checked by hand
    with pandas. Before, its per-repeat frame dropped ``language`` and ranked the 30x slower Python references
    among the C++ ones too."""
    from stats.simulator import repeat_quality

    corpus = _language_corpus()
    run = corpus[corpus["campaign"] == "c0"]
    refs = run[(run["role"] == "reference") & run["correct"]]
    ok = refs["status"] == "ok"
    pool = (refs[ok].groupby(["problem", "test", "solution"], observed=True)
            .agg(d=("duration_s", "median"), language=("language", "first")).reset_index())
    expected = []
    for (problem, solution, repeat), rows in refs.groupby(["problem", "solution", "repeat"], observed=True):
        pct = []
        for row in rows.itertuples():
            mine = pool[(pool["problem"] == problem) & (pool["test"] == row.test) & (pool["solution"] != solution)]
            if problem == "mix":
                mine = mine[mine["language"] == row.language]
            d = mine["d"].to_numpy()
            pct.append(100.0 if row.status != "ok" else
                       100.0 * ((d < row.duration_s).sum() + 0.5 * (d == row.duration_s).sum()) / len(d))
        expected.append({"problem": problem, "solution": solution, "repeat": repeat, "q": np.mean(pct) / 100})
    want = pd.DataFrame(expected).sort_values(["problem", "solution", "repeat"]).reset_index(drop=True)
    got = repeat_quality(run, pools=reference_pools(run))
    got = got.assign(**{c: got[c].astype(str) for c in ("problem", "solution")})
    got = got.sort_values(["problem", "solution", "repeat"]).reset_index(drop=True)
    want = want.assign(**{c: want[c].astype(str) for c in ("problem", "solution")})
    pd.testing.assert_frame_equal(got[["problem", "solution", "repeat"]], want[["problem", "solution", "repeat"]],
                                  check_dtype=False)
    np.testing.assert_allclose(got["q"].to_numpy(dtype=float), want["q"].to_numpy(dtype=float), rtol=0, atol=1e-12)
    # and the simulation audit of the whole corpus reads the same ranking as the shared per-repeat table
    ctx = AuditContext(corpus)
    shared = ctx.run(("quiet", "c0"))
    fresh = repeat_quality(shared.rows, pools=shared.pools,
                           percentiles=shared.repeat_percentiles["percentile"].to_numpy())
    pd.testing.assert_frame_equal(fresh.reset_index(drop=True),
                                  repeat_quality(shared.rows, pools=shared.pools).reset_index(drop=True))
