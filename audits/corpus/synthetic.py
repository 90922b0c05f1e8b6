"""Synthetic timing corpora with planted truth.

The generative model (all durations in seconds):

* Problem p has ``n_tests`` optimization tests whose relative workload spans
  ``span_p``: w_pt = span_p ** ((t - (T-1)) / (T-1)), so the largest test has
  w = 1 and the smallest 1/span_p. A share ``filterable_share`` of problems get
  a wide span (log-uniform in ``wide_span``), the rest a narrow one
  (``narrow_span``). Correctness tests have a tiny workload (w = 1e-3).
* Solution s of problem p has a latent quality: a complexity exponent a_sp
  (uniform in ``exponent_range``) and a constant factor k_sp (lognormal,
  sd ``constant_sd``). Its true duration is

      d_true = floor_s + base_p * k_sp * w_pt ** a_sp

  with base_p log-uniform in ``base_seconds`` (the typical solution's time on
  the largest test).
* Campaign c relates to the first campaign by an affine drift:
  d_c = slope_c * d_true + intercept_c.
* A quiet environment observes d_obs = d_c * (1 + e_mult) + e_add with
  e_mult ~ N(0, noise_cv), e_add ~ N(0, noise_add_s) (DESIGN.md's noise model).
* A busy environment ("busy worker") multiplies by a state-dependent load: an
  AR(1) load level along a shuffled execution order (persistent contention),
  a per-cell factor exp(busy_cell_sd * t_3) that persists across a cell's
  repeats (the cell ran while the machine was in one state), heavy-tailed
  per-execution spikes exp(busy_spike_sd * |t_2|) and an exponential queueing
  delay of mean ``busy_delay_s``. Nothing about it is a fixed map of d_true.
* Incorrect reference solutions fail (``wrong_answer``) on a random subset of
  tests; executions longer than ``timeout_s`` become ``timeout`` rows at the
  limit; ``floor`` rows time the empty program.

The truth (spec, per-problem spans, per-solution latent quality and true q,
planted repeat CV, drift) is returned beside the corpus and written as JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.signal import lfilter

from audits.corpus._json import to_jsonable
from audits.corpus.io import atomic_write, save_corpus
from audits.corpus.schema import ROLES, STATUSES, TEST_KINDS
from stats.ranking import percentile_table, problem_scores

__all__ = ["SyntheticSpec", "SyntheticCorpus", "synthesize", "write_synthetic"]


@dataclass(frozen=True)
class SyntheticSpec:
    """Parameters of a synthetic corpus (see the module docstring for the model)."""

    n_problems: int = 20
    n_tests: int = 8
    n_correctness_tests: int = 2
    n_solutions: int = 12
    n_incorrect: int = 2
    n_candidates: int = 4
    n_repeats: int = 5
    filterable_share: float = 0.5
    wide_span: tuple[float, float] = (20.0, 200.0)
    narrow_span: tuple[float, float] = (1.0, 1.3)
    base_seconds: tuple[float, float] = (0.05, 0.5)
    exponent_range: tuple[float, float] = (1.0, 1.6)
    constant_sd: float = 0.5
    floor_s: float = 0.02
    noise_cv: float = 0.05
    noise_add_s: float = 0.001
    campaigns: tuple[tuple[str, float, float], ...] = (("c0", 1.0, 0.0),)
    environments: tuple[str, ...] = ("quiet",)
    busy: bool = False
    busy_name: str = "busy"
    busy_ar: float = 0.95
    busy_load_sd: float = 0.5
    busy_cell_sd: float = 0.6
    busy_spike_sd: float = 0.3
    busy_delay_s: float = 0.03
    incorrect_fail_share: float = 0.5
    timeout_s: float = 10.0
    floor_rows: int = 20
    seed: int = 0

    def __post_init__(self):
        for name in ("n_problems", "n_tests", "n_solutions", "n_repeats"):
            if getattr(self, name) < 1:
                raise ValueError(f"SyntheticSpec.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("n_correctness_tests", "n_incorrect", "n_candidates", "floor_rows"):
            if getattr(self, name) < 0:
                raise ValueError(f"SyntheticSpec.{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.filterable_share <= 1:
            raise ValueError("SyntheticSpec.filterable_share must lie in [0, 1]")
        if self.noise_cv < 0 or self.noise_add_s < 0:
            raise ValueError("noise sizes must be >= 0")
        if not self.campaigns:
            raise ValueError("at least one campaign (name, slope, intercept) is needed")

    def rows(self) -> int:
        per_run = self.n_problems * (self.n_tests + self.n_correctness_tests) * (
            self.n_solutions + self.n_incorrect + self.n_candidates) * self.n_repeats + self.floor_rows
        n_env = len(self.environments) + int(self.busy)
        return per_run * n_env * len(self.campaigns)


@dataclass(frozen=True)
class SyntheticCorpus:
    """A synthetic corpus and the truth it was generated from."""

    corpus: pd.DataFrame
    truth: dict = field(repr=False)
    solutions: pd.DataFrame = field(repr=False)
    problems: pd.DataFrame = field(repr=False)


def _loguniform(rng, bounds, size):
    lo, hi = bounds
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size))


def synthesize(spec: SyntheticSpec | None = None, **overrides) -> SyntheticCorpus:
    """Generate a corpus with planted truth.

    Parameters
    ----------
    spec : SyntheticSpec, optional
    **overrides
        Fields of :class:`SyntheticSpec` to change, e.g. ``n_problems=100``.

    Returns
    -------
    SyntheticCorpus

    Examples
    --------
    >>> synth = synthesize(n_problems=3, n_tests=4, n_solutions=5, n_repeats=2, seed=1)
    >>> len(synth.corpus) == synth.truth["spec"]["rows"]
    True
    """
    spec = replace(spec or SyntheticSpec(), **overrides)
    rng = np.random.default_rng(spec.seed)
    P, T_opt, T_cor = spec.n_problems, spec.n_tests, spec.n_correctness_tests
    T = T_opt + T_cor
    S_ref, S_bad, S_cand = spec.n_solutions, spec.n_incorrect, spec.n_candidates
    S = S_ref + S_bad + S_cand
    R = spec.n_repeats

    wide = rng.random(P) < spec.filterable_share
    span = np.where(wide, _loguniform(rng, spec.wide_span, P), _loguniform(rng, spec.narrow_span, P))
    base = _loguniform(rng, spec.base_seconds, P)
    frac = (np.arange(T_opt) - (T_opt - 1)) / max(T_opt - 1, 1)
    workload = np.empty((P, T))
    workload[:, :T_opt] = span[:, None] ** frac[None, :]
    workload[:, T_opt:] = 1e-3
    exponent = rng.uniform(*spec.exponent_range, size=(P, S))
    constant = np.exp(rng.normal(0.0, spec.constant_sd, size=(P, S)))
    d_true = spec.floor_s + base[:, None, None] * constant[:, None, :] * workload[:, :, None] ** exponent[:, None, :]

    # Incorrect solutions fail on a random subset of tests (always >= 1).
    fails = np.zeros((P, T, S), dtype=bool)
    if S_bad:
        bad_slice = rng.random((P, T, S_bad)) < spec.incorrect_fail_share
        bad_slice[:, 0, :] |= ~bad_slice.any(axis=1)
        fails[:, :, S_ref:S_ref + S_bad] = bad_slice

    problem_ids = np.array([f"p{i:04d}" for i in range(P)])
    test_ids = np.array([f"opt-{i:02d}" for i in range(T_opt)] + [f"cor-{i:02d}" for i in range(T_cor)])
    solution_ids = np.array([f"ref-{i:03d}" for i in range(S_ref)] + [f"bad-{i:02d}" for i in range(S_bad)]
                            + [f"cand-{i:02d}" for i in range(S_cand)])
    role_codes_solution = np.where(np.arange(S) < S_ref + S_bad, ROLES.index("reference"), ROLES.index("candidate"))
    correct_of_solution = (np.arange(S) < S_ref) | (np.arange(S) >= S_ref + S_bad)

    env_list = list(spec.environments) + ([spec.busy_name] if spec.busy else [])
    frames = []
    for campaign, slope, intercept in spec.campaigns:
        d_campaign = slope * d_true + intercept
        for env in env_list:
            is_busy = spec.busy and env == spec.busy_name
            d = np.broadcast_to(d_campaign[..., None], (P, T, S, R)).copy()
            if is_busy:
                order = rng.permutation(d.size)
                shocks = rng.normal(0.0, spec.busy_load_sd * np.sqrt(1 - spec.busy_ar**2), d.size)
                level = _ar1(shocks, spec.busy_ar)
                load = np.empty(d.size)
                load[order] = level
                cell = spec.busy_cell_sd * rng.standard_t(3, size=(P, T, S, 1))
                spikes = spec.busy_spike_sd * np.abs(rng.standard_t(2, size=d.shape))
                d = d * np.exp(load.reshape(d.shape) + np.clip(cell, -3, 3) + np.clip(spikes, 0, 4))
                d = d + rng.exponential(spec.busy_delay_s, size=d.shape)
            else:
                d = d * (1.0 + rng.normal(0.0, spec.noise_cv, size=d.shape))
                d = d + rng.normal(0.0, spec.noise_add_s, size=d.shape)
            d = np.maximum(d, 1e-5)
            status = np.zeros(d.shape, dtype=np.int8)  # index into STATUSES
            status[np.broadcast_to(fails[..., None], d.shape)] = STATUSES.index("wrong_answer")
            timed_out = d > spec.timeout_s
            status[timed_out & (status == 0)] = STATUSES.index("timeout")
            d[timed_out] = spec.timeout_s
            frames.append(_to_frame(
                d, status, campaign=campaign, environment=env, problem_ids=problem_ids, test_ids=test_ids,
                solution_ids=solution_ids, role_codes=role_codes_solution, correct=correct_of_solution,
                n_opt=T_opt, workload=workload, timeout_s=spec.timeout_s))
            if spec.floor_rows:
                floor_d = spec.floor_s * (1.0 + rng.normal(0.0, spec.noise_cv, spec.floor_rows))
                if is_busy:
                    floor_d = floor_d * np.exp(np.abs(rng.standard_t(2, spec.floor_rows)) * spec.busy_spike_sd)
                    floor_d = floor_d + rng.exponential(spec.busy_delay_s, spec.floor_rows)
                frames.append(pd.DataFrame({
                    "environment": env, "campaign": campaign, "problem": "_floor", "test": "empty",
                    "solution": "python", "repeat": np.arange(spec.floor_rows), "duration_s": np.maximum(floor_d, 1e-5),
                    "status": "ok", "role": "floor", "correct": True, "test_kind": "optimization",
                    "input_bytes": 0.0, "timeout_s": spec.timeout_s}))
    corpus = pd.concat(frames, ignore_index=True)
    for column in ("environment", "campaign", "problem", "test", "solution"):
        corpus[column] = corpus[column].astype("category")
    corpus["status"] = pd.Categorical(corpus["status"].astype(object), categories=STATUSES)
    corpus["role"] = pd.Categorical(corpus["role"], categories=ROLES)
    corpus["test_kind"] = pd.Categorical(corpus["test_kind"], categories=TEST_KINDS)

    solutions, problems = _truth_tables(spec, d_true, exponent, constant, span, base, workload, problem_ids,
                                        test_ids, solution_ids, role_codes_solution, correct_of_solution)
    cell_cv = np.sqrt(spec.noise_cv**2 + (spec.noise_add_s / d_true[:, :T_opt, :S_ref]) ** 2)
    truth = {
        "spec": {**_jsonable_spec(spec), "rows": len(corpus)},
        "environments": {env: ("busy" if spec.busy and env == spec.busy_name else "quiet") for env in env_list},
        "campaigns": {name: {"slope": slope, "intercept": intercept} for name, slope, intercept in spec.campaigns},
        "noise": {"mult_cv": spec.noise_cv, "add_sd_s": spec.noise_add_s,
                  "median_cell_cv": float(np.median(cell_cv)),
                  "median_cell_sd_ms": float(np.median(cell_cv * d_true[:, :T_opt, :S_ref]) * 1000)},
        "filterable_problems": problems.loc[problems["filterable"], "problem"].tolist(),
        "filterable_share": float(problems["filterable"].mean()),
    }
    return SyntheticCorpus(corpus=corpus, truth=truth, solutions=solutions, problems=problems)


def _ar1(shocks: np.ndarray, phi: float) -> np.ndarray:
    """x_i = phi * x_{i-1} + shock_i, vectorised with scipy's IIR filter."""
    return lfilter([1.0], [1.0, -phi], shocks)


