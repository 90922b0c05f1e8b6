"""Paired speed comparison of two sets of solutions run in one campaign (shared execution).

Two sets of candidate programs for the same problems (e.g. two models' programs), timed in
*one* run (environment, campaign), interleaved, so that whatever the machine did affected
both alike. The question is not where each program lands against a reference pool (short
tests make absolute percentiles untrustworthy) but, problem by problem, whether the A
programs are faster than the B programs.

Definitions
-----------
* **Pass** of a solution: c of DESIGN.md, every correctness and optimization cell ``ok``
  (a cell's status by the majority rule of :func:`stats.ranking.solution_cells`). The
  **pass rate** of a set = mean over problems of the share of its solutions that pass.
* A **pair** is one A solution and one B solution of the same problem, neither of which gave
  a wrong answer, crashed or ran out of memory on any cell (a pair with such a member is not a
  speed pair: correctness is reported by the pass rates). A timeout is a speed outcome, not a
  wrong program: it is slower than any ok cell, as in :mod:`stats.noise`. Every A x B pair
  of a problem is formed.
* A **comparison** is a pair on one optimization test t. Its probability is the noise
  model's (:mod:`stats.noise`, fitted once on the whole run, every role):
  p = P(mu_a < mu_b | data) = P(se_a T_a + se_b T_b < m_b - m_a)
  (:func:`stats.noise.sum_of_t_cdf`, the Behrens-Fisher law of two cells' posteriors);
  p = 0 when only A's cell timed out, 1 when only B's did, 1/2 when both did.
* A comparison is **decided** at confidence c when p >= c (A faster: outcome 1) or
  p <= 1 - c (B faster: outcome 0); otherwise it is **undecided** and counts as a tie
  (outcome 1/2). A comparison without a variance estimate (no cell of the run has two ok
  repeats) is undefined (NaN) and left out.
* **Win rate** of problem p: W_p = mean over its pairs of the pair's mean outcome over
  its tests (every pair weighs the same, whatever its number of tests). The headline
  **win rate** = mean over problems of W_p (each problem weighs the same), with a
  percentile bootstrap CI over problems (:func:`stats.bootstrap.bootstrap_ci`).
  0.5: no difference the campaign can resolve; 1: A faster in every comparison.
* **Expected win rate**: the same with p in place of the outcome (no threshold).
  **Decided win rate**: per problem, A's share of the decided comparisons
  (wins / (wins + losses)), averaged over problems.
* **Undecided share**: undecided comparisons / defined comparisons, pooled over the run
  (and per problem in the table).

Every figure is a function of the rows as a set: problems are sorted by label before the
bootstrap, so row order changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from stats.bootstrap import Interval, bootstrap_ci, check_n_boot
from stats.noise import DEFAULT_PRIOR_DF, fit_noise, sum_of_t_cdf
from stats.ranking import STATUSES, status_codes

__all__ = ["PairedComparison", "paired_comparison"]

#: The values of the side column that name the two sets (any other value: not compared).
SIDES = ("a", "b")


@dataclass(frozen=True)
class PairedComparison:
    """The paired comparison of sets A and B in one run (see the module docstring).

    Attributes
    ----------
    comparisons : DataFrame
        One row per comparison: ``problem, test, solution_a, solution_b, p_faster``
        (P(A faster)), ``outcome`` (1, 0, 1/2 or NaN) and ``decision``
        (``a``/``b``/``undecided``/``undefined``).
    problems : DataFrame
        One row per problem with a solution of either set: ``n_a, n_b`` (solutions),
        ``n_a_pass, n_b_pass``, ``pass_rate_a, pass_rate_b``, ``n_pairs``,
        ``n_comparisons`` (defined), ``n_a_wins, n_b_wins, n_undecided``, ``win_rate``,
        ``expected_win_rate``, ``decided_win_rate``, ``undecided_share`` (NaN where the
        problem has no defined comparison).
    win_rate, expected_win_rate, decided_win_rate, pass_rate_a, pass_rate_b : Interval
        Means over problems with bootstrap CIs (n = problems behind each).
    n_comparisons, n_undecided, n_undefined : int
    confidence : float
    n_both_timed_out : int
        Defined comparisons whose two cells both timed out (p = 1/2: no timing tells them apart).
    """

    comparisons: pd.DataFrame
    problems: pd.DataFrame
    win_rate: Interval
    expected_win_rate: Interval
    decided_win_rate: Interval
    pass_rate_a: Interval
    pass_rate_b: Interval
    n_comparisons: int
    n_undecided: int
    n_undefined: int
    confidence: float
    n_both_timed_out: int = 0

    @property
    def undecided_share(self) -> float:
        return self.n_undecided / self.n_comparisons if self.n_comparisons else float("nan")

    def to_frame(self) -> pd.DataFrame:
        return self.problems


def _problem_mean(frame: pd.DataFrame, column: str, problems: np.ndarray) -> np.ndarray:
    """Mean of ``column`` per problem, aligned with ``problems`` (NaN where a problem has none)."""
    means = frame.groupby("problem", observed=True, sort=False)[column].mean()
    return means.reindex(problems).to_numpy(dtype=float)


def paired_comparison(
    executions: pd.DataFrame,
    *,
    side: str = "side",
    confidence: float = 0.95,
    prior_df: float = DEFAULT_PRIOR_DF,
    measure: str = "duration_s",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | None = 0,
) -> PairedComparison:
    """Paired speed win rate of set A over set B in one run, ties by the noise model.

    Parameters
    ----------
    executions : DataFrame
        Executions of one environment and campaign (corpus schema); rows of every role
        feed the noise model's per-test variance, ``floor`` rows are ignored.
    side : str, default ``side``
        Column naming each row's set: ``"a"``, ``"b"``, anything else (e.g. NaN) for rows
        in neither. Constant within a (problem, solution).
    confidence : float, default 0.95
        c in (0.5, 1): a comparison is decided when P(A faster) >= c or <= 1 - c.
    prior_df, measure
        As :func:`stats.noise.fit_noise`.
    n_boot, level, seed
        The bootstrap over problems (:func:`stats.bootstrap.bootstrap_ci`).

    Returns
    -------
    PairedComparison

    Formula
    -------
    p = P(se_a T_a + se_b T_b < m_b - m_a) per (pair, optimization test);
    outcome = 1[p >= c] + 1/2 1[1 - c < p < c];
    W_p = mean_pairs mean_tests outcome;  win rate = mean_p W_p.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rows = [{"problem": p, "test": t, "solution": s, "repeat": r, "status": "ok", "role": "candidate",
    ...          "side": s[0], "duration_s": float(np.exp(mu + 0.01 * (r - 1)))}
    ...         for p, (mu_a, mu_b) in {"p1": (0.0, 1.0), "p2": (0.0, 0.0)}.items()
    ...         for s, mu in (("a1", mu_a), ("b1", mu_b)) for t in ("t1", "t2") for r in range(3)]
    >>> out = paired_comparison(pd.DataFrame(rows), n_boot=0)
    >>> out.problems[["problem", "win_rate", "undecided_share"]].values.tolist()  # p2: a true tie
    [['p1', 1.0, 0.0], ['p2', 0.5, 1.0]]
    >>> out.win_rate.estimate, out.n_comparisons, out.n_undecided
    (0.75, 4, 2)
    """
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence}")
    check_n_boot(n_boot)
    if side not in executions.columns:
        raise ValueError(f"the executions lack the column {side!r} naming each row's set ('a' or 'b')")
    rows = executions
    if "role" in rows.columns:
        rows = rows.loc[(rows["role"] != "floor").to_numpy()]
    labels = rows[side].astype(object).where(rows[side].isin(SIDES), "")
    per_solution = labels.groupby([rows["problem"].to_numpy(), rows["solution"].to_numpy()]).nunique()
    mixed = per_solution[per_solution > 1]
    if len(mixed):
        problem, solution = mixed.index[0]
        raise ValueError(f"solution {solution!r} of problem {problem!r} has rows of more than one set in column "
                         f"{side!r}; a solution belongs to set a, set b or neither")
    model = fit_noise(rows, prior_df=prior_df, measure=measure, by_language=False)
    cells = model.cells
    # The set of every cell (cells are sorted by label; one row per (problem, test, solution)).
    keyed = pd.DataFrame({"problem": rows["problem"].astype(str).to_numpy(),
                          "solution": rows["solution"].astype(str).to_numpy(), "side": labels.to_numpy()})
    keyed = keyed.drop_duplicates(["problem", "solution"])
    cells = cells.assign(problem=cells["problem"].astype(str), test=cells["test"].astype(str),
                         solution=cells["solution"].astype(str))
    cells = cells.merge(keyed, on=["problem", "solution"], how="left")
    cells = cells.loc[cells["side"].isin(SIDES).to_numpy()]
    cells = cells.assign(ok=status_codes(cells) == 0)

    codes = status_codes(cells)
    cells = cells.assign(speed=(codes == 0) | (codes == STATUSES.index("timeout")))
    grouped = cells.groupby(["problem", "solution", "side"], observed=True, sort=True)
    sols = grouped["ok"].all().rename("passes").to_frame().join(grouped["speed"].all()).reset_index()
    counts = sols.pivot_table(index="problem", columns="side", values="passes", aggfunc=["size", "sum"],
                              fill_value=0)
    problems = pd.DataFrame(index=pd.Index(sorted(sols["problem"].unique()), name="problem"))
    for s in SIDES:
        n = counts[("size", s)] if ("size", s) in counts.columns else 0
        k = counts[("sum", s)] if ("sum", s) in counts.columns else 0
        problems[f"n_{s}"] = pd.Series(n, index=counts.index).reindex(problems.index).fillna(0).astype(int)
        problems[f"n_{s}_pass"] = pd.Series(k, index=counts.index).reindex(problems.index).fillna(0).astype(int)
        with np.errstate(invalid="ignore", divide="ignore"):
            problems[f"pass_rate_{s}"] = problems[f"n_{s}_pass"] / problems[f"n_{s}"].where(problems[f"n_{s}"] > 0)

    is_opt = (cells["test_kind"] == "optimization").to_numpy() if "test_kind" in cells.columns else True
    paired = sols.loc[sols["speed"], ["problem", "solution"]]
    opt = cells.loc[is_opt, ["problem", "test", "solution", "side", "ok", "log_mean", "se", "df"]].merge(
        paired, on=["problem", "solution"])
    a = opt.loc[opt["side"] == "a"].drop(columns="side")
    b = opt.loc[opt["side"] == "b"].drop(columns="side")
    pairs = a.merge(b, on=["problem", "test"], suffixes=("_a", "_b"))
    pairs = pairs.sort_values(["problem", "test", "solution_a", "solution_b"], kind="stable").reset_index(drop=True)
    p = sum_of_t_cdf(pairs["log_mean_b"].to_numpy(dtype=float) - pairs["log_mean_a"].to_numpy(dtype=float),
                     pairs["se_a"].to_numpy(dtype=float), pairs["df_a"].to_numpy(dtype=float),
                     pairs["se_b"].to_numpy(dtype=float), pairs["df_b"].to_numpy(dtype=float))
    p = np.atleast_1d(p).astype(float)
    ok_a, ok_b = pairs["ok_a"].to_numpy(dtype=bool), pairs["ok_b"].to_numpy(dtype=bool)
    p = np.where(ok_a & ok_b, p, np.where(ok_a, 1.0, np.where(ok_b, 0.0, 0.5)))  # a timeout is the slower
    defined = np.isfinite(p)
    outcome = np.where(p >= confidence, 1.0, np.where(p <= 1 - confidence, 0.0, 0.5))
    outcome = np.where(defined, outcome, np.nan)
    decision = np.where(~defined, "undefined", np.where(outcome == 1, "a", np.where(outcome == 0, "b", "undecided")))
    comparisons = pairs[["problem", "test", "solution_a", "solution_b"]].assign(
        p_faster=p, outcome=outcome, decision=decision)

    d = comparisons.loc[defined]
    d = d.assign(a_win=(d["decision"] == "a").astype(float), b_win=(d["decision"] == "b").astype(float),
                 undecided=(d["decision"] == "undecided").astype(float))
    per_pair = d.groupby(["problem", "solution_a", "solution_b"], observed=True, sort=True).agg(
        outcome=("outcome", "mean"), p_faster=("p_faster", "mean")).reset_index()
    index = problems.index.to_numpy()
    tally = d.groupby("problem", observed=True, sort=False)[["a_win", "b_win", "undecided"]].sum().reindex(index)
    problems["n_pairs"] = per_pair.groupby("problem", sort=False).size().reindex(index).fillna(0).astype(int).to_numpy()
    problems["n_comparisons"] = d.groupby("problem", sort=False).size().reindex(index).fillna(0).astype(int).to_numpy()
    for column, name in (("a_win", "n_a_wins"), ("b_win", "n_b_wins"), ("undecided", "n_undecided")):
        problems[name] = tally[column].fillna(0).astype(int).to_numpy()
    problems["win_rate"] = _problem_mean(per_pair, "outcome", index)
    problems["expected_win_rate"] = _problem_mean(per_pair, "p_faster", index)
    decided = problems["n_a_wins"] + problems["n_b_wins"]
    problems["decided_win_rate"] = (problems["n_a_wins"] / decided.where(decided > 0)).to_numpy(dtype=float)
    problems["undecided_share"] = (problems["n_undecided"]
                                   / problems["n_comparisons"].where(problems["n_comparisons"] > 0)).to_numpy(dtype=float)
    problems = problems.reset_index()

    def ci(column: str) -> Interval:
        return bootstrap_ci(problems[column].to_numpy(dtype=float), n_boot=n_boot, level=level, seed=seed)

    return PairedComparison(
        comparisons=comparisons, problems=problems, win_rate=ci("win_rate"),
        expected_win_rate=ci("expected_win_rate"), decided_win_rate=ci("decided_win_rate"),
        pass_rate_a=ci("pass_rate_a"), pass_rate_b=ci("pass_rate_b"),
        n_comparisons=int(defined.sum()), n_undecided=int((decision == "undecided").sum()),
        n_undefined=int((~defined).sum()), confidence=float(confidence),
        n_both_timed_out=int((defined & ~ok_a & ~ok_b).sum()))
