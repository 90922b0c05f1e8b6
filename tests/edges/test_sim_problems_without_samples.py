"""The simulation counts, and resamples, the problems that gave a sample, not every problem with a rollout.

Found on a real archive (BAPCtools): problem 'helloproblemtools' got no sample while 'different' had 15, yet the
audit said "n = 2 problems" and every interval collapsed onto its point value ("95% CI 0.46-0.46, n = 2
problems"): the bootstrap resampled the problem without samples too, so every resample held 'different' alone
or nothing. Here a problem has a single correct reference (scored against an empty pool: rollouts, no sample).
Planted truth: that problem adds nothing to any figure, so the audit equals the audit without it, in point
figures, verdicts and (with two problems with samples) every bootstrap interval; with one problem with samples
there is no interval, and the findings and the terminal say so instead of "n = 2 problems".
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

import speedaudit
from audits.cli import main
from audits.corpus.dataset import save_dataset
from audits.engine.partitioned import run_partitioned_simulation

ROOT = Path(__file__).resolve().parents[2]
ENV_FILES = [ROOT / "fixtures" / "environments" / f"{n}.yaml" for n in ("top30", "uniform_timeout")]
N_BOOT = 200
SAMPLED = ("different", "other")

def _rows(problem: str, n_solutions: int, seed: int, scale: float = 0.01) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"problem": problem, "test": f"t{t}", "solution": f"s{s}", "repeat": r,
             "duration_s": float(scale * (1 + s) * (1 + t) * np.exp(0.2 * rng.standard_normal())), "status": "ok"}
            for s in range(n_solutions) for t in range(3) for r in range(3)]

def _corpus(tmp_path: Path, problems: tuple[str, ...]) -> Path:
    """A corpus file (read back through the public loader) of the named problems: 'different' and 'other' with
    six correct references each, 'hello' with one (its rollouts have no pool to be ranked in: no sample)."""
    rows = []
    for k, name in enumerate(problems):
        rows += _rows(name, 1, 7) if name == "hello" else _rows(name, 6, k + 1, scale=0.01 * (k + 1))
    path = tmp_path / f"{'-'.join(problems)}.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path

def _audit(path: Path):
    return speedaudit.run_audit("simulation", speedaudit.load_corpus(path), n_boot=N_BOOT,
                                reward_environments=_environments())

def _environments():
    from audits.checks.reward_environments import load_reward_environments

    return load_reward_environments(ENV_FILES)

def _figures(audit) -> dict:
    """Every figure per reward environment but the counts of problems with rollouts, their solutions and tests (and the text naming them)."""
    envs = json.loads(json.dumps(audit.to_dict()))["reward_environments"]
    return {name: {k: v for k, v in d.items() if k not in (
                      "n_problems_total", "ci_reason", "n_solutions", "n_optimization_tests")}
            for name, d in envs.items()}

def test_one_problem_with_samples_has_no_interval_and_says_so(tmp_path):
    audit = _audit(_corpus(tmp_path, ("different", "hello")))
    alone = _audit(_corpus(tmp_path, ("different",)))
    envs = json.loads(json.dumps(audit.to_dict()))["reward_environments"]
    for name, d in envs.items():
        assert (d["n_problems"], d["n_problems_total"]) == (1, 2), name
        assert not [k for k, v in d.items() if k.endswith(("_ci_low", "_ci_high")) and v is not None], name
        assert d["ci_reason"].startswith("no CI: 1 problem with samples")
    # the point figures and the verdicts are those of the problem with samples alone (the verdict stands)
    assert _figures(audit) == _figures(alone)
    assert {f.level for f in audit.findings} >= {"pass", "fail"}  # judged: a learnable and a saturated one
    messages = [f.message for f in audit.findings if f.level in ("pass", "warn", "fail")]
    assert messages and all("no CI: 1 problem with samples, of 2 with rollouts" in m for m in messages)
    assert not any("n = 2 problems" in m for m in messages)

def test_the_bootstrap_resamples_only_the_problems_with_samples(tmp_path):
    with_hello = _audit(_corpus(tmp_path, ("different", "other", "hello")))
    without = _audit(_corpus(tmp_path, ("different", "other")))
    figures = _figures(with_hello)
    assert figures == _figures(without)
    top = figures["top30"]
    assert top["n_problems"] == 2 and top["auc_ci_low"] < top["auc_ci_high"]  # real intervals compared
    messages = [f.message for f in with_hello.findings if f.level in ("pass", "warn", "fail")]
    assert messages and all("2 problems with samples, of 3 with rollouts" in m for m in messages)

def test_the_terminal_says_there_is_no_interval(tmp_path, capsys):
    path = _corpus(tmp_path, ("different", "hello"))
    args = ["audit", "simulation", str(path), "--n-boot", str(N_BOOT)]
    for env in ENV_FILES:
        args += ["--reward-env", str(env)]
    main(args)
    out = capsys.readouterr().out
    assert ": 2 problems, 7 correct reference solutions" in out
    assert "no CI: 1 problem with samples, of 2 with rollouts" in out
    table = out.split("\n\n")[1]
    assert "(no CI)" in table and "[" not in table  # no interval printed, degenerate or not
    assert "n = 2 problems" not in out

def test_dask_counts_the_same_problems(tmp_path):
    import dask
    from distributed import Client, LocalCluster

    from audits.engine.partitioned._common import LOCAL_CLUSTER_CONFIG

    for problems in (("different", "hello"), ("different", "other", "hello")):
        corpus = speedaudit.load_corpus(_corpus(tmp_path, problems))
        memory = speedaudit.run_audit("simulation", corpus, n_boot=N_BOOT, reward_environments=_environments())
        dataset = save_dataset(corpus, tmp_path / "-".join(problems), problems_per_partition=1)
        with dask.config.set(LOCAL_CLUSTER_CONFIG), \
                LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                             dashboard_address=None) as cluster, Client(cluster) as client:
            on_dask = run_partitioned_simulation(dataset, client=client, n_boot=N_BOOT,
                                                 reward_environments=_environments())
        assert _same(on_dask.to_dict(), memory.to_dict())
        assert on_dask.diagnostics["n_problems"].tolist() == [len(problems) - 1] * 2

def _same(a, b) -> bool:
    """Equal JSON, floats to 1e-12."""
    a, b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))
    return a == b