def _to_frame(d, status, *, campaign, environment, problem_ids, test_ids, solution_ids, role_codes, correct,
              n_opt, workload, timeout_s) -> pd.DataFrame:
    P, T, S, R = d.shape
    n = d.size
    p_idx = np.repeat(np.arange(P), T * S * R)
    t_idx = np.tile(np.repeat(np.arange(T), S * R), P)
    s_idx = np.tile(np.repeat(np.arange(S), R), P * T)
    r_idx = np.tile(np.arange(R), P * T * S)
    frame = pd.DataFrame({
        "environment": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[environment]),
        "campaign": pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), categories=[campaign]),
        "problem": pd.Categorical.from_codes(p_idx.astype(np.int32), categories=problem_ids),
        "test": pd.Categorical.from_codes(t_idx.astype(np.int16), categories=test_ids),
        "solution": pd.Categorical.from_codes(s_idx.astype(np.int32), categories=solution_ids),
        "repeat": r_idx.astype(np.int64),
        "duration_s": d.ravel(),
        "status": pd.Categorical.from_codes(status.ravel(), categories=STATUSES),
        "role": pd.Categorical.from_codes(role_codes[s_idx].astype(np.int8), categories=ROLES),
        "correct": correct[s_idx],
        "test_kind": pd.Categorical.from_codes((t_idx >= n_opt).astype(np.int8),
                                               categories=("optimization", "correctness")),
        "input_bytes": np.round(workload[p_idx, t_idx] * 1e6),
        "timeout_s": timeout_s,
    })
    return frame


