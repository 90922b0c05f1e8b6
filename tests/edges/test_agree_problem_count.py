"""The clocks audit says over how many problems its rank agreement is a mean: those with a defined Kendall tau.

Found on a corpus collected from a real archive (BAPCtools' test problems): 'cpu_s: 0.761 over 8 problems'
when 7 of the 8 problems had fewer than two solutions scored under both clocks and only one gave a tau.
"""

import numpy as np
import pandas as pd

from audits.engine.whole_audit import run_audits


def _corpus() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = []
    for problem, n_solutions in (("ranked", 5), ("single-a", 1), ("single-b", 1)):
        for s in range(n_solutions):
            for t, size in (("t1", 1.0), ("t2", 3.0)):
                for r in range(3):
                    wall = 0.01 * (1 + s) * size * (1 + 0.2 * rng.random())
                    rows.append({"environment": "e", "campaign": "c", "problem": problem, "test": t,
                                 "solution": f"s{s}", "repeat": r, "status": "ok", "role": "reference",
                                 "correct": True, "test_kind": "optimization", "duration_s": wall,
                                 "cpu_s": wall * (1 - 0.3 * rng.random())})
    return pd.DataFrame(rows)


def test_agreement_counts_the_problems_it_averages():
    clocks = run_audits(_corpus(), ["clocks"]).results["clocks"]
    tau = clocks.agreement.set_index("problem")["kendall_tau"]
    assert np.isfinite(tau["ranked"]) and tau.drop("ranked").isna().all()  # the premise
    assert "cpu_s: " in clocks.summary() and "over 1 problem with two solutions" in clocks.summary()
    (finding,) = [f for f in clocks.findings if f.metric == "clock_agreement"]
    assert "over 1 problem with two solutions scored under both" in finding.message
