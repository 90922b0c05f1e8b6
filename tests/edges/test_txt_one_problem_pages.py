"""The report's text on a corpus with one measured problem: an interval that cannot exist reads "(no CI)", never
"[-, -]", and one problem is "1 problem", never "1 problems".

Found by rendering a report of a real archive (BAPCtools' test problems collected by `speedaudit collect`, one
problem with a comparison and with rank agreement between clocks): the compare page read "win rate of A over B
1 [-, -] over 1 problems", the clocks page "over 1 problems", the aggregation finding "only 1 problems".
"""

import numpy as np
import pandas as pd

from audits.checks.aggregation import run_aggregation_audit
from audits.checks.clocks import run_clocks_audit
from audits.checks.compare import run_compare_audit
from audits.report.compare_page import compare_runs_table, describe_compare
from audits.report.narrative.clocks import describe_clocks


def _one_problem() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    rows = []
    for prefix, speed in (("accepted", 1.0), ("slow", 3.0)):
        for s in range(4):
            for t, size in (("t1", 1.0), ("t2", 3.0)):
                for r in range(3):
                    wall = 0.01 * speed * (1 + 0.2 * s) * size * (1 + 0.1 * rng.random())
                    rows.append({"environment": "e", "campaign": "c", "problem": "p", "test": t,
                                 "solution": f"{prefix}/s{s}", "repeat": r, "status": "ok", "role": "reference",
                                 "correct": True, "test_kind": "optimization", "duration_s": wall,
                                 "cpu_s": wall * (1 - 0.2 * rng.random()), "timestamp": len(rows) * 1.0})
    return pd.DataFrame(rows)


def test_one_problem_reads_no_ci_and_singular():
    corpus = _one_problem()
    compare = run_compare_audit(corpus, a="accepted", b="slow")
    texts = [describe_compare(compare).text, compare_runs_table(compare).to_string(),
             describe_clocks(run_clocks_audit(corpus), corpus),
             *(f.message for f in run_aggregation_audit(corpus).findings)]
    joined = "\n".join(texts)
    assert "win rate of A over B 1 (no CI) over 1 problem;" in texts[0]  # the premise: A always faster
    assert "[-, -]" not in joined and "1 problems" not in joined and "nan" not in joined.lower(), joined