def _truth_tables(spec, d_true, exponent, constant, span, base, workload, problem_ids, test_ids, solution_ids,
                  role_codes, correct):
    P, T, S = d_true.shape
    T_opt = spec.n_tests
    # True q: the noise-free durations ranked against the noise-free pool.
    idx = np.indices((P, T, S)).reshape(3, -1)
    clean = pd.DataFrame({
        "environment": "truth", "campaign": "truth",
        "problem": pd.Categorical.from_codes(idx[0], categories=problem_ids),
        "test": pd.Categorical.from_codes(idx[1], categories=test_ids),
        "solution": pd.Categorical.from_codes(idx[2], categories=solution_ids),
        "repeat": 0, "duration_s": d_true.ravel(), "status": "ok",
        "role": pd.Categorical.from_codes(role_codes[idx[2]], categories=ROLES),
        "correct": correct[idx[2]],
        "test_kind": np.where(idx[1] < T_opt, "optimization", "correctness"),
    })
    scores = problem_scores(percentile_table(clean), by=["problem", "solution"])
    solutions = pd.DataFrame({
        "problem": np.repeat(problem_ids, S),
        "solution": np.tile(solution_ids, P),
        "role": np.tile(np.asarray(ROLES, dtype=object)[role_codes], P),
        "correct": np.tile(correct, P),
        "exponent": exponent.ravel(),
        "constant": constant.ravel(),
        "true_largest_s": d_true[:, T_opt - 1, :].ravel(),
    })
    solutions = solutions.merge(
        scores[["problem", "solution", "q"]].astype({"problem": str, "solution": str}).rename(columns={"q": "true_q"}),
        on=["problem", "solution"], how="left")
    ref = correct & (role_codes == ROLES.index("reference"))
    ref_medians = np.median(d_true[:, :T_opt, :][:, :, ref], axis=2)  # (P, T_opt)
    q75, q25 = np.percentile(ref_medians, [75, 25], axis=1)
    robust_cv = (q75 - q25) / np.median(ref_medians, axis=1)
    problems = pd.DataFrame({
        "problem": problem_ids, "span": span, "base_s": base,
        "true_robust_cv": robust_cv, "filterable": robust_cv >= 0.3,
    })
    return solutions, problems


def _jsonable_spec(spec: SyntheticSpec) -> dict:
    data = asdict(spec)
    data["campaigns"] = [list(c) for c in spec.campaigns]
    data["environments"] = list(spec.environments)
    return data


def write_synthetic(synth: SyntheticCorpus, out: str | Path) -> tuple[Path, Path]:
    """Write the corpus (Parquet) and its truth (``<out stem>.truth.json``, plus per-solution
    and per-problem truth inside it)."""
    out = Path(out)
    truth_path = out.with_name(out.name.removesuffix(".parquet") + ".truth.json")
    truth = dict(synth.truth)
    truth["problems"] = synth.problems.to_dict(orient="records")
    truth["solutions"] = synth.solutions.to_dict(orient="records")
    text = json.dumps(to_jsonable(truth), indent=1)
    save_corpus(synth.corpus, out)

    def writer(tmp):
        Path(tmp).write_text(text)

    atomic_write(truth_path, writer)
    return out, truth_path
