"""The aggregator comparison's text table never prints ``nan``: a figure the corpus cannot give is ``n/a`` with
the reason under the table, an interval without resamples is ``(no CI)`` (one problem, or n_boot = 0)."""

import numpy as np
import pandas as pd

from stats.aggregation import compare_aggregators


def _runs(n_solutions: int, problems=("p",)) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame([
        {"problem": p, "test": t, "solution": f"s{s}", "repeat": r, "status": "ok", "role": "reference",
         "correct": True, "test_kind": "optimization", "duration_s": 0.01 * (s + 1) * (1 + 0.1 * rng.random())}
        for p in problems for s in range(n_solutions) for t in ("t1", "t2") for r in range(3)])


def test_three_references_give_no_dynamic_range_and_say_why():
    comparison = compare_aggregators(_runs(3), n_boot=50)
    assert comparison.table["dynamic_range"].isna().all()  # the premise: < 4 references, no range anywhere
    text = comparison.summary()
    assert "nan" not in text.lower()
    reasons = [line for line in text.splitlines() if line.startswith("n/a: ")]
    assert len(reasons) == 1 and "no problem has >= 4 correct references" in reasons[0]  # one line per reason
    assert set(reasons[0][5:].split(": ")[0].split(", ")) == set(comparison.table["aggregator"])
    assert "(no CI)" in text  # one problem: no resamples


def test_measured_figures_keep_their_intervals():
    comparison = compare_aggregators(_runs(6, problems=("p", "q", "r")), n_boot=50)
    text = comparison.summary()
    assert "nan" not in text.lower() and "n/a" not in text and "(no CI)" not in text
    row = comparison.table.set_index("aggregator").loc["mean_pct"]
    assert f"{row['stability']:6.2f} [{row['stability_low']:6.2f},{row['stability_high']:6.2f}]" in text
