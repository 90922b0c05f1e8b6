"""total_pct with per-language reference pools (a problem whose references mix languages).

Found on a real archive (BAPCtools' test problem `different`: C, C++ and Python accepted submissions): the
references' totals counted a reference complete only with a pool duration on every (test, language) pool of
the problem, which no single-language reference has, so total_pct was undefined on every unit and the
aggregation audit showed it as nan. Each unit's total is ranked among the totals of its own pool's references
(as every per-test percentile is), checked here against scipy's percentileofscore (kind="mean", leave-self-out).
"""

import numpy as np
import pandas as pd
from scipy.stats import percentileofscore

from stats.aggregation import aggregate
from stats.ranking import percentile_table, reference_pools


def _corpus() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for language, base, n in (("python", 0.02, 5), ("cpp", 0.001, 4)):
        for s in range(n):
            for t, size in (("t1", 1.0), ("t2", 3.0)):
                for r in range(3):
                    rows.append({"problem": "p", "test": t, "solution": f"{language}/s{s}", "repeat": r,
                                 "language": language, "status": "ok", "role": "reference", "correct": True,
                                 "test_kind": "optimization",
                                 "duration_s": base * size * (1 + s) * (1 + 0.02 * rng.random())})
    return pd.DataFrame(rows)


def test_total_pct_ranks_each_unit_among_its_languages_references():
    runs = _corpus()
    pools = reference_pools(runs)
    assert "pool_language" in pools.columns and (pools["pool_language"] != "").all()  # the premise: split pools
    cells = percentile_table(runs, pools=pools, per_repeat=False)
    got = aggregate(cells, pools, name="total_pct").set_index("solution")["score"]

    totals = pools.groupby("solution")["duration_s"].sum()
    language = runs.groupby("solution")["language"].first()
    for solution, total in totals.items():
        others = totals[(language[totals.index] == language[solution]).to_numpy() & (totals.index != solution)]
        expected = percentileofscore(others.to_numpy(), total, kind="mean")
        assert abs(got[solution] - expected) <= 1e-9, solution  # scores are snapped to 12 significant digits
